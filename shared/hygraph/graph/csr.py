"""A read-only compressed-sparse-row view of the graph for algorithms.

Graph algorithms (PPR with scipy, Leiden with graspologic, k-core with networkx)
want integer-indexed adjacency, not SQL rows. :class:`CSRGraph` maps node ids to
dense indices once and keeps a ``scipy.sparse.csr_matrix`` of edge weights.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse


@dataclass
class CSRGraph:
    """Node ids, their index, and a square weighted adjacency matrix."""

    ids: list[str]
    index: dict[str, int]
    matrix: sparse.csr_matrix

    @classmethod
    def from_edges(cls, edges: Iterable[Sequence], *, undirected: bool = True) -> CSRGraph:
        """Build from ``(src, dst, weight)`` rows; parallel edges add their weights."""
        index: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        weights: list[float] = []
        for src, dst, weight in edges:
            i = index.setdefault(src, len(index))
            j = index.setdefault(dst, len(index))
            rows.append(i)
            cols.append(j)
            weights.append(float(weight))
            if undirected and i != j:
                rows.append(j)
                cols.append(i)
                weights.append(float(weight))
        n = len(index)
        matrix = sparse.csr_matrix(
            (np.asarray(weights, dtype=np.float64), (rows, cols)), shape=(n, n)
        )
        matrix.sum_duplicates()
        ids = [""] * n
        for node_id, i in index.items():
            ids[i] = node_id
        return cls(ids=ids, index=index, matrix=matrix)

    @property
    def n_nodes(self) -> int:
        return len(self.ids)

    @property
    def n_edges(self) -> int:
        return int(self.matrix.nnz)

    def neighbors(self, node_id: str) -> list[str]:
        i = self.index[node_id]
        start, end = self.matrix.indptr[i], self.matrix.indptr[i + 1]
        return [self.ids[j] for j in self.matrix.indices[start:end]]

    def degree(self, node_id: str) -> float:
        i = self.index[node_id]
        return float(self.matrix[i].sum())
