"""One reward for RL fine-tuning of audio-video generators: a weighted mix of judges, metrics and functions, scored
in this process (through the scoring core) or by a reward server (`avjudge serve`), with the same results.

Each term says what it judges (``aspect``: sync, video, audio, video-text, audio-text), so a trainer that routes
rewards per modality gets each term's value beside the weighted reward. A sample the reward cannot score gets what
``on_failure`` says (`avjudge.rewards.failure`), the failure reported beside it, never a silent 0.

``mode="win_rate"`` gives each sample its expected win rate against the others of its group instead (Pref-GRPO's
reward, from G scorings rather than C(G, 2) pairwise judge calls): per term, a judge's log-odds through its
preference model (`avjudge.judges.preference`, P(win) + ½ P(tie) averaged over the group), any other term's value by
rank; the terms' win rates weighted as the values would be. A group's win rates average ½; a failed sample is left
out of its group's comparisons (it wins nothing, and nobody wins against it) and takes the neutral ½.
"""

from __future__ import annotations

import copy
import json
import logging
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Union

from ..config import ConfigError
from ..judges import Judge
from ..judges.preference import Preference, rank_win_rates
from ..llm.content import base64_of
from ..media import DecodeNeeds, MediaClip, MediaError, conform, merge_needs
from ..metrics import Metric
from ..prompts import task as judge_task
from ..scoring import ClipRecord, FunctionScorer, JudgeScorer, MetricScorer, Scoring, caption_for, captions_of
from ..stats import finite_number
from .failure import OnFailure, RunningMeans
from .watch import GoldWatch

log = logging.getLogger(__name__)

ClipFunction = Callable[[MediaClip], float]
ASPECTS = ("sync", "video", "audio", "video-text", "audio-text")
TEXT_ASPECTS = ("video-text", "audio-text")  # what a term that reads the prompt judges


class PromptBlindReward(UserWarning):
    """A reward none of whose terms reads the prompt (shown once per place a reward is built)."""


JUDGE_ASPECTS = {"av": "sync", "vt": "video-text", "at": "audio-text"}
MODES = ("pointwise", "win_rate")


@dataclass
class RewardTerm:
    """One term of a reward.

    Attributes:
        scorer: a loaded `Judge`, a `Metric`, a function ``fn(clip) -> float``, or the name of a judge or metric a
            reward server serves.
        weight: its share of the weighted mean.
        output: which of its values (a judge: ``score``, or ``delta`` with ``use_delta``; a metric: default its first
            output with a scale, else its first number).
        aspect: what it judges (`ASPECTS`); a judge's follows its task, a metric's is its own.
        midpoint: its neutral value before any good value was seen (a judge: 0.5 for S, 0 for delta; a metric: the
            middle of its scale); a function's must be given under ``on_failure="neutral"``.
        needs: what a function reads of a clip (default: the file's own frames).
        preference: how win rates compare the term's values (``mode="win_rate"``): a judge's default is its own
            (fitted by ``avjudge judges calibrate``) on its log-odds; a function giving log-odds may name one; else
            the larger value wins.
        gold: a held-out term, scored and logged beside the reward but not in it; the reward's gold watch
            (`avjudge.rewards.watch`) warns when the reward rises while it falls.
    """

    scorer: Union[Judge, Metric, ClipFunction, str]
    weight: float = 1.0
    output: str | None = None
    aspect: str | None = None
    midpoint: float | None = None
    needs: DecodeNeeds | None = None
    preference: Preference | None = None
    gold: bool = False


@dataclass
class RewardBatch:
    """The rewards of a batch: the weighted reward per sample (failures as ``on_failure`` says), each term's value
    (always a finite number: the neutral one where the term failed), and which samples failed and why."""

    rewards: list[float | None]
    terms: dict[str, list[float]]
    failed: list[bool]
    errors: list[str | None]

    def info(self, k: int) -> dict[str, float]:
        """Sample ``k``'s extra information: each term's value and ``failed`` (1.0 or 0.0); numbers only."""
        return {**{name: values[k] for name, values in self.terms.items()}, "failed": float(self.failed[k])}

    def columns(self) -> dict[str, list[float]]:
        """Every sample's extra information, by key."""
        return {**self.terms, "failed": [float(f) for f in self.failed]}


