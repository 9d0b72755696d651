"""HyGRAG's hybrid graph: chunk and entity leaves, their edges, Cleora input, summary input.

The hybrid graph (spec 000 §2.2, §3.3) has chunk and entity nodes and three edge
types. Two of them are the shared entity graph's: ``mentions`` (chunk - entity, the
paper's "belongs to") and ``relation`` (entity - entity, one per extracted triple
pair). The third is this layer's: ``hy_shared`` joins two chunks that share at least
``min_shared_entities`` entities (l = 3, inclusive as in the authors' code; the
paper's strict ``> l`` is ``min_shared_entities=4``), weighted by the count.

This module also reads what the summariser is given for a group of leaves (the
passages, entity lines and the relations among the group's entities, spec §3.6),
cut to an input budget (spec A17: relations are kept first).
"""

from __future__ import annotations

import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from hygraph.extract.schema import DEFAULT_TYPE
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import Edge
from hygraph.layers.entity_vectors import ENTITY_COLLECTION
from hygraph.resources import CHUNK_COLLECTION

if TYPE_CHECKING:
    from hygraph.resources import Resources

HY_COLLECTION = "hygrag"  # vectors of the summary nodes, every layer (payload kind per layer)
LAYER_TASK = "layer:hygrag"
STATE_KEY = "layer:hygrag:state"
PLAN_KEY = "layer:hygrag:plan"
SUMMARY_PREFIX = "hy:"
CHARS_PER_TOKEN = 4  # rough size of a token, for input budgets (ours)
PASSAGE_TOKENS = 1200  # one passage in a summary prompt at most (spec A17)
ENTITY_DESCRIPTION_CHARS = 300  # an entity's description in a summary prompt (ours)


def summary_id(level: int, members: Iterable[str]) -> str:
    """The id of a summary node: its layer and a hash of the members it was made from."""
    digest = hashlib.sha256("\n".join([str(level), *sorted(members)]).encode()).hexdigest()
    return f"{SUMMARY_PREFIX}{level}:{digest[:16]}"


def level_kind(level: int) -> str:
    """The payload kind of a layer's summary vectors (searches filter a layer by it)."""
    return f"hy_level{level}"


def is_summary(node_id: str) -> bool:
    return node_id.startswith(SUMMARY_PREFIX)


def is_entity(node_id: str) -> bool:
    return node_id.startswith("ent:")


# --------------------------------------------------------------------------- hybrid graph


def link_chunks(
    res: Resources, chunk_ids: Sequence[str], *, min_shared: int, hub_chunks: int = 0
) -> int:
    """Write ``hy_shared`` edges for every chunk pair with a member in ``chunk_ids``.

    Two chunks are linked when they mention at least ``min_shared`` common entities;
    entities mentioned in more than ``hub_chunks`` chunks are not counted (0: all are).
    Edges are upserts keyed by the ordered pair, so repeating a call changes nothing.
    Returns how many edges were written.
    """
    from hygraph.layers.passage_graph import mention_index

    by_chunk, by_entity = mention_index(res)
    new = set(chunk_ids)
    counts: Counter[tuple[str, str]] = Counter()
    for chunk in new:
        for entity in by_chunk.get(chunk, ()):
            others = by_entity[entity]
            if hub_chunks and len(others) > hub_chunks:
                continue
            for other in others:
                if other == chunk or (other in new and other < chunk):
                    continue  # a pair of two new chunks is counted from its smaller id
                counts[(chunk, other) if chunk < other else (other, chunk)] += 1
    edges = [
        Edge(a, b, EdgeKind.HY_SHARED, float(n), sources=(a, b))
        for (a, b), n in sorted(counts.items())
        if n >= min_shared
    ]
    if edges:
        res.store.upsert_edges(edges)
    return len(edges)


