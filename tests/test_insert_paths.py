"""What keeps a one-document insert cheap, and that none of it loses anything.

* embedded Qdrant: an upsert is in the shard's write-ahead log when it returns, so it
  survives the process being killed before any flush; idle shards are flushed by the
  watcher once their oldest write is ``FLUSH_INTERVAL_S`` old, and on close;
* ``synonyms`` keeps its entity matrix between inserts and reads it again in full when
  another connection committed to the store;
* ``bm25`` tokenizes only new chunks, yet scores as a build from scratch does;
* an insert into an index whose methods are recorded writes its manifest once.

(``test_insert_equivalence.py`` checks that the resulting index is the bulk build's.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from doubles import WordEmbedder

from hygraph.graph.store import GraphStore
from hygraph.index import GraphIndex
from hygraph.ingest.documents import Document
from hygraph.layers.bm25 import bm25s_module
from hygraph.layers.synonyms import Synonyms
from hygraph.manifest import Manifest
from hygraph.vectors import edge
from hygraph.vectors.edge import EdgeVectorIndex

SLICE = Path(__file__).parent / "data" / "musique_slice"


def _docs(n: int) -> list[Document]:
    lines = (SLICE / "corpus.jsonl").read_text().splitlines()[:n]
    return [Document(r["id"], r["text"], title=r["title"]) for r in map(json.loads, lines)]


def test_an_unflushed_upsert_survives_a_killed_process(tmp_path):
    script = f"""
import os, signal
import numpy as np
from hygraph.vectors.edge import EdgeVectorIndex
v = EdgeVectorIndex({str(tmp_path / "q")!r})
v.ensure_collection("c", 4)
v.upsert("c", ["a", "b"], np.eye(4, dtype=np.float32)[:2], [{{}}, {{}}])
v.upsert("c", ["c"], np.eye(4, dtype=np.float32)[2:3], [{{}}])
assert v._shards["c"].dirty_since is not None  # not flushed yet
os.kill(os.getpid(), signal.SIGKILL)
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert done.returncode == -9, done.stderr.decode()
    reopened = EdgeVectorIndex(tmp_path / "q")
    try:
        assert reopened.count("c") == 3
        assert reopened.existing("c", ["a", "b", "c"]) == {"a", "b", "c"}
    finally:
        reopened.close()


def test_writes_are_flushed_when_due_and_on_close(tmp_path, monkeypatch):
    v = EdgeVectorIndex(tmp_path / "q")
    v.ensure_collection("c", 4)
    v.upsert("c", ["a"], np.eye(4, dtype=np.float32)[:1], [{}])
    loaded = v._shards["c"]
    assert loaded.dirty_since is not None
    flushes = []
    real = loaded.shard.flush

    class Counting:
        def __getattr__(self, name):
            return getattr(shard, name)

        def flush(self):
            flushes.append(time.monotonic())
            real()

    shard, loaded.shard = loaded.shard, Counting()
    monkeypatch.setattr(edge, "FLUSH_INTERVAL_S", 0.05)
    deadline = time.monotonic() + 10
    while loaded.dirty_since is not None and time.monotonic() < deadline:
        time.sleep(0.02)  # the watcher flushes the idle shard
    assert loaded.dirty_since is None and len(flushes) == 1
    monkeypatch.setattr(edge, "FLUSH_INTERVAL_S", 3600.0)
    v.upsert("c", ["b"], np.eye(4, dtype=np.float32)[1:2], [{}])
    assert loaded.dirty_since is not None and len(flushes) == 1
    loaded.shard = shard
    v.close()
    assert loaded.dirty_since is None
    again = EdgeVectorIndex(tmp_path / "q")
    try:
        assert again.count("c") == 2
    finally:
        again.close()


def test_synonyms_read_every_vector_again_after_another_connection_commits(tmp_path, monkeypatch):
    docs = _docs(12)
    reads = []
    full = Synonyms._entity_vectors

    def counting(self, res):
        reads.append(1)
        return full(self, res)

    monkeypatch.setattr(Synonyms, "_entity_vectors", counting)
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(), progress=False) as index:
        index.insert(docs[:8])
        assert len(reads) == 1
        index.insert([docs[8]])
        index.insert([docs[9]])
        assert len(reads) == 1  # kept between inserts
        layer = index.resources.layers["synonyms"]
        kept, fresh = layer._kept.keys, full(layer, index.resources)
        assert kept.ids == fresh.ids  # the refreshed rows are what a full read gives
        np.testing.assert_array_equal(kept.vectors, fresh.vectors)  # unit rows, same bits
        assert kept.digests == fresh.digests and kept.numbers == fresh.numbers
        other = GraphStore(tmp_path / "i" / "graph.sqlite")
        other.set_meta("touched", "yes")  # another connection commits
        other.close()
        index.insert([docs[10]])
        assert len(reads) == 2
        fresh = full(layer, index.resources)
        assert layer._kept.keys.ids == fresh.ids
        np.testing.assert_array_equal(layer._kept.keys.vectors, fresh.vectors)
        index.delete(docs[10].id)  # a delete drops the kept matrix
        assert layer._kept is None


