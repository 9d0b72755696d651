"""Exact kNN edges against the neighbours Qdrant's HNSW index returns, on a built index.

NodeRAG merges the base layer of an HNSW index into its graph as semantic edges; hygraph
builds an exact cosine kNN graph instead (``knn="exact"``, the default). This script
measures how far the two differ on an index where ``noderag`` is built: for every
embedded node (passages, units, attributes, elements) it asks the vector index (Qdrant,
HNSW) for the node's ``k`` nearest neighbours, and reports the Jaccard overlap of the two
undirected edge sets, their sizes and the time each took.

    .venv/bin/python benchmarks/knn_compare.py --index /tmp/bench-work/musique-full-<hash>
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from hygraph.graph.algorithms.knn import approximate_knn_edges, edge_overlap, knn_edges
from hygraph.index import GraphIndex
from hygraph.layers.heterograph import NODE_COLLECTION
from hygraph.resources import CHUNK_COLLECTION


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    index = GraphIndex.open(args.index, progress=False)
    ids = index.store.chunk_ids()
    ids += [
        n.id
        for kind in ("unit", "attribute", "high_level")
        for n in index.store.nodes_of_kind(kind)
    ]
    stored = {
        **index.vectors.vectors(CHUNK_COLLECTION, ids),
        **index.vectors.vectors(NODE_COLLECTION, ids),
    }
    ids = [i for i in ids if i in stored]
    position = {i: n for n, i in enumerate(ids)}
    vectors = np.vstack([stored[i] for i in ids])

    start = time.perf_counter()
    exact = knn_edges(vectors, args.k)
    exact_s = time.perf_counter() - start

    def search(rows: np.ndarray, count: int) -> list[list[int]]:
        out = []
        for row in rows:
            hits = [*index.vectors.search(CHUNK_COLLECTION, row, count),
                    *index.vectors.search(NODE_COLLECTION, row, count)]  # fmt: skip
            hits.sort(key=lambda h: -h.score)
            out.append([position[h.id] for h in hits[:count] if h.id in position])
        return out

    start = time.perf_counter()
    approx = approximate_knn_edges(search, vectors, args.k)
    approx_s = time.perf_counter() - start
    print(
        json.dumps(
            {
                "nodes": len(ids),
                "k": args.k,
                "exact_edges": len(exact),
                "hnsw_edges": len(approx),
                "jaccard": round(edge_overlap(exact, approx), 4),
                "exact_seconds": round(exact_s, 2),
                "hnsw_seconds": round(approx_s, 2),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
