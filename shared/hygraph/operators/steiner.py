"""The Steiner subgraph operator (spec 002 §4.4 S2): G-Retriever's prize-collecting tree.

The retrieved entities (``state.nodes``, nearest first) and relationships
(``state.relationships``, relation edges with their cosine to the question) are the
terminals: the entities get prizes ``k, ..., 1`` by rank and the relationships holding
the ``topk_e`` highest similarities share prizes ``topk_e, ..., 1``; every relation
edge costs ``cost_e`` (G-Retriever's ``retrieval_via_pcst``; the framework's GR config
has ``topk_e`` 2 and ``cost_e`` 0.5). The tree is solved over the whole relation graph
of the entity graph, one undirected edge per entity pair
(:func:`~hygraph.graph.algorithms.pcst.prize_collecting_tree`; about 20 ms on MuSiQue's
13k entities and 26k pairs).

The tree (connected; mapping a prized edge's virtual node back can close a cycle, as in
G-Retriever) replaces the retrieved nodes and relationships, in *subgraph order*: first the
prized entities (by rank) and the prized relationships (by prize), then the rest of the
tree breadth first from them, each node's branches by edge prize. A pair stored in both
directions gives both relation edges. ``state.subgraph["steiner"]`` keeps the tree's
node ids, its pairs and the edge cost used.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from hygraph.errors import ConfigError
from hygraph.graph.kinds import EdgeKind
from hygraph.operators.registry import operator

if TYPE_CHECKING:
    from hygraph.graph.view import GraphView, WalkGraph
    from hygraph.operators.state import State
    from hygraph.resources import Resources


def _pairs(view: GraphView) -> tuple[WalkGraph, np.ndarray, dict[tuple[int, int], int]]:
    """The relation graph, its undirected pairs ``(i < j)`` and pair → edge index."""
    graph = view.walk_graph([EdgeKind.RELATION], weighted=False)

    def make() -> tuple[np.ndarray, dict[tuple[int, int], int]]:
        from scipy import sparse

        upper = sparse.triu(graph.adjacency, k=1).tocoo()
        order = np.lexsort((upper.col, upper.row))
        edges = np.stack([upper.row[order], upper.col[order]], axis=1).astype(np.int64)
        return edges, {(int(a), int(b)): n for n, (a, b) in enumerate(edges)}

    edges, index = view.memo(("steiner_pairs",), make)
    return graph, edges, index


@operator("subgraph.steiner", needs=("entity-graph",))
def steiner(
    res: Resources, state: State, *, topk_e: int = 2, cost_e: float = 0.5, pruning: str = "gw"
) -> None:
    """G-Retriever's prize-collecting Steiner tree joining the retrieved entities and relations.

    Prizes, costs and the order of the result: see the module docstring. ``pruning`` is
    ``pcst_fast``'s (``gw``, G-Retriever's; ``strong``, ``simple``, ``none``).
    """
    from hygraph.graph.algorithms.pcst import PRUNINGS, gretriever_prizes, prize_collecting_tree
    from hygraph.operators.state import Scored

    if pruning not in PRUNINGS:
        raise ConfigError(f"steiner pruning must be one of {', '.join(PRUNINGS)}")
    if cost_e < 0:
        raise ConfigError("steiner cost_e must not be negative")
    view = state.view(res)
    graph, edges, index = _pairs(view)
    ids = list(graph.ids)
    position = dict(graph.position)
    first: dict[str, Scored] = {}
    for hit in state.nodes:
        first.setdefault(hit.id, hit)
    seeds = list(first.values())
    for hit in seeds:  # an entity without relations can still be a one-node tree
        if hit.id not in position:
            position[hit.id] = len(ids)
            ids.append(hit.id)
    rels: list[tuple[int, Scored]] = []
    for rel in state.relationships:
        members = rel.data.get("members", ())
        if rel.data.get("kind") != EdgeKind.RELATION or len(members) != 2:
            continue
        a, b = (position.get(m) for m in members)
        if a is not None and b is not None and (min(a, b), max(a, b)) in index:
            rels.append((index[(min(a, b), max(a, b))], rel))
    if not seeds and not rels:
        return
    node_prize, edge_score, cost = gretriever_prizes(
        len(seeds), [r.cosine or r.value for _, r in rels], topk_e=topk_e, cost_e=cost_e
    )
    prizes = np.zeros(len(ids))
    for hit, prize in zip(seeds, node_prize, strict=True):
        prizes[position[hit.id]] = max(prizes[position[hit.id]], prize)
    edge_prizes = np.zeros(len(edges))
    for (n, _), prize in zip(rels, edge_score, strict=True):
        edge_prizes[n] = max(edge_prizes[n], prize)
    nodes, chosen = prize_collecting_tree(len(ids), edges, prizes, edge_prizes, cost,
                                          pruning=pruning)  # fmt: skip
    node_order, edge_order = _subgraph_order(nodes, edges, chosen, prizes, edge_prizes)
    cosine = {h.id: h.cosine for h in state.nodes}
    state.nodes = [
        Scored(ids[p], float(prizes[p]), cosine=cosine.get(ids[p], 0.0),
               data={"via": "steiner", "prize": float(prizes[p])})
        for p in node_order
    ]  # fmt: skip
    state.relationships = _relations(res, state, ids, edges, edge_order, edge_prizes, rels)
    state.subgraph["steiner"] = {
        "nodes": [ids[p] for p in node_order],
        "pairs": [[ids[int(edges[n, 0])], ids[int(edges[n, 1])]] for n in edge_order],
        "cost_e": cost,
    }


def _subgraph_order(
    nodes: np.ndarray,
    edges: np.ndarray,
    chosen: np.ndarray,
    prizes: np.ndarray,
    edge_prizes: np.ndarray,
) -> tuple[list[int], list[int]]:
    """Tree nodes and edges: prized ones first (by prize), then breadth first from them."""
    tree: dict[int, list[tuple[int, int]]] = {int(p): [] for p in nodes}
    for n in chosen:
        a, b = int(edges[n, 0]), int(edges[n, 1])
        tree[a].append((int(n), b))
        tree[b].append((int(n), a))
    for branches in tree.values():
        branches.sort(key=lambda e: (-edge_prizes[e[0]], e[1]))
    prized_nodes = sorted((int(p) for p in nodes if prizes[p] > 0), key=lambda p: (-prizes[p], p))
    prized_edges = sorted((int(n) for n in chosen if edge_prizes[n] > 0),
                          key=lambda n: (-edge_prizes[n], n))  # fmt: skip
    ends = [int(e) for n in prized_edges for e in edges[n]]
    start = list(dict.fromkeys([*prized_nodes, *ends, *(int(p) for p in nodes)]))
    node_order, edge_order = list(prized_nodes), list(prized_edges)
    seen = set(start[:1])
    queue = deque(start[:1])
    for root in start:  # every component of the tree (one, unless it has no edge at all)
        if root not in seen:
            seen.add(root)
            queue.append(root)
        while queue:
            at = queue.popleft()
            node_order.append(at)
            for edge, other in tree.get(at, []):
                edge_order.append(edge)
                if other not in seen:
                    seen.add(other)
                    queue.append(other)
    return list(dict.fromkeys(node_order)), list(dict.fromkeys(edge_order))


def _relations(
    res: Resources,
    state: State,
    ids: list[str],
    edges: np.ndarray,
    order: list[int],
    edge_prizes: np.ndarray,
    rels: list[tuple[int, Any]],
) -> list[Any]:
    """The relation edges of the tree's pairs, in order (each stored direction)."""
    from hygraph.operators.state import Scored

    out_links = state.view(res).links(EdgeKind.RELATION).out
    cosine = {r.id: r.cosine for _, r in rels}
    found = []
    for n in order:
        a, b = ids[int(edges[n, 0])], ids[int(edges[n, 1])]
        for src, dst in ((a, b), (b, a)):
            if dst in out_links.get(src, ()):
                rid = f"{src}|{dst}"
                found.append(Scored(rid, float(edge_prizes[n]), cosine=cosine.get(rid, 0.0),
                                    data={"kind": EdgeKind.RELATION, "members": (src, dst),
                                          "via": "steiner"}))  # fmt: skip
    return found
