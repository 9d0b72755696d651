"""Retrieval building blocks shared by all methods: evidence and context."""

from hygraph.retrieval.context import Context, RenderedContext, Section
from hygraph.retrieval.evidence import Evidence, ranked_chunk_ids

__all__ = ["Context", "Evidence", "RenderedContext", "Section", "ranked_chunk_ids"]
