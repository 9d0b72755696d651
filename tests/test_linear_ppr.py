"""PPR as a linear map: the block solve, the local push, and the passage walk built on them.

The algorithms are checked against ``numpy.linalg.solve`` of the walk's linear system on
small graphs written out by hand (one node without edges, so that lost mass is covered);
the passage walk with its build-time matrix against the whole-graph walk on the small
hand-made knowledge graph of ``test_ppr_methods``, and through ``GraphIndex`` when a
build writes the matrix and when an insert leaves it to a later build.
"""

from __future__ import annotations

import numpy as np
import pytest
from corpora import HARBOUR_DOCS
from scipy import sparse
from test_ppr_methods import A, B, kg, op  # noqa: F401 - kg is a fixture

from hygraph import GraphIndex
from hygraph.graph.algorithms import linear_ppr
from hygraph.graph.algorithms.linear_ppr import degrees, linear_ppr_block, push_ppr
from hygraph.graph.algorithms.ppr import personalized_pagerank, symmetric_adjacency
from hygraph.graph.ppr_views import passage_walk
from hygraph.graph.view import graph_view
from hygraph.ingest import Document
from hygraph.kept_matrices import MATRIX_DIR
from hygraph.methods.base import get_method
from hygraph.operators import passage_prior
from hygraph.operators.ppr import keep_query_matrices
from hygraph.operators.recipe import settings
from hygraph.operators.state import State

# 0-1-2-3 a path, 1-4 a branch weighing 2, 3-5 and 4-5 closing a cycle; 6 alone.
EDGES = [(0, 1, 1.0), (1, 2, 1.0), (2, 3, 1.0), (1, 4, 2.0), (3, 5, 1.0), (4, 5, 0.5)]
N = 7


def _graph() -> sparse.csr_matrix:
    return symmetric_adjacency(N, EDGES)


def _exact(adjacency: sparse.csr_matrix, s: np.ndarray, damping: float) -> np.ndarray:
    """``(1 - d)(I - d Pᵀ)⁻¹ s`` by a dense solve (rows of nodes without edges stay 0)."""
    dense = adjacency.toarray()
    rows = dense.sum(axis=1, keepdims=True)
    transition = np.divide(dense, rows, out=np.zeros_like(dense), where=rows > 0)
    return (1 - damping) * np.linalg.solve(np.eye(len(dense)) - damping * transition.T, s)


@pytest.mark.parametrize("damping", [0.5, 0.7])
def test_block_solve_matches_the_dense_solution_column_by_column(damping):
    rng = np.random.default_rng(3)
    restarts = rng.standard_normal((N, 5))  # negative entries too: chunk vectors have them
    restarts[:, 0] = [1, 0, 0, 0, 0, 0, 1]  # a seed and the node without edges
    solved = linear_ppr_block(_graph(), restarts, damping=damping)
    for j in range(restarts.shape[1]):
        assert solved[:, j] == pytest.approx(_exact(_graph(), restarts[:, j], damping), abs=1e-9)
    # Normalised, it is what the whole-graph walk (dangling mass back to the seeds) gives.
    s = np.abs(restarts[:, 1]) + restarts[:, 0]
    x = linear_ppr_block(_graph(), s, damping=damping)[:, 0]
    walked = personalized_pagerank(_transition(), s, damping=damping, tol=1e-13,
                                   max_iterations=1000)  # fmt: skip
    assert x / x.sum() == pytest.approx(walked, abs=1e-9)


def _transition() -> sparse.csr_matrix:
    from hygraph.graph.algorithms.ppr import transition_matrix

    return transition_matrix(_graph())


