"""Personalized PageRank over a sparse graph (scipy), for graph-walk retrieval.

HippoRAG-style retrieval seeds a random walk at the nodes a question matched
and ranks every other node by how often the walk visits it. This is the power
iteration on a column-stochastic transition matrix::

    p ← (1 - damping) · s + damping · Pᵀ p

where ``s`` is the normalised seed vector. Nodes without out-edges (dangling)
return their mass to the seeds, so the scores always sum to one. NodeRAG's
"shallow" PPR is the same iteration stopped after a fixed number of steps.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy import sparse


def transition_matrix(adjacency: sparse.spmatrix) -> sparse.csr_matrix:
    """Row-normalised adjacency (each node's out-weights sum to one; dangling rows stay 0)."""
    adjacency = sparse.csr_matrix(adjacency, dtype=np.float64)
    out = np.asarray(adjacency.sum(axis=1)).ravel()
    inv = np.divide(1.0, out, out=np.zeros_like(out), where=out > 0)
    return sparse.diags(inv) @ adjacency


def personalized_pagerank(
    transition: sparse.csr_matrix,
    seeds: Mapping[int, float],
    *,
    damping: float = 0.5,
    iterations: int | None = None,
    tol: float = 1e-8,
    max_iterations: int = 100,
) -> np.ndarray:
    """PPR scores for every node, given a row-stochastic ``transition`` and seed weights.

    Args:
        transition: from :func:`transition_matrix`.
        seeds: node index → non-negative weight (normalised here).
        damping: probability of following an edge (HippoRAG uses 0.5).
        iterations: a fixed number of steps (shallow PPR); None iterates to ``tol``.
    """
    n = transition.shape[0]
    reset = np.zeros(n, dtype=np.float64)
    for i, w in seeds.items():
        if w > 0:
            reset[i] += w
    total = reset.sum()
    if total <= 0:
        return np.zeros(n, dtype=np.float64)
    reset /= total
    dangling = np.asarray(transition.sum(axis=1)).ravel() == 0
    forward = transition.T.tocsr()
    p = reset.copy()
    steps = iterations if iterations is not None else max_iterations
    for _ in range(steps):
        walked = forward @ p
        walked += p[dangling].sum() * reset  # dangling mass restarts at the seeds
        new = (1.0 - damping) * reset + damping * walked
        done = iterations is None and np.abs(new - p).sum() < tol
        p = new
        if done:
            break
    return p
