"""``synonyms``: edges between entities whose vectors are nearly the same (HippoRAG).

HippoRAG's "parahippocampal" step (Gutiérrez et al., NeurIPS 2024, §2.2; kept in
HippoRAG 2, ICML 2025) adds an edge between two entities of the knowledge graph
when the cosine of their vectors is at least τ = 0.8 (both papers), so a walk that
starts at "Alhandra" also reaches "Alhandra, Portugal". The edges are stored once
per pair (``src < dst``) as :attr:`~hygraph.graph.kinds.EdgeKind.SYNONYM` with the
cosine as weight; they carry no chunk provenance and go when either entity goes.

Choices, after the HippoRAG 2 code (``add_synonymy_edges``): an entity whose name
has fewer than ``synonym_min_chars`` (3) letters or digits gets no synonym edges,
and one entity keeps at most ``synonym_max`` (100) neighbours, the most similar.
The vectors are the ``entity-vectors`` layer's (the name, or ``name: description``
when the extractor wrote descriptions); no second entity collection is embedded.

Ours: two names whose numbers differ are never synonyms (``synonym_numbers``). A
small embedder puts "2001" next to "2003" and "15 July 2005" next to "23 August
2005" (on MuSiQue with all-MiniLM-L6-v2, 63-84 % of the pairs above 0.8 were such
dates and amounts); "1995" and "April 1995", or "Tallahassee" and "Tallahassee,
Florida", still pair.

Each entity is matched once per vector, as HippoRAG matches every entity once: the
edges of a graph are those any entity's own match found (an entity whose match is
capped may still have an edge another entity's match found). A batch of new chunks
matches the entities it names whose vector is new or changed since they were last
matched (a digest of the vector is kept per entity, in the store's progress table, in
the same transaction as the edges); an entity named again with the same vector is not
matched again, so a frequent entity costs one match, not one per batch that names it.
An entity whose vector changed has its old synonym edges replaced. A delete re-matches
the entities that lost provenance (their name or description may have changed). A
batch is marked done with its edges, so a killed build resumes where it stopped and
ends as an uninterrupted one (the same vectors, matched once each).

Every entity's vector is read from the vector store once; the matrix is then kept by
the layer and brought up to date with the entities each later insert names (the only
ones whose vectors ``entity-vectors`` wrote again), so inserting one document reads a
few vectors, not all of them. The kept matrix is dropped, and read again in full, when
another connection has committed to the store since (another process or index object
may have changed anything), on a delete and on a reset.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.layers.base import Layer, LayerConfig, in_batches, register_layer
from hygraph.layers.entity_vectors import ENTITY_COLLECTION, chunk_entities

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.resources import Resources

BUILD_BATCH = 512
MATCHED_TASK = "layer:synonyms:matched"  # progress items "<entity id>\x1f<vector digest>"
_SEP = "\x1f"
_ALNUM = re.compile(r"[^A-Za-z0-9]")
_NUMBER = re.compile(r"\d+")


@dataclass
class SynonymsConfig(LayerConfig):
    synonym_threshold: float = 0.8  # τ: least cosine of a synonym pair (HippoRAG 1 and 2 papers)
    synonym_max: int = 100  # most synonyms one entity keeps (HippoRAG 2 code)
    synonym_min_chars: int = 3  # names with fewer letters/digits get none (HippoRAG 2 code)
    synonym_numbers: bool = True  # ours: names whose numbers differ are not synonyms


@dataclass
class EntityMatrix:
    """Every usable entity: ids (sorted), their stored vectors scaled to unit length
    (rows, as :func:`~hygraph.graph.algorithms.similar.similar_pairs` compares them), a
    digest of each stored vector, and the numbers in their names.

    The rows are kept unit-length so that an insert scales only its new rows (with rows
    that stay replaced where they are, synonym matching went from 17–20 to 5 ms an insert
    at 5,897 chunks: ``benchmarks/results/insert-at-scale-20k.md``, last section)."""

    ids: list[str]
    vectors: Any
    numbers: dict[str, frozenset[str]]
    digests: dict[str, str] = field(default_factory=dict)

    def row(self, entity_id: str) -> int | None:
        """The row of ``entity_id``, or None when it is not a usable entity."""
        at = bisect_left(self.ids, entity_id)
        return at if at < len(self.ids) and self.ids[at] == entity_id else None


def _vector_digest(vector: Any) -> str:
    """A digest of a stored (float32) vector: what an entity was matched with."""
    return hashlib.blake2b(vector.tobytes(), digest_size=8).hexdigest()


@dataclass
class _Kept:
    """The matrix a layer keeps between builds, and the store state it is valid for."""

    store: Any
    version: int
    keys: EntityMatrix
    matched: dict[str, str]  # each matched entity → the digest it was matched with

    def valid(self, res: Resources, version: int) -> bool:
        """Whether nothing but this layer's own store wrote since (``version``: the store's
        ``data_version`` now)."""
        return self.store is res.store and self.version == version


def _digest(keys: EntityMatrix, entity_id: str) -> str | None:
    """A digest of the entity's stored vector (None: not a usable entity)."""
    return keys.digests.get(entity_id)


