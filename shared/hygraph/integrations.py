"""What the framework integrations share: opening an index for them, and their documents.

``llama_index_hygraph`` and ``langchain_hygraph`` differ in their frameworks' types; the
rest is the same and lives here once:

- :func:`open_for_framework` opens (or creates) the core index a framework object stands
  for: a temporary directory when none is given, a clear error when an index built with
  a framework's embedding is reopened without it (the core cannot rebuild that object
  from the name in its manifest), and a framework's Qdrant vector store in place of
  ``qdrant_client``/``qdrant_url``: its collection becomes the index's passage
  collection, which the stock store can read, and the graph's own collections are
  named from it (``app``, ``app_facts``, ``app_entities`` ...). An index in a temporary
  directory removes what it wrote on a Qdrant server when the process exits.
- :func:`join_document` turns the parts of one source document (a loader's pages, a
  splitter's pieces) into one core document, since the core chunks whole documents.
"""

from __future__ import annotations

import atexit
import logging
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hygraph.errors import ConfigError
from hygraph.index import GraphIndex
from hygraph.ingest.documents import Document
from hygraph.manifest import MANIFEST_NAME, Manifest
from hygraph.retrieval.records import simple_metadata

log = logging.getLogger("hygraph")


def temporary_index_dir(label: str) -> Path:
    """A fresh directory for an index, removed when the process exits."""
    path = Path(tempfile.mkdtemp(prefix=f"hygraph-{label}-"))
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def open_for_framework(
    path: str | Path | None,
    *,
    framework: str,
    label: str,
    embedding_hint: str,
    embedder: Any = None,
    vector_store_qdrant: tuple[Any, str] | tuple[Any, str, str] | None = None,
    **kwargs: Any,
) -> GraphIndex:
    """Open or create the core index at ``path`` for a framework integration.

    Args:
        path: the index directory; None is a temporary one removed at exit.
        framework: the prefix of the framework's embedder names (``"langchain"``).
        label: the framework's name in messages (``"LangChain"``).
        embedding_hint: how to pass the embedding again, for the error message.
        embedder: the resolved core embedder (None: the index's own).
        vector_store_qdrant: ``(QdrantClient, collection_name)`` or ``(QdrantClient,
            collection_name, vector_name)`` of a framework's Qdrant vector store (its
            ``client``, ``collection_name`` and dense vector name: LlamaIndex's
            ``dense_vector_name``, LangChain's ``vector_name``); exclusive with
            ``qdrant_client``/``qdrant_url``. The collection is the index's passage
            collection, named exactly so; the vector name is used if the collection
            does not exist yet, so the very store object passed in can read it.
        kwargs: the rest of :class:`~hygraph.index.GraphIndex`'s arguments.
    """
    temporary = path is None
    path = Path(path).expanduser() if path is not None else temporary_index_dir(framework)
    if embedder is None and (path / MANIFEST_NAME).exists():
        built_with = Manifest.load(path).embedder
        if built_with.startswith(f"{framework}:"):
            raise ConfigError(
                f"index {path} was built with the {label} embedding {built_with!r}; "
                f"{embedding_hint}"
            )
    if vector_store_qdrant is not None:
        if kwargs.get("qdrant_client") is not None or kwargs.get("qdrant_url") is not None:
            raise ValueError("pass either vector_store or qdrant_client/qdrant_url")
        client, collection, *vector_name = vector_store_qdrant
        kwargs["qdrant_client"] = client
        kwargs["qdrant_collection"] = collection
        if vector_name and vector_name[0] is not None:
            kwargs["qdrant_vector_name"] = vector_name[0]
    index = GraphIndex(path, embedder=embedder, **kwargs)
    discard = getattr(index.vectors, "discard_at_exit", None)
    if temporary and discard is not None:
        # Nobody can reopen a temporary index, so its vectors on a server would be
        # strays: a later run with the same collection name would find them.
        discard()
    return index


def join_document(
    doc_id: str,
    parts: Sequence[tuple[str, dict[str, Any]]],
    *,
    agreed_metadata: bool = False,
    blank_parts: bool = False,
    source: bool = False,
) -> Document | None:
    """One core document from the ``(text, metadata)`` parts of one source, in order.

    Texts are joined by blank lines; ``metadata["title"]`` becomes the core title (a
    header on every chunk) and the other JSON-simple metadata is kept: the first
    part's, or with ``agreed_metadata`` only what every part agrees on.
    ``blank_parts`` keeps blank parts in the join; ``source`` records
    ``metadata["source"]`` as the document's source. A blank document gives None (and a
    warning).
    """
    texts = [t for t, _ in parts if blank_parts or t.strip()]
    text = "\n\n".join(texts)
    if not text.strip():
        log.warning("skipping document %s: it has no text", doc_id)
        return None
    metadata = simple_metadata(parts[0][1])
    if agreed_metadata:
        for _, other in parts[1:]:
            metadata = {k: v for k, v in metadata.items() if other.get(k) == v}
    title = metadata.pop("title", None)
    origin = metadata.get("source") if source else None
    return Document(
        id=doc_id,
        text=text,
        title=title.strip() if isinstance(title, str) and title.strip() else None,
        source=str(origin) if origin is not None else None,
        metadata=metadata,
    )
