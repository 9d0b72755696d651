"""NodeRAG's heterograph in the :class:`GraphStore`: node kinds, ids, and decomposition.

Seven node types (spec 004 §2.2), stored as typed nodes and edges:

==== ================== ============================== ====================================
type store kind         id                             text
==== ================== ============================== ====================================
T    (a chunk)          the chunk id                   the chunk (lives in ``chunks``)
S    ``unit``           ``unit:<sha256(text)>``        a semantic unit
N    ``entity``         ``ent:<key>`` (shared)         the entity name (``name``)
R    ``relationship``   ``nrel:<sha256(sorted ends)>`` its statements, joined by ``"; "``
A    ``attribute``      ``attr:<sha256(entity id)>``   the entity's portrait
H    ``high_level``     ``high:<sha256(text)>``        one insight of a community
O    ``overview``       ``over:<sha256(title)>``       the insight's title
==== ================== ============================== ====================================

N nodes are the shared entity nodes of :mod:`hygraph.graph.entity_graph` (extract once,
build many), so NodeRAG's exact-match entry points are the same entities every method
sees. One A per entity (keyed by the entity, not by its text) lets an insert replace a
stale portrait in place.

Edges (undirected in the walk; stored once): ``nr_mention`` S–N (``e_d``), ``nr_end``
R–N (``e_r``), ``nr_attribute`` N–A (``e_a``), ``nr_member`` H–S/A (``e_h``),
``nr_title`` H–O (``e_o``), ``nr_text`` T–S (``e_s``) and ``nr_semantic`` between
embedded nodes (the kNN edges that stand in for the HNSW base layer).

Decomposition (spec §3.1) turns stored per-chunk extractions into S and R nodes and
their edges. Everything is derived from provenance, so a rerun after a crash writes
the same rows: an S node's weight is the number of chunks that state it, an S–N
edge's weight the number of chunks in which the unit mentions the entity (the
paper's "+1 per repeat"), and an R node keeps each chunk's statements in
``data["statements"]``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from hygraph.extract.keys import entity_key
from hygraph.extract.schema import Extraction
from hygraph.graph.entity_graph import GraphUpdate, entity_node_id
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import Edge, GraphStore, Node

#: Node type letter by id prefix (T nodes are chunk ids: everything else).
PREFIX_TYPES = {
    "unit:": "S",
    "ent:": "N",
    "nrel:": "R",
    "attr:": "A",
    "high:": "H",
    "over:": "O",
}
TYPE_KINDS = {
    "S": NodeKind.UNIT,
    "N": NodeKind.ENTITY,
    "R": NodeKind.RELATIONSHIP,
    "A": NodeKind.ATTRIBUTE,
    "H": NodeKind.HIGH_LEVEL,
    "O": NodeKind.OVERVIEW,
}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


def unit_id(text: str) -> str:
    return f"unit:{_digest(text)}"


def relationship_id(a: str, b: str) -> str:
    """Relationship identity is the unordered pair of endpoints (spec §8 #15)."""
    return f"nrel:{_digest(chr(31).join(sorted((a, b))))}"


def attribute_id(entity: str) -> str:
    return f"attr:{_digest(entity)}"


def high_level_id(text: str) -> str:
    return f"high:{_digest(text)}"


def overview_id(title: str) -> str:
    return f"over:{_digest(title.casefold())}"


def node_type(node_id: str) -> str:
    """The NodeRAG type letter of a node id (``T`` for chunk ids)."""
    for prefix, letter in PREFIX_TYPES.items():
        if node_id.startswith(prefix):
            return letter
    return "T"


def statement(source: str, label: str, target: str, description: str = "") -> str:
    """An R statement: the extractor's sentence when it gave one, else ``source label target``."""
    text = " ".join(description.split())
    if text and source.casefold() in text.casefold() and target.casefold() in text.casefold():
        return text
    return " ".join(" ".join(p.split()) for p in (source, label or "related to", target) if p)


def _mentioned(names: Iterable[str], text: str) -> list[str]:
    """The names that occur in ``text`` as whole words (case-insensitive)."""
    found = []
    for name in names:
        if name and re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE):
            found.append(name)
    return found


@dataclass
class Decomposition:
    """S/N/R nodes and edges planned from extractions, plus the delta graph G1.

    ``g1`` is the graph over the delta's S, N and R nodes (networkx, node attributes
    ``type`` and ``weight``) on which the important entities and the communities are
    computed (spec §5: augmentation runs on the delta graph).
    """

    update: GraphUpdate = field(default_factory=GraphUpdate)
    units: dict[str, str] = field(default_factory=dict)  # S id -> text
    unit_chunks: dict[str, list[str]] = field(default_factory=dict)  # S id -> chunk ids
    relationships: dict[str, str] = field(default_factory=dict)  # R id -> text
    entity_names: dict[str, str] = field(default_factory=dict)  # N id -> name
    g1: object = None


