"""How big the demo is, and what it builds from: light enough for the CLI to read its defaults without model code."""

from __future__ import annotations

import dataclasses

from ..resources import resolve
from ..world import WorldConfig

RECIPE = "world_demo"  # a shipped recipe
TRAIN_CONFIGS = {task: resolve(f"tiny_world_{task}", "train_config") for task in ("av", "vt", "at")}


@dataclasses.dataclass(frozen=True)
class DemoSize:
    clips: int = 240
    duration: float = 5.0  # the pairs are 3 s windows of it: 2 s room for the largest shift
    frame_size: int = 192
    pairs: int = 2400  # per judge
    epochs: float = 3.0
    # judges trained longer than ``epochs``: the AV judge's random mismatches need more views than 3 epochs give
    # (docs/research/tiny_judges.md); the VT and AT judges gained nothing from more steps
    judge_epochs: dict[str, float] = dataclasses.field(default_factory=lambda: {"av": 6.0})
    bench_clips: int = 10  # clips of the fresh world the synthetic generators make, for the last stage
    # every clip has the ambience its place implies, as real recordings have room tone: one more audio-visual link
    # for random mismatches to break, and a zero-padded shift's silence stands out (docs/research/tiny_judges.md)
    ambience_prob: float = 1.0

    def epochs_of(self, task: str) -> float:
        return self.judge_epochs.get(task, self.epochs)

    def scaled(self, clips: int | None = None, pairs: int | None = None, epochs: float | None = None) -> DemoSize:
        """This size with the values given (None keeps one); ``epochs`` is then every judge's."""
        size = dataclasses.replace(self, **{k: v for k, v in (("clips", clips), ("pairs", pairs)) if v is not None})
        return size if epochs is None else dataclasses.replace(size, epochs=epochs, judge_epochs={})

    def world(self, seed: int = 0, clips: int | None = None) -> WorldConfig:
        """The world config of demo-sized clips (``clips`` of them, default the demo's)."""
        return WorldConfig(
            n=self.clips if clips is None else clips,
            seed=seed,
            duration=self.duration,
            width=self.frame_size,
            height=self.frame_size,
            ambience_prob=self.ambience_prob,
        )


QUICK = DemoSize(clips=8, duration=4.0, frame_size=192, pairs=48, epochs=1.0, judge_epochs={}, bench_clips=3)
