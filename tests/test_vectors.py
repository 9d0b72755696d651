"""Both vector backends behind one interface: Qdrant Edge (embedded) and qdrant-client."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from qdrant_server import KINDS, empty_client

from hygraph.vectors import open_vector_index


@pytest.fixture(params=["edge", *KINDS])
def vectors(request, tmp_path):
    """Each backend: Qdrant Edge, and qdrant-client in local mode and on a real server
    when one is given (``tests/qdrant_server.py``)."""
    if request.param == "edge":
        index = open_vector_index(tmp_path / "qdrant")
        yield index
        index.close()
        return
    with empty_client(request.param) as client:
        index = open_vector_index(client=client, prefix="t_")
        yield index
        index.close()


def _data():
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(20, 8)).astype(np.float32)
    ids = [f"n{i}" for i in range(20)]
    payloads = [{"kind": "entity" if i % 2 else "chunk", "doc_id": f"d{i % 3}"} for i in range(20)]
    return ids, vecs, payloads


def test_upsert_search_filter_delete(vectors):
    ids, vecs, payloads = _data()
    vectors.ensure_collection("nodes", 8)
    vectors.ensure_collection("nodes", 8)  # idempotent
    vectors.upsert("nodes", ids, vecs, payloads)
    vectors.upsert("nodes", ids, vecs, payloads)  # same ids: no duplicates
    assert vectors.count("nodes") == 20

    hits = vectors.search("nodes", vecs[4], 3)
    assert hits[0].id == "n4" and hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[0].payload["kind"] == "chunk"

    chunk_hits = vectors.search("nodes", vecs[5], 5, where={"kind": "chunk"})
    assert chunk_hits and all(h.payload["kind"] == "chunk" for h in chunk_hits)
    multi = vectors.search("nodes", vecs[5], 20, where={"doc_id": ["d0", "d1"]})
    assert {h.payload["doc_id"] for h in multi} <= {"d0", "d1"}

    assert vectors.existing("nodes", ["n1", "n2", "missing"]) == {"n1", "n2"}
    vectors.delete("nodes", ["n1", "n2"])
    assert vectors.count("nodes") == 18
    assert vectors.existing("nodes", ["n1"]) == set()


def test_points_of_equal_score_come_back_by_id_whatever_the_write_order(vectors):
    """Ties are ranked by graph id, also at the k-th place: the same index answers the
    same way whether its points were written at once or one by one (a bulk build against
    inserts), and from one query to the next."""
    rng = np.random.default_rng(1)
    shared = rng.normal(size=8).astype(np.float32)
    tied = [f"t{i}" for i in (5, 2, 9, 0, 7)]  # one vector, five ids
    others = [f"o{i}" for i in range(6)]
    far = rng.normal(size=(6, 8)).astype(np.float32)
    far -= np.outer(far @ shared / (shared @ shared), shared)  # orthogonal: further off
    query = shared + 0.01 * rng.normal(size=8).astype(np.float32)
    answers = []
    for name, order in (("bulk", tied + others), ("single", [*reversed(tied), *others])):
        vectors.ensure_collection(name, 8)
        rows = {**{t: shared for t in tied}, **dict(zip(others, far, strict=True))}
        if name == "bulk":
            vectors.upsert(name, order, np.stack([rows[i] for i in order]), [{}] * len(order))
        else:
            for i in order:
                vectors.upsert(name, [i], rows[i][None, :], [{}])
        answers.append([[h.id for h in vectors.search(name, query, k)] for k in (2, 5, 7)])
    assert answers[0] == answers[1]
    assert answers[0][:2] == [["t0", "t2"], ["t0", "t2", "t5", "t7", "t9"]]


def test_missing_collection_is_empty(vectors):
    assert not vectors.has_collection("nope")
    assert vectors.count("nope") == 0
    assert vectors.existing("nope", ["a"]) == set()
    assert vectors.best_score("nope", np.ones(8, dtype=np.float32)) is None


def test_best_score_is_the_best_hits_score_and_the_negation_gives_the_least(vectors):
    ids, vecs, payloads = _data()
    vectors.ensure_collection("nodes", 8)
    assert vectors.best_score("nodes", vecs[0]) is None  # empty
    vectors.upsert("nodes", ids, vecs, payloads)
    query = np.random.default_rng(2).normal(size=8).astype(np.float32)
    assert vectors.best_score("nodes", query) == vectors.search("nodes", query, 1)[0].score
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    least = float((unit @ (query / np.linalg.norm(query))).min())
    assert -vectors.best_score("nodes", -query) == pytest.approx(least, abs=1e-5)


def test_edge_reopen_keeps_points(tmp_path):
    ids, vecs, payloads = _data()
    first = open_vector_index(tmp_path / "q")
    first.ensure_collection("chunks", 8)
    first.upsert("chunks", ids, vecs, payloads)
    first.close()
    again = open_vector_index(tmp_path / "q")
    assert again.count("chunks") == 20
    assert again.search("chunks", vecs[7], 1)[0].id == "n7"
    again.close()


def test_edge_handles_on_one_folder_share_their_shards(tmp_path):
    """Two indexes on one folder in one process both work; closing one keeps the other."""
    from hygraph.vectors.edge import EdgeVectorIndex, open_shard_count

    before = open_shard_count()
    ids, vecs, payloads = _data()
    first = EdgeVectorIndex(tmp_path / "qdrant")
    first.ensure_collection("c", 8)
    first.upsert("c", ids[:10], vecs[:10], payloads[:10])
    second = EdgeVectorIndex(tmp_path / "qdrant")
    assert second.search("c", vecs[3], 1)[0].id == "n3"
    second.upsert("c", ids[10:], vecs[10:], payloads[10:])  # writes are seen by both
    assert first.count("c") == 20
    assert open_shard_count() == before + 1
    first.close()
    assert second.search("c", vecs[15], 1)[0].id == "n15"
    first.close()  # closing twice gives nothing back twice
    assert second.count("c") == 20
    second.close()
    assert open_shard_count() == before
    again = EdgeVectorIndex(tmp_path / "qdrant")  # loads it afresh
    assert again.count("c") == 20
    again.close()


_OTHER_PROCESS = """
import sys
import numpy as np
from hygraph.errors import HygraphError
from hygraph.vectors.edge import EdgeVectorIndex

