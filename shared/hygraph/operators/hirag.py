"""HiRetrieval operators (spec 001 §4): local entities across layers, their communities'
reports, bridge paths between communities, and the source chunks of the entities.

* ``hirag.entities`` (Eq. 12): the question's nearest entities of every layer, base
  entities from the shared ``entities`` collection and summary entities from
  ``hirag_entities``, merged by cosine; hits at or below ``threshold`` (0.2) are
  dropped, ``pool`` (10·n) form the candidate list, the first ``k`` (n = 20) are the
  local entities.
* ``hirag.communities`` (Eq. 13): the HiRAG communities (levels ≤ 2) holding the local
  entities, ranked by how many they hold, then by report rating, cut at the report
  budget (12,500 tokens); their reports are the global knowledge.
* ``hirag.bridge`` (Eqs. 14-16): per kept community its ``m`` key entities (the first
  ``m`` candidates inside it, or all members by similarity), deduplicated in order;
  one walk chains unweighted shortest paths (breadth-first, on the undirected
  multi-layer graph, inter-layer edges included) between consecutive key entities,
  skipping a disconnected one; every edge among the walk's nodes is a bridge triple,
  ranked by the endpoints' degree sum, then weight, and cut at 12,500 tokens.
  ``mode="onehop"`` is the authors' w/o-Bridge variant (the edges of the local
  entities, same ranking); ``mode="none"`` drops the section.
* ``hirag.local``: the local entities as evidence (description, or relation statements
  when the extraction wrote none; summary entities their description).
* ``hirag.sources`` (authors' code, spec §9 #18): the source chunks of the local
  entities, in entity order, and within an entity by how many of its neighbours the
  chunk also mentions; summary entities have none.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.layers.hirag import ENTITY_COLLECTION, HIRAG_EDGES, SUMMARY_COLLECTION
from hygraph.operators.community import rank_by_members, report_evidence
from hygraph.operators.registry import operator
from hygraph.operators.state import Scored
from hygraph.retrieval.evidence import Evidence

if TYPE_CHECKING:
    from hygraph.graph.store import Edge
    from hygraph.graph.view import WalkGraph
    from hygraph.operators.state import State
    from hygraph.resources import Resources

BRIDGE_MODES = ("paths", "onehop", "none")
KEY_SCOPES = ("candidate_pool", "full_community")
STATEMENTS_SHOWN = 3  # ours: relation statements shown for an entity with no description


def _count(text: str) -> int:
    from hygraph.ingest.tokenizer import default_tokenizer

    return default_tokenizer().count(text)


def _within(items: list[Evidence], budget: int) -> list[Evidence]:
    """The first items whose texts fit ``budget`` tokens (``fit_budget``'s cut)."""
    from hygraph.retrieval.budget import fit_budget

    return fit_budget(items, budget, lambda item: _count(item.text))


@operator("hirag.entities", needs=("entity-vectors", "hirag"))
def entities(
    res: Resources, state: State, *, k: int = 20, pool: int = 200, threshold: float = 0.2
) -> None:
    """Entities of every layer nearest to the question (Eq. 12); the candidates are kept."""
    query = state.query_vector(res)
    hits = [*res.search_vectors(ENTITY_COLLECTION, query, pool),
            *res.search_vectors(SUMMARY_COLLECTION, query, pool)]  # fmt: skip
    best: dict[str, float] = {}
    for hit in hits:
        if hit.score > threshold:
            best[hit.id] = max(best.get(hit.id, hit.score), hit.score)
    ranked = sorted(best.items(), key=lambda h: (-h[1], h[0]))[:pool]
    state.subgraph["candidates"] = ranked
    state.nodes = [Scored(i, s, cosine=s) for i, s in ranked[:k]]


@operator("hirag.communities", needs=("hirag",))
def communities(
    res: Resources, state: State, *, max_level: int = 2, budget: int = 12500,
    into: str = "reports",
) -> None:  # fmt: skip
    """Reports of the communities holding the local entities (Eq. 13), ranked and cut."""
    ranked = rank_by_members(res, state, (h.id for h in state.nodes), EdgeKind.HI_IN_COMMUNITY,
                             max_level=max_level, by_rating=True)  # fmt: skip
    items = _within(report_evidence(res, ranked), budget)
    kept = {i.id for i in items}
    state.communities = [c for c in ranked if c.id in kept]
    state.evidence[into] = items


def _key_entities(res: Resources, state: State, m: int, scope: str) -> list[str]:
    """Eq. 14: the ``m`` most question-related members of each kept community, in order."""
    candidates = [i for i, _ in state.subgraph.get("candidates", [])]
    if not state.communities:
        return candidates[:m]
    members = state.view(res).links(EdgeKind.HI_IN_COMMUNITY).into
    keys: list[str] = []
    for community in state.communities:
        inside = members.get(community.id, [])
        if scope == "full_community":
            chosen = _by_similarity(res, state, inside)[:m]
        else:
            allowed = set(inside)
            chosen = [c for c in candidates if c in allowed][:m]
        keys += chosen
    return list(dict.fromkeys(keys))


def _by_similarity(res: Resources, state: State, ids: Sequence[str]) -> list[str]:
    query = state.query_vector(res)
    stored = {**res.stored_vectors(ENTITY_COLLECTION, list(ids)),
              **res.stored_vectors(SUMMARY_COLLECTION, list(ids))}  # fmt: skip
    scored = [(i, float(np.dot(stored[i], query))) for i in ids if i in stored]
    return [i for i, _ in sorted(scored, key=lambda s: (-s[1], s[0]))]


def shortest_path(graph: WalkGraph, source: str, target: str) -> list[str]:
    """Node ids of an unweighted shortest path (breadth-first), [] when none."""
    from scipy.sparse.csgraph import breadth_first_order

    if source not in graph.position or target not in graph.position:
        return []
    if source == target:
        return [source]
    start, goal = graph.position[source], graph.position[target]
    _, parents = breadth_first_order(graph.adjacency, start, directed=True,
                                     return_predecessors=True)  # fmt: skip
    if parents[goal] < 0:
        return []
    path = [goal]
    while path[-1] != start:
        path.append(int(parents[path[-1]]))
    return [graph.ids[i] for i in reversed(path)]


def chained_walk(graph: WalkGraph, keys: Sequence[str]) -> list[str]:
    """Eq. 15: shortest paths chained through ``keys`` in order; a disconnected key is
    appended and the walk goes on from it."""
    walk: list[str] = []
    for key in keys:
        if not walk:
            walk.append(key)
            continue
        path = shortest_path(graph, walk[-1], key)
        walk.extend(path[1:] if path else [key])
    return walk


def _edges_between(res: Resources, pairs: Sequence[tuple[str, str]]) -> list[Edge]:
    """The stored multi-layer edges joining each pair, either direction."""
    keys = [(a, b, kind) for u, v in pairs for kind in HIRAG_EDGES for a, b in ((u, v), (v, u))]
    return list(res.store.get_edges(keys).values())


def _triples(res: Resources, graph: WalkGraph, pairs: list[tuple[str, str]]) -> list[Evidence]:
    """Bridge triples as evidence, ranked by (degree sum, weight) (spec §4.3)."""
    from hygraph.layers.community_reports import edge_text

    edges = _edges_between(res, pairs)
    names = {i: (n.name or i) for i, n in res.store.get_nodes(
        {x for e in edges for x in (e.src, e.dst)}).items()}  # fmt: skip
    indptr = graph.adjacency.indptr

    def degree(node: str) -> int:
        i = graph.position.get(node)
        return 0 if i is None else int(indptr[i + 1] - indptr[i])

    out = []
    for e in edges:
        label, description = edge_text(e)
        src, dst = names.get(e.src, e.src), names.get(e.dst, e.dst)
        head = f"{src} — {label or 'related to'} — {dst}"
        rank = degree(e.src) + degree(e.dst)
        meta = {"members": [src, dst], "member_ids": [e.src, e.dst], "kind": str(e.kind),
                "rank": rank, "weight": e.weight}  # fmt: skip
        sources = tuple(e.data.get("entries", {}))
        out.append(Evidence("relationship", f"{head}: {description}" if description else head,
                            float(rank), sources, id=f"{e.src}|{e.dst}|{e.kind}",
                            metadata=meta))  # fmt: skip
    out.sort(key=lambda ev: (-ev.metadata["rank"], -ev.metadata["weight"], ev.id or ""))
    return out


@operator("hirag.bridge", needs=("hirag",))
def bridge(
    res: Resources, state: State, *, m: int = 10, budget: int = 12500,
    scope: str = "candidate_pool", mode: str = "paths", into: str = "bridge",
) -> None:  # fmt: skip
    """Bridge triples between the kept communities (Eqs. 14-16; see the module docstring)."""
    from hygraph.errors import ConfigError

    if mode not in BRIDGE_MODES:
        raise ConfigError(f"hirag.bridge: mode must be one of {', '.join(BRIDGE_MODES)}")
    if scope not in KEY_SCOPES:
        raise ConfigError(f"hirag.bridge: scope must be one of {', '.join(KEY_SCOPES)}")
    if mode == "none":
        state.evidence[into] = []
        return
    graph = state.view(res).walk_graph(HIRAG_EDGES, weighted=False)
    if mode == "onehop":
        ends = [h.id for h in state.nodes]
        pairs = [(u, v) for u in ends for v in graph.neighbours(u) if u != v]
    else:
        walk = chained_walk(graph, _key_entities(res, state, m, scope))
        on_walk = set(walk)
        state.subgraph["bridge_walk"] = walk
        pairs = [(u, v) for u in on_walk for v in graph.neighbours(u) if v in on_walk and u < v]
    pairs = list(dict.fromkeys(tuple(sorted(p)) for p in pairs))
    state.evidence[into] = _within(_triples(res, graph, pairs), budget)


def _statements(res: Resources, node_id: str, names: dict[str, str]) -> list[str]:
    """Up to a few relation statements of an entity (for entities with no description)."""
    from hygraph.layers.community_reports import edge_text

    out: list[str] = []
    for e in res.store.edges_of(node_id, EdgeKind.RELATION):
        label, description = edge_text(e)
        text = description or f"{names.get(e.src, e.src)} {label} {names.get(e.dst, e.dst)}"
        if text not in out:
            out.append(text)
        if len(out) >= STATEMENTS_SHOWN:
            break
    return out


@operator("hirag.local", needs=("hirag",))
def local(res: Resources, state: State, *, into: str = "entities") -> None:
    """The local entities as evidence, most similar first (layer and degree in metadata)."""
    graph = state.view(res).walk_graph(HIRAG_EDGES, weighted=False)
    nodes = res.store.get_nodes(h.id for h in state.nodes)
    out = []
    for hit in state.nodes:
        node = nodes.get(hit.id)
        if node is None:
            continue
        etype = str(node.data.get("type") or "")
        head = f"{node.name} ({etype})" if etype and etype != "entity" else str(node.name)
        text = node.text or ""
        if not text and node.kind == NodeKind.ENTITY:
            text = " ".join(_statements(res, node.id, {node.id: node.name or node.id}))
        layer = int(node.data.get("level", 0)) if node.kind == NodeKind.HI_SUMMARY else 0
        meta: dict[str, Any] = {"name": node.name, "type": etype, "layer": layer,
                                "degree": len(graph.neighbours(node.id))}  # fmt: skip
        out.append(Evidence("entity", f"{head}: {text}" if text else head, hit.value,
                            tuple(node.sources), id=node.id, metadata=meta))  # fmt: skip
    state.evidence[into] = out


@operator("hirag.sources", needs=("hirag",))
def sources(
    res: Resources, state: State, *, k: int = 10, budget: int = 20000, enabled: bool = True,
    into: str = "chunks",
) -> None:  # fmt: skip
    """Source chunks of the local entities (authors' code; see the module docstring)."""
    if not enabled:
        state.evidence[into] = []
        return
    view = state.view(res)
    provenance = view.provenance(NodeKind.ENTITY)
    relations = view.walk_graph([EdgeKind.RELATION], weighted=False)
    ranked: list[str] = []
    for hit in state.nodes:
        chunks = provenance.get(hit.id, [])
        if not chunks:
            continue
        counts = dict.fromkeys(chunks, 0)
        for other in relations.neighbours(hit.id):
            for c in provenance.get(other, []):
                if c in counts:
                    counts[c] += 1
        order = sorted(chunks, key=lambda c: (-counts[c], chunks.index(c)))
        ranked += [c for c in order if c not in ranked]
        if k > 0 and len(ranked) >= k:
            break
    if k > 0:
        ranked = ranked[:k]
    items = res.chunk_evidence([(c, 1.0 / (n + 1)) for n, c in enumerate(ranked)])
    state.evidence[into] = _within(items, budget)
