"""HyGRAG operators: bi-level retrieval and the four-part context (spec 000 §4–5).

* ``hygrag.context`` (context-aware): one pool of summaries (every layer) and chunks,
  the ``k`` best of it with at most ``community_cap`` summaries (max(1, k // 5), the
  authors' code; ``pool="separate"`` takes k of each, the paper's eqs. 14–15), and the
  entities nearest to the question by their text vectors (``entity_fetch`` × k searched,
  ``entity_pool`` × k kept; spec A8, A13);
* ``hygrag.relations`` (relation-aware): the entity members of the picked summaries
  join the retrieved entities (direct members by default, spec A11), the best
  ``entity_cap`` × k of them by cosine seed the candidate triples (every relation with
  one end among them, eq. 18's OR), and the ``k`` triples nearest to the question are
  kept. Triples are scored with the ``relation-vectors`` layer's precomputed vectors
  (spec A14's "precompute them"; text ``"head label tail: descriptions"``);
* ``hygrag.evidence``: the four evidence lists, communities (highest layer first),
  entities (the k best direct hits), key relationships and documents, with the
  reference code's length limits (summary 3,000 characters, entity description 150,
  relation description 100).

Each item's source chunks are ordered by their cosine to the question, so the passage
ranking a method reads from the evidence (``merge.context``'s ``ranking``) puts the
most relevant chunk of each item first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hygraph.errors import ConfigError
from hygraph.graph.kinds import EdgeKind
from hygraph.operators.registry import operator
from hygraph.operators.state import Scored
from hygraph.retrieval.evidence import Evidence

if TYPE_CHECKING:
    from hygraph.operators.state import State
    from hygraph.resources import Resources

HY_COLLECTION = "hygrag"  # the hygrag layer's collection (summaries of every layer)
ENTITY_COLLECTION = "entities"  # the entity-vectors layer's collection
RELATION_COLLECTION = "relations"  # the relation-vectors layer's collection
CHUNK_COLLECTION = "chunks"
POOLS = ("joint", "separate")
EXPANSIONS = ("children", "descendants")
#: Sources of one item that are ranked by cosine (the rest follow in stored order).
RANKED_SOURCES = 200


@operator("hygrag.context", needs=("hygrag", "entity-vectors"))
def context(
    res: Resources,
    state: State,
    *,
    k: int = 5,
    community_cap: int = 0,
    pool: str = "joint",
    entity_fetch: int = 5,
    entity_pool: int = 3,
    communities: bool = True,
    chunks: bool = True,
) -> None:
    """Context-aware retrieval: summaries and chunks from one pool, and entities.

    The pool gives ``k`` items with at most ``community_cap`` summaries (0: max(1, k //
    5)); the ``entity_pool`` × k nearest entities of ``entity_fetch`` × k searched are
    kept. ``communities`` / ``chunks`` False leave that kind out (the paper's ablations).
    """
    if pool not in POOLS:
        raise ConfigError(f"hygrag pool must be one of {', '.join(POOLS)}")
    query = state.query_vector(res)
    cap = community_cap or max(1, k // 5)
    found_chunks = res.search_chunks(query, k) if chunks else []
    found = res.search_vectors(HY_COLLECTION, query, k) if communities else []
    nodes = res.store.get_nodes(h.id for h in found)
    found = [h for h in found if h.id in nodes]  # a point whose summary is gone is skipped
    if pool == "separate":
        picked, kept = found[:k], found_chunks[:k]
    else:
        if not chunks:
            cap = k
        picked, kept = [], []
        ranked = sorted([(h.score, 0, h) for h in found] + [(h.score, 1, h) for h in found_chunks],
                        key=lambda x: (-x[0], x[1], x[2].id))  # fmt: skip
        for _, is_chunk, hit in ranked:
            if len(picked) + len(kept) >= k:
                break
            if not is_chunk and len(picked) < cap:
                picked.append(hit)
            elif is_chunk:
                kept.append(hit)
    state.communities = [
        Scored(h.id, h.score, cosine=h.score, data={"level": int(nodes[h.id].data.get("level", 1))})
        for h in picked
    ]
    state.chunks = [(h.id, h.score) for h in kept]
    hits = res.search_vectors(ENTITY_COLLECTION, query, entity_fetch * k)[: entity_pool * k]
    state.nodes = [Scored(h.id, h.score, cosine=h.score) for h in hits]


def _members(res: Resources, state: State, expansion: str) -> list[str]:
    """Entity members of the picked summaries: direct ones, or every entity below them."""
    links = state.view(res).links(EdgeKind.HY_MEMBER).out
    found: list[str] = []
    todo = [c.id for c in state.communities]
    seen: set[str] = set()
    while todo:
        node_id = todo.pop(0)
        for member in links.get(node_id, []):
            if member.startswith("ent:"):
                found.append(member)
            elif expansion == "descendants" and member.startswith("hy:") and member not in seen:
                seen.add(member)
                todo.append(member)
    return list(dict.fromkeys(found))


@operator("hygrag.relations", needs=("hygrag", "relation-vectors"))
def relations(
    res: Resources,
    state: State,
    *,
    k: int = 5,
    entity_cap: int = 5,
    expansion: str = "children",
) -> None:
    """Relation-aware retrieval: the ``k`` triples nearest to the question.

    Candidates touch the retrieved entities widened by the picked summaries' entity
    members (the best ``entity_cap`` × k of them by cosine).
    """
    if expansion not in EXPANSIONS:
        raise ConfigError(f"hygrag expansion must be one of {', '.join(EXPANSIONS)}")
    query = state.query_vector(res)
    scores = {h.id: h.cosine for h in state.nodes}
    extra = [m for m in _members(res, state, expansion) if m not in scores]
    if extra:
        hits = res.search_vectors(ENTITY_COLLECTION, query, len(extra), ids=extra)
        scores.update({h.id: h.score for h in hits})
    pool = sorted(scores, key=lambda e: (-scores[e], e))[: entity_cap * k]
    links = state.view(res).links(EdgeKind.RELATION)
    candidates: list[str] = []
    for entity in pool:
        candidates += [f"{entity}|{other}" for other in links.out.get(entity, [])]
        candidates += [f"{other}|{entity}" for other in links.into.get(entity, [])]
    candidates = list(dict.fromkeys(candidates))
    hits = res.search_vectors(RELATION_COLLECTION, query, k, ids=candidates) if candidates else []
    state.relationships = [
        Scored(h.id, h.score, cosine=h.score,
               data={"kind": EdgeKind.RELATION, "members": tuple(h.id.split("|", 1))})
        for h in hits
    ]  # fmt: skip


def _cut(text: str, chars: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= chars else text[: max(0, chars - 1)].rstrip() + "…"


def _ranked_sources(res: Resources, query: np.ndarray, items: list[list[str]]) -> list[list[str]]:
    """Each item's sources, the first ``RANKED_SOURCES`` ordered by cosine to the question."""
    wanted = list(dict.fromkeys(c for sources in items for c in sources[:RANKED_SOURCES]))
    vectors = res.stored_vectors(CHUNK_COLLECTION, wanted)
    q = np.asarray(query, dtype=np.float32)
    cosine = {c: float(v @ q) for c, v in vectors.items()}
    out = []
    for sources in items:
        head = sorted(sources[:RANKED_SOURCES], key=lambda c: -cosine.get(c, -2.0))
        out.append([*head, *sources[RANKED_SOURCES:]])
    return out


@operator("hygrag.evidence", needs=("hygrag",))
def evidence(
    res: Resources,
    state: State,
    *,
    k: int = 5,
    summary_chars: int = 3000,
    description_chars: int = 150,
    relation_chars: int = 100,
    entities: bool = True,
) -> None:
    """The four evidence lists: communities, entities, relations and chunks.

    ``entities`` False leaves the entity and relation lists empty (the paper's "w/o
    entity & relation" ablation).
    """
    query = state.query_vector(res)
    comms = sorted(state.communities, key=lambda c: (-c.data.get("level", 1), -c.value, c.id))
    shown = sorted(state.nodes, key=lambda h: (-h.cosine, h.id))[:k] if entities else []
    rels = state.relationships if entities else []
    members = [m for r in rels for m in r.data.get("members", ())]
    nodes = res.store.get_nodes([*(c.id for c in comms), *(h.id for h in shown), *members])
    edges = res.store.get_edges((*r.data["members"], EdgeKind.RELATION) for r in rels)
    items: list[tuple[str, Evidence]] = []
    for c in comms:
        node = nodes.get(c.id)
        if node is None:
            continue
        level, size = node.data.get("level", 1), node.data.get("size", 0)
        text = (f"Layer {level} community ({size} members) [score {c.value:.3f}]: "
                f"{_cut(node.text or '', summary_chars)}")  # fmt: skip
        meta = {"level": level, "size": size}
        items.append(("communities", Evidence("community", text, c.value, tuple(node.sources),
                                              id=c.id, metadata=meta)))  # fmt: skip
    for hit in shown:
        node = nodes.get(hit.id)
        if node is None:
            continue
        etype = node.data.get("type", "")
        head = f"{node.name} ({etype})" if etype and etype != "entity" else str(node.name)
        desc = _cut(node.text or "", description_chars)
        text = f"{head} [score {hit.cosine:.3f}]" + (f": {desc}" if desc else "")
        meta = {"name": node.name, "type": etype}
        items.append(("entities", Evidence("entity", text, hit.cosine, tuple(node.sources),
                                           id=hit.id, metadata=meta)))  # fmt: skip
    for r in rels:
        src, dst = r.data["members"]
        edge = edges.get((src, dst, EdgeKind.RELATION))
        if edge is None:
            continue
        names = [nodes[m].name if m in nodes else m for m in (src, dst)]
        label = edge.data.get("label") or "related to"
        entries = edge.data.get("entries", {})
        descs = [e[1] for items_ in entries.values() for e in items_ if len(e) > 1 and e[1]]
        text = f"{names[0]} --[{label}]--> {names[1]} [score {r.cosine:.3f}]"
        if descs:
            text += f"\n    context: {_cut(descs[0], relation_chars)}"
        meta = {"members": names, "label": label, "kind": EdgeKind.RELATION}
        items.append(("relations", Evidence("relationship", text, r.cosine, tuple(entries),
                                            id=r.id, metadata=meta)))  # fmt: skip
    ranked = _ranked_sources(res, query, [list(item.source_ids) for _, item in items])
    lists: dict[str, list[Evidence]] = {"communities": [], "entities": [], "relations": []}
    for (name, item), sources in zip(items, ranked, strict=True):
        item.source_ids = tuple(sources)
        lists[name].append(item)
    lists["chunks"] = res.chunk_evidence(state.chunks)
    for item in lists["chunks"]:
        item.text = f"[score {item.score:.3f}] {item.text}"
    state.evidence.update(lists)
