"""Leiden communities: NodeRAG's single level, and the hierarchy GraphRAG-style methods use.

:func:`hierarchical_communities` is the community hierarchy (graspologic's native
hierarchical Leiden) that the communities layer stores. The rest of this docstring is
about NodeRAG's aggregation step (spec 004, §3.3 step 1; §8 item 12).

NodeRAG partitions G2 (S, N, R, A nodes) into communities once, at a single
level, and asks the LLM for high-level elements per community. The paper names
the Leiden algorithm; the authors' code runs ``leidenalg`` with the modularity
objective, unweighted, default resolution and no seed. We run graspologic's
native Leiden core (``graspologic_native.leiden``, modularity objective, one
iteration, one trial) with an explicit seed so a rebuild gives the same
partition (our choice). Unweighted by default (authors' code); ``weighted=True``
uses the largest weight given for each node pair (our choice).

Isolated nodes cannot be passed to the native core (it takes an edge list), so
each gets a community of its own (our choice; Leiden would do the same, as a
singleton maximises its modularity contribution). Community ids are renumbered
``0..C-1`` by the order in which ``nodes`` first mentions each community.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def _unique_edges(
    nodes: set[str], edges: Iterable[tuple[str, str, float]], weighted: bool
) -> dict[tuple[str, str], float]:
    """Undirected pairs (sorted endpoints) between known nodes, self-loops dropped.

    Unweighted: every pair weighs 1. Weighted: the largest weight given for the
    pair; pairs whose weight is not positive are dropped.
    """
    pairs: dict[tuple[str, str], float] = {}
    for u, v, w in edges:
        if u == v or u not in nodes or v not in nodes:
            continue
        key = (u, v) if u < v else (v, u)
        weight = float(w) if weighted else 1.0
        pairs[key] = max(pairs.get(key, weight), weight)
    if weighted:
        pairs = {key: w for key, w in pairs.items() if w > 0}
    return pairs


def _run_leiden(
    pairs: dict[tuple[str, str], float], resolution: float, seed: int
) -> dict[str, int]:
    """Raw native-Leiden partition of the nodes that have at least one edge."""
    if not pairs:
        return {}
    import graspologic_native as gn

    edge_list = [(u, v, w) for (u, v), w in sorted(pairs.items())]
    _, partition = gn.leiden(
        edge_list,
        resolution=resolution,
        use_modularity=True,
        iterations=1,
        trials=1,
        seed=seed,
    )
    return partition


def _renumber(nodes: Sequence[str], raw: dict[str, int]) -> dict[str, int]:
    """Dense ids by first appearance in ``nodes``; nodes absent from ``raw`` are singletons."""
    mapping: dict[object, int] = {}
    result: dict[str, int] = {}
    for node in nodes:
        if node in result:
            continue
        key: object = ("community", raw[node]) if node in raw else ("isolated", node)
        result[node] = mapping.setdefault(key, len(mapping))
    return result


def leiden_communities(
    nodes: Sequence[str],
    edges: Iterable[tuple[str, str, float]],
    *,
    resolution: float = 1.0,
    seed: int = 0,
    weighted: bool = False,
) -> dict[str, int]:
    """Single-level Leiden (modularity) partition: node id → community id in ``0..C-1``.

    Edges whose endpoints are not in ``nodes`` are ignored, as are self-loops and
    duplicates. Deterministic for a fixed ``seed``.
    """
    pairs = _unique_edges(set(nodes), edges, weighted)
    return _renumber(nodes, _run_leiden(pairs, resolution, seed))


def hierarchical_communities(
    edges: Iterable[tuple[str, str, float]],
    *,
    max_cluster_size: int = 10,
    resolution: float = 1.0,
    seed: int = 0,
    weighted: bool = True,
) -> list[tuple[str, int, int, int | None]]:
    """Hierarchical Leiden (graspologic's native core): ``(node, level, cluster, parent)``.

    Level 0 partitions the whole graph; every cluster larger than ``max_cluster_size``
    is split again at the next level, its sub-clusters naming it as parent (GraphRAG's
    community hierarchy; 10 is its default size). Weighted by the largest weight given
    for each pair (our choice: relation strength matters); deterministic for a seed.
    Isolated nodes are not in the result.
    """
    edges = list(edges)
    pairs = _unique_edges({n for u, v, _ in edges for n in (u, v)}, edges, weighted)
    if not pairs:
        return []
    import graspologic_native as gn

    found = gn.hierarchical_leiden(
        [(u, v, w) for (u, v), w in sorted(pairs.items())],
        resolution=resolution,
        max_cluster_size=max_cluster_size,
        seed=seed,
        use_modularity=True,
        iterations=1,
    )
    out = []
    for c in found:
        parent = None if c.parent_cluster is None else int(c.parent_cluster)
        out.append((str(c.node), int(c.level), int(c.cluster), parent))
    return sorted(out, key=lambda row: (row[1], row[2], row[0]))
