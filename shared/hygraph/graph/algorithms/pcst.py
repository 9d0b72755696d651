"""Prize-collecting Steiner tree (PCST), as G-Retriever builds its retrieved subgraph.

The problem: nodes carry prizes, edges carry costs; find a tree that minimises the cost
of its edges plus the prizes of the nodes it leaves out (equivalently, maximises the
prizes it collects minus what its edges cost). It is NP-hard; the solver is the
Goemans-Williamson scheme of ``pcst_fast`` (Hegde, Indyk and Schmidt, ICML 2015: nearly
linear time, within a factor 2 of the optimum), through its maintained fork
``pcst-fast2`` (same module; the original 1.0.10 build returns wrong ids under numpy 2,
which :func:`solve_pcst` detects).

G-Retriever (He et al., 2024; its ``retrieval_via_pcst``) sets the instance up from the
question: the ``k`` nodes nearest to it get prizes ``k, k-1, ..., 1``; the edges with the
``topk_e`` highest similarities get prizes ``topk_e, topk_e - 1, ...`` (shared out when
several edges tie on one value, each value capped just below the one before); every
edge costs ``cost_e``, lowered when needed so that at least one prized edge pays for
itself. An edge whose prize exceeds its cost becomes a *virtual node* in the middle of
the edge holding the surplus, joined to both ends at no cost, so the tree can collect
edge prizes too; other edges cost ``cost_e`` minus their prize. :func:`gretriever_prizes`
computes the prizes, :func:`prize_collecting_tree` runs the transformed instance and maps
the answer back to the original nodes and edges.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: G-Retriever's shrink factor between the prizes of successive edge similarity values.
TIE_SHRINK = 0.01
PRUNINGS = ("gw", "strong", "simple", "none")


def solve_pcst(
    edges: np.ndarray, prizes: np.ndarray, costs: np.ndarray, *, pruning: str = "gw"
) -> tuple[np.ndarray, np.ndarray]:
    """One unrooted tree by ``pcst_fast``: ``(node positions, edge indices)``, both sorted.

    ``edges`` is an ``(m, 2)`` array of node positions; ``prizes`` has one entry per node,
    ``costs`` one per edge. No positive prize gives an empty tree (``pcst_fast`` would
    return an arbitrary single node).

    Raises:
        ValueError: an unknown pruning, mismatched shapes or negative values.
        RuntimeError: the solver returned ids that cannot form a tree (a broken build).
    """
    from pcst_fast import pcst_fast

    if pruning not in PRUNINGS:
        raise ValueError(f"pruning must be one of {', '.join(PRUNINGS)}")
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    prizes = np.asarray(prizes, dtype=np.float64)
    costs = np.asarray(costs, dtype=np.float64)
    if len(costs) != len(edges):
        raise ValueError(f"{len(edges)} edges but {len(costs)} costs")
    if (prizes < 0).any() or (costs < 0).any():
        raise ValueError("prizes and costs must not be negative")
    if len(edges) and (edges.min() < 0 or edges.max() >= len(prizes)):
        raise ValueError("an edge names a node outside the prizes")
    empty = np.zeros(0, dtype=np.int64)
    if not (prizes > 0).any():
        return empty, empty
    vertices, chosen = pcst_fast(edges, prizes, costs, -1, 1, pruning, 0)
    vertices = np.sort(np.asarray(vertices, dtype=np.int64))
    chosen = np.sort(np.asarray(chosen, dtype=np.int64))
    _check_tree(edges, len(prizes), vertices, chosen)
    return vertices, chosen


def _check_tree(edges: np.ndarray, n: int, vertices: np.ndarray, chosen: np.ndarray) -> None:
    """Raise when the solver's answer is not a tree over its vertices."""
    broken = (
        len(np.unique(vertices)) != len(vertices)
        or len(np.unique(chosen)) != len(chosen)
        or (len(vertices) and (vertices.min() < 0 or vertices.max() >= n))
        or (len(chosen) and (chosen.min() < 0 or chosen.max() >= len(edges)))
        or (len(vertices) > 0 and len(chosen) != len(vertices) - 1)
        or not set(edges[chosen].ravel().tolist()) <= set(vertices.tolist())
    )
    if broken:
        raise RuntimeError(
            "pcst_fast returned ids that form no tree; install pcst-fast2 (pcst-fast 1.0.10 "
            "returns wrong ids under numpy 2)"
        )


