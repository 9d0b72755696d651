"""The passage walk graph kept on disk by a build, and the store's write count that keys it.

Checked on the small hand-made knowledge graph of ``test_ppr_methods`` and through
``GraphIndex``: a kept graph loads equal to the built one, array for array; any write
to the store (even one that leaves every count as it was) makes it stale.
"""

from __future__ import annotations

import numpy as np
from corpora import HARBOUR_DOCS
from test_ppr_methods import A, B, kg  # noqa: F401 - kg is a fixture

from hygraph import GraphIndex
from hygraph.graph.ppr_views import keep_passage_walk, passage_walk
from hygraph.graph.store import GraphStore, Node
from hygraph.graph.view import GraphView
from hygraph.ingest import Document
from hygraph.kept_matrices import MATRIX_DIR


def test_generation_counts_write_transactions_only(tmp_path):
    store = GraphStore(tmp_path / "g.sqlite")
    start = store.generation()
    with store.transaction():
        pass  # nothing written
    store.chunk_ids()
    assert store.generation() == start
    store.upsert_nodes([Node("x", "entity", "X", "", {}, [])])
    assert store.generation() == start + 1
    store.upsert_nodes([Node("x", "entity", "X", "", {}, [])])  # same counts, a write still
    assert store.generation() == start + 2
    store.close()
    assert GraphStore(tmp_path / "g.sqlite").generation() == start + 2


def test_source_counts_are_the_chunks_a_node_came_from(kg):  # noqa: F811
    counts = kg.store.source_counts([A, B, "nobody"])
    assert counts == {n: len(kg.store.get_nodes([n])[n].sources) for n in (A, B)}


def _same(a, b) -> None:
    assert a.graph.ids == b.graph.ids and a.graph.position == b.graph.position
    for name in ("indptr", "indices", "data"):
        got, want = getattr(a.graph.adjacency, name), getattr(b.graph.adjacency, name)
        assert got.dtype == want.dtype and np.array_equal(got, want)
    assert np.array_equal(a.is_chunk, b.is_chunk) and np.array_equal(a.chunk_counts, b.chunk_counts)


def test_a_kept_walk_loads_equal_to_the_built_one(kg, tmp_path):  # noqa: F811
    folder = tmp_path / "kept"
    built = passage_walk(GraphView(kg.store, kg.store.version()))
    assert keep_passage_walk(GraphView(kg.store, kg.store.version()), folder)
    assert len(list(folder.glob("passage-walk-s1-f2.*.npz"))) == 1
    loaded = passage_walk(GraphView(kg.store, kg.store.version()), keep=folder)
    _same(loaded, built)
    # Other settings are another graph, not this one.
    other = passage_walk(GraphView(kg.store, kg.store.version()), synonyms=False, keep=folder)
    assert other.graph.adjacency.nnz <= built.graph.adjacency.nnz


def _docs(*names: str) -> list[Document]:
    return [Document(text=HARBOUR_DOCS[n][1], id=n, title=HARBOUR_DOCS[n][0]) for n in names]


def test_a_build_keeps_the_walk_and_a_later_write_makes_it_stale(tmp_path, minilm, monkeypatch):
    from hygraph.graph import ppr_views

    path = tmp_path / "ix"
    names = list(HARBOUR_DOCS)
    question = "Who commanded the research vessel built by the shipyard Josiah Aldercott founded?"
    with GraphIndex(path, embedder=minilm, progress=False) as index:
        index.insert(_docs(*names[:-1]))
        kept = list((path / MATRIX_DIR).glob("passage-walk-*.npz"))
        assert len(kept) == 1
        first = index.retrieve(question, top_k=5).chunks
    built: list[int] = []
    original = ppr_views.WalkGraphBuilder.build

    def counting(self, nodes=()):  # noqa: ANN001, ANN202 - a spy on the builder
        built.append(1)
        return original(self, nodes)

    monkeypatch.setattr(ppr_views.WalkGraphBuilder, "build", counting)
    with GraphIndex.open(path, embedder=minilm, progress=False) as index:
        assert index.retrieve(question, top_k=5).chunks == first
        assert not built  # loaded, not built
        store = index.resources.store
        node = next(iter(store.nodes_of_kind("entity")))
        store.upsert_nodes([node])  # written again as it was: every count stays
    with GraphIndex.open(path, embedder=minilm, progress=False) as index:
        assert index.retrieve(question, top_k=5).chunks == first
        assert built  # the kept walk was stale: built again


def test_a_forgotten_memo_is_made_again(tmp_path):
    view = GraphView(GraphStore(tmp_path / "g.sqlite"), (0, 0, 0))
    made = []
    view.memo(("k",), lambda: made.append(1) or len(made))
    assert view.memo(("k",), lambda: made.append(1) or len(made)) == 1  # kept
    view.forget(("k",))
    view.forget(("never kept",))  # nothing to drop: no error
    assert view.memo(("k",), lambda: made.append(1) or len(made)) == 2
    view.store.close()