@pytest.mark.parametrize("threshold", [1e-2, 1e-4, 1e-7])
@pytest.mark.parametrize("whole_share", [1.0, 0.3, 0.0])
def test_push_stays_below_the_exact_walk_by_at_most_threshold_times_degree(
    threshold, whole_share, monkeypatch
):
    # 1: rows only (a plain push); 0: every round multiplies the whole matrix; 0.3 mixes.
    monkeypatch.setattr(linear_ppr, "WHOLE_SHARE", whole_share)
    adjacency = _graph()
    degree = degrees(adjacency)
    assert degree.tolist() == [1, 4, 2, 2, 2.5, 1.5, 0]
    s = np.array([0.0, 0.0, 0.0, 0.7, 0.0, 0.0, 0.3])
    exact = _exact(adjacency, s, 0.7)
    estimate, residual = push_ppr(adjacency, degree, s, damping=0.7, threshold=threshold)
    gap = exact - estimate
    assert (gap >= -1e-15).all()
    assert (gap <= threshold * degree + 1e-15).all()
    assert (residual <= threshold * degree + 1e-15).all()
    assert estimate[6] == pytest.approx(0.3 * 0.3)  # alone: its own restart, the rest lost
    # Nothing pushed from where no mass is: a node far from the seed keeps no estimate
    # when the threshold is loose, and the exact value once it is tight.
    if threshold == 1e-7:
        assert estimate == pytest.approx(exact, abs=1e-6)


def _plain_push(adjacency, degree, restart, *, damping, threshold):
    """The push as first written: every round compares all n residuals with their
    thresholds and pushes each node above it (rows only)."""
    estimate = np.zeros(len(degree))
    residual = restart.astype(np.float64).copy()
    limit = threshold * degree
    inverse = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    while (pushed := np.flatnonzero(residual > limit)).size:
        mass = residual[pushed]
        estimate[pushed] += (1.0 - damping) * mass
        residual[pushed] = 0.0
        residual += adjacency[pushed].T @ (damping * mass * inverse[pushed])
    return estimate, residual


@pytest.mark.parametrize("kernels", [True, False])
@pytest.mark.parametrize("whole_share", [1.0, 0.3])
def test_push_pushes_what_a_plain_push_does(kernels, whole_share, monkeypatch):
    # A plain push compares every residual each round and gathers rows with scipy's
    # operators; rows only, the push pushes the same nodes in the same order.
    monkeypatch.setattr(linear_ppr, "WHOLE_SHARE", whole_share)
    if not kernels:
        monkeypatch.setattr(linear_ppr, "_kernels", lambda _adjacency: None)
    rng = np.random.default_rng(11)
    matrix = sparse.random(400, 400, density=0.01, random_state=3, format="csr")
    matrix = sparse.csr_matrix(matrix + matrix.T)  # symmetric; some nodes left without edges
    matrix.setdiag(0.5 * (rng.random(400) < 0.05))  # a few self-loops: mass back to itself
    matrix = sparse.csr_matrix(matrix)
    degree = degrees(matrix)
    restart = np.zeros(400)
    restart[rng.choice(400, 12, replace=False)] = rng.random(12)
    for threshold in (1e-3, 1e-6, 1e-9):
        estimate, residual = push_ppr(matrix, degree, restart, damping=0.5, threshold=threshold)
        plain, plain_residual = _plain_push(matrix, degree, restart, damping=0.5,
                                            threshold=threshold)  # fmt: skip
        if whole_share >= 1.0:
            assert estimate == pytest.approx(plain, abs=1e-15)
            assert residual == pytest.approx(plain_residual, abs=1e-15)
        else:  # whole rounds settle mass sooner: within the bound, never above the walk
            exact = _exact(matrix, restart, 0.5)
            assert (exact - estimate >= -1e-15).all()
            assert (exact - estimate <= threshold * degree + 1e-15).all()
        assert (residual <= threshold * degree + 1e-15).all()


@pytest.mark.parametrize("kernels", [True, False])
@pytest.mark.parametrize("index_type", [np.int32, np.int64])
def test_row_products_equal_scipys_operators(kernels, index_type, monkeypatch):
    if not kernels:  # the public operators, as where scipy lacks the kernels
        monkeypatch.setattr(linear_ppr, "_kernels", lambda _adjacency: None)
    rng = np.random.default_rng(5)
    matrix = sparse.random(60, 60, density=0.1, random_state=7, format="csr")
    matrix = sparse.csr_matrix(matrix + matrix.T)
    matrix.indptr = matrix.indptr.astype(index_type)
    matrix.indices = matrix.indices.astype(index_type)
    products = linear_ppr.RowProducts(matrix)
    out = rng.random(60)
    expected = out.copy()
    for size in (3, 40, 5):  # the buffers grow past their first size, then are reused
        rows = np.sort(rng.choice(60, size, replace=False))
        weights = rng.random(size)
        products.add_rows_transposed(rows, weights, out)
        expected += matrix[rows].T @ weights
        assert products.entries(rows) == matrix[rows].nnz
    assert out == pytest.approx(expected, abs=1e-12)
    x = rng.random(60)
    assert products.product(x) == pytest.approx(matrix @ x, abs=1e-12)


