"""The one way avjudge scores clips with judges and metrics: `score`, `metrics run`, `bench run`, `filter`, the
reward server, the reward functions and the Ray engine all go through `Scoring`.

An item is a dict. Its media: ``video`` (a file's path or its encoded bytes), ``audio`` (a file or bytes whose sound
replaces the video's track, or stands alone), or ``media`` (a `avjudge.media.MediaClip` already decoded in memory,
e.g. from `avjudge.media.from_arrays`). Its texts: ``captions`` (``{"video", "audio", "utterance"}``). It may name
``scorers`` (a subset of the set's names) where items of one batch ask for different ones, as the server's do.

Each media is decoded once for every scorer its items ask for, by the plan that merges their needs
(`avjudge.media.merge_needs`), within the set's `avjudge.media.DecodeBudget` (checked from the headers first); a clip
in memory is held to the same budget and conformed to the same plan, so it scores as its file does. The
result per item is a `ClipRecord`: each scorer's values or error, or the reason the clip could not be read at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..config import ConfigError
from ..errors import is_run_fault, reason
from ..media import DecodeBudget, DecodeNeeds, MediaClip, MediaError, in_decoding_process, load_clip, merge_needs
from ..media.processes import decoding_processes
from ..runtime.progress import advance
from .scorers import Outcome, Scorer


@dataclass
class ClipRecord:
    """What the scorers gave one item: ``values`` and ``errors`` by scorer name, or ``error`` where the clip could
    not be read (then no scorer ran)."""

    error: str | None = None
    values: dict[str, dict] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    def outcome(self, name: str) -> Outcome:
        """The scorer ``name``'s outcome for this item."""
        if self.error is not None:
            return Outcome(error=self.error)
        if name in self.errors:
            return Outcome(error=self.errors[name])
        return Outcome(values=self.values[name])


def clip_of(item: dict, needs: DecodeNeeds, budget: DecodeBudget = DecodeBudget()) -> MediaClip | str:
    """The item's clip as ``needs`` asks within ``budget``, or why it cannot be had: the `MediaError`, or
    ``"<Type>: message"`` of any other error of that clip alone."""
    try:
        return load_clip(item["media"] if "media" in item else item.get("video"), needs, item.get("audio"), budget)
    except MediaError as err:
        return str(err)
    except Exception as err:
        if is_run_fault(err):
            raise
        return reason(err)


def _media_key(item: dict) -> tuple:
    """Items with the same media decode once (a clip in memory is itself)."""
    media = item.get("media")
    return (id(media) if media is not None else None, item.get("video"), item.get("audio"))


def _clip(item: dict, needs: DecodeNeeds, processes: int, budget: DecodeBudget) -> MediaClip | str:
    """`clip_of`, in one of ``processes`` decoding processes (`avjudge.media.decoding_pool`) where there are any and
    the item's media is a file or bytes; its clip (or error) comes back."""
    if "media" in item:  # in memory: nothing to decode
        return clip_of(item, needs, budget)
    sources = {key: item[key] for key in ("video", "audio") if key in item}  # what a process needs of the item
    return in_decoding_process(processes, clip_of, sources, needs, budget)


def decode_items(
    items: Sequence[dict],
    needs: DecodeNeeds,
    workers: int = 1,
    processes: int = 0,
    budget: DecodeBudget = DecodeBudget(),
) -> list[dict]:
    """Each item with its ``clip`` (see `clip_of`) decoded by ``needs`` within ``budget``, each distinct input once,
    in ``workers`` threads, which hand the decoding to ``processes`` processes where there are any (decoding needs
    the GIL)."""
    return _decode_groups(items, [needs] * len(items), workers, processes, budget)


@dataclass(frozen=True)
class Decoder:
    """`decode_items` by one plan as a callable that travels (a Ray task runs it, apart from the models)."""

    needs: DecodeNeeds
    workers: int = 1
    processes: int = 0
    budget: DecodeBudget = DecodeBudget()

    def __call__(self, items: Sequence[dict]) -> list[dict]:
        return decode_items(items, self.needs, self.workers, self.processes, self.budget)


def _decode_groups(
    items: Sequence[dict],
    plans: Sequence[DecodeNeeds],
    workers: int,
    processes: int = 0,
    budget: DecodeBudget = DecodeBudget(),
) -> list[dict]:
    """Each item with its clip: items of the same media decode once, by the plan that merges theirs; where that
    fails (an audio file that one item's scorer wants frames of), each plan of the group decodes apart, so an item
    gets the error of its own plan only."""
    groups: dict[tuple, list[int]] = {}
    for k, item in enumerate(items):
        groups.setdefault(_media_key(item), []).append(k)

    def decode_group(members: list[int]) -> dict[int, MediaClip | str]:
        own = {k: plans[k] for k in members}
        merged = merge_needs(own.values())
        clip = _clip(items[members[0]], merged, processes, budget)
        if isinstance(clip, str) and len(set(own.values())) > 1:
            apart = {plan: _clip(items[members[0]], plan, processes, budget) for plan in set(own.values())}
            return {k: apart[own[k]] for k in members}
        return dict.fromkeys(members, clip)

    jobs = list(groups.values())
    # threads that hand decoding to processes only wait: as many as keep every process busy
    workers = max(workers, processes)
    if workers <= 1 or len(jobs) <= 1:
        decoded = [decode_group(members) for members in jobs]
    else:
        with ThreadPoolExecutor(workers) as pool:
            decoded = list(pool.map(decode_group, jobs))
    clips = {k: clip for group in decoded for k, clip in group.items()}
    return [{**item, "clip": clips[k]} for k, item in enumerate(items)]