index = EdgeVectorIndex(sys.argv[1], wait=float(sys.argv[2]))
try:
    hits = index.search("c", np.ones(4, dtype=np.float32), 1)
except HygraphError as err:
    print(err)
else:
    print("found", [h.id for h in hits])
"""


def _other_process(folder, wait: float) -> str:
    import subprocess
    import sys

    run = [sys.executable, "-c", _OTHER_PROCESS, str(folder), str(wait)]
    out = subprocess.run(run, capture_output=True, text=True, timeout=120)
    return out.stdout.strip() or out.stderr


def test_edge_shards_are_handed_to_another_process_between_operations(tmp_path):
    """Qdrant Edge locks a shard to one process and has no read-only mode: a process that
    holds a shard it is not using hands it over to another that waits, and loads it
    again on its next operation, seeing what the other wrote."""
    import os

    from hygraph.vectors.edge import EdgeVectorIndex

    first = EdgeVectorIndex(tmp_path / "qdrant")
    first.ensure_collection("c", 4)
    first.upsert("c", ["x"], np.ones((1, 4), dtype=np.float32), [{}])
    assert os.listdir(tmp_path / "qdrant" / ".holders") == [str(os.getpid())]
    # Held but idle (an app keeping an index open): the other process gets it.
    assert _other_process(tmp_path / "qdrant", 30) == "found ['x']"
    first.upsert("c", ["y"], np.full((1, 4), 2, dtype=np.float32), [{}])  # loads it again
    assert first.count("c") == 2
    first.close()
    assert _other_process(tmp_path / "qdrant", 30) == "found ['x']"


def test_edge_shard_busy_past_the_wait_is_a_clear_error(tmp_path):
    """While an operation keeps the shard busy, another process waits, then fails in one
    line naming the holder."""
    import os

    from hygraph.vectors.edge import EdgeVectorIndex

    first = EdgeVectorIndex(tmp_path / "qdrant")
    first.ensure_collection("c", 4)
    first.upsert("c", ["x"], np.ones((1, 4), dtype=np.float32), [{}])
    with first._use("c"):  # an operation in progress all along
        out = _other_process(tmp_path / "qdrant", 0.5)
    assert "in use elsewhere (another process: " in out and str(os.getpid()) in out, out
    assert "within 0.5 s" in out
    assert first.count("c") == 1
    first.close()
    assert _other_process(tmp_path / "qdrant", 0.5) == "found ['x']"


@pytest.fixture
def client(qdrant):
    return qdrant


def test_server_named_collections_and_vector_name(client):
    """A collection named on its own, the rest by prefix; a named vector when asked."""
    ids, vecs, payloads = _data()
    index = open_vector_index(
        client=client, prefix="app_", names={"chunks": "app"}, vector_name="text-dense"
    )
    index.ensure_collection("chunks", 8)
    index.ensure_collection("facts", 8)
    index.upsert("chunks", ids, vecs, payloads)
    index.upsert("facts", ids[:3], vecs[:3], payloads[:3])
    assert {c.name for c in client.get_collections().collections} == {"app", "app_facts"}
    assert set(client.get_collection("app").config.params.vectors) == {"text-dense"}
    assert index.search("chunks", vecs[2], 1)[0].id == "n2"
    assert index.vectors("facts", ["n1"])["n1"] == pytest.approx(vecs[1] / np.linalg.norm(vecs[1]))
    assert index.count("chunks") == 20 and index.count("facts") == 3


def test_server_adopts_an_existing_collection_with_foreign_points(client):
    """A user's collection keeps its points; hygraph sees and deletes only its own."""
    from qdrant_client import models

    ids, vecs, payloads = _data()
    client.create_collection(
        "app", vectors_config=models.VectorParams(size=8, distance=models.Distance.COSINE)
    )
    client.upsert(
        "app",
        [
            models.PointStruct(id=7, vector=vecs[0].tolist(), payload={"page_content": "theirs"}),
            models.PointStruct(id=8, vector=(-vecs[0]).tolist(), payload={"page_content": "x"}),
        ],
    )
    index = open_vector_index(client=client, prefix="app_", names={"chunks": "app"})
    index.ensure_collection("chunks", 8)
    index.upsert("chunks", ids, vecs, payloads)
    hits = index.search("chunks", vecs[0], 3)
    assert [h.id for h in hits][0] == "n0" and len(hits) == 3  # the foreign point is unseen
    assert index.count("chunks") == 20
    # The least cosine is hygraph's points' too (the foreign -vecs[0] would give -1).
    least = index.search("chunks", -vecs[0], 1)[0].score
    assert index.best_score("chunks", -vecs[0]) == least < 0.999
    index.delete("chunks", ids)
    assert client.count("app").count == 2  # the user's points stay


