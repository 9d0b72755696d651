"""A small insert embeds its chunk, facts and entity names in one encoder call.

(:mod:`hygraph.layers.ahead`.) The layers then find their vectors held in memory, so
the index is the one they would have written calling the embedder each; a bulk build
is left to embed layer by layer.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from doubles import WordEmbedder

from hygraph.index import GraphIndex
from hygraph.ingest.documents import Document
from hygraph.layers import ahead
from hygraph.models.embedders import CachedEmbedder
from hygraph.usage import UsageTracker

SLICE = Path(__file__).parent / "data" / "musique_slice"
COLLECTIONS = ("chunks", "facts", "entities")


def _docs(n: int) -> list[Document]:
    lines = (SLICE / "corpus.jsonl").read_text().splitlines()[:n]
    return [Document(r["id"], r["text"], title=r["title"]) for r in map(json.loads, lines)]


class CountingEmbedder(WordEmbedder):
    """The word-bag test double, recording the texts of every ``embed`` call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def embed(self, texts):  # type: ignore[no-untyped-def]
        self.calls.append(list(texts))
        return super().embed(texts)


def _points(index: GraphIndex, collection: str) -> dict[str, np.ndarray]:
    return index.resources.vectors.vectors(collection, _ids(index, collection))


def _same_as_a_bulk_build(grown: dict[str, dict], docs: list[Document], path: Path) -> None:
    """``grown``'s points (by collection) are those of one bulk build of ``docs``."""
    with GraphIndex(path, embedder=WordEmbedder(), progress=False) as bulk:
        bulk.insert(docs, methods=["hybrid-ppr"])
        fresh = {c: _points(bulk, c) for c in COLLECTIONS}
    for collection in grown:
        assert grown[collection].keys() == fresh[collection].keys(), collection
        for key, vector in grown[collection].items():
            np.testing.assert_allclose(vector, fresh[collection][key], atol=1e-6)


def _ids(index: GraphIndex, collection: str) -> list[str]:
    store = index.store
    if collection == "chunks":
        return store.chunk_ids()
    kind = "relation" if collection == "facts" else "entity"
    if kind == "entity":
        return [n.id for n in store.nodes_of_kind("entity")]
    return [f"{s}|{d}" for s, d, _ in store.edge_rows(["relation"])]


def test_a_one_document_insert_makes_one_encoder_call(tmp_path):
    docs = _docs(6)
    inner = CountingEmbedder()
    with GraphIndex(tmp_path / "i", embedder=inner, progress=False) as index:
        index.insert(docs[:5], methods=["hybrid-ppr"])
        inner.calls.clear()
        report = index.insert([docs[5]])
        assert len(inner.calls) == 1, [len(c) for c in inner.calls]
        texts = set(inner.calls[0])
        new_chunks = index.store.chunk_ids_of([docs[5].id])
        chunk_texts = index.resources.chunk_texts(new_chunks)
        assert set(chunk_texts.values()) <= texts  # the chunk, with its title line
        assert len(texts) > len(chunk_texts)  # and its facts and names with it
        assert "embed" in report.usage["stages"]
        grown = {c: _points(index, c) for c in COLLECTIONS}
    _same_as_a_bulk_build(grown, docs, tmp_path / "j")


def test_a_bulk_build_embeds_layer_by_layer(tmp_path, monkeypatch):
    monkeypatch.setattr(ahead, "AHEAD_CHUNKS", 2)
    inner = CountingEmbedder()
    with GraphIndex(tmp_path / "i", embedder=inner, progress=False) as index:
        index.insert(_docs(4), methods=["hybrid-ppr"])
        assert len(inner.calls) >= 3  # chunks, facts, names: nothing embedded ahead
        assert index.resources.embedder._held == {}


def test_held_vectors_answer_without_the_model_and_go_on_release():
    inner = CountingEmbedder()
    tracker = UsageTracker()
    embedder = CachedEmbedder(inner, None, tracker)
    embedder.hold(["alpha beta", "gamma", "alpha beta"])
    assert inner.calls == [["alpha beta", "gamma"]]  # distinct texts, one call
    out = embedder.embed(["gamma", "alpha beta"])
    assert len(inner.calls) == 1
    np.testing.assert_allclose(out, inner.embed(["gamma", "alpha beta"]))
    inner.calls.clear()
    embedder.embed(["gamma", "delta"])  # one held, one new
    assert inner.calls == [["delta"]]
    assert tracker.total().embeddings == 3  # held ones counted once, when embedded
    embedder.release()
    inner.calls.clear()
    embedder.embed(["gamma"])
    assert inner.calls == [["gamma"]]


class FailingOnce(WordEmbedder):
    """The word-bag test double, whose backend fails its first ``embed`` call (as a
    timed-out embedding server would), then answers."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    def embed(self, texts):  # type: ignore[no-untyped-def]
        if not self.failed:
            self.failed = True
            raise RuntimeError("embedding server timed out")
        return super().embed(texts)


def test_a_failed_call_ahead_loses_nothing_and_the_rerun_finishes(tmp_path):
    import pytest

    docs = _docs(4)
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(), progress=False) as index:
        index.insert(docs[:3], methods=["hybrid-ppr"])
    flaky = FailingOnce()
    with GraphIndex.open(tmp_path / "i", embedder=flaky, progress=False) as index:
        with pytest.raises(Exception, match="timed out"):
            index.insert([docs[3]])
        assert index.resources.embedder._held == {}
        index.insert([docs[3]])  # the document is stored: its layers are brought up to date
        grown = {c: _points(index, c) for c in COLLECTIONS}
    _same_as_a_bulk_build(grown, docs, tmp_path / "j")
