"""``vanilla``: dense top-k over chunks (the VanillaRAG baseline of the 002 framework).

The chunk vectors are part of every index's base layer, so this method builds
nothing of its own; it embeds the question and returns the nearest chunks.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hygraph.methods.base import Method, MethodConfig, register
from hygraph.retrieval.context import Context

if TYPE_CHECKING:
    from hygraph.index import GraphIndex


@dataclass
class VanillaConfig(MethodConfig):
    top_k: int = 5  # our choice; the 002 framework retrieves top-k chunks by cosine


@register
class Vanilla(Method):
    name = "vanilla"
    Config = VanillaConfig
    description = "dense top-k chunk retrieval (cosine over chunk embeddings)"

    def retrieve(self, index: GraphIndex, question: str, top_k: int | None = None) -> Context:
        k = top_k or self.config.top_k
        hits = index.search_chunks(question, k)
        items = index.chunk_evidence([(h.id, h.score) for h in hits])
        context = Context()
        context.add("Passages", items)
        return context
