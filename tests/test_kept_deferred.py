"""A small insert's kept query matrices are written once inserts pause, not per insert.

The matrices beside an index (``vector-matrices/``) spare a later process reading every
vector back; the process that inserts keeps its own in memory. A burst of one-document
inserts writes them once: after :data:`hygraph.kept_matrices.WRITE_DELAY` seconds without
an insert, or when the index closes. Corpus: ``tests/data/musique_slice`` paragraphs, the
word-hashing embedder (``doubles.WordEmbedder``), offline extractor.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from doubles import WordEmbedder

from hygraph import kept_matrices
from hygraph.index import GraphIndex
from hygraph.ingest.documents import Document
from hygraph.kept_matrices import MATRIX_DIR
from hygraph.layers import bm25

SLICE = Path(__file__).parent / "data" / "musique_slice"
QUESTION = "Who was the first president of the association which published the journal?"


def _docs(n: int) -> list[Document]:
    lines = (SLICE / "corpus.jsonl").read_text().splitlines()[:n]
    return [Document(id=r["id"], text=r["text"], title=r["title"]) for r in map(json.loads, lines)]


def _keys(path: Path) -> dict[str, str]:
    """Matrix name → the key of the file kept for it."""
    metas = (path / MATRIX_DIR).glob("*.json")
    return {m.name.split(".", 1)[0]: json.loads(m.read_text())["key"] for m in metas}


@pytest.fixture
def writes(monkeypatch) -> list[str]:
    """The names of the matrices written, in order."""
    written: list[str] = []
    inner = kept_matrices._write_matrix

    def counted(stem: Path, key: str, ids: list[str], matrix: Any) -> None:
        written.append(stem.name.split(".", 1)[0])
        inner(stem, key, ids, matrix)

    monkeypatch.setattr(kept_matrices, "_write_matrix", counted)
    return written


def _no_reading(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("read the vectors back")


def _reading_only_fresh(inner: Any) -> Any:
    """``Resources.vector_matrix`` that may read a few vectors (the ones an insert just
    wrote, which a query patches into the matrix it holds), never a whole collection."""

    def read(name: str, ids: Any, **kwargs: Any) -> Any:
        assert len(list(ids)) <= 32, f"read {name}'s vectors back"
        return inner(name, ids, **kwargs)

    return read


def test_a_burst_of_inserts_writes_the_matrices_once_at_close(tmp_path, writes, monkeypatch):
    monkeypatch.setattr(kept_matrices, "WRITE_DELAY", 600.0)  # the pause never comes
    docs = _docs(40)
    path = tmp_path / "ix"
    embedder = WordEmbedder(dim=64)
    with GraphIndex(path, embedder=embedder, progress=False) as index:
        index.insert(docs[:36])
        assert sorted(writes) == ["chunks", "facts"]  # a build writes at once
        built = _keys(path)
        writes.clear()
        for doc in docs[36:]:
            index.insert([doc])
            # this process queries from the matrices it holds, patched with the new rows
            with monkeypatch.context() as patched:
                fresh_only = _reading_only_fresh(index.resources.vector_matrix)
                patched.setattr(index.resources, "vector_matrix", fresh_only)
                assert index.retrieve(QUESTION, "hybrid-ppr", top_k=5).chunks
        assert writes == [] and _keys(path) == built  # nothing written during the burst
    assert sorted(writes) == ["chunks", "facts"]  # once, at close, the last ones
    assert _keys(path) != built
    with GraphIndex.open(path, embedder=embedder, progress=False) as index:
        monkeypatch.setattr(index.resources, "vector_matrix", _no_reading)
        assert index.retrieve(QUESTION, "hybrid-ppr", top_k=5).chunks  # a new process maps them


@pytest.fixture
def permissive_umask():
    """A umask that lets others read new files: the deferred write must still tighten."""
    import os

    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.mark.usefixtures("permissive_umask")
def test_the_matrices_are_written_once_inserts_pause(tmp_path, writes, monkeypatch):
    monkeypatch.setattr(kept_matrices, "WRITE_DELAY", 0.05)
    monkeypatch.setattr(bm25, "SAVE_DELAY", 0.05)  # the BM25 postings wait the same way
    docs = _docs(30)
    path = tmp_path / "ix"
    embedder = WordEmbedder(dim=64)
    with GraphIndex(path, embedder=embedder, progress=False) as index:
        index.insert(docs[:29])
        built = _keys(path)
        writes.clear()
        index.insert([docs[29]])
        deadline = time.monotonic() + 10
        while _keys(path) == built and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sorted(writes) == ["chunks", "facts"]
        saved = json.loads((path / "bm25" / "chunk_ids.json").read_text())
        assert len(saved) == index.store.chunk_count()  # saved in the same pause
        for file in [*(path / MATRIX_DIR).iterdir(), *(path / "bm25").iterdir()]:
            assert file.stat().st_mode & 0o077 == 0, file  # the owner's alone, as an insert's
        # the files written are what a new process reads: the same rows as this one holds
        with GraphIndex.open(path, embedder=embedder, progress=False) as other:
            monkeypatch.setattr(other.resources, "vector_matrix", _no_reading)
            want = index.retrieve(QUESTION, "hybrid-ppr", top_k=5)
            got = other.retrieve(QUESTION, "hybrid-ppr", top_k=5)
            assert got.chunks == want.chunks
    assert sorted(writes) == ["chunks", "facts"]  # nothing left for close to write


SCRIPT = """
import json, sys
from pathlib import Path
from doubles import WordEmbedder
from hygraph import kept_matrices
from hygraph.index import GraphIndex
from hygraph.ingest.documents import Document
kept_matrices.WRITE_DELAY = 600.0  # the pause never comes: only the exit writes
lines = (Path(sys.argv[2]) / "corpus.jsonl").read_text().splitlines()[:30]
docs = [Document(id=r["id"], text=r["text"], title=r["title"]) for r in map(json.loads, lines)]
index = GraphIndex(Path(sys.argv[1]), embedder=WordEmbedder(dim=64), progress=False)
index.insert(docs[:29])
index.insert([docs[29]])
print(json.dumps(sorted(p.name for p in (Path(sys.argv[1]) / "vector-matrices").glob("*.json"))))
"""  # inserts, then ends without closing the index


def test_a_process_that_ends_without_closing_writes_them_at_exit(tmp_path, monkeypatch):
    import os
    import subprocess
    import sys

    import hygraph

    path = tmp_path / "ix"
    paths = [str(Path(hygraph.__file__).parent.parent), str(Path(__file__).parent)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path), str(SLICE)],
        env=env, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    before_exit = json.loads(done.stdout.strip().splitlines()[-1])
    assert _keys(path) and sorted(p.name for p in (path / MATRIX_DIR).glob("*.json")) != before_exit
    with GraphIndex.open(path, embedder=WordEmbedder(dim=64), progress=False) as index:
        monkeypatch.setattr(index.resources, "vector_matrix", _no_reading)
        assert index.retrieve(QUESTION, "hybrid-ppr", top_k=5).chunks  # maps what exit wrote
