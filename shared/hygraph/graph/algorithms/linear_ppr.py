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
  product over their rows only (:class:`RowProducts`); a round whose nodes hold more
  than :data:`WHOLE_SHARE` of the graph's entries pushes every node holding mass
  instead, one product with the whole matrix.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import sparse

#: A push round whose nodes' rows hold more than this share of the matrix's entries
#: multiplies the whole matrix instead of gathering those rows: on a small passage walk
#: at a tight threshold most rounds reach most of the graph, and a whole product costs
#: several times less per entry (``benchmarks/push_rounds.py``). 1 or more: rows only.
WHOLE_SHARE = 0.2


class RowProducts:
    """``out += A[rows]ᵀ · x`` and ``A · x`` for one CSR matrix, with scipy's compiled
    kernels called directly.

    The plain ``A[rows].T @ x`` builds a new sparse matrix (its checks, two fresh
    arrays as long as the rows' entries) and a dense result to add, every push round:
    on the passage walk at 25,000 passages about 0.4 ms a round, twice what the same
    copy and product cost this way (``benchmarks/results/push-kernels.md``). Here the
    rows are copied into two buffers kept across rounds
    (``csr_row_index``) and multiplied straight into ``out`` (``csc_matvec``: the copied
    rows are the columns of ``A[rows]ᵀ``). The kernels are not scipy's public API (as in
    :func:`~hygraph.graph.algorithms.ppr.personalized_pagerank`'s product); where they
    cannot be imported, or the matrix's index arrays differ in type, the public
    operators are used, with the same sums.
    """

    def __init__(self, adjacency: sparse.csr_matrix) -> None:
        self.matrix = adjacency
        self.n = adjacency.shape[0]
        self.pointers = adjacency.indptr
        self._kernels = _kernels(adjacency)
        self._whole: Callable[[np.ndarray, np.ndarray], None] | None = None
        self._columns = np.empty(0, dtype=adjacency.indices.dtype)
        self._values = np.empty(0, dtype=np.float64)

    def counts(self, rows: np.ndarray) -> np.ndarray:
        """How many stored entries each of the rows ``rows`` holds."""
        return self.pointers[rows + 1] - self.pointers[rows]

    def entries(self, rows: np.ndarray) -> int:
        """How many stored entries the rows ``rows`` hold in all."""
        return int(self.counts(rows).sum())

    def add_rows_transposed(
        self, rows: np.ndarray, x: np.ndarray, out: np.ndarray, counts: np.ndarray | None = None
    ) -> None:
        """``out += A[rows]ᵀ · x`` (``x``: one float64 weight per row; ``out``: float64;
        ``counts``: :meth:`counts` of ``rows`` where the caller has them)."""
        if self._kernels is None:
            out += self.matrix[rows].T @ x
            return
        row_index, csc_matvec = self._kernels
        kind = self.pointers.dtype
        counts = self.counts(rows) if counts is None else counts
        starts = np.zeros(len(rows) + 1, dtype=kind)
        np.cumsum(counts, out=starts[1:])
        total = int(starts[-1])
        if total > len(self._values):  # grown to the largest round so far, kept for the next
            size = max(total, 2 * len(self._values))
            self._columns = np.empty(size, dtype=kind)
            self._values = np.empty(size, dtype=np.float64)
        picked = rows.astype(kind, copy=False)
        row_index(len(rows), picked, self.pointers, self.matrix.indices, self.matrix.data,
                  self._columns, self._values)  # fmt: skip
        csc_matvec(self.n, len(rows), starts, self._columns, self._values,
                   np.ascontiguousarray(x, dtype=np.float64), out)  # fmt: skip

    def product(self, x: np.ndarray) -> np.ndarray:
        """``A · x`` as a new float64 vector (the whole-graph walk's product kernel)."""
        from hygraph.graph.algorithms.ppr import _matvec_into

        if self._whole is None:
            self._whole = _matvec_into(self.matrix)
        out = np.empty(self.n, dtype=np.float64)
        self._whole(np.ascontiguousarray(x, dtype=np.float64), out)
        return out


def _kernels(adjacency: sparse.csr_matrix) -> tuple | None:
    """scipy's ``csr_row_index`` and ``csc_matvec``, where importable and the matrix
    suits them (float64 values, one index type); else None."""
    try:
        from scipy.sparse._sparsetools import csc_matvec, csr_row_index
    except ImportError:  # pragma: no cover - a scipy without the kernels under these names
        return None
    if adjacency.data.dtype != np.float64 or adjacency.indptr.dtype != adjacency.indices.dtype:
        return None
    return csr_row_index, csc_matvec


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

    Pushing a node below its threshold is a valid push too (it only settles mass
    sooner), so a round whose nodes reach past :data:`WHOLE_SHARE` of the entries
    pushes every node at once with one product by the whole matrix (``adjacency`` must
    be symmetric: it stands for its transpose there, a CSR product being the cheaper);
    the bound above holds either way.
    """
    estimate = np.zeros(len(degree), dtype=np.float64)
    residual = np.asarray(restart, dtype=np.float64).copy()
    limit = threshold * np.asarray(degree, dtype=np.float64)  # ≥ 0: above it means > 0 too
    linked = degree > 0
    inverse = np.divide(1.0, degree, out=np.zeros_like(degree), where=linked)
    products = RowProducts(adjacency)
    whole = WHOLE_SHARE * adjacency.nnz
    for _ in range(max_rounds):
        pushed = np.flatnonzero(residual > limit)
        if pushed.size == 0:
            break
        counts = products.counts(pushed)
        if int(counts.sum()) > whole:
            estimate += (1.0 - damping) * residual
            residual = products.product(damping * residual * inverse)  # symmetric: its own Aᵀ
            continue
        mass = residual[pushed]
        estimate[pushed] += (1.0 - damping) * mass
        residual[pushed] = 0.0
        products.add_rows_transposed(pushed, damping * mass * inverse[pushed], residual, counts)
    return estimate, residual
