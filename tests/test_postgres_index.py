"""The index on each graph store (SQLite and a real PostgreSQL server): the guarantees
of the store contract seen through the public API, the CLI and both framework
integrations: same rankings, resumable builds, deletes that leave nothing dangling,
one writer at a time (on any host), readers never blocked, clear errors."""

from __future__ import annotations

import json

import pytest

from hygraph import GraphIndex
from hygraph.errors import ConfigError, HygraphError, IndexMismatchError
from hygraph.ingest import Document
from hygraph.manifest import MANIFEST_NAME

DOCS = [
    Document("harbor", "Harrowby is a port town. Its shipyard is Aldercott.", title="Harrowby"),
    Document(
        "yard",
        "Aldercott Shipyard was founded in 1819 by Josiah Aldercott in Harrowby.",
        title="Aldercott Shipyard",
    ),
    Document(
        "flood",
        "The Great Dunmere Flood of 1931 destroyed the Old Ost Bridge near Harrowby.",
        title="Great Dunmere Flood",
    ),
]
QUESTIONS = [
    "Who founded the shipyard of the port town Harrowby?",
    "What destroyed the Old Ost Bridge?",
    "When was Aldercott Shipyard founded?",
]


@pytest.fixture
def server(postgres_server):
    if postgres_server is None:
        pytest.skip("no PostgreSQL server (set HYGRAPH_TEST_POSTGRES or install postgresql)")
    return postgres_server


def _store_of(store_location) -> str | None:
    """The ``store=`` argument for the backend under test (None: the SQLite file)."""
    return store_location() if store_location.backend == "postgresql" else None


def _dangling(index: GraphIndex) -> dict[str, int]:
    """Rows naming something that is not there (each must be 0)."""
    things = "SELECT id FROM nodes UNION ALL SELECT id FROM chunks"
    checks = {
        "edge ends": f"SELECT COUNT(*) FROM edges WHERE src NOT IN ({things})"
        f" OR dst NOT IN ({things})",
        "node sources": "SELECT COUNT(*) FROM node_sources WHERE chunk_id NOT IN"
        " (SELECT id FROM chunks)",
        "edge sources": "SELECT COUNT(*) FROM edge_sources WHERE chunk_id NOT IN"
        " (SELECT id FROM chunks)",
        "edges without provenance": "SELECT COUNT(*) FROM edges e WHERE NOT EXISTS (SELECT 1"
        " FROM edge_sources s WHERE s.src = e.src AND s.dst = e.dst AND s.kind = e.kind)",
        "chunks without document": "SELECT COUNT(*) FROM chunks WHERE doc_id NOT IN"
        " (SELECT id FROM documents)",
        "extractions": "SELECT COUNT(*) FROM extractions WHERE chunk_id NOT IN"
        " (SELECT id FROM chunks)",
    }
    return {name: int(index.store._query(sql)[0][0]) for name, sql in checks.items()}


def test_both_stores_give_the_same_index_and_rankings(tmp_path, minilm, server, sample_path):
    """The sample corpus built on SQLite and on PostgreSQL: same counts, and every method
    ranks the same passages with the same scores."""
    from postgres_server import schema_url

    url = schema_url(server, "same")
    docs = sorted(sample_path.glob("*.md"))
    methods = ["vanilla", "hybrid-ppr", "hypergraph", "bm25"]
    results = {}
    for name, store in (("sqlite", None), ("postgresql", url)):
        with GraphIndex(tmp_path / name, embedder=minilm, progress=False, store=store) as index:
            index.insert(docs, methods=methods)
            counts = index.store.counts()
            ranked = {
                (m, q): [(e.id, round(e.score, 6)) for e in index.retrieve(q, m, top_k=5).items]
                for m in methods
                for q in ["Who designed the dry dock?", "Which ships were built in the town?"]
            }
            results[name] = (counts, ranked)
    assert results["sqlite"] == results["postgresql"]
    manifest = json.loads((tmp_path / "postgresql" / MANIFEST_NAME).read_text())
    assert manifest["store"].startswith("postgresql://") and "schema=" in manifest["store"]
    assert not (tmp_path / "postgresql" / "graph.sqlite").exists()


