"""Reciprocal-rank fusion (Cormack, Clarke & Büttcher, SIGIR 2009).

Several rankings of the same kind of item (chunk ids from dense search, BM25, a graph
walk ...) become one: an item scores ``sum(weight / (k + rank))`` over the rankings it
appears in (ranks from 1). Only ranks matter, so rankings whose scores live on
different scales fuse without calibration; a small ``k`` lets an item first in one
ranking beat one that is middling in all of them.
"""

from __future__ import annotations

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
