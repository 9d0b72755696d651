"""The graph store's contract, on SQLite and on a real PostgreSQL server: persistence,
idempotent writes, provenance-aware deletes, transactions, the CSR view."""

from __future__ import annotations

import pytest

from hygraph.graph.store import Edge, Node, open_store
from hygraph.ingest import Chunk, Document


def _doc(doc_id: str, *texts: str) -> tuple[Document, list[Chunk]]:
    doc = Document(id=doc_id, text=" ".join(texts), title=doc_id.upper())
    chunks = []
    pos = 0
    for i, text in enumerate(texts):
        chunks.append(
            Chunk(
                Chunk.make_id(doc_id, text),
                doc_id,
                i,
                text,
                len(text.split()),
                pos,
                pos + len(text),
                i * 10,
                i * 10 + 10,
            )
        )
        pos += len(text) + 1
    return doc, chunks


def test_documents_persist_and_reload(store_location):
    path = store_location()
    store = open_store(path)
    doc, chunks = _doc("a", "alpha one", "alpha two")
    assert store.add_document(doc, chunks) is True
    store.close()

    store = open_store(path)
    assert store.document_ids() == ["a"]
    assert [c.text for c in store.chunks_of("a")] == ["alpha one", "alpha two"]
    assert store.get_document("a").title == "A"
    assert store.counts()["chunks"] == 2


def test_idempotent_insert(store_location):
    store = open_store(store_location())
    doc, chunks = _doc("a", "alpha one", "alpha two")
    assert store.add_document(doc, chunks) is True
    assert store.add_document(doc, chunks) is False
    store.upsert_nodes([Node("e1", "entity", "Alpha", sources=[chunks[0].id])] * 2)
    store.upsert_edges([Edge("e1", chunks[0].id, "mentions", sources=[chunks[0].id])] * 2)
    counts = store.counts()
    assert counts == {
        "documents": 1,
        "chunks": 2,
        "extractions": 0,
        "nodes": {"entity": 1},
        "edges": {"mentions": 1},
    }


def test_transaction_rolls_back_everything(store_location):
    store = open_store(store_location())
    doc, chunks = _doc("a", "alpha one")
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.add_document(doc, chunks)
            store.upsert_nodes([Node("e1", "entity", "Alpha")])
            raise RuntimeError("crash mid-build")
    assert store.counts() == {
        "documents": 0,
        "chunks": 0,
        "extractions": 0,
        "nodes": {},
        "edges": {},
    }


def test_delete_keeps_shared_nodes_and_drops_orphans(store_location):
    store = open_store(store_location())
    da, ca = _doc("a", "Alpha met Beta")
    db, cb = _doc("b", "Beta met Gamma")
    store.add_document(da, ca)
    store.add_document(db, cb)
    store.upsert_nodes(
        [
            Node("alpha", "entity", "Alpha", sources=[ca[0].id]),
            Node("beta", "entity", "Beta", sources=[ca[0].id]),
            Node("beta", "entity", "Beta", sources=[cb[0].id]),
            Node("gamma", "entity", "Gamma", sources=[cb[0].id]),
        ]
    )
    store.upsert_edges(
        [
            Edge("alpha", "beta", "related", sources=[ca[0].id]),
            Edge("beta", "gamma", "related", sources=[cb[0].id]),
        ]
    )
    assert set(store.get_nodes(["beta"])["beta"].sources) == {ca[0].id, cb[0].id}

    removed = store.delete_document("a")
    assert removed.chunk_ids == [ca[0].id]
    assert removed.node_ids == ["alpha"]
    nodes = store.get_nodes(["alpha", "beta", "gamma"])
    assert set(nodes) == {"beta", "gamma"}
    assert nodes["beta"].sources == (cb[0].id,)
    assert [(e.src, e.dst) for e in store.edges_of("beta")] == [("beta", "gamma")]
    assert store.document_ids() == ["b"]


