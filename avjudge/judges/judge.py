"""`Judge`: load a checkpoint for one task and score clips in true batches."""

from __future__ import annotations

import json
import warnings
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import Iterable, Iterator, Literal, Sequence

import numpy as np
import torch
from tqdm import tqdm

from ..ahead import map_ahead
from ..config import ConfigError
from ..devices import device_name
from ..jsonl import read_json_object
from ..media import (
    DecodeNeeds,
    MediaClip,
    MediaError,
    conform,
    frame_indices,
    in_decoding_process,
    load_clip,
    resample,
)
from ..prompts import task as get_task
from ..sampling import Sampling, frame_plan, sampling, task_sampling
from .adapters import Adapter, JudgeSample, PreparedSample, adapter_for, resolve_device
from .calibration import load_preference, load_temperature
from .preference import Comparison, Preference, compare_deltas
from .scorer import NO_VARIANTS, YES_VARIANTS, ChoiceHead, ChoiceResult, ScoreResult, YesNoHead

Result = ScoreResult | ChoiceResult  # what a Yes / No judge or a multiple-choice one gives per sample


@dataclass(frozen=True)
class JudgeSettings:
    """How a judge is shown clips and where it runs; `Judge.load` takes any of these as keyword arguments.

    Attributes:
        task: ``av``, ``vt`` or ``at`` (Yes/No), or ``choice_av`` / ``choice_a`` (multiple choice).
        sampling: a named sampling (`avjudge.sampling.SAMPLINGS`: ``sync``, ``avbench``, ...) that gives ``fps``,
            ``max_pixels`` and ``max_frames`` where they are None; None: the task's default (AV: ``sync``, 8 fps at
            480·640 / 16 pixels; VT and AT: AVBench's 1 fps at 360·420 and 480·640).
        fps: frames per second the judge sees; None: the sampling's.
        max_pixels: pixels per frame at most (None: the sampling's); ``min_pixels`` at least.
        max_frames: longer clips are sampled uniformly down to this many frames (None: the sampling's).
        sample_rate: the audio rate the model's feature extractor takes.
        long_audio: audio longer than the model's window: ``error`` reports it, ``head`` scores its beginning.
        batch_size: clips in one forward pass.
        workers: threads that decode and prepare clips while the model scores.
        decode_processes: processes that decode files and bytes for those threads (0: the threads decode; see
            `avjudge.media.processes`): decoding needs the GIL, which a GPU forward pass's kernel launches hold.
        device: ``auto`` (CUDA when there is one), ``cpu``, ``cuda``, ``cuda:1``...
        dtype: ``auto`` (bfloat16 on a GPU, float32 on CPU), ``float32``, ``bfloat16``, ``float16``.
        yes_variants: answer strings whose probabilities make P(Yes) (``no_variants``: P(No)).
        temperature: divides the log-odds; None takes the checkpoint's calibration file, else 1.0.
        system_prompt: None is the model family's own.
        use_audio_in_video: interleave the clip's audio with its frames; None is as the checkpoint was trained.
        trust_remote_code: let transformers run code shipped with the checkpoint.
        attention: ``auto`` (packed window attention in the Omni encoders) or a transformers implementation name.
        prepare_on: where frames are resized and normalised: ``cpu`` (in the worker threads), ``device`` (on the
            model's device, batch by batch, while the worker threads decode, compute audio features and tokenise),
            ``auto`` (the device when it is a GPU). Both give the same pixel values, bit for bit. Audio features stay
            on the CPU: a GPU's FFT differs from the CPU's by 2e-5, which moved a bf16 7B judge's scores by 0.02.
        align_widths: pad the model's MLP widths with zeros up to a multiple of this many elements (0: as released;
            8 puts Qwen2.5-Omni's 3,420-wide vision MLPs on 16-byte rows, which Hopper's matrix kernels need). The
            same function; on a GPU another kernel may round bf16 sums differently. See `avjudge.judges.widths`.
        compile: compile the model's repeated blocks with torch.compile (`avjudge.judges.compiling`): element-wise
            chains fuse; the first batches take tens of seconds longer.
    """

    task: str
    sampling: str | None = None  # None: the task's default (avjudge.sampling.TASK_SAMPLING)
    fps: float | None = None  # None: the sampling's
    max_pixels: int | None = None
    min_pixels: int | None = None
    max_frames: int | None = None  # longer clips are sampled uniformly down to this many frames
    sample_rate: int = 16000
    long_audio: Literal["error", "head"] = "error"  # audio longer than the model's window
    batch_size: int = 8
    workers: int = 2  # threads that decode and prepare clips while others wait
    decode_processes: int = 0  # processes that decode files for the worker threads (0: the threads decode)
    device: str = "auto"
    dtype: str = "auto"
    yes_variants: tuple[str, ...] = YES_VARIANTS
    no_variants: tuple[str, ...] = NO_VARIANTS
    temperature: float | None = None  # None: the checkpoint's calibration file, else 1.0
    system_prompt: str | None = None  # None: the model family's own
    use_audio_in_video: bool | None = None  # None: as the checkpoint was trained, else False
    trust_remote_code: bool = False
    # auto: packed window attention in the Omni encoders (avjudge.judges.attention); else a transformers name
    attention: str = "auto"
    prepare_on: Literal["auto", "cpu", "device"] = "auto"
    align_widths: int = 0  # 0: the MLPs as released; else padded to a multiple of this many elements
    compile: bool = False  # torch.compile each repeated block

    def resolved(self) -> "JudgeSettings":
        base = sampling(self.sampling) if self.sampling else task_sampling(self.task)
        return replace(
            self,
            fps=self.fps or base.fps,
            max_pixels=self.max_pixels or base.max_pixels,
            max_frames=self.max_frames or base.max_frames,
        )

    def time_sampling(self, temporal_patch: int = 2) -> Sampling:
        """What these settings show of a clip in time (`avjudge.sampling`), for a model merging ``temporal_patch``
        frames per token group."""
        s = self.resolved()
        return Sampling(fps=s.fps, max_pixels=s.max_pixels, max_frames=s.max_frames, temporal_patch=temporal_patch)


