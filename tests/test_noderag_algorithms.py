"""NodeRAG graph algorithms on small hand-checked graphs (spec 004 §3.2-3.4, §4.2)."""

from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from scipy import sparse

from hygraph.graph.algorithms.clustering import kmeans_k, link_high_level
from hygraph.graph.algorithms.importance import (
    Importance,
    betweenness_scale,
    important_entities,
    kcore_threshold,
)
from hygraph.graph.algorithms.knn import approximate_knn_edges, edge_overlap, knn_edges
from hygraph.graph.algorithms.leiden import leiden_communities
from hygraph.graph.algorithms.ppr import (
    cap_edge_weights,
    shallow_ppr,
    symmetric_adjacency,
    transition_transpose,
)

# --- importance --------------------------------------------------------------------------


def test_kcore_threshold_hand_values() -> None:
    # ln 10 · sqrt(30 / 10) = 2.3026 · 1.7321 = 3.988
    assert kcore_threshold(10, 30) == 3
    assert kcore_threshold(10, 30, rounding="round") == 4
    # ln 11 · sqrt(24 / 11) = 2.3979 · 1.4771 = 3.542
    assert kcore_threshold(11, 24) == 3
    assert kcore_threshold(11, 24, rounding="round") == 4
    assert kcore_threshold(0, 0) == 0
    assert kcore_threshold(1, 0) == 0
    with pytest.raises(ValueError):
        kcore_threshold(10, 30, rounding="ceil")


def test_betweenness_scale_clamps() -> None:
    assert betweenness_scale(0) == 1
    assert betweenness_scale(5) == 1  # floor(0.70) = 0, clamped
    assert betweenness_scale(11) == 1
    assert betweenness_scale(40) == 1
    assert betweenness_scale(40, rounding="round") == 2  # round(1.60)
    assert betweenness_scale(100) == 2
    assert betweenness_scale(1000) == 3


def _two_cliques_with_bridge() -> nx.Graph:
    """Cliques A1..A5 and B1..B5; BRIDGE joins A1 and B1. A5 is an S node, B5 an R node."""
    graph = nx.Graph()
    for prefix in "AB":
        members = [f"{prefix}{i}" for i in range(1, 6)]
        graph.add_edges_from(itertools.combinations(members, 2))
    graph.add_edges_from([("BRIDGE", "A1"), ("BRIDGE", "B1")])
    for node in graph:
        graph.nodes[node].update(type="N", weight=2)
    graph.nodes["A5"]["type"] = "S"
    graph.nodes["B5"]["type"] = "R"
    return graph


def test_important_entities_kcore_and_bridge() -> None:
    graph = _two_cliques_with_bridge()
    result = important_entities(graph, samples=100)  # samples >= n: exact betweenness
    # n = 11, 22 edges: k = floor(ln 11 · sqrt(44 / 11)) = floor(4.796) = 4.
    assert result.k == 4
    # Clique members have core number 4, BRIDGE 2; A5 (S) and B5 (R) are never returned.
    assert result.kcore == {"A1", "A2", "A3", "A4", "B1", "B2", "B3", "B4"}
    # Betweenness (normalised by C(10, 2) = 45): BRIDGE 25/45, A1 = B1 = 24/45, rest 0.
    # Threshold = mean · floor(log10 11) = (73 / 45) / 11 · 1.
    assert result.threshold == pytest.approx(73 / 495)
    assert result.betweenness == {"BRIDGE", "A1", "B1"}
    assert result.entities == result.kcore | {"BRIDGE"}


def test_important_entities_mention_filter() -> None:
    graph = _two_cliques_with_bridge()
    graph.nodes["BRIDGE"]["weight"] = 1
    del graph.nodes["A2"]["weight"]  # missing weight counts as 1
    result = important_entities(graph, samples=100)
    assert "BRIDGE" not in result.entities
    assert "A2" not in result.entities
    unfiltered = important_entities(graph, samples=100, min_mentions=1)
    assert {"BRIDGE", "A2"} <= unfiltered.entities
    assert important_entities(graph, samples=100, min_mentions=0) == unfiltered