class Scoring:
    """Named scorers (`JudgeScorer`, `MetricScorer`) that score items together, each item decoded once for all the
    scorers it asks for.

    Args:
        scorers: the judges and metrics, each named by its ``name``.
        workers: threads that decode a batch's clips.
        processes: processes those threads hand the decoding to (0: none; None: as
            `avjudge.media.processes.decoding_processes` says for these scorers).
        budget: what one clip may cost to decode (`avjudge.media.DecodeBudget`); past it, that clip fails alone.
    """

    def __init__(
        self,
        scorers: Iterable[Scorer],
        workers: int = 2,
        processes: int | None = 0,
        budget: DecodeBudget = DecodeBudget(),
    ):
        self.scorers: dict[str, Scorer] = {}
        for scorer in scorers:
            if scorer.name in self.scorers:
                raise ConfigError(f"two scorers are called {scorer.name!r}; give each its own name")
            self.scorers[scorer.name] = scorer
        self.workers = workers
        self.processes = processes if processes is not None else decoding_processes(None, self.holds_interpreter)
        self.budget = budget

    def names(self) -> list[str]:
        return list(self.scorers)

    @property
    def holds_interpreter(self) -> bool:
        """Whether a scorer holds Python's lock while it works (a model on a GPU): decoding is then best apart."""
        return any(scorer.holds_interpreter for scorer in self.scorers.values())

    @property
    def needs(self) -> DecodeNeeds:
        """The plan that decodes a clip once for every scorer."""
        return self.plan(self.scorers)

    def decoder(self) -> Decoder:
        """The decoding stage of a job of these scorers: each item decoded once for all of them, within the budget."""
        return Decoder(self.needs, self.workers, self.processes, self.budget)

    def plan(self, names: Iterable[str]) -> DecodeNeeds:
        """The plan that decodes a clip once for the scorers ``names``."""
        return merge_needs(self.scorers[name].needs for name in names)

    def _asked(self, item: dict) -> list[str]:
        return item.get("scorers") or self.names()

    def decode(self, items: Sequence[dict]) -> list[dict]:
        """Each item with its ``clip``: the items of one media decode once, for every scorer they ask for."""
        plans = [self.plan(self._asked(item)) for item in items]
        return _decode_groups(items, plans, self.workers, self.processes, self.budget)

    def score(self, items: Sequence[dict]) -> list[ClipRecord]:
        """One record per item, in order: each item decoded once, then scored by every scorer it asks for."""
        return self.score_decoded(self.decode(items))

    @staticmethod
    def _outcomes(scorer: Scorer, clips: list, captions: list, scorers: int) -> list[Outcome]:
        """``scorer``'s outcomes, the job's progress told as they come (`avjudge.runtime.progress`): a batched scorer
        (a judge) scores the batch together, any other (a metric, a function) one clip at a time, as it would
        anyway."""
        if scorer.batched:
            outcomes = scorer.score(clips, captions)
            advance(len(clips) / scorers)
            return outcomes
        outcomes = []
        for clip, caption in zip(clips, captions):
            outcomes += scorer.score([clip], [caption])
            advance(1 / scorers)
        return outcomes

    def score_decoded(self, items: Sequence[dict]) -> list[ClipRecord]:
        """`score` of items whose ``clip`` is decoded already (a `MediaClip`, or the reason it could not be)."""
        records = [ClipRecord(error=item["clip"]) if isinstance(item["clip"], str) else ClipRecord() for item in items]
        for name, scorer in self.scorers.items():
            chosen = [i for i, item in enumerate(items) if records[i].error is None and name in self._asked(item)]
            if not chosen:
                continue
            captions = [items[i].get("captions") or {} for i in chosen]
            outcomes = self._outcomes(scorer, [items[i]["clip"] for i in chosen], captions, len(self.scorers))
            if len(outcomes) != len(chosen):
                raise RuntimeError(f"the scorer {name!r} gave {len(outcomes)} outcomes for {len(chosen)} clips")
            for i, outcome in zip(chosen, outcomes):
                if outcome.ok:
                    records[i].values[name] = outcome.values
                else:
                    records[i].errors[name] = outcome.error
        return records