@dataclass
class Leaves:
    """The leaves of a build: chunks, then entities, and each entity's chunks."""

    chunks: list[str]
    entities: list[str]
    entity_chunks: dict[str, list[str]] = field(default_factory=dict)

    @property
    def ids(self) -> list[str]:
        return [*self.chunks, *self.entities]


def leaves_of(res: Resources, chunk_ids: Sequence[str]) -> Leaves:
    """The chunks given and every entity mentioned in one of them (ids sorted)."""
    wanted = set(chunk_ids)
    entity_chunks: dict[str, list[str]] = defaultdict(list)
    for node_id, chunk in res.store.provenance_of_kind(NodeKind.ENTITY):
        if chunk in wanted:
            entity_chunks[node_id].append(chunk)
    return Leaves(list(chunk_ids), sorted(entity_chunks), dict(entity_chunks))


def leaf_vectors(res: Resources, chunk_ids: Sequence[str], entity_ids: Sequence[str]) -> np.ndarray:
    """Text vectors of chunks (the chunk collection) and entities (the entity collection),
    in order; a leaf without a stored vector is embedded here (chunk text, entity name)."""
    chunks = res.stored_vectors(CHUNK_COLLECTION, list(chunk_ids))
    entities = res.stored_vectors(ENTITY_COLLECTION, list(entity_ids))
    missing_chunks = [c for c in chunk_ids if c not in chunks]
    if missing_chunks:
        texts = res.chunk_texts(missing_chunks)
        vectors = res.embedder.embed([texts.get(c, "") for c in missing_chunks])
        chunks.update(zip(missing_chunks, np.asarray(vectors), strict=True))
    missing_entities = [e for e in entity_ids if e not in entities]
    if missing_entities:
        nodes = res.store.get_nodes(missing_entities)
        names = [(nodes[e].name or e[4:]) if e in nodes else e[4:] for e in missing_entities]
        vectors = res.embedder.embed(names)
        entities.update(zip(missing_entities, np.asarray(vectors), strict=True))
    rows = [chunks[c] for c in chunk_ids] + [entities[e] for e in entity_ids]
    dim = int(res.embedder.dim)
    return np.vstack(rows).astype(np.float32) if rows else np.zeros((0, dim), np.float32)


def hybrid_edges(res: Resources, ids: Sequence[str]) -> list[tuple[int, int, float]]:
    """``(i, j, weight)`` positions in ``ids`` of every hybrid-graph edge among them."""
    position = {node_id: n for n, node_id in enumerate(ids)}
    kinds = [EdgeKind.MENTION, EdgeKind.RELATION, EdgeKind.HY_SHARED]
    return [
        (position[s], position[d], w)
        for s, d, w in res.store.edge_rows(kinds)
        if s in position and d in position
    ]


# --------------------------------------------------------------------------- summary input


@dataclass
class GroupContent:
    """What a layer-1 group is summarised from (spec §3.6)."""

    passages: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    relations: list[str] = field(default_factory=list)
    sentences: list[str] = field(default_factory=list)
    """The relations written as sentences (what an extractive summary can pick)."""

    def texts(self) -> list[str]:
        """The texts an extractive summary picks from: passages, relations, entities."""
        return [*self.passages, *self.sentences, *self.entities]


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: max(0, chars - 1)].rstrip() + "…"


