"""Retrieval metrics: passage and evidence recall@k, answer in context, latency, growth."""

from __future__ import annotations

import math
import re
import string
from collections.abc import Sequence

import numpy as np

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans({c: " " for c in string.punctuation})


def recall_at_k(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    """|gold ∩ top-k| / |gold| (HippoRAG's passage recall); 0 for an empty gold set."""
    gold_set = set(gold)
    if not gold_set:
        return 0.0
    return len(gold_set & set(ranked[:k])) / len(gold_set)


def normalize_evidence(text: str) -> str:
    """Case-folded, with every run of whitespace one space: how evidence is matched."""
    return " ".join(text.casefold().split())


def evidence_ranks(chunk_texts: Sequence[str], evidence: Sequence[str]) -> list[int | None]:
    """For each evidence string, the 1-based rank of the first chunk whose text contains it.

    ``None`` where no chunk contains it. Containment is checked chunk by chunk, after
    :func:`normalize_evidence` on both sides, as MultiHop-RAG matches its evidence facts.
    """
    texts = [normalize_evidence(t) for t in chunk_texts]
    ranks: list[int | None] = []
    for item in evidence:
        needle = normalize_evidence(item)
        ranks.append(next((i for i, t in enumerate(texts, 1) if needle and needle in t), None))
    return ranks


def evidence_recall_at_k(ranks: Sequence[int | None], k: int) -> float:
    """Share of a question's evidence strings found in its first ``k`` chunks (0 for none)."""
    if not ranks:
        return 0.0
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks)


def normalize_answer(text: str) -> str:
    """Lower-case, drop punctuation and articles, collapse whitespace (SQuAD-style)."""
    text = text.lower().translate(_PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_in_context(context: str, answers: Sequence[str]) -> bool:
    """Whether any gold answer or alias appears in the context, after normalisation.

    Matches whole tokens, so "35" does not match inside "1935".
    """
    haystack = f" {normalize_answer(context)} "
    return any(
        f" {needle} " in haystack for needle in (normalize_answer(a) for a in answers) if needle
    )


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0–100) with linear interpolation; NaN for no values."""
    if not values:
        return math.nan
    return float(np.percentile(np.asarray(values, dtype=float), q))


def growth_exponent(sizes: Sequence[float], values: Sequence[float]) -> float:
    """The slope b of a least-squares fit of log(value) = a + b·log(size).

    1 means linear growth, 0 constant, 2 quadratic. NaN with fewer than two
    usable (positive) points.
    """
    pairs = [(s, v) for s, v in zip(sizes, values, strict=True) if s > 0 and v > 0]
    if len(pairs) < 2 or len({s for s, _ in pairs}) < 2:
        return math.nan
    x = np.log([s for s, _ in pairs])
    y = np.log([v for _, v in pairs])
    slope, _ = np.polyfit(x, y, 1)
    return float(slope)


def mean(values: Sequence[float]) -> float:
    return float(sum(values) / len(values)) if values else math.nan


def question_positions(spec: str, n: int) -> list[int]:
    """0-based positions for a 1-based selection such as ``"1-50"`` or ``"1-10,25,90-100"``.

    Ranges are inclusive and clipped to the ``n`` questions there are; the positions
    come back sorted and without repeats.

    Raises:
        ValueError: a part that is not a number or a range of numbers, or a start
            above its end.
    """
    chosen: set[int] = set()
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        first, dash, last = part.partition("-")
        start, end = int(first), int(last) if dash else int(first)
        if start < 1 or end < start:
            raise ValueError(f"bad question range {part!r}: use 1-based ranges like 1-50")
        chosen.update(range(start - 1, min(end, n)))
    return sorted(chosen)


def wins_ties_losses(
    ours: Sequence[float], theirs: Sequence[float], tolerance: float = 1e-9
) -> dict[str, int]:
    """Per-question comparison of two methods' scores on the same questions, in order."""
    out = {"wins": 0, "ties": 0, "losses": 0}
    for a, b in zip(ours, theirs, strict=True):
        key = "wins" if a > b + tolerance else "losses" if a < b - tolerance else "ties"
        out[key] += 1
    return out