def sampled_frames(
    timestamps: np.ndarray, start: float, duration: float, fps: float, max_frames: int
) -> tuple[np.ndarray, float]:
    """(indices into ``timestamps`` of the frames a judge sees, the rate they are at): one every 1 / ``fps`` s
    from ``start``, each the frame shown at that moment (`avjudge.media.frame_indices`); at least one, and a longer
    clip's spread over ``max_frames`` (`avjudge.sampling.frame_plan`)."""
    n, fps = frame_plan(duration, fps, max_frames)
    return frame_indices(timestamps, start, duration, fps, n), fps


# What a training run records beside its weights (avjudge.train) that scoring must repeat.
SAMPLED = ("fps", "max_pixels", "max_frames")  # what a named sampling gives
TRAINED_SETTINGS = (*SAMPLED, "use_audio_in_video", "system_prompt")
TRAIN_RECORD = "avjudge_train.json"
CARD_FILE = "judge_card.json"  # the judge card a training run writes beside its weights (avjudge.rewards.card)


class JudgeCardFlags(UserWarning):
    """A judge whose card flags what it may have learnt instead of its task (a leak in its data, a degenerate clip it
    prefers to its source): shown when it is loaded, not refused."""


def warn_of_card(checkpoint: Path) -> None:
    """Warn of the flags of the judge card in ``checkpoint``, if it has one."""
    path = Path(checkpoint) / CARD_FILE
    if not path.is_file():
        return
    try:
        card = json.loads(path.read_text())
        if not isinstance(card, dict):
            raise ValueError(f"an object of the card's fields, not a {type(card).__name__}")
        flags = card.get("flags")
        if not isinstance(flags, (list, type(None))):
            raise ValueError(f"flags is a list, not {type(flags).__name__}")
    except (ValueError, UnicodeDecodeError) as err:  # a card only ever warns: the judge itself still loads
        warnings.warn(f"{path}: its judge card cannot be read ({err}); the judge loads without it", JudgeCardFlags,
                      stacklevel=3)  # fmt: skip
        return
    if flags:
        warnings.warn(
            f"{checkpoint}: its judge card flags {len(flags)} thing(s) it may have learnt instead of its task: "
            + "; ".join(flags)
            + f" (avjudge judges card {checkpoint})",
            JudgeCardFlags,
            stacklevel=3,
        )


