"""``chunks``: one vector per chunk in the ``chunks`` collection (every index has it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from hygraph.layers.base import Layer, in_batches, register_layer
from hygraph.resources import CHUNK_COLLECTION, EMBED_BATCH

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.resources import Resources


@register_layer
class ChunkVectors(Layer):
    name = "chunks"
    description = "chunk vectors (the document title as a header line, then the text)"
    collections = (CHUNK_COLLECTION,)
    task = f"vectors:{CHUNK_COLLECTION}"
    stage = "embed"

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> None:
        dim = res.check_dim()
        res.vectors.ensure_collection(CHUNK_COLLECTION, dim)
        for batch in in_batches(res, chunk_ids, EMBED_BATCH, "embedding chunks"):
            chunks = res.store.get_chunks(batch)
            texts = res.chunk_texts(batch)
            vectors = res.embedder.embed([texts[c] for c in batch])
            payloads = [{"kind": "chunk", "doc_id": chunks[c].doc_id} for c in batch]
            res.vectors.upsert(CHUNK_COLLECTION, batch, vectors, payloads)
            res.store.mark_done(self.task or "", batch)

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        res.delete_vectors(CHUNK_COLLECTION, removed.chunk_ids)
