"""The ``fact-vectors`` layer: relation edges embedded as their triple alone (HippoRAG 2).

The hand-made world: four entities, two of them called "Paris", and four relation
edges written straight into a store:

=============  ==========  ===============================  ==========================
edge           label       descriptions                     text embedded
=============  ==========  ===============================  ==========================
Ada→Bell       founded     "Ada founded Bell in 1900."      "Ada founded Bell"
Bell→Paris     (none)      "Bell sells in Paris."           "Bell related to Paris"
Ada→Paris      visited     "Ada went to Paris, France."     "Ada visited Paris"
Ada→Paris TX   visited     "Ada went to Paris, Texas."      "Ada visited Paris"
=============  ==========  ===============================  ==========================

So four edges have three distinct texts. The embedder counts what reaches it and the
embedding cache is off, so a skipped or shared text shows as one text fewer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from doubles import WordEmbedder
from worlds import store_of_texts, word_resources

from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import Edge, Node
from hygraph.index import GraphIndex
from hygraph.ingest import Document
from hygraph.layers.base import get_layer
from hygraph.layers.fact_vectors import FACT_COLLECTION, FactVectors, fact_text, text_digest
from hygraph.layers.relation_vectors import RelationVectors, relation_id
from hygraph.methods.base import get_method, layer_closure
from hygraph.vectors import open_vector_index

ADA, BELL, PARIS, PARIS_TX = "ent:ada", "ent:bell", "ent:paris", "ent:paris texas"
NAMES = {ADA: "Ada", BELL: "Bell", PARIS: "Paris", PARIS_TX: "Paris"}
#: (source, target, label, description)
RELATIONS = [
    (ADA, BELL, "founded", "Ada founded Bell in 1900."),
    (BELL, PARIS, "", "Bell sells in Paris."),
    (ADA, PARIS, "visited", "Ada went to Paris, France."),
    (ADA, PARIS_TX, "visited", "Ada went to Paris, Texas."),
]
KEYS = [(s, t, EdgeKind.RELATION) for s, t, *_ in RELATIONS]


class CountingEmbedder(WordEmbedder):
    """The bag-of-words double, recording every text it is asked to embed."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> Any:
        self.seen.extend(texts)
        return super().embed(texts)


def edge(src: str, dst: str, label: str, said: str, chunk: str) -> Edge:
    data = {"label": label, "entries": {chunk: [[label, said, 1.0]]}}
    return Edge(src, dst, EdgeKind.RELATION, 1.0, data, [chunk])


@pytest.fixture
def world(tmp_path):
    store, chunk = store_of_texts(tmp_path / "kg.sqlite", {"d1": "Ada, Bell and Paris."})
    store.upsert_nodes(Node(i, NodeKind.ENTITY, n, "", {}, [chunk["d1"]]) for i, n in NAMES.items())
    store.upsert_edges(edge(s, t, label, said, chunk["d1"]) for s, t, label, said in RELATIONS)
    res = word_resources(store, open_vector_index(tmp_path / "qdrant"), tmp_path / "index")
    counter = CountingEmbedder()
    res._embedder = counter  # no embedding cache: every text embedded reaches the counter
    return res, counter, chunk["d1"]


def stored_ids(res) -> set[str]:
    return set(res.stored_vectors(FACT_COLLECTION, [relation_id(s, t) for s, t, *_ in RELATIONS]))


def test_facts_are_the_triples_alone_each_distinct_text_embedded_once(world):
    res, counter, _ = world
    layer = FactVectors()
    layer.embed(res, KEYS)
    seen = sorted(counter.seen)
    assert seen == ["Ada founded Bell", "Ada visited Paris", "Bell related to Paris"]
    assert stored_ids(res) == {"ent:ada|ent:bell", "ent:bell|ent:paris", "ent:ada|ent:paris",
                               "ent:ada|ent:paris texas"}  # fmt: skip
    found = res.stored_vectors(FACT_COLLECTION, [f"{ADA}|{PARIS}", f"{ADA}|{PARIS_TX}"])
    assert np.allclose(found[f"{ADA}|{PARIS}"], found[f"{ADA}|{PARIS_TX}"])  # one shared vector
    expected = WordEmbedder().embed(["Ada founded Bell"])[0]
    assert np.allclose(res.stored_vectors(FACT_COLLECTION, [f"{ADA}|{BELL}"])[f"{ADA}|{BELL}"],
                       expected, atol=1e-6)  # fmt: skip
    assert not res.vectors.has_collection("relations")  # relation-vectors is another layer
    assert fact_text("Ada", "", "Bell") == "Ada related to Bell"
    # The progress items: every embedded id, and one digest of its text per id.
    assert res.store.done_items("fact-vectors:ids") == stored_ids(res)
    assert res.store.done_items("fact-vectors:texts") == {
        f"{relation_id(s, t)}\t{text_digest(fact_text(NAMES[s], label, NAMES[t]))}"
        for s, t, label, _ in RELATIONS
    }