def test_a_build_killed_mid_embedding_resumes_without_duplicates(
    store_location, tmp_path, minilm, monkeypatch, layer_by_layer
):
    from test_index import FlakyEmbedder

    import hygraph.layers.chunks as chunks_module

    monkeypatch.setattr(chunks_module, "EMBED_BATCH", 1)
    path = tmp_path / "idx"
    index = GraphIndex(path, embedder=FlakyEmbedder(minilm, 1), progress=False,
                       store=_store_of(store_location))  # fmt: skip
    with pytest.raises(RuntimeError, match="simulated crash"):
        index.insert(DOCS, methods=["vanilla", "hybrid-ppr"])
    index.close()
    with GraphIndex.open(path, embedder=minilm, progress=False) as index:
        assert index.vectors.count("chunks") == 1
        report = index.insert(DOCS, methods=["vanilla", "hybrid-ppr"])
        assert report.added == [] and report.chunks_embedded == 2
        assert index.store.counts()["documents"] == 3 and index.vectors.count("chunks") == 3
        assert index.store.done_items("vectors:chunks") == set(index.store.chunk_ids())
        assert index.retrieve(QUESTIONS[1], "hybrid-ppr", top_k=1).passages == ["flood"]


def test_a_delete_leaves_nothing_dangling(store_location, tmp_path, minilm):
    with GraphIndex(tmp_path / "idx", embedder=minilm, progress=False,
                    store=_store_of(store_location)) as index:  # fmt: skip
        index.insert(DOCS, methods=["vanilla", "hybrid-ppr", "hypergraph"])
        before = index.store.counts()
        index.delete("yard")
        after = index.store.counts()
        assert after["documents"] == 2 and after["chunks"] == before["chunks"] - 1
        assert _dangling(index) == dict.fromkeys(_dangling(index), 0)
        assert "yard" not in index.retrieve(QUESTIONS[2], "hybrid-ppr", top_k=3).passages


def test_a_second_writer_on_another_host_fails_at_once(server, tmp_path, minilm):
    """The lock file guards one disk; with a shared store another host's writer (here:
    another connection holding the store's lock) makes an insert fail in one line before
    anything is written, and once it lets go the insert goes through."""
    from postgres_server import schema_url

    from hygraph.graph.postgres import PostgresGraphStore
    from hygraph.locks import IndexBusyError

    url = schema_url(server, "lock")
    with GraphIndex(tmp_path / "idx", embedder=minilm, progress=False, store=url) as index:
        index.insert(DOCS[:1], methods=["vanilla"])
        other = PostgresGraphStore(url)
        assert other.try_writer_lock() is None
        try:
            with pytest.raises(IndexBusyError, match="written through its store by server process"):
                index.insert(DOCS[1:], methods=["vanilla"])
            assert index.store.counts()["documents"] == 1
            # ... and the other side sees this index's writer the same way.
        finally:
            other.release_writer_lock()
        index.insert(DOCS[1:], methods=["vanilla"])
        assert index.store.counts()["documents"] == len(DOCS)
        with index._writer.held():
            assert other.try_writer_lock() is not None
        assert other.try_writer_lock() is None
        other.release_writer_lock()
        other.close()


def test_readers_answer_while_a_write_transaction_is_open(store_location, tmp_path, minilm):
    """A reader (another connection) never waits for a writer: it reads what is committed
    while a write transaction is open, and the new state once it commits."""
    from hygraph.graph.store import Node, open_store

    location = store_location()
    writer, reader = open_store(location), None
    try:
        writer.upsert_nodes([Node("a", "entity", "A")])
        reader = open_store(location)
        with writer.transaction():
            writer.upsert_nodes([Node("b", "entity", "B")])
            assert reader.counts()["nodes"] == {"entity": 1}  # answered, not blocked
            assert set(reader.get_nodes(["a", "b"])) == {"a"}
        assert reader.counts()["nodes"] == {"entity": 2}
        assert reader.data_version() != 0 or store_location.backend == "sqlite"
    finally:
        writer.close()
        if reader is not None:
            reader.close()