def test_server_refuses_a_collection_of_another_size_or_distance(client):
    from qdrant_client import models

    from hygraph.errors import IndexMismatchError

    client.create_collection(
        "big", vectors_config=models.VectorParams(size=16, distance=models.Distance.COSINE)
    )
    client.create_collection(
        "dot", vectors_config=models.VectorParams(size=8, distance=models.Distance.DOT)
    )
    index = open_vector_index(client=client, names={"chunks": "big", "facts": "dot"})
    with pytest.raises(IndexMismatchError, match="'big' holds 16-dimensional vectors"):
        index.ensure_collection("chunks", 8)
    with pytest.raises(IndexMismatchError, match="'dot' compares vectors by Dot"):
        index.ensure_collection("facts", 8)


def test_server_discard_removes_what_it_wrote(client):
    """What a temporary index wrote goes at exit: its collections, its points elsewhere."""
    from qdrant_client import models

    ids, vecs, payloads = _data()
    client.create_collection(
        "app", vectors_config=models.VectorParams(size=8, distance=models.Distance.COSINE)
    )
    client.upsert("app", [models.PointStruct(id=7, vector=vecs[0].tolist(), payload={})])
    index = open_vector_index(client=client, prefix="app_", names={"chunks": "app"})
    index.discard_at_exit()
    for name in ("chunks", "facts"):
        index.ensure_collection(name, 8)
        index.upsert(name, ids, vecs, payloads)
    index.discard()  # what atexit runs
    assert not client.collection_exists("app_facts")
    assert client.count("app").count == 1  # only the user's own point is left