def test_important_entities_degree_vs_core() -> None:
    # HUB with 6 S leaves (degree 6, core 1) next to an entity K4 (degree 3, core 3).
    graph = nx.Graph()
    graph.add_edges_from(("HUB", f"s{i}") for i in range(6))
    graph.add_edges_from(itertools.combinations(["E1", "E2", "E3", "E4"], 2))
    graph.add_edge("E1", "E1")  # self-loops are ignored
    for node in graph:
        graph.nodes[node].update(type="S" if node.startswith("s") else "N", weight=3)
    # n = 11, 12 edges: k = floor(ln 11 · sqrt(24 / 11)) = 3; rounded: 4.
    core = important_entities(graph, samples=100)
    assert core.k == 3
    assert core.kcore == {"E1", "E2", "E3", "E4"}
    assert core.betweenness == {"HUB"}  # 15 leaf pairs / 45
    degree = important_entities(graph, samples=100, kcore="degree")
    assert degree.kcore == {"HUB", "E1", "E2", "E3", "E4"}
    rounded = important_entities(graph, samples=100, rounding="round")
    assert rounded.k == 4 and rounded.kcore == set()  # k above the largest core number
    rounded_degree = important_entities(graph, samples=100, rounding="round", kcore="degree")
    assert rounded_degree.kcore == {"HUB"}
    with pytest.raises(ValueError):
        important_entities(graph, kcore="shell")


def test_important_entities_empty_and_seeded() -> None:
    assert important_entities(nx.Graph()) == Importance(set(), set(), 0, 0.0)
    graph = _two_cliques_with_bridge()
    first = important_entities(graph, samples=4, seed=7)
    assert important_entities(graph, samples=4, seed=7) == first


# --- communities -------------------------------------------------------------------------


def _two_cliques_edges() -> list[tuple[str, str, float]]:
    edges = []
    for prefix in "ab":
        members = [f"{prefix}{i}" for i in range(5)]
        edges += [(u, v, 1.0) for u, v in itertools.combinations(members, 2)]
    return edges + [("a0", "b0", 1.0)]


def test_leiden_two_cliques_and_isolated() -> None:
    nodes = [f"b{i}" for i in range(5)] + ["lonely"] + [f"a{i}" for i in range(5)]
    edges = _two_cliques_edges()
    edges += [("a1", "a2", 1.0), ("a2", "a1", 1.0), ("a3", "a3", 1.0)]  # duplicates, loop
    result = leiden_communities(nodes, edges, seed=3)
    assert set(result) == set(nodes)
    # Ids by first appearance in `nodes`: b-clique 0, lonely 1, a-clique 2.
    assert result == {
        **{f"b{i}": 0 for i in range(5)},
        "lonely": 1,
        **{f"a{i}": 2 for i in range(5)},
    }
    for _ in range(3):
        assert leiden_communities(nodes, list(reversed(edges)), seed=3) == result


def test_leiden_weighted_and_edge_cases() -> None:
    assert leiden_communities([], []) == {}
    assert leiden_communities(["x", "y"], [("x", "x", 1.0)]) == {"x": 0, "y": 1}
    nodes = [f"a{i}" for i in range(5)] + [f"b{i}" for i in range(5)]
    weighted = leiden_communities(nodes, _two_cliques_edges(), weighted=True, seed=1)
    assert len(set(weighted.values())) == 2
    # Edges to unknown nodes are ignored.
    assert leiden_communities(["p", "q"], [("p", "q", 1.0), ("p", "zz", 1.0)]) == {"p": 0, "q": 0}


# --- semantic matching -------------------------------------------------------------------


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_kmeans_k() -> None:
    assert [kmeans_k(n) for n in (0, 1, 2, 4, 5, 1521, 1522)] == [1, 1, 2, 2, 3, 39, 40]