def name_numbers(name: str) -> frozenset[str]:
    """The numbers a name holds, without leading zeros ("05 May 2005" → {"5", "2005"})."""
    return frozenset(n.lstrip("0") or "0" for n in _NUMBER.findall(name))


@register_layer
class Synonyms(Layer):
    name = "synonyms"
    description = "synonym edges between entities whose vectors have cosine >= 0.8 (HippoRAG)"
    requires = ("entity-vectors",)
    after_extraction = True
    task = "layer:synonyms"
    Config = SynonymsConfig

    config: SynonymsConfig

    def __init__(self, config: Any = None):
        super().__init__(config)
        self._kept: _Kept | None = None

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> None:
        keys = None
        matched: dict[str, str] = {}
        version = res.store.data_version()  # before reading: a commit from now on drops keys
        for batch in in_batches(res, chunk_ids, BUILD_BATCH, "synonym edges"):
            if keys is None:  # every entity's vector, current once per build
                kept = self._kept
                keys = self._current_keys(res, chunk_ids, version)
                # What the last build left matched, unless another connection wrote since
                # (read whole, it was 0.04 s an insert at 20,000 documents).
                valid = kept is not None and kept.valid(res, version)
                matched = kept.matched if kept is not None and valid else self._matched(res)
            todo = {}
            for entity_id in chunk_entities(res, batch):
                digest = _digest(keys, entity_id)
                if digest is not None and matched.get(entity_id) != digest:
                    todo[entity_id] = digest
            with res.store.transaction():
                self.link(res, todo, keys, replace=[e for e in todo if e in matched])
                self._remember(res, matched, todo)
                res.store.mark_done(self.task or "", batch)
        if keys is not None:
            self._kept = _Kept(res.store, version, keys, matched)

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        self._kept = None  # entities left the graph: read the matrix again next time
        # Edges of removed entities went with them (the store drops edges of removed nodes).
        matched = self._matched(res)
        touched = [n for n in removed.touched_node_ids if n.startswith("ent:")]
        with res.store.transaction():
            self._forget(res, matched, removed.node_ids)
            if touched:
                keys = self._entity_vectors(res)
                digests = {n: _digest(keys, n) for n in touched}
                self.link(res, touched, keys, replace=touched)
                self._forget(res, matched, [n for n, d in digests.items() if d is None])
                self._remember(res, matched, {n: d for n, d in digests.items() if d is not None})

    def reset(self, res: Resources) -> None:
        self._kept = None
        super().reset(res)
        res.store.clear_progress(MATCHED_TASK)
        res.store.delete_edges((s, d, EdgeKind.SYNONYM) for s, d, _ in
                               res.store.edge_rows([EdgeKind.SYNONYM]))  # fmt: skip

    # -- matching ---------------------------------------------------------------------

    def _current_keys(self, res: Resources, chunk_ids: Sequence[str], version: int) -> EntityMatrix:
        """Every usable entity's vector as it is now, for a build over ``chunk_ids``.

        The matrix kept from the last build is valid when no other connection has
        committed since: the vectors ``entity-vectors`` wrote since then are those of the
        entities ``chunk_ids`` name (it embeds the entities of the same new chunks, just
        before), so only those rows are read again. Otherwise every vector is read.
        """
        kept, self._kept = self._kept, None
        if kept is None or not kept.valid(res, version):
            return self._entity_vectors(res)
        return self._refreshed(res, kept.keys, chunk_entities(res, chunk_ids))

    def _entity_vectors(self, res: Resources) -> EntityMatrix:
        """Every embedded entity with a long enough name, with its stored vector."""
        import numpy as np

        from hygraph.graph.algorithms.similar import normalise_rows

        names = res.store.node_names(NodeKind.ENTITY)
        usable = sorted(i for i, name in names.items() if self._named(name))
        found = res.stored_vectors(ENTITY_COLLECTION, usable)
        ids = [i for i in usable if i in found]
        dim = int(res.manifest.dim or 0)
        matrix = np.vstack([found[i] for i in ids]) if ids else np.zeros((0, dim), np.float32)
        return EntityMatrix(
            ids, normalise_rows(matrix), {i: name_numbers(names[i]) for i in ids},
            {i: _vector_digest(found[i]) for i in ids},
        )  # fmt: skip

    def _refreshed(self, res: Resources, keys: EntityMatrix, entity_ids: set[str]) -> EntityMatrix:
        """``keys`` (changed in place) with the rows of ``entity_ids`` read again (added,
        replaced or dropped) as :meth:`_entity_vectors` reads them; rows stay in id order.
        A row that stays is replaced where it is; only new rows move the matrix."""
        import numpy as np

        from hygraph.graph.algorithms.similar import normalise_rows

        if not entity_ids:
            return keys
        names = res.store.node_names(NodeKind.ENTITY, sorted(entity_ids))
        usable = sorted(i for i, name in names.items() if self._named(name))
        found = res.stored_vectors(ENTITY_COLLECTION, usable)
        fresh = [i for i in usable if i in found]
        gone = sorted(r for i in entity_ids - set(fresh) if (r := keys.row(i)) is not None)
        if gone:
            keys.vectors = np.delete(keys.vectors, gone, axis=0)
            for r in reversed(gone):
                del keys.ids[r]
        for i in entity_ids:
            keys.numbers.pop(i, None)
            keys.digests.pop(i, None)
        if not fresh:
            return keys
        unit = normalise_rows(np.vstack([found[i] for i in fresh]))
        unit = unit.astype(keys.vectors.dtype, copy=False)
        rows = [keys.row(i) for i in fresh]
        stay = [n for n, r in enumerate(rows) if r is not None]
        if stay:
            keys.vectors[[rows[n] for n in stay]] = unit[stay]
        new = [n for n, r in enumerate(rows) if r is None]
        if new:  # at their places among the rows kept
            at = [bisect_left(keys.ids, fresh[n]) for n in new]
            keys.vectors = np.insert(keys.vectors, at, unit[new], axis=0)
            for position, n in reversed(list(zip(at, new, strict=True))):
                keys.ids.insert(position, fresh[n])  # the last first: earlier ones hold
        keys.numbers.update((i, name_numbers(names[i])) for i in fresh)
        keys.digests.update((i, _vector_digest(found[i])) for i in fresh)
        return keys

    def _named(self, name: str) -> bool:
        return len(_ALNUM.sub("", name)) >= self.config.synonym_min_chars

    @staticmethod
    def _matched(res: Resources) -> dict[str, str]:
        """Each matched entity and the digest of the vector it was matched with."""
        pairs = (item.split(_SEP, 1) for item in res.store.done_items(MATCHED_TASK))
        return {entity_id: digest for entity_id, digest in pairs}

    @staticmethod
    def _remember(res: Resources, matched: dict[str, str], digests: dict[str, str]) -> None:
        """Record that these entities were matched with these vectors (in place, and in
        the store)."""
        Synonyms._forget(res, matched, digests)
        res.store.mark_done(MATCHED_TASK, [f"{e}{_SEP}{d}" for e, d in digests.items()])
        matched.update(digests)

    @staticmethod
    def _forget(res: Resources, matched: dict[str, str], entity_ids: Iterable[str]) -> None:
        """Forget the digests these entities were matched with (in place, and in the store)."""
        items = [f"{e}{_SEP}{matched.pop(e)}" for e in list(entity_ids) if e in matched]
        res.store.unmark_done(MATCHED_TASK, items)

    def link(
        self,
        res: Resources,
        entity_ids: Iterable[str],
        keys: EntityMatrix,
        *,
        replace: Iterable[str] = (),
    ) -> None:
        """Add the synonym edges of ``entity_ids``' matches in ``keys``; the entities in
        ``replace`` (whose vectors changed) first lose the synonym edges they had."""
        import numpy as np

        from hygraph.graph.algorithms.similar import similar_pairs
        from hygraph.graph.store import Edge

        wanted = sorted(set(entity_ids))
        if not wanted:
            return
        old = [(s, d, k) for e in sorted(set(replace)) for s, d, k in self._edges_of(res, e)]
        rows = [r for r in map(keys.row, wanted) if r is not None]
        pairs = similar_pairs(
            keys.vectors[rows], keys.vectors,
            threshold=self.config.synonym_threshold, cap=self.config.synonym_max,
            skip=np.asarray(rows, dtype=np.int64), unit=True,
        )  # fmt: skip
        edges: dict[tuple[str, str], float] = {}
        for q, k, cosine in pairs:
            a, b = sorted((keys.ids[rows[q]], keys.ids[k]))
            if self.config.synonym_numbers and keys.numbers[a] != keys.numbers[b]:
                continue
            edges[(a, b)] = max(cosine, edges.get((a, b), cosine))
        with res.store.transaction():
            res.store.delete_edges(old)
            res.store.upsert_edges(
                Edge(a, b, EdgeKind.SYNONYM, round(w, 6)) for (a, b), w in sorted(edges.items())
            )

    @staticmethod
    def _edges_of(res: Resources, entity_id: str) -> list[tuple[str, str, str]]:
        return [(e.src, e.dst, e.kind) for e in res.store.edges_of(entity_id, EdgeKind.SYNONYM)]
