"""The base entity graph every method shares, built from per-chunk extractions.

Entities merge across chunks by their normalised key (node id ``ent:<key>``);
relations become directed ``relation`` edges between entity nodes; each chunk
links to the entities it mentions with a ``mentions`` edge.

What a chunk says of an entity is kept as one record in the store's ``records``
table (``[name, type, score, description]``, owner = the node id), so a deleted
document takes its contribution with it while shared entities keep the rest. The
node keeps a tally of its records (``data["tally"]``): each surface form and type
with its count and first chunk, each distinct description with its first chunk,
the highest score. Everything shown is derived from the tally: the display name is
the most frequent surface form, the type the most frequent specific type, the score
the highest importance, and the text the distinct descriptions in chunk order.

A tally grows with what is new, never with how often an entity was seen: adding a
chunk that mentions an entity already named in ten thousand chunks reads and writes
the tally, not the ten thousand records (those are read again only when a record is
replaced or a document deleted). That keeps a long document's build linear.
"First" is by the index's chunk order (the order chunks were added; chunks unknown to
the store after them, by id), so the result does not depend on when each chunk was
extracted.

Relation edges keep their per-chunk entries in ``data["entries"]`` (``chunk id ->
[[label, description, weight], ...]``); a pair of entities is stated in far fewer
chunks than a frequent entity is named.

When the joined description passes ``summary_threshold`` tokens and an LLM is
configured, it is summarised (cached, and redone only when the descriptions
change). Without an LLM the joined text is kept; the context renderer truncates it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hygraph.extract.schema import DEFAULT_TYPE, Extraction
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.records import ENTRIES_FROM, edge_owner
from hygraph.graph.store import DeleteResult, Edge, GraphStore, Node

if TYPE_CHECKING:
    from hygraph.models.base import LLM

SUMMARY_THRESHOLD_TOKENS = 500  # GraphRAG-style merge trigger (HyGRAG spec, reference code)
SUMMARY_MAX_WORDS = 150  # our choice
UNKNOWN_POSITION = 2**62  # chunks the store does not hold (adapter sources) sort last
RECORDS_META = "entity_records"  # meta key: "2" once mentions and entries are records
RECORDS_VERSION = "2"


@dataclass
class GraphUpdate:
    """Nodes, edges and per-chunk records to write."""

    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    records: list[tuple[str, str, Any]] = field(default_factory=list)


def entity_node_id(key: str) -> str:
    return f"ent:{key}"


def _earlier(a: list[Any] | None, b: list[Any]) -> list[Any]:
    """The earlier of two ``[position, chunk id, ...]`` marks (``a`` may be missing)."""
    return b if a is None or b < a else a


def _count(counts: dict[str, list[Any]], value: str, mark: list[Any]) -> None:
    """Count ``value`` once more in ``counts`` (``value -> [count, *first mark]``)."""
    count, first = (counts[value][0], counts[value][1:]) if value in counts else (0, None)
    counts[value] = [count + 1, *_earlier(first, mark)]


def tally_add(tally: dict[str, Any], mark: list[Any], record: Sequence[Any]) -> None:
    """Count one chunk's mention record into ``tally`` (in place).

    ``mark`` is ``[position, chunk id]`` of the chunk; ``record`` is ``[name, type,
    score, description]``.
    """
    name, etype, score, description = record[0], record[1], float(record[2]), record[3]
    for field_name, value in (("names", name), ("types", etype)):
        if field_name == "types" and (not value or value == DEFAULT_TYPE):
            continue
        _count(tally.setdefault(field_name, {}), value, mark)
    text = description.strip()
    if text:
        descriptions = tally.setdefault("descriptions", {})
        descriptions[text] = _earlier(descriptions.get(text), mark)
    tally["score"] = max(float(tally.get("score", score)), score)
    tally["first"] = _earlier(tally.get("first"), mark)


def tally_of(records: Mapping[str, Sequence[Any]], positions: Mapping[str, int]) -> dict[str, Any]:
    """The tally of a whole set of records (``chunk id -> record``)."""
    tally: dict[str, Any] = {}
    for chunk_id, record in records.items():
        tally_add(tally, [positions.get(chunk_id, UNKNOWN_POSITION), chunk_id], record)
    return tally


def derive_entity(tally: Mapping[str, Any]) -> tuple[str, str, float, str]:
    """Display name, type, score and joined description from a tally.

    Most frequent name and specific type (a tie goes to the one seen first), highest
    score, distinct descriptions in the order they were first seen.
    """

    def most(counts: Mapping[str, list[Any]]) -> str:
        return min(counts, key=lambda v: (-counts[v][0], counts[v][1], counts[v][2]))

    names, types = tally.get("names", {}), tally.get("types", {})
    descriptions = tally.get("descriptions", {})
    joined = "\n".join(sorted(descriptions, key=lambda d: tuple(descriptions[d])))
    etype = most(types) if types else DEFAULT_TYPE
    return most(names), etype, float(tally.get("score", 0.0)), joined


def relation_tally_add(tally: dict[str, Any], mark: list[Any], items: Sequence[Any]) -> None:
    """Count one chunk's entries of a relation (``[[label, description, weight], ...]``)
    into ``tally`` (in place): each label's count and first ``[position, chunk id, item]``,
    and the summed weight."""
    labels = tally.setdefault("labels", {})
    for i, item in enumerate(items):
        tally["weight"] = tally.get("weight", 0) + float(item[2])
        if item[0]:
            _count(labels, item[0], [*mark, i])


def relation_tally_of(
    entries: Mapping[str, Sequence[Any]], positions: Mapping[str, int]
) -> dict[str, Any]:
    """The tally of a relation's entries (``chunk id -> items``), counted in chunk order."""
    tally: dict[str, Any] = {}
    marks = {c: [positions.get(c, UNKNOWN_POSITION), c] for c in entries}
    for chunk_id in sorted(entries, key=lambda c: marks[c]):
        relation_tally_add(tally, marks[chunk_id], entries[chunk_id])
    return tally