def test_link_high_level_small_graph_fallback() -> None:
    ids = ["s1", "s2", "a1", "h1", "s3", "h2", "h3"]
    types = ["S", "S", "A", "H", "S", "H", "H"]
    vectors = _unit(np.random.default_rng(0).normal(size=(7, 4)))
    communities = {"s1": 0, "s2": 0, "a1": 0, "h1": 0, "s3": 1, "h2": 1, "h3": 2}
    links = link_high_level(ids, types, vectors, communities)
    # Every H gets all S/A of its own community; h3's community has none.
    assert links == [("h1", "a1"), ("h1", "s1"), ("h1", "s2"), ("h2", "s3")]


def _two_directions(n_per_side: int, seed: int = 0) -> np.ndarray:
    """Rows near e0 (first half) and near e1 (second half), in 8 dimensions."""
    rng = np.random.default_rng(seed)
    rows = rng.normal(scale=0.05, size=(2 * n_per_side, 8))
    rows[:n_per_side, 0] += 1.0
    rows[n_per_side:, 1] += 1.0
    return _unit(rows)


@pytest.mark.parametrize("cluster_size", [39, 5])
def test_link_high_level_kmeans_keeps_to_cluster(cluster_size: int) -> None:
    # Default threshold needs n / ceil(sqrt n) > 39: 1,700 rows give 1700 / 42 = 40.5.
    per_side = 850 if cluster_size == 39 else 100
    vectors = _two_directions(per_side)
    ids = [f"s{i}" for i in range(2 * per_side)]
    types = ["S"] * len(ids)
    # One community holding both directions; h copies s0's vector (direction e0).
    ids.append("h")
    types.append("H")
    vectors = np.vstack([vectors, vectors[:1]])
    communities = dict.fromkeys(ids, 0)
    links = link_high_level(ids, types, vectors, communities, cluster_size=cluster_size)
    members = {int(member[1:]) for _, member in links}
    assert 0 in members
    assert all(i < per_side for i in members)  # only direction e0
    assert len(members) < per_side  # a K-means cluster, not the whole community
    assert link_high_level(ids, types, vectors, communities, cluster_size=cluster_size) == links


def test_link_high_level_nearest_fallback() -> None:
    per_side = 100
    vectors = _two_directions(per_side)
    ids = [f"s{i}" for i in range(2 * per_side)] + ["h"]
    types = ["S"] * (2 * per_side) + ["H"]
    h_vector = _unit(np.eye(8)[1:2] + 0.02 * np.eye(8)[0:1])  # direction e1, tilted to e0
    vectors = np.vstack([vectors, h_vector])
    # Community 0: the e0 rows and h; community 1: the e1 rows (h's cluster-mates).
    communities = {node: (0 if i < per_side else 1) for i, node in enumerate(ids)}
    communities["h"] = 0
    expected = max(range(per_side), key=lambda i: float(vectors[i] @ vectors[-1]))
    links = link_high_level(ids, types, vectors, communities, cluster_size=5)
    assert links == [("h", f"s{expected}")]
    assert (
        link_high_level(ids, types, vectors, communities, cluster_size=5, nearest_fallback=False)
        == []
    )


def test_link_high_level_ignores_unknown_nodes() -> None:
    ids, types = ["h", "s"], ["H", "S"]
    vectors = _unit(np.ones((2, 3)))
    assert link_high_level(ids, types, vectors, {"h": 0}) == []
    assert link_high_level([], [], np.zeros((0, 3), dtype=np.float32), {}) == []


# --- kNN edges ---------------------------------------------------------------------------


def _brute_knn(vectors: np.ndarray, k: int) -> set[tuple[int, int]]:
    sims = vectors.astype(np.float64) @ vectors.T.astype(np.float64)
    pairs = set()
    for i in range(len(vectors)):
        order = sorted((j for j in range(len(vectors)) if j != i), key=lambda j: (-sims[i, j], j))
        pairs.update((min(i, j), max(i, j)) for j in order[:k])
    return pairs


@pytest.mark.parametrize("k", [1, 3, 7])
def test_knn_edges_matches_brute_force(k: int) -> None:
    vectors = _unit(np.random.default_rng(k).normal(size=(53, 6)))
    edges = knn_edges(vectors, k, block=8)
    assert {(i, j) for i, j, _ in edges} == _brute_knn(vectors, k)
    assert all(i < j for i, j, _ in edges)
    assert edges == sorted(edges)
    for i, j, sim in edges:
        assert sim == pytest.approx(float(vectors[i] @ vectors[j]), abs=1e-5)
    assert knn_edges(vectors, k, block=1000) == edges


