"""``HyGraphIndex``: a hygraph index as a LlamaIndex managed index.

An app that builds ``VectorStoreIndex.from_documents(docs)`` can build
``HyGraphIndex.from_documents(docs, method="hypergraph")`` instead and keep its
``as_retriever()``, ``as_query_engine()``, ``as_chat_engine()``, ``insert()``,
``delete_ref_doc()``, ``storage_context.persist()`` and ``load_index_from_storage()``
calls. Underneath is one core :class:`~hygraph.index.GraphIndex` directory (chunks, the
typed graph, the methods' layers and the caches), with vectors in embedded Qdrant by
default, or in Qdrant through a ``QdrantVectorStore`` or a ``QdrantClient``.

How it maps onto LlamaIndex:

- **Chunks.** Whole ``Document``\\s are chunked by the core (token windows of
  ``chunk_size``/``chunk_overlap``). Nodes, from a node parser, an ``IngestionPipeline``
  or ``transformations=`` (run like LlamaIndex's ``run_transformations``), are kept as
  the chunks: grouped by their source document (``ref_doc_id``), in order, neither
  re-joined nor re-cut.
- **Docstore.** ``index.docstore`` holds one ``TextNode`` per chunk, with the chunk id
  the retrievers return, the node's own metadata and ``PREVIOUS``/``NEXT`` links, so
  ``PrevNextNodePostprocessor`` and docstore lookups work. It is filled from the core
  on first use for an index that was opened rather than built here.
- **Models.** ``Settings.embed_model`` and ``Settings.llm`` are used when the user set
  them (and no ``embed_model``/``llm`` is passed); otherwise the bundled MiniLM embeds
  and no LLM is used. A ``MockLLM`` (what ``Settings.llm = None`` installs) counts as
  no LLM. The LLM serves LLM extractors and answers and is the default LLM of the query
  and chat engines; retrieval does not call it unless ``llm_in_retrieval=True``.
- **Persistence.** ``persist_dir`` is the index directory: every insert and delete is
  written through, and :meth:`HyGraphIndex.from_persist_dir` reopens it. LlamaIndex's
  idiom works too: ``index.storage_context.persist(persist_dir=...)`` saves a copy of
  the index directory beside LlamaIndex's stores (see :mod:`llama_index_hygraph.storage`)
  and ``load_index_from_storage`` gives back a ``HyGraphIndex``. An index without
  ``persist_dir`` lives in a temporary directory that is deleted at exit (a warning
  says so).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llama_index.core import Settings
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.chat_engine.types import ChatMode
from llama_index.core.indices.managed.base import BaseManagedIndex
from llama_index.core.ingestion import run_transformations
from llama_index.core.schema import (
    BaseNode,
    Document,
    MetadataMode,
    NodeRelationship,
    ObjectType,
    RelatedNodeInfo,
    TextNode,
    TransformComponent,
)
from llama_index.core.storage.docstore.types import BaseDocumentStore, RefDocInfo
from llama_index.core.storage.storage_context import StorageContext
from llama_index.core.vector_stores.simple import SimpleVectorStore

from hygraph.errors import IndexNotFoundError
from hygraph.index import GraphIndex
from hygraph.ingest.documents import Document as CoreDocument
from hygraph.integrations import join_document, open_for_framework
from hygraph.manifest import MANIFEST_NAME, Manifest
from hygraph.methods.base import RECOMMENDED_METHOD, parse_method_spec
from hygraph.retrieval.records import simple_metadata
from llama_index_hygraph.models import check_llm, resolve_embedder, resolve_llm
from llama_index_hygraph.retriever import HyGraphRetriever, check_count
from llama_index_hygraph.storage import (
    SNAPSHOT_DIR,
    HyGraphIndexStruct,
    HyGraphStorageContext,
    register,
)

logger = logging.getLogger(__name__)

DEFAULT_METHOD = RECOMMENDED_METHOD
#: Vector-store query modes other than the default have no meaning for a graph method.
_DEFAULT_QUERY_MODES = (None, "default")


class _Source:
    """One source document ready for the core, and the LlamaIndex nodes it came from.

    ``parts`` are the nodes that became its chunks, in order (None: the core chunked a
    whole ``Document``, which is ``whole``); the docstore copies their metadata.
    """

    __slots__ = ("core", "parts", "whole")

    def __init__(
        self, core: CoreDocument, parts: list[BaseNode] | None, whole: BaseNode | None
    ) -> None:
        self.core = core
        self.parts = parts
        self.whole = whole


def _text(node: BaseNode) -> str:
    return node.get_content(metadata_mode=MetadataMode.NONE)


def _sources(nodes: Sequence[BaseNode]) -> list[_Source]:
    """LlamaIndex documents or nodes as core documents, one per source document.

    A ``Document`` on its own is one core document, chunked by the core (its metadata
    kept, ``metadata["title"]`` as the title). Other nodes are grouped by ``ref_doc_id``
    (their own id when they have none) and kept as that document's chunks, in order
    (:meth:`~hygraph.ingest.documents.Document.from_parts`); the document's metadata is
    what all its nodes agree on. Blank documents and blank nodes are skipped.
    """
    groups: dict[str, list[BaseNode]] = {}
    for node in nodes:
        if not isinstance(node, BaseNode):
            raise TypeError(f"expected LlamaIndex Documents or nodes, not {type(node).__name__}")
        key = node.id_ if isinstance(node, Document) else (node.ref_doc_id or node.node_id)
        groups.setdefault(key, []).append(node)
    out = []
    for doc_id, group in groups.items():
        if len(group) == 1 and isinstance(group[0], Document):
            doc = join_document(doc_id, [(_text(group[0]), group[0].metadata)], blank_parts=True)
            if doc is not None:
                out.append(_Source(doc, None, group[0]))
            continue
        kept = [n for n in group if _text(n).strip()]
        if not kept:
            logger.warning("skipping document %s: its nodes have no text", doc_id)
            continue
        metadata = simple_metadata(kept[0].metadata)
        for other in kept[1:]:
            metadata = {k: v for k, v in metadata.items() if other.metadata.get(k) == v}
        title = metadata.pop("title", None)
        core = CoreDocument.from_parts(
            doc_id,
            [_text(n) for n in kept],
            title=title.strip() if isinstance(title, str) and title.strip() else None,
            metadata=metadata,
        )
        out.append(_Source(core, kept, None))
    return out


def to_core_documents(nodes: Sequence[BaseNode]) -> list[CoreDocument]:
    """The core documents for LlamaIndex documents or nodes (see :func:`_sources`)."""
    return [s.core for s in _sources(nodes)]


def _qdrant_of(vector_store: Any) -> tuple[Any, str, str | None]:
    """The ``QdrantClient``, collection and dense vector name of a ``QdrantVectorStore``.

    The collection holds the index's passages (so the stock store reads them) and names
    the graph's own collections (``<name>_facts`` ...), see
    :func:`~hygraph.integrations.open_for_framework`.
    """
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
    return (
        vector_store.client,
        vector_store.collection_name,
        getattr(vector_store, "dense_vector_name", None),
    )


def _check_transformations(transformations: Any) -> list[TransformComponent] | None:
    if transformations is None:
        return None
    if isinstance(transformations, TransformComponent):
        transformations = [transformations]
    items = list(transformations)
    for item in items:
        if not isinstance(item, TransformComponent):
            raise TypeError(
                "transformations= takes LlamaIndex transformations (node parsers, "
                f"extractors, embeddings), not {type(item).__name__}"
            )
    return items or None


class HyGraphIndex(BaseManagedIndex):
    """A hygraph index (any registered method) as a LlamaIndex index.

    Args:
        nodes: LlamaIndex ``Document``\\s (chunked by the core) or nodes (kept as the
            chunks, see the module docstring) to insert. ``from_documents`` is the usual
            way in.
        persist_dir: the index directory, created if missing and extended if it holds an
            index. It is the persisted form: reopen it with :meth:`from_persist_dir`.
            None uses a temporary directory removed when the process exits (keep it with
            ``storage_context.persist(persist_dir=...)``).
        method: the retrievers' default method, a registered name or spec
            (``"hypergraph-bridge"``, ``"hypergraph:chunk_retrieval=false"``). Default:
            the recommended ``hybrid-ppr`` for a new index, the first built method of an
            existing one.
        methods: more methods to build now (any other is built on first use by
            :meth:`as_retriever`).
        embed_model: a LlamaIndex embedding, a core embedder or spec. None: the user's
            ``Settings.embed_model``, else the index's own (the bundled MiniLM for a new
            index). An existing index refuses another embedder.
        llm: a LlamaIndex LLM (or core LLM or model name). None: the user's
            ``Settings.llm``, else none. A ``MockLLM`` is the engines' LLM only.
        llm_in_retrieval: let retrieval ask the LLM (the question's entities). By
            default retrieval is LLM-free, so an LLM set for answers adds no calls,
            cost or latency to retrieving.
        extractor: the core extractor spec or object (``offline`` by default).
        vector_store: a ``QdrantVectorStore``: its client holds the vectors; its
            collection holds the passages (readable by that very store) and names the
            graph's collections (``<collection_name>_facts`` ...). A ``storage_context``
            whose vector store is a ``QdrantVectorStore`` works the same way.
        qdrant_client, qdrant_url, qdrant_api_key: a Qdrant server instead of embedded
            Qdrant (see :class:`~hygraph.index.GraphIndex`).
        store: the graph on a PostgreSQL server (``postgresql://...``) instead of the
            index directory's SQLite file (see :class:`~hygraph.index.GraphIndex`).
        chunk_size, chunk_overlap: the core's token window for a new index (documents
            given whole).
        transformations: LlamaIndex transformations (a node parser first) run on
            documents by :meth:`from_documents`, :meth:`insert` and
            :meth:`update_ref_doc`; the nodes they make are kept as the chunks.
        show_progress: progress bars while building.
        callback_manager: LlamaIndex callbacks (default ``Settings.callback_manager``).
        storage_context: LlamaIndex's stores (docstore, index store); the one the index
            hands out persists the index directory too.
        graph_index: wrap a core index that is already open instead (then no model or
            storage arguments may be given).
        index_struct: set by ``load_index_from_storage`` (the struct records where the
            index directory is; ``persist_dir`` overrides it).
    """

    index_struct_cls = HyGraphIndexStruct

    def __init__(
        self,
        nodes: Sequence[BaseNode] | None = None,
        *,
        persist_dir: str | Path | None = None,
        method: str | None = None,
        methods: Sequence[str] | None = None,
        embed_model: Any = None,
        llm: Any = None,
        llm_in_retrieval: bool = False,
        extractor: str | Any | None = None,
        vector_store: Any = None,
        qdrant_client: Any = None,
        qdrant_url: str | None = None,
        qdrant_api_key: str | None = None,
        store: str | None = None,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
        show_progress: bool = False,
        callback_manager: CallbackManager | None = None,
        transformations: Sequence[TransformComponent] | None = None,
        storage_context: StorageContext | None = None,
        graph_index: GraphIndex | None = None,
        index_struct: HyGraphIndexStruct | None = None,
        **kwargs: Any,
    ) -> None:
        if kwargs:
            raise TypeError(f"HyGraphIndex got unexpected arguments: {', '.join(kwargs)}")
        self._transformations_given = _check_transformations(transformations)
        check_llm(llm)
        if vector_store is None and storage_context is not None:
            # A storage context carrying the user's vector store (the usual way to give
            # VectorStoreIndex a Qdrant collection) means the same here; the default
            # in-memory SimpleVectorStore means nothing.
            default = storage_context.vector_stores.get("default")
            if default is not None and not isinstance(default, SimpleVectorStore):
                vector_store = default
        if method is None and index_struct is not None:
            method = index_struct.method
        requested = list(dict.fromkeys([*([method] if method else []), *(methods or [])]))
        for spec in requested:
            parse_method_spec(spec)  # an unknown method or option fails before any work
        self._llama_llm = llm
        self._property_graph_store: Any = None
        if index_struct is not None and graph_index is None:
            persist_dir = self._stored_dir(index_struct, persist_dir)
        if graph_index is not None:
            given = (persist_dir, embed_model, llm, extractor, vector_store, qdrant_client)
            if any(v is not None for v in (*given, qdrant_url, store, chunk_size, chunk_overlap)):
                raise ValueError("pass either graph_index or the arguments that open one")
            if llm_in_retrieval:
                raise ValueError(
                    "llm_in_retrieval is set when the core index is opened: "
                    "GraphIndex(..., llm_in_retrieval=True)"
                )
            self._graph = graph_index
        else:
            self._graph = self._open(
                persist_dir,
                embed_model=embed_model,
                llm=llm,
                llm_in_retrieval=llm_in_retrieval,
                extractor=extractor,
                vector_store=vector_store,
                qdrant_client=qdrant_client,
                qdrant_url=qdrant_url,
                qdrant_api_key=qdrant_api_key,
                store=store,
                chunk_size=chunk_size,
                chunk_overlap=chunk_overlap,
                progress=show_progress,
            )
            if persist_dir is None:
                logger.warning(
                    "HyGraphIndex: no persist_dir, so the index lives in %s and is deleted "
                    "when the process exits; pass persist_dir=... or call "
                    "index.storage_context.persist(persist_dir=...) to keep it",
                    self._graph.path,
                )
        built = self._graph.methods
        self._method = requested[0] if requested else (built[0] if built else DEFAULT_METHOD)
        # A new, empty index has an up-to-date (empty) docstore; otherwise it is brought up
        # to date from the core on first use (see the ``docstore`` property).
        self._docstore_current = not self._graph.store.document_ids()
        try:
            struct = index_struct or HyGraphIndexStruct(
                index_id=f"hygraph:{self._graph.path}", summary="hygraph"
            )
            struct.path = str(Path(self._graph.path).resolve())
            struct.method = self._method
            context = HyGraphStorageContext.wrapping(
                storage_context or StorageContext.from_defaults(), self
            )
            super().__init__(
                index_struct=struct,
                storage_context=context,
                callback_manager=callback_manager,
                show_progress=show_progress,
            )
            self._transformations = self._transformations_given
            with self._callback_manager.as_trace("index_construction"):
                self._insert(list(nodes or []), methods=requested or [self._method])
        except BaseException:
            if graph_index is None:  # release what this constructor opened (files, locks)
                self.close()
            raise

    @staticmethod
    def _stored_dir(struct: HyGraphIndexStruct, persist_dir: str | Path | None) -> Path:
        """The index directory a loaded struct stands for (``persist_dir`` overrides it)."""
        path = Path(persist_dir).expanduser() if persist_dir is not None else Path(struct.path)
        if not (path / MANIFEST_NAME).exists():
            raise IndexNotFoundError(
                f"the hygraph index directory {path} recorded in this storage context is "
                "missing (moved, or a temporary index that was never persisted); pass "
                "persist_dir=<its new place> or use HyGraphIndex.from_persist_dir(<storage dir>)"
            )
        return path

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
        transformations: Sequence[TransformComponent] | None = None,
        **kwargs: Any,
    ) -> HyGraphIndex:
        """Build (or extend, when ``persist_dir`` holds one) an index from documents.

        ``transformations`` are run on the documents first and the nodes they make are
        kept as the chunks; without any, the core chunks each document.
        ``Settings.transformations`` is not read: LlamaIndex fills it with its default
        splitter as soon as any index looks at it, so it cannot tell a choice from the
        default. ``kwargs`` are the constructor's (``persist_dir``, ``method``,
        ``embed_model``, ``llm``, ``vector_store`` ...).
        """
        given = _check_transformations(transformations)
        docs = list(documents)
        callback_manager = callback_manager or Settings.callback_manager
        if given:
            with callback_manager.as_trace("index_construction"):
                docs = run_transformations(docs, given, show_progress=show_progress)
        return cls(
            docs,
            storage_context=storage_context,
            show_progress=show_progress,
            callback_manager=callback_manager,
            transformations=given,
            **kwargs,
        )

    @classmethod
    def from_persist_dir(cls, persist_dir: str | Path, **kwargs: Any) -> HyGraphIndex:
        """Reopen an index: an index directory, or a ``storage_context.persist`` directory.

        Raises ``IndexNotFoundError`` if there is neither. Pass the same ``embed_model``
        (when it was not the default) and the same ``vector_store``/``qdrant_client``
        (when the vectors live on a Qdrant server).
        """
        path = Path(persist_dir).expanduser()
        if not (path / MANIFEST_NAME).exists() and (path / "index_store.json").exists():
            from llama_index.core import load_index_from_storage

            if (path / SNAPSHOT_DIR / MANIFEST_NAME).exists():
                kwargs.setdefault("persist_dir", path / SNAPSHOT_DIR)
            loaded = load_index_from_storage(
                StorageContext.from_defaults(persist_dir=str(path)), **kwargs
            )
            if not isinstance(loaded, cls):
                raise IndexNotFoundError(
                    f"{path} holds a {type(loaded).__name__}, not a hygraph index"
                )
            return loaded
        Manifest.load(path)  # no index there: a clear error
        return cls(persist_dir=path, **kwargs)

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
    def llm_in_retrieval(self) -> bool:
        """Whether retrieval may ask the LLM (set when the index is opened)."""
        return bool(self._graph.resources.llm_in_retrieval)

    @property
    def docstore(self) -> BaseDocumentStore:
        """LlamaIndex's docstore of the index: one ``TextNode`` per chunk, up to date."""
        self._sync_docstore()
        return self._docstore

    @property
    def storage_context(self) -> StorageContext:
        """The stores; its ``persist`` also saves the index directory (see the module)."""
        return self._storage_context

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
        items: str = "passages",
        filters: Any = None,
        doc_ids: Sequence[str] | None = None,
        llm_in_retrieval: bool | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        **kwargs: Any,
    ) -> HyGraphRetriever:
        """A retriever running ``method`` (default: the index's), building it if needed.

        Args:
            method: a method name or spec (default: the index's method).
            top_k, similarity_top_k: two names for one number: how many passages (default
                5), or with ``items="evidence"`` the method's ``top_k``.
            budget: the token budget of the method's rendered context
                (``retriever.last_context``).
            items: ``"passages"`` (exactly ``top_k`` chunk nodes with their graph
                evidence) or ``"evidence"`` (the method's raw evidence, every kind).
            filters: LlamaIndex ``MetadataFilters`` on document metadata (``==``, ``!=``,
                ``>``, ``>=``, ``<``, ``<=``, ``in``, ``nin``; ``and``/``or``), or a core
                filter dict. ``doc_ids`` keeps only those documents.
            llm_in_retrieval: must match the index's setting (it is chosen when the index
                is opened: ``HyGraphIndex(..., llm_in_retrieval=True)``); None: the index's.
            kwargs: arguments meant for the query or chat engine that asked for this
                retriever, ignored here, except ``node_ids`` and a non-default
                ``vector_store_query_mode``, which a graph index cannot honour.
        """
        check_count("top_k", top_k)
        check_count("similarity_top_k", similarity_top_k)
        if top_k is not None and similarity_top_k is not None and top_k != similarity_top_k:
            raise ValueError(
                f"top_k={top_k} and similarity_top_k={similarity_top_k} disagree; pass one"
            )
        if kwargs.get("node_ids") is not None:
            raise ValueError("HyGraphIndex retrievers do not support node_ids; use doc_ids=")
        mode = kwargs.get("vector_store_query_mode")
        if getattr(mode, "value", mode) not in _DEFAULT_QUERY_MODES:
            raise ValueError(
                f"HyGraphIndex retrievers do not support vector_store_query_mode={mode!r}; "
                "choose a method instead (method='hybrid' fuses dense and BM25)"
            )
        if llm_in_retrieval is not None and bool(llm_in_retrieval) != self.llm_in_retrieval:
            raise ValueError(
                f"this index was opened with llm_in_retrieval={self.llm_in_retrieval}; it is "
                "set per index: HyGraphIndex(..., llm_in_retrieval=...) or "
                "from_persist_dir(path, llm_in_retrieval=...)"
            )
        method = method or self._method
        self.build_methods([method])
        return HyGraphRetriever(
            self._graph,
            method,
            top_k=top_k if top_k is not None else similarity_top_k,
            budget=budget,
            items=items,
            filters=filters,
            doc_ids=doc_ids,
            docstore=self._docstore,
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

    def _transformed(self, documents: Sequence[BaseNode]) -> list[BaseNode]:
        """``documents`` through the index's transformations (unchanged without any)."""
        if not self._transformations:
            return list(documents)
        return run_transformations(
            list(documents), self._transformations, show_progress=self._show_progress
        )

    def _insert(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        """Insert documents or nodes (see :func:`_sources`) and build ``methods``.

        Unchanged documents cost nothing; a changed one replaces its old version. The
        methods in the index are kept up to date, and so is the docstore.
        """
        methods = insert_kwargs.get("methods")
        sources = _sources(nodes)
        if sources:
            report = self._graph.insert([s.core for s in sources], methods=methods)
            changed = {*report.added, *report.replaced}
            self._store_nodes([s for s in sources if s.core.id in changed])
        elif methods:
            self.build_methods(methods)

    def insert(self, document: Document, **insert_kwargs: Any) -> None:
        """Insert (or replace, when its text changed) one document.

        The index's ``transformations`` are run on it first, when it has any.
        """
        with self._callback_manager.as_trace("insert"):
            self._insert(self._transformed([document]))

    def insert_nodes(self, nodes: Sequence[BaseNode], **insert_kwargs: Any) -> None:
        """Insert nodes, kept as the chunks of their source documents (``ref_doc_id``).

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

        A missing document is logged and ignored, as in LlamaIndex's own indexes. Its
        nodes always leave the docstore (which mirrors the index), whatever
        ``delete_from_docstore`` says.
        """
        if self._graph.store.document_hash(ref_doc_id) is None:
            logger.warning(f"ref_doc_id {ref_doc_id} not found, nothing deleted.")
            return
        with self._callback_manager.as_trace("delete_ref_doc"):
            self._graph.delete(ref_doc_id)
            self._docstore.delete_ref_doc(ref_doc_id, raise_error=False)

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
            self._insert(self._transformed([document]))

    async def aupdate_ref_doc(self, document: Document, **update_kwargs: Any) -> None:
        await asyncio.to_thread(self.update_ref_doc, document)

    def refresh_ref_docs(self, documents: Sequence[Document], **update_kwargs: Any) -> list[bool]:
        """Insert new and changed documents in one build; True for each one that was."""
        with self._callback_manager.as_trace("refresh_ref_docs"):
            store = self._graph.store
            changed: list[BaseNode] = []
            flags = []
            for document in documents:
                nodes = self._transformed([document])
                docs = to_core_documents(nodes)
                is_changed = bool(docs) and store.document_hash(docs[0].id) != docs[0].content_hash
                flags.append(is_changed)
                if is_changed:
                    changed.extend(nodes)
            if changed:
                self._insert(changed)
            return flags

    async def arefresh_ref_docs(
        self, documents: Sequence[Document], **update_kwargs: Any
    ) -> list[bool]:
        return await asyncio.to_thread(self.refresh_ref_docs, documents)

    # -- the docstore -------------------------------------------------------------------

    def _store_nodes(self, sources: Sequence[_Source]) -> None:
        """Put the chunk nodes of freshly inserted documents in the docstore."""
        if not self._docstore_current or not sources:
            return  # a later full sync covers them
        for source in sources:
            self._store_document(source.core.id, source.parts, source.whole)

    def _store_document(
        self, doc_id: str, parts: list[BaseNode] | None, whole: BaseNode | None
    ) -> None:
        """Replace one document's chunk nodes in the docstore, from the core's chunks.

        Each node has the chunk's id and text (as the retrievers show it), the metadata
        of the node it was made from (or of the whole document) and its neighbours.
        """
        store = self._graph.store
        chunks = store.chunks_of(doc_id)
        digest = store.document_hash(doc_id)
        docstore = self._docstore
        docstore.delete_ref_doc(doc_id, raise_error=False)
        if not chunks or digest is None:
            return
        texts = self._graph.chunk_texts([c.id for c in chunks])
        fallback: BaseNode | None = whole
        if parts is None and whole is None:  # opened, not built here: the core's metadata
            doc = store.get_document(doc_id)
            meta = dict(doc.metadata) if doc is not None else {}
            if doc is not None and doc.title:
                meta.setdefault("title", doc.title)
            fallback = TextNode(text="", metadata=meta)
        nodes = []
        for i, chunk in enumerate(chunks):
            origin = fallback
            if parts is not None and chunk.index < len(parts):
                origin = parts[chunk.index]
            node = TextNode(
                id_=chunk.id,
                text=texts.get(chunk.id, chunk.text),
                metadata=dict(origin.metadata) if origin is not None else {},
                excluded_llm_metadata_keys=list(origin.excluded_llm_metadata_keys)
                if origin is not None
                else [],
                excluded_embed_metadata_keys=list(origin.excluded_embed_metadata_keys)
                if origin is not None
                else [],
            )
            node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(
                node_id=doc_id, node_type=ObjectType.DOCUMENT, hash=digest
            )
            if i > 0:
                node.relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(
                    node_id=chunks[i - 1].id, node_type=ObjectType.TEXT
                )
            if i + 1 < len(chunks):
                node.relationships[NodeRelationship.NEXT] = RelatedNodeInfo(
                    node_id=chunks[i + 1].id, node_type=ObjectType.TEXT
                )
            nodes.append(node)
        docstore.add_documents(nodes, allow_update=True)
        docstore.set_document_hash(doc_id, digest)

    def _sync_docstore(self) -> None:
        """Bring the docstore up to date with the core: add, replace and drop documents.

        Documents are compared by content hash, so a docstore loaded from storage beside
        its own copy of the index costs one pass over the hashes.
        """
        if self._docstore_current:
            return
        store = self._graph.store
        docstore = self._docstore
        ids = store.document_ids()
        core = {doc_id: digest for doc_id, (_, digest) in store.documents_meta(ids).items()}
        for doc_id in set(docstore.get_all_ref_doc_info() or {}) - set(core):
            docstore.delete_ref_doc(doc_id, raise_error=False)
        for doc_id, digest in core.items():
            if docstore.get_document_hash(doc_id) != digest:
                self._store_document(doc_id, None, None)
        self._docstore_current = True

    def close(self) -> None:
        """Close the core index; a ``QdrantClient`` or vector store passed in stays open."""
        self._graph.close()

    def __enter__(self) -> HyGraphIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


register(HyGraphIndex)
