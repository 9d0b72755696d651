"""Entity keys, the Extraction schema, the precomputed importer, and the shared entity graph."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hygraph.errors import ConfigError, InputError
from hygraph.extract import (
    ChunkInput,
    Entity,
    Extraction,
    Fact,
    Relation,
    entity_key,
    resolve_extractor,
)
from hygraph.extract.precomputed import PrecomputedExtractor
from hygraph.graph.entity_graph import EntityGraphBuilder, entity_node_id
from hygraph.graph.store import GraphStore
from hygraph.ingest import Chunk, Document

MUSIQUE = Path(__file__).resolve().parents[2] / "shared" / "data" / "musique"


def test_entity_key_merges_and_separates():
    assert entity_key("The  Beatles") == entity_key("the beatles") == "the beatles"
    assert entity_key("Paris") != entity_key("Paris, Texas")
    assert entity_key("“Hello Love”") == "hello love"
    assert entity_key("Jan Klapáč") == "jan klapáč"
    assert entity_key("Jan Klapáč", scheme="ascii") == "jan klap"
    assert entity_key("ＡＢＣ") == "abc"  # NFKC folds full-width letters
    assert entity_key("...") == ""


def test_normalised_merges_within_chunk_and_adds_missing_members():
    ex = Extraction(
        "c1",
        entities=[
            Entity("The  Beatles", "band", "A band.", 80),
            Entity("the beatles", description="From Liverpool.", score=120),
            Entity("  "),
        ],
        relations=[
            Relation("The Beatles", "Liverpool", "formed in"),
            Relation("the beatles", "Liverpool", "Formed in"),
            Relation("Liverpool", "liverpool", "self"),
        ],
        facts=[Fact("The Beatles formed in Liverpool in 1960.", ["The Beatles", "1960"], 14)],
    ).normalised()
    names = {e.key: e for e in ex.entities}
    assert set(names) == {"the beatles", "liverpool", "1960"}
    beatles = names["the beatles"]
    assert beatles.name == "The Beatles" and beatles.type == "band"
    assert beatles.description == "A band.\nFrom Liverpool." and beatles.score == 100.0
    assert len(ex.relations) == 1 and ex.facts[0].score == 10.0


def _write_records(path: Path, records: list[dict]) -> Path:
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n\n{broken\n")
    return path


def test_precomputed_by_id_and_by_content(tmp_path):
    records = [
        {
            "id": "p1",
            "entities": ["Ilse Marrow", "Colworth University", "1912"],
            "triples": [["Ilse Marrow", "studied at", "Colworth University"], ["bad"]],
        },
        {
            "id": "other",
            "title": "Dunmere",
            "text": "Dunmere is a town on the River Ost.",
            "entities": ["Dunmere", "River Ost"],
            "triples": [["Dunmere", "is on", "River Ost"]],
        },
    ]
    extractor = PrecomputedExtractor(_write_records(tmp_path / "x.jsonl", records))
    doc_hash = Document("d9", "Dunmere is a town on the River Ost.", title="Dunmere").content_hash
    chunks = [
        ChunkInput(
            "c1", "p1", "Ilse Marrow studied at Colworth University in 1912. She swam.", None
        ),
        ChunkInput("c2", "d9", "Dunmere\nDunmere is a town on the River Ost.", "Dunmere", doc_hash),
        ChunkInput("c3", "nobody", "Unknown text.", None),
    ]
    first, second, third = extractor.extract(chunks)
    assert {e.name for e in first.entities} == {"Ilse Marrow", "Colworth University", "1912"}
    assert [(r.source, r.label, r.target) for r in first.relations] == [
        ("Ilse Marrow", "studied at", "Colworth University")
    ]
    assert first.facts[0].entities == ["Ilse Marrow", "Colworth University", "1912"]
    assert first.units and extractor.stats.malformed_items == 1
    assert {e.name for e in second.entities} == {"Dunmere", "River Ost"}
    assert third.entities == [] and extractor.unmatched_chunks == 1


def test_precomputed_splits_a_document_over_its_chunks(tmp_path):
    records = [
        {
            "id": "d",
            "entities": ["Alpha", "Beta", "Gamma"],
            "triples": [["Alpha", "meets", "Beta"], ["Gamma", "likes", "Delta"]],
        }
    ]
    extractor = PrecomputedExtractor(_write_records(tmp_path / "x.jsonl", records))
    a, b = extractor.extract(
        [
            ChunkInput("c1", "d", "Alpha meets Beta here."),
            ChunkInput("c2", "d", "Later Gamma arrives."),
        ]
    )
    assert {e.name for e in a.entities} == {"Alpha", "Beta"}
    assert {e.name for e in b.entities} == {"Gamma", "Delta"}
    assert [r.label for r in b.relations] == ["likes"]


def test_precomputed_missing_or_empty_file(tmp_path):
    with pytest.raises(InputError, match="not found"):
        PrecomputedExtractor(tmp_path / "nope.jsonl")
    (tmp_path / "bad.jsonl").write_text("not json\n")
    with pytest.raises(InputError, match="no usable records"):
        PrecomputedExtractor(tmp_path / "bad.jsonl")


@pytest.mark.skipif(not MUSIQUE.exists(), reason="benchmark data not beside the checkout")
def test_precomputed_matches_every_musique_passage():
    extractor = PrecomputedExtractor(MUSIQUE / "extraction.jsonl")
    corpus = [json.loads(x) for x in (MUSIQUE / "corpus.jsonl").read_text().splitlines()]
    chunks = [
        ChunkInput(f"c{i}", d["id"], f"{d['title']}\n{d['text']}", d["title"])
        for i, d in enumerate(corpus)
    ]
    extractions = extractor.extract(chunks)
    assert len(corpus) == 1890
    assert extractor.unmatched_chunks == 0
    assert sum(1 for e in extractions if e.entities) >= 1880
    assert extractor.stats.relations > 10_000


def test_resolve_extractor_specs(tmp_path):
    assert resolve_extractor("none") is None
    with pytest.raises(ConfigError, match="needs an LLM"):
        resolve_extractor("llm")
    with pytest.raises(ConfigError, match="unknown extractor"):
        resolve_extractor("spacy")


def _store_with(*docs: tuple[str, list[str]]) -> tuple[GraphStore, dict[str, str]]:
    store = GraphStore(None)
    ids = {}
    for doc_id, texts in docs:
        chunks = [
            Chunk(Chunk.make_id(doc_id, t), doc_id, i, t, 5, 0, len(t), 0, 5)
            for i, t in enumerate(texts)
        ]
        store.add_document(Document(doc_id, " ".join(texts)), chunks)
        for c in chunks:
            ids[c.text] = c.id
    return store, ids


def test_entity_graph_merges_across_chunks_and_repairs_after_delete():
    store, ids = _store_with(("a", ["A text"]), ("b", ["B text"]))
    ca, cb = ids["A text"], ids["B text"]
    builder = EntityGraphBuilder(store)
    builder.add(
        [
            Extraction(
                ca,
                [Entity("Harrowby", "place", "A port town.", 60), Entity("Aldercott Yard")],
                [Relation("Aldercott Yard", "Harrowby", "is in", "The yard is in Harrowby.")],
            ).normalised(),
            Extraction(
                cb,
                [Entity("harrowby", description="Home of the festival.", score=90)],
                [Relation("Aldercott Yard", "Harrowby", "located in")],
            ).normalised(),
        ]
    )
    harrowby = store.get_nodes([entity_node_id("harrowby")])[entity_node_id("harrowby")]
    assert harrowby.name == "Harrowby" and harrowby.data["type"] == "place"
    assert harrowby.text == "A port town.\nHome of the festival."
    assert harrowby.data["score"] == 90 and set(harrowby.sources) == {ca, cb}
    edge = store.get_edges(
        [(entity_node_id("aldercott yard"), entity_node_id("harrowby"), "relation")]
    )
    (rel,) = edge.values()
    assert rel.weight == 2.0 and set(rel.data["entries"]) == {ca, cb}
    counts = store.counts()
    assert counts["nodes"] == {"entity": 2} and counts["edges"]["mentions"] == 4

    builder.add(
        [
            Extraction(
                cb, [Entity("harrowby", description="Home of the festival.", score=90)]
            ).normalised()
        ]
    )  # re-adding is idempotent
    assert store.counts()["edges"]["mentions"] == 4

    removed = store.delete_document("a")
    builder.repair(removed)
    after = store.get_nodes([entity_node_id("harrowby"), entity_node_id("aldercott yard")])
    assert entity_node_id("aldercott yard") in after  # still named by b's relation
    harrowby = after[entity_node_id("harrowby")]
    assert harrowby.text == "Home of the festival." and harrowby.sources == (cb,)
    (rel,) = store.get_edges(
        [(entity_node_id("aldercott yard"), entity_node_id("harrowby"), "relation")]
    ).values()
    assert rel.weight == 1.0 and list(rel.data["entries"]) == [cb]


def test_entity_graph_summarises_long_descriptions_with_an_llm():
    from hygraph.models.base import LLMResponse

    class Summariser:
        """Test double: an LLM that answers every summary request with a fixed sentence."""

        name = "summariser"
        calls = 0

        async def acomplete(self, messages, **params):
            Summariser.calls += 1
            return LLMResponse("Harrowby is a port town known for its festival.", 50, 10)

        def complete(self, messages, **params):
            raise AssertionError("async path expected")

    store, ids = _store_with(("a", ["A text", "A more"]))
    long_text = "word " * 400
    builder = EntityGraphBuilder(store, llm=Summariser(), summary_threshold=500)
    builder.add(
        [
            Extraction(ids["A text"], [Entity("Harrowby", description=long_text + "one")]),
            Extraction(ids["A more"], [Entity("Harrowby", description=long_text + "two")]),
        ]
    )
    node = store.get_nodes([entity_node_id("harrowby")])[entity_node_id("harrowby")]
    assert node.text == "Harrowby is a port town known for its festival."
    assert Summariser.calls == 1 and builder.summaries_made == 1


def test_entity_graph_does_not_depend_on_extraction_order():
    """A chunk extracted late (its first try failed) gives the graph a clean build gives."""

    def extractions(ids: dict[str, str]) -> list[Extraction]:
        texts = ["one", "two", "three"]
        return [
            Extraction(
                ids[t],
                [Entity(name, "person", f"Told in {t}.", 50)],
                [Relation("Mara Vell", "Oskar Lind", label, f"{label} ({t}).")],
            ).normalised()
            for t, name, label in zip(
                texts,
                ["Mara Vell", "MARA VELL", "mara vell"],
                ["met", "married", "met"],
                strict=True,
            )
        ]

    def build(order: list[list[int]]) -> tuple[dict, dict]:
        store, ids = _store_with(("d", ["one", "two", "three"]))
        builder = EntityGraphBuilder(store)
        batch = extractions(ids)
        for step in order:
            builder.add([batch[i] for i in step])
        entities = store.nodes_of_kind("entity")
        records = store.records_of(n.id for n in entities)
        nodes = {n.id: (n.name, n.text, n.data["tally"], records[n.id]) for n in entities}
        edges = {(e.src, e.dst): (e.data["label"], e.data["entries"])
                 for e in store.iter_edges("relation")}  # fmt: skip
        return nodes, edges

    clean = build([[0, 1, 2]])
    assert build([[0, 2], [1]]) == clean
    assert build([[2], [1], [0]]) == clean
    mara = clean[0][entity_node_id("mara vell")]
    assert mara[0] == "Mara Vell" and mara[1] == "Told in one.\nTold in two.\nTold in three."


def test_entity_graph_after_a_delete_equals_a_build_without_the_document():
    """The repair after a delete derives in chunk order too, as a fresh build does."""
    docs = [("d1", ["one"]), ("d2", ["two"]), ("d3", ["three"]), ("d4", ["four"])]

    def build(names: list[str]) -> GraphStore:
        store, ids = _store_with(*[d for d in docs if d[0] in names])
        EntityGraphBuilder(store).add(
            [
                Extraction(
                    ids[t], [Entity("Mara Vell", "person", f"Told in {t}.", 50)]
                ).normalised()
                for d, (t,) in docs
                if d in names
            ]
        )
        return store

    store = build(["d1", "d2", "d3", "d4"])
    EntityGraphBuilder(store).repair(store.delete_document("d2"))
    fresh = build(["d1", "d3", "d4"])
    key = entity_node_id("mara vell")
    got, want = store.get_nodes([key])[key], fresh.get_nodes([key])[key]
    assert got.text == want.text == "Told in one.\nTold in three.\nTold in four."
