"""Inserting documents one per call builds the index a single bulk insert builds.

An index made from all documents in one ``insert`` and one made from the first of them in
bulk, then the rest one ``insert`` per document, must hold the same documents, chunks,
extractions, graph (nodes, edges, weights), vectors and BM25 index, and retrieve the same
passages with the default methods. Corpus: paragraphs of ``tests/data/musique_slice``
(with the supporting paragraphs of its first questions), offline extractor.

With a deterministic word-hashing embedder everything the index holds is compared
exactly, and rankings too; retrieval scores agree to 1e-9, not bit for bit: the walk
sums edges in the store's row order, and edges arrive in another order when documents
come one by one. With the bundled MiniLM, a text embedded in another batch (the bulk
build embeds hundreds at once, an insert a few) can differ in the last float bits, so
vectors, synonym weights and scores are compared to 1e-4, rankings exactly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from doubles import WordEmbedder

from hygraph.graph.kinds import EdgeKind
from hygraph.index import GraphIndex
from hygraph.ingest.documents import Document

SLICE = Path(__file__).parent / "data" / "musique_slice"


def _slice() -> tuple[list[Document], list[dict[str, Any]]]:
    records = [json.loads(x) for x in (SLICE / "corpus.jsonl").read_text().splitlines()]
    docs = [Document(id=r["id"], text=r["text"], title=r["title"]) for r in records]
    questions = [json.loads(x) for x in (SLICE / "questions.jsonl").read_text().splitlines()]
    return docs, questions


def _snapshot(index: GraphIndex) -> dict[str, Any]:
    """What the index holds, in comparable form (vectors and weights kept apart)."""
    store = index.store
    chunk_ids = store.chunk_ids()
    chunks = store.get_chunks(chunk_ids)
    rows = store._query("SELECT id FROM nodes ORDER BY id")
    node_ids = [r[0] for r in rows]
    nodes = store.get_nodes(node_ids)
    edges = {(e.src, e.dst, e.kind): e for e in store.iter_edges()}
    relation_ids = [f"{s}|{d}" for s, d, k in edges if k == EdgeKind.RELATION]
    candidates = [*chunk_ids, *node_ids, *relation_ids]
    vectors = {
        name: index.vectors.vectors(name, candidates) for name in sorted(index.info()["vectors"])
    }
    return {
        "documents": sorted(store.document_ids()),
        "chunks": [(c, chunks[c].doc_id, chunks[c].text) for c in chunk_ids],
        "chunk_texts": index.chunk_texts(chunk_ids),
        "extractions": {c: e.to_dict() for c, e in store.get_extractions(chunk_ids).items()},
        "nodes": {n: (x.kind, x.name, x.text, x.data, sorted(x.sources)) for n, x in nodes.items()},
        "edges": {k: (e.data, sorted(e.sources)) for k, e in edges.items()},
        "weights": {k: e.weight for k, e in edges.items()},
        "counts": index.info()["counts"],
        "vector_counts": index.info()["vectors"],
        "vectors": vectors,
    }


def _retrievals(index: GraphIndex, questions: list[str]) -> dict[tuple[str, str], Any]:
    out = {}
    for method in index.methods:
        for q in questions:
            result = index.retrieve(q, method, top_k=10)
            out[(method, q)] = (result.chunks, [round(i.score, 12) for i in result.items])
    return out


def _build(
    path: Path, bulk: list[Document], singles: list[Document], embedder: Any, questions: list[str]
) -> tuple[dict[str, Any], dict, list[float]]:
    with GraphIndex(path, embedder=embedder, progress=False) as index:
        index.insert(bulk)
        for doc in singles:
            report = index.insert([doc])
            assert report.added == [doc.id]
            synonyms = index.resources.layers["synonyms"]
            kept = synonyms._kept.keys  # the matrix kept for the next insert is a full read's
            fresh = synonyms._entity_vectors(index.resources)
            assert kept.ids == fresh.ids and kept.numbers == fresh.numbers
            np.testing.assert_array_equal(kept.vectors, fresh.vectors)
        bm25 = index.resources.layers["bm25"]
        lexical = [bm25.search(index.resources, q, 10) for q in questions]
        # Qdrant Edge flushes an idle shard on a timer (5 s), so whether a search reads
        # the write-ahead log or flushed segments depends on the machine's load; under
        # load (a full suite beside a benchmark) the scores differed past the 6th digit.
        # Both builds are read from flushed shards.
        getattr(index.vectors, "flush", lambda: None)()
        return _snapshot(index), _retrievals(index, questions), lexical


def _assert_same_hits(bulk: dict, inserted: dict, atol: float, rel: float = 1e-6) -> None:
    assert inserted.keys() == bulk.keys()
    for key, (chunks, scores) in bulk.items():
        assert inserted[key][0] == chunks, key
        assert inserted[key][1] == pytest.approx(scores, rel=rel, abs=atol), key


def _assert_same(bulk: dict[str, Any], inserted: dict[str, Any], atol: float) -> None:
    for key in bulk:
        if key in ("vectors", "weights"):
            continue
        assert bulk[key] == inserted[key], key
    assert bulk["weights"].keys() == inserted["weights"].keys()
    for k, w in bulk["weights"].items():
        assert inserted["weights"][k] == pytest.approx(w, abs=atol), k
    assert bulk["vectors"].keys() == inserted["vectors"].keys()
    for name, found in bulk["vectors"].items():
        assert found.keys() == inserted["vectors"][name].keys(), name
        for point, vector in found.items():
            np.testing.assert_allclose(inserted["vectors"][name][point], vector, atol=atol)


def test_one_insert_per_document_holds_what_a_bulk_build_holds(tmp_path):
    """Exactly, with a deterministic embedder: 28 documents in bulk, then 12 one by one
    (supporting paragraphs among them), against all 40 in one insert."""
    docs, questions = _slice()
    corpus = docs[:24] + docs[-16:]
    order = corpus[::2] + corpus[1::2][:8] + corpus[1::2][8:]  # singles: supporting and not
    asked = [q["question"] for q in questions]
    embedder = WordEmbedder(dim=64)
    bulk, bulk_hits, bulk_bm25 = _build(tmp_path / "bulk", order, [], embedder, asked)
    one, one_hits, one_bm25 = _build(tmp_path / "one", order[:28], order[28:], embedder, asked)
    _assert_same(bulk, one, atol=0.0)
    assert bulk["counts"]["edges"].get(EdgeKind.SYNONYM, 0) > 0  # the layer had work to do
    assert one_bm25 == bulk_bm25
    # Same chunks in the same order, scores to 1e-9. The word-hashing embedder gives some
    # passages exactly the same cosine to a question; Qdrant returned such ties in an order
    # that depended on how the points were written and on the queries asked before, which
    # moved the walk's rank-based prior (scores 4e-4 apart, in most runs once co-occurrence
    # facts were composed from names). Searches now order ties by id (test_vectors.py:
    # ``test_points_of_equal_score_come_back_by_id_whatever_the_write_order``).
    _assert_same_hits(bulk_hits, one_hits, atol=1e-9, rel=1e-6)


def test_one_insert_per_document_with_the_bundled_embedder(tmp_path, minilm):
    """With MiniLM (the default embedder): the supporting paragraphs of a two-hop MuSiQue
    question and distractors, one of each inserted one by one."""
    docs, questions = _slice()
    order = [docs[0], docs[100], docs[101]]
    singles = [docs[1], docs[102]]
    asked = [questions[0]["question"], questions[1]["question"]]
    bulk, bulk_hits, bulk_bm25 = _build(tmp_path / "bulk", order + singles, [], None, asked)
    one, one_hits, one_bm25 = _build(tmp_path / "one", order, singles, None, asked)
    _assert_same(bulk, one, atol=1e-4)
    assert one_bm25 == bulk_bm25  # lexical: exactly
    _assert_same_hits(bulk_hits, one_hits, atol=1e-4)
