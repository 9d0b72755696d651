"""``fact-vectors``: one vector per relation edge, embedded as the fact triple alone (``facts``).

HippoRAG 2 links a question to facts by embedding each distinct OpenIE triple on its
own (code: ``src/hipporag/HippoRAG.py:320`` embeds ``str(fact)`` for the triples that
``utils/misc_utils.py:123`` ``flatten_facts`` makes distinct). Here a fact is a relation
edge of the entity graph embedded as ``"source label target"`` (display names; the
edge's label, or "related to"; ours: without the tuple punctuation), under the id
``"source|target"`` that ``relation-vectors`` uses. It is ``relation-vectors`` without
the descriptions: a triple is a few words where ``"source label target: descriptions"``
runs to a sentence or more, so it costs a fraction to embed, and the descriptions do
not change it.

Edges can share a text (two entities with one display name); each distinct text is
embedded once and its vector stored under every id that has it.

Incremental: the relation edges named by new chunks are embedded again only when their
text changed (a new chunk can change an edge's label or an entity's display name).
The digest of the text each vector was embedded from is kept as the progress items
``"id<TAB>digest"`` of ``fact-vectors:texts``; re-embedding an id replaces its item in
one transaction. The layer keeps the digests it read between inserts while no other
connection has written to the store (its ``data_version``), so an insert into a large
index does not read them all again. An id found with two digests (left by an earlier
version killed mid-build) counts as not embedded, and both items go when it is embedded.

Ours: a fact whose label carries no words (empty or "related to": two entities named in
one sentence, the offline extractor's co-occurrence facts, about half of its facts and
43 % of their word pieces on MuSiQue) can be left unembedded (``fact_cooccurrence="names"``,
what ``hybrid-ppr`` asks for): its vector is then the sum of its two entities' name
vectors, each weighted by its word pieces, made unit (each name embedded once;
``entity-vectors`` embeds the same names, so the embedding cache makes one of the two
free). That sum is close to the embedded ``"A related to B"`` (cosine 0.84 on MuSiQue),
and the walk recalls as much from it (``benchmarks/results/fact-cooccurrence.md``).
``"text"`` (this layer's default, what an index saved before the option did, and what
``hipporag2`` asks for) embeds them as any other fact.

Ours: a worded fact can be left unembedded too (``fact_vector="passage"``, what
``hybrid-ppr`` asks for; this layer's default stays ``"triple"``, as ``hipporag2`` and an
index saved before the option embed): its vector is pooled from the encoder's outputs over the words
of the passage that first states it, taken from the pass ``chunks`` makes over that
passage and kept in the embedding cache (:mod:`hygraph.layers.fact_spans`). The facts
then cost the build no encoder pass (on MuSiQue ``hybrid-ppr``'s layers went from 1.3–1.6×
the chunk embedding to 0.7–0.9×, ``benchmarks/results/fact-passage.md``). A fact named
nowhere in its passage, or an embedder that cannot pool spans (an endpoint, the ONNX
runtime), falls back to the triple.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from hygraph.errors import ConfigError, HygraphError
from hygraph.graph.kinds import EdgeKind
from hygraph.layers.base import LayerConfig, register_layer
from hygraph.layers.fact_spans import Span, passage_spans
from hygraph.layers.relation_vectors import RelationVectors

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult, Edge, GraphStore
    from hygraph.resources import Resources

FACT_COLLECTION = "facts"
TEXTS_TASK = "fact-vectors:texts"
#: Facts from which a query searches the collection instead of scoring every fact (their
#: unit vectors would be 300 MB a host to read per query) and a build makes its HNSW graph.
SEARCH_FACTS_FROM = 200_000


def _digest(text: str, composed: bool) -> str:
    """The digest kept for a fact's vector: of its text, marked when it was composed."""
    return text_digest(_COMPOSED + text if composed else text)