def group_key(value):
    """A hashable key of what groups samples (a prompt as text or messages, an id): None stays None."""
    if value is None or isinstance(value, (str, int, float, tuple)):
        return value
    return json.dumps(value, sort_keys=True, default=str)


def sample(media: dict, text: str | None = None, utterance: str | None = None, group=None) -> dict:
    """A scoring-core item of one sample: its media fields (`avjudge.rewards.inputs.clip_item`), its texts, and its
    ``group`` (GRPO's group, the samples of one prompt: a text, an id, or messages, read as their JSON), where a
    failure's neutral value and a win rate's rivals come from."""
    group = group_key(group)
    return {**media, "captions": captions_of(text, utterance), **({"group": group} if group is not None else {})}


class Reward:
    """A weighted mix of judges, metrics and functions.

    Args:
        terms: name -> a `RewardTerm`, or a judge, metric or function (weight 1).
        on_failure: ``neutral`` (default), ``none``, ``nan`` or a number (`avjudge.rewards.failure`).
        use_delta: judges give delta = log P(Yes) - log P(No) instead of S (a slope where S saturates).
        window: how many recent good values of each term the neutral rule averages.
        workers: threads that decode a batch's clips.
        mode: ``pointwise`` (each sample's own values) or ``win_rate`` (its expected win rate in its group; see
            above): a trainer must then hand each call whole groups.
        watch_patience: logs in a row in which the reward rises and a gold term falls before the watch warns.

    Example:
        ```python
        reward = Reward({"av": RewardTerm(Judge.load("av", "runs/av/final"), 2.0),
                         "vt": Judge.load("vt", "runs/vt/final")})
        batch = reward.score([sample(clip_item("a.mp4"), text="a dog barks")])
        ```
    """

    def __init__(
        self,
        terms: dict[str, RewardTerm | Judge | Metric | ClipFunction],
        on_failure: str | float = "neutral",
        use_delta: bool = False,
        window: int = 256,
        workers: int = 2,
        mode: str = "pointwise",
        watch_patience: int = 5,
    ):
        self._setup(_terms(terms), on_failure, use_delta, window, mode, watch_patience)
        self.backend = _CoreBackend(Scoring([_scorer(n, t) for n, t in self.terms.items()], workers), self.terms)
        self._settle()

    @classmethod
    def served(
        cls,
        server,
        terms: dict[str, float | RewardTerm],
        on_failure: str | float = "neutral",
        use_delta: bool = False,
        window: int = 256,
        mode: str = "pointwise",
        watch_patience: int = 5,
    ) -> Reward:
        """The reward of judges and metrics a reward server serves: ``server`` is a `avjudge.serve.RewardClient`
        (over HTTP), or the server's scoring in this process (a `avjudge.serve.ScoreService`, scored through its
        core with no wire form: `over`); ``terms`` name what it serves, each with its weight (or a `RewardTerm`
        whose scorer is the served name)."""
        if isinstance(getattr(server, "scoring", None), Scoring):
            return cls.over(
                server.scoring, terms, on_failure, use_delta, window, mode=mode, watch_patience=watch_patience
            )
        reward = cls.__new__(cls)
        terms = _named_terms(terms)
        reward._setup(terms, on_failure, use_delta, window, mode, watch_patience)
        reward.backend = _ServedBackend(server, reward.terms)
        reward._settle()
        return reward

    @classmethod
    def over(
        cls,
        scoring: Scoring,
        terms: dict[str, float | RewardTerm],
        on_failure: str | float = "neutral",
        use_delta: bool = False,
        window: int = 256,
        score_items: Callable[[list[dict]], list[ClipRecord]] | None = None,
        mode: str = "pointwise",
        watch_patience: int = 5,
    ) -> Reward:
        """The reward of scorers an existing `Scoring` holds (a reward server's own): ``terms`` name them, each with
        its weight. ``score_items`` scores the core's items instead of ``scoring.score`` (the server's batcher, which
        batches them with other requests' items); by default one call scores at a time."""
        reward = cls.__new__(cls)
        terms = _named_terms(terms)
        missing = sorted(set(terms) - set(scoring.names()))
        if missing:
            raise ConfigError(f"no scorer {missing} to reward with; there are {scoring.names()}")
        reward._setup(terms, on_failure, use_delta, window, mode, watch_patience)
        reward.backend = _CoreBackend(scoring, reward.terms, score_items)
        reward._settle()
        return reward

    def _setup(
        self, terms: dict[str, RewardTerm], on_failure, use_delta: bool, window: int, mode: str, watch_patience: int
    ) -> None:
        if mode not in MODES:
            raise ConfigError(f"a reward's mode is one of {', '.join(MODES)}, not {mode!r}")
        self.terms, self.on_failure, self.use_delta, self.mode = terms, OnFailure(on_failure), use_delta, mode
        self.preferences: dict[str, Preference | None] = {}  # a judge term's preference model (win_rate mode)
        self.watch = GoldWatch(watch_patience) if any(t.gold for t in terms.values()) else None
        self.history = RunningMeans(window)
        # trainers call one reward from several threads (verl's reward loop scores each sample in an executor)
        self._lock = threading.Lock()

    def _settle(self) -> None:
        """Each term's aspect, output and midpoint, from its scorer where not given; an error names a term that
        lacks what it needs."""
        for name, term in self.terms.items():
            kind, known = self.backend.describe(name)
            if term.preference is not None or kind == "judge":
                self.preferences[name] = term.preference or Preference(**known.get("preference") or {})
            if kind == "judge":
                output = term.output or ("delta" if self.use_delta else "score")
                midpoint = 0.0 if output == "delta" else 0.5
                settled = replace(term, aspect=term.aspect or JUDGE_ASPECTS[known["task"]], output=output)
            elif kind == "metric":
                output = term.output or next(iter(known["scales"]), None)
                if output is None:
                    raise ConfigError(f"reward term {name!r}: say which output of {term.scorer} it takes (output=)")
                scale = known["scales"].get(output)
                midpoint = sum(scale) / 2 if scale else None
                settled = replace(term, aspect=term.aspect or known["aspect"], output=output)
            else:
                midpoint, settled = None, replace(term, output="value")
            settled = replace(settled, midpoint=term.midpoint if term.midpoint is not None else midpoint)
            if settled.aspect is not None and settled.aspect not in ASPECTS:
                raise ConfigError(f"reward term {name!r}: aspect {settled.aspect!r} is not one of {', '.join(ASPECTS)}")
            self.terms[name] = settled
        self._check_failure_rule()
        if not self.reads_prompt:
            warnings.warn(
                f"reward {'+'.join(self.terms)} reads no prompt (no vt or at judge, no CLAP): a generator can raise it "
                "with clips that ignore their prompts; audit it (avjudge rewards audit) before training",
                PromptBlindReward,
                stacklevel=3,
            )

    def _check_failure_rule(self) -> None:
        unplaced = [name for name, term in self.terms.items() if term.midpoint is None]
        if unplaced and self.on_failure.rule == "neutral":
            raise ConfigError(
                f"reward term(s) {unplaced} have no midpoint for on_failure=neutral: give RewardTerm(..., midpoint=X) "
                "(the neutral value before any good one is seen) or another on_failure"
            )

    def audit(self, samples: Sequence[dict], **options) -> dict:
        """This reward scored on degenerate variants of ``samples`` beside their sources: the reward audit
        (`avjudge.rewards.audit.audit`, whose options it takes)."""
        from .audit import audit

        return audit(self, list(samples), **options)

    def with_failure(self, on_failure: str | float) -> Reward:
        """This reward under another failure rule; its terms, scorers and running means are shared."""
        other = copy.copy(self)
        other.on_failure = OnFailure(on_failure)
        other._check_failure_rule()
        return other

    @property
    def aspects(self) -> dict[str, str | None]:
        return {name: term.aspect for name, term in self.terms.items()}

    def streams(self) -> dict[str, set[str]]:
        """term -> what it reads of a sample: ``audio`` and ``video`` (its decode needs, a served term's as its server
        describes them) and ``text`` (a prompt-reading aspect)."""
        reads = {}
        for name, term in self.terms.items():
            needs = self.backend.needs(name)
            reads[name] = {s for s in ("audio", "video") if getattr(needs, s)} | (
                {"text"} if term.aspect in TEXT_ASPECTS else set()
            )
        return reads

    @property
    def reads_prompt(self) -> bool:
        """Whether a term judges the clip against its prompt (a vt or at judge, CLAP...)."""
        return any(aspect in TEXT_ASPECTS for aspect in self.aspects.values())

    def score(self, samples: Sequence[dict]) -> RewardBatch:
        """The rewards of ``samples`` (scoring-core items: `sample`). A sample whose media could not be made a clip
        (``error``, `avjudge.rewards.inputs.clip_item`) fails alone. Calls from several threads are safe: the scoring
        is the backend's (one at a time in this process; a server's batcher batches them), the combining one at a
        time."""
        samples = list(samples)
        ready = [k for k, s in enumerate(samples) if s.get("error") is None]
        scored = dict(zip(ready, self.backend.score([samples[k] for k in ready]) if ready else []))
        records = [scored.get(k) or ClipRecord(error=samples[k]["error"]) for k in range(len(samples))]
        return self.combine(records, [s.get("group") for s in samples])

    def combine(self, records: Sequence[ClipRecord], groups: Sequence | None = None) -> RewardBatch:
        """The rewards of samples whose terms were scored (a record each, its values and errors by term name), each
        in its group (``groups``, one per record; None: the call is one group)."""
        with self._lock:
            return self._combined(records, list(groups) if groups is not None else [None] * len(records))

    def _combined(self, records: Sequence[ClipRecord], groups: list) -> RewardBatch:
        values: dict[str, list[float | None]] = {name: [] for name in self.terms}
        compared: dict[str, list[float | None]] = {name: [] for name in self.terms}  # what win rates compare
        errors: list[str | None] = []
        for record in records:
            first = record.error
            for name, term in self.terms.items():
                outcome = record.outcome(name)
                value = outcome.values.get(term.output) if outcome.ok else None
                if outcome.ok and not finite_number(value):
                    outcome = replace(outcome, error=f"{term.output} is {value!r}, not a finite number")
                # a judge compares by its log-odds, as its preference model reads them
                judged = outcome.ok and name in self.preferences
                delta = outcome.values.get("delta", value) if judged else value
                if judged and not finite_number(delta):
                    outcome = replace(outcome, error=f"non-finite log-odds {delta!r}")
                values[name].append(float(value) if outcome.ok else None)
                compared[name].append(delta if outcome.ok else None)
                if not term.gold:  # a held-out gold term's failure fails no sample: it is watched, not optimised
                    first = first or (None if outcome.ok else f"{name}: {outcome.error}")
            errors.append(first)
        pointwise = {name: self._neutral_filled(name, column, groups) for name, column in values.items()}
        optimised = {name: t for name, t in self.terms.items() if not t.gold}
        filled = dict(pointwise)
        if self.mode == "win_rate":
            filled.update({name: self._win_rates(name, compared[name], groups, errors) for name in optimised})
        total = sum(t.weight for t in optimised.values())
        rewards, failed = [], []
        for k, error in enumerate(errors):
            weighted = sum(t.weight * filled[name][k] for name, t in optimised.items()) / total
            failed.append(error is not None)
            rewards.append(self.on_failure.reward(weighted) if error is not None else weighted)
            if error is not None:
                log.warning("avjudge reward: sample %d failed (%s); reward %r", k, error, rewards[-1])
        if self.watch is not None:
            good = [k for k, error in enumerate(errors) if error is None]
            proxy = [sum(t.weight * pointwise[name][k] for name, t in optimised.items()) / total for k in good]
            gold = {name: [v for v in values[name] if v is not None] for name in self.terms if name not in optimised}
            self.watch.observe(_mean(proxy), {name: _mean(v) for name, v in gold.items() if v})
        return RewardBatch(rewards, filled, failed, errors)

    def _win_rates(self, name: str, column: list[float | None], groups: list, errors: list) -> list[float]:
        """The term's win rate of each sample against the others of its group that did not fail (a call's samples
        without a group are one group); ½ for a sample that failed."""
        members: dict = {}
        for k, group in enumerate(groups):
            if errors[k] is None:
                members.setdefault(group, []).append(k)
        rates = [0.5] * len(column)
        model = self.preferences.get(name)
        for indices in members.values():
            compared = [column[k] for k in indices]
            won = model.win_rates(compared) if model is not None else rank_win_rates(compared)
            for k, rate in zip(indices, won):
                rates[k] = float(rate)
        return rates

    def _neutral_filled(self, name: str, column: list[float | None], groups: list) -> list[float]:
        """The term's values with each failed one replaced by its neutral value (`avjudge.rewards.failure`): its
        group's good values' mean, so its advantage is 0 and the group's mean stays; the good ones feed the history."""
        good = [v for v in column if v is not None]
        in_group: dict = {}
        for value, group in zip(column, groups):
            if value is not None and group is not None:
                in_group.setdefault(group, []).append(value)

        def neutral(group) -> float:
            for candidate in (
                _mean(in_group.get(group)),
                self.history.mean(name, group) if group is not None else None,
                _mean(good),
                self.history.mean(name),
                self.terms[name].midpoint,
            ):
                if candidate is not None:
                    return candidate
            return 0.0  # no midpoint, allowed under another rule: reported as 0 beside `failed`

        filled = [neutral(group) if value is None else value for value, group in zip(column, groups)]
        self.history.add(name, good)
        for group, values in in_group.items():
            self.history.add_group(name, group, values)
        return filled