def fit(content: GroupContent, budget_tokens: int) -> GroupContent:
    """``content`` cut to about ``budget_tokens``: relations keep up to a third of the room,
    entities a sixth, passages (each at most 1,200 tokens) the rest, in order."""
    room = budget_tokens * CHARS_PER_TOKEN

    def take(lines: list[str], chars: int, each: int) -> list[str]:
        out: list[str] = []
        for line in lines:
            line = _cut(line, each)
            if chars - len(line) < 0:
                break
            out.append(line)
            chars -= len(line)
        return out

    relations = take(content.relations, room // 3, room)
    entities = take(content.entities, room // 6, room)
    left = room - sum(map(len, relations)) - sum(map(len, entities))
    passages = take(content.passages, left, PASSAGE_TOKENS * CHARS_PER_TOKEN)
    if not passages and content.passages and left > 0:  # one passage, cut to what is left
        passages = [_cut(content.passages[0], left)]
    return GroupContent(passages, entities, relations, content.sentences)


def fit_texts(texts: Sequence[str], budget_tokens: int) -> list[str]:
    """Child summaries cut to about ``budget_tokens`` in all (each shortened evenly)."""
    if not texts:
        return []
    each = max(200, budget_tokens * CHARS_PER_TOKEN // len(texts))
    return [_cut(t, each) for t in texts]


class ContentReader:
    """Reads the summary input of groups of leaves; relations are preloaded when given."""

    def __init__(self, res: Resources, *, preload_relations: bool = False):
        self.res = res
        self._relations: dict[str, list[tuple[str, str]]] | None = None
        if preload_relations:
            self._relations = defaultdict(list)
            for edge in res.store.iter_edges(EdgeKind.RELATION):
                self._relations[edge.src].append((edge.dst, edge.data.get("label") or ""))

    def _relations_from(self, entity_id: str) -> list[tuple[str, str]]:
        if self._relations is not None:
            return self._relations.get(entity_id, [])
        return [
            (e.dst, e.data.get("label") or "")
            for e in self.res.store.edges_of(entity_id, EdgeKind.RELATION)
            if e.src == entity_id
        ]

    def contents(self, groups: Sequence[Sequence[str]]) -> list[GroupContent]:
        """One :class:`GroupContent` per group of leaf ids (chunks and entities)."""
        chunk_ids = [m for g in groups for m in g if not is_entity(m) and not is_summary(m)]
        entity_ids = [m for g in groups for m in g if is_entity(m)]
        texts = self.res.chunk_texts(chunk_ids)
        nodes = self.res.store.get_nodes(entity_ids)
        out = []
        for group in groups:
            content = GroupContent()
            members = [m for m in group if is_entity(m) and m in nodes]
            inside = set(members)
            for member in group:
                if member in texts:
                    content.passages.append(texts[member])
            for eid in members:
                node = nodes[eid]
                etype = node.data.get("type", "")
                head = f"{node.name} ({etype})" if etype and etype != DEFAULT_TYPE else node.name
                desc = " ".join((node.text or "").split())
                line = f"{head}: {_cut(desc, ENTITY_DESCRIPTION_CHARS)}" if desc else str(head)
                content.entities.append(line)
            seen: set[tuple[str, str, str]] = set()
            for eid in members:
                for other, label in self._relations_from(eid):
                    if other not in inside or (eid, label, other) in seen:
                        continue
                    seen.add((eid, label, other))
                    head, tail = nodes[eid].name or eid, nodes[other].name or other
                    content.relations.append(f"{head} --[{label or 'related to'}]--> {tail}")
                    content.sentences.append(f"{head} {label or 'is related to'} {tail}.")
            out.append(content)
        return out

    def chunk_relations(self, chunk_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """Relations extracted from ``chunk_ids`` (the triples of new material, spec §6.1):
        ``(arrow lines, sentences)``, each relation once, in chunk order."""
        wanted = set(chunk_ids)
        found = self.res.store.edges_from_sources(chunk_ids)
        keys = sorted(k for k in found if k[2] == EdgeKind.RELATION)
        edges = self.res.store.get_edges(keys)
        ends = self.res.store.get_nodes({k[0] for k in keys} | {k[1] for k in keys})
        names = {i: (n.name or i) for i, n in ends.items()}
        lines, sentences = [], []
        for key in keys:
            edge = edges.get(key)
            if edge is None or not wanted & set(edge.data.get("entries", {})):
                continue
            head, tail = names.get(edge.src, edge.src), names.get(edge.dst, edge.dst)
            label = edge.data.get("label") or "related to"
            lines.append(f"{head} --[{label}]--> {tail}")
            sentences.append(f"{head} {label} {tail}.")
        return lines, sentences