def facts_searched(store: GraphStore) -> bool:
    """Whether queries search the facts collection (:data:`SEARCH_FACTS_FROM` or more);
    one fact vector per relation edge, counted in the store so that nobody loads the
    collection's shard only to count it (100 MB at 33,000 facts)."""
    from hygraph.graph.kinds import EdgeKind

    return store.edge_count(EdgeKind.RELATION) >= SEARCH_FACTS_FROM


def fact_text(src_name: str, label: str, dst_name: str) -> str:
    """What a fact is embedded as: the triple ``"source label target"``."""
    return f"{src_name} {label or 'related to'} {dst_name}"


def text_digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:16]


#: Labels that carry no words: a fact with one of them states only that its entities met.
COOCCURRENCE_LABELS = ("", "related to")
COOCCURRENCE_MODES = ("names", "text")
#: How a worded fact gets its vector: its triple embedded, or pooled from its passage.
FACT_VECTOR_MODES = ("triple", "passage")
#: Prefixed to a composed fact's text before its digest: a composed vector and an
#: embedded one of the same text are different vectors.
_COMPOSED = "names\x1f"
#: Begins the stand-in text of a fact pooled from its passage (its digest's source).
_PASSAGE = "passage\x1f"


@dataclass
class FactVectorsConfig(LayerConfig):
    # How a co-occurrence fact gets its vector: "names" (ours: its entities' name vectors,
    # weighted by their word pieces, summed and made unit) | "text" (the triple embedded,
    # as every other fact). The default here is what an index saved before the option
    # existed did, and what the methods ask for.
    fact_cooccurrence: str = "text"
    # How a worded fact gets its vector: "triple" (HippoRAG 2: "source label target"
    # embedded) | "passage" (ours: pooled from the pass over the passage that first
    # states it, hygraph.layers.fact_spans; the triple where no span is found or the
    # embedder cannot pool). The default is what an index saved before the option did.
    fact_vector: str = "triple"

    def __post_init__(self) -> None:
        check_cooccurrence(self.fact_cooccurrence)
        check_fact_vector(self.fact_vector)


def check_cooccurrence(mode: str) -> None:
    """Raise ConfigError unless ``mode`` is one of :data:`COOCCURRENCE_MODES`."""
    if mode not in COOCCURRENCE_MODES:
        raise ConfigError(f"fact_cooccurrence must be one of {', '.join(COOCCURRENCE_MODES)}")


def check_fact_vector(mode: str) -> None:
    """Raise ConfigError unless ``mode`` is one of :data:`FACT_VECTOR_MODES`."""
    if mode not in FACT_VECTOR_MODES:
        raise ConfigError(f"fact_vector must be one of {', '.join(FACT_VECTOR_MODES)}")


def cooccurrence(edge: Edge) -> bool:
    """Whether ``edge``'s label carries no words (:data:`COOCCURRENCE_LABELS`)."""
    return str(edge.data.get("label", "") or "").strip().lower() in COOCCURRENCE_LABELS


