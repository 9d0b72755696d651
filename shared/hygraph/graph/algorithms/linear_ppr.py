"""Personalized PageRank as a linear map, so a walk can be split into parts computed apart.

On a graph with symmetric weighted adjacency ``A`` (degrees ``D``, transition
``P = D⁻¹A``), the walk that restarts at ``s`` with probability ``1 - damping`` reaches

    x(s) = (1 - damping) · (I - damping · Pᵀ)⁻¹ · s

(mass reaching a node without edges is lost). ``x`` is linear in ``s``, and the
scores :func:`~hygraph.graph.algorithms.ppr.personalized_pagerank` returns, whose
dangling mass restarts at ``s``, are exactly ``x(s) / |x(s)|₁``. So a restart made
of a dense part and a sparse part can be walked in two pieces:

* :func:`linear_ppr_block`: ``x`` for many restart vectors at once (the columns of a
  matrix), solved by conjugate gradients on the symmetric form
  ``(I - damping · D^-½ A D^-½) y = (1 - damping) · D^-½ s``, ``x = D^½ y``. The
  symmetric matrix has its eigenvalues in ``[1 - damping, 1 + damping]``, so CG needs
  about half the products of the power iteration for the same accuracy. Used at build
  time for restarts that are linear in a query vector (HippoRAG 2's dense passage
  prior), so a query multiplies a precomputed matrix instead of walking.
* :func:`push_ppr`: ``x`` for a sparse restart by local push (Andersen, Chung and
  Lang, FOCS 2006), touching only nodes that hold residual mass above a threshold:
  a node ``u`` is pushed while its residual exceeds ``threshold · deg(u)``. On an
  undirected graph every node's score is then below its exact value by at most
  ``threshold · deg(v)`` (``deg(u) ppr_u(v) = deg(v) ppr_v(u)``), whatever the size of
  the graph. Each round pushes every node above the threshold at once, a sparse
  product over their rows only.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse


def degrees(adjacency: sparse.csr_matrix) -> np.ndarray:
    """Weighted degree of each node (its row sum), float64."""
    return np.asarray(adjacency.sum(axis=1), dtype=np.float64).ravel()


def linear_ppr_block(
    adjacency: sparse.csr_matrix,
    restarts: np.ndarray,
    *,
    damping: float,
    tol: float = 1e-10,
    max_iterations: int = 500,
) -> np.ndarray:
    """``x(s)`` for every column ``s`` of ``restarts`` (n × m), float64, by block CG.

    Each column stops when its residual norm is below ``tol`` times its right-hand
    side's. A node without edges keeps ``(1 - damping) · s`` of its own restart.
    """
    adjacency = sparse.csr_matrix(adjacency, dtype=np.float64)
    rhs = np.asarray(restarts, dtype=np.float64)
    if rhs.ndim == 1:
        rhs = rhs[:, None]
    deg = degrees(adjacency)
    linked = deg > 0
    root = np.sqrt(deg)
    inv_root = np.divide(1.0, root, out=np.zeros_like(root), where=linked)
    symmetric = (sparse.diags(inv_root) @ adjacency @ sparse.diags(inv_root)).tocsr()
    b = (1.0 - damping) * inv_root[:, None] * rhs
    y = np.zeros_like(b)
    r = b.copy()
    direction = r.copy()
    rr = np.einsum("ij,ij->j", r, r)
    stop = (tol * tol) * rr
    for _ in range(max_iterations):
        active = rr > stop
        if not active.any():
            break
        q = direction - damping * (symmetric @ direction)
        curvature = np.einsum("ij,ij->j", direction, q)
        alpha = np.divide(rr, curvature, out=np.zeros_like(rr), where=active & (curvature > 0))
        y += direction * alpha
        r -= q * alpha
        new = np.einsum("ij,ij->j", r, r)
        beta = np.divide(new, rr, out=np.zeros_like(rr), where=rr > 0)
        direction *= beta
        direction += r
        rr = new
    x = root[:, None] * y
    x[~linked] = (1.0 - damping) * rhs[~linked]
    return x


def push_ppr(
    adjacency: sparse.csr_matrix,
    degree: np.ndarray,
    restart: np.ndarray,
    *,
    damping: float,
    threshold: float,
    max_rounds: int = 1000,
) -> tuple[np.ndarray, np.ndarray]:
    """``x(restart)`` by local push: ``(estimate, residual)``, both length n, float64.

    ``estimate`` is below ``x(restart)`` at each node ``v`` by at most ``threshold ·
    deg(v)`` on a symmetric ``adjacency`` (the residual's own future mass); each
    ``residual[u]`` left is at most ``threshold · deg(u)`` (a node without edges
    keeps none: its mass is settled, the rest lost, as in ``x``).
    """
    estimate = np.zeros(len(degree), dtype=np.float64)
    residual = np.asarray(restart, dtype=np.float64).copy()
    limit = threshold * degree
    linked = degree > 0
    inverse = np.divide(1.0, degree, out=np.zeros_like(degree), where=linked)
    for _ in range(max_rounds):
        pushed = np.flatnonzero((residual > limit) & (residual > 0))
        if pushed.size == 0:
            break
        mass = residual[pushed]
        estimate[pushed] += (1.0 - damping) * mass
        residual[pushed] = 0.0
        spread = damping * mass * inverse[pushed]
        rows = adjacency[pushed]  # the pushed nodes' neighbours, a few rows of the CSR
        residual += rows.T @ spread
    return estimate, residual
