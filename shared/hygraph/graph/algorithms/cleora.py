"""Text-initialised Cleora embeddings: neighbourhood propagation from the nodes' text vectors.

Cleora (Rychalska et al.) embeds a graph by multiplying node vectors by its
random-walk matrix a few times. HyGRAG (spec 000 §3.4, the authors' code) starts from
the nodes' *text* embeddings instead of random vectors, so the result stays in the
embedding space of the text while neighbours pull each other together:

    Z(0) = rownorm(X)
    Z(t) = rownorm( D~^-1 (A + I) Z(t-1) ),   D~ = diag(deg + 1),   t = 1..T

where ``A`` is the 0/1 adjacency of the undirected graph (or its edge weights with
``weighted=True``, then ``deg`` is the weighted degree), ``rownorm`` scales each row to
unit length, and an isolated node keeps its vector. T = 2 in the paper (Table 8).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import scipy.sparse as sp

CLEORA_ITERATIONS = 2  # HyGRAG paper, Table 8


def undirected_adjacency(
    n: int, edges: Iterable[tuple[int, int, float]], *, weighted: bool = False
) -> sp.csr_matrix:
    """The symmetric ``n × n`` adjacency of ``(i, j, weight)`` pairs, self-loops dropped.

    A pair given twice (or in both directions) counts once: unweighted entries are 1;
    weighted ones keep the largest weight given for the pair.
    """
    pairs: dict[tuple[int, int], float] = {}
    for i, j, w in edges:
        if i == j:
            continue
        key = (i, j) if i < j else (j, i)
        value = float(w) if weighted else 1.0
        pairs[key] = max(value, pairs.get(key, value))
    if not pairs:
        return sp.csr_matrix((n, n), dtype=np.float64)
    ij = np.asarray(list(pairs), dtype=np.int64)
    vals = np.asarray(list(pairs.values()), dtype=np.float64)
    rows = np.concatenate([ij[:, 0], ij[:, 1]])
    cols = np.concatenate([ij[:, 1], ij[:, 0]])
    return sp.csr_matrix((np.concatenate([vals, vals]), (rows, cols)), shape=(n, n))


def _rownorm(z: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(z, axis=1, keepdims=True)
    return np.divide(z, norms, out=np.zeros_like(z), where=norms > 0)


def cleora_embeddings(
    initial: np.ndarray, adjacency: sp.spmatrix, *, iterations: int = CLEORA_ITERATIONS
) -> np.ndarray:
    """Propagate ``initial`` (one text vector per node) ``iterations`` times over ``adjacency``.

    Args:
        initial: ``n × d`` starting vectors (normalised here; a zero row stays zero).
        adjacency: ``n × n`` symmetric adjacency (0/1 or weights; see
            :func:`undirected_adjacency`).
        iterations: how many propagation steps (the paper's T = 2; 0 returns the
            normalised input).

    Returns:
        ``n × d`` unit vectors (float32): ``rownorm(D~^-1 (A + I) Z)`` applied T times.
    """
    z = _rownorm(np.asarray(initial, dtype=np.float64))
    n = z.shape[0]
    if adjacency.shape != (n, n):
        raise ValueError(f"adjacency is {adjacency.shape}, expected ({n}, {n})")
    a_hat = (sp.csr_matrix(adjacency, dtype=np.float64) + sp.identity(n, format="csr")).tocsr()
    degree = np.asarray(a_hat.sum(axis=1)).ravel()
    inverse = sp.diags(np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0))
    step = (inverse @ a_hat).tocsr()
    for _ in range(iterations):
        z = _rownorm(step @ z)
    return z.astype(np.float32)