def test_forget_sources_and_node_edge_deletes(store_location):
    store = open_store(store_location())
    store.upsert_nodes(
        [
            Node("x", "li_chunk", text="Alpha met Beta", sources=["x"]),
            Node("alpha", "entity", "Alpha", sources=["x"]),
            Node("beta", "entity", "Beta", sources=["x", "y"]),
        ]
    )
    store.upsert_edges(
        [
            Edge("alpha", "beta", "related", sources=["x"]),
            Edge("beta", "alpha", "related", sources=["x", "y"]),
        ]
    )
    assert set(store.nodes_from_sources(["y"])) == {"beta"}
    assert store.edges_from_sources(["y"]) == [("beta", "alpha", "related")]

    # Sources outside any document are withdrawn like a document's chunks.
    removed = store.forget_sources(["x"])
    assert removed.doc_id == "" and removed.chunk_ids == ["x"]
    assert set(removed.node_ids) == {"x", "alpha"} and removed.touched_node_ids == ["beta"]
    assert set(store.get_nodes(["x", "alpha", "beta"])) == {"beta"}
    assert store.get_nodes(["beta"])["beta"].sources == ("y",)
    assert store.edges_of("beta") == []  # both edges touched the removed alpha

    store.upsert_nodes([Node("gamma", "entity", "Gamma", sources=["y"])])
    store.upsert_edges([Edge("beta", "gamma", "related", sources=["y"])])
    store.delete_edges([("beta", "gamma", "related"), ("no", "such", "edge")])
    assert store.edges_of("beta") == [] and store.edges_from_sources(["y"]) == []
    store.upsert_edges([Edge("beta", "gamma", "related", sources=["y"])])
    store.delete_nodes(["gamma"])
    assert set(store.get_nodes(["beta", "gamma"])) == {"beta"}
    assert store.edges_of("beta") == [] and store.nodes_from_sources(["y"]) == ["beta"]


def test_progress_survives_reopen(store_location):
    path = store_location()
    store = open_store(path)
    store.mark_done("embed", ["c1", "c2"])
    store.close()
    assert open_store(path).done_items("embed") == {"c1", "c2"}


def test_chunks_not_done_are_found_by_the_database_in_the_order_added(store_location):
    """What a layer has still to take in (``chunks_not_done``) and which of some items a
    task has done (``done_among``), without reading every item done."""
    store = open_store(store_location())
    _, first = _doc("a", "alpha one", "alpha two")
    _, second = _doc("b", "beta one")
    store.add_document(*_doc("a", "alpha one", "alpha two"))
    store.add_document(*_doc("b", "beta one"))
    ids = [c.id for c in first + second]
    assert store.chunks_not_done("embed") == ids
    store.mark_done("embed", [ids[1]])
    store.mark_done("other", [ids[0]])
    assert store.chunks_not_done("embed") == [ids[0], ids[2]]
    assert store.done_among("embed", ids) == {ids[1]}
    assert store.done_among("embed", []) == set()
    many = [f"x{i}" for i in range(1200)]  # past one batch of marks
    store.mark_done("embed", many[::2])
    assert store.done_among("embed", many) == set(many[::2])


def test_chunks_not_done_stays_right_past_its_marks(store_location):
    """``chunks_not_done`` remembers where every earlier chunk was done and looks only
    past it; removed items, deleted chunks, a rolled-back transaction and another
    connection's writes must still show."""
    location = store_location()
    store = open_store(location)
    ids = []
    for name in "abc":
        _, chunks = _doc(name, f"{name} one")
        store.add_document(*_doc(name, f"{name} one"))
        ids += [c.id for c in chunks]
    store.mark_done("t", ids)
    assert store.chunks_not_done("t") == []  # every chunk done: the mark sits on the last
    store.add_document(*_doc("d", "d one"))
    new = [c.id for c in _doc("d", "d one")[1]]
    assert store.chunks_not_done("t") == new
    store.mark_done("t", new)
    assert store.chunks_not_done("t") == []
    # A removed item is pending again (its mark forgotten).
    store.unmark_done("t", [ids[0]])
    assert store.chunks_not_done("t") == [ids[0]]
    store.mark_done("t", [ids[0]])
    assert store.chunks_not_done("t") == []
    store.clear_progress("t")
    assert store.chunks_not_done("t") == ids + new
    store.mark_done("t", ids + new)
    assert store.chunks_not_done("t") == []
    # The last chunk deleted and a new one added: SQLite may give it the same row number.
    store.delete_document("d")
    store.add_document(*_doc("e", "e one"))
    added = [c.id for c in _doc("e", "e one")[1]]
    assert store.chunks_not_done("t") == added
    store.mark_done("t", added)
    # What a transaction read and then rolled back sets no mark.
    with pytest.raises(RuntimeError), store.transaction():
        store.add_document(*_doc("f", "f one"))
        assert store.chunks_not_done("t") == [c.id for c in _doc("f", "f one")[1]]
        raise RuntimeError("rolled back")
    assert store.chunks_not_done("t") == []
    # Another connection removes an item: seen at once.
    other = open_store(location)
    other.unmark_done("t", [ids[1]])
    other.close()
    assert store.chunks_not_done("t") == [ids[1]]


