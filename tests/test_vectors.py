"""Both vector backends behind one interface: Qdrant Edge (embedded) and qdrant-client."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from hygraph.vectors import open_vector_index


@pytest.fixture(params=["edge", "server"])
def vectors(request, tmp_path):
    if request.param == "edge":
        index = open_vector_index(tmp_path / "qdrant")
    else:
        from qdrant_client import QdrantClient

        warnings.filterwarnings("ignore", message="Payload indexes have no effect")
        index = open_vector_index(client=QdrantClient(":memory:"), prefix="t_")
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


def test_missing_collection_is_empty(vectors):
    assert not vectors.has_collection("nope")
    assert vectors.count("nope") == 0
    assert vectors.existing("nope", ["a"]) == set()


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


def test_edge_collection_in_use_elsewhere_is_a_clear_error(tmp_path):
    from hygraph.errors import HygraphError
    from hygraph.vectors.edge import EdgeVectorIndex

    first = EdgeVectorIndex(tmp_path / "qdrant")
    first.ensure_collection("c", 4)
    first.upsert("c", ["x"], np.ones((1, 4), dtype=np.float32), [{}])
    second = EdgeVectorIndex(tmp_path / "qdrant")
    with pytest.raises(HygraphError, match="in use elsewhere"):
        second.search("c", np.ones(4, dtype=np.float32), 1)
    first.close()