class HeterographBuilder:
    """Writes NodeRAG's S and R nodes (decomposition) and reads the layer back."""

    def __init__(self, store: GraphStore, *, link_relationships_to_units: bool = False):
        self.store = store
        self.link_relationships_to_units = link_relationships_to_units

    def decompose(self, extractions: Sequence[Extraction]) -> Decomposition:
        """Plan S and R nodes with their S–N, R–N and T–S edges (spec §3.1, §3.4).

        Units that list their entities (the NodeRAG decomposition prompt) link to
        those; units from sources that give only text (offline rules, imported
        triples) link to the chunk's entities whose names they contain.
        """
        import networkx as nx

        out = Decomposition()
        unit_sources: dict[str, set[str]] = {}
        mention_sources: dict[tuple[str, str], set[str]] = {}
        text_edges: set[tuple[str, str]] = set()
        rel_statements: dict[str, dict[str, list[str]]] = {}
        rel_ends: dict[str, tuple[str, str]] = {}
        rel_units: dict[tuple[str, str], set[str]] = {}
        entity_weight: dict[str, int] = {}
        names: dict[str, str] = {}
        for ex in extractions:
            chunk = ex.chunk_id
            chunk_names = [e.name for e in ex.entities if e.key]
            for e in ex.entities:
                if e.key:
                    names.setdefault(entity_node_id(e.key), e.name)
            chunk_units: list[tuple[str, list[str]]] = []
            for unit in ex.units:
                sid = unit_id(unit.text)
                out.units[sid] = unit.text
                unit_sources.setdefault(sid, set()).add(chunk)
                text_edges.add((chunk, sid))
                members = unit.entities or _mentioned(chunk_names, unit.text)
                ents = list(dict.fromkeys(entity_node_id(entity_key(m)) for m in members))
                ents = [e for e in ents if e != "ent:"]
                chunk_units.append((sid, ents))
                for eid in ents:
                    mention_sources.setdefault((sid, eid), set()).add(chunk)
                    entity_weight[eid] = entity_weight.get(eid, 0) + 1
            for rel in ex.relations:
                a, b = entity_node_id(rel.source_key), entity_node_id(rel.target_key)
                if a == b or not rel.source_key or not rel.target_key:
                    continue
                rid = relationship_id(a, b)
                rel_ends[rid] = (a, b)
                text = statement(rel.source, rel.label, rel.target, rel.description)
                found = rel_statements.setdefault(rid, {}).setdefault(chunk, [])
                if text not in found:
                    found.append(text)
                for sid, ents in chunk_units:  # the units that mention both ends
                    if a in ents and b in ents:
                        rel_units.setdefault((rid, sid), set()).add(chunk)
        out.entity_names = names
        # Merge with what earlier builds stored, so counts and statements stay whole.
        existing = self.store.get_nodes([*unit_sources, *rel_statements])
        g1 = nx.Graph()
        for sid, chunks in unit_sources.items():
            sources = set(chunks) | set(existing[sid].sources if sid in existing else ())
            out.unit_chunks[sid] = sorted(chunks)
            out.update.nodes.append(
                Node(
                    sid,
                    NodeKind.UNIT,
                    None,
                    out.units[sid],
                    {"weight": len(sources)},
                    tuple(sorted(chunks)),
                )
            )
            g1.add_node(sid, type="S", weight=len(sources))
        for (sid, eid), chunks in mention_sources.items():
            out.update.edges.append(
                Edge(sid, eid, EdgeKind.UNIT_MENTION, float(len(chunks)), {}, tuple(sorted(chunks)))
            )
            g1.add_node(eid, type="N", weight=entity_weight.get(eid, 1))
            g1.add_edge(sid, eid, weight=float(len(chunks)))
        for rid, per_chunk in rel_statements.items():
            merged = dict(existing[rid].data.get("statements", {})) if rid in existing else {}
            merged.update(per_chunk)
            texts = list(dict.fromkeys(t for chunk in sorted(merged) for t in merged[chunk]))
            text = "; ".join(texts)
            out.relationships[rid] = text
            a, b = rel_ends[rid]
            out.update.nodes.append(
                Node(
                    rid,
                    NodeKind.RELATIONSHIP,
                    None,
                    text,
                    {"statements": merged, "ends": [a, b], "weight": len(merged)},
                    tuple(sorted(per_chunk)),
                )
            )
            for end in (a, b):
                out.update.edges.append(
                    Edge(rid, end, EdgeKind.RELATIONSHIP_END, 1.0, {}, tuple(sorted(per_chunk)))
                )
                g1.add_node(end, type="N", weight=entity_weight.get(end, 1))
                g1.add_edge(rid, end, weight=1.0)
            g1.nodes[rid]["type"] = "R"
            g1.nodes[rid]["weight"] = len(merged)
        if self.link_relationships_to_units:
            for (rid, sid), chunks in rel_units.items():
                out.update.edges.append(
                    Edge(sid, rid, EdgeKind.UNIT_RELATIONSHIP, 1.0, {}, tuple(sorted(chunks)))
                )
                g1.add_edge(sid, rid, weight=1.0)
        for chunk, sid in sorted(text_edges):
            out.update.edges.append(Edge(chunk, sid, EdgeKind.TEXT, 1.0, {}, (chunk,)))
        out.g1 = g1
        return out

    def write(self, update: GraphUpdate) -> None:
        self.write_nodes_edges(update.nodes, update.edges)

    def write_nodes_edges(self, nodes: Sequence[Node], edges: Sequence[Edge]) -> None:
        """Upsert nodes and edges in one transaction."""
        with self.store.transaction():
            self.store.upsert_nodes(nodes)
            self.store.upsert_edges(edges)
