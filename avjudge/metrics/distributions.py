"""Statistics of sets of clips, as generation papers report them: Fréchet distance of embeddings, KL divergence of
paired class distributions, inception score. The formulas are av-benchmark's (hkchengrex/av-benchmark @ 050a5cdb,
``av_bench/metrics/fad.py``, ``kl.py``, ``isc.py``, after audioldm_eval), so figures sit beside the papers'."""

from __future__ import annotations

import numpy as np

from .base import MetricError


def frechet_distance(generated: np.ndarray, reference: np.ndarray) -> float:
    """The Fréchet distance of Gaussians fitted to two sets of embeddings (rows):
    ``|mu_g - mu_r|^2 + Tr(S_g) + Tr(S_r) - 2 Tr(sqrt(S_g S_r))``, av-benchmark's formula.

    ``Tr(sqrt(S_g S_r))`` is the sum of the square roots of ``S_g S_r``'s eigenvalues (real and non-negative: it is
    similar to ``sqrt(S_g) S_r sqrt(S_g)``), taken exactly: with fewer clips than dimensions, as the singular values
    of ``A B^T`` (``S_g = A^T A``, ``S_r = B^T B``), else from the symmetric eigenproblem. av-benchmark's
    ``scipy.linalg.sqrtm`` of the product gives the same within 3.5e-6 (scipy 1.15 and 1.17 find finite roots with
    fewer clips than dimensions too); here a set against itself is exactly 0.
    """
    for name, rows in (("generated", generated), ("reference", reference)):
        if rows.ndim != 2 or len(rows) < 2:
            raise MetricError(f"a Fréchet distance needs at least 2 {name} embeddings, not {len(rows)}")
    if generated.shape[1] != reference.shape[1]:
        raise MetricError(f"embeddings of {generated.shape[1]} and {reference.shape[1]} dimensions")
    g, r = generated.astype(np.float64), reference.astype(np.float64)
    diff = g.mean(axis=0) - r.mean(axis=0)
    a = (g - g.mean(axis=0)) / np.sqrt(len(g) - 1)
    b = (r - r.mean(axis=0)) / np.sqrt(len(r) - 1)
    if min(len(a), len(b)) <= a.shape[1]:
        root_trace = np.linalg.svd(a @ b.T, compute_uv=False).sum()
    else:
        values, vectors = np.linalg.eigh(a.T @ a)
        half = (vectors * np.sqrt(np.clip(values, 0, None))) @ vectors.T  # sqrt(S_g)
        root_trace = np.sqrt(np.clip(np.linalg.eigvalsh(half @ (b.T @ b) @ half), 0, None)).sum()
    return float(diff @ diff + (a * a).sum() + (b * b).sum() - 2 * root_trace)


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits - logits.max(axis=1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def paired_kl(generated_logits: np.ndarray, reference_logits: np.ndarray) -> float:
    """KL(reference || generated) of the softmax class distributions, row k of one paired with row k of the other,
    summed over pairs and classes and divided by the pairs (AudioGen's formulation, av-benchmark's
    ``KL-*-softmax``)."""
    if generated_logits.shape != reference_logits.shape or len(generated_logits) == 0:
        raise MetricError(f"KL pairs rows: {generated_logits.shape} generated vs {reference_logits.shape} reference")
    log_g = _log_softmax(generated_logits.astype(np.float64))
    log_r = _log_softmax(reference_logits.astype(np.float64))
    return float((np.exp(log_r) * (log_r - log_g)).sum() / len(generated_logits))


def inception_score(logits: np.ndarray, splits: int = 10, seed: int = 2020) -> tuple[float, float]:
    """The inception score's mean and standard deviation over ``splits`` parts of the clips, shuffled with
    ``seed``: per part, ``exp(mean_k KL(p_k || mean p))`` of the softmax class distributions. A class probability
    that underflows to 0 (logits apart by more than ~745) contributes 0: av-benchmark's formula gives NaN there."""
    n = len(logits)
    if n < splits:
        raise MetricError(f"an inception score over {splits} splits needs at least {splits} clips, not {n}")
    rows = logits[np.random.RandomState(seed).permutation(n)].astype(np.float64)
    log_p = _log_softmax(rows)
    p = np.exp(log_p)
    scores = []
    for i in range(splits):
        part = slice(i * n // splits, (i + 1) * n // splits)
        q = p[part].mean(axis=0, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):  # a saturated softmax: 0 log 0 is 0, not NaN
            terms = np.where(p[part] > 0, p[part] * (log_p[part] - np.log(q)), 0.0)
        scores.append(np.exp(terms.sum(axis=1).mean()))
    return float(np.mean(scores)), float(np.std(scores))
