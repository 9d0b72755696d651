"""``hybrid``: dense and BM25 rankings fused by reciprocal rank (RRF).

The strong simple baseline a user tries after plain vector search: each chunk
scores ``sum(1 / (rrf_k + rank))`` over the two rankings (Cormack et al. 2009;
``rrf_k = 60`` is their value). Both input rankings are taken ``candidates`` deep
(at least top_k). It reads the chunk vectors and the ``bm25`` layer.
"""

from __future__ import annotations

from dataclasses import dataclass

from hygraph.methods.base import Method, MethodConfig, register
from hygraph.operators.recipe import Step


@dataclass
class HybridConfig(MethodConfig):
    top_k: int = 5  # ours: passages returned (as vanilla)
    rrf_k: int = 60  # paper: reciprocal-rank constant (Cormack, Clarke & Buettcher 2009)
    candidates: int = 50  # ours: depth of each input ranking (widened to a deeper top_k)
    dense_weight: float = 1.0  # ours: weight of the dense ranking (equal weights)
    bm25_weight: float = 1.0  # ours: weight of the BM25 ranking (equal weights)


@register
class Hybrid(Method):
    name = "hybrid"
    Config = HybridConfig
    description = "dense + BM25 fused by reciprocal rank"
    layers = ("chunks", "bm25")
    recipe = (
        Step("chunk.vdb", {"k": "$candidates", "into": "dense", "at_least_top_k": True}),
        Step("chunk.bm25", {"k": "$candidates", "into": "lexical", "at_least_top_k": True}),
        Step("merge.rrf", {"rankings": ["dense", "lexical"], "k": "$rrf_k",
                           "weights": ["$dense_weight", "$bm25_weight"]}),
        Step("chunk.evidence", {"k": "$top_k"}),
        Step("merge.context", {"sections": "chunks", "titles": {"chunks": "Passages"}}),
    )  # fmt: skip
