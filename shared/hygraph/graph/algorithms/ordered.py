"""A walk's transposed transition renumbered for locality, with a multi-threaded product.

A power iteration spends nearly all its time in sparse matrix-vector products, and on a
graph read from the store (nodes numbered by first appearance) each row's entries point
all over the vector. Renumbering the nodes by reverse Cuthill-McKee (scipy's
``reverse_cuthill_mckee``) keeps a row's neighbours close together, and PyTorch's sparse
CSR product uses every intra-op thread where scipy's uses one. On MuSiQue's passage
graphs (2 cores) one walk took 5.84 → 4.22 ms (offline extraction) and 8.14 → 4.96 ms
(precomputed) with the same top 50 on every question
(``benchmarks/walk_product.py``, ``benchmarks/results/walk-renumbered.md``).

The walk itself is unchanged: the caller's vectors are permuted in and the result out
(:func:`hygraph.graph.algorithms.ppr.personalized_pagerank` does it), so positions,
ids and the order of ties are the caller's. Only the order in which a row's terms are
summed differs (scores agree to rounding, about 1e-16 relative).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import sparse

#: Below this many stored entries the product is too short for threads or a new
#: numbering to pay (scipy's kernel on the graph as read is used).
ORDER_FROM = 20_000
#: Above this many entries the nodes keep their numbering (threads only): renumbering
#: grows with the entries and is paid again for every new version of the graph (an
#: insert), while most of what it saves the threads save too.
RENUMBER_UP_TO = 1_000_000


@dataclass(frozen=True)
class OrderedTranspose:
    """``Pᵀ`` with its nodes renumbered: new position ``i`` is old position ``order[i]``,
    and old position ``j`` is new position ``back[j]``."""

    order: np.ndarray
    back: np.ndarray
    matrix: sparse.csr_matrix
    #: ``f(x, out)`` setting ``out = matrix @ x`` (float64 vectors of the new numbering).
    matvec: Callable[[np.ndarray, np.ndarray], None]


def ordered_transpose(transposed: sparse.csr_matrix) -> OrderedTranspose | None:
    """``transposed`` renumbered by reverse Cuthill-McKee of its symmetric pattern (up to
    :data:`RENUMBER_UP_TO` entries; above, as read), with its threaded product kernel;
    None where the matrix is below :data:`ORDER_FROM` entries (the plain product is as
    fast there)."""
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    matrix = sparse.csr_matrix(transposed, dtype=np.float64)
    if matrix.nnz < ORDER_FROM:
        return None
    if matrix.nnz > RENUMBER_UP_TO:
        same = np.arange(matrix.shape[0])
        return OrderedTranspose(same, same, matrix, threaded_matvec(matrix))
    pattern = (matrix + matrix.T).tocsr()
    order = np.asarray(reverse_cuthill_mckee(pattern, symmetric_mode=True), dtype=np.int64)
    back = np.empty_like(order)
    back[order] = np.arange(len(order))
    renumbered = matrix[order][:, order].tocsr()
    renumbered.sort_indices()
    return OrderedTranspose(order, back, renumbered, threaded_matvec(renumbered))


def threaded_matvec(matrix: sparse.csr_matrix) -> Callable[[np.ndarray, np.ndarray], None]:
    """``f(x, out)`` setting ``out = matrix @ x`` with PyTorch's sparse CSR product on its
    intra-op threads (float64; the arrays are shared with PyTorch, not copied), or with
    scipy's kernel where PyTorch cannot be imported."""
    from hygraph.graph.algorithms.ppr import _matvec_into

    try:
        import torch
    except ImportError:  # pragma: no cover - torch comes with the bundled embedder
        return _matvec_into(matrix)
    index = torch.int32 if matrix.nnz < np.iinfo(np.int32).max else torch.int64
    with warnings.catch_warnings():  # "sparse CSR support is in beta": used as documented
        warnings.simplefilter("ignore", UserWarning)
        tensor = torch.sparse_csr_tensor(
            torch.from_numpy(np.ascontiguousarray(matrix.indptr)).to(index),
            torch.from_numpy(np.ascontiguousarray(matrix.indices)).to(index),
            torch.from_numpy(np.ascontiguousarray(matrix.data, dtype=np.float64)),
            size=matrix.shape,
            check_invariants=False,
        )

    def product(x: np.ndarray, out: np.ndarray) -> None:
        torch.mv(tensor, torch.from_numpy(x), out=torch.from_numpy(out))

    return product
