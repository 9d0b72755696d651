"""The graph a person can look at: what a method used for a question, or what surrounds an
entity, as nodes and edges with kinds, labels and source chunks, bounded in size.

Built from what the method itself kept in its state (seed entities, scored nodes, scored
relationships, communities or summaries, the ranked chunks), never from a second
retrieval; the store only adds names, labels and the mention edges between the chunks
and entities already chosen. The shape is what a drawing library reads: ``nodes`` with
``id``, ``kind``, ``label``, ``score`` and ``role``; ``edges`` with ``source``,
``target``, ``kind``, ``label`` and ``weight``; ``truncated`` when the limit cut it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import GraphStore

#: Default bound on the nodes of one drawing (entities and other graph nodes; chunks apart).
NODE_LIMIT = 60
#: Characters of a chunk's text kept as its label.
SNIPPET = 90


def _snippet(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= SNIPPET else text[: SNIPPET - 1].rstrip() + "…"


def evidence_graph(
    store: GraphStore,
    *,
    seeds: dict[str, float],
    nodes: Sequence[tuple[str, float]],
    relationships: Sequence[tuple[str, str, float]],
    communities: Sequence[tuple[str, float]],
    chunks: Sequence[tuple[str, float]],
    limit: int = NODE_LIMIT,
) -> dict[str, Any]:
    """The evidence a method used, as a drawable graph (see the module docstring).

    ``relationships`` are ``(source, target, score)`` relation edges; ``chunks`` the
    ranked passages ``(chunk id, score)``, all kept; graph nodes (seeds first, then
    scored nodes, relationship ends and communities) stop at ``limit``.
    """
    chosen: dict[str, dict[str, Any]] = {}
    truncated = False

    def add(node_id: str, score: float, role: str) -> bool:
        nonlocal truncated
        if node_id in chosen:
            chosen[node_id]["score"] = max(chosen[node_id]["score"], float(score))
            return True
        if len(chosen) >= limit:
            truncated = True
            return False
        chosen[node_id] = {"id": node_id, "score": float(score), "role": role}
        return True

    for node_id, weight in sorted(seeds.items(), key=lambda kv: -kv[1]):
        add(node_id, weight, "seed")
    for node_id, score in nodes:
        add(node_id, score, "node")
    edges: list[dict[str, Any]] = []
    kept_relations = []
    for src, dst, score in relationships:
        if add(src, 0.0, "fact") and add(dst, 0.0, "fact"):
            kept_relations.append((src, dst, score))
    for node_id, score in communities:
        add(node_id, score, "community")
    found = store.get_nodes(chosen, sources=False)
    out_nodes = []
    for node_id, entry in chosen.items():
        node = found.get(node_id)
        if node is None:
            continue
        out_nodes.append({**entry, "kind": node.kind, "label": node.name or node.id})
    keys = [(s, d, EdgeKind.RELATION) for s, d, _ in kept_relations]
    stored = store.get_edges(keys, entries=False)
    for (src, dst, score), key in zip(kept_relations, keys, strict=True):
        edge = stored.get(key)
        label = str(edge.data.get("label") or "related to") if edge else "related to"
        edges.append({"source": src, "target": dst, "kind": EdgeKind.RELATION, "label": label,
                      "weight": float(score)})  # fmt: skip
    texts = store.get_chunks(c for c, _ in chunks)
    titles = store.document_titles(c.doc_id for c in texts.values())
    for rank, (chunk_id, score) in enumerate(chunks, start=1):
        chunk = texts.get(chunk_id)
        if chunk is None:
            continue
        label = titles.get(chunk.doc_id) or _snippet(chunk.text)
        out_nodes.append({
            "id": chunk_id, "kind": "chunk", "label": label, "score": float(score),
            "role": "passage", "rank": rank, "doc_id": chunk.doc_id, "text": _snippet(chunk.text),
        })  # fmt: skip
    edges.extend(_mentions(store, [c for c, _ in chunks if c in texts], found))
    return {"nodes": out_nodes, "edges": edges, "truncated": truncated}


def state_evidence(store: GraphStore, state: Any, chunk_ids: Sequence[str]) -> dict[str, Any]:
    """:func:`evidence_graph` of what a method's state kept (seeds, scored nodes, relation
    facts, communities) and the passages ``chunk_ids`` it returned, with their scores."""
    scores = dict(state.chunks)
    relationships = [
        (*r.data["members"][:2], r.value) for r in state.relationships
        if r.data.get("kind") == EdgeKind.RELATION and len(r.data.get("members", ())) >= 2
    ]  # fmt: skip
    return evidence_graph(
        store, seeds=dict(state.seeds), nodes=[(n.id, n.value) for n in state.nodes],
        relationships=relationships, communities=[(c.id, c.value) for c in state.communities],
        chunks=[(c, float(scores.get(c, 0.0))) for c in chunk_ids],
    )  # fmt: skip


def _mentions(
    store: GraphStore, chunk_ids: Iterable[str], nodes: dict[str, Any]
) -> list[dict[str, Any]]:
    """Mention edges from the chunks to the chosen entities (where the store has them)."""
    entities = {i for i, n in nodes.items() if n.kind == NodeKind.ENTITY}
    out = []
    for chunk_id in chunk_ids:
        for edge in store.edges_of(chunk_id, EdgeKind.MENTION):
            other = edge.dst if edge.src == chunk_id else edge.src
            if other in entities:
                out.append({"source": chunk_id, "target": other, "kind": EdgeKind.MENTION,
                            "label": "mentions", "weight": float(edge.weight)})  # fmt: skip
    return out


def neighbourhood(
    store: GraphStore, entity_id: str, *, limit: int = NODE_LIMIT, chunk_limit: int = 10
) -> dict[str, Any]:
    """An entity, the entities it is related to (relation and synonym edges, heaviest
    first) and the chunks that mention it, bounded by ``limit`` and ``chunk_limit``."""
    centre = store.get_nodes([entity_id], sources=True).get(entity_id)
    if centre is None:
        return {"nodes": [], "edges": [], "truncated": False}
    related = [e for e in store.edges_of(entity_id) if e.kind in (EdgeKind.RELATION,
                                                                   EdgeKind.SYNONYM)]  # fmt: skip
    related.sort(key=lambda e: -float(e.weight))
    others = []
    for edge in related:
        other = edge.dst if edge.src == entity_id else edge.src
        if other not in others:
            others.append(other)
    truncated = len(others) > limit - 1
    others = others[: max(0, limit - 1)]
    found = store.get_nodes(others, sources=False)
    nodes = [{"id": entity_id, "kind": centre.kind, "label": centre.name or entity_id,
              "score": 1.0, "role": "centre"}]  # fmt: skip
    nodes += [{"id": o, "kind": found[o].kind, "label": found[o].name or o, "score": 0.0,
               "role": "neighbour"} for o in others if o in found]  # fmt: skip
    keep = {n["id"] for n in nodes}
    edges = [
        {"source": e.src, "target": e.dst, "kind": e.kind,
         "label": str(e.data.get("label") or e.kind), "weight": float(e.weight)}
        for e in related if e.src in keep and e.dst in keep
    ]  # fmt: skip
    sources = list(centre.sources)[:chunk_limit]
    truncated = truncated or len(centre.sources) > chunk_limit
    texts = store.get_chunks(sources)
    for chunk_id in sources:
        chunk = texts.get(chunk_id)
        if chunk is None:
            continue
        nodes.append({"id": chunk_id, "kind": "chunk", "label": _snippet(chunk.text),
                      "score": 0.0, "role": "source", "doc_id": chunk.doc_id})  # fmt: skip
        edges.append({"source": chunk_id, "target": entity_id, "kind": EdgeKind.MENTION,
                      "label": "mentions", "weight": 1.0})  # fmt: skip
    return {"nodes": nodes, "edges": edges, "truncated": truncated}