def _walk_state(kg, question: str) -> State:  # noqa: F811
    chunks = list(kg.chunk.values())
    state = State(question, top_k=3, seeds={A: 1.0, B: 0.4})
    state.rankings["first"] = [chunks[1], chunks[2]]
    op("chunk.ppr", kg.res, state, damping=0.7, passage_weight=0.05, prior="first",
       prior_weight=0.02)  # fmt: skip
    return state


def test_the_walk_with_its_build_time_matrix_equals_the_whole_graph_walk(kg, monkeypatch):  # noqa: F811
    monkeypatch.setattr(passage_prior, "MIN_CHUNKS", 0)  # a graph of three passages
    question = "Which river does Lake Corva feed?"
    view = graph_view(kg.store)
    walk = passage_walk(view)
    args = {"damping": 0.7, "synonyms": True, "pair_factor": 2.0}
    assert passage_prior.prior_matrix(kg.res, view, walk, **args) is None  # none written yet
    whole = _walk_state(kg, question).chunks
    steps = [("chunk.ppr", {"passage_pool": 0, **args})]
    kept = keep_query_matrices(kg.res, steps)
    assert "walk-prior(damping=0.7)" in kept
    files = [p.name for p in (kg.res.path / MATRIX_DIR).iterdir()]
    assert any(name.startswith("walk-prior-d0_7-s1-f2.") for name in files)
    matrix = passage_prior.prior_matrix(kg.res, graph_view(kg.store), walk, **args)
    assert matrix is not None and len(matrix.ids) == len(kg.chunk)
    fast = _walk_state(kg, question).chunks
    assert [c for c, _ in fast] == [c for c, _ in whole]
    bound = passage_prior.PUSH_TOLERANCE * walk.graph.degree.max()
    for (_, a), (_, b) in zip(fast, whole, strict=True):
        assert a == pytest.approx(b, abs=bound + 1e-6)
    # A pool of dense passages is not linear in the query: it walks the whole graph.
    pooled = State(question, top_k=3, seeds={A: 1.0})
    op("chunk.ppr", kg.res, pooled, damping=0.7, passage_pool=2)
    assert pooled.chunks


def test_a_small_corpus_walks_the_whole_graph(kg):  # noqa: F811
    walk = passage_walk(graph_view(kg.store))
    assert passage_prior.MIN_CHUNKS > len(kg.chunk)
    args = {"damping": 0.5, "synonyms": True, "pair_factor": 2.0, "make": True}
    assert passage_prior.prior_matrix(kg.res, graph_view(kg.store), walk, **args) is None


def test_recipe_settings_resolve_the_methods_walk_parameters():
    method = get_method("hybrid-ppr")()
    walk = dict(settings(method.recipe, method.config))["chunk.ppr"]
    assert (walk["damping"], walk["synonyms"], walk["pair_factor"], walk["passage_pool"]) == (
        0.7, True, 2.0, 0)  # fmt: skip


def _docs(*names: str) -> list[Document]:
    return [Document(text=HARBOUR_DOCS[n][1], id=n, title=HARBOUR_DOCS[n][0]) for n in names]


def _walk_files(path) -> list[str]:
    return sorted(p.name for p in (path / MATRIX_DIR).glob("walk-prior*.npy"))


def test_a_build_writes_the_walk_matrix_and_a_small_insert_leaves_it_to_the_next(
    tmp_path, minilm, monkeypatch
):
    monkeypatch.setattr(passage_prior, "MIN_CHUNKS", 0)
    names = list(HARBOUR_DOCS)
    path = tmp_path / "index"
    question = "Who commanded the research vessel built by the shipyard Josiah Aldercott founded?"
    with GraphIndex(path, embedder=minilm, progress=False) as index:
        index.insert(_docs(*names[:-1]))
        first = _walk_files(path)
        assert len(first) == 1
        monkeypatch.setattr(passage_prior, "REFRESH_SHARE", 2.0)  # every insert is small
        index.insert(_docs(names[-1]))
        assert _walk_files(path) == first  # the old one, for a graph that has changed
        whole = index.retrieve(question, top_k=5).chunks  # walks the whole graph
        index.insert()  # a build with nothing new writes what is missing
        assert len(_walk_files(path)) == 1 and _walk_files(path) != first
        assert index.retrieve(question, top_k=5).chunks == whole


