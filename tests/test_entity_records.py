"""Mention records in their own table, entity nodes as tallies.

A long document names a few entities in thousands of chunks. When each entity node
held one record per chunk, every batch read and rewrote all of them, and a 50 MB file
slowed down as it went (``benchmarks/long_document.py`` measures it). These tests pin
what replaced it: what a batch writes to a node does not grow with how often the
entity was seen before; a chunk merged again changes nothing; a chunk extracted again
with another record is counted once, as its new record; indexes written before move
their records over and then read and delete as fresh ones do.
"""

from __future__ import annotations

import json

from hygraph.extract import Entity, Extraction, Relation
from hygraph.graph.entity_graph import (
    RECORDS_META,
    RECORDS_VERSION,
    EntityGraphBuilder,
    derive_entity,
    entity_node_id,
    move_mentions_to_records,
    tally_of,
)
from hygraph.graph.records import ENTRIES_FROM, edge_owner
from hygraph.graph.store import Edge, GraphStore, Node
from hygraph.ingest import Chunk, Document

KEY = entity_node_id("harrowby")


def _store(n_docs: int, per_doc: int = 1) -> tuple[GraphStore, list[str]]:
    store = GraphStore(None)
    ids: list[str] = []
    for d in range(n_docs):
        texts = [f"doc {d} part {p}" for p in range(per_doc)]
        chunks = [
            Chunk(Chunk.make_id(f"d{d}", t), f"d{d}", i, t, 5, 0, len(t), 0, 5)
            for i, t in enumerate(texts)
        ]
        store.add_document(Document(f"d{d}", " ".join(texts)), chunks)
        ids += [c.id for c in chunks]
    return store, ids


def _mention(chunk_id: str, name: str = "Harrowby", etype: str = "place",
             description: str = "A port town.", score: float = 50.0) -> Extraction:  # fmt: skip
    return Extraction(chunk_id, [Entity(name, etype, description, score)]).normalised()


def _node_bytes(store: GraphStore) -> int:
    return len(json.dumps(store.get_nodes([KEY])[KEY].data))


def test_a_node_does_not_grow_with_the_chunks_that_name_it():
    """Fails on a node that keeps one record per chunk: there, 400 chunks made it 40x
    the size it had after 10."""
    store, ids = _store(400)
    builder = EntityGraphBuilder(store)
    builder.add([_mention(c) for c in ids[:10]])
    after_ten = _node_bytes(store)
    for start in range(10, 400, 30):
        builder.add([_mention(c) for c in ids[start : start + 30]])
    assert _node_bytes(store) <= after_ten + 16  # the counts gained digits, nothing more
    assert len(store.records_of([KEY])[KEY]) == 400
    node = store.get_nodes([KEY])[KEY]
    assert node.data["tally"]["names"]["Harrowby"][0] == 400
    assert set(node.sources) == set(ids)


def test_merging_the_same_chunk_again_changes_nothing():
    store, ids = _store(3)
    builder = EntityGraphBuilder(store)
    builder.add([_mention(c) for c in ids])
    before = store.get_nodes([KEY])[KEY]
    update = builder.plan([_mention(ids[1])])
    assert update.nodes == [] and update.records == []
    builder.write(update)
    assert store.get_nodes([KEY])[KEY] == before


def test_a_chunk_extracted_again_counts_once_as_its_new_record():
    store, ids = _store(3)
    builder = EntityGraphBuilder(store)
    builder.add([_mention(c, name="Harrowby") for c in ids])
    builder.add([_mention(ids[0], name="HARROWBY"), _mention(ids[1], name="HARROWBY")])
    node = store.get_nodes([KEY])[KEY]
    assert node.data["tally"]["names"] == {
        "HARROWBY": [2, 1, ids[0]],
        "Harrowby": [1, 3, ids[2]],
    }
    assert node.name == "HARROWBY"
    fresh, fresh_ids = _store(3)
    EntityGraphBuilder(fresh).add(
        [
            _mention(fresh_ids[0], name="HARROWBY"),
            _mention(fresh_ids[1], name="HARROWBY"),
            _mention(fresh_ids[2], name="Harrowby"),
        ]  # fmt: skip
    )
    assert fresh.get_nodes([KEY])[KEY].data["tally"] == node.data["tally"]


def test_the_tally_derives_what_the_records_say():
    """Most frequent name and specific type (ties to the first chunk), highest score,
    distinct descriptions in chunk order."""
    records = {
        "c3": ["Harrowby", "place", 40.0, "A port."],
        "c1": ["harrowby", "organization", 70.0, "A council."],
        "c2": ["Harrowby", "place", 20.0, "A port."],
        "c4": ["harrowby", "entity", 10.0, ""],
    }
    tally = tally_of(records, {"c1": 1, "c2": 2, "c3": 3, "c4": 4})
    # names 2:2 -> the first seen (c1) wins; types place 2, organization 1
    assert derive_entity(tally) == ("harrowby", "place", 70.0, "A council.\nA port.")


def test_records_go_with_a_deleted_document_and_the_entity_is_derived_again():
    store, ids = _store(3)
    builder = EntityGraphBuilder(store)
    builder.add([_mention(ids[0], description="First."), _mention(ids[1], description="Second."),
                 _mention(ids[2], description="Third.")])  # fmt: skip
    builder.repair(store.delete_document("d1"))
    node = store.get_nodes([KEY])[KEY]
    assert set(store.records_of([KEY])[KEY]) == {ids[0], ids[2]}
    assert node.text == "First.\nThird."
    assert node.data["tally"]["names"]["Harrowby"][0] == 2


