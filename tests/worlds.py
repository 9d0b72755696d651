"""Building blocks of the hand-made test worlds: resources over a store, without a model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from doubles import WordEmbedder

from hygraph.graph.store import GraphStore
from hygraph.ingest import Chunker, Document
from hygraph.manifest import Manifest
from hygraph.resources import Resources
from hygraph.usage import UsageTracker


def word_resources(
    store: Any,
    vectors: Any,
    path: Path,
    *,
    llm: Any = None,
    llm_in_retrieval: bool = False,
    dim: int = 64,
) -> Resources:
    """:class:`Resources` over ``store`` and ``vectors`` with the bag-of-words embedder.

    The manifest is an offline index's with the papers' 1200/100 chunking; ``llm`` is a
    scripted double or None. Lets operator tests run on a hand-made graph, no index built.
    """
    path.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(embedder="words", dim=None, chunk_size=1200, chunk_overlap=100,
                        tokenizer="t", vectors={"backend": "edge", "path": "qdrant"},
                        extractor="offline")  # fmt: skip
    return Resources(path=path, store=store, vectors=vectors, manifest=manifest,
                     embedder=WordEmbedder(dim), llm=llm, tracker=UsageTracker(),
                     progress=False, cache_dir=path / "cache",
                     llm_in_retrieval=llm_in_retrieval)  # fmt: skip


def store_of_texts(path: Path, texts: dict[str, str]) -> tuple[GraphStore, dict[str, str]]:
    """A graph store at ``path`` holding each text as a document of one chunk (1200/100).

    Returns the store and the chunk id of each document id, for hand-made graphs to cite.
    """
    store = GraphStore(path)
    chunk: dict[str, str] = {}
    for doc_id, text in texts.items():
        doc = Document(doc_id, text)
        pieces = Chunker(1200, 100)(doc)
        store.add_document(doc, pieces)
        chunk[doc_id] = pieces[0].id
    return store, chunk
