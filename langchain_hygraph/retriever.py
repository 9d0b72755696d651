"""``HyGraphRetriever``: any hygraph method as a LangChain retriever.

By default the retriever returns what LangChain apps expect of a retriever: ``k``
passage-level ``Document``s (``k=5`` gives five), in the method's own passage order,
with one comparable, descending ``score`` each (the passage's cosine to the question,
made non-increasing down the list; see :mod:`hygraph.passages`). Stock pieces therefore
work unchanged: ``retriever | format_docs`` puts passage texts in the prompt, "top
sources" helpers read ``metadata["source"]``, and ``EnsembleRetriever``,
``ContextualCompressionRetriever`` and score cutoffs see one document per passage.

What a graph method found besides passages is not lost:

- each passage carries the graph evidence that led to it in ``metadata["graph_evidence"]``
  (``"fact: ..."``, ``"entity: ..."`` texts, in the method's order) and
  ``metadata["graph_evidence_ids"]``;
- the method's full rendered context (entities, facts and passages laid out for a
  prompt) comes back from :meth:`HyGraphRetriever.retrieve_with_context`, and the
  LangGraph node and tools put it in the graph state and the tool messages;
- ``results="evidence"`` returns the method's raw evidence items of every kind instead
  (``kind`` ``chunk``, ``entity``, ``fact`` ..., each with the method's own score).

It follows the conventions of LangChain's vector store retrievers: ``k``,
``search_type`` (``"similarity"``, ``"mmr"``, ``"similarity_score_threshold"``) and
``search_kwargs`` (``k``, ``filter``, ``score_threshold``, ``fetch_k``,
``lambda_mult``), also per call (``retriever.invoke(q, k=2, filter={...})``). Filters
are dicts in LangChain's spelling or Qdrant ``models.Filter`` objects
(:mod:`langchain_hygraph.filters`).

It names the method by its registered name or spec (``"hypergraph-bridge"``,
``"hypergraph:chunk_retrieval=false"``), and builds a method the index does not have yet
on first use, so every method the core registers works here without new integration
code. Retrieval makes no LLM call unless the index was opened with
``llm_in_retrieval=True``.

Vectors live in Qdrant: embedded under the index directory by default, or on a server
given as ``qdrant_url``, a ``QdrantClient`` or a ``langchain_qdrant.QdrantVectorStore``
(whose collection then holds the index's passages).
"""

from __future__ import annotations

import asyncio
import logging
import numbers
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from langchain_core.callbacks import (
    AsyncCallbackManagerForRetrieverRun,
    CallbackManagerForRetrieverRun,
)
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig
from pydantic import ConfigDict, Field, PrivateAttr, field_validator

from hygraph.index import DEFAULT_BUDGET, GraphIndex
from hygraph.ingest.documents import Document as CoreDocument
from hygraph.ingest.documents import content_hash
from hygraph.integrations import join_document, open_for_framework
from hygraph.manifest import Manifest
from hygraph.methods.base import RECOMMENDED_METHOD, available_methods, parse_method_spec
from hygraph.passages import retrieve_passages
from hygraph.retrieval.evidence import Evidence
from hygraph.retrieval.records import EvidenceRecords
from langchain_hygraph.filters import to_core_filter
from langchain_hygraph.models import resolve_embedder, resolve_llm, short_repr

logger = logging.getLogger(__name__)

DEFAULT_METHOD = RECOMMENDED_METHOD
#: Passages returned when no ``k`` is given (LangChain's vector store retrievers' default).
DEFAULT_K = 4
#: Candidates MMR chooses among, and how much it weighs relevance against diversity.
DEFAULT_FETCH_K = 20
DEFAULT_LAMBDA_MULT = 0.5
#: Metadata keys every retrieved document has (they win over same-named source metadata).
EVIDENCE_KEYS = ("kind", "score", "source_ids", "doc_ids", "method", "id")

SearchType = Literal["similarity", "mmr", "similarity_score_threshold"]
SEARCH_TYPES: tuple[str, ...] = ("similarity", "mmr", "similarity_score_threshold")
#: The ``search_kwargs`` keys a retriever understands (as LangChain's vector stores name them).
SEARCH_KWARGS: tuple[str, ...] = ("k", "filter", "score_threshold", "fetch_k", "lambda_mult")
Results = Literal["passages", "evidence"]
RESULTS: tuple[str, ...] = ("passages", "evidence")
Chunking = Literal["auto", "keep", "core"]
CHUNKING: tuple[str, ...] = ("auto", "keep", "core")

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