def test_store_arguments_are_checked(tmp_path, minilm, server):
    from postgres_server import schema_url

    with pytest.raises(ConfigError, match="not a postgresql:// URL"):
        GraphIndex(tmp_path / "a", embedder=minilm, store="mysql://x/y")
    with GraphIndex(tmp_path / "b", embedder=minilm, progress=False) as index:
        index.insert(DOCS[:1], methods=["vanilla"])
    with pytest.raises(IndexMismatchError, match="keeps its graph in"):
        GraphIndex(tmp_path / "b", embedder=minilm, store=schema_url(server))
    with pytest.raises(ConfigError, match="schema"):
        GraphIndex(tmp_path / "c", embedder=minilm, store=f"{server}?schema=bad-name")
    with pytest.raises(HygraphError, match="cannot connect to the PostgreSQL store") as caught:
        GraphIndex(tmp_path / "d", embedder=minilm,
                   store="postgresql://someone:secret@127.0.0.1:1/nothing")  # fmt: skip
    assert "secret" not in str(caught.value) and "\n" not in str(caught.value)
    # A password given in the URL is used, not recorded.
    url = schema_url(server.replace("hygraph@", "hygraph:not-needed@"), "pw")
    with GraphIndex(tmp_path / "e", embedder=minilm, progress=False, store=url) as index:
        index.insert(DOCS[:1], methods=["vanilla"])
    recorded = json.loads((tmp_path / "e" / MANIFEST_NAME).read_text())["store"]
    assert "not-needed" not in recorded and recorded.startswith("postgresql://hygraph@")
    # Another address of the same database and schema is how this process reaches it;
    # another schema is another index.
    other_address = url.replace("hygraph:not-needed@127.0.0.1", "hygraph@localhost")
    with GraphIndex.open(tmp_path / "e", embedder=minilm, store=other_address) as index:
        assert index.store.counts()["documents"] == 1
    with pytest.raises(IndexMismatchError, match="keeps its graph in"):
        GraphIndex.open(tmp_path / "e", embedder=minilm, store=schema_url(server, "elsewhere"))


