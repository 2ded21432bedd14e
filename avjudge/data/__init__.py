"""Pair datasets: manifests, recipes, splits, the builder, loading pairs, exports."""

from .build import build_dataset, built_recipe, built_sources, built_stats, dataset_hash, pairs_now, split_sources
from .manifest import MEDIA_EXTENSIONS, ManifestError, input_items, load_manifest
from .pairs import DecodedSources, PairDataset, load_pairs, pair_clip
from .recipe import JudgeRecipe, Recipe, load_recipe
from .splits import assign_splits

__all__ = [
    "DecodedSources",
    "MEDIA_EXTENSIONS",
    "input_items",
    "JudgeRecipe",
    "ManifestError",
    "PairDataset",
    "Recipe",
    "assign_splits",
    "build_dataset",
    "built_recipe",
    "built_sources",
    "built_stats",
    "dataset_hash",
    "load_manifest",
    "load_pairs",
    "load_recipe",
    "pair_clip",
    "pairs_now",
    "split_sources",
]