def trained_settings(checkpoint: Path) -> dict:
    path = Path(checkpoint) / TRAIN_RECORD
    if not path.exists():
        return {}
    recorded = read_json_object(path, "it is written by `avjudge train`: copy the judge folder again").get(
        "judge_settings", {}
    )
    return {k: recorded[k] for k in TRAINED_SETTINGS if recorded.get(k) is not None}


def temporal_patch(checkpoint: Path) -> int:
    """Frames a checkpoint's vision tower merges per token group, from its processor's configuration (2, Qwen's,
    where it says none)."""
    for name in ("video_preprocessor_config.json", "preprocessor_config.json"):
        path = Path(checkpoint) / name
        if path.is_file():
            value = read_json_object(path, "copy the checkpoint folder again").get("temporal_patch_size")
            if value:
                return int(value)
    return 2


def checkpoint_sampling(task: str, checkpoint: Path, **given) -> Sampling:
    """What a judge of ``task`` loaded from ``checkpoint`` with settings ``given`` is shown of a clip in time: the
    settings given, else those it was trained with, else the task's default sampling."""
    return settings_for(task, checkpoint, given).time_sampling(temporal_patch(checkpoint))


def settings_for(task: str, checkpoint: Path, given: dict) -> JudgeSettings:
    """The settings asked for, and those a trained checkpoint recorded where none was asked for (a sampling asked for
    by name stands for its frame rate, pixels and frames: the recorded ones do not override it)."""
    named = SAMPLED if given.get("sampling") else ()
    trained = {k: v for k, v in trained_settings(checkpoint).items() if given.get(k) is None and k not in named}
    return JudgeSettings(task=get_task(task).name, **{**given, **trained})


@dataclass
class _Work:
    index: int
    prepared: PreparedSample | None = None
    result: Result | None = None