def test_bm25_tokenizes_only_new_chunks_and_scores_as_a_build_from_scratch(tmp_path, monkeypatch):
    docs = _docs(12)
    bm25s = bm25s_module()
    real = bm25s.tokenize
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(), progress=False) as index:
        index.insert(docs[:8], methods=["bm25"])
        before = set(index.store.chunk_ids())
        seen: list[str] = []

        def counting(texts, **kwargs):
            seen.extend(texts)
            return real(texts, **kwargs)

        monkeypatch.setattr(bm25s, "tokenize", counting)
        index.insert(docs[8:10])
        new = [c for c in index.store.chunk_ids() if c not in before]
        assert len(seen) == len(new) > 0  # the new chunks' texts, nothing else
        monkeypatch.setattr(bm25s, "tokenize", real)
        index.delete(docs[0].id)
        grown = index.resources.layers["bm25"].ensure(index.resources)
    with GraphIndex(tmp_path / "j", embedder=WordEmbedder(), progress=False) as scratch:
        scratch.insert(docs[1:10], methods=["bm25"])
        fresh = scratch.resources.layers["bm25"].ensure(scratch.resources)
    assert grown.chunk_ids == fresh.chunk_ids
    for question in ("Who founded the city?", "river bridge 1905 album", "the the"):
        tokens = real([question], stopwords="en", return_ids=False, show_progress=False)[0]
        mine, theirs = (p.search(tokens, 5, k1=1.5, b=0.75) for p in (grown, fresh))
        assert [c for c, _ in mine] == [c for c, _ in theirs]
        assert [s for _, s in mine] == pytest.approx([s for _, s in theirs])


def test_an_insert_into_a_built_index_writes_its_manifest_once(tmp_path, monkeypatch):
    docs = _docs(4)
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(), progress=False) as index:
        index.insert(docs[:3])
        saves = []
        real = Manifest.save
        monkeypatch.setattr(Manifest, "save", lambda self, d: (saves.append(1), real(self, d)))
        report = index.insert([docs[3]])
        assert len(saves) == 1
        assert "build:bm25" in report.usage["stages"]  # the lexical index, timed as a stage
        builds = len(index.manifest.builds)
        index.insert([docs[3]])  # unchanged: nothing built, no build recorded
        assert len(index.manifest.builds) == builds


@pytest.mark.parametrize("n", [0, 1])
def test_a_reopened_index_does_not_rebuild_a_current_bm25(tmp_path, n):
    docs = _docs(3)
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(), progress=False) as index:
        index.insert(docs[:2])
    with GraphIndex.open(tmp_path / "i", embedder=WordEmbedder(), progress=False) as index:
        report = index.insert(docs[2 : 2 + n], methods=["bm25"])
        assert ("build:bm25" in report.usage["stages"]) == bool(n)


def test_a_delete_leaves_no_edge_or_provenance_naming_what_it_removed(
    tmp_path, minilm, sample_path, monkeypatch
):
    """HyGRAG's delete rewrites shared edges; one written from a view read before the
    delete (stale, naming the removed chunk) must not survive the delete."""
    import sqlite3

    from hygraph import GraphIndex
    from hygraph.graph.kinds import EdgeKind
    from hygraph.graph.store import Edge
    from hygraph.layers.hygrag import HyGRAGLayer

    docs = sorted(sample_path.glob("*.md"))[:4]
    real_delete = HyGRAGLayer.delete

    def stale_delete(self, res, removed):
        real_delete(self, res, removed)
        keep = res.store.chunk_ids()[0]
        gone = removed.chunk_ids[0]
        res.store.upsert_edges([Edge(keep, gone, EdgeKind.HY_SHARED, 1.0, {}, (keep, gone))])

    with GraphIndex.build(docs, tmp_path / "ix", methods=["hygrag"], progress=False) as index:
        monkeypatch.setattr(HyGRAGLayer, "delete", stale_delete)
        index.delete(docs[1].name)
    with sqlite3.connect(tmp_path / "ix" / "graph.sqlite") as conn:
        exists = "(SELECT id FROM nodes UNION SELECT id FROM chunks)"
        assert conn.execute(f"SELECT COUNT(*) FROM edges WHERE src NOT IN {exists}"
                            f" OR dst NOT IN {exists}").fetchone() == (0,)  # fmt: skip
        assert conn.execute(f"SELECT COUNT(*) FROM edge_sources WHERE chunk_id NOT IN {exists}"
                            ).fetchone() == (0,)  # fmt: skip