def test_only_facts_whose_triple_changed_are_embedded_again(world):
    res, counter, chunk = world
    FactVectors().embed(res, KEYS)
    counter.seen.clear()
    # A new description changes nothing embedded: nothing reaches the embedder.
    res.store.upsert_edges([edge(ADA, BELL, "founded", "Ada started Bell.", chunk)])
    FactVectors().embed(res, KEYS)  # a new instance: the digests are read from the store
    assert counter.seen == []
    # A new label does; then back again, which must embed the first text once more.
    for label in ("started", "founded"):
        res.store.upsert_edges([edge(ADA, BELL, label, "Ada founded Bell.", chunk)])
        FactVectors().embed(res, KEYS)
        assert counter.seen[-1:] == [f"Ada {label} Bell"]
    assert len(counter.seen) == 2
    stored = res.stored_vectors(FACT_COLLECTION, [f"{ADA}|{BELL}"])[f"{ADA}|{BELL}"]
    assert np.allclose(stored, WordEmbedder().embed(["Ada founded Bell"])[0], atol=1e-6)
    items = res.store.done_items("fact-vectors:texts")
    assert sorted(i.rpartition("\t")[0] for i in items) == sorted(stored_ids(res))  # one each
    # An id left with two digests (by an earlier version killed mid-build) is embedded
    # again, and keeps one digest.
    res.store.mark_done("fact-vectors:texts", [f"{ADA}|{BELL}\t{text_digest('stale')}"])
    counter.seen.clear()
    FactVectors().embed(res, KEYS)
    assert counter.seen == ["Ada founded Bell"]
    items = res.store.done_items("fact-vectors:texts")
    assert f"{ADA}|{BELL}\t{text_digest('Ada founded Bell')}" in items
    assert sorted(i.rpartition("\t")[0] for i in items) == sorted(stored_ids(res))


def test_the_digests_are_read_once_while_no_other_connection_writes(world, monkeypatch):
    """An insert into a large index reads only what changed: the layer keeps the digests
    between inserts, and reads them again once another connection has written."""
    from hygraph.graph.store import GraphStore

    res, counter, chunk = world
    reads = []
    done_items = res.store.done_items
    monkeypatch.setattr(res.store, "done_items",
                        lambda task: reads.append(task) or done_items(task))  # fmt: skip
    layer = FactVectors()
    layer.embed(res, KEYS)
    res.store.upsert_edges([edge(ADA, BELL, "started", "Ada started Bell.", chunk)])
    layer.embed(res, KEYS)  # this store's own writes: the kept digests stay good
    assert reads.count("fact-vectors:texts") == 1
    assert counter.seen[-1] == "Ada started Bell"
    # Another connection changes the label back and records the digest: read again.
    other = GraphStore(res.store.path)
    other.upsert_edges([edge(ADA, BELL, "founded", "Ada founded Bell.", chunk)])
    item = f"{ADA}|{BELL}\t{text_digest('Ada founded Bell')}"
    other.unmark_done("fact-vectors:texts", [f"{ADA}|{BELL}\t{text_digest('Ada started Bell')}"])
    other.mark_done("fact-vectors:texts", [item])
    other.close()
    counter.seen.clear()
    layer.embed(res, KEYS)
    assert reads.count("fact-vectors:texts") == 2
    assert counter.seen == []  # the other connection's digest was read: nothing to embed


def test_reset_removes_the_vectors_and_the_progress(world):
    res, _, _ = world
    layer = FactVectors()
    layer.embed(res, KEYS)
    layer.reset(res)
    assert stored_ids(res) == set()
    assert res.store.done_items("fact-vectors:ids") == set()
    assert res.store.done_items("fact-vectors:texts") == set()


def test_the_layer_is_registered_and_the_ppr_methods_read_it():
    assert get_layer("fact-vectors") is FactVectors
    assert issubclass(FactVectors, RelationVectors)
    assert FactVectors.collections == (FACT_COLLECTION,)
    for name in ("hybrid-ppr", "hipporag2"):
        assert "fact-vectors" in get_method(name).layers
        assert "relation-vectors" not in layer_closure(get_method(name).layers)
    for name in ("g-retriever", "hygrag"):  # their papers embed descriptions
        assert "relation-vectors" in layer_closure(get_method(name).layers)


