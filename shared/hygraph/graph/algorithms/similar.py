"""Pairs of vectors whose cosine passes a threshold (HippoRAG's synonym edges).

HippoRAG (Gutiérrez et al., NeurIPS 2024) and HippoRAG 2 (ICML 2025) join two
entities by a *synonym* edge when their vectors' cosine is at least 0.8, so that
"Alhandra" and "Alhandra, Portugal" share a walk. :func:`similar_pairs` finds, for
each query row, the key rows above the threshold (at most ``cap`` of them, best
first), in ``block``-row tiles so the full ``n × n`` matrix is never held.
"""

from __future__ import annotations

import numpy as np


def normalise_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim != 2:
        raise ValueError(f"expected a 2-D array of vectors, got shape {array.shape}")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)


def similar_pairs(
    queries: np.ndarray,
    keys: np.ndarray,
    *,
    threshold: float,
    cap: int,
    skip: np.ndarray | None = None,
    block: int = 1024,
    unit: bool = False,
) -> list[tuple[int, int, float]]:
    """``(query row, key row, cosine)`` for every key at or above ``threshold``.

    Args:
        queries, keys: ``(q, d)`` and ``(n, d)`` vectors (normalised here).
        threshold: the least cosine kept (HippoRAG: 0.8).
        cap: at most this many keys per query row, most similar first (ties: lower key
            row first).
        skip: for each query row, a key row to leave out (its own entry), or -1.
        block: query rows per tile.
        unit: the rows are unit-length already (:func:`normalise_rows`'s), as a caller
            that keeps its keys between calls has them: not scaled again.

    Returns pairs grouped by query row, each group best first.
    """
    if unit:
        q, k = np.asarray(queries, dtype=np.float32), np.asarray(keys, dtype=np.float32)
    else:
        q, k = normalise_rows(queries), normalise_rows(keys)
    if len(q) == 0 or len(k) == 0 or cap <= 0:
        return []
    import torch

    out: list[tuple[int, int, float]] = []
    keys_t = torch.from_numpy(k).T
    for start in range(0, len(q), max(block, 1)):
        # PyTorch's product, not numpy's: numpy's BLAS keeps a thread pool of its own
        # whose threads spin after each product, taking a core from the encoder's next
        # forward pass (a one-document insert's first call ran twice as long).
        sims = (torch.from_numpy(q[start : start + max(block, 1)]) @ keys_t).numpy()
        if skip is not None:
            rows = np.arange(len(sims))
            own = np.asarray(skip[start : start + len(sims)], dtype=np.int64)
            valid = own >= 0
            sims[rows[valid], own[valid]] = -np.inf
        hits_r, hits_c = np.nonzero(sims >= threshold)
        if len(hits_r) == 0:
            continue
        values = sims[hits_r, hits_c]
        order = np.lexsort((hits_c, -values, hits_r))
        hits_r, hits_c, values = hits_r[order], hits_c[order], values[order]
        first = np.searchsorted(hits_r, hits_r, side="left")
        keep = (np.arange(len(hits_r)) - first) < cap
        out.extend(
            zip(
                (hits_r[keep] + start).tolist(),
                hits_c[keep].tolist(),
                values[keep].astype(float).tolist(),
                strict=True,
            )
        )
    return out
