"""The walk's fast paths compute exactly what the plain code they replaced computed.

``hybrid-ppr`` (and every method walking a PPR graph) was made faster without changing
a ranking: the power iteration runs in buffers, the top of a ranking is found without
sorting every node, a passage's dense restart is added for all passages at once, and
the vectors scored against each question are read batch by batch and kept on disk. Each
is checked here against the plain code it replaced, kept below as the reference, for
equality to the last bit (not approximately): a ranking is decided by float order.

The on-disk matrices (``vector-matrices/`` under the index folder) are checked for being
read instead of the vector store once written, and made again after any write to their
collection or change to the graph, never read stale.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import sparse
from test_ppr_methods import A, B, C, D, kg, op  # noqa: F401 - kg is a fixture
from worlds import word_resources

from hygraph.graph.algorithms.ppr import (
    personalized_pagerank,
    symmetric_adjacency,
    transition_matrix,
    transition_transpose,
)
from hygraph.graph.kinds import EdgeKind
from hygraph.graph.ppr_views import passage_walk
from hygraph.graph.store import Edge, GraphStore, Node
from hygraph.graph.view import graph_view
from hygraph.kept_matrices import MATRIX_DIR
from hygraph.operators.ppr import EDGE_COLLECTIONS, _best, _ranked, _top, exact_scores
from hygraph.operators.state import State
from hygraph.vectors import edge as edge_backend
from hygraph.vectors import open_vector_index

# --------------------------------------------------------------------------- references


def plain_ppr(
    transition: Any,
    reset: np.ndarray,
    *,
    damping: float,
    iterations: int | None = None,
    tol: float = 1e-8,
    max_iterations: int = 100,
) -> np.ndarray:
    """The power iteration as it was written before (one new array per operation)."""
    n = transition.shape[0]
    reset = np.asarray(reset, dtype=np.float64).ravel().copy()
    reset[~(reset > 0)] = 0.0
    total = reset.sum()
    if total <= 0:
        return np.zeros(n)
    reset /= total
    dangling = np.asarray(transition.sum(axis=1)).ravel() == 0
    forward = transition.T.tocsr()
    p = reset.copy()
    for _ in range(iterations if iterations is not None else max_iterations):
        walked = forward @ p
        walked += p[dangling].sum() * reset
        new = (1.0 - damping) * reset + damping * walked
        done = iterations is None and np.abs(new - p).sum() < tol
        p = new
        if done:
            break
    return p


def plain_ranked(ids: list[str], scores: np.ndarray, k: int) -> list[tuple[str, float]]:
    order = np.argsort(-scores, kind="stable")
    out = []
    for i in order[: k if k > 0 else len(order)]:
        if scores[i] <= 0:
            break
        out.append((ids[i], float(scores[i])))
    return out


def plain_passage_ppr(res: Any, state: State, *, damping: float = 0.5,
                      passage_weight: float = 0.05, passage_pool: int = 0, depth: int = 100,
                      prior: str = "", prior_weight: float = 0.0,
                      prior_k: float = 60.0) -> list[tuple[str, float]]:  # fmt: skip
    """``chunk.ppr`` as it was written before: a Python loop over every passage."""
    ids, cosines = exact_scores(res, state, "chunks", state.query_vector(res))
    order = _top(cosines, passage_pool if passage_pool > 0 else len(ids))
    dense = [(ids[i], float(cosines[i])) for i in order]
    low, high = float(cosines.min()), float(cosines.max())
    walk = passage_walk(state.view(res))
    position = walk.graph.position
    reset = np.zeros(len(walk.graph.ids), dtype=np.float64)
    for entity, weight in state.seeds.items():
        if entity in position:
            reset[position[entity]] += weight
    first = state.rankings.get(prior, []) if prior else []
    if not reset.any():
        if first:
            return [(c, float(len(first) - i)) for i, c in enumerate(first[: depth or None])]
        return dense[: depth or None]
    span = high - low
    for chunk, score in dense:
        if chunk in position:
            normalised = (score - low) / span if span > 0 else 1.0
            reset[position[chunk]] += passage_weight * normalised
    for rank, chunk in enumerate(first, start=1):
        if chunk in position:
            reset[position[chunk]] += prior_weight * (prior_k + 1) / (prior_k + rank)
    scores = plain_ppr(walk.graph.transition, reset, damping=damping)
    scores = np.where(walk.is_chunk, scores, 0.0)
    return plain_ranked(walk.graph.ids, scores, depth)


def random_graph(n: int, m: int, seed: int, isolated: int = 0) -> sparse.csr_matrix:
    """A weighted undirected graph; the last ``isolated`` nodes have no edge (dangling)."""
    rng = np.random.default_rng(seed)
    linked = n - isolated
    edges = [(int(i), int(j), float(w)) for i, j, w in zip(
        rng.integers(0, linked, m), rng.integers(0, linked, m), rng.random(m) * 2, strict=True
    )]  # fmt: skip
    return symmetric_adjacency(n, edges)


# --------------------------------------------------------------------------- the walk


@pytest.mark.parametrize("isolated", [0, 7])
@pytest.mark.parametrize("damping", [0.5, 0.7])
@pytest.mark.parametrize("iterations", [None, 2])
def test_buffered_walk_equals_the_plain_loop_bit_for_bit(isolated, damping, iterations):
    adjacency = random_graph(300, 900, seed=isolated + 3, isolated=isolated)
    transition = transition_matrix(adjacency)
    rng = np.random.default_rng(1)
    for _ in range(5):
        reset = np.where(rng.random(300) < 0.3, rng.random(300), 0.0)
        reset[rng.integers(0, 300, 3)] += 1.0
        want = plain_ppr(transition, reset, damping=damping, iterations=iterations)
        got = personalized_pagerank(transition, reset, damping=damping, iterations=iterations)
        kept = personalized_pagerank(
            None, reset, damping=damping, iterations=iterations,
            transposed=transition_transpose(adjacency),
            dangling=np.asarray(adjacency.sum(axis=1)).ravel() == 0,
        )  # fmt: skip
        assert np.array_equal(got, want)
        assert np.array_equal(kept, personalized_pagerank(
            transition, reset, damping=damping, iterations=iterations,
            transposed=transition_transpose(adjacency)))  # fmt: skip


def test_walk_without_transition_needs_its_transpose_and_dangling_mask():
    with pytest.raises(ValueError, match="transposed and dangling"):
        personalized_pagerank(None, np.ones(3), transposed=sparse.eye(3, format="csr"))


@pytest.mark.parametrize("k", [0, 1, 2, 5, 9, 10, 11, 40, 200, 400, 401, 1000])
def test_best_is_the_stable_sort_prefix(k):
    rng = np.random.default_rng(k)
    for scores in (
        rng.integers(0, 6, 400).astype(np.float64),  # many ties, also at the k-th score
        rng.random(400),
        np.where(rng.random(400) < 0.5, 0.0, -0.0) + rng.integers(0, 2, 400),
        rng.integers(0, 3, 400).astype(np.float32),
    ):
        want = np.argsort(-scores, kind="stable")[: k if k > 0 else None]
        assert np.array_equal(_best(scores, k), want)
        ids = [f"n{i}" for i in range(len(scores))]
        assert _ranked(ids, scores, k) == plain_ranked(ids, scores, k)


def plain_walk_graph(rows: list[tuple[str, str, float]], nodes: list[str]) -> tuple[Any, ...]:
    """``build_walk_graph`` as it was written before: Python lists of every entry."""
    position: dict[str, int] = {}
    for src, dst, _ in rows:
        position.setdefault(src, len(position))
        position.setdefault(dst, len(position))
    for node_id in nodes:
        position.setdefault(node_id, len(position))
    r: list[int] = []
    c: list[int] = []
    data: list[float] = []
    for s, d, w in rows:
        i, j = position[s], position[d]
        if i != j:
            r.extend((i, j))
            c.extend((j, i))
            data.extend((float(w), float(w)))
    matrix = sparse.coo_matrix((data, (r, c)), shape=(len(position),) * 2, dtype=np.float64)
    return list(position), matrix.tocsr()


def same_csr(a: Any, b: Any) -> bool:
    """Equal to the last bit: shape, index dtype, layout and values."""
    return (a.shape == b.shape and a.indices.dtype == b.indices.dtype
            and np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
            and np.array_equal(a.data, b.data))  # fmt: skip


def test_walk_graphs_from_arrays_equal_the_list_built_ones(monkeypatch):
    from hygraph.graph import view as view_module

    monkeypatch.setattr(view_module, "STREAM_BATCH", 7)  # rows kept in several batches
    rng = np.random.default_rng(5)
    names = [f"n{i}" for i in range(60)]
    parts = [
        [(names[a], names[b], float(w)) for a, b, w in
         zip(rng.integers(0, 60, 80), rng.integers(0, 60, 80), rng.random(80) * 3, strict=True)]
        for _ in range(3)
    ]  # fmt: skip
    parts[1] += [("n1", "n1", 1.0), ("n2", "n3", 0.5), ("n3", "n2", 0.5), ("n2", "n3", 0.25)]
    builder = view_module.WalkGraphBuilder()
    builder.add(parts[0])
    builder.add(parts[1], factor=2.0)
    builder.add(parts[2], weight=1.0)
    graph = builder.build(["n59", "lonely", "n0"])
    scaled = [(s, d, 2.0 * w) for s, d, w in parts[1]]
    ids, matrix = plain_walk_graph(parts[0] + scaled + [(s, d, 1.0) for s, d, _ in parts[2]],
                                   ["n59", "lonely", "n0"])  # fmt: skip
    assert graph.ids == ids and graph.position == {i: n for n, i in enumerate(ids)}
    assert same_csr(graph.adjacency, matrix)
    ids, matrix = plain_walk_graph(parts[0], [])
    assert same_csr(view_module.build_walk_graph(parts[0]).adjacency, matrix)
    a, b, w = rng.integers(0, 9, 30), rng.integers(0, 9, 30), rng.random(30)
    edges = [(int(i), int(j), float(x)) for i, j, x in zip(a, b, w, strict=True)]
    named = [(str(i), str(j), x) for i, j, x in edges]
    ids, want = plain_walk_graph(named, [str(i) for i in range(9)])
    at = {int(node): n for n, node in enumerate(ids)}  # the edges on the plain positions
    assert same_csr(symmetric_adjacency(9, ((at[i], at[j], x) for i, j, x in edges)), want)
    assert symmetric_adjacency(4, []).nnz == 0


def test_a_view_streams_the_rows_the_store_lists(kg, monkeypatch):  # noqa: F811
    from hygraph.graph import view as view_module

    monkeypatch.setattr(view_module, "STREAM_BATCH", 2)
    view = graph_view(kg.store)
    for kinds in ([EdgeKind.RELATION], [EdgeKind.MENTION], [EdgeKind.MENTION, EdgeKind.SYNONYM]):
        assert list(view.edge_rows(kinds)) == kg.store.edge_rows(kinds)
    assert list(view.provenance_rows("entity")) == kg.store.provenance_of_kind("entity")


# --------------------------------------------------------------------------- chunk.ppr


@pytest.mark.parametrize("pool", [0, 1, 2, 5])
@pytest.mark.parametrize("seeds", [{A: 1.0}, {A: 0.3, D: 0.7}, {}])
@pytest.mark.parametrize("prior", ["", "first"])
def test_passage_walk_ranks_as_the_per_passage_loop(kg, pool, seeds, prior):  # noqa: F811
    question = "Which river does Lake Corva feed?"
    chunks = sorted(kg.chunk.values())
    params = {"damping": 0.7, "passage_weight": 0.05, "passage_pool": pool, "depth": 100,
              "prior": prior, "prior_weight": 0.02, "prior_k": 60.0}  # fmt: skip
    state = State(question, top_k=3, seeds=dict(seeds))
    state.rankings["first"] = [chunks[2], chunks[0]]
    reference = State(question, top_k=3, seeds=dict(seeds))
    reference.rankings["first"] = [chunks[2], chunks[0]]
    op("chunk.ppr", kg.res, state, **params)
    assert state.chunks == plain_passage_ppr(kg.res, reference, **params)
    assert state.chunks  # the comparison is not between two empty lists


# --------------------------------------------------------------------------- vectors


@pytest.fixture(params=["edge", "server"])
def vectors(request, tmp_path):
    if request.param == "edge":
        index = open_vector_index(tmp_path / "qdrant")
    else:
        import warnings

        from qdrant_client import QdrantClient

        warnings.filterwarnings("ignore", message="Payload indexes have no effect")
        index = open_vector_index(client=QdrantClient(":memory:"), prefix="t_")
    yield index
    index.close()


def test_vector_matrix_reads_rows_in_the_order_asked(vectors, monkeypatch):
    monkeypatch.setattr(edge_backend, "RETRIEVE_BATCH", 3)  # several batches
    rng = np.random.default_rng(0)
    ids = [f"n{i}" for i in range(10)]
    vecs = rng.normal(size=(10, 8)).astype(np.float32)
    vectors.ensure_collection("nodes", 8)
    vectors.upsert("nodes", ids, vecs, [{"kind": "x"}] * 10)
    asked = ["n7", "gone", "n2", "n7", "n9", "n0", "n5", "n1", "also gone"]
    found, matrix = vectors.vector_matrix("nodes", asked)
    assert found == ["n7", "n2", "n9", "n0", "n5", "n1"]  # in order, once, missing left out
    assert matrix.dtype == np.float32 and matrix.shape == (6, 8)
    one_by_one = vectors.vectors("nodes", asked)
    for row, i in zip(matrix, found, strict=True):
        assert np.array_equal(row, one_by_one[i])
    for name, wanted in (("nodes", ["gone"]), ("nope", ids)):
        found, matrix = vectors.vector_matrix(name, wanted)
        assert found == [] and matrix.shape == (0, 0)


def test_every_write_to_a_collection_changes_its_stamp(tmp_path):
    index = open_vector_index(tmp_path / "qdrant")
    index.ensure_collection("nodes", 4)
    seen = {index.stamp("nodes")}
    vec = np.ones((1, 4), dtype=np.float32)
    index.upsert("nodes", ["a"], vec, [{}])
    seen.add(index.stamp("nodes"))
    index.upsert("nodes", ["a"], vec * 2, [{}])  # the same count, another vector
    seen.add(index.stamp("nodes"))
    index.delete("nodes", ["a"])
    seen.add(index.stamp("nodes"))
    assert len(seen) == 4
    other = open_vector_index(tmp_path / "qdrant")  # what another process would read
    assert other.stamp("nodes") == index.stamp("nodes")
    assert index.stamp("never made") == ""
    index.close()
    other.close()


# --------------------------------------------------------------------------- on disk

RELS = [(A, B), (B, C), (C, D)]


def _world(root: Path) -> tuple[GraphStore, Any, Any]:
    """Four entities, three relation edges, and their vectors in ``relations`` and ``facts``."""
    store = GraphStore(root / "graph.sqlite")
    store.upsert_nodes(Node(e, "entity", e, "", {}, []) for e in (A, B, C, D))
    store.upsert_edges(Edge(s, d, EdgeKind.RELATION, 1.0, {}, []) for s, d in RELS)
    vectors = open_vector_index(root / "qdrant")
    res = word_resources(store, vectors, root / "index")
    for collection in EDGE_COLLECTIONS:
        ids = [f"{s}|{d}" for s, d in RELS]
        res.upsert_vectors(collection, ids, ["one two", "two three", "three four"],
                           [{"kind": "relation"}] * 3)  # fmt: skip
    return store, vectors, res


def _files(res: Any) -> list[str]:
    folder = res.path / MATRIX_DIR
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


@pytest.mark.parametrize("collection", EDGE_COLLECTIONS)
def test_fact_collections_are_scored_by_relation_edge(tmp_path, collection):
    store, vectors, res = _world(tmp_path)
    state = State("two three", 3)
    ids, scores = exact_scores(res, state, collection, res.embed_query("two three"))
    assert ids == [f"{s}|{d}" for s, d, _ in store.edge_rows([EdgeKind.RELATION])]
    query = res.embed_query("two three")
    for i, score in zip(ids, scores, strict=True):
        stored = res.stored_vectors(collection, [i])[i]
        want = stored / np.linalg.norm(stored) @ (query / np.linalg.norm(query))
        assert score == pytest.approx(want, abs=1e-6)
    vectors.close()


def test_matrices_are_kept_on_disk_and_made_again_after_a_write(tmp_path, monkeypatch):
    store, vectors, res = _world(tmp_path)
    query = res.embed_query("two three")
    first_ids, first = exact_scores(res, State("q", 3), "relations", query)
    kept = _files(res)
    assert [n.rsplit(".", 1)[1] for n in kept] == ["json", "npy"]
    assert kept[0].startswith("relations.")

    # Another process (a new view of the same version) maps the file; Qdrant is not read.
    def no_reading(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("read the vectors again")

    monkeypatch.setattr(res, "vector_matrix", no_reading)
    graph_view(store)._cache.clear()
    ids, again = exact_scores(res, State("q", 3), "relations", query)
    assert ids == first_ids and np.array_equal(again, first)
    monkeypatch.undo()

    # A write to the collection (same ids, same count) is seen at the next query, without
    # a change to the graph: the new vector scores, and the old matrix is gone.
    res.upsert_vectors("relations", [f"{B}|{C}"], ["one"], [{"kind": "relation"}])
    ids, after = exact_scores(res, State("q", 3), "relations", res.embed_query("one"))
    assert ids == first_ids
    assert after[ids.index(f"{B}|{C}")] == pytest.approx(1.0, abs=1e-6)
    assert len(_files(res)) == 2 and _files(res) != kept

    # A change to the graph: a new edge (its vector written with it) joins the rows.
    store.upsert_edges([Edge(D, A, EdgeKind.RELATION, 1.0, {}, [])])
    res.upsert_vectors("relations", [f"{D}|{A}"], ["four one"], [{"kind": "relation"}])
    ids, scores = exact_scores(res, State("q", 3), "relations", query)
    assert f"{D}|{A}" in ids and len(scores) == 4
    # The other collection keeps its own file.
    exact_scores(res, State("q", 3), "facts", query)
    assert sorted({n.split(".", 1)[0] for n in _files(res)}) == ["facts", "relations"]
    vectors.close()


def test_a_matrix_read_from_disk_scores_as_one_read_from_qdrant(tmp_path):
    store, vectors, res = _world(tmp_path)
    query = res.embed_query("three")
    _, fresh = exact_scores(res, State("q", 3), "relations", query)
    graph_view(store)._cache.clear()
    _, mapped = exact_scores(res, State("q", 3), "relations", query)
    assert np.array_equal(fresh, mapped)
    vectors.close()


def test_a_read_only_index_folder_still_scores(tmp_path, monkeypatch):
    store, vectors, res = _world(tmp_path)

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError("read-only")

    monkeypatch.setattr(np, "save", refuse)
    ids, scores = exact_scores(res, State("q", 3), "relations", res.embed_query("two"))
    assert len(ids) == 3 and len(scores) == 3
    assert not any(n.endswith(".tmp") for n in _files(res))
    vectors.close()


def test_a_build_leaves_the_matrices_a_query_process_maps(tmp_path, sample_path, monkeypatch):
    """After ``insert``, a new process's first query reads no vector back from Qdrant."""
    from hygraph.index import GraphIndex

    docs = sorted(sample_path.glob("*.md"))[:4]
    with GraphIndex(tmp_path / "ix", progress=False) as index:
        index.insert(docs, methods=["hybrid-ppr"])
    kept = sorted(p.name.split(".", 1)[0] for p in (tmp_path / "ix" / MATRIX_DIR).glob("*.npy"))
    # below MIN_CHUNKS passages no walk matrix; below SCREEN_FROM facts no half copy
    assert kept == ["chunks", "facts"]


def test_a_build_keeps_the_half_copy_where_the_screen_reads_it(tmp_path, sample_path, monkeypatch):
    """From ``SCREEN_FROM`` facts on, the build writes the facts' float16 copy too."""
    from hygraph.index import GraphIndex
    from hygraph.vectors import half_screen

    monkeypatch.setattr(half_screen, "SCREEN_FROM", 2)
    docs = sorted(sample_path.glob("*.md"))[:4]
    with GraphIndex(tmp_path / "ix", progress=False) as index:
        index.insert(docs, methods=["hybrid-ppr"])
    kept = sorted(p.name.split(".", 1)[0] for p in (tmp_path / "ix" / MATRIX_DIR).glob("*.npy"))
    assert kept == ["chunks", "facts", "facts-half"]

    def no_reading(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("read the vectors back")

    with GraphIndex.open(tmp_path / "ix", progress=False) as index:
        monkeypatch.setattr(index.resources, "vector_matrix", no_reading)
        result = index.query("When did the Great Dunmere Flood happen?", "hybrid-ppr", top_k=3)
    assert result.chunks