DOCS = {
    "d1": "Ada Lovelace founded Bell Labs in London. Bell Labs is located in London.",
    "d2": "Charles Babbage worked with Ada Lovelace in London. Babbage founded the "
    "Analytical Society.",
    "d3": "Bell Labs hired Claude Shannon. Claude Shannon was born in Michigan.",
}


def relation_ids(index: GraphIndex) -> set[str]:
    return {relation_id(s, d) for s, d, _ in index.store.edge_rows([EdgeKind.RELATION])}


def fact_ids(index: GraphIndex) -> set[str]:
    res = index.resources
    return set(res.stored_vectors(FACT_COLLECTION, sorted(relation_ids(index) |
                                  res.store.done_items("fact-vectors:ids"))))  # fmt: skip


def test_insert_and_delete_keep_the_facts_in_step_with_the_graph(tmp_path):
    counter = CountingEmbedder(256)
    docs = [Document(i, t) for i, t in DOCS.items()]
    with GraphIndex(tmp_path / "i", embedder=counter, progress=False) as index:
        index.insert(docs[:2], methods=["hipporag2"])
        assert relation_ids(index), "the offline extractor found no relation"
        assert fact_ids(index) == relation_ids(index)
        texts = index.resources.store.done_items("fact-vectors:texts")
        assert {i.rpartition("\t")[0] for i in texts} == relation_ids(index)
        index.insert(docs[2:])
        assert fact_ids(index) == relation_ids(index)
        index.delete("d1")
        assert fact_ids(index) == relation_ids(index)
        assert index.store.done_items("fact-vectors:ids") == relation_ids(index)
        texts = index.store.done_items("fact-vectors:texts")
        assert sorted(i.rpartition("\t")[0] for i in texts) == sorted(relation_ids(index))


def test_an_index_built_with_relation_vectors_gets_fact_vectors(tmp_path):
    docs = [Document(i, t) for i, t in DOCS.items()]
    path = tmp_path / "i"
    with GraphIndex(path, embedder=WordEmbedder(256), progress=False) as index:
        index.insert(docs, methods=["g-retriever"])  # relation-vectors, no fact-vectors
        # What an index built by an earlier hybrid-ppr holds: relation-vectors, the method.
        index.manifest.methods["hybrid-ppr"] = get_method("hybrid-ppr")().config.to_dict()
        index.manifest.save(path)
        assert not index.resources.vectors.has_collection(FACT_COLLECTION)
    with GraphIndex(path, embedder=WordEmbedder(256), progress=False) as index:
        index.insert([])  # any update builds the layers the built methods now read
        assert fact_ids(index) == relation_ids(index)
        result = index.retrieve("Who founded Bell Labs?", "hybrid-ppr")
        assert result.passages


def test_relation_ids_are_relation_id_of_each_pair():
    """The ids read for the kept fact matrix are made in C; they must be the layer's ids."""
    from hygraph.layers import relation_vectors

    pairs = [("ent:a", "ent:b"), ("ent:b|x", "ent:c"), ("", "ent:d")]
    assert relation_vectors.relation_ids(pairs) == [
        relation_vectors.relation_id(s, d) for s, d in pairs
    ]
    assert relation_vectors.relation_ids(iter(pairs)) == relation_vectors.relation_ids(pairs)


def composed(first: str, second: str, dim: int = 64) -> np.ndarray:
    """What ``fact_cooccurrence="names"`` stores for a fact of these two names."""
    from hygraph.ingest.tokenizer import default_tokenizer

    pieces = default_tokenizer().count_many([first, second])
    a, b = WordEmbedder(dim).embed([first, second])
    summed = pieces[0] * np.asarray(a) + pieces[1] * np.asarray(b)
    return summed / np.linalg.norm(summed)


