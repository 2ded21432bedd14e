"""Psychometric sweeps (beyond the paper): comparison items whose two clips differ by set amounts, and the 75 %
discrimination threshold of a model's answers from a logistic fit, beside human just-noticeable differences.

For a two-alternative task the proportion correct rises from chance: P(d) = 0.5 + 0.5 / (1 + exp(-(ln d - mu) / s)),
fitted by maximum likelihood; the 75 % point is d = exp(mu).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.io import wavfile
from scipy.optimize import minimize

from ....data.questions import ChoiceQuestion, write_questions
from ...base import SuiteError
from .stimuli import ATTRIBUTE_SPECS, GAP, INSTRUCTION, SAMPLE_RATE, fade, to_pcm16

# attribute -> the differences swept (its unit), how a difference applies to a base value, a human JND with source
SWEEPS = {
    "pitch": ((0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2), "semitones", lambda base, d: base + d),
    "loudness": ((0.25, 0.5, 1.0, 2.0, 4.0, 8.0), "LU", lambda base, d: base + d),
    "duration": ((0.02, 0.05, 0.1, 0.2, 0.4, 0.8), "ratio - 1", lambda base, d: base * (1 + d)),
}
HUMAN_JND = {
    "pitch": (0.15, "10-20 cents for pure tones near 1 kHz (the paper's Appendix A)"),
    "loudness": (1.0, "about 1 dB for broadband sounds at moderate levels"),
    "duration": (0.1, "a Weber fraction of about 10 % for durations near one second"),
}
BASES = {"pitch": (55.0, 75.0), "loudness": (-32.0, -18.0), "duration": (0.8, 1.8)}


def sweep_items(out: Path, attribute: str, per_level: int = 20, seed: int = 0) -> list[ChoiceQuestion]:
    """``per_level`` comparison items (balanced: the larger clip first in half) at every swept difference."""
    if attribute not in SWEEPS:
        raise SuiteError(f"no sweep for {attribute!r}; sweeps: {sorted(SWEEPS)}")
    differences, unit, apply = SWEEPS[attribute]
    spec = ATTRIBUTE_SPECS[attribute]
    question = (
        f"Two clips are played with {GAP} seconds of silence between them. Which clip {spec.comparison_question}?"
    )
    questions = []
    for level, d in enumerate(differences):
        for i in range(per_level):
            rng = np.random.default_rng([seed, level, i])
            base = rng.uniform(*BASES[attribute])
            first_is_larger = i % 2 == 0
            values = (apply(base, d), base) if first_is_larger else (base, apply(base, d))
            clips = [fade(spec.render(v, rng)) for v in values]
            audio = np.concatenate([clips[0], np.zeros(int(GAP * SAMPLE_RATE)), clips[1]])
            media = Path("audio") / f"{attribute}_sweep_{level}_{i:03d}.wav"
            (out / media).parent.mkdir(parents=True, exist_ok=True)
            wavfile.write(out / media, SAMPLE_RATE, to_pcm16(audio))
            questions.append(
                ChoiceQuestion(
                    id=media.stem,
                    media=str(media),
                    question=question,
                    options=("the first clip", "the second clip"),
                    answer="A" if first_is_larger else "B",
                    category=f"{attribute}/{d}",
                    prompt=f"{question} Answer 'A' for the first, 'B' for the second. {INSTRUCTION}",
                    groups={"attribute": attribute, "paradigm": "comparison", "difference": str(d)},
                    extra={
                        "label": {
                            "first_is_larger": first_is_larger,
                            "difference": d,
                            "unit": unit,
                            "values": list(values),
                        }
                    },
                )
            )
    write_questions(questions, out / "questions.jsonl")
    return questions


def fit_threshold(differences: np.ndarray, correct: np.ndarray) -> dict:
    """The 2AFC logistic's maximum-likelihood fit to per-item outcomes: ``{"threshold", "slope", "n"}`` (the
    threshold is the difference answered right 75 % of the time; None where the fit has no interior point)."""
    x, y = np.log(np.asarray(differences, float)), np.asarray(correct, float)

    def nll(params):
        mu, log_s = params
        p = 0.5 + 0.5 / (1 + np.exp(-(x - mu) / np.exp(log_s)))
        p = np.clip(p, 1e-6, 1 - 1e-6)
        return -np.sum(y * np.log(p) + (1 - y) * np.log(1 - p))

    fit = minimize(nll, x0=[float(np.median(x)), np.log(0.5)], method="Nelder-Mead")
    mu, log_s = fit.x
    inside = x.min() - 1 <= mu <= x.max() + 1
    return {"threshold": float(np.exp(mu)) if inside else None, "slope": float(np.exp(log_s)), "n": len(y)}


def threshold_report(questions: list[ChoiceQuestion], answers: dict[str, str | None]) -> dict:
    """Per swept attribute: accuracy per difference, the fitted threshold and the human JND beside it. ``answers``
    maps question id to the letter read (None: abstained, wrong); unanswered questions are left out."""
    report = {}
    for attribute in sorted({q.groups["attribute"] for q in questions}):
        items = [q for q in questions if q.groups["attribute"] == attribute and q.id in answers]
        d = np.array([q.extra["label"]["difference"] for q in items])
        ok = np.array([answers[q.id] == q.answer for q in items])
        jnd, source = HUMAN_JND[attribute]
        report[attribute] = {
            "unit": SWEEPS[attribute][1],
            "accuracy": {str(v): float(ok[d == v].mean()) for v in sorted(set(d))},
            **fit_threshold(d, ok),
            "human_jnd": jnd,
            "human_jnd_source": source,
        }
    return report
