"""``Resources``: what layers, operators and methods are handed to do their work.

The :class:`~hygraph.index.GraphIndex` facade owns an index directory; everything
below it works through one :class:`Resources` object instead of the facade, so data
flows one way (index → methods → operators → layers → graph) and each part can be
tested with a store and a vector index made by hand.

It carries the graph store, the vector index, the embedder and the LLM (both
resolved on first use, with their disk caches and usage accounting), the usage
tracker, progress-bar settings, the built layers by name, and the small helpers
every stage needs: chunk texts, chunk evidence, vector search / upsert / delete, and
the one LLM fan-out.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hygraph.errors import IndexMismatchError
from hygraph.graph.store import GraphStore
from hygraph.idle import WhenIdle
from hygraph.kept_matrices import KeptMatrices
from hygraph.manifest import Manifest
from hygraph.models.base import LLM, Embedder, Message, Region
from hygraph.models.cache import DiskCache
from hygraph.progress import progress_bar
from hygraph.retrieval.evidence import Evidence
from hygraph.usage import UsageTracker
from hygraph.vectors import VectorHit, VectorIndex

#: The vector collection of the chunks (the base layer every index has).
CHUNK_COLLECTION = "chunks"
#: Texts embedded per call when filling a collection.
EMBED_BATCH = 256
#: LLM calls in flight at once in a fan-out (the OpenAI client bounds its own too).
LLM_CONCURRENCY = 8
#: Seconds a retrieval-time LLM call may take before retrieval goes on without it.
RETRIEVAL_LLM_TIMEOUT = 20.0


class Resources:
    """The shared services of one open index (see the module docstring).

    Args:
        path: the index directory (layers that keep files, like BM25, write below it).
        store, vectors: the graph store and the vector index.
        manifest: the index manifest (embedder, dimension, extractor).
        embedder: the index's embedder, without cache (wrapped here on first use).
        llm: a model name for an OpenAI-compatible endpoint, an LLM object, or None
            (then ``OPENAI_MODEL`` decides; no LLM when it is unset).
        tracker: usage accounting shared with the models.
        progress: progress bars (None: only on a terminal).
        cache_dir: where the embedding and LLM caches live.
        extractor: an extractor object that overrides the manifest's extractor spec.
        llm_in_retrieval: let retrieval steps ask the LLM (question entities); by default
            retrieval is LLM-free and the LLM serves builds and answers only.
        retrieval_timeout: seconds a retrieval-time LLM call may take before the step
            falls back to its LLM-free path.
    """

    def __init__(
        self,
        *,
        path: Path,
        store: GraphStore,
        vectors: VectorIndex,
        manifest: Manifest,
        embedder: Embedder,
        llm: str | LLM | None,
        tracker: UsageTracker,
        progress: bool | None,
        cache_dir: Path,
        extractor: Any = None,
        llm_in_retrieval: bool = False,
        retrieval_timeout: float = RETRIEVAL_LLM_TIMEOUT,
        read_only: bool = False,
    ):
        self.path = path
        #: The caches cannot be written (a read-only index): read them, keep new entries
        #: in memory.
        self.read_only = read_only
        self.store = store
        self.vectors = vectors
        self.manifest = manifest
        self.tracker = tracker
        self.progress = progress
        self.cache_dir = cache_dir
        self.layers: dict[str, Any] = {}
        """Layer instances by name, filled by the facade (see :mod:`hygraph.layers`)."""
        self._inner_embedder = embedder
        self._embedder: Embedder | None = None
        self._llm_spec = llm
        self._llm: LLM | None = None
        self.extractor_override = extractor
        self.llm_in_retrieval = llm_in_retrieval
        self.retrieval_timeout = retrieval_timeout
        #: The whole-collection matrices kept beside the index (:mod:`hygraph.kept_matrices`).
        # (read through this object at each call, so that a replaced reader is the one used)
        #: Files written once writes pause (:mod:`hygraph.idle`): the matrices, BM25's.
        self.later = WhenIdle()
        self.matrices = KeptMatrices(
            path, store, vectors, lambda *a, **k: self.vector_matrix(*a, **k), self.later
        )
        self._extractor: Any = None

    # -- models -------------------------------------------------------------------------

    @property
    def embedder(self) -> Embedder:
        """The index's embedder, with the on-disk cache and usage accounting."""
        if self._embedder is None:
            from hygraph.models.embedders import CachedEmbedder

            cache = DiskCache(self.cache_dir / "embeddings.sqlite", read_only=self.read_only)
            self._embedder = CachedEmbedder(
                self._inner_embedder, cache, self.tracker, dim=self.manifest.dim
            )
        return self._embedder

    @property
    def embedder_window(self) -> int | None:
        """How many tokens the embedder reads (the rest of a longer text is not embedded)."""
        window = getattr(self._inner_embedder, "max_tokens", None)
        return int(window) if window else None

    @property
    def llm(self) -> LLM | None:
        """The configured LLM (cached on disk), or None when none is configured."""
        if self._llm is None:
            spec = self._llm_spec
            if spec is None and not os.environ.get("OPENAI_MODEL"):
                return None
            from hygraph.models.llm import CachedLLM, OpenAILLM

            own = spec is None or isinstance(spec, str)
            inner = OpenAILLM(spec, tracker=self.tracker) if own else spec
            if isinstance(inner, OpenAILLM) and inner.tracker is None:
                # Our client made elsewhere (the CLI's --llm-base-url, an app's own): it
                # reports its calls, retries and failures to this index's accounts.
                inner.tracker, own = self.tracker, True
            # Our client keeps its own accounts; a user's LLM object is counted by the cache.
            self._llm = CachedLLM(
                inner,
                DiskCache(self.cache_dir / "llm.sqlite", read_only=self.read_only),
                tracker=self.tracker,
                record_misses=not own,
            )
        return self._llm

    @property
    def retrieval_llm(self) -> LLM | None:
        """The LLM for retrieval steps: only when asked for (``llm_in_retrieval``)."""
        return self.llm if self.llm_in_retrieval else None

    def complete_bounded(self, messages: list[Message]) -> str:
        """One retrieval-time LLM call that gives up after ``retrieval_timeout`` seconds.

        Raises ``TimeoutError`` (or the call's own error) so the caller falls back; a
        call that overran finishes in the background and is discarded.
        """
        import concurrent.futures
        import contextvars

        llm = self.llm
        if llm is None:
            raise RuntimeError("no LLM is configured")
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        # The call's usage is charged to the caller's stage (the query), as if made inline.
        call = contextvars.copy_context().run
        future = pool.submit(call, llm.complete, messages, temperature=0)
        try:
            return future.result(timeout=self.retrieval_timeout).text
        except concurrent.futures.TimeoutError:
            raise TimeoutError(
                f"the LLM did not answer within {self.retrieval_timeout:g} s"
            ) from None
        finally:
            pool.shutdown(wait=False)

    @property
    def extractor_name(self) -> str:
        """The extractor the index was built with (``offline``, ``llm-nary`` ...)."""
        return str(self.manifest.extractor)

    @property
    def extractor(self) -> Any:
        """The index's extractor (None when the index was built with ``none``)."""
        if self._extractor is None:
            from hygraph.extract import resolve_extractor

            spec = self.extractor_override or self.manifest.extractor
            self._extractor = resolve_extractor(spec, self.llm) or False
        return self._extractor or None

    def complete_many(
        self,
        prompts: Sequence[list[Message]],
        desc: str,
        validate: Callable[[str], object] | None = None,
    ) -> list[str | BaseException]:
        """Every prompt answered by the LLM, concurrently (bounded), in order; failures returned.

        ``validate`` raises on an unusable reply: that entry is then the exception, and the
        reply is not cached, so a later run asks again.
        """
        from hygraph.models.fanout import complete_many

        llm = self.llm
        if llm is None:
            raise RuntimeError("complete_many needs an LLM; check resources.llm first")
        return complete_many(
            llm, prompts, desc=desc, progress=self.progress, concurrency=LLM_CONCURRENCY,
            validate=validate,
        )  # fmt: skip

    def bar(self, iterable: Iterable | None, *, total: int | None, desc: str, unit: str) -> Any:
        """A progress bar honouring the index's progress setting."""
        return progress_bar(iterable, total=total, desc=desc, enabled=self.progress, unit=unit)

    # -- vectors ------------------------------------------------------------------------

    def check_dim(self) -> int:
        """The vector dimension, recorded on first use; a mismatched embedder is an error."""
        dim = int(self.embedder.dim)
        if self.manifest.dim is None:
            self.manifest.dim = dim
            self.manifest.save(self.path)
        elif self.manifest.dim != dim:
            raise IndexMismatchError(
                f"index {self.path} holds {self.manifest.dim}-dimensional vectors but embedder "
                f"{self.embedder.name!r} produces {dim}; use the index's embedder"
            )
        return dim

    def embed_query(self, question: str | np.ndarray) -> np.ndarray:
        """The query vector of a question (a vector is returned as it is)."""
        return self.embedder.embed_query(question) if isinstance(question, str) else question

    def search_vectors(
        self,
        collection: str,
        query: str | np.ndarray,
        k: int,
        *,
        ids: Sequence[str] | None = None,
        kinds: Sequence[str] | None = None,
    ) -> list[VectorHit]:
        """Nearest points of ``collection`` to a question (text or query vector).

        ``ids`` restricts the search to those graph ids (it scores stored vectors
        against the query without embedding their texts again); ``kinds`` to points
        whose payload ``kind`` is one of them.
        """
        if k <= 0 or not self.vectors.has_collection(collection) or ids == [] or kinds == []:
            return []
        self.check_dim()
        vector = self.embed_query(query)
        where: dict[str, Any] = {}
        if ids is not None:
            where["id"] = list(ids)
        if kinds is not None:
            where["kind"] = list(kinds)
        return self.vectors.search(collection, vector, k, where=where or None)

    def search_chunks(self, question: str | np.ndarray, k: int) -> list[VectorHit]:
        """Nearest chunks to a question (text or query vector) by cosine similarity."""
        return self.search_vectors(CHUNK_COLLECTION, question, k)

    def upsert_vectors(
        self,
        collection: str,
        ids: Sequence[str],
        texts: Sequence[str],
        payloads: Sequence[dict[str, Any]],
        *,
        desc: str | None = None,
    ) -> np.ndarray:
        """Embed ``texts`` and store them under graph ``ids`` (idempotent); returns the vectors.

        Each distinct text is embedded once (ids that share a text share its vector).
        ``desc`` shows a progress bar over the embedding batches.
        """
        dim = self.check_dim() if ids else int(self.manifest.dim or 0)
        if not ids:
            return np.zeros((0, dim), dtype=np.float32)
        out = self.embed_texts(texts, desc=desc)
        self.write_vectors(collection, ids, out, payloads)
        return out

    def embed_texts(self, texts: Sequence[str], *, desc: str | None = None) -> np.ndarray:
        """The vectors of ``texts`` as matrix rows, each distinct text embedded once.

        ``desc`` shows a progress bar over the embedding batches.
        """
        distinct = list(dict.fromkeys(texts))
        if not distinct:
            return np.zeros((0, self.check_dim()), dtype=np.float32)
        starts: Iterable[int] = range(0, len(distinct), EMBED_BATCH)
        if desc is not None:
            starts = self.bar(starts, total=len(range(0, len(distinct), EMBED_BATCH)),
                              desc=desc, unit="batch")  # fmt: skip
        parts = [
            np.asarray(self.embedder.embed(distinct[start : start + EMBED_BATCH]), np.float32)
            for start in starts
        ]
        row = {text: i for i, text in enumerate(distinct)}
        return np.vstack(parts)[[row[text] for text in texts]]

    def pools_spans(self) -> bool:
        """Whether the embedder pools spans of a text from its pass over the text
        (the bundled encoder on PyTorch): ``fact_vector="passage"`` needs it."""
        pools = getattr(self.embedder, "pools_spans", None)
        return bool(pools and pools())

    def embed_passages(self, texts: Sequence[str], spans: Sequence[Sequence[Region]]) -> np.ndarray:
        """The vectors of ``texts``, from a pass that also pools (and caches) their
        ``spans`` where the embedder can (:meth:`pools_spans`)."""
        pool = getattr(self.embedder, "embed_spans", None)
        result = pool(texts, spans) if pool is not None and any(spans) else None
        if result is None:
            return np.asarray(self.embedder.embed(list(texts)), np.float32)
        return np.asarray(result[0], np.float32)

    def span_vectors(
        self, texts: Sequence[str], spans: Sequence[Sequence[Region]]
    ) -> list[np.ndarray] | None:
        """Per text, the unit vectors of its ``spans`` (held, cached, or pooled from a new
        pass over the text; a zero row where the window cut a span off), or None where
        the embedder cannot pool spans."""
        pool = getattr(self.embedder, "embed_spans", None)
        if pool is None or not texts:
            return None
        result = pool(texts, spans, vectors=False)
        return None if result is None else result[1]

    def write_vectors(
        self,
        collection: str,
        ids: Sequence[str],
        vectors: np.ndarray,
        payloads: Sequence[dict[str, Any]],
    ) -> None:
        """Store the rows of ``vectors`` under graph ``ids`` (idempotent), in batches."""
        if not len(ids):
            return
        self.vectors.ensure_collection(collection, self.check_dim())
        for start in range(0, len(ids), EMBED_BATCH):
            end = start + EMBED_BATCH
            self.vectors.upsert(
                collection, list(ids[start:end]), vectors[start:end], list(payloads[start:end])
            )

    def delete_vectors(self, collection: str, ids: Sequence[str]) -> None:
        """Drop points of ``collection`` by graph id (a missing collection is fine)."""
        if ids and self.vectors.has_collection(collection):
            self.vectors.delete(collection, list(ids))

    def stored_vectors(self, collection: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``ids`` (missing ones are absent).

        Each is a row of one float32 matrix read batch by batch (:meth:`vector_matrix`).
        """
        found, matrix = self.vector_matrix(collection, ids)
        return {i: matrix[n] for n, i in enumerate(found)}

    def vector_matrix(
        self, collection: str, ids: Sequence[str], *, release: bool = False
    ) -> tuple[list[str], np.ndarray]:
        """The stored vectors of ``ids`` as the rows of one float32 matrix.

        Returns the ids found (in the order given, each once) and their rows; none found:
        ``[]`` and a ``0 × 0`` matrix. The backend reads them in batches, so reading a
        whole collection holds one batch as Python numbers at a time, not all of them.
        ``release``: an embedded shard loaded for this read alone is closed after it.
        """
        if not ids or not self.vectors.has_collection(collection):
            return [], np.zeros((0, 0), dtype=np.float32)
        return self.vectors.vector_matrix(collection, list(ids), release=release)

    def build_search_index(self) -> None:
        """At the end of a build, with embedded Qdrant: the HNSW graphs of the collections
        queries search, once a scan would be slow (a Qdrant server makes its own). Timed as
        the ``vector-index`` stage when there was something to build."""
        build = getattr(self.vectors, "build_search_index", None)
        if build is None:
            return
        with self.tracker.stage("vector-index"):
            built = build(self.searched_collections())
        if not built:
            self.tracker.discard("vector-index")

    def searched_collections(self) -> list[str]:
        """The collections queries search through Qdrant rather than read whole: the
        passages, and the facts once there are :data:`SEARCH_FACTS_FROM` of them."""
        from hygraph.layers.fact_vectors import FACT_COLLECTION, facts_searched

        facts = facts_searched(self.store) and self.vectors.has_collection(FACT_COLLECTION)
        return [CHUNK_COLLECTION, *([FACT_COLLECTION] if facts else [])]

    def cosine_range(
        self, collection: str, vector: np.ndarray, *, greatest: float | None = None
    ) -> tuple[float, float] | None:
        """The greatest and the least cosine of ``vector`` to ``collection``'s points, by two
        searches, with ``vector`` and with its negation; None when the collection is
        empty. Exact while the collection is small enough for Qdrant to scan it (below
        its indexing threshold); past it, as near as its HNSW graph finds (a least cosine
        a little above the true one at worst), so the cost stays logarithmic.
        ``greatest``: the best hit of a search with ``vector`` made already (no second)."""
        if greatest is None:
            greatest = self.vectors.best_score(collection, vector)
        low = self.least_cosine(collection, vector)
        return None if greatest is None or low is None else (greatest, low)

    def least_cosine(self, collection: str, vector: np.ndarray) -> float | None:
        """The least cosine of ``vector`` to ``collection``'s points (see
        :meth:`cosine_range`): the nearest point to its negation."""
        if not self.vectors.has_collection(collection):
            return None
        worst = self.vectors.best_score(collection, -np.asarray(vector, dtype=np.float32))
        return None if worst is None else -worst

    def vector_stamp(self, collection: str) -> str | None:
        """:meth:`hygraph.kept_matrices.KeptMatrices.vector_stamp`."""
        return self.matrices.vector_stamp(collection)

    def unit_matrix(
        self, collection: str, version: Any, ids: Callable[[], Sequence[str]]
    ) -> tuple[list[str], np.ndarray]:
        """:meth:`hygraph.kept_matrices.KeptMatrices.unit_matrix`."""
        return self.matrices.unit_matrix(collection, version, ids)

    def kept_matrix(
        self, name: str, key: list[Any], make: Callable[[], tuple[list[str], np.ndarray]] | None
    ) -> tuple[list[str], np.ndarray] | None:
        """:meth:`hygraph.kept_matrices.KeptMatrices.kept_matrix`."""
        return self.matrices.kept_matrix(name, key, make)

    # -- chunks -------------------------------------------------------------------------

    def chunk_texts(self, chunk_ids: Iterable[str]) -> dict[str, str]:
        """Chunk texts as embedded and shown: the document title (if any) as a header line."""
        chunks = self.store.get_chunks(chunk_ids)
        titles = self.store.document_titles(c.doc_id for c in chunks.values())
        return {
            cid: f"{titles[c.doc_id]}\n{c.text}" if titles.get(c.doc_id) else c.text
            for cid, c in chunks.items()
        }

    def chunk_evidence(self, ranked: Sequence[tuple[str, float]]) -> list[Evidence]:
        """Evidence items for ranked ``(chunk id, score)`` pairs (missing chunks are skipped)."""
        ids = [c for c, _ in ranked]
        texts = self.chunk_texts(ids)
        chunks = self.store.get_chunks(ids)
        return [
            Evidence(
                "chunk", texts[c], float(score), (c,), id=c, metadata={"doc_id": chunks[c].doc_id}
            )
            for c, score in ranked
            if c in texts
        ]

    def layer(self, name: str) -> Any:
        """The built layer ``name`` (a :class:`~hygraph.layers.base.Layer`)."""
        try:
            return self.layers[name]
        except KeyError:
            raise KeyError(f"layer {name!r} is not available in this index") from None