def _mean(values: list[float] | None) -> float | None:
    return sum(values) / len(values) if values else None


def check_weights(terms: dict) -> None:
    """At least one term a reward optimises (not ``gold``), their weights summing to a positive number.

    Raises:
        ConfigError: otherwise.
    """
    if not any(not t.gold for t in terms.values()):
        raise ConfigError("a reward needs at least one term it optimises (gold terms are only watched)")
    if sum(t.weight for t in terms.values() if not t.gold) <= 0:
        raise ConfigError("reward term weights must sum to a positive number")


def _named_terms(terms: dict[str, float | RewardTerm]) -> dict[str, RewardTerm]:
    """Terms that name a scorer (served, or of a `Scoring`): a weight, or a `RewardTerm` whose scorer is the name."""
    terms = {name: t if isinstance(t, RewardTerm) else RewardTerm(name, float(t)) for name, t in terms.items()}
    check_weights(terms)
    return terms


def _terms(terms: dict) -> dict[str, RewardTerm]:
    terms = {name: t if isinstance(t, RewardTerm) else RewardTerm(t) for name, t in terms.items()}
    check_weights(terms)
    served = [name for name, t in terms.items() if isinstance(t.scorer, str)]
    if served:
        raise ConfigError(
            f"reward term(s) {served} name a scorer: build the reward with Reward.served (a server's) or Reward.over"
        )
    return terms