@pytest.mark.parametrize("k", [2, 5, 12])
def test_knn_edges_exact_ties_across_tiles(k: int) -> None:
    # Small-integer rows: dot products are exact, so ties are real ties in every tile.
    vectors = np.random.default_rng(k).integers(0, 3, size=(61, 4)).astype(np.float32)
    for block in (7, 16, 100):
        edges = knn_edges(vectors, k, block=block)
        assert {(i, j) for i, j, _ in edges} == _brute_knn(vectors, k)
    same = np.ones((30, 3), dtype=np.float32)  # every pair ties: the lowest indices win
    expected = set()
    for i in range(30):
        lowest_others = [j for j in range(30) if j != i][:k]
        expected |= {(min(i, j), max(i, j)) for j in lowest_others}
    assert {(i, j) for i, j, _ in knn_edges(same, k, block=8)} == expected


def test_knn_edges_ties_and_edge_cases() -> None:
    # Rows 1, 2, 3 are identical: row 0's single neighbour among them is the lowest index.
    vectors = _unit(np.array([[1.0, 0.1], [1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    assert (0, 1) in {(i, j) for i, j, _ in knn_edges(vectors, 1, block=2)}
    assert (0, 2) not in {(i, j) for i, j, _ in knn_edges(vectors, 1, block=2)}
    everything = knn_edges(vectors, 4)
    assert [(i, j) for i, j, _ in everything] == list(itertools.combinations(range(5), 2))
    assert knn_edges(vectors, 10) == everything
    assert knn_edges(vectors, 0) == []
    assert knn_edges(vectors[:1], 3) == []


def test_approximate_knn_and_overlap() -> None:
    vectors = _unit(np.random.default_rng(5).normal(size=(40, 5)))

    def exact_search(queries: np.ndarray, count: int) -> list[list[int]]:
        sims = queries @ vectors.T
        return [list(np.argsort(-row, kind="stable")[:count]) for row in sims]

    exact = knn_edges(vectors, 4)
    approx = approximate_knn_edges(exact_search, vectors, 4)
    assert edge_overlap(exact, approx) == 1.0
    for (i, j, s), (i2, j2, s2) in zip(exact, approx, strict=True):
        assert (i, j) == (i2, j2) and s == pytest.approx(s2, abs=1e-5)
    assert edge_overlap([], []) == 1.0
    assert edge_overlap([(0, 1, 0.5), (1, 2, 0.5)], [(1, 0, 0.9), (2, 3, 0.1)]) == 1 / 3


# --- shallow PPR -------------------------------------------------------------------------


EDGES = [(0, 1, 1.0), (1, 2, 2.0), (2, 0, 1.0), (2, 3, 1.0), (1, 0, 0.5), (4, 4, 3.0)]


def _dense_reference(
    n: int, personalization: dict[int, float], alpha: float, iterations: int, mode: str
) -> np.ndarray:
    weights = np.zeros((n, n))
    for i, j, w in EDGES:
        if i != j:
            weights[i, j] += w
            weights[j, i] += w
    transition = np.zeros((n, n))
    for i in range(n):
        total = weights[i].sum()
        if total > 0:
            transition[i] = weights[i] / total
    p = np.zeros(n)
    for i, w in personalization.items():
        p[i] = w
    p /= p.sum()
    pi = p.copy()
    for _ in range(iterations):
        walked = np.array([sum(transition[j, i] * pi[j] for j in range(n)) for i in range(n)])
        if mode == "restart":
            pi = alpha * p + (1 - alpha) * walked
        else:
            pi = alpha * walked + (1 - alpha) * pi
    return pi


def test_symmetric_adjacency() -> None:
    adjacency = symmetric_adjacency(5, EDGES).toarray()
    expected = np.zeros((5, 5))
    expected[0, 1] = expected[1, 0] = 1.5  # (0,1,1) + (1,0,0.5)
    expected[1, 2] = expected[2, 1] = 2.0
    expected[0, 2] = expected[2, 0] = 1.0
    expected[2, 3] = expected[3, 2] = 1.0
    np.testing.assert_allclose(adjacency, expected)  # the self-loop at 4 is dropped


@pytest.mark.parametrize("mode", ["restart", "lazy"])
@pytest.mark.parametrize("iterations", [1, 2, 3])
def test_shallow_ppr_matches_dense_reference(mode: str, iterations: int) -> None:
    adjacency = symmetric_adjacency(5, EDGES)
    seeds = {0: 1.0, 3: 3.0}
    expected = _dense_reference(5, seeds, 0.3, iterations, mode)
    got = shallow_ppr(adjacency, seeds, alpha=0.3, iterations=iterations, mode=mode, tol=0.0)
    np.testing.assert_allclose(got, expected, atol=1e-12)
    array_seeds = np.array([1.0, 0.0, 0.0, 3.0, 0.0])
    reused = shallow_ppr(
        adjacency,
        array_seeds,
        alpha=0.3,
        iterations=iterations,
        mode=mode,
        tol=0.0,
        transposed=transition_transpose(adjacency),
    )
    np.testing.assert_allclose(reused, expected, atol=1e-12)


def test_shallow_ppr_hand_values_and_errors() -> None:
    # Path 0 - 1 - 2, seed 0, alpha 0.5: pi1 = 0.5 p + 0.5 Pᵀ p = [0.5, 0.5, 0].
    adjacency = symmetric_adjacency(3, [(0, 1, 1.0), (1, 2, 1.0)])
    np.testing.assert_allclose(shallow_ppr(adjacency, {0: 2.0}, iterations=1), [0.5, 0.5, 0.0])
    # pi2 = 0.5 p + 0.5 Pᵀ [0.5, 0.5, 0] = 0.5 [1,0,0] + 0.5 [0.25, 0.5, 0.25].
    np.testing.assert_allclose(shallow_ppr(adjacency, {0: 1.0}), [0.625, 0.25, 0.125])
    # Isolated seed (node 4 here): the walk drops its mass, the restart keeps alpha · p.
    isolated = symmetric_adjacency(5, EDGES)
    np.testing.assert_allclose(shallow_ppr(isolated, {4: 1.0}), [0, 0, 0, 0, 0.5])
    # Lazy mode stops early once the change is below tol: a converged seed stays put.
    lazy = shallow_ppr(isolated, {4: 1.0}, mode="lazy", iterations=50, tol=1.0)
    np.testing.assert_allclose(lazy, [0, 0, 0, 0, 0.5])
    assert not shallow_ppr(adjacency, {}).any()
    assert not shallow_ppr(adjacency, np.zeros(3)).any()
    with pytest.raises(ValueError):
        shallow_ppr(adjacency, {0: 1.0}, mode="deep")
    with pytest.raises(ValueError):
        shallow_ppr(adjacency, {0: -1.0})


def test_cap_edge_weights_hand_example() -> None:
    # Star 0-{1,2,3} plus edge 3-4: deg 0 = 3, deg 3 = 2, deg 1 = deg 2 = deg 4 = 1.
    adjacency = symmetric_adjacency(5, [(0, 1, 5.0), (0, 2, 0.1), (0, 3, 1.0), (3, 4, 2.0)])
    capped = cap_edge_weights(adjacency)
    assert isinstance(capped, sparse.csr_matrix)
    expected = np.zeros((5, 5))
    expected[0, 1] = expected[1, 0] = 1 / 3  # min(5, 1/3, 1)
    expected[0, 2] = expected[2, 0] = 0.1  # already below the caps
    expected[0, 3] = expected[3, 0] = 1 / 3  # min(1, 1/3, 1/2)
    expected[3, 4] = expected[4, 3] = 0.5  # min(2, 1/2, 1)
    np.testing.assert_allclose(capped.toarray(), expected)
    assert math.isclose(capped.sum(), 2 * (1 / 3 + 0.1 + 1 / 3 + 0.5))