def derive_relation(tally: Mapping[str, Any]) -> tuple[str, float]:
    """The most frequent label (a tie goes to the one stated first) and the summed weight."""
    labels = tally.get("labels", {})
    label = min(labels, key=lambda v: (-labels[v][0], *labels[v][1:])) if labels else "related to"
    return label, float(tally.get("weight", 0.0))


def _relation_data(old: Mapping[str, Any] | None, tally: dict[str, Any]) -> dict[str, Any]:
    data = {k: v for k, v in (old or {}).items() if k != "entries"}
    data.update({"label": derive_relation(tally)[0], "tally": tally, ENTRIES_FROM: "records"})
    return data


def move_mentions_to_records(store: GraphStore, gone: Iterable[str] = ()) -> int:
    """Move the per-chunk records an older index kept inline into the records table,
    with a tally; once per index. Entity nodes kept them in ``data["mentions"]``,
    relation edges in ``data["entries"]``.

    ``gone``: chunks a delete has just removed (their records are not moved). Returns
    how many nodes and edges were moved. A read-only index is left as it is (readers
    find inline entries where they are).
    """
    if store.read_only or store.get_meta(RECORDS_META) == RECORDS_VERSION:
        return 0
    skip = set(gone)
    with store.transaction():
        legacy = [n for n in store.nodes_of_kind(NodeKind.ENTITY) if "mentions" in n.data]
        edges = [e for e in store.iter_edges(EdgeKind.RELATION) if ENTRIES_FROM not in e.data]
        positions = store.chunk_positions(
            [*(c for n in legacy for c in n.data["mentions"]),
             *(c for e in edges for c in e.data.get("entries", {}))]
        )  # fmt: skip
        rows: list[tuple[str, str, Any]] = []
        for node in legacy:
            mentions = {c: r for c, r in node.data.pop("mentions").items() if c not in skip}
            if mentions:  # else nothing of the entity graph is left (the delete's repair)
                node.data["tally"] = tally_of(mentions, positions)
            rows += [(node.id, c, list(r)) for c, r in mentions.items()]
        for edge in edges:
            entries = {c: i for c, i in edge.data.get("entries", {}).items() if c not in skip}
            tally = relation_tally_of(entries, positions)
            edge.data = _relation_data(edge.data, tally)
            rows += [(edge_owner(edge.src, edge.dst, edge.kind), c, i) for c, i in entries.items()]
        store.put_records(rows)
        store.upsert_nodes(legacy)
        store.upsert_edges(edges)
        store.set_meta(RECORDS_META, RECORDS_VERSION)
    return len(legacy) + len(edges)


