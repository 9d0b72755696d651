"""``hybrid``: dense and BM25 rankings fused by reciprocal rank (RRF).

The strong simple baseline a user tries after plain vector search: each chunk
scores ``sum(1 / (rrf_k + rank))`` over the two rankings (Cormack et al. 2009;
``rrf_k = 60`` is their value). Both input rankings are taken ``candidates`` deep.
It reuses the ``vanilla`` vectors and the ``bm25`` index, so it builds the BM25
index when needed and nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hygraph.methods.base import Method, MethodConfig, get_method, register
from hygraph.retrieval.context import Context
from hygraph.retrieval.fusion import reciprocal_rank_fusion

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.index import GraphIndex


@dataclass
class HybridConfig(MethodConfig):
    top_k: int = 5
    rrf_k: int = 60  # Cormack, Clarke & Buettcher (2009)
    candidates: int = 50  # our choice: depth of each input ranking
    dense_weight: float = 1.0  # our choice: equal weights
    bm25_weight: float = 1.0


@register
class Hybrid(Method):
    name = "hybrid"
    Config = HybridConfig
    description = "dense + BM25 fused by reciprocal rank"

    def __init__(self, config: Any = None):
        super().__init__(config)
        self._bm25 = get_method("bm25")()

    def build(self, index: GraphIndex, chunk_ids: Sequence[str]) -> None:
        self._bm25.build(index, chunk_ids)

    def delete(self, index: GraphIndex, removed: DeleteResult) -> None:
        self._bm25.delete(index, removed)

    def retrieve(self, index: GraphIndex, question: str, top_k: int | None = None) -> Context:
        k = top_k or self.config.top_k
        depth = max(k, self.config.candidates)
        dense = [h.id for h in index.search_chunks(question, depth)]
        lexical = [item.id for item in self._bm25.retrieve(index, question, depth).items]
        fused = reciprocal_rank_fusion(
            [dense, lexical],
            self.config.rrf_k,
            [self.config.dense_weight, self.config.bm25_weight],
        )
        items = index.chunk_evidence(fused[:k])
        context = Context()
        context.add("Passages", items)
        return context