# -- arguments ------------------------------------------------------------------------------


def _positive_int(name: str, value: Any) -> int | None:
    """``value`` as a positive int, or a one-line error that names ``name`` and the slip."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"{name} must be a positive whole number such as {name}=5, not "
            f"{short_repr(value)} (a {type(value).__name__})"
        )
    if value <= 0:
        raise ValueError(f"{name} must be a positive whole number such as {name}=5, not {value}")
    return int(value)


def _number(name: str, value: Any, low: float | None = None, high: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(
            f"{name} must be a number, not {short_repr(value)} (a {type(value).__name__})"
        )
    if low is not None and high is not None and not low <= value <= high:
        raise ValueError(f"{name} must be between {low:g} and {high:g}, not {value}")
    if low is not None and value < low:
        raise ValueError(f"{name} must be at least {low:g}, not {value}")
    return float(value)


def _one_of(name: str, value: Any, allowed: Sequence[str]) -> str:
    if value not in allowed:
        choices = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"{name} must be one of {choices}, not {short_repr(value)}")
    return value


@dataclass(frozen=True)
class SearchOptions:
    """One retrieval's settings, resolved from the fields and the call's keyword arguments.

    ``k`` is None only with ``results="evidence"`` and no ``k`` given (the method's own
    ``top_k`` then applies); ``filter`` is already in the core's vocabulary.
    """

    search_type: str
    k: int | None
    filter: dict[str, Any] | None
    score_threshold: float | None
    fetch_k: int
    lambda_mult: float


def search_options(
    search_type: str,
    search_kwargs: Mapping[str, Any] | None,
    *,
    k: int | None = None,
    results: str = "passages",
) -> SearchOptions:
    """Check ``search_type`` and ``search_kwargs`` and resolve them, one-line errors.

    ``search_kwargs["k"]`` wins over ``k``; unknown keys are an error (a typo would
    otherwise be ignored silently).
    """
    _one_of("search_type", search_type, SEARCH_TYPES)
    _one_of("results", results, RESULTS)
    if search_kwargs is None:
        search_kwargs = {}
    if not isinstance(search_kwargs, Mapping):
        raise TypeError(
            f"search_kwargs must be a dict such as {{'k': 5}}, not {type(search_kwargs).__name__}"
        )
    unknown = [key for key in search_kwargs if key not in SEARCH_KWARGS]
    if unknown:
        raise ValueError(
            f"unknown search_kwargs key {unknown[0]!r}; known: {', '.join(SEARCH_KWARGS)}"
        )
    given_k = _positive_int("k", search_kwargs.get("k"))
    k = given_k if given_k is not None else k
    if k is None and results == "passages":
        k = DEFAULT_K
    threshold = search_kwargs.get("score_threshold")
    if threshold is not None:
        threshold = _number("score_threshold", threshold)
    if search_type == "similarity_score_threshold" and threshold is None:
        raise ValueError(
            "search_type='similarity_score_threshold' needs search_kwargs={'score_threshold': "
            "0.3} (passage scores are cosines, at most 1)"
        )
    if results == "evidence" and (search_type != "similarity" or threshold is not None):
        raise ValueError(
            f"search_type={search_type!r} and score_threshold work on passages; "
            "results='evidence' mixes kinds whose scores do not compare"
        )
    fetch_k = _positive_int("fetch_k", search_kwargs.get("fetch_k")) or DEFAULT_FETCH_K
    lambda_mult = search_kwargs.get("lambda_mult", DEFAULT_LAMBDA_MULT)
    return SearchOptions(
        search_type=search_type,
        k=k,
        filter=to_core_filter(search_kwargs.get("filter")),
        score_threshold=threshold,
        fetch_k=fetch_k,
        lambda_mult=_number("lambda_mult", lambda_mult, 0.0, 1.0),
    )


def check_arguments(data: dict[str, Any]) -> dict[str, Any]:
    """The retriever's constructor arguments, checked with one-line errors that name the slip.

    ``k`` and ``top_k`` are one setting under two names (LangChain's and LlamaIndex's);
    giving both (or ``search_kwargs["k"]`` as well) with different values is an error.
    """
    data = dict(data)
    if "index" in data:
        index = getattr(data["index"], "graph_index", data["index"])
        if not isinstance(index, GraphIndex):
            raise TypeError(
                f"index must be a hygraph GraphIndex, not {short_repr(data['index'])} "
                f"(a {type(data['index']).__name__})"
            )
        data["index"] = index
    method = data.get("method", DEFAULT_METHOD)
    if not isinstance(method, str):
        raise TypeError(
            f"method must be a method name such as 'hypergraph', not {short_repr(method)}"
        )
    parse_method_spec(method)  # an unknown method or option fails here, not at query time
    for name in ("k", "top_k", "budget"):
        data[name] = _positive_int(name, data.get(name))
    search_kwargs = data.get("search_kwargs")
    in_kwargs = search_kwargs.get("k") if isinstance(search_kwargs, Mapping) else None
    in_kwargs = _positive_int("k", in_kwargs)
    named = (("k", data["k"]), ("top_k", data["top_k"]), ("search_kwargs['k']", in_kwargs))
    given = {name: value for name, value in named if value is not None}
    if len(set(given.values())) > 1:
        said = ", ".join(f"{name}={value}" for name, value in given.items())
        raise ValueError(f"the number of passages is given twice ({said}): pass one of them")
    search_options(
        data.get("search_type", "similarity"),
        search_kwargs,
        k=data["k"] or data["top_k"],
        results=data.get("results", "passages"),
    )
    _one_of("chunking", data.get("chunking", "auto"), CHUNKING)
    return {key: value for key, value in data.items() if value is not None or key == "index"}


# -- documents ------------------------------------------------------------------------------


def _describe_type(value: Any) -> str:
    """``Document (from llama_index.core.schema)``: enough to see a framework mix-up."""
    cls = type(value)
    if cls.__module__ == "builtins":
        return cls.__name__
    return f"{cls.__name__} (from {cls.__module__})"


def to_core_documents(
    documents: Iterable[Document], chunking: Chunking = "auto"
) -> list[CoreDocument]:
    """LangChain documents as core documents, one per source document.

    A document's id is ``doc.id``, else ``metadata["source"]``, else a hash of its
    content. Documents that share an id are the pieces of one source (a loader's pages,
    a text splitter's splits), in order. ``chunking`` says what becomes of them:

    - ``"auto"`` (default): a source given in several pieces keeps them as its chunks
      (:meth:`~hygraph.ingest.documents.Document.from_parts`: no re-join and re-cut, no
      overlap text repeated in a new window); a source given whole is chunked by the
      core's token windows;
    - ``"keep"``: every LangChain document is kept as a chunk, even a lone one;
    - ``"core"``: the pieces are joined and the core cuts its own windows.

    Only the metadata every piece of a source agrees on is kept; ``metadata["title"]``
    becomes the core title (a header on every chunk). Blank documents are skipped.
    """
    _one_of("chunking", chunking, CHUNKING)
    groups: dict[str, list[Document]] = {}
    for doc in documents:
        if not isinstance(doc, Document):
            raise TypeError(f"expected LangChain Documents, not {_describe_type(doc)}")
        source = doc.metadata.get("source")
        key = doc.id or (str(source) if source not in (None, "") else None)
        key = key or "lc:" + content_hash(str(doc.metadata.get("title") or ""), doc.page_content)
        groups.setdefault(key, []).append(doc)
    out = []
    for doc_id, group in groups.items():
        joined = join_document(
            doc_id,
            [(d.page_content, d.metadata) for d in group],
            agreed_metadata=True,
            source=True,
        )
        if joined is None:
            continue
        keep = chunking == "keep" or (chunking == "auto" and len(group) > 1)
        if keep:
            joined = CoreDocument.from_parts(
                doc_id,
                [d.page_content for d in group],
                title=joined.title,
                source=joined.source,
                metadata=joined.metadata,
            )
        out.append(joined)
    return out


def _qdrant_of(vector_store: Any) -> tuple[Any, str, str]:
    """The ``QdrantClient``, collection and vector name a ``QdrantVectorStore`` stands for."""
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
    return vector_store.client, vector_store.collection_name, vector_store.vector_name


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
    llm_in_retrieval: bool = False,
    retrieval_timeout: float | None = None,
    **kwargs: Any,
) -> GraphIndex:
    """Open (or create) the core index at ``path`` with LangChain models and Qdrant objects.

    None for ``path`` is a temporary directory removed when the process exits. An index
    built with a LangChain embedding must be given that embedding again: the core cannot
    rebuild a LangChain object from the name in its manifest. ``llm_in_retrieval`` and
    ``retrieval_timeout``: see :meth:`HyGraphRetriever.from_documents`.
    """
    if not isinstance(llm_in_retrieval, bool):
        raise TypeError(
            f"llm_in_retrieval must be True or False, not {short_repr(llm_in_retrieval)}"
        )
    timeout = None
    if retrieval_timeout is not None:
        timeout = _number("retrieval_timeout", retrieval_timeout, 0.0)
        if timeout <= 0:
            raise ValueError(
                f"retrieval_timeout must be a positive number of seconds, not {timeout:g}"
            )
    index = open_for_framework(
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
        llm_in_retrieval=llm_in_retrieval,
        retrieval_timeout=timeout,
        **kwargs,
    )
    return index


def _check_embedding_argument(embedding: Any) -> None:
    """Catch ``from_documents(docs, "hypergraph")``: the second argument is the embedding."""
    if isinstance(embedding, str):
        base = embedding.split(":", 1)[0].strip()
        if base in available_methods():
            raise TypeError(
                f"from_documents(documents, embedding, ...) takes the embedding second; "
                f"pass the method by name: method={embedding!r}"
            )


class HyGraphRetriever(BaseRetriever):
    """Retrieve with one hygraph method over a core :class:`~hygraph.index.GraphIndex`.

    Build one with :meth:`from_documents` or :meth:`from_persist_dir`, or wrap an open core
    index: ``HyGraphRetriever(index=GraphIndex(path), method="hypergraph-bridge", k=5)``.

    Attributes:
        index: the core index (an object with a ``graph_index`` attribute is unwrapped).
        method: a registered method name or spec; an unknown method or option fails at
            construction. A method the index has not built yet is built over its existing
            chunks on first use.
        k: how many passages to return (default 4, as LangChain's vector store
            retrievers). Fewer come back only when the corpus (or the filter) has fewer.
        top_k: the same setting under LlamaIndex's name; give one of the two. With
            ``results="evidence"`` it is the method's own ``top_k`` (None: its default).
        budget: tokens for the method's rendered context (None: the core's default,
            2000). With ``results="evidence"``, a number also keeps only the items that
            the rendered context holds whole.
        search_type: ``"similarity"`` (the method's passage order), ``"mmr"`` (maximal
            marginal relevance over the method's ``fetch_k`` best passages, using their
            stored vectors) or ``"similarity_score_threshold"`` (passages scored at least
            ``search_kwargs["score_threshold"]``).
        search_kwargs: ``k``, ``filter`` (a dict in LangChain's spelling or a Qdrant
            ``models.Filter``, on document metadata), ``score_threshold``, ``fetch_k``
            (default 20) and ``lambda_mult`` (default 0.5: 1 keeps the method's order, 0
            is the most diverse). The same keys may be passed per call:
            ``retriever.invoke(q, k=2)``.
        results: ``"passages"`` (default) or ``"evidence"``: the method's raw evidence
            items of every kind (``entity``, ``fact``, ``chunk`` ...) with the method's own
            scores, which compare only within one kind.
        chunking: how :meth:`add_documents` turns documents into chunks (see
            :func:`to_core_documents`).

    Each passage ``Document`` has ``metadata`` with ``kind="chunk"``, ``score`` (on one
    descending scale), ``rank`` (its place in the method's order), ``via`` (``"method"``,
    or ``"dense fill"`` when the method ranked fewer than ``k`` passages and dense search
    filled the rest), ``cosine``, ``graph_evidence`` (``"kind: text"`` of the entities,
    facts ... that cite it), ``graph_evidence_ids``, ``doc_ids``, ``source_ids``,
    ``method``, ``id``, and its source document's metadata (``source``, ``title`` ...).
    The method's rendered context is not copied into every document: get it with
    :meth:`retrieve_with_context`.

    Since the attributes are fields, ``configurable_fields`` works as for any LangChain
    retriever, for example to choose the method per call.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index: Any
    method: str = DEFAULT_METHOD
    k: int | None = None
    top_k: int | None = None
    budget: int | None = None
    search_type: SearchType = "similarity"
    search_kwargs: dict[str, Any] = Field(default_factory=dict)
    results: Results = "passages"
    chunking: Chunking = "auto"

    _records: EvidenceRecords | None = PrivateAttr(default=None)

    def __init__(self, **data: Any) -> None:
        # Checked before pydantic, so that a slip is one line that names it.
        super().__init__(**check_arguments(data))

    @field_validator("index", mode="before")
    @classmethod
    def _check_index(cls, value: Any) -> Any:
        return getattr(value, "graph_index", value)

    # -- building -----------------------------------------------------------------------

    @classmethod
    def from_documents(
        cls,
        documents: Iterable[Document],
        embedding: Any = None,
        *,
        method: str = DEFAULT_METHOD,
        methods: Sequence[str] | None = None,
        llm: Any = None,
        llm_in_retrieval: bool = False,
        retrieval_timeout: float | None = None,
        extractor: str | Any | None = None,
        persist_dir: str | Path | None = None,
        qdrant_path: str | Path | None = None,
        qdrant_url: str | None = None,
        qdrant_api_key: str | None = None,
        qdrant_client: Any = None,
        vector_store: Any = None,
        k: int | None = None,
        top_k: int | None = None,
        budget: int | None = None,
        search_type: SearchType = "similarity",
        search_kwargs: dict[str, Any] | None = None,
        results: Results = "passages",
        chunking: Chunking = "auto",
        **kwargs: Any,
    ) -> HyGraphRetriever:
        """Build (or extend, when the directory holds one) an index and retrieve from it.

        The signature is LangChain's ``VectorStore.from_documents(documents, embedding,
        **kwargs)``, so code written for a vector store ports by changing the class.

        Args:
            documents: LangChain ``Document``s (see :func:`to_core_documents` for ids,
                titles, and how the splits of one source are kept as its chunks).
            embedding: LangChain ``Embeddings``, a :class:`HyGraphEmbeddings`, or a core
                embedder or spec. None: the bundled offline MiniLM for a new index, the
                index's own for an existing one.
            method: the method this retriever runs (built now).
            methods: more methods to build now (others are built on first use).
            llm: a LangChain chat model (or core LLM or model name) for the core's LLM
                steps: LLM extractors, summaries, ``GraphIndex.query(answer=True)``. None:
                no LLM (``OPENAI_MODEL`` if set). Retrieval does not call it unless
                ``llm_in_retrieval`` is True.
            llm_in_retrieval: let retrieval ask the LLM (question entities for the graph
                methods). Off by default, so a query's cost and latency do not depend on
                the chat model configured for answers. When on, a call that fails or
                takes over ``retrieval_timeout`` seconds falls back to the offline rules
                with a logged warning; the retrieval still returns its passages.
            retrieval_timeout: seconds a retrieval-time LLM call may take (the core's
                default, 20, when None).
            extractor: the core extractor (``offline`` by default); fixed per index.
            persist_dir: the index directory (graph, caches, and the embedded Qdrant
                vectors under ``qdrant/``). Reopen it with :meth:`from_persist_dir`. None
                (and no ``qdrant_path``): a temporary directory removed at exit.
            qdrant_path: for embedded Qdrant, the folder to keep the index in: it is used
                as the index directory when ``persist_dir`` is not given (vectors go to
                its ``qdrant/`` subfolder), since the graph and the vectors are one index.
            qdrant_url, qdrant_api_key, qdrant_client: vectors on a Qdrant server
                instead (collections named ``hygraph_<dir name>_<collection>``).
            vector_store: a ``langchain_qdrant.QdrantVectorStore``: its collection becomes
                the index's passage collection (so the store itself can search hygraph's
                passages), and the graph's own collections are named from it
                (``<collection_name>_facts`` ...).
            k, top_k, budget, search_type, search_kwargs, results, chunking: see the class.
            kwargs: more :class:`~hygraph.index.GraphIndex` arguments (``chunk_size``,
                ``chunk_overlap``, ``progress``).
        """
        _check_embedding_argument(embedding)
        settings = check_arguments(
            dict(method=method, k=k, top_k=top_k, budget=budget, search_type=search_type,
                 search_kwargs=search_kwargs, results=results, chunking=chunking)
        )  # fmt: skip
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
            llm_in_retrieval=llm_in_retrieval,
            retrieval_timeout=retrieval_timeout,
            extractor=extractor,
            qdrant_url=qdrant_url,
            qdrant_api_key=qdrant_api_key,
            qdrant_client=qdrant_client,
            vector_store=vector_store,
            **kwargs,
        )
        try:
            docs = to_core_documents(documents, chunking)
            if docs:
                index.insert(docs, methods=requested)
            else:
                _build_missing(index, requested)
            return cls(index=index, **settings)
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
        llm_in_retrieval: bool = False,
        retrieval_timeout: float | None = None,
        qdrant_url: str | None = None,
        qdrant_api_key: str | None = None,
        qdrant_client: Any = None,
        vector_store: Any = None,
        k: int | None = None,
        top_k: int | None = None,
        budget: int | None = None,
        search_type: SearchType = "similarity",
        search_kwargs: dict[str, Any] | None = None,
        results: Results = "passages",
        chunking: Chunking = "auto",
        **kwargs: Any,
    ) -> HyGraphRetriever:
        """Reopen the index in ``persist_dir`` (``IndexNotFoundError`` if there is none).

        ``method`` defaults to the index's first built method. Pass the same
        ``embedding`` when it was a LangChain one, and the same Qdrant server objects when
        the vectors live on a server. The other arguments are those of
        :meth:`from_documents`.
        """
        path = Path(persist_dir).expanduser()
        manifest = Manifest.load(path)  # no index there: a clear error, nothing created
        chosen = method or next(iter(manifest.methods), DEFAULT_METHOD)
        settings = check_arguments(
            dict(method=chosen, k=k, top_k=top_k, budget=budget, search_type=search_type,
                 search_kwargs=search_kwargs, results=results, chunking=chunking)
        )  # fmt: skip
        index = open_graph_index(
            path,
            embedding=embedding,
            llm=llm,
            llm_in_retrieval=llm_in_retrieval,
            retrieval_timeout=retrieval_timeout,
            qdrant_url=qdrant_url,
            qdrant_api_key=qdrant_api_key,
            qdrant_client=qdrant_client,
            vector_store=vector_store,
            **kwargs,
        )
        try:
            return cls(index=index, **settings)
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

    def _options(self, overrides: Mapping[str, Any]) -> SearchOptions:
        """This call's settings: the fields, with the call's keyword arguments on top."""
        # ``verbose`` is one of LangChain's own invoke arguments, not a search setting.
        call = {key: value for key, value in overrides.items() if key != "verbose"}
        return search_options(
            self.search_type,
            {**self.search_kwargs, **call},
            k=self.k or self.top_k,
            results=self.results,
        )

    def _retrieve(self, query: str, overrides: Mapping[str, Any]) -> tuple[list[Document], str]:
        """The documents and the rendered context for ``query`` (see the class)."""
        options = self._options(overrides)
        self._ensure_built()
        budget = self.budget if self.budget is not None else DEFAULT_BUDGET
        if self.results == "evidence":
            return self._evidence(query, options, budget)
        k = options.k or DEFAULT_K
        fetch = max(options.fetch_k, k) if options.search_type == "mmr" else k
        found = retrieve_passages(
            self.index, query, self.method, fetch, budget=budget, filters=options.filter
        )
        passages = found.passages
        if options.score_threshold is not None:
            passages = [p for p in passages if p.score >= options.score_threshold]
        if options.search_type == "mmr":
            passages = self._mmr(passages, k, options.lambda_mult)
        return self.to_documents(passages[:k]), found.result.context

    def _evidence(
        self, query: str, options: SearchOptions, budget: int
    ) -> tuple[list[Document], str]:
        """``results="evidence"``: the method's items of every kind, as before passages."""
        result = self.index.retrieve(query, self.method, top_k=options.k, budget=budget)
        items = result.shown if self.budget is not None else result.items
        if options.filter:
            allowed = self.index.chunks_matching(options.filter)
            items = [item for item in items if allowed.intersection(item.source_ids)]
        return self.to_documents(items), result.context

    def _mmr(self, passages: list[Evidence], k: int, lambda_mult: float) -> list[Evidence]:
        """Maximal marginal relevance over the passages' stored vectors.

        Relevance is each passage's score (so ``lambda_mult=1`` keeps the method's
        order); redundancy is the highest cosine to a passage already chosen. Vectors
        are read back from the index, not embedded again.
        """
        if len(passages) <= 1 or k <= 1:
            return passages[:k]
        ids = [p.id or "" for p in passages]
        stored = self.index.resources.stored_vectors("chunks", ids)
        dim = next((len(v) for v in stored.values()), 1)
        vectors = np.array(
            [np.asarray(stored.get(i, np.zeros(dim)), dtype=np.float64) for i in ids]
        )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        similarity = vectors @ vectors.T
        relevance = np.array([p.score for p in passages], dtype=np.float64)
        chosen = [0]
        while len(chosen) < min(k, len(passages)):
            rest = [i for i in range(len(passages)) if i not in chosen]
            redundancy = similarity[np.ix_(rest, chosen)].max(axis=1)
            value = lambda_mult * relevance[rest] - (1.0 - lambda_mult) * redundancy
            chosen.append(rest[int(np.argmax(value))])
        return [passages[i] for i in chosen]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        documents, context = self._retrieve(query, kwargs)
        sink = _CONTEXT_SINK.get()
        if sink is not None:
            sink.append(context)
        return documents

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, **kwargs: Any
    ) -> list[Document]:
        # The core is synchronous (SQLite, Qdrant, local models); a worker thread keeps the
        # event loop free. to_thread copies the context, so the sink travels along.
        return await asyncio.to_thread(
            self._get_relevant_documents, query, run_manager=run_manager.get_sync(), **kwargs
        )

    def retrieve_with_context(
        self, query: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> tuple[list[Document], str]:
        """The documents and the method's full rendered context for ``query``.

        The context is the text the method would put in a prompt: its sections (entities,
        facts, passages ...), order and caps, within ``budget`` tokens (the core's
        default, 2000, when None). It is the method's whole context, also with
        ``search_type="mmr"`` or a filter. The call runs through :meth:`invoke`, so
        callbacks, tags and tracing in ``config`` apply; ``kwargs`` are per-call search
        settings (``k``, ``filter`` ...).
        """
        sink: list[str] = []
        token = _CONTEXT_SINK.set(sink)
        try:
            documents = self.invoke(query, config, **kwargs)
        finally:
            _CONTEXT_SINK.reset(token)
        return documents, sink[-1] if sink else ""

    async def aretrieve_with_context(
        self, query: str, config: RunnableConfig | None = None, **kwargs: Any
    ) -> tuple[list[Document], str]:
        """Async :meth:`retrieve_with_context`."""
        sink: list[str] = []
        token = _CONTEXT_SINK.set(sink)
        try:
            documents = await self.ainvoke(query, config, **kwargs)
        finally:
            _CONTEXT_SINK.reset(token)
        return documents, sink[-1] if sink else ""

    # -- mapping ------------------------------------------------------------------------

    def to_documents(self, items: Sequence[Evidence]) -> list[Document]:
        """Evidence, in the given order, as LangChain documents with provenance."""
        if self._records is None or self._records.store is not self.index.store:
            self._records = EvidenceRecords(self.index.store)
        return [
            Document(page_content=r.text, metadata=r.metadata, id=r.id)
            for r in self._records.records(items, self.method)
        ]

    # -- keeping the index current ------------------------------------------------------

    def add_documents(self, documents: Iterable[Document], **kwargs: Any) -> list[str]:
        """Insert (or replace, when changed) documents; every built method is updated.

        Returns the core ids of the documents (see :func:`to_core_documents`, which the
        retriever's ``chunking`` steers); unchanged documents cost nothing. A document
        replaces the stored one with its id, so pass all the pages or splits of one
        source together. ``kwargs`` (LangChain's ``add_documents`` options) are ignored.
        """
        docs = to_core_documents(documents, self.chunking)
        if docs:
            base, _ = parse_method_spec(self.method)
            methods = [] if base in self.index.methods else [self.method]
            with _lock_of(self.index):
                self.index.insert(docs, methods=methods)
        return [d.id for d in docs]

    async def aadd_documents(self, documents: Iterable[Document], **kwargs: Any) -> list[str]:
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