# -- where the terms are scored ---------------------------------------------------------------------------------------


def _scorer(name: str, term: RewardTerm):
    """A term's scorer for the core, named as the term."""
    if isinstance(term.scorer, Judge):
        return JudgeScorer(term.scorer, name)
    if isinstance(term.scorer, Metric):
        return MetricScorer(term.scorer, name)
    return FunctionScorer(name, term.scorer, term.needs)


@dataclass
class _CoreBackend:
    """The terms scored through the scoring core, each term by the scorer of its name: in this process one call at a
    time, or by ``score_items`` (a server's batcher)."""

    scoring: Scoring
    terms: dict[str, RewardTerm]
    score_items: Callable[[list[dict]], list[ClipRecord]] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def describe(self, name: str) -> tuple[str, dict]:
        scorer = self.scoring.scorers[name]
        if isinstance(scorer, JudgeScorer):
            return "judge", {"task": scorer.judge.task.name, "preference": scorer.judge.preference.to_dict()}
        if isinstance(scorer, MetricScorer):
            return "metric", {"scales": dict(scorer.metric.scales), "aspect": scorer.metric.aspect}
        return "function", {}

    def needs(self, name: str) -> DecodeNeeds:
        return self.scoring.scorers[name].needs

    def score(self, samples: list[dict]) -> list[ClipRecord]:
        items = [{**s, "scorers": list(self.terms)} for s in samples]  # only the reward's scorers run
        if self.score_items is not None:
            return self.score_items(items)
        with self.lock:  # trainers call one reward from several threads (verl's reward loop)
            return self.scoring.score(items)


