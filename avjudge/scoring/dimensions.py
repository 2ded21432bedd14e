"""The dimensions clips are scored on, AVBench's (paper Table 2) and avjudge's own: which judge or metric gives each,
and which of its outputs is the score. The benchmark runner, filtering and the CLI's shared flags name them alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ..errors import AvjudgeError


class DimensionError(AvjudgeError):
    """Dimensions that cannot be used: an unknown name, or none that can be computed here; the message says why."""


@dataclass(frozen=True)
class Dimension:
    name: str  # what users type: --dims av,nisqa; a metric's dimension has the metric's registry name
    label: str  # column header of the leaderboard
    source: Literal["judge", "metric"]
    provider: str  # the judge task (av, vt, at) or the metric's registry name
    output: str  # the provider's output that is this dimension's score
    higher_is_better: bool = True
    avbench: bool = True  # one of AVBench's own dimensions, which "all" selects
    reads: tuple[str, ...] = ("audio", "video")  # the streams of a clip it reads (and "text": the prompt)
    # score differences up to this are no preference (`avjudge bench align`'s default tie band): its noticeable size
    tie_band: float = 0.0


# Paper order: consistency judges, then speech, audio and video quality (DeSync, from av-benchmark, beside SyncNet).
DIMENSIONS: dict[str, Dimension] = {
    d.name: d
    for d in (
        Dimension("av", "AV-Consistency", "judge", "av", "score"),
        Dimension("vt", "Video-Text", "judge", "vt", "score", reads=("video", "text")),
        Dimension("at", "Audio-Text", "judge", "at", "score", reads=("audio", "text")),
        Dimension(
            "clap", "Audio-Text (LAION-CLAP)", "metric", "clap", "clap_laion", avbench=False, reads=("audio", "text")
        ),
        Dimension(
            "clap_ms", "Audio-Text (MS-CLAP)", "metric", "clap_ms", "clap_ms", avbench=False, reads=("audio", "text")
        ),
        Dimension("syncnet", "Lip Sync (LSE-C)", "metric", "syncnet", "syncnet_confidence"),
        Dimension(
            "desync", "AV Offset (DeSync, s)", "metric", "desync", "desync", higher_is_better=False, avbench=False
        ),
        Dimension("speech_content", "Speech Content", "metric", "speech_content", "sc_score", reads=("audio", "text")),
        Dimension("dfarena", "Speech Realism", "metric", "dfarena", "dfarena_bonafide_mean", reads=("audio",)),
        # MOS scales (1-5): a tenth of a point, what the same-soundtrack pairs differed by between encodes
        Dimension("nisqa", "Audio Quality (NISQA)", "metric", "nisqa", "nisqa_mos", reads=("audio",), tie_band=0.1),
        Dimension(
            "dnsmos", "Audio Quality (DNSMOS)", "metric", "dnsmos", "dnsmos_ovrl", reads=("audio",), tie_band=0.1
        ),
        Dimension("audiobox", "Audio Aesthetics", "metric", "audiobox", "audiobox_aggregate", reads=("audio",)),
        Dimension("dover", "Video Quality (DOVER++)", "metric", "dover", "dover_overall", reads=("video",)),
        Dimension(
            "laion_aesthetic",
            "Video Aesthetics (LAION)",
            "metric",
            "laion_aesthetic",
            "laion_aesthetic",
            reads=("video",),
        ),
        *(
            Dimension(
                f"{group}_share",
                f"{group.title()} Share (PANNs)",
                "metric",
                "panns_tags",
                f"panns_{group}_share",
                avbench=False,
                reads=("audio",),
            )  # fmt: skip
            for group in ("speech", "music", "noise", "silence")
        ),
    )
}


# short names AVBench's paper uses
ALIASES = {"sc": "speech_content", "aesthetic": "laion_aesthetic"}


def parse_dimensions(text: str | None) -> list[Dimension]:
    """``"av,nisqa"`` -> dimensions in the order given (ALIASES allowed); None or "all": AVBench's dimensions."""
    if not text or text == "all":
        return [d for d in DIMENSIONS.values() if d.avbench]
    names = [ALIASES.get(n.strip(), n.strip()) for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in DIMENSIONS]
    if unknown:
        raise DimensionError(
            f"unknown dimension(s) {unknown}; known: {list(DIMENSIONS)} (and the short names {ALIASES})"
        )
    return [DIMENSIONS[n] for n in dict.fromkeys(names)]