def test_graph_view_hand_checked(store_location):
    """The read view: symmetric weighted adjacency, links by kind, provenance, relationships;
    one view per store version (a write replaces it)."""
    from hygraph.graph.view import graph_view

    store = open_store(store_location())
    store.upsert_nodes([Node("f1", "fact", None, "a and c", {}, ("c1",))])
    store.upsert_edges(
        [
            Edge("a", "b", "r", 1.0),
            Edge("b", "c", "r", 2.0),
            Edge("a", "c", "other", 5.0),
            Edge("a", "b", "relation", 1.0),
            Edge("f1", "a", "incidence", 1.0),
            Edge("f1", "c", "incidence", 1.0),
        ]
    )
    view = graph_view(store)
    assert graph_view(store) is view
    graph = view.walk_graph(["r"])
    assert graph.ids == ["a", "b", "c"]
    dense = graph.adjacency.toarray()
    a, b, c = (graph.position[x] for x in "abc")
    assert dense[a, b] == dense[b, a] == 1.0
    assert dense[b, c] == dense[c, b] == 2.0
    assert dense[a, c] == 0.0
    assert sorted(graph.neighbours("b")) == ["a", "c"] and graph.neighbours("zz") == []
    assert dense[b].sum() == 3.0
    unweighted = view.walk_graph(["r"], weighted=False, provenance_of=["fact"], nodes_of=["fact"])
    assert unweighted.adjacency.toarray()[b, c] == 1.0
    assert "f1" in unweighted.position and "c1" in unweighted.neighbours("f1")
    assert view.links("r").out == {"a": ["b"], "b": ["c"]}
    assert view.links("r").into == {"b": ["a"], "c": ["b"]}
    assert view.provenance("fact") == {"f1": ["c1"]}
    rels = view.relationships("a")
    assert [(r.kind, r.members) for r in rels] == [
        ("relation", ("a", "b")),
        ("fact", ("a", "c")),
    ]
    store.upsert_edges([Edge("c", "d", "r", 1.0)])
    assert graph_view(store) is not view


def test_edge_pairs_lists_one_kind_by_source_then_target(store_location):
    """``edge_pairs`` (the relation ids a kept fact matrix is made of) gives the pairs of
    ``edge_rows`` for one kind, ordered, without reading the rows' weights."""
    store = open_store(store_location())
    store.upsert_nodes([Node(n, "entity", n.upper(), sources=["c"]) for n in ("a", "b", "c")])
    store.upsert_edges(
        [
            Edge("c", "a", "relation", sources=["c"]),
            Edge("a", "c", "relation", weight=2.0, sources=["c"]),
            Edge("a", "b", "relation", sources=["c"]),
            Edge("a", "b", "synonym", sources=["c"]),
        ]
    )
    assert store.edge_pairs("relation") == [("a", "b"), ("a", "c"), ("c", "a")]
    assert sorted((s, d) for s, d, _ in store.edge_rows(["relation"])) == store.edge_pairs(
        "relation"
    )
    assert store.edge_pairs("synonym") == [("a", "b")]
    assert store.edge_pairs("mentions") == []
