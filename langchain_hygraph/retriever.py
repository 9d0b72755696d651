"""``HyGraphRetriever``: any hygraph method as a LangChain retriever.

The retriever asks the core for a method's ranked evidence and returns each item as a
LangChain ``Document``, so it drops into LCEL chains (``retriever | format_docs``),
``batch``/``abatch``, streaming events, callbacks and tracing like any other retriever.
It names the method by its registered name or spec (``"hypergraph-bridge"``,
``"hypergraph:chunk_retrieval=false"``), and builds a method the index does not have yet on
first use, so every method the core registers, now or later, works here without new
integration code.

Each document carries where it came from in its metadata: ``kind`` (``chunk``,
``entity``, ``fact`` ...), ``score``, ``source_ids`` (supporting chunk ids), ``doc_ids``
(their documents), ``method`` and ``id``, the method's own JSON-simple metadata, and the
first source document's metadata (``title``, ``source`` ...) for citations.

Vectors live in Qdrant: embedded under the index directory by default, or on a server
given as ``qdrant_url``, a ``QdrantClient`` or a ``langchain_qdrant.QdrantVectorStore``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from pydantic import ConfigDict, PrivateAttr, field_validator

from hygraph.index import DEFAULT_BUDGET, GraphIndex
from hygraph.ingest.documents import Document as CoreDocument
from hygraph.ingest.documents import content_hash
from hygraph.integrations import join_document, open_for_framework
from hygraph.manifest import Manifest
from hygraph.methods.base import parse_method_spec
from hygraph.retrieval.evidence import Evidence
from hygraph.retrieval.records import EvidenceRecords
from langchain_hygraph.models import resolve_embedder, resolve_llm

logger = logging.getLogger(__name__)

DEFAULT_METHOD = "hypergraph"
#: Metadata keys every retrieved document has (they win over same-named source metadata).
EVIDENCE_KEYS = ("kind", "score", "source_ids", "doc_ids", "method", "id")

# While retrieve_with_context runs, the rendered context of its retrieval lands here: the
# retrieval itself goes through ``invoke`` so that callbacks and tracing see it.
_CONTEXT_SINK: ContextVar[list[str] | None] = ContextVar("hygraph_context_sink", default=None)

# One lock per open core index, shared by every retriever over it (copies included), so
# that building a method and changing documents never overlap.
_LOCKS: weakref.WeakKeyDictionary[GraphIndex, threading.RLock] = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def _lock_of(index: GraphIndex) -> threading.RLock:
    with _LOCKS_GUARD:
        lock = _LOCKS.get(index)
        if lock is None:
            lock = _LOCKS[index] = threading.RLock()
        return lock


def to_core_documents(documents: Iterable[Document]) -> list[CoreDocument]:
    """LangChain documents as core documents, one per source.

    A document's id is ``doc.id``, else ``metadata["source"]``, else a hash of its
    content. Documents that share an id (the pages or splits of one file that a loader or
    text splitter produced) are joined in order into one document, because the core
    chunks whole documents itself; only the metadata they agree on is kept.
    ``metadata["title"]`` becomes the core title (a header on every chunk). Blank
    documents are skipped.
    """
    groups: dict[str, list[Document]] = {}
    for doc in documents:
        if not isinstance(doc, Document):
            raise TypeError(f"expected LangChain Documents, not {type(doc).__name__}")
        source = doc.metadata.get("source")
        key = doc.id or (str(source) if source not in (None, "") else None)
        key = key or "lc:" + content_hash(str(doc.metadata.get("title") or ""), doc.page_content)
        groups.setdefault(key, []).append(doc)
    docs = (
        join_document(
            doc_id,
            [(d.page_content, d.metadata) for d in group],
            agreed_metadata=True,
            source=True,
        )
        for doc_id, group in groups.items()
    )
    return [d for d in docs if d is not None]


def _qdrant_of(vector_store: Any) -> tuple[Any, str]:
    """The ``QdrantClient`` and collection prefix a ``QdrantVectorStore`` stands for."""
    try:
        from langchain_qdrant import QdrantVectorStore
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise ImportError(
            "vector_store= needs langchain-qdrant: pip install langchain-qdrant"
        ) from err
    if not isinstance(vector_store, QdrantVectorStore):
        raise TypeError(
            "HyGraphRetriever keeps its vectors in Qdrant: pass a langchain_qdrant "
            "QdrantVectorStore, a QdrantClient (qdrant_client=) or qdrant_url=, not "
            f"{type(vector_store).__name__}"
        )
    return vector_store.client, f"{vector_store.collection_name}_"


def open_graph_index(
    path: str | Path | None,
    *,
    embedding: Any = None,
    llm: Any = None,
    extractor: Any = None,
    qdrant_url: str | None = None,
    qdrant_api_key: str | None = None,
    qdrant_client: Any = None,
    vector_store: Any = None,
    **kwargs: Any,
) -> GraphIndex:
    """Open (or create) the core index at ``path`` with LangChain models and Qdrant objects.

    None for ``path`` is a temporary directory removed when the process exits. An index
    built with a LangChain embedding must be given that embedding again: the core cannot
    rebuild a LangChain object from the name in its manifest.
    """
    return open_for_framework(
        path,
        framework="langchain",
        label="LangChain",
        embedding_hint="pass it again as embedding=",
        embedder=resolve_embedder(embedding),
        llm=resolve_llm(llm),
        extractor=extractor,
        qdrant_url=qdrant_url,
        qdrant_api_key=qdrant_api_key,
        qdrant_client=qdrant_client,
        vector_store_qdrant=_qdrant_of(vector_store) if vector_store is not None else None,
        **kwargs,
    )


class HyGraphRetriever(BaseRetriever):
    """Retrieve with one hygraph method over a core :class:`~hygraph.index.GraphIndex`.

    Build one with :meth:`from_documents` or :meth:`from_persist_dir`, or wrap an open core
    index: ``HyGraphRetriever(index=GraphIndex(path), method="hypergraph-bridge")``.

    Attributes:
        index: the core index (an object with a ``graph_index`` attribute is unwrapped).
        method: a registered method name or spec; an unknown method or option fails at
            construction. A method the index has not built yet is built over its existing
            chunks on first use.
        top_k: the method's ``top_k`` (None: the method's default).
        budget: None returns every item the method ranked. A number of tokens keeps only
            the items that the method's rendered context holds whole within that budget
            (and renders :meth:`retrieve_with_context`'s context within it).

    Since the attributes are fields, ``configurable_fields`` works as for any LangChain
    retriever, for example to choose the method per call.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Any
    method: str = DEFAULT_METHOD
    top_k: int | None = None
    budget: int | None = None

    _records: EvidenceRecords | None = PrivateAttr(default=None)

    @field_validator("index", mode="before")
    @classmethod
    def _check_index(cls, value: Any) -> Any:
        value = getattr(value, "graph_index", value)
        if not isinstance(value, GraphIndex):
            raise ValueError(f"index must be a hygraph GraphIndex, not {type(value).__name__}")
        return value

    @field_validator("method")
    @classmethod
    def _check_method(cls, value: str) -> str:
        parse_method_spec(value)  # an unknown method or option fails here, not at query time
        return value

    @field_validator("top_k", "budget")
    @classmethod
    def _check_positive(cls, value: int | None) -> int | None:
        if value is not None and value <= 0:
            raise ValueError(f"must be a positive number, not {value}")
        return value

    # -- building -----------------------------------------------------------------------

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        *,
        method: str = DEFAULT_METHOD,
        methods: Sequence[str] | None = None,
        embedding: Any = None,
        llm: Any = None,
        extractor: str | Any | None = None,
        persist_dir: str | Path | None = None,
        qdrant_path: str | Path | None = None,
        qdrant_url: str | None = None,
        qdrant_api_key: str | None = None,
        qdrant_client: Any = None,
        vector_store: Any = None,
        top_k: int | None = None,
        budget: int | None = None,
        **kwargs: Any,
    ) -> HyGraphRetriever:
        """Build (or extend, when the directory holds one) an index and retrieve from it.

        Args:
            documents: LangChain ``Document``s (see :func:`to_core_documents` for ids,
                titles and how splits of one source are joined).
            method: the method this retriever runs (built now).
            methods: more methods to build now (others are built on first use).
            embedding: LangChain ``Embeddings``, a :class:`HyGraphEmbeddings`, or a core
                embedder or spec. None: the bundled offline MiniLM for a new index, the
                index's own for an existing one.
            llm: a LangChain chat model (or core LLM or model name) for the core's LLM
                steps: LLM extractors, LLM-based methods, ``GraphIndex.query(answer=True)``.
                None: no LLM (``OPENAI_MODEL`` if set).
            extractor: the core extractor (``offline`` by default); fixed per index.
            persist_dir: the index directory (graph, caches, and the embedded Qdrant
                vectors under ``qdrant/``). Reopen it with :meth:`from_persist_dir`. None
                (and no ``qdrant_path``): a temporary directory removed at exit.
            qdrant_path: for embedded Qdrant, the folder to keep the index in: it is used
                as the index directory when ``persist_dir`` is not given (vectors go to
                its ``qdrant/`` subfolder), since the graph and the vectors are one index.
            qdrant_url, qdrant_api_key, qdrant_client: vectors on a Qdrant server
                instead (collections named ``hygraph_<dir name>_<collection>``).
            vector_store: a ``langchain_qdrant.QdrantVectorStore``: its client holds the
                vectors, in collections named ``<collection_name>_<collection>``.
            top_k, budget: see the class.
            kwargs: more :class:`~hygraph.index.GraphIndex` arguments (``chunk_size``,
                ``chunk_overlap``, ``progress``).
        """
        if persist_dir is not None and qdrant_path is not None:
            if Path(qdrant_path).expanduser() != Path(persist_dir).expanduser():
                raise ValueError(
                    "embedded Qdrant keeps its vectors inside the index directory "
                    "(<persist_dir>/qdrant): pass persist_dir or qdrant_path, not both"
                )
        server = (qdrant_url, qdrant_client, vector_store)
        if qdrant_path is not None and any(v is not None for v in server):
            raise ValueError("qdrant_path is for embedded Qdrant; it excludes a Qdrant server")
        requested = list(dict.fromkeys([method, *(methods or [])]))
        for spec in requested:
            parse_method_spec(spec)  # fail before any work
        index = open_graph_index(
            persist_dir if persist_dir is not None else qdrant_path,
            embedding=embedding,
            llm=llm,
            extractor=extractor,
            qdrant_url=qdrant_url,
            qdrant_api_key=qdrant_api_key,
            qdrant_client=qdrant_client,
            vector_store=vector_store,
            **kwargs,
        )
        try:
            docs = to_core_documents(documents)
            if docs:
                index.insert(docs, methods=requested)
            else:
                _build_missing(index, requested)
            return cls(index=index, method=method, top_k=top_k, budget=budget)
        except BaseException:
            index.close()
            raise

    @classmethod
    def from_persist_dir(
        cls,
        persist_dir: str | Path,
        *,
        method: str | None = None,
        embedding: Any = None,
        llm: Any = None,
        qdrant_url: str | None = None,
        qdrant_api_key: str | None = None,
        qdrant_client: Any = None,
        vector_store: Any = None,
        top_k: int | None = None,
        budget: int | None = None,
        **kwargs: Any,
    ) -> HyGraphRetriever:
        """Reopen the index in ``persist_dir`` (``IndexNotFoundError`` if there is none).

        ``method`` defaults to the index's first built method. Pass the same
        ``embedding`` when it was a LangChain one, and the same Qdrant server objects when
        the vectors live on a server.
        """
        path = Path(persist_dir).expanduser()
        manifest = Manifest.load(path)  # no index there: a clear error, nothing created
        if method is not None:
            parse_method_spec(method)
        index = open_graph_index(
            path,
            embedding=embedding,
            llm=llm,
            qdrant_url=qdrant_url,
            qdrant_api_key=qdrant_api_key,
            qdrant_client=qdrant_client,
            vector_store=vector_store,
            **kwargs,
        )
        try:
            chosen = method or next(iter(manifest.methods), DEFAULT_METHOD)
            return cls(index=index, method=chosen, top_k=top_k, budget=budget)
        except BaseException:
            index.close()
            raise

    # -- retrieving ---------------------------------------------------------------------

    @property
    def graph_index(self) -> GraphIndex:
        """The core index, for everything the retriever interface does not cover."""
        return self.index

    def _ensure_built(self) -> None:
        """Build the method over the index's chunks if the index does not have it yet."""
        base, _ = parse_method_spec(self.method)
        # batch() retrieves from several threads at once, and the manifest names a method
        # as soon as its build starts: a query waits here until the build has finished.
        with _lock_of(self.index):
            if base not in self.index.methods:
                self.index.insert(methods=[self.method])

    def _retrieve(self, query: str) -> tuple[list[Document], str]:
        self._ensure_built()
        budget = self.budget if self.budget is not None else DEFAULT_BUDGET
        result = self.index.retrieve(query, self.method, top_k=self.top_k, budget=budget)
        items = result.shown if self.budget is not None else result.items
        return self.to_documents(items), result.context

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        documents, context = self._retrieve(query)
        sink = _CONTEXT_SINK.get()
        if sink is not None:
            sink.append(context)
        return documents

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun
    ) -> list[Document]:
        # The core is synchronous (SQLite, Qdrant, local models); a worker thread keeps the
        # event loop free. to_thread copies the context, so the sink travels along.
        return await asyncio.to_thread(
            self._get_relevant_documents, query, run_manager=run_manager.get_sync()
        )

    def retrieve_with_context(
        self, query: str, config: RunnableConfig | None = None
    ) -> tuple[list[Document], str]:
        """The documents and the method's rendered context for ``query``.

        The context is the text the method would put in a prompt: its sections, order and
        caps, within ``budget`` tokens (the core's default, 2000, when None). The call runs
        through :meth:`invoke`, so callbacks, tags and tracing in ``config`` apply.
        """
        sink: list[str] = []
        token = _CONTEXT_SINK.set(sink)
        try:
            documents = self.invoke(query, config)
        finally:
            _CONTEXT_SINK.reset(token)
        return documents, sink[-1] if sink else ""

    async def aretrieve_with_context(
        self, query: str, config: RunnableConfig | None = None
    ) -> tuple[list[Document], str]:
        """Async :meth:`retrieve_with_context`."""
        sink: list[str] = []
        token = _CONTEXT_SINK.set(sink)
        try:
            documents = await self.ainvoke(query, config)
        finally:
            _CONTEXT_SINK.reset(token)
        return documents, sink[-1] if sink else ""

    # -- mapping ------------------------------------------------------------------------

    def to_documents(self, items: Sequence[Evidence]) -> list[Document]:
        """Evidence, in the method's order, as LangChain documents with provenance."""
        if self._records is None or self._records.store is not self.index.store:
            self._records = EvidenceRecords(self.index.store)
        return [
            Document(page_content=r.text, metadata=r.metadata, id=r.id)
            for r in self._records.records(items, self.method)
        ]

    # -- keeping the index current ------------------------------------------------------

    def add_documents(self, documents: Iterable[Document]) -> list[str]:
        """Insert (or replace, when changed) documents; every built method is updated.

        Returns the core ids of the documents (see :func:`to_core_documents`); unchanged
        documents cost nothing. A document replaces the stored one with its id, so pass all
        the pages or splits of one source together.
        """
        docs = to_core_documents(documents)
        if docs:
            base, _ = parse_method_spec(self.method)
            methods = [] if base in self.index.methods else [self.method]
            with _lock_of(self.index):
                self.index.insert(docs, methods=methods)
        return [d.id for d in docs]

    async def aadd_documents(self, documents: Iterable[Document]) -> list[str]:
        """Async :meth:`add_documents` (the build runs in a worker thread)."""
        return await asyncio.to_thread(self.add_documents, list(documents))

    def delete(self, ids: str | Iterable[str]) -> list[str]:
        """Remove documents by id, with their chunks, vectors and what only they supported.

        Returns the ids that were removed; an id the index does not hold is logged and
        skipped.
        """
        removed = []
        with _lock_of(self.index):
            for doc_id in [ids] if isinstance(ids, str) else list(ids):
                if self.index.store.document_hash(doc_id) is None:
                    logger.warning("no document %r in the index; nothing deleted", doc_id)
                    continue
                self.index.delete(doc_id)
                removed.append(doc_id)
        return removed

    async def adelete(self, ids: str | Iterable[str]) -> list[str]:
        """Async :meth:`delete`."""
        return await asyncio.to_thread(self.delete, ids if isinstance(ids, str) else list(ids))

    def close(self) -> None:
        """Close the core index; a ``QdrantClient`` or vector store passed in stays open."""
        self.index.close()

    def __enter__(self) -> HyGraphRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _build_missing(index: GraphIndex, methods: Sequence[str]) -> None:
    missing = [m for m in methods if parse_method_spec(m)[0] not in index.methods]
    if missing:
        index.insert(methods=missing)