@dataclass
class _ServedBackend:
    """The terms scored by a reward server (`ScoreService` in process, or a `RewardClient`): files go as paths,
    encoded bytes as uploads, clips in memory as packed arrays conformed first to what the served scorers read."""

    server: object
    terms: dict[str, RewardTerm]
    models: dict[str, dict] = field(default_factory=dict)

    def __post_init__(self):
        self.models = {m["name"]: m for m in self.server.describe()["models"]}
        missing = sorted({t.scorer for t in self.terms.values()} - set(self.models))
        if missing:
            raise ConfigError(f"the reward server does not serve {missing}; it serves {sorted(self.models)}")

    def describe(self, name: str) -> tuple[str, dict]:
        model = self.models[self.terms[name].scorer]
        return model["kind"], model

    def needs(self, name: str) -> DecodeNeeds:
        return DecodeNeeds(**self.models[self.terms[name].scorer]["needs"])

    @property
    def plan(self) -> DecodeNeeds:
        return merge_needs(DecodeNeeds(**self.models[t.scorer]["needs"]) for t in self.terms.values())

    def score(self, samples: list[dict]) -> list[ClipRecord]:
        items, clips, unsent = self.request(samples)
        return self.records(self.server.score_records(items, clips) if items else [], len(samples), unsent)

    def request(self, samples: list[dict]) -> tuple[list[dict], dict[str, MediaClip], dict[int, str]]:
        """The server's items for ``samples`` (one per sample and term), the clips in memory they name, and the
        samples that could not be sent (by index, why)."""
        items, clips, unsent = [], {}, {}
        for k, s in enumerate(samples):
            media = {}
            if "media" in s:
                try:  # only what the served scorers read travels
                    clips[f"c{k}"] = conform(s["media"], self.plan)
                except MediaError as err:
                    unsent[k] = str(err)
                    continue
                media = {"clip": f"c{k}"}
            elif isinstance(s.get("video"), bytes):
                media = {"video_b64": base64_of(s["video"])}
            elif s.get("video") is not None:  # absolute: a server reads a path on its own disk, not from our folder
                media = {"video": str(Path(s["video"]).absolute())}
            else:
                unsent[k] = "the sample names no clip"
                continue
            captions = s.get("captions") or {}
            for name, term in self.terms.items():
                model = self.models[term.scorer]
                item = {"id": f"{k}/{name}", "judge": term.scorer, **media, "utterance": captions.get("utterance")}
                if model["kind"] == "judge":  # the caption its task reads travels as the item's text
                    item["text"] = caption_for(judge_task(model["task"]), captions)
                else:
                    item["output"] = term.output
                items.append(item)
        return items, clips, unsent

    def records(self, results: Sequence[dict], n: int, unsent: dict[int, str]) -> list[ClipRecord]:
        """The records of ``n`` samples from the server's results of `request`'s items."""
        by_id = {r["id"]: r for r in results}
        records = []
        for k in range(n):
            record = ClipRecord(error=unsent.get(k))
            for name in self.terms if k not in unsent else ():
                r = by_id[f"{k}/{name}"]
                if r["error"] is not None:
                    record.errors[name] = r["error"]
                elif self.models[self.terms[name].scorer]["kind"] == "judge":
                    record.values[name] = {"score": r["score"], "delta": r["delta"]}
                else:
                    record.values[name] = r["values"]
            records.append(record)
        return records
