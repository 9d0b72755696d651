"""The base entity graph every method shares, built from per-chunk extractions.

Entities merge across chunks by their normalised key (node id ``ent:<key>``);
relations become directed ``relation`` edges between entity nodes; each chunk
links to the entities it mentions with a ``mentions`` edge. A node keeps its
mentions per chunk in ``data["mentions"]`` (``chunk id -> [name, type, score,
description]``) and everything shown is derived from them: the display name is
the most frequent surface form, the type the most frequent specific type, the
score the highest importance, and the text the chunk descriptions joined in
order. Deriving from per-chunk records is what lets a deleted document take its
contribution with it while shared entities keep the rest.

When the joined description passes ``summary_threshold`` tokens and an LLM is
configured, it is summarised (cached, and redone only when the descriptions
change). Without an LLM the joined text is kept; the context renderer truncates it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hygraph.extract.schema import DEFAULT_TYPE, Extraction
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import DeleteResult, Edge, GraphStore, Node

if TYPE_CHECKING:
    from hygraph.models.base import LLM

SUMMARY_THRESHOLD_TOKENS = 500  # GraphRAG-style merge trigger (HyGRAG spec, reference code)
SUMMARY_MAX_WORDS = 150  # our choice


@dataclass
class GraphUpdate:
    """Nodes and edges to upsert."""

    nodes: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)


def entity_node_id(key: str) -> str:
    return f"ent:{key}"


def _derive_entity(key: str, mentions: dict[str, list[Any]]) -> tuple[str, str, float, str]:
    """Display name, type, score and joined description from per-chunk mention records."""
    names = Counter(m[0] for m in mentions.values())
    name = max(names, key=lambda n: (names[n], -list(names).index(n)))
    types = Counter(m[1] for m in mentions.values() if m[1] and m[1] != DEFAULT_TYPE)
    etype = types.most_common(1)[0][0] if types else DEFAULT_TYPE
    score = max(float(m[2]) for m in mentions.values())
    descriptions = list(dict.fromkeys(m[3].strip() for m in mentions.values() if m[3].strip()))
    return name, etype, score, "\n".join(descriptions)


def _chunk_order(
    store: GraphStore, records: Sequence[dict[str, Any]]
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A function that puts per-chunk records in the index's chunk order.

    An entity's name, description and a relation's label are read from its per-chunk
    records in order, so the order must not depend on when each chunk was extracted (a
    chunk whose extraction failed and was redone later would otherwise move its
    description to the end): records follow the order chunks were added to the index,
    unknown chunks last, by id.
    """
    positions = store.chunk_positions(c for r in records for c in r)
    last = len(positions) + 1

    def order(record: dict[str, Any]) -> dict[str, Any]:
        return dict(sorted(record.items(), key=lambda kv: (positions.get(kv[0], last), kv[0])))

    return order


def _derive_relation(entries: dict[str, list[list[Any]]]) -> tuple[str, float]:
    labels = Counter(e[0] for items in entries.values() for e in items if e[0])
    label = labels.most_common(1)[0][0] if labels else "related to"
    weight = sum(float(e[2]) for items in entries.values() for e in items)
    return label, weight


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
            self.store.upsert_nodes(update.nodes)
            self.store.upsert_edges(update.edges)

    def plan(self, extractions: Sequence[Extraction]) -> GraphUpdate:
        """The nodes and edges that merging ``extractions`` produces (reads, never writes).

        LLM summaries, when due, are made here, so that the write that follows is
        short and can share a transaction with the caller's bookkeeping.
        """
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
        existing = self.store.get_nodes(entity_node_id(k) for k in mentions)
        edge_keys = [
            (entity_node_id(s), entity_node_id(t), EdgeKind.RELATION) for s, t in relations
        ]
        old_edges = self.store.get_edges(edge_keys)
        merged_mentions = {
            key: {**(existing[entity_node_id(key)].data.get("mentions", {})
                     if entity_node_id(key) in existing else {}), **new}
            for key, new in mentions.items()
        }  # fmt: skip
        merged_entries = {
            pair: {**(old_edges[ek].data.get("entries", {}) if ek in old_edges else {}), **new}
            for (pair, new), ek in zip(relations.items(), edge_keys, strict=True)
        }
        order = _chunk_order(self.store, [*merged_mentions.values(), *merged_entries.values()])
        nodes: list[Node] = []
        for key, new in mentions.items():
            old = existing.get(entity_node_id(key))
            data = dict(old.data) if old else {}
            data["mentions"] = order(merged_mentions[key])
            nodes.append(self._entity_node(key, data, sources=list(new)))
        self._summarise(nodes)
        edges: list[Edge] = []
        for (s, t), new_entries in relations.items():
            ek = (entity_node_id(s), entity_node_id(t), EdgeKind.RELATION)
            entries = order(merged_entries[(s, t)])
            label, weight = _derive_relation(entries)
            edges.append(
                Edge(
                    *ek,
                    weight=weight,
                    data={"label": label, "entries": entries},
                    sources=list(new_entries),
                )
            )
        return GraphUpdate(nodes, edges + mention_edges)

    def _entity_node(self, key: str, data: dict[str, Any], sources: Iterable[str]) -> Node:
        name, etype, score, description = _derive_entity(key, data["mentions"])
        data["score"] = score
        data["type"] = etype
        text = description
        digest = hashlib.sha256(description.encode()).hexdigest()[:16]
        if data.get("summary") and data.get("summary_of") == digest:
            text = data["summary"]
        else:
            data.pop("summary", None)
            data.pop("summary_of", None)
        return Node(entity_node_id(key), NodeKind.ENTITY, name, text, data, tuple(sources))

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

        What remains is derived in the index's chunk order, as a build gives it (the
        store hands records back in key order).
        """
        gone = set(removed.chunk_ids)
        touched = self.store.get_nodes(n for n in removed.touched_node_ids if n.startswith("ent:"))
        kept_mentions: dict[str, dict[str, Any]] = {}
        for node_id, node in touched.items():
            kept = {c: m for c, m in node.data.get("mentions", {}).items() if c not in gone}
            if kept:
                kept_mentions[node_id] = kept
        kept_entries: dict[tuple[str, str, str], dict[str, Any]] = {}
        for node_id in touched:
            for edge in self.store.edges_of(node_id, EdgeKind.RELATION):
                entries = edge.data.get("entries", {})
                if any(c in gone for c in entries):
                    kept = {c: items for c, items in entries.items() if c not in gone}
                    if kept:
                        kept_entries[(edge.src, edge.dst, edge.kind)] = kept
        order = _chunk_order(self.store, [*kept_mentions.values(), *kept_entries.values()])
        nodes: list[Node] = []
        for node_id, kept in kept_mentions.items():
            data = {**touched[node_id].data, "mentions": order(kept)}
            nodes.append(self._entity_node(node_id[4:], data, ()))
        self._summarise(nodes)
        edges: list[Edge] = []
        for (src, dst, kind), kept in kept_entries.items():
            entries = order(kept)
            label, weight = _derive_relation(entries)
            edges.append(Edge(src, dst, kind, weight, {"label": label, "entries": entries}))
        self.write(GraphUpdate(nodes, edges))
