"""A build after a small write patches the kept vector matrix instead of reading it all back.

``WriteJournal`` is checked on hand-written token chains; the patched matrix against a
matrix read back whole, through ``GraphIndex`` (an insert, a replaced document, a delete)
and when another process's writes make the journal useless (a second vector index on
the same folder stands for it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from corpora import HARBOUR_DOCS

from hygraph import GraphIndex
from hygraph.graph.view import graph_view
from hygraph.ingest import Document
from hygraph.operators.ppr import collection_matrix
from hygraph.vectors import open_vector_index
from hygraph.vectors.journal import WriteJournal


def test_journal_unions_the_writes_after_a_token_and_refuses_gaps():
    journal = WriteJournal()
    journal.record("c", "", "t1", ["a", "b"])
    journal.record("c", "t1", "t2", ["b", "c"])
    journal.record("c", "t2", "t3", ["d"])
    assert journal.since("c", "t3", "t3") == set()
    assert journal.since("c", "t1", "t3") == {"b", "c", "d"}
    assert journal.since("c", "", "t3") == {"a", "b", "c", "d"}
    assert journal.since("c", "t0", "t3") is None  # older than the chain
    assert journal.since("c", "t1", "x9") is None  # someone wrote after t3
    journal.record("c", "x9", "t4", ["e"])  # a gap before this write: the chain restarts
    assert journal.since("c", "t1", "t4") is None
    assert journal.since("c", "x9", "t4") == {"e"}
    assert journal.since("other", "t1", "t2") is None


def _docs(*names: str) -> list[Document]:
    return [Document(text=HARBOUR_DOCS[n][1], id=n, title=HARBOUR_DOCS[n][0]) for n in names]


def _whole(index: GraphIndex, collection: str) -> tuple[list[str], np.ndarray]:
    """The matrix read back whole from Qdrant, for the current graph."""
    res = index.resources
    view = graph_view(res.store)
    if collection == "chunks":
        ids = res.store.chunk_ids()
    else:
        ids = [f"{s}|{d}" for s, d, _ in res.store.edge_rows(["relation"])]
    found, matrix = res.vector_matrix(collection, ids)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    del view
    return found, matrix / np.where(norms > 0, norms, 1.0)


def _reads(index: GraphIndex, monkeypatch, only: str | None = None) -> list[int]:
    """The number of ids of each vector read (of collection ``only``, or of any)."""
    res = index.resources
    read: list[int] = []
    original = res.vector_matrix

    def counting(name: str, ids: Any, **kwargs: Any) -> Any:
        if only is None or name == only:
            read.append(len(ids))
        return original(name, ids, **kwargs)

    monkeypatch.setattr(res, "vector_matrix", counting)
    return read


@pytest.mark.parametrize("collection", ["chunks", "facts"])
def test_an_insert_reads_back_only_what_it_wrote(tmp_path, minilm, monkeypatch, collection):
    names = list(HARBOUR_DOCS)
    with GraphIndex(tmp_path / "ix", embedder=minilm, progress=False) as index:
        index.insert(_docs(*names[:-1]))
        before = len(_whole(index, collection)[0])
        read = _reads(index, monkeypatch)
        index.insert(_docs(names[-1]))
        res = index.resources
        ids, matrix = collection_matrix(res, graph_view(res.store), collection)
        found, whole = _whole(index, collection)
        assert ids == found and len(ids) > before
        np.testing.assert_allclose(matrix, whole, atol=1e-6)
        assert read and sum(read) <= len(ids) - before + 50  # the new points, not all
        # A replaced document and a deleted one: rows changed and rows gone.
        changed = Document(text=HARBOUR_DOCS[names[0]][1] + " It was painted blue in 1950.",
                           id=names[0], title=HARBOUR_DOCS[names[0]][0])  # fmt: skip
        index.insert([changed])
        index.delete(names[1])
        index.insert()
        ids, matrix = collection_matrix(res, graph_view(res.store), collection)
        found, whole = _whole(index, collection)
        assert ids == found
        np.testing.assert_allclose(matrix, whole, atol=1e-6)


@pytest.mark.parametrize("collection", ["chunks", "facts"])
def test_a_new_process_patches_the_matrix_the_last_build_left(
    tmp_path, minilm, monkeypatch, collection
):
    """The first insert of a process (a one-document ``hygraph index`` run) starts from
    the matrix the last build kept on disk, reading back only what it wrote; a matrix
    left before another process's write is not used."""
    names = list(HARBOUR_DOCS)
    with GraphIndex(tmp_path / "ix", embedder=minilm, progress=False) as index:
        index.insert(_docs(*names[:-2]))
        before = len(_whole(index, collection)[0])
    with GraphIndex.open(tmp_path / "ix", embedder=minilm, progress=False) as index:
        read = _reads(index, monkeypatch, collection)
        index.insert(_docs(names[-2]))
        res = index.resources
        ids, matrix = collection_matrix(res, graph_view(res.store), collection)
        assert read and sum(read) <= len(ids) - before  # the new points, not all
        found, whole = _whole(index, collection)
        assert ids == found and len(ids) > before
        np.testing.assert_allclose(matrix, whole, atol=1e-6)
    other = open_vector_index(tmp_path / "ix" / "qdrant")
    try:  # another process writes after the matrix was kept: the next one reads it all
        some = ids[:1]
        vector = other.vector_matrix(collection, some)[1]
        other.upsert(collection, some, -vector, [{"kind": "x", "doc_id": "x"}])
    finally:
        other.close()
    with GraphIndex.open(tmp_path / "ix", embedder=minilm, progress=False) as index:
        read = _reads(index, monkeypatch, collection)
        index.insert(_docs(names[-1]))
        res = index.resources
        ids, matrix = collection_matrix(res, graph_view(res.store), collection)
        assert sum(read) >= len(ids)  # read back whole
        found, whole = _whole(index, collection)
        np.testing.assert_allclose(matrix, whole, atol=1e-6)
        assert matrix[ids.index(some[0])] @ (vector[0] / np.linalg.norm(vector[0])) < -0.99