class EntityGraphBuilder:
    """Adds extractions to a :class:`GraphStore` as entity nodes and relation/mention edges."""

    def __init__(
        self,
        store: GraphStore,
        *,
        llm: LLM | None = None,
        summary_threshold: int = SUMMARY_THRESHOLD_TOKENS,
        summary_max_words: int = SUMMARY_MAX_WORDS,
    ):
        self.store = store
        self.llm = llm
        self.summary_threshold = summary_threshold
        self.summary_max_words = summary_max_words
        self.summaries_made = 0

    # -- insert -----------------------------------------------------------------------

    def add(self, extractions: Sequence[Extraction]) -> None:
        """Merge new chunks' extractions into the graph (idempotent per chunk)."""
        self.write(self.plan(extractions))

    def write(self, update: GraphUpdate) -> None:
        """Write a planned update in one transaction (joins the caller's, if any)."""
        with self.store.transaction():
            self.store.put_records(update.records)
            self.store.upsert_nodes(update.nodes)
            self.store.upsert_edges(update.edges)

    def plan(self, extractions: Sequence[Extraction]) -> GraphUpdate:
        """The nodes, edges and records that merging ``extractions`` produces (reads,
        never writes).

        An entity's tally takes each new chunk's record; a chunk merged before with the
        same record changes nothing, one merged before with another record (a chunk
        extracted again) has the entity's tally made again from all its records. LLM
        summaries, when due, are made here, so that the write that follows is short and
        can share a transaction with the caller's bookkeeping.
        """
        move_mentions_to_records(self.store)
        mentions: dict[str, dict[str, list[Any]]] = {}
        relations: dict[tuple[str, str], dict[str, list[list[Any]]]] = {}
        mention_edges: list[Edge] = []
        for ex in extractions:
            for e in ex.entities:
                key = e.key
                if not key:
                    continue
                mentions.setdefault(key, {})[ex.chunk_id] = [e.name, e.type, e.score, e.description]
                mention_edges.append(
                    Edge(
                        ex.chunk_id,
                        entity_node_id(key),
                        EdgeKind.MENTION,
                        e.score / 100.0,
                        sources=[ex.chunk_id],
                    )
                )
            per_chunk: dict[tuple[str, str], list[list[Any]]] = {}
            for r in ex.relations:
                pair = (r.source_key, r.target_key)
                per_chunk.setdefault(pair, []).append([r.label, r.description, r.weight])
            for pair, items in per_chunk.items():
                relations.setdefault(pair, {})[ex.chunk_id] = items
        chunk_ids = [ex.chunk_id for ex in extractions]
        stored = self.store.records_from(chunk_ids)
        positions = self.store.chunk_positions(chunk_ids)
        nodes, records = self._merge_mentions(mentions, stored, positions)
        self._summarise(nodes)
        edges, entries = self._merge_relations(relations, stored, positions)
        return GraphUpdate(nodes, edges + mention_edges, records + entries)

    def _merge_relations(
        self,
        relations: dict[tuple[str, str], dict[str, list[list[Any]]]],
        stored: Mapping[tuple[str, str], Any],
        positions: Mapping[str, int],
    ) -> tuple[list[Edge], list[tuple[str, str, Any]]]:
        """Relation edges with the new chunks' entries counted in, and the records to
        store (as :meth:`_merge_mentions` does for entities)."""
        keys = [(entity_node_id(s), entity_node_id(t), EdgeKind.RELATION) for s, t in relations]
        existing = self.store.get_edges(keys, entries=False)
        edges: list[Edge] = []
        records: list[tuple[str, str, Any]] = []
        redo: dict[tuple[str, str, str], dict[str, Any]] = {}
        for key, new in zip(keys, relations.values(), strict=True):
            owner = edge_owner(*key)
            fresh = {c: items for c, items in new.items() if stored.get((owner, c)) != items}
            if not fresh:
                continue
            records += [(owner, c, items) for c, items in fresh.items()]
            if any((owner, c) in stored for c in fresh):
                redo[key] = fresh
                continue
            old = existing.get(key)
            tally = dict((old.data.get("tally") if old else None) or {})
            tally["labels"] = dict(tally.get("labels", {}))
            marks = {c: [positions.get(c, UNKNOWN_POSITION), c] for c in fresh}
            for chunk_id in sorted(fresh, key=lambda c: marks[c]):
                relation_tally_add(tally, marks[chunk_id], fresh[chunk_id])
            edges.append(self._relation_edge(key, old, tally, fresh))
        if redo:
            every = self.store.records_of(edge_owner(*k) for k in redo)
            chunks = [c for r in every.values() for c in r] + [c for f in redo.values() for c in f]
            where = self.store.chunk_positions(chunks)
            for key, fresh in redo.items():
                entries = {**every.get(edge_owner(*key), {}), **fresh}
                tally = relation_tally_of(entries, where)
                edges.append(self._relation_edge(key, existing.get(key), tally, fresh))
        return edges, records

    @staticmethod
    def _relation_edge(
        key: tuple[str, str, str], old: Edge | None, tally: dict[str, Any], sources: Iterable[str]
    ) -> Edge:
        data = _relation_data(old.data if old else None, tally)
        return Edge(*key, weight=derive_relation(tally)[1], data=data, sources=list(sources))

    def _merge_mentions(
        self,
        mentions: dict[str, dict[str, list[Any]]],
        stored: Mapping[tuple[str, str], Any],
        positions: Mapping[str, int],
    ) -> tuple[list[Node], list[tuple[str, str, Any]]]:
        """Entity nodes with the new records counted in, and the records to store."""
        ids = [entity_node_id(k) for k in mentions]
        existing = self.store.get_nodes(ids, sources=False)
        nodes: list[Node] = []
        records: list[tuple[str, str, Any]] = []
        redo: dict[str, dict[str, list[Any]]] = {}
        for node_id, new in zip(ids, mentions.values(), strict=True):
            fresh = {c: r for c, r in new.items() if stored.get((node_id, c)) != r}
            if not fresh:
                continue  # every record already counted, as it is
            records += [(node_id, c, r) for c, r in fresh.items()]
            if any((node_id, c) in stored for c in fresh):
                redo[node_id] = fresh  # a record replaced: count all of them again
                continue
            old = existing.get(node_id)
            data = dict(old.data) if old else {}
            tally = {k: (dict(v) if isinstance(v, dict) else v)
                     for k, v in data.get("tally", {}).items()}  # fmt: skip
            for chunk_id, record in fresh.items():
                tally_add(tally, [positions.get(chunk_id, UNKNOWN_POSITION), chunk_id], record)
            data["tally"] = tally
            nodes.append(self._entity_node(node_id, data, sources=list(fresh)))
        if redo:
            every = self.store.records_of(redo)
            for node_id, fresh in redo.items():
                every[node_id] = {**every.get(node_id, {}), **fresh}
            nodes += self._retallied(every, existing, {n: list(f) for n, f in redo.items()})
        return nodes, records

    def _retallied(
        self,
        records: dict[str, dict[str, list[Any]]],
        existing: Mapping[str, Node],
        sources: Mapping[str, Sequence[str]],
    ) -> list[Node]:
        """Entity nodes whose tally is made again from all their records."""
        positions = self.store.chunk_positions(c for r in records.values() for c in r)
        nodes = []
        for node_id, mine in records.items():
            old = existing.get(node_id)
            data = {**(old.data if old else {}), "tally": tally_of(mine, positions)}
            nodes.append(self._entity_node(node_id, data, sources=sources.get(node_id, ())))
        return nodes

    def _entity_node(self, node_id: str, data: dict[str, Any], sources: Iterable[str]) -> Node:
        name, etype, score, description = derive_entity(data["tally"])
        data["score"] = score
        data["type"] = etype
        text = description
        digest = hashlib.sha256(description.encode()).hexdigest()[:16]
        if data.get("summary") and data.get("summary_of") == digest:
            text = data["summary"]
        else:
            data.pop("summary", None)
            data.pop("summary_of", None)
        return Node(node_id, NodeKind.ENTITY, name, text, data, tuple(sources))

    def _summarise(self, nodes: list[Node]) -> None:
        """Replace long merged descriptions with an LLM summary (when an LLM is configured)."""
        if self.llm is None:
            return
        from hygraph.ingest.tokenizer import default_tokenizer
        from hygraph.prompts.extraction import summarize_messages

        tok = default_tokenizer()
        todo = [
            n
            for n in nodes
            if "summary" not in n.data and n.text and tok.count(n.text) > self.summary_threshold
        ]
        if not todo:
            return
        from hygraph.models.fanout import complete_many

        prompts = [
            summarize_messages(n.name or "", n.text.split("\n"), self.summary_max_words)
            for n in todo
        ]
        # temperature=0 (an int) as before: it is part of a cached reply's key.
        replies = complete_many(self.llm, prompts, desc="entity summaries", temperature=0)
        for node, reply in zip(todo, replies, strict=True):
            if isinstance(reply, BaseException) or not reply.strip():
                continue  # keep the joined descriptions; a later build retries
            node.data["summary_of"] = hashlib.sha256(node.text.encode()).hexdigest()[:16]
            node.data["summary"] = reply.strip()
            node.text = node.data["summary"]
            self.summaries_made += 1

    # -- delete -----------------------------------------------------------------------

    def repair(self, removed: DeleteResult) -> None:
        """Re-derive entities and relations that lost provenance when a document was deleted.

        The store has dropped the deleted chunks' records; each touched entity, and each
        relation edge of one, is tallied again from the records left, in the index's
        chunk order, as a build counts them.
        """
        move_mentions_to_records(self.store, removed.chunk_ids)
        touched = self.store.get_nodes(
            (n for n in removed.touched_node_ids if n.startswith("ent:")), sources=False
        )
        left = self.store.records_of(touched)
        nodes = self._retallied({n: left[n] for n in touched if n in left}, touched, {})
        self._summarise(nodes)
        edges: dict[tuple[str, str, str], Edge] = {}
        for node_id in touched:
            for edge in self.store.edges_of(node_id, EdgeKind.RELATION):
                entries = edge.data.get("entries", {})  # what the delete left of them
                positions = self.store.chunk_positions(entries)
                tally = relation_tally_of(entries, positions)
                if entries and tally != edge.data.get("tally"):
                    edge.weight = derive_relation(tally)[1]
                    edge.data = _relation_data(edge.data, tally)
                    edges[(edge.src, edge.dst, edge.kind)] = edge
        self.write(GraphUpdate(nodes, list(edges.values())))
