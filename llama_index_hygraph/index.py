"""``HyGraphIndex``: a hygraph index as a LlamaIndex managed index.

An app that builds ``VectorStoreIndex.from_documents(docs)`` can build
``HyGraphIndex.from_documents(docs, method="hypergraph")`` instead and keep its
``as_retriever()``, ``as_query_engine()``, ``as_chat_engine()``, ``insert()`` and
``delete_ref_doc()`` calls. Underneath is one core :class:`~hygraph.index.GraphIndex`
directory (chunks, the typed graph, the methods' layers and the caches), with vectors in
embedded Qdrant by default, or in Qdrant through a ``QdrantVectorStore`` or a
``QdrantClient``.

How it maps onto LlamaIndex:

- Documents go to the core whole: the core chunks them itself (token windows,
  ``chunk_size``/``chunk_overlap``), so ``transformations`` are refused. Nodes passed to
  ``insert_nodes`` are joined back into their source document (``ref_doc_id``).
- ``Settings.embed_model`` and ``Settings.llm`` are used when the user set them (and no
  ``embed_model``/``llm`` is passed); otherwise the bundled MiniLM embeds and no LLM is
  used. The LLM serves the core's LLM steps (query entity extraction, LLM extractors) and
  is the default LLM of the query and chat engines.
- Persistence is the index directory, ``persist_dir``: every insert and delete is
  written through, and :meth:`HyGraphIndex.from_persist_dir` reopens it.
  ``storage_context.persist()`` only writes LlamaIndex's own stores, which hold nothing
  of this index.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.chat_engine.types import ChatMode
from llama_index.core.data_structs.data_structs import IndexDict
from llama_index.core.indices.managed.base import BaseManagedIndex
from llama_index.core.schema import BaseNode, Document, MetadataMode
from llama_index.core.storage.docstore.types import RefDocInfo
from llama_index.core.storage.storage_context import StorageContext
from llama_index.core.vector_stores.simple import SimpleVectorStore

from hygraph.index import GraphIndex
from hygraph.ingest.documents import Document as CoreDocument
from hygraph.integrations import join_document, open_for_framework
from hygraph.manifest import Manifest
from hygraph.methods.base import parse_method_spec
from llama_index_hygraph.models import resolve_embedder, resolve_llm
from llama_index_hygraph.retriever import HyGraphRetriever

logger = logging.getLogger(__name__)

DEFAULT_METHOD = "hypergraph"
#: Retriever arguments of other LlamaIndex indexes that would change results here if ignored.
_UNSUPPORTED_RETRIEVER_ARGS = ("filters", "doc_ids", "node_ids", "vector_store_query_mode")


def to_core_documents(nodes: Sequence[BaseNode]) -> list[CoreDocument]:
    """LlamaIndex documents or nodes as core documents, one per source document.

    A ``Document`` keeps its ``doc_id``; nodes are grouped by ``ref_doc_id`` (their own id
    when they have none) and joined in order by :func:`~hygraph.integrations.join_document`
    (the first node's metadata is kept). Blank documents are skipped.
    """
    groups: dict[str, list[BaseNode]] = {}
    for node in nodes:
        if not isinstance(node, BaseNode):
            raise TypeError(f"expected LlamaIndex Documents or nodes, not {type(node).__name__}")
        groups.setdefault(node.ref_doc_id or node.node_id, []).append(node)
    docs = (
        join_document(
            doc_id,
            [(n.get_content(metadata_mode=MetadataMode.NONE), n.metadata) for n in group],
            blank_parts=True,
        )
        for doc_id, group in groups.items()
    )
    return [d for d in docs if d is not None]


def _qdrant_of(vector_store: Any) -> tuple[Any, str]:
    """The ``QdrantClient`` and collection prefix a ``QdrantVectorStore`` stands for."""
    from llama_index.vector_stores.qdrant import QdrantVectorStore

    if not isinstance(vector_store, QdrantVectorStore):
        raise TypeError(
            "HyGraphIndex keeps its vectors in Qdrant: pass a QdrantVectorStore, a "
            f"QdrantClient (qdrant_client=) or qdrant_url=, not {type(vector_store).__name__}"
        )
    if vector_store.client is None:
        raise ValueError(
            "the QdrantVectorStore has no synchronous client; "
            "create it with client=QdrantClient(...)"
        )
    return vector_store.client, f"{vector_store.collection_name}_"


class HyGraphIndex(BaseManagedIndex):
    """A hygraph index (any registered method) as a LlamaIndex index.

    Args:
        nodes: LlamaIndex ``Document``s or nodes to insert (``from_documents`` is the
            usual way in).
        persist_dir: the index directory, created if missing and extended if it holds an
            index. It is the persisted form: reopen it with :meth:`from_persist_dir`.
            None uses a temporary directory removed when the process exits.
        method: the retrievers' default method, a registered name or spec
            (``"hypergraph-bridge"``, ``"hypergraph:chunk_retrieval=false"``). Default:
            ``hypergraph`` for a new index, the first built method of an existing one.
        methods: more methods to build now (any other is built on first use by
            :meth:`as_retriever`).
        embed_model: a LlamaIndex embedding, a core embedder or spec. None: the user's
            ``Settings.embed_model``, else the index's own (the bundled MiniLM for a new
            index). An existing index refuses another embedder.
        llm: a LlamaIndex LLM (or core LLM or model name). None: the user's
            ``Settings.llm``, else none.
        extractor: the core extractor spec or object (``offline`` by default).
        vector_store: a ``QdrantVectorStore``: its client holds the vectors, in
            collections named ``<collection_name>_<collection>``. A ``storage_context``
            whose vector store is a ``QdrantVectorStore`` works the same way.
        qdrant_client, qdrant_url, qdrant_api_key: a Qdrant server instead of embedded
            Qdrant (see :class:`~hygraph.index.GraphIndex`).
        chunk_size, chunk_overlap: the core's token window for a new index.
        show_progress: progress bars while building.
        callback_manager: LlamaIndex callbacks (default ``Settings.callback_manager``).
        transformations: not supported (the core chunks documents itself); passing any
            raises ``ValueError``.
        graph_index: wrap a core index that is already open instead (then no model or
            storage arguments may be given).
    """

    def __init__(
        self,
        nodes: Sequence[BaseNode] | None = None,
        *,
        persist_dir: str | Path | None = None,
        method: str | None = None,
        methods: Sequence[str] | None = None,
        embed_model: Any = None,
        llm: Any = None,
        extractor: str | Any | None = None,
        vector_store: Any = None,
        qdrant_client: Any = None,
        qdrant_url: str | None = None,
        qdrant_api_key: str | None = None,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
        show_progress: bool = False,
        callback_manager: CallbackManager | None = None,
        transformations: list | None = None,
        storage_context: StorageContext | None = None,
        graph_index: GraphIndex | None = None,
    ) -> None:
        if transformations:
            raise ValueError(
                "HyGraphIndex chunks documents itself (token windows of chunk_size and "
                "chunk_overlap, default 1200/100), so transformations are not supported; "
                "pass chunk_size=/chunk_overlap= instead"
            )
        if vector_store is None and storage_context is not None:
            # A storage context carrying the user's vector store (the usual way to give
            # VectorStoreIndex a Qdrant collection) means the same here; the default
            # in-memory SimpleVectorStore means nothing.
            default = storage_context.vector_stores.get("default")
            if default is not None and not isinstance(default, SimpleVectorStore):
                vector_store = default
        requested = list(dict.fromkeys([*([method] if method else []), *(methods or [])]))
        for spec in requested:
            parse_method_spec(spec)  # an unknown method or option fails before any work
        self._llama_llm = llm
        self._property_graph_store: Any = None
        if graph_index is not None:
            given = (persist_dir, embed_model, llm, extractor, vector_store, qdrant_client)
            if any(v is not None for v in (*given, qdrant_url, chunk_size, chunk_overlap)):
                raise ValueError("pass either graph_index or the arguments that open one")
            self._graph = graph_index
        else:
            self._graph = self._open(
                persist_dir,
                embed_model=embed_model,
                llm=llm,
                extractor=extractor,
                vector_store=vector_store,
                qdrant_client=qdrant_client,
                qdrant_url=qdrant_url,
                qdrant_api_key=qdrant_api_key,
                chunk_size=chunk_size,
                chunk_overlap=chunk_overlap,
                progress=show_progress,
            )
        built = self._graph.methods
        self._method = requested[0] if requested else (built[0] if built else DEFAULT_METHOD)
        try:
            super().__init__(
                index_struct=IndexDict(index_id=f"hygraph:{self._graph.path}", summary="hygraph"),
                storage_context=storage_context,
                callback_manager=callback_manager,
                show_progress=show_progress,
            )
            # The LlamaIndex stores hold nothing of this index (its directory does). Keeping
            # its struct out of the index store makes load_index_from_storage() on a
            # persisted storage context fail loudly instead of loading an empty
            # VectorStoreIndex (whose struct type IndexDict is).
            self._storage_context.index_store.delete_index_struct(self.index_id)
            with self._callback_manager.as_trace("index_construction"):
                self._insert(list(nodes or []), methods=requested or [self._method])
        except BaseException:
            if graph_index is None:  # release what this constructor opened (files, locks)
                self.close()
            raise

    @staticmethod
    def _open(persist_dir: str | Path | None, **kwargs: Any) -> GraphIndex:
        vector_store = kwargs.pop("vector_store")
        return open_for_framework(
            persist_dir,
            framework="llama-index",
            label="LlamaIndex",
            embedding_hint="pass it again as embed_model= (or set Settings.embed_model)",
            embedder=resolve_embedder(kwargs.pop("embed_model")),
            llm=resolve_llm(kwargs.pop("llm")),
            vector_store_qdrant=_qdrant_of(vector_store) if vector_store is not None else None,
            **kwargs,
        )

    # -- opening ------------------------------------------------------------------------

    @classmethod
    def from_documents(
        cls,
        documents: Sequence[Document],
        storage_context: StorageContext | None = None,
        show_progress: bool = False,
        callback_manager: CallbackManager | None = None,
        transformations: list | None = None,
        **kwargs: Any,
    ) -> HyGraphIndex:
        """Build (or extend, when ``persist_dir`` holds one) an index from documents.

        ``kwargs`` are the constructor's (``persist_dir``, ``method``, ``embed_model``,
        ``llm``, ``vector_store`` ...).
        """
        return cls(
            list(documents),
            storage_context=storage_context,
            show_progress=show_progress,
            callback_manager=callback_manager,
            transformations=transformations,
            **kwargs,
        )

    @classmethod
    def from_persist_dir(cls, persist_dir: str | Path, **kwargs: Any) -> HyGraphIndex:
        """Reopen the index in ``persist_dir`` (``IndexNotFoundError`` if there is none).

        Pass the same ``embed_model`` (when it was not the default) and the same
        ``vector_store``/``qdrant_client`` (when the vectors live on a Qdrant server).
        """
        Manifest.load(Path(persist_dir).expanduser())  # no index there: a clear error
        return cls(persist_dir=persist_dir, **kwargs)

    load = from_persist_dir

    # -- what it holds ------------------------------------------------------------------

    @property
    def graph_index(self) -> GraphIndex:
        """The core index, for everything the LlamaIndex interface does not cover."""
        return self._graph

    @property
    def persist_dir(self) -> Path:
        """The index directory (its persisted form)."""
        return self._graph.path

    @property
    def method(self) -> str:
        """The retrievers' default method spec."""
        return self._method

    @property
    def methods(self) -> list[str]:
        """The methods built in the index."""
        return self._graph.methods

    @property
    def ref_doc_info(self) -> dict[str, RefDocInfo]:
        """Every document: its chunk ids (the ids of retrieved chunk nodes) and metadata.

        It reads every document of the index, so it is meant for inspection.
        """
        store = self._graph.store
        out = {}
        for doc_id in store.document_ids():
            doc = store.get_document(doc_id)
            metadata = dict(doc.metadata) if doc is not None else {}
            if doc is not None and doc.title:
                metadata.setdefault("title", doc.title)
            chunk_ids = [c.id for c in store.chunks_of(doc_id)]
            out[doc_id] = RefDocInfo(node_ids=chunk_ids, metadata=metadata)
        return out

    @property
    def property_graph_store(self) -> Any:
        """The index's graph as a LlamaIndex ``PropertyGraphStore`` (read on demand)."""
        if self._property_graph_store is None:
            from llama_index_hygraph.graph_store import HyGraphPropertyGraphStore

            self._property_graph_store = HyGraphPropertyGraphStore(self._graph)
        return self._property_graph_store

    # -- retrieving ---------------------------------------------------------------------

    def build_methods(self, methods: Sequence[str]) -> None:
        """Build methods that the index does not have yet over its existing chunks."""
        missing = [m for m in methods if parse_method_spec(m)[0] not in self._graph.methods]
        if missing:
            self._graph.insert(methods=missing)

    def as_retriever(
        self,
        method: str | None = None,
        top_k: int | None = None,
        *,
        similarity_top_k: int | None = None,
        budget: int | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **kwargs: Any,
    ) -> HyGraphRetriever:
        """A retriever running ``method`` (default: the index's), building it if needed.

        ``similarity_top_k`` is accepted as another name for ``top_k``. Other keyword
        arguments are for the query or chat engine that asked for this retriever and are
        ignored here, except vector-store filters, which hygraph does not support yet.
        """
        unsupported = [k for k in _UNSUPPORTED_RETRIEVER_ARGS if kwargs.get(k) is not None]
        if unsupported:
            raise ValueError(f"HyGraphIndex retrievers do not support {', '.join(unsupported)}")
        method = method or self._method
        self.build_methods([method])
        return HyGraphRetriever(
            self._graph,
            method,
            top_k=top_k if top_k is not None else similarity_top_k,
            budget=budget,
            callback_manager=callback_manager or self._callback_manager,
            verbose=verbose,
            object_map=self._object_map,
        )

    def as_query_engine(self, llm: Any = None, **kwargs: Any) -> Any:
        """LlamaIndex's query engine over :meth:`as_retriever` (kwargs go to both).

        The LLM is ``llm``, else the index's LlamaIndex LLM, else ``Settings.llm``.
        """
        llm = llm if llm is not None else self._default_llm()
        return super().as_query_engine(llm=llm, **kwargs)

    def as_chat_engine(
        self, chat_mode: ChatMode = ChatMode.BEST, llm: Any = None, **kwargs: Any
    ) -> Any:
        """LlamaIndex's chat engine over :meth:`as_retriever`, with the same LLM choice."""
        llm = llm if llm is not None else self._default_llm()
        return super().as_chat_engine(chat_mode=chat_mode, llm=llm, **kwargs)

    def _default_llm(self) -> Any:
        from llama_index.core.llms import LLM

        return self._llama_llm if isinstance(self._llama_llm, LLM) else None

    # -- changing -----------------------------------------------------------------------

    def _insert(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        """Insert documents (or nodes, joined per source document) and build ``methods``.

        Unchanged documents cost nothing; a changed one replaces its old version. The
        methods in the index are kept up to date.
        """
        methods = insert_kwargs.get("methods")
        docs = to_core_documents(nodes)
        if docs:
            self._graph.insert(docs, methods=methods)
        elif methods:
            self.build_methods(methods)

    def insert(self, document: Document, **insert_kwargs: Any) -> None:
        """Insert (or replace, when its text changed) one document."""
        with self._callback_manager.as_trace("insert"):
            self._insert([document])

    def insert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        """Insert nodes: each source document (``ref_doc_id``) is joined and re-chunked.

        A later call with nodes of the same document replaces that document.
        """
        with self._callback_manager.as_trace("insert_nodes"):
            self._insert(nodes)

    async def ainsert(self, document: Document, **insert_kwargs: Any) -> None:
        await asyncio.to_thread(self.insert, document)

    async def ainsert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        await asyncio.to_thread(self.insert_nodes, nodes)

    def delete_ref_doc(
        self, ref_doc_id: str, delete_from_docstore: bool = False, **delete_kwargs: Any
    ) -> None:
        """Remove a document, its chunks and vectors, and what only it supported.

        A missing document is logged and ignored, as in LlamaIndex's own indexes. There is
        no separate docstore, so ``delete_from_docstore`` changes nothing.
        """
        if self._graph.store.document_hash(ref_doc_id) is None:
            logger.warning(f"ref_doc_id {ref_doc_id} not found, nothing deleted.")
            return
        with self._callback_manager.as_trace("delete_ref_doc"):
            self._graph.delete(ref_doc_id)

    async def adelete_ref_doc(
        self, ref_doc_id: str, delete_from_docstore: bool = False, **delete_kwargs: Any
    ) -> None:
        await asyncio.to_thread(self.delete_ref_doc, ref_doc_id)

    def _delete_node(self, node_id: str, **delete_kwargs: Any) -> None:
        raise NotImplementedError(
            "HyGraphIndex deletes whole documents: use delete_ref_doc(ref_doc_id)"
        )

    def update_ref_doc(self, document: Document, **update_kwargs: Any) -> None:
        """Replace a document (the core swaps a changed document in one step)."""
        with self._callback_manager.as_trace("update_ref_doc"):
            self._insert([document])

    async def aupdate_ref_doc(self, document: Document, **update_kwargs: Any) -> None:
        await asyncio.to_thread(self.update_ref_doc, document)

    def refresh_ref_docs(self, documents: Sequence[Document], **update_kwargs: Any) -> list[bool]:
        """Insert new and changed documents in one build; True for each one that was."""
        with self._callback_manager.as_trace("refresh_ref_docs"):
            store = self._graph.store
            changed = []
            flags = []
            for document in documents:
                docs = to_core_documents([document])
                is_changed = bool(docs) and store.document_hash(docs[0].id) != docs[0].content_hash
                flags.append(is_changed)
                if is_changed:
                    changed.extend(docs)
            if changed:
                self._graph.insert(changed)
            return flags

    async def arefresh_ref_docs(
        self, documents: Sequence[Document], **update_kwargs: Any
    ) -> list[bool]:
        return await asyncio.to_thread(self.refresh_ref_docs, documents)

    def close(self) -> None:
        """Close the core index; a ``QdrantClient`` or vector store passed in stays open."""
        self._graph.close()

    def __enter__(self) -> HyGraphIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
