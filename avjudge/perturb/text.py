"""Video-text and audio-text hard negatives: minimal LLM edits of captions (AVBench §3.2, §7).

Per sample, three distinct dimensions are chosen by a rotation that keeps every
dimension's share at its weight. A backend rewrites the caption under the paper's prompt
(Fig. 8 for audio-text, Fig. 9 for video-text); the reply must be JSON
``{modified_description, modification_detail}`` and pass quality control (character
similarity to the original within [0.70, 0.995], structural markers kept, something
changed). A failing reply is regenerated up to three times, then the sample is rejected
with its reasons counted.
"""

from __future__ import annotations

import difflib
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

from ..llm.base import BackendError, ChatRequest, TextBackend
from .taxonomy import Dimension, taxonomy

AT_PROMPT = """You are an expert in data generation for multimodal contrastive learning.
Your task is to generate a **MISMATCHED** negative sample by altering the original audio description.

TARGET MODIFICATION
- Target Dimension: {dimension} - Modification Strategy: {strategy}
ORIGINAL INPUT {original}

CRITICAL CONSTRAINTS (MUST STRICTLY FOLLOW)
1. [Targeted Execution]: The modification **MUST** perfectly reflect the "Modification Strategy". It must create a genuine and significant contradiction to the original audio, not merely a paraphrase or a synonym substitution.
2. [Structural Isolation]: You must 100% preserve all original structural markers, including separators (e.g., '|') and section labels (e.g., "Audio Observation:", "Speech Content:"). Do not add, merge, or drop any segments.
3. [Collateral Preservation]: Do not alter any acoustic or semantic information outside the target dimension. For example, if modifying "Speaker Identity", you must leave the "Background Noise" or "Music" descriptions completely untouched.
4. [Physical & Logical Plausibility]: The generated mismatch must still describe a physically possible and logically sound acoustic environment. Do not create surreal, impossible, or contradictory internal logic within the new description.
5. [Linguistic Consistency]: The transcript/dialogue section **MUST** remain in its original language. If the modification strategy alters the speaker's dialect or demographic, adjust the tone appropriately while strictly keeping structural tags in English.

OUTPUT FORMAT
{{
"modified_description": "the complete modified text here",
"modification_detail": "A precise, 1-sentence explanation of the exact change made"
}}"""

VT_PROMPT = """You are an expert in data generation for multimodal contrastive learning.
Your task is to generate a **HARD NEGATIVE** sample by introducing a minimal error into the original video description.

TARGET MODIFICATION
- Target Dimension: {dimension} - Reference Error Types: {strategy}
ORIGINAL INPUT {original}

CRITICAL CONSTRAINTS (MUST STRICTLY FOLLOW)
1. [Strict Word Limit]: You are strictly confined to changing a **MAXIMUM** of 1 to 3 words. Over 90-95% of the characters must remain exactly identical to the original text.
2. [Syntactic Isomorphism]: You are **FORBIDDEN** from rephrasing, reordering, or restructuring the sentence. The grammatical skeleton (including active/passive voice and clause structures) must be 100% preserved.
3. [Targeted Isolation]: Modify only the exact concept dictated by the target dimension and reference error types. Zero collateral changes are allowed. If changing "Color", do not accidentally alter "Size" or "Action".
4. [Categorical Proximity]: To create a high-quality "HARD" negative, the substituted word **MUST** belong to the exact same semantic category as the original word (e.g., replacing one specific color with another, or one specific vehicle with another).
5. [Grammatical Fluency]: The newly inserted words must perfectly match the surrounding syntax. Ensure correct verb tenses, singular/plural agreement, and proper articles (e.g., changing 'a apple' to 'an apple' if necessary) without altering the rest of the sentence.

OUTPUT FORMAT
{{
"modified_description": "the exactly matched text with only 1-3 words changed",
"modification_detail": "Specify the exact word swap (e.g., 'Changed X to Y')"
}}"""

PROMPTS = {"at": AT_PROMPT, "vt": VT_PROMPT}
SIMILARITY_RANGE = (0.70, 0.995)
MAX_REGENERATIONS = 3
# Section labels such as "Audio Observation:" or "Speech Content:": Title Case words before a colon.
_LABEL = re.compile(r"(?<![\w])(?:[A-Z][\w/&-]*[ ]){0,4}[A-Z][\w/&-]*:")


