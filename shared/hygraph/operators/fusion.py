"""Fusing rankings: reciprocal-rank fusion and distribution-based score fusion.

Reciprocal-rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009): several rankings of
the same kind of item (chunk ids from dense search, BM25, a graph walk ...) become one:
an item scores ``sum(weight / (k + rank))`` over the rankings it appears in (ranks
from 1). Only ranks matter, so rankings whose scores live on
different scales fuse without calibration; a small ``k`` lets an item first in one
ranking beat one that is middling in all of them.

Distribution-based score fusion (DBSF, Qdrant's ``Fusion.DBSF``): each ranking's
scores are rescaled so that its mean minus three standard deviations maps to 0 and its
mean plus three to 1, and an item's rescaled scores are summed. Unlike RRF it keeps how
far a hit stands above the rest of its list, so a BM25 hit on a rare code or name that
dwarfs every other BM25 score outweighs a dense list whose scores are all alike (and
the other way round): per question, the more decisive ranking leads. Qdrant computes it
inside its query engine over its own prefetches; our BM25 ranking lives outside Qdrant,
so the same rule is applied here to the lists already in hand.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]],
    k: float = 60.0,
    weights: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """``(item, fused score)`` best first (ties by first appearance); ``weights`` default to 1."""
    scores: dict[str, float] = {}
    for n, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else float(weights[n])
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda x: -x[1])


def distribution_score_fusion(
    rankings: Sequence[Sequence[tuple[str, float]]],
    weights: Sequence[float] | None = None,
    depth: int = 0,
) -> list[tuple[str, float]]:
    """``(item, fused score)`` best first (ties by first appearance).

    Each ranking's mean and standard deviation are taken over its first ``depth``
    scores (0: all), so asking for a deeper list does not rescale the top of it; a
    ranking whose scores are all equal gives each of its items 0.5.
    """
    scores: dict[str, float] = {}
    for n, ranking in enumerate(rankings):
        if not ranking:
            continue
        weight = 1.0 if weights is None else float(weights[n])
        head = [s for _, s in (ranking[:depth] if depth > 0 else ranking)]
        mean = sum(head) / len(head)
        spread = 6.0 * math.sqrt(sum((s - mean) ** 2 for s in head) / len(head))
        low = mean - spread / 2
        for item, score in ranking:
            value = (score - low) / spread if spread > 0 else 0.5
            scores[item] = scores.get(item, 0.0) + weight * value
    return sorted(scores.items(), key=lambda x: -x[1])