def test_adding_the_method_to_a_built_index_writes_its_walk_matrix(tmp_path, minilm, monkeypatch):
    """An index built for ``vanilla`` that gets ``hybrid-ppr`` later (no chunk added, its
    layers built): that build writes the walk matrix, so no query process solves it."""
    monkeypatch.setattr(passage_prior, "MIN_CHUNKS", 0)
    path = tmp_path / "index"
    with GraphIndex(path, embedder=minilm, progress=False) as index:
        index.insert(_docs(*HARBOUR_DOCS), methods=["vanilla"])
        assert _walk_files(path) == []
        index.insert(methods=["hybrid-ppr"])
        assert len(_walk_files(path)) == 1


def test_rows_are_grouped_so_a_query_reads_the_clusters_nearest_to_it(monkeypatch):
    """Nine rows in three tight groups: k-means finds the groups, each centre is its
    rows' mean, and a query probing one cluster reads the group it points at."""
    monkeypatch.setattr(passage_prior, "PROBE", 1)
    rng = np.random.default_rng(5)
    axes = np.eye(4, dtype=np.float32)[:3]
    rows = np.vstack([axes[i] * (1 + 0.01 * rng.standard_normal(4)) for i in (2, 0, 1) * 3])
    order, stops, centres = passage_prior._clusters(rows.astype(np.float32))
    assert sorted(order.tolist()) == list(range(9)) and stops[-1] == 9 and len(stops) == 3
    bounds = list(zip([0, *stops[:-1]], stops, strict=True))
    groups = [set(np.argmax(rows[order[a:b]], axis=1).tolist()) for a, b in bounds]
    assert sorted(groups, key=min) == [{0}, {1}, {2}]  # each cluster one group
    for (a, b), centre in zip(bounds, centres, strict=True):
        assert centre == pytest.approx(rows[order[a:b]].mean(axis=0), abs=1e-6)
    prior = passage_prior.KeptPrior(
        ids=[str(i) for i in order], rows=rows[order], totals=np.zeros(4), cosine_sum=np.zeros(4),
        centres=centres, stops=stops, row_at=np.arange(9), at=np.arange(9),
    )  # fmt: skip
    probed = passage_prior._probed(prior, np.array([0, 1, 0, 0], dtype=np.float32))
    read = np.concatenate([np.arange(a, b) for a, b in probed])
    assert np.argmax(rows[order][read], axis=1).tolist() == [1, 1, 1]


def test_vectors_on_a_qdrant_server_use_the_walk_matrix_too(tmp_path, minilm, monkeypatch, qdrant):
    """The least and greatest cosine come from the backend's search, so an index whose
    vectors are on a Qdrant server (``tests/qdrant_server.py``) walks with
    its build-time matrix, keyed by the store's commit counter, and ranks as the
    whole-graph walk does."""
    monkeypatch.setattr(passage_prior, "MIN_CHUNKS", 0)
    question = "Who commanded the research vessel built by the shipyard Josiah Aldercott founded?"
    client = qdrant
    with GraphIndex(tmp_path / "index", embedder=minilm, progress=False,
                    qdrant_client=client) as index:  # fmt: skip
        index.insert(_docs(*HARBOUR_DOCS))
        assert len(_walk_files(tmp_path / "index")) == 1
        used = []
        walk = passage_prior.walk_scores
        monkeypatch.setattr(passage_prior, "walk_scores",
                            lambda *a, **kw: used.append(1) or walk(*a, **kw))  # fmt: skip
        fast = index.retrieve(question, top_k=5).chunks
        assert used  # the matrix, not the whole graph
        monkeypatch.setattr(passage_prior, "prior_matrix", lambda *a, **kw: None)
        assert index.retrieve(question, top_k=5).chunks == fast
