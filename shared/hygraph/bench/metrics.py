"""Retrieval metrics: passage recall@k, answer-in-context, latency percentiles, growth exponents."""

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