def test_an_index_written_before_moves_its_records_once():
    """An entity node that still holds ``data["mentions"]`` (the former layout) has its
    records moved to the table and a tally made; a later merge and a delete then work as
    on an index built today."""
    store, ids = _store(3)
    legacy = {
        ids[0]: ["Harrowby", "place", 50.0, "First."],
        ids[1]: ["Harrowby", "place", 60.0, "Second."],
    }
    store.upsert_nodes(
        [
            Node(
                KEY,
                "entity",
                "Harrowby",
                "First.\nSecond.",
                {"mentions": legacy, "score": 60.0, "type": "place"},
                (ids[0], ids[1]),
            )
        ]  # fmt: skip
    )
    assert move_mentions_to_records(store) == 1
    assert store.get_meta(RECORDS_META) == RECORDS_VERSION
    assert move_mentions_to_records(store) == 0  # once
    node = store.get_nodes([KEY])[KEY]
    assert "mentions" not in node.data and store.records_of([KEY])[KEY] == legacy
    builder = EntityGraphBuilder(store)
    builder.add([_mention(ids[2], description="Third.")])
    builder.repair(store.delete_document("d0"))
    node = store.get_nodes([KEY])[KEY]
    assert node.text == "Second.\nThird." and node.data["score"] == 60.0


def test_a_delete_before_the_move_leaves_out_the_deleted_chunks():
    store, ids = _store(2)
    legacy = {
        ids[0]: ["Harrowby", "place", 90.0, "Gone."],
        ids[1]: ["Harrowby", "place", 10.0, "Kept."],
    }
    store.upsert_nodes([Node(KEY, "entity", "Harrowby", "Gone.\nKept.", {"mentions": legacy},
                             (ids[0], ids[1]))])  # fmt: skip
    EntityGraphBuilder(store).repair(store.delete_document("d0"))
    node = store.get_nodes([KEY])[KEY]
    assert node.text == "Kept." and node.data["score"] == 10.0
    assert store.records_of([KEY])[KEY] == {ids[1]: ["Harrowby", "place", 10.0, "Kept."]}


PAIR = (entity_node_id("harrowby"), entity_node_id("dunmere"), "relation")


def _statement(chunk_id: str, label: str = "trades with", weight: float = 1.0) -> Extraction:
    return Extraction(
        chunk_id, relations=[Relation("Harrowby", "Dunmere", label, f"{label} ({chunk_id})",
                                      weight)]
    ).normalised()  # fmt: skip


def _edge_bytes(store: GraphStore) -> int:
    row = store._query(
        "SELECT length(data) FROM edges WHERE src = ? AND dst = ? AND kind = ?", PAIR
    )
    return int(row[0][0])


def test_a_relation_edge_does_not_grow_with_the_chunks_that_state_it():
    """Fails on an edge that stores every chunk's entries inline: each batch that stated
    the pair rewrote all earlier statements. Readers still find them in
    ``data["entries"]``, in chunk order."""
    store, ids = _store(200)
    builder = EntityGraphBuilder(store)
    builder.add([_statement(c) for c in ids[:10]])
    after_ten = _edge_bytes(store)
    for start in range(10, 200, 40):
        builder.add([_statement(c) for c in ids[start : start + 40]][::-1])
    assert _edge_bytes(store) <= after_ten + 16
    edge = store.get_edges([PAIR])[PAIR]
    assert list(edge.data["entries"]) == ids  # chunk order, whatever the merge order
    assert edge.weight == 200.0 and edge.data["label"] == "trades with"
    assert store.edges_of(PAIR[0], "relation")[0].data["entries"] == edge.data["entries"]
    assert next(store.iter_edges("relation")).data["entries"] == edge.data["entries"]


def test_a_relation_label_follows_the_records_left_after_a_delete():
    store, ids = _store(3)
    builder = EntityGraphBuilder(store)
    builder.add([_statement(ids[0], "met"), _statement(ids[1], "married", 2.0),
                 _statement(ids[2], "married", 3.0)])  # fmt: skip
    assert store.get_edges([PAIR])[PAIR].data["label"] == "married"
    builder.repair(store.delete_document("d2"))
    builder.repair(store.delete_document("d1"))
    edge = store.get_edges([PAIR])[PAIR]
    assert edge.data["label"] == "met" and edge.weight == 1.0
    assert list(edge.data["entries"]) == [ids[0]]
    assert set(store.records_of([edge_owner(*PAIR)])[edge_owner(*PAIR)]) == {ids[0]}


def test_an_edge_written_with_inline_entries_moves_them_once():
    store, ids = _store(2)
    entries = {ids[1]: [["met", "They met.", 1.0]], ids[0]: [["married", "Wed.", 2.0]]}
    store.upsert_edges([Edge(*PAIR, 3.0, {"label": "married", "entries": entries},
                             (ids[0], ids[1]))])  # fmt: skip
    assert move_mentions_to_records(store) == 1
    edge = store.get_edges([PAIR])[PAIR]
    assert edge.data[ENTRIES_FROM] == "records" and edge.weight == 3.0
    assert edge.data["entries"] == {ids[0]: entries[ids[0]], ids[1]: entries[ids[1]]}
    stored = store._query("SELECT data FROM edges")[0][0]
    assert "They met." not in stored  # the entries live in the records table only
    store.delete_edges([PAIR])
    assert store.records_of([edge_owner(*PAIR)]) == {}


def test_deleting_a_node_takes_the_records_of_its_edges():
    store, ids = _store(1)
    EntityGraphBuilder(store).add([_statement(ids[0])])
    assert store.records_of([edge_owner(*PAIR)])
    store.delete_nodes([PAIR[0]])
    assert store.records_of([edge_owner(*PAIR)]) == {}
