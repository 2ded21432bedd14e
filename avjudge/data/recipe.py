"""Dataset recipes: what to build from which sources, as a dataclass loadable from YAML."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..config import ConfigError, load_config, parse_overrides
from ..llm import BACKENDS
from ..perturb import PerturbError, get_strategy
from ..perturb.base import Strategy
from ..perturb.taxonomy import taxonomy
from ..resources import resolve

# AVBench §7.2: about a quarter to temporal and a quarter to semantic negatives, the rest even.
AV_STRATEGY_WEIGHTS = {
    "time_shift_micro": 0.125,
    "time_shift_medium": 0.125,
    "random_mismatch": 0.125,
    "semantic_mismatch": 0.125,
    "speed_change": 0.1,
    "pitch_shift": 0.1,
    "filter": 0.1,
    "noise_addition": 0.1,
    "ambience_swap": 0.05,
    "speaker_count": 0.05,
}


@dataclass(frozen=True)
class JudgeRecipe:
    """What one judge's pairs are made of.

    Attributes:
        pairs: how many pairs (positives and negatives together).
        positive_fraction: the share of positives.
        strategies: AV judge: strategy -> weight (default: the paper's mix).
        strategy_params: AV judge: strategy -> parameter overrides, e.g. ``{time_shift_micro: {shift_s: [0.1, 0.3]}}``.
        dimensions_per_sample: VT / AT judges: caption-edit dimensions rotated per source clip and round.
        dimensions: VT / AT judges: restrict and reweight the taxonomy's dimensions.
        max_rounds: VT / AT judges: rotation rounds over the sources before a shortfall is reported.
        crop: AV judge: every pair, positive or negative, is a window of its source of one length, cut the same way
            (`avjudge.data.windows`); false shows whole sources, as the AVBench paper does (then no time shift may
            use ``fill: window``).
        window_s: AV judge, cropping: the window's length; default: each source's length less the largest shift.
        min_window_s: AV judge, cropping: a source whose window would be shorter is skipped (counted in the stats).
        nuisance_positives: AV judge: the share of positives given an in-sync nuisance (``in_sync_mute``: a stretch
            silent and black on both streams, labelled Yes, PEAVS's idea), so silence is never evidence of a mismatch.
        ties: AV judge: a negative below its strategy's noticeable size (`Strategy.noticeable`: a shift under 45 ms,
            a pitch step under 0.15 semitones) is marked a tie with its source (``tie: true``): pairwise training
            with ``objective: btt`` learns it as a tie; SFT still answers No.
        check_changed: AV judge: each negative is applied as it is built and its sound compared with its source's
            over what the pair shows; one closer than re-encoding noise (`avjudge.perturb.signal.UNCHANGED_DB`: a
            filter above all of a clip's sound, any change of a silent one) is drawn again and counted in the stats
            (``redrawn_unchanged``). It decodes each source's sound once; false builds from the manifest alone.
    """

    pairs: int = 1000
    positive_fraction: float = 0.5
    # av: strategy -> weight; vt / at use the taxonomy's dimension weights
    strategies: dict[str, float] = field(default_factory=dict)
    strategy_params: dict[str, dict] = field(default_factory=dict)  # strategy -> parameter overrides
    dimensions_per_sample: int = 3  # vt / at: dimensions rotated per source clip and round
    dimensions: dict[str, float] = field(default_factory=dict)  # vt / at: restrict and reweight the taxonomy
    max_rounds: int = 10  # vt / at: rotation rounds over the sources before a shortfall is reported
    crop: bool = True  # av: every pair a window of its source, one length (Synchformer's way)
    window_s: float | None = None  # av, cropping: the window; default each source less the largest shift
    min_window_s: float = 1.0  # av, cropping: shorter windows skip their source
    nuisance_positives: float = 0.0  # av: share of positives muted and blacked in sync (still Yes)
    ties: bool = False  # av: negatives below their strategy's noticeable size marked ties with their source
    check_changed: bool = True  # av: each negative applied as it is built and compared with its source's sound

    def __post_init__(self):
        if self.window_s is not None and self.window_s <= 0:
            raise ConfigError(f"window_s must be positive, got {self.window_s}")
        if not 0 <= self.nuisance_positives <= 1:
            raise ConfigError(f"nuisance_positives must be a share in [0, 1], got {self.nuisance_positives}")
        if self.pairs < 2:
            raise ConfigError(f"pairs must be at least 2, got {self.pairs}")
        if not 0 < self.positive_fraction < 1:
            raise ConfigError(f"positive_fraction must be in (0, 1), got {self.positive_fraction}")
        if self.min_window_s <= 0 or self.max_rounds < 1 or self.dimensions_per_sample < 1:
            raise ConfigError(
                "min_window_s must be positive and max_rounds and dimensions_per_sample at least 1, got "
                f"{self.min_window_s}, {self.max_rounds}, {self.dimensions_per_sample}"
            )
        for name, weights in (("strategies", self.strategies), ("dimensions", self.dimensions)):
            negative = {key: weight for key, weight in weights.items() if weight < 0}
            if negative:  # a weight of 0 leaves a strategy out; a negative one is a mistake, not a subtler 0
                raise ConfigError(f"{name} weights are 0 (left out) or positive, got {negative}")
            if weights and not any(weight > 0 for weight in weights.values()):
                raise ConfigError(f"{name} weights leave every one out (all 0): give one a positive weight")

    def check(self, judge: str, weighted: dict[str, float]) -> None:
        """What only the judge's kind tells: an AV judge's strategies (``weighted``: those it draws) and their
        parameters, a text judge's dimensions.

        Raises:
            ConfigError: naming the field: a setting of the other kind of judge, an unknown strategy or dimension, a
                parameter out of its bounds, or parameters of a strategy the judge never draws.
        """
        if judge != "av":
            if self.strategies or self.strategy_params:
                raise ConfigError(f"strategies are the av judge's; the {judge} judge's negatives take dimensions")
            try:
                taxonomy(judge, weights=self.dimensions or None)
            except ValueError as err:
                raise ConfigError(f"dimensions: {err}") from err
            return
        if self.dimensions:
            raise ConfigError("dimensions are the vt and at judges' caption edits; the av judge's take strategies")
        for name in sorted(set(self.strategies) | set(self.strategy_params)):
            try:
                strategy = get_strategy(name, self.strategy_params.get(name))
            except PerturbError as err:
                raise ConfigError(
                    f"{'strategy_params' if name in self.strategy_params else 'strategies'}: {err}"
                ) from err
            # a negative a person could not tell from its source, labelled No, would teach the judge to guess
            if strategy.reaches_unnoticed() and not self.ties:
                raise ConfigError(
                    f"strategy_params: {strategy.reaches_unnoticed()}: such negatives equal their sources; raise the "
                    "range's low end, or set ties: true to mark them ties with their sources"
                )
        unused = sorted(set(self.strategy_params) - set(weighted))
        if unused:
            raise ConfigError(
                f"strategy_params: {', '.join(unused)} never drawn (no weight in strategies): weigh it or remove its "
                "parameters"
            )


@dataclass(frozen=True)
class Recipe:
    """A dataset recipe (YAML; shipped ones by name: `avjudge.resources.shipped("recipe")`).

    Attributes:
        judges: ``av`` / ``vt`` / ``at`` -> its `JudgeRecipe`.
        source: the source manifest (JSONL of ``{id, video, captions, meta}``).
        name: the dataset's name.
        seed: every draw's seed: the same recipe and sources make the same pairs.
        splits: split -> fraction; sources with the same content share a split.
        dedupe: ``content`` (sha256 of each file) or ``none``.
        sample_rate: the audio rate negatives are made at.
        text_backend: who edits captions: ``rules`` (offline), ``openai`` (a server), ``transformers`` (a local LM).
        text_backend_options: the backend's options (``base_url``, ``model``, ``closed_vocabulary``...).
        max_regenerations: a rejected caption edit is asked again this many times.
        similarity_range: accepted character-level similarity of an edit to its caption.
    """

    judges: dict[str, JudgeRecipe]
    source: str | None = None  # manifest path: set in the file (relative to it) or with --set (relative to here)
    name: str = "dataset"
    seed: int = 0
    splits: dict[str, float] = field(default_factory=lambda: {"train": 0.9, "val": 0.05, "test": 0.05})
    dedupe: Literal["content", "none"] = "content"  # content: sha256 of the media file (or the record's)
    sample_rate: int = 16000  # audio rate negatives are made at (the judges' rate)
    text_backend: str = "rules"
    text_backend_options: dict = field(default_factory=dict)
    max_regenerations: int = 3
    similarity_range: tuple[float, float] = (0.70, 0.995)

    def __post_init__(self):
        unknown = set(self.judges) - {"av", "vt", "at"}
        if unknown or not self.judges:
            raise ConfigError(f"judges must be some of av, vt, at; got {sorted(self.judges)}")
        for judge, recipe in self.judges.items():
            try:
                recipe.check(judge, self.strategy_weights(judge))
            except ConfigError as err:
                raise ConfigError(f"judges.{judge}.{err}") from err
        if abs(sum(self.splits.values()) - 1) > 1e-6 or min(self.splits.values()) < 0:
            raise ConfigError(f"split fractions must be non-negative and sum to 1, got {self.splits}")
        if self.sample_rate <= 0 or self.max_regenerations < 0:
            raise ConfigError(
                f"sample_rate must be positive and max_regenerations 0 or more, got {self.sample_rate}, "
                f"{self.max_regenerations}"
            )
        low, high = self.similarity_range
        if not 0 <= low < high <= 1:
            raise ConfigError(f"similarity_range is (low, high) with 0 <= low < high <= 1, got {self.similarity_range}")
        if self.text_backend not in BACKENDS:
            raise ConfigError(f"text_backend {self.text_backend!r} is unknown; choose one of {sorted(BACKENDS)}")
        if self.text_backend_options.get("closed_vocabulary") and self.text_backend != "rules":
            raise ConfigError(
                f"closed_vocabulary is an option of the rules text backend, not of "
                f"{self.text_backend!r}: remove it from text_backend_options"
            )

    def strategy_weights(self, judge: str) -> dict[str, float]:
        weights = self.judges[judge].strategies or (AV_STRATEGY_WEIGHTS if judge == "av" else {})
        return {k: v for k, v in weights.items() if v > 0}

    def audio_strategies(self, judge: str) -> dict[str, Strategy]:
        """name -> the audio strategy ``judge``'s negatives draw from, with this recipe's parameter overrides.

        Raises:
            ConfigError: a strategy cuts its clip (``fill: window``) in a recipe that shows whole sources.
        """
        strategies = {
            name: get_strategy(name, self.judges[judge].strategy_params.get(name))
            for name in sorted(self.strategy_weights(judge))
        }
        cutting = sorted(name for name, s in strategies.items() if s.largest_cut() > 0)
        if cutting and not self.windowed(judge):
            raise ConfigError(
                f"{', '.join(cutting)} cut{'s' if len(cutting) == 1 else ''} the clip (fill: window) but judges.{judge}"
                ".crop is false, so positives would be longer than negatives: set crop: true, or fill: silence"
            )
        return strategies

    def windowed(self, judge: str) -> bool:
        """Whether ``judge``'s pairs are windows of their sources (AV pairs of a cropping recipe)."""
        return judge == "av" and self.judges[judge].crop


def load_recipe(path: str | Path, overrides: list[str] | None = None) -> tuple[Recipe, Path]:
    """The recipe (a file, or a shipped one by name) and its manifest path: one the recipe file names is relative to
    the file's folder, one an override names (``source=...``) to the working directory."""
    path = resolve(path, "recipe")
    recipe = load_config(Recipe, path, overrides)
    if not recipe.source:
        raise ConfigError(f"{path}: the recipe names no source manifest; give one with --set source=FILE.jsonl")
    source = Path(recipe.source)
    if not source.is_absolute() and "source" not in parse_overrides(overrides or []):
        source = path.parent / source
    return recipe, source
