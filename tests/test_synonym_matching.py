"""Synonym edges: each entity matched once per vector, the edges the union of the matches.

HippoRAG links every entity to its nearest entities once. Matching again every entity a
batch names made a frequent entity cost one match per batch (a long document named
"United States" in every one), and a match replaced the entity's synonym edges, so an
edge another entity's match had found could go or stay depending on where batches fell.
The hashed bag-of-words embedder (``tests/doubles.py``) gives hand-checkable cosines:

* "Alder Bay" · "Alder Bay Port" = 2/√6 ≈ 0.816
* "Alder Bay Port" · "Alder Bay Port Hall" = 3/√12 ≈ 0.866
* "Alder Bay" · "Alder Bay Port Hall" = 2/√8 ≈ 0.707 (below τ = 0.8)

With ``synonym_max=1`` each entity's own match keeps its nearest: Alder Bay → Port,
Port → Port Hall, Port Hall → Port; their union is {Bay–Port, Port–Port Hall}.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from doubles import WordEmbedder

import hygraph.graph.algorithms.similar as similar
from hygraph.graph.kinds import EdgeKind
from hygraph.graph.store import GraphStore
from hygraph.index import GraphIndex
from hygraph.ingest.documents import Document
from hygraph.layers import synonyms

METHOD = "hybrid-ppr:synonym_max=1"
DOCS = [
    Document("d1", "Alder Bay was quiet that winter."),
    Document("d2", "Alder Bay Port opened in spring."),
    Document("d3", "Alder Bay Port Hall held the meeting."),
    Document("d4", "Alder Bay Port closed again in autumn."),
]
EXPECTED = {("Alder Bay", "Alder Bay Port"), ("Alder Bay Port", "Alder Bay Port Hall")}


def _pairs(index: GraphIndex) -> set[tuple[str, str]]:
    rows = index.store.edge_rows([EdgeKind.SYNONYM])
    names = index.store.node_names("entity")
    return {tuple(sorted((names[s], names[d]))) for s, d, _ in rows}


def _build(tmp_path, name: str, batch: int, monkeypatch, docs=DOCS) -> GraphIndex:
    monkeypatch.setattr(synonyms, "BUILD_BATCH", batch)
    index = GraphIndex(tmp_path / name, embedder=WordEmbedder(), progress=False)
    index.insert(docs, methods=[METHOD])
    return index


@pytest.mark.parametrize("batch", [1, 2])
def test_the_edges_do_not_depend_on_where_batches_fall(tmp_path, monkeypatch, batch):
    """Fails when a match replaces edges other matches found: with one document per
    batch, "Alder Bay Port" matched again in d2 and d4 dropped Bay–Port."""
    whole = _build(tmp_path, "whole", 512, monkeypatch)
    assert _pairs(whole) == EXPECTED
    split = _build(tmp_path, f"split{batch}", batch, monkeypatch)
    assert _pairs(split) == EXPECTED
    whole.close()
    split.close()


def test_an_entity_named_in_every_batch_is_matched_once(tmp_path, monkeypatch):
    """Fails when every batch matches every entity it names: "Alder Bay Port" (d2, d4)
    was matched twice."""
    matched: list[int] = []
    shipped = similar.similar_pairs

    def counting(queries, keys, **kwargs):
        matched.append(len(queries))
        return shipped(queries, keys, **kwargs)

    monkeypatch.setattr(similar, "similar_pairs", counting)
    index = _build(tmp_path, "ix", 1, monkeypatch)
    entities = len(index.store.node_names("entity"))
    assert sum(matched) == entities  # one row per entity, each once
    index.close()


def test_a_changed_vector_replaces_the_entitys_old_edges(tmp_path, monkeypatch):
    """An entity whose vector changed is matched again and loses the edges it had (here
    Bay–Port too, which Bay's match found: Bay's vector did not change, so it is not
    matched again); the digest it was matched with is stored."""
    index = _build(tmp_path, "ix", 1, monkeypatch)
    res = SimpleNamespace(store=index.store)
    matched = synonyms.Synonyms._matched(res)
    port = next(i for i, n in index.store.node_names("entity").items() if n == "Alder Bay Port")
    assert set(matched) >= {port}
    # Another connection records it as matched with another vector: the next insert
    # naming it replaces.
    other = GraphStore(index.store.path)
    other.unmark_done(synonyms.MATCHED_TASK, [f"{port}\x1f{matched[port]}"])
    other.mark_done(synonyms.MATCHED_TASK, [f"{port}\x1fstale"])
    other.close()
    index.insert([Document("d5", "Alder Bay Port reopened.")], methods=[METHOD])
    assert _pairs(index) == {("Alder Bay Port", "Alder Bay Port Hall")}
    assert synonyms.Synonyms._matched(res)[port] == matched[port]
    index.close()


def test_the_matches_are_read_once_while_no_other_connection_writes(tmp_path, monkeypatch):
    """An insert into a large index does not read every entity's match again: the layer
    keeps them between inserts (its own writes keep them current) and reads them once
    another connection has written."""
    index = _build(tmp_path, "ix", 512, monkeypatch, docs=DOCS[:2])
    reads: list[str] = []
    shipped = synonyms.Synonyms._matched

    def counting(res):
        reads.append("matched")
        return shipped(res)

    monkeypatch.setattr(synonyms.Synonyms, "_matched", staticmethod(counting))
    index.insert([DOCS[2]], methods=[METHOD])
    index.insert([DOCS[3]], methods=[METHOD])
    assert reads == []  # kept from the build before
    assert _pairs(index) == EXPECTED
    other = GraphStore(index.store.path)
    other.set_meta("touched", "1")
    other.close()
    index.insert([Document("d5", "Alder Bay Port reopened.")], methods=[METHOD])
    assert reads == ["matched"]
    assert _pairs(index) == EXPECTED
    index.close()


def test_a_build_stopped_mid_way_resumes_to_the_same_edges(tmp_path, monkeypatch):
    """A build that fails in its third synonym batch (after two batches committed their
    edges and digests) resumes on the next run and ends with the edges of an
    uninterrupted build: nothing matched twice, nothing lost."""
    whole = _build(tmp_path, "whole", 1, monkeypatch)
    expected = _pairs(whole)
    whole.close()
    shipped = synonyms.Synonyms.link
    calls = {"n": 0}

    def failing(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("stopped")
        return shipped(self, *args, **kwargs)

    monkeypatch.setattr(synonyms.Synonyms, "link", failing)
    index = GraphIndex(tmp_path / "stopped", embedder=WordEmbedder(), progress=False)
    with pytest.raises(RuntimeError, match="stopped"):
        index.insert(DOCS, methods=[METHOD])
    index.close()
    monkeypatch.setattr(synonyms.Synonyms, "link", shipped)
    again = GraphIndex(tmp_path / "stopped", embedder=WordEmbedder(), progress=False)
    again.insert(DOCS, methods=[METHOD])
    assert _pairs(again) == expected == EXPECTED
    again.close()
