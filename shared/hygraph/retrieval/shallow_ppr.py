"""NodeRAG's shallow Personalized PageRank (spec 004, §4.2; §8 items 1-3).

At query time NodeRAG seeds a walk at the entry nodes and stops after a few
iterations (t = 2), so the mass stays within 1-2 hops of the entry points.

* Transition matrix (spec §8 #2): the symmetric weighted adjacency of G5,
  row-normalised, ``P_ij = w_ij / sum_j w_ij``. A node with no edges keeps a zero
  row, so mass that reaches it is dropped (only the restart term reaches it
  again). The authors' code instead fills such rows with ones; we do not.
* ``mode="restart"`` (paper, default): ``π_t = α·p + (1 - α)·Pᵀ π_{t-1}``, with
  ``π_0 = p``, exactly ``iterations`` updates.
* ``mode="lazy"`` (authors' code): ``π_t = α·Pᵀ π_{t-1} + (1 - α)·π_{t-1}``, a lazy
  walk with no restart, stopping early once ``‖π_t - π_{t-1}‖₂ < tol``.
* ``cap_edge_weights`` is the authors' ``unbalance_adjust`` (on in their shipped
  configuration, off by default here for paper fidelity):
  ``w(u, v) ← min(w, 1/deg(u), 1/deg(v))`` with ``deg`` the neighbour count.

``p`` is the personalization normalised to sum 1 (the paper's is uniform over
the entry set; the caller may weight vector and exact-match hits, spec §8 #3).
Only sparse matrix-vector products are used; ``Pᵀ`` can be computed once with
:func:`transition_transpose` and reused across queries.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
from scipy import sparse

_MODES = ("restart", "lazy")


def symmetric_adjacency(n: int, edges: Iterable[tuple[int, int, float]]) -> sparse.csr_matrix:
    """Weighted undirected ``n × n`` adjacency from an edge list.

    Each input edge ``(i, j, w)`` with ``i != j`` adds ``w`` at both ``(i, j)`` and
    ``(j, i)``; repeated edges sum (so ``(i, j, w)`` listed together with
    ``(j, i, w)`` gives weight ``2w``). Self-loops are dropped.
    """
    rows: list[int] = []
    cols: list[int] = []
    data: list[float] = []
    for i, j, w in edges:
        if i == j:
            continue
        rows.extend((i, j))
        cols.extend((j, i))
        data.extend((float(w), float(w)))
    matrix = sparse.coo_matrix((data, (rows, cols)), shape=(n, n), dtype=np.float64)
    return matrix.tocsr()  # COO → CSR sums duplicate entries


def cap_edge_weights(adjacency: sparse.csr_matrix) -> sparse.csr_matrix:
    """Authors' ``unbalance_adjust``: ``w(u, v) ← min(w, 1/deg(u), 1/deg(v))``.

    ``deg`` counts a node's neighbours (stored non-zero entries of its row).
    """
    matrix = sparse.csr_matrix(adjacency, dtype=np.float64, copy=True)
    matrix.eliminate_zeros()
    degree = np.diff(matrix.indptr).astype(np.float64)
    inverse = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    coo = matrix.tocoo()
    capped = np.minimum(coo.data, np.minimum(inverse[coo.row], inverse[coo.col]))
    return sparse.csr_matrix((capped, (coo.row, coo.col)), shape=matrix.shape)


def transition_transpose(adjacency: sparse.csr_matrix) -> sparse.csr_matrix:
    """``Pᵀ`` for the row-normalised adjacency ``P`` (zero rows stay zero)."""
    matrix = sparse.csr_matrix(adjacency, dtype=np.float64)
    out = np.asarray(matrix.sum(axis=1)).ravel()
    inverse = np.divide(1.0, out, out=np.zeros_like(out), where=out != 0)
    return (sparse.diags(inverse) @ matrix).T.tocsr()


def _personalization_vector(
    n: int, personalization: Mapping[int, float] | np.ndarray
) -> np.ndarray:
    """Dense non-negative vector from a mapping (weights of repeated keys sum) or array."""
    if isinstance(personalization, Mapping):
        vector = np.zeros(n, dtype=np.float64)
        for index, weight in personalization.items():
            vector[index] += float(weight)
    else:
        vector = np.asarray(personalization, dtype=np.float64).ravel().copy()
        if vector.shape != (n,):
            raise ValueError(f"personalization has shape {vector.shape}, expected ({n},)")
    if np.any(vector < 0):
        raise ValueError("personalization weights must be non-negative")
    return vector


def shallow_ppr(
    adjacency: sparse.csr_matrix,
    personalization: Mapping[int, float] | np.ndarray,
    *,
    alpha: float = 0.5,
    iterations: int = 2,
    mode: str = "restart",
    tol: float = 1e-5,
    transposed: sparse.csr_matrix | None = None,
) -> np.ndarray:
    """Shallow PPR scores for every node.

    Args:
        adjacency: symmetric weighted adjacency (e.g. :func:`symmetric_adjacency`).
        personalization: node index → weight, or a length-n array; normalised to sum 1.
            All zero → all-zero scores.
        alpha: teleport probability (``"restart"``) or step probability (``"lazy"``).
        iterations: number of updates (the paper's t = 2).
        mode: ``"restart"`` (paper) or ``"lazy"`` (authors' code, early exit at ``tol``).
        transposed: a precomputed :func:`transition_transpose` of ``adjacency``.
    """
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
    if iterations < 0:
        raise ValueError(f"iterations must be >= 0, got {iterations}")
    n = adjacency.shape[0]
    p = _personalization_vector(n, personalization)
    total = p.sum()
    if total <= 0:
        return np.zeros(n, dtype=np.float64)
    p /= total
    forward = transposed if transposed is not None else transition_transpose(adjacency)
    pi = p.copy()
    for _ in range(iterations):
        walked = forward @ pi
        if mode == "restart":
            pi = alpha * p + (1.0 - alpha) * walked
            continue
        new = alpha * walked + (1.0 - alpha) * pi
        done = np.linalg.norm(new - pi) < tol
        pi = new
        if done:
            break
    return pi