def test_another_writer_makes_the_next_build_read_everything(tmp_path, minilm, monkeypatch):
    names = list(HARBOUR_DOCS)
    with GraphIndex(tmp_path / "ix", embedder=minilm, progress=False) as index:
        index.insert(_docs(*names[:-1]))
        res = index.resources
        some = res.store.chunk_ids()[:1]
        vector = res.vector_matrix("chunks", some)[1]
        other = open_vector_index(tmp_path / "ix" / "qdrant")
        try:  # another writer replaces a chunk's vector with its negation
            other.upsert("chunks", some, -vector, [{"kind": "chunk", "doc_id": "x"}])
        finally:
            other.close()
        read = _reads(index, monkeypatch)
        index.insert(_docs(names[-1]))
        ids, matrix = collection_matrix(res, graph_view(res.store), "chunks")
        assert sum(read) >= len(ids)  # read back whole
        found, whole = _whole(index, "chunks")
        np.testing.assert_allclose(matrix, whole, atol=1e-6)
        assert matrix[ids.index(some[0])] @ (vector[0] / np.linalg.norm(vector[0])) < -0.99


def test_base_rows_by_prefix_agree_with_the_dictionary():
    """An insert appends ids: the rows are found by one prefix comparison, and agree with
    the general lookup in every case (changed ids, reordered ids, many changes)."""
    from hygraph.kept_matrices import KeptMatrices

    base = [f"c{i}" for i in range(200)]
    cases = [
        (base + ["n1", "n2"], {"c5", "gone"}),  # appended, two changed (one not there)
        (base[:100] + ["n1"] + base[100:], {"c5"}),  # not a prefix: the dictionary
        (base + ["n1"], {f"c{i}" for i in range(100)}),  # many changed: the dictionary
        (base[:50], set()),  # fewer than the base: the dictionary
    ]
    for wanted, changed in cases:
        rows = KeptMatrices._base_rows(base, wanted, changed)
        expected = [-1 if i in changed or i not in base else base.index(i) for i in wanted]
        assert rows.tolist() == expected


@pytest.mark.parametrize("seed", range(9))
def test_copy_rows_gives_the_gathered_rows(seed):
    """The run-by-run copy equals the plain gather: base rows kept in place, rows moved,
    rows the caller overwrites (new ≥ 0) anywhere, appended rows, new rows inserted
    between the base's (new fact ids sort among the old), a new first row."""
    from hygraph.kept_matrices import _copy_rows

    rng = np.random.default_rng(seed)
    base = rng.random((50, 4), dtype=np.float32)
    n = 50 + int(rng.integers(0, 8))
    old = np.arange(n)
    old[old >= 50] = -1
    new = np.full(n, -1)
    changed = rng.choice(50, size=int(rng.integers(0, 6)), replace=False)
    old[changed] = -1
    new[old < 0] = np.arange(int((old < 0).sum()))
    if seed % 2:  # some rows moved: every row after the first dropped id shifts up
        gone = int(rng.integers(0, 50))
        old, new = np.delete(old, gone), np.delete(new, gone)
    if seed % 3 == 2:  # new rows between the base's, one of them first
        at = np.sort(rng.choice(len(old), size=4, replace=False))
        at[0] = 0
        old, new = np.insert(old, at, -1), np.insert(new, at, 99)
    matrix = np.full((len(old), 4), np.nan, dtype=np.float32)
    _copy_rows(matrix, base, old, new)
    kept = old >= 0
    assert np.array_equal(matrix[kept], base[old[kept]])
