"""Writes an index leaves for when inserts pause (:mod:`hygraph.idle`).

Unit tests of :class:`~hygraph.idle.WhenIdle` with plain callables, then the BM25
postings through the public API: a burst of one-document inserts saves them once, and a
new process reads what was saved (that a pause saves them, owner-only, is in
``test_kept_deferred.py`` with the matrices). Corpus: ``tests/data/musique_slice`` paragraphs, the
word-hashing embedder (``doubles.WordEmbedder``), offline extractor.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import pytest
from doubles import WordEmbedder

from hygraph.idle import WhenIdle
from hygraph.index import GraphIndex
from hygraph.ingest.documents import Document
from hygraph.layers import bm25

SLICE = Path(__file__).parent / "data" / "musique_slice"


def _wait_for(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return condition()


def test_a_burst_runs_each_task_once_after_the_last_call_with_one_timer_thread():
    idle = WhenIdle()
    ran: list[str] = []
    before = threading.active_count()
    for n in range(50):  # a burst: every call within the delay of the one before
        idle.later("a", lambda n=n: ran.append(f"a{n}"), 0.3)
        idle.later("b", lambda: ran.append("b"), 0.3)
        assert threading.active_count() <= before + 1  # one timer thread, not one a call
    assert ran == [] and idle.pending("a")
    assert _wait_for(lambda: len(ran) == 2)
    assert ran == ["a49", "b"]  # the last task of each name, once
    time.sleep(0.4)
    assert ran == ["a49", "b"] and not idle.pending("a")


def test_the_pause_counts_from_the_last_call():
    idle = WhenIdle()
    ran: list[float] = []
    start = time.monotonic()
    idle.later("a", lambda: ran.append(time.monotonic()), 0.2)
    time.sleep(0.15)
    idle.later("a", lambda: ran.append(time.monotonic()), 0.2)  # moves it on
    assert _wait_for(lambda: bool(ran))
    assert ran[0] - start >= 0.33


def test_an_earlier_deadline_is_not_held_back_by_a_later_one():
    idle = WhenIdle()
    ran: list[str] = []
    idle.later("slow", lambda: ran.append("slow"), 600.0)
    idle.later("fast", lambda: ran.append("fast"), 0.05)  # the last call sets the pause
    assert _wait_for(lambda: len(ran) == 2, 5.0)
    assert sorted(ran) == ["fast", "slow"]


def test_close_runs_what_waits_now_and_raises_a_failure_after_the_rest(caplog):
    idle = WhenIdle()
    ran: list[str] = []

    def broken() -> None:
        raise OSError("disk full")

    idle.later("broken", broken, 600.0)
    idle.later("fine", lambda: ran.append("fine"), 600.0)
    idle.later("dropped", lambda: ran.append("dropped"), 600.0)
    idle.drop("dropped")
    with caplog.at_level(logging.WARNING, logger="hygraph.idle"), pytest.raises(OSError):
        idle.close()
    assert ran == ["fine"]  # ran though an earlier task failed
    assert "could not write broken" in caplog.text
    idle.close()  # nothing left: no error twice


def test_the_timer_logs_a_failure_instead_of_raising(caplog):
    idle = WhenIdle()

    def broken() -> None:
        raise OSError("disk full")

    with caplog.at_level(logging.WARNING, logger="hygraph.idle"):
        idle.later("broken", broken, 0.01)
        assert _wait_for(lambda: "could not write broken" in caplog.text)
    assert not idle.pending("broken")


def _docs(n: int) -> list[Document]:
    lines = (SLICE / "corpus.jsonl").read_text().splitlines()[:n]
    return [Document(id=r["id"], text=r["text"], title=r["title"]) for r in map(json.loads, lines)]


def test_a_burst_of_inserts_saves_the_bm25_postings_once(tmp_path, monkeypatch):
    monkeypatch.setattr(bm25, "SAVE_DELAY", 600.0)  # the pause never comes: close saves
    saves: list[int] = []
    inner = bm25.Postings.save

    def counted(self: bm25.Postings, folder: Path, meta: dict) -> None:
        saves.append(len(self.chunk_ids))
        inner(self, folder, meta)

    monkeypatch.setattr(bm25.Postings, "save", counted)
    docs = _docs(30)
    path = tmp_path / "ix"
    embedder = WordEmbedder(dim=64)
    question = " ".join(docs[27].text.split()[:12])
    with GraphIndex(path, embedder=embedder, progress=False) as index:
        index.insert(docs[:25])
        index.layer("bm25").ensure(index.resources)
        saves.clear()
        for doc in docs[25:]:
            index.insert([doc])
            assert index.retrieve(question, "bm25", top_k=5).chunks  # this process: fresh
        assert saves == []  # none during the burst
        want = index.retrieve(question, "bm25", top_k=5).chunks
        chunks = index.store.chunk_count()
    assert saves == [chunks]  # once, at close, the last postings
    monkeypatch.setattr(bm25.BM25Layer, "_brought_up", _no_tokenizing)
    with GraphIndex.open(path, embedder=embedder, progress=False) as other:
        assert other.retrieve(question, "bm25", top_k=5).chunks == want  # read, not rebuilt


def _no_tokenizing(*args, **kwargs):
    raise AssertionError("tokenized the chunks again")