def unit_sums(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Row by row, ``first + second`` divided by its norm (a zero sum stays zero)."""
    summed = np.asarray(first, np.float32) + np.asarray(second, np.float32)
    norms = np.linalg.norm(summed, axis=1, keepdims=True)
    return summed / np.where(norms > 0, norms, 1.0)


@register_layer
class FactVectors(RelationVectors):
    name = "fact-vectors"
    description = "fact vectors (the triple 'source label target' alone, HippoRAG 2) in 'facts'"
    collections = (FACT_COLLECTION,)
    task = "layer:fact-vectors"
    collection = FACT_COLLECTION
    ids_task = "fact-vectors:ids"
    #: Progress items ``"id<TAB>digest"``: the text each stored vector was embedded from.
    texts_task: ClassVar[str] = TEXTS_TASK

    Config = FactVectorsConfig
    config: FactVectorsConfig

    reads_entries = False  # the triple alone: no chunk's entries are read
    _digests: dict[str, str] | None = None  # id → digest of its vector's text
    _stale: dict[str, list[str]]  # id → its items, for ids found with two digests
    _read_at: tuple[int, int] | None = None  # (store, data_version) the digests were read at

    def text(self, edge: Edge, src_name: str, dst_name: str) -> str:
        return fact_text(src_name, str(edge.data.get("label", "")), dst_name)

    def embed(self, res: Resources, keys: Sequence[tuple[str, str, str]]) -> None:
        """Embed the facts ``keys`` as they are now; co-occurrence facts composed from
        their entities' names (``fact_cooccurrence="names"``), worded ones pooled from
        their passage (``fact_vector="passage"``)."""
        texts, composed, passages = self._split(res, keys)
        self.store_texts(res, texts, composed, passages)

    def planned_texts(self, res: Resources, chunk_ids: Sequence[str]) -> list[str]:
        texts, composed, passages = self._split(res, self.keys(res, chunk_ids))
        todo = self.todo(res, texts, composed)
        names = {n: None for i in todo if i in composed for n in composed[i]}
        return [t for i, t in todo.items() if i not in composed and i not in passages] + list(names)

    def _split(
        self, res: Resources, keys: Sequence[tuple[str, str, str]]
    ) -> tuple[dict[str, str], dict[str, tuple[str, str]], dict[str, Span]]:
        """Fact id → text for the edges ``keys`` that exist; of those the facts whose
        vector is composed (id → their entities' display names) and those pooled from
        their passage (id → span; their text is a stand-in naming the span)."""
        named = self.named_edges(res, keys)
        texts = {rid: self.text(edge, *names) for rid, edge, names in named}
        composed: dict[str, tuple[str, str]] = {}
        if self.config.fact_cooccurrence == "names":
            composed = {rid: names for rid, edge, names in named if cooccurrence(edge)}
        passages: dict[str, Span] = {}
        if self.config.fact_vector == "passage" and res.pools_spans():
            worded = [(rid, edge) for rid, edge, _ in named if not cooccurrence(edge)]
            passages = passage_spans(res, worded)
            texts.update((rid, f"{_PASSAGE}{chunk}\x1f{list(map(list, region))}")
                         for rid, (chunk, region) in passages.items())  # fmt: skip
        return texts, composed, passages

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> None:
        try:
            super().insert(res, chunk_ids)
        except BaseException:
            self._digests = None  # a failed insert: read what the store holds next time
            raise

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        try:
            super().delete(res, removed)  # drops gone vectors, re-embeds touched changed edges
        finally:
            known = self._known(res)
            keep = res.store.done_items(self.ids_task)  # the digests of ids still embedded
            items = [f"{i}\t{d}" for i, d in known.items() if i in keep]
            with res.store.transaction():
                res.store.clear_progress(self.texts_task)
                res.store.mark_done(self.texts_task, items)
            self._digests = None

    def reset(self, res: Resources) -> None:
        super().reset(res)
        res.store.clear_progress(self.texts_task)
        self._digests = None

    def store_texts(
        self,
        res: Resources,
        texts: dict[str, str],
        composed: dict[str, tuple[str, str]] | None = None,
        passages: dict[str, Span] | None = None,
    ) -> None:
        """Embed the facts whose text is not the one their stored vector was embedded from
        (``composed``: those whose vector is the unit sum of these two names' vectors;
        ``passages``: those pooled from a span of a passage)."""
        composed, passages = composed or {}, passages or {}
        known = self._known(res)
        todo = self.todo(res, texts, composed)
        if not todo:
            return
        pooled = {i: passages[i] for i in todo if i in passages}
        if pooled:
            self._store_pooled(res, pooled)
        worded = {i: t for i, t in todo.items() if i not in composed and i not in passages}
        if worded:  # each distinct text embedded once (upsert_vectors)
            super().store_texts(res, worded)
        pairs = {i: composed[i] for i in todo if i in composed}
        if pairs:
            self._store_composed(res, pairs)
        fresh = {i: _digest(t, i in composed) for i, t in todo.items()}
        gone = [f"{i}\t{known[i]}" for i in todo if i in known]
        gone += [item for i in todo for item in self._stale.pop(i, ())]
        with res.store.transaction():
            res.store.unmark_done(self.texts_task, gone)
            res.store.mark_done(self.texts_task, [f"{i}\t{d}" for i, d in fresh.items()])
        known.update(fresh)

    def todo(
        self,
        res: Resources,
        texts: dict[str, str],
        composed: dict[str, tuple[str, str]] | None = None,
    ) -> dict[str, str]:
        """The facts whose text (or way of getting a vector) is not the one their stored
        vector was made from."""
        known = self._known(res)
        composed = composed or {}
        return {i: t for i, t in texts.items() if known.get(i) != _digest(t, i in composed)}

    def _store_pooled(self, res: Resources, spans: dict[str, Span]) -> None:
        """Store each fact's vector pooled from its passage region: the chunks layer's pass
        kept them in the embedding cache; a chunk embedded without them (another
        embedder setting, a cache emptied since) is passed through the encoder again.
        A region the encoder's window cut off leaves its fact to its triple."""
        wanted: dict[str, list[Any]] = {}  # chunk → its regions, each once
        for chunk, region in spans.values():
            regions = wanted.setdefault(chunk, [])
            if region not in regions:
                regions.append(region)
        chunks = list(wanted)
        texts = res.chunk_texts(chunks)
        pooled = res.span_vectors([texts[c] for c in chunks], [wanted[c] for c in chunks])
        if pooled is None:
            raise HygraphError("the embedder stopped pooling spans while a build used them")
        row = {(c, region): pooled[n][k] for n, c in enumerate(chunks)
               for k, region in enumerate(wanted[c])}  # fmt: skip
        ids = [i for i, s in spans.items() if row[s].any()]
        if ids:
            vectors = np.vstack([row[spans[i]] for i in ids])
            res.write_vectors(self.collection, ids, vectors, [{"kind": "relation"} for _ in ids])
            res.store.mark_done(self.ids_task, ids)
        kept = set(ids)
        cut = [i for i in spans if i not in kept]
        if cut:
            self._store_triples(res, cut)

    def _store_triples(self, res: Resources, ids: Sequence[str]) -> None:
        """Embed the facts ``ids`` as their triples (whatever their stand-in text)."""
        keys = [(*i.split("|", 1), EdgeKind.RELATION) for i in ids]
        triples = {rid: self.text(edge, *names) for rid, edge, names in self.named_edges(res, keys)}
        super().store_texts(res, triples)

    def _store_composed(self, res: Resources, pairs: dict[str, tuple[str, str]]) -> None:
        """Store each fact's vector as the unit sum of its two entities' name vectors, each
        weighted by its word pieces (the bundled tokenizer's count): a mean-pooled encoder's
        vector of ``"A related to B"`` averages its pieces, so a name of three pieces
        weighs in it about three times one of one."""
        from hygraph.ingest.tokenizer import default_tokenizer

        ids = list(pairs)
        flat = [n for i in ids for n in pairs[i]]
        pieces = np.maximum(np.asarray(default_tokenizer().count_many(flat), np.float32), 1.0)
        names = res.embed_texts(flat) * pieces[:, None]
        res.write_vectors(
            self.collection, ids, unit_sums(names[0::2], names[1::2]),
            [{"kind": "relation"} for _ in ids],
        )  # fmt: skip
        res.store.mark_done(self.ids_task, ids)

    def _known(self, res: Resources) -> dict[str, str]:
        """Id → digest of its vector's text, read again when another connection wrote."""
        stamp = (id(res.store), res.store.data_version())
        if self._digests is None or self._read_at != stamp:
            seen: dict[str, list[str]] = {}
            for item in res.store.done_items(self.texts_task):
                rid, _, digest = item.rpartition("\t")
                seen.setdefault(rid, []).append(digest)
            self._digests = {i: d[0] for i, d in seen.items() if len(d) == 1}
            self._stale = {i: [f"{i}\t{x}" for x in d] for i, d in seen.items() if len(d) > 1}
            self._read_at = stamp
        return self._digests
