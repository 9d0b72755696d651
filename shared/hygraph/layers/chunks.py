"""``chunks``: one vector per chunk in the ``chunks`` collection (every index has it).

Every chunk point carries ``kind`` and ``doc_id`` (what hygraph filters on). On a Qdrant
server, the chunk collection is also the one a framework's stock Qdrant vector store
reads (see :mod:`hygraph.vectors.server`), so its payloads carry what those stores
expect as well (:func:`stock_payload`); embedded shards, which no stock store can open,
keep the small payload.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hygraph.layers.base import Layer, in_batches, register_layer
from hygraph.layers.fact_spans import chunk_spans, pools_regions
from hygraph.resources import CHUNK_COLLECTION, EMBED_BATCH
from hygraph.retrieval.records import simple_metadata

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.ingest.documents import Chunk
    from hygraph.resources import Resources

log = logging.getLogger("hygraph")
#: Index paths already warned about over-long chunks in this process.
_WARNED: set[str] = set()

#: Payload keys of ours and of the stock stores; a document's metadata never overrides them.
RESERVED_KEYS = frozenset(
    {
        "id",
        "kind",
        "doc_id",
        "document_id",
        "ref_doc_id",
        "_node_content",
        "_node_type",
        "page_content",
        "metadata",
    }
)


def _text_node_json(chunk: Chunk, metadata: dict[str, Any]) -> str:
    """The JSON of a LlamaIndex ``TextNode`` for ``chunk``, written without LlamaIndex.

    Its fields are those ``TextNode.model_dump()`` gives (llama-index-core 0.14), with the
    chunk id as node id and the document as its SOURCE relationship (``"1"``), so
    ``node.ref_doc_id`` is the document id. Missing fields would take their defaults.
    """
    node = {
        "id_": chunk.id,
        "embedding": None,
        "metadata": metadata,
        "excluded_embed_metadata_keys": [],
        "excluded_llm_metadata_keys": [],
        "relationships": {
            "1": {
                "node_id": chunk.doc_id,
                "node_type": "4",  # ObjectType.DOCUMENT
                "metadata": {},
                "hash": None,
                "class_name": "RelatedNodeInfo",
            }
        },
        "metadata_template": "{key}: {value}",
        "metadata_separator": "\n",
        "text": chunk.text,
        "mimetype": "text/plain",
        "start_char_idx": chunk.start_char,
        "end_char_idx": chunk.end_char,
        "text_template": "{metadata_str}\n\n{content}",
        "class_name": "TextNode",
    }
    return json.dumps(node, ensure_ascii=False)


def stock_payload(
    chunk: Chunk, title: str | None, doc_metadata: dict[str, Any] | None
) -> dict[str, Any]:
    """A chunk's payload as hygraph and the stock Qdrant stores read it.

    - hygraph: ``kind`` and ``doc_id`` (the graph id is added by the vector backend);
    - llama-index-vector-stores-qdrant: ``_node_content`` (a ``TextNode`` as JSON),
      ``_node_type``, ``doc_id``/``document_id``/``ref_doc_id``, and the document's
      metadata as flat keys, which its ``MetadataFilters`` match;
    - langchain-qdrant: ``page_content`` and ``metadata`` (filters on ``metadata.<key>``).

    The metadata is the document's JSON-simple metadata plus its ``title``; keys that
    would collide with the ones above are kept only inside ``metadata`` and the node.
    """
    metadata = simple_metadata(doc_metadata)
    if title:
        metadata.setdefault("title", title)
    payload: dict[str, Any] = {k: v for k, v in metadata.items() if k not in RESERVED_KEYS}
    payload.update(
        {
            "kind": "chunk",
            "doc_id": chunk.doc_id,
            "document_id": chunk.doc_id,
            "ref_doc_id": chunk.doc_id,
            "_node_content": _text_node_json(chunk, metadata),
            "_node_type": "TextNode",
            "page_content": chunk.text,
            "metadata": {**metadata, "doc_id": chunk.doc_id, "chunk_id": chunk.id},
        }
    )
    return payload


@register_layer
class ChunkVectors(Layer):
    name = "chunks"
    description = "chunk vectors (the document title as a header line, then the text)"
    collections = (CHUNK_COLLECTION,)
    task = f"vectors:{CHUNK_COLLECTION}"
    stage = "embed"
    _spans_kept: tuple[Any, dict[str, list[Any]]] | None = None  # (key, regions by chunk)

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> None:
        dim = res.check_dim()
        res.vectors.ensure_collection(CHUNK_COLLECTION, dim)
        stock = res.vectors.backend == "server"
        documents: dict[str, tuple[str | None, dict[str, Any]]] = {}
        for batch in in_batches(res, chunk_ids, EMBED_BATCH, "embedding chunks"):
            chunks = res.store.get_chunks(batch)
            texts = res.chunk_texts(batch)
            self._warn_if_too_long(res, [texts[c] for c in batch])
            vectors = self._embed(res, batch, [texts[c] for c in batch])
            if stock:
                wanted = {chunks[c].doc_id for c in batch} - set(documents)
                for doc_id, meta in res.store.document_metadata(wanted).items():
                    title = meta.pop("title", None)
                    for ours in ("doc_id", "source"):  # the store's fields, not the user's
                        meta.pop(ours, None)
                    documents[doc_id] = (title, meta)
                for doc_id in wanted - set(documents):
                    documents[doc_id] = (None, {})
                payloads = [stock_payload(chunks[c], *documents[chunks[c].doc_id]) for c in batch]
            else:
                payloads = [{"kind": "chunk", "doc_id": chunks[c].doc_id} for c in batch]
            res.vectors.upsert(CHUNK_COLLECTION, batch, vectors, payloads)
            res.store.mark_done(self.task or "", batch)

    def planned_texts(self, res: Resources, chunk_ids: Sequence[str]) -> list[str]:
        return list(res.chunk_texts(chunk_ids).values())

    def planned_spans(self, res: Resources, chunk_ids: Sequence[str]) -> dict[str, list[Any]]:
        """Chunk text → the fact regions its pass pools (:mod:`hygraph.layers.fact_spans`)."""
        if not pools_regions(res):
            return {}
        spans = self._chunk_spans(res, chunk_ids)
        texts = res.chunk_texts(spans)
        return {texts[c]: s for c, s in spans.items() if c in texts}

    def _chunk_spans(self, res: Resources, chunk_ids: Sequence[str]) -> dict[str, list[Any]]:
        """:func:`chunk_spans`, kept for the same chunks while the store is unchanged (a
        small build asks for them ahead of its pass, and the pass asks again)."""
        key = (id(res.store), res.store.change_key(), tuple(chunk_ids))
        if self._spans_kept is None or self._spans_kept[0] != key:
            self._spans_kept = (key, chunk_spans(res, chunk_ids))
        return self._spans_kept[1]

    def _embed(self, res: Resources, batch: Sequence[str], texts: list[str]) -> np.ndarray:
        """The vectors of the chunks ``batch`` (``texts``); where the embedder can, the same
        pass pools the regions of the worded facts first stated in them and keeps them in
        the embedding cache for ``fact-vectors`` (when it is built with
        ``fact_vector="passage"``), so that those facts need no encoder pass of their own."""
        if pools_regions(res):
            with res.tracker.stage("fact-spans"):
                spans = self._chunk_spans(res, batch)
            if spans:
                return res.embed_passages(texts, [spans.get(c, []) for c in batch])
        return np.asarray(res.embedder.embed(texts), np.float32)

    def _warn_if_too_long(self, res: Resources, texts: list[str]) -> None:
        """Warn once per index when a chunk (with its title line) exceeds the embedder's window.

        The embedder silently drops what is past its window, so such a chunk is found only
        by its beginning; a smaller ``chunk_size`` fixes it.
        """
        window = res.embedder_window
        if window is None or str(res.path) in _WARNED:
            return
        from hygraph.ingest.chunker import HEADER_TOKENS
        from hygraph.ingest.tokenizer import default_tokenizer

        tok = default_tokenizer()
        long = sum(1 for t in texts if len(t) > window and tok.count(t) > window)
        if long:
            _WARNED.add(str(res.path))
            log.warning(
                "%d chunk(s) with their title line are longer than the embedder's %d-token "
                "window; their ends are not embedded, so dense search misses what they say "
                "late. Use a smaller chunk_size (the default leaves %d tokens for the title)",
                long, window, HEADER_TOKENS,
            )  # fmt: skip

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        res.delete_vectors(CHUNK_COLLECTION, removed.chunk_ids)