def test_discard_reaches_the_store_after_the_app_closed_its_client(tmp_path, caplog):
    """An app that closes its QdrantClient before exit: the temporary collections still go
    (a new client to the same place), and what cannot go is named in a warning."""
    from qdrant_client import QdrantClient

    ids, vecs, payloads = _data()
    client = QdrantClient(path=str(tmp_path / "q"))
    index = open_vector_index(client=client, prefix="tmp_")
    index.discard_at_exit()
    index.ensure_collection("chunks", 8)
    index.upsert("chunks", ids, vecs, payloads)
    client.close()  # the app is done with it
    index.discard()  # what atexit runs afterwards
    again = QdrantClient(path=str(tmp_path / "q"))
    assert not again.collection_exists("tmp_chunks")
    again.close()

    gone = QdrantClient(":memory:")  # nothing to reconnect to: the leftover is named
    index = open_vector_index(client=gone, prefix="mem_")
    index.discard_at_exit()
    index.ensure_collection("chunks", 8)
    gone.close()
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        index.discard()
    assert any("mem_chunks" in r.getMessage() for r in caplog.records)


def test_edge_builds_its_search_graph_once_a_collection_outgrows_scans(tmp_path):
    """Past Qdrant's indexing threshold (10 MB of vectors) a build makes the HNSW graph, so
    searches stop scanning every vector; below it nothing changes and searches stay exact."""
    from hygraph.vectors.edge import EdgeVectorIndex

    rng = np.random.default_rng(7)
    big = rng.standard_normal((7_000, 384)).astype(np.float32)  # 10.3 MB of vectors
    big /= np.linalg.norm(big, axis=1, keepdims=True)
    index = EdgeVectorIndex(tmp_path / "q")
    for name, rows in (("big", big), ("small", big[:500])):
        index.ensure_collection(name, 384)
        ids = [f"{name}{i}" for i in range(len(rows))]
        index.upsert(name, ids, rows, [{} for _ in ids])
    stamp = index.stamp("big")
    assert index.build_search_index(["big", "small", "none"]) == ["big"]
    assert index.build_search_index(["big"]) == []  # already built: nothing to do
    assert index.stamp("big") == stamp  # the points did not change: caches stay valid
    query = rng.standard_normal(384).astype(np.float32)
    query /= np.linalg.norm(query)
    exact = big @ query
    best, worst = (index.search("small", sign * query, 1)[0].score for sign in (1.0, -1.0))
    assert (best, -worst) == pytest.approx((exact[:500].max(), exact[:500].min()), abs=1e-5)
    # Through the graph: approximate, among the best (least) 1 % of a random query's.
    best, worst = (index.search("big", sign * query, 1)[0].score for sign in (1.0, -1.0))
    assert np.sort(exact)[-70] <= best <= exact.max() + 1e-5
    assert exact.min() - 1e-5 <= -worst <= np.sort(exact)[70]
    # A point that is its own nearest neighbour is found through the graph.
    assert index.search("big", big[1234], 1)[0].id == "big1234"
    index.close()