def test_cooccurrence_facts_get_their_names_vectors_weighted_by_word_pieces(world):
    """Bell→Paris has no label (the offline extractor's co-occurrence): with
    ``fact_cooccurrence="names"`` its vector is made from "Bell" and "Paris" and the text
    "Bell related to Paris" is never embedded; the worded facts are embedded as before."""
    from hygraph.layers.fact_vectors import FactVectorsConfig

    res, counter, chunk = world
    layer = FactVectors(FactVectorsConfig(fact_cooccurrence="names"))
    layer.embed(res, KEYS)
    assert sorted(counter.seen) == ["Ada founded Bell", "Ada visited Paris", "Bell", "Paris"]
    fact = f"{BELL}|{PARIS}"
    assert stored_ids(res) == {relation_id(s, t) for s, t, *_ in RELATIONS}
    stored = res.stored_vectors(FACT_COLLECTION, [fact])[fact]
    assert np.allclose(stored, composed("Bell", "Paris"), atol=1e-6)
    marked = text_digest("names\x1fBell related to Paris")
    assert f"{fact}\t{marked}" in res.store.done_items("fact-vectors:texts")
    # Nothing changed: nothing embedded again, by this layer or a new one (digests read back).
    counter.seen.clear()
    layer.embed(res, KEYS)
    FactVectors(FactVectorsConfig(fact_cooccurrence="names")).embed(res, KEYS)
    assert counter.seen == []
    # The same fact asked for as a text is a different vector: embedded, and replaced.
    FactVectors(FactVectorsConfig(fact_cooccurrence="text")).embed(res, KEYS)
    assert counter.seen == ["Bell related to Paris"]
    stored = res.stored_vectors(FACT_COLLECTION, [fact])[fact]
    assert np.allclose(stored, WordEmbedder().embed(["Bell related to Paris"])[0], atol=1e-6)
    # A label makes it a worded fact, embedded as its triple in either mode.
    counter.seen.clear()
    res.store.upsert_edges([edge(BELL, PARIS, "sells in", "Bell sells in Paris.", chunk)])
    FactVectors(FactVectorsConfig(fact_cooccurrence="names")).embed(res, KEYS)
    assert counter.seen == ["Bell sells in Paris"]
    items = res.store.done_items("fact-vectors:texts")
    assert sorted(i.rpartition("\t")[0] for i in items) == sorted(stored_ids(res))  # one each


def test_planned_texts_of_cooccurrence_facts_are_their_names(world):
    """A small build embeds ahead what its layers plan: for a composed fact, its names."""
    from hygraph.layers.fact_vectors import FactVectorsConfig

    res, _, chunk = world
    layer = FactVectors(FactVectorsConfig(fact_cooccurrence="names"))
    layer.keys = lambda res, chunk_ids: KEYS  # type: ignore[method-assign]
    planned = layer.planned_texts(res, [chunk])
    assert sorted(set(planned)) == ["Ada founded Bell", "Ada visited Paris", "Bell", "Paris"]
    text = FactVectors(FactVectorsConfig(fact_cooccurrence="text"))
    text.keys = layer.keys  # type: ignore[method-assign]
    assert "Bell related to Paris" in text.planned_texts(res, [chunk])


def test_fact_cooccurrence_is_checked_and_old_indexes_keep_embedding_the_text():
    from hygraph.errors import ConfigError
    from hygraph.layers.fact_vectors import FactVectorsConfig

    with pytest.raises(ConfigError, match="fact_cooccurrence"):
        FactVectorsConfig(fact_cooccurrence="words")
    for name, default in (("hybrid-ppr", "names"), ("hipporag2", "text")):
        method = get_method(name)
        with pytest.raises(ConfigError, match="fact_cooccurrence"):
            method({"fact_cooccurrence": "words"})
        # A new index takes the method's choice (the default one composes the names,
        # HippoRAG 2 embeds the triple as its code does); a layer saved without the field
        # (an index built before it existed) embeds the text.
        assert FactVectors.config_from(method().config).fact_cooccurrence == default
        for other in ("names", "text"):
            chosen = method({"fact_cooccurrence": other}).config
            assert FactVectors.config_from(chosen).fact_cooccurrence == other
    assert FactVectors.Config(**{}).fact_cooccurrence == "text"


def test_an_index_asked_for_names_composes_the_offline_extractors_cooccurrence_facts(tmp_path):
    met = "In 1843 Ada Lovelace and Charles Babbage met Michael Faraday at the Royal Institution."
    docs = [Document(i, t) for i, t in {**DOCS, "d4": met}.items()]
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(256), progress=False) as index:
        index.insert(docs, methods=["hybrid-ppr:fact_cooccurrence=names"])
        assert index.manifest.layers["fact-vectors"]["fact_cooccurrence"] == "names"
        edges = list(index.store.iter_edges(EdgeKind.RELATION))
        bare = [e for e in edges if not str(e.data.get("label", "")).strip()
                or e.data.get("label") == "related to"]  # fmt: skip
        worded = [e for e in edges if e not in bare]
        assert bare and worded, "the offline extractor found both kinds of fact"
        names = index.store.node_names(NodeKind.ENTITY)
        res = index.resources
        for e in bare[:3]:
            fact = relation_id(e.src, e.dst)
            want = composed(names[e.src], names[e.dst], 256)
            got = res.stored_vectors(FACT_COLLECTION, [fact])[fact]
            assert np.allclose(got / np.linalg.norm(got), want, atol=1e-5)
        assert fact_ids(index) == relation_ids(index)
        assert index.retrieve("Who founded Bell Labs?", "hybrid-ppr").passages
