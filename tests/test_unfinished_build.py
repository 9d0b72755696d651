"""A build cut short and finished by a rerun reports the cost of the whole build."""

from __future__ import annotations

import json
import time

import pytest

from hygraph import GraphIndex
from hygraph.unfinished import UNFINISHED_FILE, UnfinishedBuild, read_unfinished
from hygraph.usage import UsageTracker


def test_counters_are_saved_while_a_stage_runs_and_carried_by_the_next_run(tmp_path, monkeypatch):
    import hygraph.unfinished as unfinished

    monkeypatch.setattr(unfinished, "SAVE_EVERY_S", 0.02)
    tracker = UsageTracker()
    with UnfinishedBuild(tmp_path, tracker):
        with tracker.stage("embed"):
            tracker.record_embeddings(5)
            time.sleep(0.15)
            # What a kill at this moment leaves: the stage counted up to the last save.
            saved = read_unfinished(tmp_path)
        assert saved is not None and saved["attempts"] == 1
        assert saved["usage"]["stages"]["embed"]["embeddings"] == 5
        assert 0.05 < saved["usage"]["stages"]["embed"]["seconds"] < 0.2
        (tmp_path / "kept.json").write_text(json.dumps(saved))
    assert not (tmp_path / UNFINISHED_FILE).exists()  # finished: nothing left behind

    # The next run after a kill starts from the saved counters.
    (tmp_path / UNFINISHED_FILE).write_text((tmp_path / "kept.json").read_text())
    again = UsageTracker()
    with UnfinishedBuild(tmp_path, again) as run:
        assert run.earlier_attempts == 1 and run.earlier_seconds > 0
        with again.stage("embed"):
            again.record_embeddings(3)
    report = again.report()
    assert report["stages"]["embed"]["embeddings"] == 8
    assert report["total"]["seconds"] >= saved["usage"]["stages"]["embed"]["seconds"]


def test_a_failed_run_saves_its_counters(tmp_path):
    tracker = UsageTracker()
    with pytest.raises(RuntimeError), UnfinishedBuild(tmp_path, tracker):
        with tracker.stage("extract"):
            tracker.record_llm(10, 5)
            raise RuntimeError("crash")
    saved = read_unfinished(tmp_path)
    assert saved["attempts"] == 1 and saved["usage"]["stages"]["extract"]["llm_calls"] == 1


def test_the_build_history_holds_every_attempt(tmp_path, minilm, monkeypatch, layer_by_layer):
    """An insert whose embedder fails part-way, then a rerun: one build in the history,
    its counters those of both runs (the first run's chunk embeddings included)."""
    from test_index import FlakyEmbedder

    import hygraph.layers.chunks as chunks_module

    monkeypatch.setattr(chunks_module, "EMBED_BATCH", 1)
    docs = [{"id": f"d{i}", "text": f"Document {i} is about the harbour number {i}."}
            for i in range(3)]  # fmt: skip
    from hygraph.ingest import Document

    docs = [Document(**d) for d in docs]
    index = GraphIndex(tmp_path / "idx", embedder=FlakyEmbedder(minilm, 1), progress=False)
    with pytest.raises(RuntimeError, match="simulated crash"):
        index.insert(docs, methods=["vanilla"])
    index.close()
    first = read_unfinished(tmp_path / "idx")
    assert first["usage"]["stages"]["ingest"]["seconds"] > 0
    with GraphIndex.open(tmp_path / "idx", embedder=minilm, progress=False) as index:
        report = index.insert(docs, methods=["vanilla"])
        build = index.manifest.builds[-1]
    assert build["attempts"] == 2 and len(index.manifest.builds) == 1
    assert "vector-index" not in build["usage"]["stages"]  # three passages: nothing to index
    assert (
        report.usage["stages"]["ingest"]["seconds"] >= first["usage"]["stages"]["ingest"]["seconds"]
    )
    assert report.seconds >= first["seconds"]
    assert not (tmp_path / "idx" / UNFINISHED_FILE).exists()


def test_a_stage_counts_cpu_seconds_apart_from_waiting():
    """``cpu_seconds`` is the process's CPU time inside the stage: a stage that sleeps
    has wall time and almost no CPU time, one that computes has both (this is what a
    build sharing its machine reports truthfully)."""
    tracker = UsageTracker()
    with tracker.stage("waits"):
        time.sleep(0.2)
    with tracker.stage("computes"):
        end = time.process_time() + 0.2
        while time.process_time() < end:
            pass
    stages = tracker.report()["stages"]
    assert stages["waits"]["seconds"] >= 0.2 and stages["waits"]["cpu_seconds"] < 0.05
    assert stages["computes"]["cpu_seconds"] >= 0.2
    running = UsageTracker()
    with running.stage("open"):
        end = time.process_time() + 0.05
        while time.process_time() < end:
            pass
        assert running.snapshot()["stages"]["open"]["cpu_seconds"] >= 0.05
    # An earlier attempt's report without the field (older versions) carries as zero.
    later = UsageTracker()
    later.carry({"stages": {"embed": {"seconds": 3.0, "embeddings": 2}}})
    assert later.report()["stages"]["embed"]["cpu_seconds"] == 0.0