def render_negative_prompt(task: str, dimension: Dimension, original: str) -> str:
    strategy = dimension.description if task == "at" else dimension.error_types
    title = f"{dimension.primary} / {dimension.key}" if task == "at" else dimension.primary
    return PROMPTS[task].format(dimension=title, strategy=strategy, original=original)


def similarity(a: str, b: str) -> float:
    """Character-level similarity (difflib SequenceMatcher ratio)."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def parse_json_object(reply: str) -> dict:
    """The JSON object in a model's reply (code fences tolerated)."""
    text = reply.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    if fenced:
        text = fenced.group(1)
    data = json.loads(text)
    if not isinstance(data, dict):
        raise ValueError("the reply is not a JSON object")
    return data


def parse_reply(reply: str) -> tuple[str, str]:
    """(modified_description, modification_detail) from a JSON reply."""
    data = parse_json_object(reply)
    if not isinstance(data.get("modified_description"), str):
        raise ValueError("no modified_description string")
    return data["modified_description"].strip(), str(data.get("modification_detail", ""))


def quality_check(original: str, modified: str, bounds=SIMILARITY_RANGE) -> tuple[str | None, float | None]:
    """(None, similarity) if the negative passes quality control, else (the reason, similarity if computed)."""
    if modified.strip() == original.strip():
        return "unchanged", None
    if _LABEL.findall(original) != _LABEL.findall(modified) or original.count("|") != modified.count("|"):
        return "structural_markers_changed", None
    s = similarity(original, modified)
    return (None if bounds[0] <= s <= bounds[1] else "similarity_out_of_range"), s


@dataclass(frozen=True)
class TextNegative:
    text: str
    detail: str
    dimension: str
    attempts: int
    similarity: float


@dataclass(frozen=True)
class TextRejection:
    dimension: str
    attempts: int
    reasons: tuple[str, ...] = field(default_factory=tuple)


def make_text_negative(
    original: str,
    task: str,
    dimension: Dimension,
    backend: TextBackend,
    seed: int,
    max_regenerations: int = MAX_REGENERATIONS,
    bounds: tuple[float, float] = SIMILARITY_RANGE,
) -> TextNegative | TextRejection:
    prompt = render_negative_prompt(task, dimension, original)
    reasons = []
    for attempt in range(max_regenerations + 1):
        request = ChatRequest(
            prompt=prompt,
            json_mode=True,
            seed=seed * 16 + attempt,
            meta={
                "task": task,
                "dimension": dimension.key,
                "original": original,
                "categories": list(dimension.categories),
                "mode": dimension.mode,
            },
        )
        try:
            modified, detail = parse_reply(backend.complete(request))
        except BackendError:
            reasons.append("backend_error")
            continue
        except (ValueError, json.JSONDecodeError):
            reasons.append("malformed_json")
            continue
        problem, sim = quality_check(original, modified, bounds)
        if problem is None:
            return TextNegative(modified, detail, dimension.key, attempt + 1, sim)
        reasons.append(problem)
    return TextRejection(dimension.key, max_regenerations + 1, tuple(reasons))


def iter_rotation(
    task: str, seed: int, per_sample: int = 3, dims: tuple[Dimension, ...] | None = None
) -> Iterator[tuple[str, ...]]:
    """Endless ``per_sample`` distinct dimensions per sample; each dimension's share follows its weight.

    Each sample takes the dimensions furthest behind their target count (ties broken at
    random), so counts never drift more than about one sample from their targets.
    """
    dims = dims or taxonomy(task)
    if per_sample > len(dims):
        raise ValueError(f"{per_sample} dimensions per sample but only {len(dims)} exist")
    rng = np.random.default_rng(seed)
    weights = np.array([d.weight for d in dims])
    weights = weights / weights.sum()
    counts = np.zeros(len(dims))
    for i in itertools.count():
        deficit = per_sample * (i + 1) * weights - counts
        chosen = np.lexsort((rng.random(len(dims)), -deficit))[:per_sample]
        counts[chosen] += 1
        yield tuple(dims[j].key for j in chosen)
