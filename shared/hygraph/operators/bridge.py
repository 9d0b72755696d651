"""Bridge items: one entity away from the best items, ranked by cosine to the question.

A two-hop question ("who married the singer of X?") names the first hop; the passage
that answers it is about an entity the first passage names and the question does not
(the *bridge*: the singer). Given the best items a method retrieved (HyperGraphRAG's
facts, NodeRAG's units), their member entities that the question does not name are
bridges; the other items of those entities, scored by the cosine of their stored
vectors to the question, lead to the passage the question never names. Entities with
more than ``fanout`` items are hubs (a year, a country) and are skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from hygraph.operators.fusion import reciprocal_rank_fusion
from hygraph.operators.registry import operator

if TYPE_CHECKING:
    from hygraph.operators.state import State
    from hygraph.resources import Resources

FACT_COLLECTION = "facts"  # the hypergraph layer's collection
NODE_COLLECTION = "noderag"  # the heterograph layer's collection


def bridge_items(
    res: Resources,
    collection: str,
    query: Any,
    top: Sequence[str],
    *,
    members_of: Callable[[str], Iterable[str]],
    items_of: Callable[[str], Sequence[str]],
    asked: str,
    fanout: int,
    seen: set[str],
    used: set[str],
) -> list[str]:
    """Items of the bridge entities of ``top`` not in ``seen``, best cosine first.

    ``asked`` is the case-folded question (an entity whose name occurs in it is no
    bridge); ``used`` collects the entities tried, so a later hop skips them.
    """
    bridges = list(dict.fromkeys(e for item in top for e in members_of(item)))
    nodes = res.store.get_nodes(e for e in bridges if e not in used)
    candidates: dict[str, None] = {}
    for entity_id, node in nodes.items():
        used.add(entity_id)
        if (node.name or "").casefold() in asked:
            continue
        items = items_of(entity_id)
        if len(items) <= fanout:
            candidates.update((i, None) for i in items if i not in seen)
    # Cosines of the stored vectors (no re-embedding), best first.
    hits = res.search_vectors(collection, query, len(candidates), ids=list(candidates))
    return [h.id for h in hits]


@operator("chunk.bridge_facts", needs=("hypergraph",))
def bridge_facts(
    res: Resources,
    state: State,
    *,
    top: int = 5,
    fanout: int = 100,
    depth: int = 50,
    hops: int = 1,
    rrf_k: float = 10,
    weights: str = "1+1+1",
) -> None:
    """Chunks by fusing dense retrieval with the retrieved facts and bridge facts (ours).

    The members of the ``top`` best facts that the question does not name are bridges;
    their other facts, by stored-vector cosine, are one hop (``hops`` repeats from the
    best of them). Chunks rank by reciprocal-rank fusion of the dense ranking
    (``depth`` deep), the retrieved facts' chunks and each hop's facts' chunks, with
    ``weights`` (later hops take the last weight).
    """
    from hygraph.graph.hypergraph import Bipartite

    graph = Bipartite(res.store)
    dense = res.search_chunks(state.query_vector(res), depth)
    asked = state.question.casefold()
    hits = [h.id for h in state.relationships]
    seen, used = set(hits), set()
    lists, best = [hits], hits[:top]
    for _ in range(hops):
        ranked = bridge_items(
            res, FACT_COLLECTION, state.query_vector(res), best, members_of=graph.entities_of,
            items_of=graph.hyperedges_of, asked=asked, fanout=fanout, seen=seen, used=used,
        )  # fmt: skip
        if not ranked:
            break
        lists.append(ranked)
        seen.update(ranked)
        best = ranked[:top]
    nodes = res.store.get_nodes(f for fids in lists for f in fids)
    rankings = [[h.id for h in dense]]
    rankings += [list(dict.fromkeys(c for f in fids if f in nodes for c in nodes[f].sources))
                 for fids in lists]  # fmt: skip
    w = [float(x) for x in weights.split("+")]
    w += [w[-1]] * (len(rankings) - len(w))
    state.chunks = reciprocal_rank_fusion(rankings, rrf_k, w[: len(rankings)])
    state.rankings["lead"] = [c for c, _ in state.chunks]


@operator("chunk.bridge_units", needs=("heterograph",))
def bridge_units(
    res: Resources,
    state: State,
    *,
    units: int = 3,
    pool: int = 30,
    fanout: int = 100,
    into: str = "bridge",
) -> None:
    """Chunks of the units one bridge entity away from the best units (ours, NodeRAG).

    The entities of the ``units`` units nearest to the question (among ``pool``
    embedded nodes) that the question does not name are bridges; their other units
    rank by cosine to the question, and their chunks follow in that order.
    """
    from hygraph.graph.heterograph import node_type
    from hygraph.graph.kinds import EdgeKind, NodeKind

    view = state.view(res)
    mentions = view.links(EdgeKind.UNIT_MENTION)
    unit_chunks = view.provenance(NodeKind.UNIT)
    hits = res.search_vectors(NODE_COLLECTION, state.query_vector(res), pool)
    found = [h.id for h in hits if node_type(h.id) == "S"]
    ranked = bridge_items(
        res, NODE_COLLECTION, state.query_vector(res), found[:units],
        members_of=lambda u: mentions.out.get(u, ()),
        items_of=lambda e: mentions.into.get(e, []),
        asked=state.question.casefold(), fanout=fanout, seen=set(found), used=set(),
    )  # fmt: skip
    state.rankings[into] = list(dict.fromkeys(c for u in ranked for c in unit_chunks.get(u, ())))
