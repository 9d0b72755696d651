"""Semantic kNN edges between embedded nodes (spec 004, §3.4 "HNSW semantic edges"; §8 #20).

NodeRAG adds the base layer (L0) of an HNSW index over the T/S/A/H embeddings
to the graph as undirected edges (paper; authors' code: hnswlib, M = 50). L0
depends on insertion order and the HNSW random levels, so as a deterministic
stand-in we build the exact cosine k-nearest-neighbour graph (our choice;
spec §8 #20 allows it as a documented deviation): each row's ``k`` most similar
other rows. :func:`approximate_knn_edges` builds the same kind of edge list from
any ANN search (e.g. Qdrant's HNSW) and :func:`edge_overlap` measures how far
the two agree.

Edge lists are undirected unique pairs ``(i, j, similarity)`` with ``i < j``,
sorted; a pair found from both sides appears once. Among equally similar
candidates the lower row index wins.

How the exact graph stays cheap: similarities are computed in ``block × block``
tiles, so the ``n × n`` matrix is never held. Each off-diagonal tile is computed
once and offered to both its rows and its columns (cosine is symmetric). Every
row keeps a running top-k; diagonal tiles go first, so that each row has a
k-th best value before the off-diagonal tiles, whose entries below it are
discarded by one comparison (a per-row partition is the fallback when too many
entries pass).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

_SEARCH_BATCH = 1024
_PRUNE_FACTOR = 2  # above this many × k candidates per row (mean), trim with a partition


def _as_float(vectors: np.ndarray) -> np.ndarray:
    """The rows as a floating-point array (float32 and float64 kept as they are)."""
    array = np.asarray(vectors)
    return array if array.dtype.kind == "f" else array.astype(np.float64)


def _tile_top_k(sims: np.ndarray, k: int, axis: int) -> np.ndarray:
    """Mask of the k best entries along ``axis``: larger value, then lower index."""
    width = sims.shape[axis]
    if width <= k:
        return np.ones(sims.shape, dtype=bool)
    kth = np.take(np.partition(sims, width - k, axis=axis), [width - k], axis=axis)
    above = sims > kth
    ties = sims == kth
    room = k - above.sum(axis=axis, keepdims=True)
    if (ties.sum(axis=axis, keepdims=True) <= room).all():  # the usual case: no tie to break
        return above | ties
    return above | (ties & (np.cumsum(ties, axis=axis) <= room))


class _RunningTopK:
    """Each row's k best neighbours so far, sorted by (value desc, index asc).

    Empty slots hold ``-inf`` with index -1 (ranked after every real index).
    """

    def __init__(self, n: int, k: int, dtype: np.dtype) -> None:
        self.k = k
        self.values = np.full((n, k), -np.inf, dtype=dtype)
        self.indices = np.full((n, k), -1, dtype=np.int64)

    def offer(self, sims: np.ndarray, row0: int, col0: int, *, to_rows: bool) -> None:
        """Offer a tile whose entry (i, j) pairs rows ``row0 + i`` and ``col0 + j``.

        ``to_rows``: the tile's rows gain its columns as candidates; otherwise
        the tile's columns gain its rows.
        """
        axis = 1 if to_rows else 0
        owner0, other0 = (row0, col0) if to_rows else (col0, row0)
        owned = sims.shape[1 - axis]
        floor = self.values[owner0 : owner0 + owned, -1]
        mask = sims >= (floor[:, None] if to_rows else floor[None, :])
        if np.count_nonzero(mask) > _PRUNE_FACTOR * self.k * owned:
            mask &= _tile_top_k(sims, self.k, axis)
        i, j = np.divmod(np.flatnonzero(mask), sims.shape[1])  # flat is faster than 2-D
        values = sims[i, j]
        owner, other = (i, j) if to_rows else (j, i)
        if not to_rows:
            order = np.argsort(owner, kind="stable")
            owner, other, values = owner[order], other[order], values[order]
        self._merge(owner0, owned, owner, other + other0, values)

    def _merge(
        self, owner0: int, owned: int, owner: np.ndarray, other: np.ndarray, values: np.ndarray
    ) -> None:
        """Merge candidates (grouped by ascending ``owner``) into rows ``owner0 ..``."""
        counts = np.bincount(owner, minlength=owned)
        slot = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
        new_values = np.full((owned, int(counts.max(initial=0))), -np.inf, dtype=self.values.dtype)
        new_indices = np.full(new_values.shape, -1, dtype=np.int64)
        new_values[owner, slot] = values
        new_indices[owner, slot] = other
        rows = slice(owner0, owner0 + owned)
        all_values = np.concatenate([self.values[rows], new_values], axis=1)
        all_indices = np.concatenate([self.indices[rows], new_indices], axis=1)
        rank = np.where(all_indices < 0, np.iinfo(np.int64).max, all_indices)
        order = np.lexsort((rank, -all_values), axis=1)[:, : self.k]
        self.values[rows] = np.take_along_axis(all_values, order, axis=1)
        self.indices[rows] = np.take_along_axis(all_indices, order, axis=1)


def _unique_pairs(
    rows: np.ndarray, cols: np.ndarray, sims: np.ndarray
) -> list[tuple[int, int, float]]:
    """Canonical ``i < j`` pairs, first occurrence kept, sorted; self-pairs dropped."""
    keep = rows != cols
    rows, cols, sims = rows[keep], cols[keep], sims[keep]
    lo, hi = np.minimum(rows, cols), np.maximum(rows, cols)
    order = np.lexsort((hi, lo))  # stable: the first occurrence of a pair stays first
    lo, hi, sims = lo[order], hi[order], sims[order]
    first = np.ones(len(lo), dtype=bool)
    first[1:] = (lo[1:] != lo[:-1]) | (hi[1:] != hi[:-1])
    return list(
        zip(lo[first].tolist(), hi[first].tolist(), sims[first].astype(float).tolist(), strict=True)
    )


def _all_pairs(vectors: np.ndarray) -> list[tuple[int, int, float]]:
    """Every pair ``i < j`` with its similarity (used when ``k >= n - 1``)."""
    lo, hi = np.triu_indices(len(vectors), k=1)
    return _unique_pairs(lo, hi, (vectors @ vectors.T)[lo, hi])


def knn_edges(vectors: np.ndarray, k: int, *, block: int = 2048) -> list[tuple[int, int, float]]:
    """Exact cosine kNN graph over L2-normalised rows, as undirected unique pairs.

    Args:
        vectors: ``(n, d)`` L2-normalised rows.
        k: neighbours per row (self excluded); ``k >= n - 1`` gives all pairs.
        block: tile side (memory is a few ``block × block`` arrays).
    """
    vectors = _as_float(vectors)
    n = len(vectors)
    if n < 2 or k <= 0:
        return []
    if k >= n - 1:
        return _all_pairs(vectors)
    starts = range(0, n, max(block, 1))
    stops = [min(start + max(block, 1), n) for start in starts]
    best = _RunningTopK(n, k, vectors.dtype)
    for a, stop in zip(starts, stops, strict=True):
        sims = vectors[a:stop] @ vectors[a:stop].T
        np.fill_diagonal(sims, -np.inf)
        best.offer(sims, a, a, to_rows=True)
    for t, (a, a_stop) in enumerate(zip(starts, stops, strict=True)):
        for c, c_stop in zip(starts[t + 1 :], stops[t + 1 :], strict=True):
            sims = vectors[a:a_stop] @ vectors[c:c_stop].T
            best.offer(sims, a, c, to_rows=True)
            best.offer(sims, a, c, to_rows=False)
    sources = np.repeat(np.arange(n), k)
    return _unique_pairs(sources, best.indices.ravel(), best.values.ravel())


def approximate_knn_edges(
    search: Callable[[np.ndarray, int], list[list[int]]],
    vectors: np.ndarray,
    k: int,
) -> list[tuple[int, int, float]]:
    """kNN edges from a batched ANN ``search(queries, count) -> neighbour indices per query``.

    The search may return the query row itself; it is skipped, and each row keeps
    its first ``k`` other neighbours (in the order the search ranks them).
    Similarities are recomputed as dot products. Same output contract as
    :func:`knn_edges`.
    """
    vectors = _as_float(vectors)
    n = len(vectors)
    if n < 2 or k <= 0:
        return []
    count = min(k + 1, n)
    rows: list[int] = []
    cols: list[int] = []
    for start in range(0, n, _SEARCH_BATCH):
        found = search(vectors[start : start + _SEARCH_BATCH], count)
        for offset, neighbours in enumerate(found):
            row = start + offset
            others = [int(j) for j in neighbours if 0 <= int(j) < n and int(j) != row][:k]
            rows.extend([row] * len(others))
            cols.extend(others)
    if not rows:
        return []
    r, c = np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64)
    sims = np.einsum("ij,ij->i", vectors[r], vectors[c])
    return _unique_pairs(r, c, sims)


def _pair_set(edges: Iterable[tuple[int, int, float]]) -> set[tuple[int, int]]:
    return {(min(i, j), max(i, j)) for i, j, _ in edges if i != j}


def edge_overlap(a: Iterable[tuple[int, int, float]], b: Iterable[tuple[int, int, float]]) -> float:
    """Jaccard similarity of two undirected edge sets (1.0 when both are empty)."""
    left, right = _pair_set(a), _pair_set(b)
    union = left | right
    if not union:
        return 1.0
    return len(left & right) / len(union)
