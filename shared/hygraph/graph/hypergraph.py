"""The bipartite fact–entity layer of HyperGraphRAG, stored in the :class:`GraphStore`.

A hypergraph whose hyperedges are n-ary facts is stored losslessly as a bipartite
graph: one ``fact`` node per distinct statement (id ``fact:<hash of the text>``),
the shared ``entity`` nodes (``ent:<key>``, from :mod:`hygraph.graph.entity_graph`),
and one ``incidence`` edge from a fact to each of its member entities. Reading a
hyperedge back is reading a fact node's incidence edges; reading an entity's
hyperedges is reading the incidence edges that end at it.

Like the entity graph, everything shown is derived from per-chunk records, so a
deleted document takes its contribution with it:

- a fact node keeps ``data["mentions"]``: chunk id → the completeness score the
  extractor gave it there; its ``score`` is the maximum (HyperGraphRAG spec §9 #5:
  the reference code sums, which breaks the 0–10 range the threshold relies on)
  and ``mention_count`` the number of chunks that state it;
- an incidence edge keeps ``data["entries"]``: chunk id → ``[importance,
  description]`` of the member as listed under that fact; its weight is the
  maximum importance (spec §3.6 [D]).

Entity nodes and their merged descriptions belong to the shared entity graph;
this layer only links to them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hygraph.extract.keys import entity_key
from hygraph.extract.schema import Extraction
from hygraph.graph.entity_graph import GraphUpdate, entity_node_id
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import DeleteResult, Edge, GraphStore, Node


def fact_node_id(text: str) -> str:
    """The node id of a fact statement (identical texts are one hyperedge, spec §3.6)."""
    normal = " ".join(text.split())
    return "fact:" + hashlib.sha256(normal.encode()).hexdigest()[:24]


@dataclass
class Hyperedge:
    """A fact with its member entity ids (what one bipartite neighbourhood query returns)."""

    id: str
    text: str
    score: float
    members: list[str] = field(default_factory=list)
    sources: tuple[str, ...] = ()


def _fact_node(fact_id: str, text: str, mentions: dict[str, float], sources: Iterable[str]) -> Node:
    data = {
        "mentions": mentions,
        "score": max(mentions.values()),
        "mention_count": len(mentions),
    }
    return Node(fact_id, NodeKind.FACT, None, text, data, tuple(sources))


def _incidence(fact_id: str, ent_id: str, entries: dict[str, list], sources: Iterable[str]) -> Edge:
    weight = max(float(e[0]) for e in entries.values())
    return Edge(fact_id, ent_id, EdgeKind.INCIDENCE, weight, {"entries": entries}, tuple(sources))


class HypergraphBuilder:
    """Adds the facts of per-chunk extractions to the store as fact nodes and incidences."""

    def __init__(self, store: GraphStore):
        self.store = store

    def plan(self, extractions: Sequence[Extraction]) -> GraphUpdate:
        """Fact nodes and incidence edges for ``extractions``, merged with what is stored."""
        mentions: dict[str, dict[str, float]] = {}
        texts: dict[str, str] = {}
        entries: dict[tuple[str, str], dict[str, list]] = {}
        for ex in extractions:
            importance = {e.key: e.score for e in ex.entities}
            for fact in ex.facts:
                fid = fact_node_id(fact.text)
                texts.setdefault(fid, " ".join(fact.text.split()))
                per_chunk = mentions.setdefault(fid, {})
                per_chunk[ex.chunk_id] = max(per_chunk.get(ex.chunk_id, 0.0), float(fact.score))
                for member in fact.entities:
                    key = entity_key(member)
                    if not key:
                        continue
                    score = fact.member_scores.get(member, importance.get(key, 50.0))
                    description = fact.member_descriptions.get(member, "")
                    slot = entries.setdefault((fid, entity_node_id(key)), {})
                    old = slot.get(ex.chunk_id)
                    if old is None or float(score) > float(old[0]):
                        slot[ex.chunk_id] = [float(score), description]
        stored = self.store.get_nodes(mentions)
        nodes = []
        for fid, new in mentions.items():
            old = stored.get(fid)
            merged = {**(old.data.get("mentions", {}) if old else {}), **new}
            nodes.append(_fact_node(fid, old.text if old else texts[fid], merged, new))
        old_edges = self.store.get_edges((f, e, EdgeKind.INCIDENCE) for f, e in entries)
        edges = []
        for (fid, eid), new_entries in entries.items():
            old_edge = old_edges.get((fid, eid, EdgeKind.INCIDENCE))
            merged = {**(old_edge.data.get("entries", {}) if old_edge else {}), **new_entries}
            edges.append(_incidence(fid, eid, merged, new_entries))
        return GraphUpdate(nodes, edges)

    def write(self, update: GraphUpdate) -> None:
        with self.store.transaction():
            self.store.upsert_nodes(update.nodes)
            self.store.upsert_edges(update.edges)

    def repair(self, removed: DeleteResult) -> list[str]:
        """Re-derive surviving facts and incidences that lost a deleted document's chunks.

        The store has already dropped facts, entities and incidence edges left without
        provenance. Returns the ids of surviving facts that changed.
        """
        gone = set(removed.chunk_ids)
        touched = self.store.get_nodes(n for n in removed.touched_node_ids if n.startswith("fact:"))
        nodes: list[Node] = []
        edges: list[Edge] = []
        for fid, node in touched.items():
            kept = {c: s for c, s in node.data.get("mentions", {}).items() if c not in gone}
            if kept:
                nodes.append(_fact_node(fid, node.text or "", kept, ()))
            for edge in self.store.edges_of(fid, EdgeKind.INCIDENCE):
                old = edge.data.get("entries", {})
                left = {c: e for c, e in old.items() if c not in gone}
                if left and len(left) != len(old):
                    edges.append(_incidence(edge.src, edge.dst, left, ()))
        self.write(GraphUpdate(nodes, edges))
        return [n.id for n in nodes]


class Bipartite:
    """Neighbourhood queries over the stored bipartite graph (spec §2.3)."""

    def __init__(self, store: GraphStore):
        self.store = store

    def hyperedges(self, fact_ids: Iterable[str]) -> dict[str, Hyperedge]:
        """Facts by id with their member entity ids (strongest member first)."""
        nodes = self.store.get_nodes(fact_ids)
        out: dict[str, Hyperedge] = {}
        for fid, node in nodes.items():
            if node.kind != NodeKind.FACT:
                continue
            incid = sorted(self.store.edges_of(fid, EdgeKind.INCIDENCE), key=lambda e: -e.weight)
            out[fid] = Hyperedge(
                fid,
                node.text or "",
                float(node.data.get("score", 0.0)),
                [e.dst for e in incid],
                tuple(node.sources),
            )
        return out

    def entities_of(self, fact_id: str) -> list[str]:
        return [e.dst for e in self.store.edges_of(fact_id, EdgeKind.INCIDENCE) if e.src == fact_id]

    def hyperedges_of(self, entity_id: str) -> list[str]:
        return [
            e.src for e in self.store.edges_of(entity_id, EdgeKind.INCIDENCE) if e.dst == entity_id
        ]

    def degree(self, node_id: str) -> int:
        return len(self.store.edges_of(node_id, EdgeKind.INCIDENCE))

    def shared(self, entity_ids: Sequence[str]) -> set[str]:
        """Facts that contain every entity in ``entity_ids``."""
        sets = [set(self.hyperedges_of(e)) for e in entity_ids]
        return set.intersection(*sets) if sets else set()