class Judge:
    """A judge of one task on one checkpoint: a Yes/No judge (av, vt or at; results are `ScoreResult`), or a
    multiple-choice one (choice_av, choice_a; results are `ChoiceResult`)."""

    def __init__(self, adapter: Adapter, settings: JudgeSettings):
        self.adapter = adapter
        self.settings = settings.resolved()
        self.task = get_task(settings.task)
        if adapter.vision is not None:
            adapter.vision = adapter.vision.with_pixels(self.settings.min_pixels, self.settings.max_pixels)
        if self.settings.use_audio_in_video and not adapter.supports_audio_in_video:
            raise ConfigError(f"{adapter.family} models cannot take the audio inside the video item")
        adapter.use_audio_in_video = bool(self.settings.use_audio_in_video)
        if adapter.sync_spec and not (self.task.name == "av" and adapter.use_audio_in_video):
            raise ConfigError(
                f"{adapter.checkpoint} has a sync adapter, which compares each picture with the sound of its moment: "
                "it judges av with the audio inside the video item (use_audio_in_video), not "
                f"{self.task.name}{'' if adapter.use_audio_in_video else ' with the audio as its own item'}"
            )
        adapter.media_on_device = self._media_on_device()
        if self.task.choices:  # a multiple-choice task reads its answer from the option letters
            self.head = ChoiceHead.from_tokenizer(adapter.tokenizer, self.task.choices)
        else:
            temperature = self.settings.temperature or load_temperature(adapter.checkpoint, self.task.name) or 1.0
            # how it compares two clips (`compare`): fitted by `avjudge judges calibrate`, else plain Bradley-Terry
            self.preference = load_preference(adapter.checkpoint, self.task.name) or Preference()
            self.head = YesNoHead.from_tokenizer(
                adapter.tokenizer, self.settings.yes_variants, self.settings.no_variants, temperature
            )

    def _media_on_device(self) -> bool:
        where = self.settings.prepare_on
        if where not in ("auto", "cpu", "device"):
            raise ValueError(f"prepare_on must be auto, cpu or device, not {where!r}")
        return where == "device" or (where == "auto" and resolve_device(self.settings.device).type == "cuda")

    def __reduce__(self):
        # a judge travels (to a Ray actor) as what loads it: its model loads there, on that machine's device
        fields = {k: v for k, v in asdict(self.settings).items() if k != "task"}
        load = partial(type(self).load, self.settings.task, str(self.adapter.checkpoint), *self._load_args())
        return partial(load, **fields), ()

    def _load_args(self) -> tuple:
        """What ``load`` takes after the task and the checkpoint, besides the settings."""
        return ()

    @classmethod
    def load(cls, task: str, checkpoint: str | Path, defer_weights: bool = False, **settings) -> "Judge":
        """Load a judge from a local checkpoint folder; nothing is downloaded.

        Args:
            task: ``av``, ``vt``, ``at``, ``choice_av`` or ``choice_a``.
            checkpoint: a Qwen2.5-Omni or Qwen3-Omni (thinker or full) or Qwen2-Audio folder, e.g. the ``final``
                folder `avjudge train` writes.
            defer_weights: load the model's weights when it first scores, not now: a process that hands the judge
                to others (the driver of a Ray job, which sends it as what loads it) never loads them.
            **settings: any field of `JudgeSettings`. Settings a trained checkpoint recorded (fps, pixels, audio
                layout, system prompt) are the defaults of those not given.

        Returns:
            The judge, its model on the device the settings ask for.

        Raises:
            CheckpointError: the folder holds no model avjudge has an adapter for.
        """
        path = Path(checkpoint)
        s = settings_for(task, path, settings)
        warn_of_card(path)
        adapter_cls = adapter_for(path)
        adapter = adapter_cls.load(
            path,
            device=s.device,
            dtype=s.dtype,
            trust_remote_code=s.trust_remote_code,
            attention=s.attention,
            defer_weights=defer_weights,
            align_widths=s.align_widths,
            compiled=s.compile,
        )
        return cls(adapter, s)

    @property
    def holds_interpreter(self) -> bool:
        """Whether its forward pass holds Python's lock while it runs: on a GPU its thread launches kernels for most
        of the pass (on the CPU the kernels let the lock go), so clips are best decoded in other processes."""
        return device_name(self.settings.device).startswith("cuda")  # read without loading deferred weights

    # -- media -----------------------------------------------------------------------------
    @property
    def needs(self) -> DecodeNeeds:
        """What this judge reads of a clip: its streams, at its frame rate and audio rate, mono, frames at most the
        pixels its processor resizes them to (larger ones are scaled down as they are decoded), and with
        ``long_audio=head`` only as much of a long clip as its audio window holds."""
        head = self.settings.long_audio == "head"
        return DecodeNeeds(
            video=self.task.needs_video,
            audio=self.task.needs_audio,
            fps=self.settings.fps if self.task.needs_video else None,
            max_pixels=self.adapter.vision.max_pixels if self.task.needs_video and self.adapter.vision else None,
            sample_rate=self.settings.sample_rate if self.task.needs_audio else None,
            channels=1 if self.task.needs_audio else None,
            # a long clip's head only (long_audio=head): its frames and its sound from the same stretch; else a clip
            # longer than the window is refused from its headers, before it is decoded
            max_seconds=self.adapter.max_audio_seconds if self.task.needs_audio and head else None,
            longest=self.adapter.max_audio_seconds if self.task.needs_audio and not head else None,
        )

    def decode(self, source: str | Path | bytes) -> MediaClip:
        """Decode what this judge needs of a file (or its bytes), at its own frame rate and audio rate (in one of
        ``decode_processes`` processes where there are any)."""
        return in_decoding_process(self.settings.decode_processes, load_clip, source, self.needs)

    def sample(self, clip: MediaClip, text: str | None = None, utterance: str | None = None) -> JudgeSample:
        """A judge sample from a clip decoded by anyone (frames and audio re-sampled as needed)."""
        s = self.settings
        frames = fps = audio = None
        if self.task.needs_video:
            if clip.frames is None:
                raise MediaError(clip.source, "has no video frames for the judge")
            idx, fps = sampled_frames(clip.timestamps, clip.start, clip.duration, s.fps, s.max_frames)
            frames = clip.frames[idx]
        if self.task.needs_audio:
            if clip.audio is None:
                raise MediaError(clip.source, "has no audio for the judge")
            audio = clip.mono_audio()
            if clip.sample_rate != s.sample_rate:
                audio = resample(audio[None], clip.sample_rate, s.sample_rate)[0]
            limit = int(self.adapter.max_audio_seconds * s.sample_rate)
            if len(audio) > limit:
                if s.long_audio == "error":
                    raise MediaError(
                        clip.source,
                        f"audio lasts {len(audio) / s.sample_rate:.1f} s, longer than the "
                        f"judge's {self.adapter.max_audio_seconds:.0f} s window; set long_audio=head to "
                        "score its beginning, or cut the clip",
                    )
                audio = audio[:limit]
        return JudgeSample(frames=frames, fps=fps, audio=audio, text=text, utterance=utterance)

    def prepare(self, sample: JudgeSample, answer: str | None = None) -> PreparedSample:
        return self.adapter.prepare(self.task.name, sample, answer, self.settings.system_prompt)

    # -- scoring ---------------------------------------------------------------------------
    def score(
        self,
        videos: Sequence[str | Path | bytes | MediaClip] | None = None,
        texts: Sequence[str] | None = None,
        utterances: Sequence[str | None] | None = None,
        progress: bool = False,
    ) -> list[Result]:
        """Score clips; one result per input, in order.

        Args:
            videos: media files, their encoded bytes, or decoded `MediaClip`s (video with audio for ``av``, video
                for ``vt``, audio or video for ``at``).
            texts: one description per clip, for the ``vt`` and ``at`` judges.
            utterances: the spoken line of each clip, for the ``at`` judge (None where there is none).
            progress: show a progress bar.

        Returns:
            A `ScoreResult` per clip (a `ChoiceResult` for the choice tasks). A clip that cannot be decoded or
            prepared gets a result with ``error`` set and no score, never 0; the others are scored.
        """
        n = len(videos) if videos is not None else len(texts or [])
        if self.task.needs_text and (texts is None or len(texts) != n):
            raise ValueError(f"the {self.task.name} judge needs one text per input")

        def load(i: int) -> _Work:
            try:
                item = videos[i]
                # a clip in memory as its file would be decoded for this judge (frames at most its pixels, by the
                # decoder's own scaler): arrays and files score alike
                clip = conform(item, self.needs) if isinstance(item, MediaClip) else self.decode(item)
                sample = self.sample(clip, texts[i] if texts else None, utterances[i] if utterances else None)
            except (MediaError, ValueError) as err:
                return _Work(i, result=self.head.failed(str(err)))
            return self._prepare_work(i, sample)

        return self._score_stream(self._imap(load, range(n)), n, progress)

    def score_samples(self, samples: Sequence[JudgeSample | Result], progress: bool = False) -> list[Result]:
        def prepare(i: int) -> _Work:
            sample = samples[i]
            if isinstance(sample, (ScoreResult, ChoiceResult)):  # already failed
                return _Work(i, result=sample)
            return self._prepare_work(i, sample)

        return self._score_stream(self._imap(prepare, range(len(samples))), len(samples), progress)

    def generate(self, samples: Sequence[JudgeSample | Result], max_new_tokens: int = 64) -> list[str | Result]:
        """The backbone's own greedy text for each sample (its prompt as for scoring, without the answer letters'
        probabilities), one at a time; a sample that failed or cannot be prepared stays a failed result."""
        texts: list[str | Result] = []
        for i, sample in enumerate(samples):
            work = (
                _Work(i, result=sample)
                if isinstance(sample, (ScoreResult, ChoiceResult))
                else self._prepare_work(i, sample)
            )
            texts.append(
                work.result if work.result is not None else self.adapter.generate_text(work.prepared, max_new_tokens)
            )
        return texts

    def score_prepared(self, prepared: Sequence[PreparedSample], progress: bool = False) -> list[Result]:
        """Score samples already prepared (an evaluation set reused across training steps)."""
        return self._score_stream((_Work(i, prepared=p) for i, p in enumerate(prepared)), len(prepared), progress)

    def _prepare_work(self, i: int, sample: JudgeSample) -> _Work:
        try:
            return _Work(i, prepared=self.prepare(sample))
        except (ValueError, MediaError) as err:
            return _Work(i, result=self.head.failed(str(err)))

    def _imap(self, fn, indices: range) -> Iterator[_Work]:
        """``fn`` over indices in worker threads, in order, at most a few windows ahead of the consumer
        (so a long list never sits in memory at once)."""
        if self.settings.workers <= 1 or len(indices) <= 1:
            yield from map(fn, indices)
            return
        yield from map_ahead(fn, indices, self.settings.workers, 2 * self._window)

    @property
    def _window(self) -> int:
        # prepared samples bucketed by length together: several batches, so padding stays small
        return 4 * self.settings.batch_size

    def _score_stream(self, works: Iterable[_Work], n: int, progress: bool) -> list[Result]:
        """Forward passes run while the worker threads prepare the next window of samples."""
        results: list[Result | None] = [None] * n
        window: list[_Work] = []
        with tqdm(total=n, desc=f"{self.task.name} judge", disable=not progress, unit="clip") as bar:

            def flush():
                for w in self._score_window(window):
                    results[w.index] = w.result
                bar.update(len(window))
                window.clear()

            for w in works:
                if w.result is not None:
                    results[w.index] = w.result
                    bar.update(1)
                    continue
                window.append(w)
                if len(window) >= self._window:
                    flush()
            flush()
        return results

    def _score_window(self, window: list[_Work]) -> list[_Work]:
        todo = sorted(window, key=lambda w: w.prepared.length)
        size = self.settings.batch_size
        batches = [todo[start : start + size] for start in range(0, len(todo), size)]
        # one thread builds the next batch's inputs (collation, copies to the device, media made there) while the
        # model runs this one: the forward pass waits on the device at its own sync points, not on them
        for batch, inputs in zip(batches, map_ahead(self._model_inputs, batches), strict=True):
            with torch.inference_mode():
                logits = self.adapter.next_token_logits(inputs)
            for w, result in zip(batch, self.head.results(logits)):
                w.result = result
        return todo

    def _model_inputs(self, batch: list[_Work]) -> dict:
        adapter = self.adapter
        with torch.inference_mode():
            device = adapter.device if adapter.media_on_device else None
            return adapter.to_device(adapter.collate([w.prepared for w in batch], device=device))

    def compare(
        self,
        a: str | Path | bytes | MediaClip,
        b: str | Path | bytes | MediaClip,
        text: str | None = None,
        utterance: str | None = None,
    ) -> Comparison:
        """Which of clips ``a`` and ``b`` this judge prefers, given the same ``text`` (and ``utterance``): P(A ≻ B),
        P(tie) and P(B ≻ A) from the two clips' log-odds through its preference model (`avjudge.judges.preference`:
        Rao–Kupper, fitted by ``avjudge judges calibrate``). Swapping ``a`` and ``b`` swaps the answers exactly; a
        clip that cannot be scored makes the comparison's ``error``."""
        if not isinstance(self.head, YesNoHead):
            raise ValueError(f"comparing clips needs a Yes / No judge, not the {self.task.name} task")
        texts = None if text is None else [text, text]
        result_a, result_b = self.score([a, b], texts, None if utterance is None else [utterance, utterance])
        return compare_deltas(self.preference, result_a.delta, result_b.delta, (result_a.error, result_b.error))

    def score_differentiable(
        self,
        frames: torch.Tensor | None = None,
        fps: float | None = None,
        waveform: torch.Tensor | None = None,
        text: str | None = None,
        utterance: str | None = None,
    ) -> torch.Tensor:
        """The score of one sample as a tensor whose gradient reaches ``frames`` ((T, H, W, 3) in [0, 1],
        sampled at ``fps``) and ``waveform`` ((N,) at the judge's sample rate)."""
        if not isinstance(self.head, YesNoHead):
            raise ValueError(f"a differentiable score needs a Yes / No judge, not the {self.task.name} task")
        batch = self.adapter.differentiable_inputs(
            self.task.name, frames, fps or self.settings.fps, waveform, text, utterance
        )
        logits = self.adapter.next_token_logits(batch)
        return self.head.score_tensor(logits)[0]
