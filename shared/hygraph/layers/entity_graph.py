"""``entity-graph``: every chunk extracted once and merged into the shared entity graph.

Entities, relations and mentions (:mod:`hygraph.graph.entity_graph`) are what every
graph layer builds on: extract once, build many. Each batch is stored with its graph
update and its progress mark in one transaction; chunks the extractor could not
process (an LLM that kept failing) stay pending and are retried by the next build.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hygraph.layers.base import Layer, extracts, in_batches, register_layer

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.resources import Resources

EXTRACT_BATCH = 64


@register_layer
class EntityGraph(Layer):
    name = "entity-graph"
    description = "extraction of every chunk, merged into entities, relations and mentions"
    task = "extract"
    stage = "extract"

    def pending(self, res: Resources) -> list[str]:
        if not extracts(res):
            return []
        return super().pending(res)

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> int:
        extractor = res.extractor
        if extractor is None:
            return 0
        from hygraph.extract.schema import ChunkInput
        from hygraph.graph.entity_graph import EntityGraphBuilder

        builder = EntityGraphBuilder(res.store, llm=res.llm)
        extracted = 0
        for batch in in_batches(res, chunk_ids, EXTRACT_BATCH, "extracting"):
            chunks = res.store.get_chunks(batch)
            texts = res.chunk_texts(batch)
            docs = res.store.documents_meta({c.doc_id for c in chunks.values()})
            inputs = [
                ChunkInput(c, chunks[c].doc_id, texts[c], *docs[chunks[c].doc_id]) for c in batch
            ]
            extractions = extractor.extract(inputs)
            update = builder.plan(extractions)
            with res.store.transaction():
                res.store.put_extractions(extractions)
                builder.write(update)
                res.store.mark_done(self.task or "", [e.chunk_id for e in extractions])
            extracted += len(extractions)
        return extracted

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        from hygraph.graph.entity_graph import EntityGraphBuilder

        EntityGraphBuilder(res.store, llm=res.llm).repair(removed)
