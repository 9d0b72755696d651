"""The bench's query process only queries: a method's missing layers are built before it.

``hygraph bench`` measures each method's peak memory in the process that asks its
questions. A method whose layers the index lacks used to build them in that process, so
its peak was the build's on the run that built them and the query's on a later run. The
build now runs first in a process of its own, and its peak is reported apart.
"""

from __future__ import annotations

from pathlib import Path

from corpora import HARBOUR_DOCS

from hygraph import GraphIndex
from hygraph.bench import worker
from hygraph.ingest import Document


def test_a_method_is_built_in_its_own_process_and_queried_in_this_one(tmp_path):
    path = tmp_path / "index"
    docs = [Document(text=text, id=n, title=title) for n, (title, text) in HARBOUR_DOCS.items()]
    with GraphIndex(path, progress=False) as index:
        index.insert(docs, methods=["vanilla"])
    spec = {
        "task": "query",
        "index": str(path),
        "method": "hybrid-ppr",
        "questions": [{"id": "q1", "question": "Who founded Aldercott Shipyard?"}],
        "top_k": 2,
        "max_depth": 2,
        "budget": 500,
        "ks": [1, 2],
    }
    first = worker.query(spec)
    built = first["build"]
    assert "build:fact-vectors" in built["built_layers"]
    assert built["peak_rss_mb"] > 0 and first["peak_rss_mb"] > 0
    assert first["rows"][0]["passages"]
    with GraphIndex.open(path, progress=False) as index:
        assert "hybrid-ppr" in index.methods  # the child's build is the index's

    again = worker.query(spec)  # nothing left to build: no build peak
    assert again["build"]["built_layers"] == [] and again["build"]["peak_rss_mb"] is None
    assert again["rows"][0]["passages"] == first["rows"][0]["passages"]
    assert Path(path).exists()
