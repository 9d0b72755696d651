"""``hygraph copy``: an index moves to a PostgreSQL store and a Qdrant server and back,
ranking the same passages everywhere, and a copy stopped half-way is finished by
running it again, with nothing duplicated.

The Qdrant server is qdrant-client's local mode, and a real server when
``HYGRAPH_TEST_QDRANT_URL`` names one (``tests/qdrant_server.py``); the PostgreSQL server
is a real one (``tests/postgres_server.py``).
"""

from __future__ import annotations

import json

import pytest

from hygraph import GraphIndex
from hygraph.errors import IndexMismatchError

METHODS = ["vanilla", "hybrid-ppr", "hypergraph", "bm25"]
QUESTIONS = ["Who designed the dry dock?", "Which ships were built in the town?"]


@pytest.fixture
def server(postgres_server):
    if postgres_server is None:
        pytest.skip("no PostgreSQL server (set HYGRAPH_TEST_POSTGRES or install postgresql)")
    return postgres_server


@pytest.fixture(scope="module")
def built(tmp_path_factory, minilm, sample_path):
    """An index of the sample corpus as one machine builds it (SQLite, Qdrant Edge)."""
    path = tmp_path_factory.mktemp("copy") / "local"
    with GraphIndex(path, embedder=minilm, progress=False) as index:
        index.insert(sorted(sample_path.glob("*.md")), methods=METHODS)
    return path


def _state(index: GraphIndex) -> tuple:
    """What a copy must keep: counts, vector counts, every method's ranking and scores
    (to 1e-5, or a millionth of a larger score: Qdrant normalizes a cosine vector as it
    stores it, so a vector copied through another store may differ in its last float32
    bit, and a score summed from such cosines, as ``hypergraph``'s ~70, by more than 1e-5)."""
    ranked = {
        (m, q): [
            (e.id, pytest.approx(e.score, rel=1e-6, abs=1e-5))
            for e in index.retrieve(q, m, top_k=5).items
        ]
        for m in METHODS
        for q in QUESTIONS
    }
    vectors = {name: index.vectors.count(name) for name in index.vectors.collection_names()}
    return index.store.counts(), vectors, ranked, sorted(index.methods)


def _no_reading(*args, **kwargs):
    raise AssertionError("a query read a collection's vectors back: no kept matrix matched")


def test_an_index_goes_to_the_shared_topology_and_back_unchanged(
    built, tmp_path, minilm, server, qdrant
):
    from postgres_server import schema_url

    from hygraph.copy import copy_index

    with GraphIndex.open(built, embedder=minilm) as index:
        expected = _state(index)
        generation = index.store.generation()
    client = qdrant
    url = schema_url(server, "copy")
    report = copy_index(built, tmp_path / "shared", store=url, qdrant_client=client,
                        qdrant_collection="passages", progress=False)  # fmt: skip
    assert report.rows["chunks"] == expected[0]["chunks"] and not report.resumed
    assert sum(report.points.values()) == sum(expected[1].values())
    assert client.collection_exists("passages")  # the stock stores' passage collection
    with GraphIndex.open(tmp_path / "shared", embedder=minilm, qdrant_client=client) as index:
        assert index.manifest.store and index.manifest.vectors["backend"] == "server"
        assert not (tmp_path / "shared" / "graph.sqlite").exists()
        assert index.store.generation() == generation  # derived files copied stay valid
        assert _state(index) == expected

    back = copy_index(tmp_path / "shared", tmp_path / "back", progress=False,
                      source_options={"qdrant_client": client})  # fmt: skip
    assert back.rows == report.rows
    with GraphIndex.open(tmp_path / "back", embedder=minilm) as index:
        assert index.manifest.store is None and index.manifest.vectors["backend"] == "edge"
        # Its vectors have write tokens of their own: the copy kept the matrices a query
        # maps under them, so no query reads a collection's vectors back.
        index.resources.matrices._read = _no_reading
        assert _state(index) == expected
    with pytest.raises(IndexMismatchError, match="already holds an index"):
        copy_index(built, tmp_path / "back", progress=False)


def test_a_copy_stopped_half_way_is_finished_by_running_it_again(
    built, tmp_path, minilm, store_location, monkeypatch
):
    import hygraph.copy as copying

    with GraphIndex.open(built, embedder=minilm) as index:
        expected = _state(index)
    store = store_location() if store_location.backend == "postgresql" else None
    real = copying._copy_vectors
    calls = []

    def stopped(src, dst, name, progress):
        calls.append(name)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the copy is killed in its second collection
        return real(src, dst, name, progress)

    monkeypatch.setattr(copying, "_copy_vectors", stopped)
    from hygraph.resources import Resources

    indexed = []  # the embedded collections' HNSW graphs are made, as a build makes them
    monkeypatch.setattr(Resources, "build_search_index", lambda res: indexed.append(res.path))
    target = tmp_path / "copy"
    with pytest.raises(KeyboardInterrupt):
        copying.copy_index(built, target, store=store, progress=False)
    with pytest.raises(IndexMismatchError, match="unfinished copy"):
        GraphIndex.open(target, embedder=minilm)
    report = copying.copy_index(built, target, store=store, progress=False)
    assert {f"table:{t}" for t, _, _ in copying.TABLES} <= set(report.resumed)
    assert f"vectors:{calls[0]}" in report.resumed and calls[1] in report.points
    assert indexed == [target]  # once, by the copy that finished
    with GraphIndex.open(target, embedder=minilm) as index:
        assert _state(index) == expected  # nothing duplicated, nothing missing
        assert index.store.done_items(copying.TASK) == set()


def test_the_copy_command(built, tmp_path, server, capsys):
    from postgres_server import schema_url

    from hygraph.cli import main

    url = schema_url(server, "cli")
    target = str(tmp_path / "pg")
    code = main(["copy", "--index", str(built), "--to", target, "--store", url, "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"]["documents"] == 12 and out["points"]["chunks"] == 18
    assert main(["query", "--index", target, "--json", QUESTIONS[0], "--top-k", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["passages"]
    assert main(["copy", "--index", str(built), "--to", target]) == 2
    assert "already holds an index" in capsys.readouterr().err