def gretriever_prizes(
    n_ranked_nodes: int, edge_scores: Sequence[float], *, topk_e: int, cost_e: float
) -> tuple[list[float], list[float], float]:
    """G-Retriever's prizes: ``(node prizes by rank, edge prizes, edge cost)``.

    Nodes ranked 1..k (nearest first) get ``k, ..., 1``. Edges whose similarity is among
    the ``topk_e`` highest distinct values get a prize: the i-th value (0-based) gives
    ``min((topk_e - i) / (edges with that value), previous × (1 - 0.01))`` to each of its
    edges; the others get 0. The edge cost is ``cost_e``, lowered to just below the
    largest edge prize when that is smaller, so one edge at least pays for itself.
    """
    nodes = [float(n_ranked_nodes - i) for i in range(n_ranked_nodes)]
    scores = [float(s) for s in edge_scores]
    prizes = [0.0] * len(scores)
    distinct = sorted(set(scores), reverse=True)[: max(0, topk_e)]
    last = float(len(distinct))
    for i, value in enumerate(distinct):
        holders = [n for n, s in enumerate(scores) if s == value]
        prize = min((len(distinct) - i) / len(holders), last)
        for n in holders:
            prizes[n] = prize
        last = prize * (1 - TIE_SHRINK)
    cost = float(cost_e)
    if distinct:
        cost = min(cost, max(prizes) * (1 - TIE_SHRINK / 2))
    return nodes, prizes, cost


def prize_collecting_tree(
    n_nodes: int,
    edges: np.ndarray,
    node_prizes: np.ndarray,
    edge_prizes: np.ndarray,
    cost: float,
    *,
    pruning: str = "gw",
) -> tuple[np.ndarray, np.ndarray]:
    """G-Retriever's PCST over a graph whose edges also carry prizes.

    Returns ``(node positions, edge indices)``: the subgraph's nodes (with both ends of
    every chosen edge) and the chosen edges, both sorted. An edge with prize ``p`` costs
    ``cost - p`` when ``p <= cost``; otherwise it becomes a virtual node of prize
    ``p - cost`` joined to both ends at no cost (see the module docstring). The answer is
    a tree of that transformed graph; mapped back (a virtual node is its edge, with both
    ends) it is connected but, as in G-Retriever, may close a cycle.
    """
    edges = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    edge_prizes = np.asarray(edge_prizes, dtype=np.float64)
    node_prizes = np.asarray(node_prizes, dtype=np.float64)
    if len(node_prizes) != n_nodes or len(edge_prizes) != len(edges):
        raise ValueError("one prize per node and one per edge are needed")
    real = np.flatnonzero(edge_prizes <= cost)
    virtual = np.flatnonzero(edge_prizes > cost)
    ids = n_nodes + np.arange(len(virtual), dtype=np.int64)
    halves = np.concatenate(
        [np.stack([edges[virtual, 0], ids], axis=1), np.stack([ids, edges[virtual, 1]], axis=1)]
    )
    all_edges = np.concatenate([edges[real], halves]) if len(halves) else edges[real]
    costs = np.concatenate([cost - edge_prizes[real], np.zeros(len(halves))])
    prizes = np.concatenate([node_prizes, edge_prizes[virtual] - cost])
    vertices, chosen = solve_pcst(all_edges, prizes, costs, pruning=pruning)
    picked = [int(real[i]) for i in chosen if i < len(real)]
    picked += [int(virtual[v - n_nodes]) for v in vertices if v >= n_nodes]
    picked_edges = np.array(sorted(set(picked)), dtype=np.int64)
    ends = edges[picked_edges].ravel() if len(picked_edges) else np.zeros(0, dtype=np.int64)
    nodes = np.union1d(vertices[vertices < n_nodes], ends).astype(np.int64)
    return nodes, picked_edges
