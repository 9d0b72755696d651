"""Personalized PageRank (scipy sparse), in the two forms the methods use.

A walk seeded at the nodes a question matched ranks every other node by how often
it is visited.

* **To tolerance** (:func:`personalized_pagerank`, HippoRAG-style): the power
  iteration ``p <- (1 - damping) s + damping P^T p`` on a row-stochastic transition
  (:func:`transition_matrix`); dangling mass returns to the seeds, so the scores sum
  to one. ``iterations=N`` stops after N steps instead.
* **Shallow** (:func:`shallow_ppr`, NodeRAG spec 004 §4.2, §8 #1-3): a fixed number of
  steps (t = 2) so the mass stays within a hop or two of the entry points.
  ``mode="restart"`` (paper): ``pi_t = alpha p + (1 - alpha) P^T pi_{t-1}``;
  ``mode="lazy"`` (authors' code): ``pi_t = alpha P^T pi_{t-1} + (1 - alpha) pi_{t-1}``
  without restart, stopping early once ``||pi_t - pi_{t-1}||_2 < tol``. A node with no
  edges keeps a zero row, so mass reaching it is dropped (the authors fill such rows
  with ones; we do not). ``cap_edge_weights`` is the authors' ``unbalance_adjust``:
  ``w(u, v) <- min(w, 1/deg(u), 1/deg(v))``.

Only sparse matrix-vector products are used; a transposed transition can be computed
once per graph version (:func:`transition_transpose`) and reused across queries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np
from scipy import sparse

if TYPE_CHECKING:
    from hygraph.graph.algorithms.ordered import OrderedTranspose

SHALLOW_MODES = ("restart", "lazy")


def transition_matrix(adjacency: sparse.spmatrix) -> sparse.csr_matrix:
    """Row-normalised adjacency (each node's out-weights sum to one; dangling rows stay 0)."""
    adjacency = sparse.csr_matrix(adjacency, dtype=np.float64)
    out = np.asarray(adjacency.sum(axis=1)).ravel()
    inv = np.divide(1.0, out, out=np.zeros_like(out), where=out > 0)
    return sparse.diags(inv) @ adjacency


def personalized_pagerank(
    transition: sparse.csr_matrix | None,
    seeds: Mapping[int, float] | np.ndarray,
    *,
    damping: float = 0.5,
    iterations: int | None = None,
    tol: float = 1e-8,
    max_iterations: int = 100,
    transposed: sparse.csr_matrix | None = None,
    dangling: np.ndarray | None = None,
    ordered: OrderedTranspose | None = None,
) -> np.ndarray:
    """PPR scores for every node, given a row-stochastic ``transition`` and seed weights.

    Args:
        transition: from :func:`transition_matrix`.
        seeds: node index → non-negative weight, or a length-n weight array (normalised
            here; negative weights count as zero).
        damping: probability of following an edge (HippoRAG uses 0.5).
        iterations: a fixed number of steps (shallow PPR); None iterates to ``tol``.
        transposed, dangling: ``transition.T`` as CSR and the mask of its zero rows, when
            the caller keeps them per graph (they are computed here otherwise). With
            both, ``transition`` may be None (a graph need not keep ``P`` beside ``Pᵀ``).
        ordered: ``transposed`` renumbered for locality
            (:func:`~hygraph.graph.algorithms.ordered.ordered_transpose`), walked in its
            place; ``seeds``, ``dangling`` and the scores keep the caller's positions.
    """
    if transition is None and (transposed is None or dangling is None):
        raise ValueError("personalized_pagerank needs transition, or transposed and dangling")
    n = transition.shape[0] if transition is not None else transposed.shape[0]
    if isinstance(seeds, Mapping):
        reset = np.zeros(n, dtype=np.float64)
        for i, w in seeds.items():
            if w > 0:
                reset[i] += w
    else:
        reset = np.asarray(seeds, dtype=np.float64).ravel().copy()
        if reset.shape != (n,):
            raise ValueError(f"seeds has shape {reset.shape}, expected ({n},)")
        reset[~(reset > 0)] = 0.0  # negative and NaN weights count as zero
    total = reset.sum()
    if total <= 0:
        return np.zeros(n, dtype=np.float64)
    reset /= total
    if dangling is None:
        dangling = np.asarray(transition.sum(axis=1)).ravel() == 0
    forward = transposed if transposed is not None else transition.T.tocsr()
    dangling = np.asarray(dangling)
    # The loop below computes, step for step and rounding for rounding, what
    #     walked = forward @ p; walked += p[dangling].sum() * reset
    #     new = (1 - damping) * reset + damping * walked; done = |new - p|.sum() < tol
    # computes, in three buffers made once (no arrays allocated per step) and with the
    # sparse product written into one (scipy's own kernel, without its per-call checks).
    dangling_at = np.flatnonzero(dangling) if dangling.dtype == bool else np.asarray(dangling)
    if ordered is not None:  # walk in the renumbering; positions go back at the end
        reset = reset[ordered.order]
        dangling_at = np.sort(ordered.back[dangling_at])
        matvec = ordered.matvec
    else:
        matvec = _matvec_into(forward)
    restart = (1.0 - damping) * reset
    p = reset.copy()
    new = np.empty(n, dtype=np.float64)
    scratch = np.empty(n, dtype=np.float64)
    steps = iterations if iterations is not None else max_iterations
    for _ in range(steps):
        matvec(p, new)
        if dangling_at.size:  # dangling mass restarts at the seeds
            np.multiply(reset, p[dangling_at].sum(), out=scratch)
            new += scratch
        new *= damping
        new += restart
        done = False
        if iterations is None:
            np.subtract(new, p, out=scratch)
            np.abs(scratch, out=scratch)
            done = scratch.sum() < tol
        p, new = new, p
        if done:
            break
    return p[ordered.back] if ordered is not None else p


def _matvec_into(matrix: sparse.csr_matrix) -> Callable[[np.ndarray, np.ndarray], None]:
    """``f(x, out)`` setting ``out = matrix @ x`` (float64), as scipy's ``@`` computes it.

    scipy's ``@`` zeroes a new vector and runs its compiled ``csr_matvec`` into it; this
    runs the same kernel into ``out``, without the checks and the allocation that cost as
    much as the product itself on a graph of a few thousand nodes. Where that kernel is
    not importable (it is not scipy's public API), ``@`` is used.
    """
    matrix = sparse.csr_matrix(matrix)
    rows, cols = matrix.shape
    try:
        from scipy.sparse._sparsetools import csr_matvec
    except ImportError:  # pragma: no cover - a scipy without the kernel under this name
        csr_matvec = None
    if csr_matvec is None or matrix.dtype != np.float64:

        def plain(x: np.ndarray, out: np.ndarray) -> None:
            out[:] = matrix @ x

        return plain
    indptr, indices, data = matrix.indptr, matrix.indices, matrix.data

    def kernel(x: np.ndarray, out: np.ndarray) -> None:
        out.fill(0.0)
        csr_matvec(rows, cols, indptr, indices, data, x, out)

    return kernel


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
        rows.append(i)
        cols.append(j)
        data.append(float(w))
    return symmetric_adjacency_of(
        n, np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64),
        np.array(data, dtype=np.float64),
    )  # fmt: skip


def symmetric_adjacency_of(
    n: int, src: np.ndarray, dst: np.ndarray, weight: np.ndarray
) -> sparse.csr_matrix:
    """:func:`symmetric_adjacency` of edges given as three arrays (positions and weights).

    The entries are laid out as the edge list's loop lays them out (``(i, j)`` then
    ``(j, i)`` for each edge in turn), so repeated pairs sum in the same order and the
    matrix is the same to the last bit, without a Python number per entry.
    """
    keep = src != dst
    index = np.int32 if n < np.iinfo(np.int32).max else np.int64  # scipy's own choice
    src, dst = src[keep].astype(index, copy=False), dst[keep].astype(index, copy=False)
    weight = np.asarray(weight, dtype=np.float64)[keep]
    rows = np.column_stack((src, dst)).ravel()
    cols = np.column_stack((dst, src)).ravel()
    data = np.repeat(weight, 2)
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
    if mode not in SHALLOW_MODES:
        raise ValueError(f"mode must be one of {SHALLOW_MODES}, got {mode!r}")
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
