"""AVI-Bench's four-level taxonomy (Sec. 5 of the paper, arXiv AVI-Bench): from a model's 14 task scores (percent)
to Level 1 (task-adaptive), Level 2 (modality-adaptive), Level 3 (stage-adaptive) and Level 4 (domain-adaptive).

- L1: the mean of the three familiar-domain stage averages (Perception: AMIC, VMIC, AVL, AVM; Understanding: VAR,
  AVR, AVC; Reasoning: AVH, VAH, AVQA, AVLG). The paper's Table 5 is this mean of stages, not the mean of the 11
  tasks.
- L2 = (1 - 0.5 dm) L1, dm = 2 |A - V| / (A + V), with A the mean of the audio-dominant familiar tasks (AMIC, VAR,
  AVH) and V of the visual-dominant ones (VMIC, AVR, VAH) (Table 2's balance; the sets that reproduce Table 5).
- L3 = (1 - 0.5 ds) L2: each task headroom-normalised against its chance score (Table 15), stage means of those,
  and ds = (R - min(P, U)) / R where reasoning runs ahead of its weakest prerequisite, else 0.
- L4: the harmonic mean of L3 (the familiar domain) and the unfamiliar domain's (PriSe: ASQA, VSQA, AVSQA) score,
  computed as L2 is (its mean, penalised by the ASQA / VSQA imbalance).

AVI-Bench's data is CC BY-ND 4.0 with an anti-training addendum: avjudge never ships or trains on it.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from ...base import SuiteError

STAGES = {
    "perception": ("AMIC", "VMIC", "AVL", "AVM"),
    "understanding": ("VAR", "AVR", "AVC"),
    "reasoning": ("AVH", "VAH", "AVQA", "AVLG"),
}
PRISE = ("ASQA", "VSQA", "AVSQA")  # primitive sensation: the unfamiliar domain
TASKS = (*(t for tasks in STAGES.values() for t in tasks), *PRISE)
AUDIO_DOMINANT, VISUAL_DOMINANT = ("AMIC", "VAR", "AVH"), ("VMIC", "AVR", "VAH")
CHANCE = {  # Table 15: each task's chance score, in percent
    "AMIC": 0.0,
    "VMIC": 0.0,
    "AVL": 0.0,
    "AVLG": 0.0,
    "AVM": 33.33,
    "AVH": 33.33,
    "VAH": 33.33,
    "VAR": 10.0,
    "AVR": 10.0,
    "AVC": 13.06,
    "AVQA": 21.35,
    "ASQA": 29.66,
    "VSQA": 26.70,
    "AVSQA": 24.63,
}
ALPHA = 0.5


def _mean(values) -> float:
    values = list(values)
    return sum(values) / len(values)


def modality_gap(audio: float, visual: float) -> float:
    """dm: twice the relative difference of the audio and visual scores (2 when both are 0)."""
    return 2.0 if audio + visual == 0 else 2 * abs(audio - visual) / (audio + visual)


def headroom(task: str, score: float) -> float:
    """A task's score above its chance, as a share of the headroom above chance, in percent (never below 0)."""
    return max(0.0, (score - CHANCE[task]) / (100 - CHANCE[task]) * 100)


def levels(scores: dict[str, float]) -> dict:
    """The four levels and every intermediate figure of one model's task scores (percent)."""
    stage = {name: _mean(scores[t] for t in tasks) for name, tasks in STAGES.items()}
    level1 = _mean(stage.values())
    dm = modality_gap(_mean(scores[t] for t in AUDIO_DOMINANT), _mean(scores[t] for t in VISUAL_DOMINANT))
    level2 = (1 - ALPHA * dm) * level1
    normalised = {name: _mean(headroom(t, scores[t]) for t in tasks) for name, tasks in STAGES.items()}
    weakest, reasoning = min(normalised["perception"], normalised["understanding"]), normalised["reasoning"]
    ds = 0.0 if reasoning <= weakest else (reasoning - weakest) / reasoning
    level3 = (1 - ALPHA * ds) * level2
    dm_unfamiliar = modality_gap(scores["ASQA"], scores["VSQA"])
    unfamiliar = (1 - ALPHA * dm_unfamiliar) * _mean(scores[t] for t in PRISE)
    level4 = 0.0 if level3 + unfamiliar == 0 else 2 * level3 * unfamiliar / (level3 + unfamiliar)
    return {
        "L1": level1,
        "L2": level2,
        "L3": level3,
        "L4": level4,
        "delta_m": dm,
        "delta_s": ds,
        **{f"S_{name}": value for name, value in stage.items()},
        **{f"S~_{name}": value for name, value in normalised.items()},
        "S_unfamiliar": unfamiliar,
        "delta_m_unfamiliar": dm_unfamiliar,
    }


def read_scores(path: Path) -> dict[str, dict[str, float]]:
    """Model -> task scores (percent) from a CSV with ``model`` and the 14 task columns (other columns ignored), or
    from the ``report.json`` of `avjudge omni score --suite avibench`."""
    if not path.is_file():
        raise SuiteError(f"{path}: no such scores file (CSV: model, {', '.join(TASKS)}; or an omni score report.json)")
    if path.suffix == ".json":
        return _report_scores(path)
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        missing = [c for c in ("model", *TASKS) if c not in (reader.fieldnames or [])]
        if missing:
            raise SuiteError(f"{path}: no column(s) {', '.join(missing)} (needs model and the 14 task scores)")
        models = {}
        for line, row in enumerate(reader, start=2):
            try:
                models[row["model"]] = {t: float(row[t]) for t in TASKS}
            except (TypeError, ValueError) as err:
                raise SuiteError(f"{path}:{line}: a task score is not a number ({err})") from err
    return models


def write_levels(rows: dict[str, dict], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    columns = list(next(iter(rows.values())))
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["model", *columns])
        for model, row in rows.items():
            writer.writerow([model, *(f"{row[c]:.4f}" for c in columns)])


def _report_scores(path: Path) -> dict[str, dict[str, float]]:
    try:
        models = json.loads(path.read_text(encoding="utf-8"))["models"]
    except (ValueError, KeyError, TypeError) as err:
        raise SuiteError(f"{path}: not an omni score report (JSON with models) ({err})") from err
    scores = {}
    for model, block in models.items():
        row = block.get("scores") if isinstance(block, dict) else None
        missing = [t for t in TASKS if not isinstance((row or {}).get(t), (int, float))]
        if missing:
            raise SuiteError(
                f"{path}: {model} has no score for {', '.join(missing)} (scored with --suite avibench on all 14 tasks?)"
            )
        scores[model] = {t: float(row[t]) for t in TASKS}
    return scores
