"""Personalized PageRank (hygraph.retrieval.ppr) against a dense reference computation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from hygraph.graph.algorithms.ppr import personalized_pagerank, transition_matrix


def _dense_reference(adjacency: np.ndarray, seeds: dict[int, float], damping: float) -> np.ndarray:
    """Solve p = (1-d) s + d (Pᵀ p + (dangling · p) s) exactly with numpy."""
    n = adjacency.shape[0]
    out = adjacency.sum(axis=1)
    transition = np.divide(
        adjacency, out[:, None], out=np.zeros_like(adjacency), where=out[:, None] > 0
    )
    s = np.zeros(n)
    for i, w in seeds.items():
        s[i] = w
    s /= s.sum()
    dangling = (out == 0).astype(float)
    # p = (1-d) s + d Pᵀ p + d s (dangling · p)  →  (I - d Pᵀ - d s danglingᵀ) p = (1-d) s
    system = np.eye(n) - damping * transition.T - damping * np.outer(s, dangling)
    return np.linalg.solve(system, (1 - damping) * s)


@pytest.mark.parametrize("damping", [0.5, 0.85])
def test_matches_the_dense_solution(damping):
    rng = np.random.default_rng(7)
    adjacency = (rng.random((12, 12)) < 0.25).astype(float) * rng.random((12, 12))
    adjacency[3] = 0.0  # a dangling node
    seeds = {0: 1.0, 5: 0.5}
    got = personalized_pagerank(
        transition_matrix(sparse.csr_matrix(adjacency)), seeds, damping=damping, tol=1e-12
    )
    want = _dense_reference(adjacency, seeds, damping)
    np.testing.assert_allclose(got, want, atol=1e-9)
    assert got.sum() == pytest.approx(1.0)


def test_path_graph_by_hand():
    # The path 0 - 1 - 2 seeded at 0 with damping 0.5, solved by hand.
    adjacency = sparse.csr_matrix(np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], dtype=float))
    p = personalized_pagerank(transition_matrix(adjacency), {0: 1.0}, damping=0.5, tol=1e-14)
    # From p1 = 0.5 p0 + 0.5 p2, p2 = 0.25 p1, p0 = 0.5 + 0.25 p1:
    # p1 = 0.25 + 0.125 p1 + 0.125 p1 → p1 = 1/3, p0 = 7/12, p2 = 1/12.
    np.testing.assert_allclose(p, [7 / 12, 1 / 3, 1 / 12], atol=1e-12)


def test_fixed_steps_and_empty_seeds():
    adjacency = sparse.csr_matrix(np.array([[0, 1], [1, 0]], dtype=float))
    transition = transition_matrix(adjacency)
    one = personalized_pagerank(transition, {0: 1.0}, damping=0.5, iterations=1)
    np.testing.assert_allclose(one, [0.5, 0.5])
    assert not personalized_pagerank(transition, {}, damping=0.5).any()


def _scattered_graph(n: int, edges: int, seed: int) -> sparse.csr_matrix:
    """A random undirected weighted graph with nodes numbered at random (as a store's
    first-appearance order numbers them), a few left without edges."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n - 5, edges), rng.integers(0, n - 5, edges)
    weights = rng.random(edges) + 0.1
    one_way = sparse.coo_matrix((weights, (src, dst)), shape=(n, n)).tocsr()
    return (one_way + one_way.T).tocsr()


def test_a_renumbered_walk_scores_as_the_walk_as_read():
    """The walk over the locality renumbering (threaded product) gives every node the
    score the plain walk gives it, to rounding, with dangling nodes and a damping of
    0.5 (HippoRAG 2's); below the size where it pays no renumbering is made."""
    from hygraph.graph.algorithms.ordered import ORDER_FROM, ordered_transpose
    from hygraph.graph.algorithms.ppr import transition_transpose

    adjacency = _scattered_graph(3_000, ORDER_FROM, seed=3)
    transposed = transition_transpose(adjacency)
    dangling = np.asarray(adjacency.sum(axis=1)).ravel() == 0
    assert dangling.sum() == 5
    ordered = ordered_transpose(transposed)
    assert ordered is not None and sorted(ordered.order) == list(range(3_000))
    assert not np.array_equal(ordered.order, np.arange(3_000))  # really renumbered
    rng = np.random.default_rng(4)
    for seeds in ({0: 1.0, 17: 0.5}, rng.random(3_000)):
        plain = personalized_pagerank(None, seeds, damping=0.5, transposed=transposed,
                                      dangling=dangling)  # fmt: skip
        walked = personalized_pagerank(None, seeds, damping=0.5, transposed=transposed,
                                       dangling=dangling, ordered=ordered)  # fmt: skip
        np.testing.assert_allclose(walked, plain, rtol=1e-12, atol=1e-15)
        assert walked.sum() == pytest.approx(1.0)
    small = _scattered_graph(100, 200, seed=5)
    assert ordered_transpose(transition_transpose(small)) is None


def test_a_walk_graph_keeps_its_renumbering():
    """A walk graph renumbers once and reuses it (a cached property of the view's graph)."""
    from hygraph.graph.view import WalkGraph

    adjacency = _scattered_graph(3_000, 20_000, seed=6)
    graph = WalkGraph([str(i) for i in range(3_000)], {str(i): i for i in range(3_000)}, adjacency)
    assert graph.ordered_transposed is graph.ordered_transposed
    assert graph.ordered_transposed.matrix.nnz == graph.transposed.nnz


def test_a_large_graph_keeps_its_numbering_but_walks_on_threads(monkeypatch):
    """Above the renumbering bound the order is the identity (no reverse Cuthill-McKee
    pass per graph version) and the scores are the plain walk's."""
    import hygraph.graph.algorithms.ordered as ordered_module
    from hygraph.graph.algorithms.ppr import transition_transpose

    monkeypatch.setattr(ordered_module, "RENUMBER_UP_TO", 30_000)
    adjacency = _scattered_graph(3_000, 20_000, seed=8)
    transposed = transition_transpose(adjacency)
    assert transposed.nnz > 30_000
    ordered = ordered_module.ordered_transpose(transposed)
    assert ordered is not None and np.array_equal(ordered.order, np.arange(3_000))
    dangling = np.asarray(adjacency.sum(axis=1)).ravel() == 0
    plain = personalized_pagerank(None, {1: 1.0}, transposed=transposed, dangling=dangling)
    walked = personalized_pagerank(None, {1: 1.0}, transposed=transposed, dangling=dangling,
                                   ordered=ordered)  # fmt: skip
    np.testing.assert_allclose(walked, plain, rtol=1e-12, atol=1e-15)
