"""The layer's vectors and the semantic (kNN) edges between embedded nodes.

S, A and H nodes are embedded into the ``noderag`` collection (payload ``kind``:
the type letter); chunks (T) keep their vectors in the ``chunks`` collection.

The paper merges an HNSW index's base layer into the graph. The first build uses
an exact cosine kNN graph over every embedded node of the delta (deterministic;
1.0 s for 9,935 nodes on MuSiQue); ``knn="qdrant"`` takes the neighbours from the
vector index's own HNSW search instead, and an insert always does, so new nodes
link to what earlier builds embedded (as the authors' code adds to its HNSW).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hygraph.graph.kinds import EdgeKind
from hygraph.graph.store import Edge
from hygraph.layers.heterograph.config import NODE_COLLECTION
from hygraph.resources import CHUNK_COLLECTION

if TYPE_CHECKING:
    from hygraph.layers.heterograph.config import HeterographConfig
    from hygraph.resources import Resources


def embed_nodes(
    res: Resources, ids: Sequence[str], texts: Sequence[str], letter: str
) -> np.ndarray:
    """Embed and store node texts in the layer's collection; returns their vectors."""
    payloads = [{"kind": letter} for _ in ids]
    return res.upsert_vectors(
        NODE_COLLECTION, ids, texts, payloads, desc=f"noderag: embed {letter}"
    )


def chunk_vectors(res: Resources, chunk_ids: Sequence[str]) -> np.ndarray:
    """The chunks' stored vectors (embedded again, not stored, only if some are missing)."""
    dim = int(res.manifest.dim or 0)
    if not chunk_ids:
        return np.zeros((0, dim), dtype=np.float32)
    stored = res.stored_vectors(CHUNK_COLLECTION, chunk_ids)
    missing = [c for c in chunk_ids if c not in stored]
    if missing:
        texts = res.chunk_texts(missing)
        vectors = res.embedder.embed([texts[c] for c in missing])
        stored.update(zip(missing, np.asarray(vectors, dtype=np.float32), strict=True))
    return np.vstack([stored[c] for c in chunk_ids]).astype(np.float32)


def delta_semantic_edges(
    res: Resources,
    cfg: HeterographConfig,
    chunk_ids: Sequence[str],
    embedded: Sequence[tuple[Sequence[str], np.ndarray]],
    *,
    exact: bool,
) -> list[Edge]:
    """kNN edges of the delta's chunks and embedded nodes (``embedded``: ids, vectors)."""
    ids = [*chunk_ids, *(i for group, _ in embedded for i in group)]
    parts = [chunk_vectors(res, chunk_ids), *(v for _, v in embedded)]
    if ids:
        vectors = np.vstack([v for v in parts if len(v)])
    else:
        vectors = np.zeros((0, 0), dtype=np.float32)
    return semantic_edges(res, cfg, ids, vectors, exact=exact)


def semantic_edges(
    res: Resources,
    cfg: HeterographConfig,
    ids: Sequence[str],
    vectors: np.ndarray,
    *,
    exact: bool,
) -> list[Edge]:
    """kNN edges among embedded nodes: exact over ``ids``, or the vector index's HNSW."""
    from hygraph.graph.algorithms.knn import knn_edges

    k = cfg.semantic_k
    if not ids or k <= 0:
        return []
    if exact:
        # Keys in id order, as on the other path: the edge set must not depend on the order
        # nodes were listed in (a build resumed after a kill lists them differently).
        return [
            Edge(*sorted((ids[i], ids[j])), EdgeKind.SEMANTIC, 1.0, {"cosine": round(s, 4)})
            for i, j, s in knn_edges(vectors, k)
        ]
    edges: dict[tuple[str, str], float] = {}
    for node_id, vector in zip(ids, vectors, strict=True):
        for other, score in nearest(res, vector, k + 1):
            if other != node_id:
                key = (node_id, other) if node_id < other else (other, node_id)
                edges[key] = max(edges.get(key, -1.0), score)
    return [
        Edge(a, b, EdgeKind.SEMANTIC, 1.0, {"cosine": round(s, 4)}) for (a, b), s in edges.items()
    ]


def nearest(res: Resources, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
    """The k embedded nodes (T, S, A, H) nearest to ``vector``, via the vector index."""
    hits = [
        *res.search_vectors(CHUNK_COLLECTION, vector, k),
        *res.search_vectors(NODE_COLLECTION, vector, k),
    ]
    hits.sort(key=lambda h: -h.score)
    return [(h.id, float(h.score)) for h in hits[:k]]
