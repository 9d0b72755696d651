"""Shortest paths between nodes (networkx), for bridge paths and subgraph methods.

HiRAG joins the communities of retrieved entities through shortest paths, and the
subgraph methods of the unified framework (KGP, ToG, G-Retriever) grow paths between
seed entities. Both want the same two things over an undirected weighted edge list:
the shortest path between two nodes, and the paths joining every pair of a seed set.
Weights are lengths here (networkx's Dijkstra); pass 1 for hop counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations


def _graph(edges: Iterable[tuple[str, str, float]]):  # -> networkx.Graph
    import networkx as nx

    graph = nx.Graph()
    for u, v, w in edges:
        if u == v:
            continue
        length = float(w)
        if graph.has_edge(u, v):
            length = min(length, graph[u][v]["length"])
        graph.add_edge(u, v, length=length)
    return graph


def shortest_path(edges: Iterable[tuple[str, str, float]], source: str, target: str) -> list[str]:
    """The node ids of a shortest path from ``source`` to ``target`` ([] when none).

    Ties are broken by networkx's deterministic search order over the edge list.
    """
    import networkx as nx

    graph = _graph(edges)
    if source not in graph or target not in graph:
        return []
    try:
        return list(nx.shortest_path(graph, source, target, weight="length"))
    except nx.NetworkXNoPath:
        return []


def connecting_paths(
    edges: Iterable[tuple[str, str, float]], seeds: Sequence[str], *, max_hops: int = 0
) -> list[list[str]]:
    """A shortest path for every pair of ``seeds`` that are connected, in pair order.

    ``max_hops`` > 0 drops paths with more edges than that.
    """
    import networkx as nx

    graph = _graph(edges)
    out: list[list[str]] = []
    for a, b in combinations(dict.fromkeys(seeds), 2):
        if a not in graph or b not in graph:
            continue
        try:
            path = list(nx.shortest_path(graph, a, b, weight="length"))
        except nx.NetworkXNoPath:
            continue
        if max_hops <= 0 or len(path) - 1 <= max_hops:
            out.append(path)
    return out