def test_cli_and_both_frameworks_take_a_store_url(tmp_path, minilm, server, capsys):
    from langchain_core.documents import Document as LCDocument
    from llama_index.core import Document as LIDocument
    from postgres_server import schema_url

    from hygraph.cli import main
    from langchain_hygraph import HyGraphRetriever
    from llama_index_hygraph import HyGraphIndex

    folder = tmp_path / "docs"
    folder.mkdir()
    for doc in DOCS:
        (folder / f"{doc.id}.txt").write_text(doc.text)
    url = schema_url(server, "cli")
    index_dir = str(tmp_path / "cli")
    assert main(["index", str(folder), "--index", index_dir, "--store", url,
                 "--method", "vanilla", "--no-progress"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["query", "--index", index_dir, "--json", QUESTIONS[1], "--top-k", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passages"] and "Ost Bridge" in json.dumps(out)

    texts = [d.text for d in DOCS]
    retriever = HyGraphRetriever.from_documents(
        [LCDocument(page_content=t) for t in texts], method="vanilla",
        persist_dir=tmp_path / "lc", store=schema_url(server, "lc"), k=1,
    )  # fmt: skip
    try:
        assert "Ost Bridge" in retriever.invoke(QUESTIONS[1])[0].page_content
        assert retriever.graph_index.manifest.store is not None
    finally:
        retriever.close()
    li = HyGraphIndex.from_documents(
        [LIDocument(text=t) for t in texts], method="vanilla",
        persist_dir=tmp_path / "li", store=schema_url(server, "li"),
    )  # fmt: skip
    try:
        nodes = li.as_retriever(similarity_top_k=1).retrieve(QUESTIONS[1])
        assert "Ost Bridge" in nodes[0].node.get_content()
        assert li.graph_index.manifest.store is not None
    finally:
        li.close()


def test_another_host_serves_the_index_from_the_shared_store(tmp_path, minilm, server, qdrant):
    """A second host (another folder, the same store and Qdrant server) opens the index
    from the store alone: same passages, and it sees what the first host builds later.
    An index with embedded vectors cannot be joined so, and says why."""

    from postgres_server import schema_url

    client = qdrant  # the Qdrant server both hosts reach (or local mode standing for one)
    url = schema_url(server, "hosts")
    first = GraphIndex(tmp_path / "host-a", embedder=minilm, progress=False, store=url,
                       qdrant_client=client, qdrant_collection="shared")  # fmt: skip
    first.insert(DOCS[:2], methods=["vanilla"])
    second = GraphIndex(tmp_path / "host-b", embedder=minilm, progress=False, store=url,
                        qdrant_client=client)  # fmt: skip
    assert second.methods == ["vanilla"]
    question = QUESTIONS[0]
    assert (
        second.retrieve(question, "vanilla").passages
        == first.retrieve(question, "vanilla").passages
    )
    first.insert(DOCS[2:], methods=["vanilla", "hybrid-ppr"])
    second.close()
    with GraphIndex.open(tmp_path / "host-b", embedder=minilm, qdrant_client=client) as again:
        assert "hybrid-ppr" in again.methods
        assert again.retrieve(QUESTIONS[1], "hybrid-ppr", top_k=1).passages == ["flood"]
        # Matrices derived from server vectors are kept too, keyed by the store's commit
        # counter: a later process maps them instead of reading every vector back.
        kept = {p.name.split(".")[0] for p in (tmp_path / "host-b" / "vector-matrices").iterdir()}
        assert "facts" in kept
        before = again.retrieve(QUESTIONS[0], "hybrid-ppr").passages
    first.insert([Document("mill", "Harrowby also had a mill, Ost Mill, from 1840.")])
    with GraphIndex.open(tmp_path / "host-b", embedder=minilm, qdrant_client=client) as again:
        assert again.retrieve(QUESTIONS[0], "hybrid-ppr").passages != [] and before
        assert "mill" in again.retrieve("When was Ost Mill built?", "hybrid-ppr", top_k=2).passages
    first.close()

    embedded = schema_url(server, "embedded")
    with GraphIndex(tmp_path / "host-c", embedder=minilm, progress=False, store=embedded) as one:
        one.insert(DOCS[:1], methods=["vanilla"])
    with pytest.raises(IndexMismatchError, match="keeps its vectors embedded on the host"):
        GraphIndex(tmp_path / "host-d", embedder=minilm, store=embedded)


def test_a_large_insert_or_ignore_goes_through_copy_and_adds_what_the_statement_adds(
    server, monkeypatch
):
    """A batch of ``INSERT OR IGNORE`` rows past ``COPY_FROM_ROWS`` streams through COPY;
    the table ends as a statement per row leaves it: the same rows (text with tabs,
    newlines, backslashes and quotes, NULLs, floats), the first of two rows with one key,
    rows already there left alone, the order added (``rowid``), the count of rows added."""
    from postgres_server import schema_url

    from hygraph.graph import postgres

    sql = (
        "INSERT OR IGNORE INTO documents(id, title, source, content_hash, metadata, n_chunks,"
        " added_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
    )
    rows = [(f"d{i % 290:03d}", f"t\t{i}\n\\x'\"", None, f"h{i}", None, i, i / 7)
            for i in range(300)]  # fmt: skip
    rows.reverse()  # ids out of key order: the order added must be the order given
    used = []
    copy_ignoring = postgres._Connection._copy_ignoring
    monkeypatch.setattr(postgres._Connection, "_copy_ignoring",
                        staticmethod(lambda *a: used.append(1) or copy_ignoring(*a)))  # fmt: skip

    def fill(name: str, copy_from: int) -> tuple[list, int]:
        monkeypatch.setattr(postgres, "COPY_FROM_ROWS", copy_from)
        store = postgres.PostgresGraphStore(schema_url(server, name))
        with store.transaction() as conn:
            conn.executemany(sql, rows[:5])  # a few there before
        before = store._conn.total_changes
        with store.transaction() as conn:
            conn.executemany(sql, rows)
        added = store._conn.total_changes - before
        table = store._query("SELECT * FROM documents ORDER BY rowid")
        store.drop()
        store.close()
        return table, added

    by_statement = fill("bulk_rows", 10**9)
    assert not used
    by_copy = fill("bulk_copy", 256)
    assert used == [1]  # the five rows before are below the threshold
    assert by_copy == by_statement
    table, added = by_copy
    assert len(table) == 290 and added >= 285  # (the write also bumps the commit counter)
    assert table[0][1:3] == ("d009", "t\t299\n\\x'\"")  # rows[0], the first given
