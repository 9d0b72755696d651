"""How LightRAG and GraphRAG-local rank passages: the reference codes' Occurrence and FromRel.

The world is hand-made (no ``GraphIndex``, no extractor): four one-chunk documents,
four entities and three relation edges, written straight into a store:

====  ==========================================  ==================
doc   text                                        entities cited in
====  ==========================================  ==================
d1    "Pell keeps lighthouse logs."               Pell
d2    "Pell sails beside Rook."                   Pell, Rook
d3    "Quay lights lantern festival night."       Quay
d4    "Quay, Rook and Saw watch festival boats."  Quay, Rook, Saw
====  ==========================================  ==================

Relations: Pell–Rook (from d2), Quay–Rook (d4), Quay–Saw (d4). Neighbours: Pell {Rook},
Quay {Rook, Saw}. Vectors are the bag-of-words :class:`~doubles.WordEmbedder`: for the
question "lantern festival night", d3 shares three words, d4 one ("festival"), d1 and d2
none. Every expected list below is worked out by hand from these tables.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from worlds import store_of_texts, word_resources

from hygraph.errors import ConfigError
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import Edge, Node
from hygraph.operators import registry
from hygraph.operators.question import rule_keywords
from hygraph.operators.state import Scored, State
from hygraph.resources import CHUNK_COLLECTION
from hygraph.vectors import open_vector_index

PELL, QUAY, ROOK, SAW = (f"ent:{n}" for n in ("pell", "quay", "rook", "saw"))
TEXTS = {
    "d1": "Pell keeps lighthouse logs.",
    "d2": "Pell sails beside Rook.",
    "d3": "Quay lights lantern festival night.",
    "d4": "Quay, Rook and Saw watch festival boats.",
}
CITED = {PELL: ["d1", "d2"], QUAY: ["d3", "d4"], ROOK: ["d2", "d4"], SAW: ["d4"]}
RELATIONS = [(PELL, ROOK, "d2"), (QUAY, ROOK, "d4"), (QUAY, SAW, "d4")]
QUESTION = "lantern festival night"


@pytest.fixture
def world(tmp_path) -> SimpleNamespace:
    store, chunk = store_of_texts(tmp_path / "kg.sqlite", TEXTS)
    store.upsert_nodes(
        Node(eid, NodeKind.ENTITY, eid[4:].title(), "", {"type": "entity"},
             [chunk[d] for d in docs])
        for eid, docs in CITED.items()
    )  # fmt: skip
    store.upsert_edges(
        Edge(s, t, EdgeKind.RELATION, 1.0, {"label": "near", "entries": {chunk[d]: [["near"]]}},
             [chunk[d]])
        for s, t, d in RELATIONS
    )  # fmt: skip
    res = word_resources(store, open_vector_index(tmp_path / "qdrant"), tmp_path / "index",
                         dim=4096)  # fmt: skip
    ids = [chunk[d] for d in TEXTS]
    res.upsert_vectors(CHUNK_COLLECTION, ids, list(TEXTS.values()), [{"kind": "chunk"}] * 4)
    return SimpleNamespace(res=res, doc={c: d for d, c in chunk.items()})


def run(world: SimpleNamespace, name: str, state: State, **params: Any) -> list[str]:
    """Run operator ``name``; the documents of the chunks it ranked, in order."""
    registry.get_operator(name).fn(world.res, state, **params)
    return [world.doc[c] for c, _ in state.chunks]


def entities(*ids: str) -> State:
    return State(QUESTION, 4, nodes=[Scored(i, 1.0 / (n + 1)) for n, i in enumerate(ids)])


def relations(*pairs: tuple[str, str]) -> State:
    rels = [Scored(f"{s}|{t}", 1.0, data={"kind": EdgeKind.RELATION, "members": (s, t)})
            for s, t in pairs]  # fmt: skip
    return State(QUESTION, 4, relationships=rels)


# --------------------------------------------------------------------------- Occurrence


def test_entity_mode_takes_each_entitys_chunks_in_entity_order(world):
    # Pell first: d2 (its neighbour Rook is there too: 1) before d1 (0); then Quay's d4
    # (Rook and Saw: 2) before d3 (0). d4 has the most neighbours but Pell comes first.
    assert run(world, "chunk.occurrence", entities(PELL, QUAY), mode="entity") == [
        "d2", "d1", "d4", "d3"]  # fmt: skip
    assert run(world, "chunk.occurrence", entities(QUAY, PELL)) == ["d4", "d3", "d2", "d1"]
    # A chunk is ranked under the first entity citing it: Rook's d2 and d4 are taken.
    assert run(world, "chunk.occurrence", entities(QUAY, ROOK)) == ["d4", "d3", "d2"]
    # k cuts the list; the budget keeps at least the first chunk.
    assert run(world, "chunk.occurrence", entities(PELL, QUAY), k=3) == ["d2", "d1", "d4"]
    assert run(world, "chunk.occurrence", entities(PELL, QUAY), budget=1) == ["d2"]


def test_similarity_mode_ranks_the_entities_chunks_by_cosine(world):
    # Candidates d1 d2 (Pell) and d3 d4 (Quay); d3 shares three question words, d4 one.
    ranked = run(world, "chunk.occurrence", entities(PELL, QUAY), mode="similarity")
    assert ranked[:2] == ["d3", "d4"] and sorted(ranked[2:]) == ["d1", "d2"]
    # related x (entities with chunks) / 2 are kept: 1 x 2 / 2 = 1, 2 x 2 / 2 = 2.
    assert run(world, "chunk.occurrence", entities(PELL, QUAY), mode="similarity",
               related=1) == ["d3"]  # fmt: skip
    assert run(world, "chunk.occurrence", entities(PELL, QUAY), mode="similarity",
               related=2) == ["d3", "d4"]  # fmt: skip
    # Only the retrieved entities' chunks are candidates.
    assert run(world, "chunk.occurrence", entities(PELL), mode="similarity") != []
    assert set(run(world, "chunk.occurrence", entities(PELL), mode="similarity")) == {"d1", "d2"}


def test_paper_mode_is_kept_as_an_option(world):
    # Pell-Rook share d2; Quay-Rook and Quay-Saw share d4: d4 counts 2, d2 counts 1.
    state = relations((PELL, ROOK), (QUAY, ROOK), (QUAY, SAW))
    assert run(world, "chunk.occurrence", state, mode="paper") == ["d4", "d2"]
    with pytest.raises(ConfigError, match="occurrence mode"):
        run(world, "chunk.occurrence", state, mode="co-occurrence")


# --------------------------------------------------------------------------- FromRel


def test_from_rel_in_relation_order_or_by_similarity(world):
    state = relations((PELL, ROOK), (QUAY, SAW), (QUAY, ROOK))
    assert run(world, "chunk.from_rel", state) == ["d2", "d4"]  # relation order
    assert run(world, "chunk.from_rel", state, pick="similarity") == ["d4", "d2"]
    # 1 x 3 relations with chunks / 2 = 1 kept.
    assert run(world, "chunk.from_rel", state, pick="similarity", related=1) == ["d4"]
    with pytest.raises(ConfigError, match="from_rel pick"):
        run(world, "chunk.from_rel", state, pick="random")


# --------------------------------------------------------------------------- keywords


def test_rule_keywords_name_the_questions_entities_at_both_levels():
    low, high = rule_keywords("Who was the first president of the association which "
                              "published Journal of Psychotherapy Integration?")  # fmt: skip
    assert low == ["Journal of Psychotherapy Integration"]
    assert high == ["first president", "association", "published",
                    "Journal of Psychotherapy Integration"]  # fmt: skip
    # Question order, names and content words together; without names, as before.
    assert rule_keywords("Where was Renna Osk born?") == (["Renna Osk"], ["Renna Osk", "born"])
    assert rule_keywords("Where was Renna Osk born?", names=False) == (["Renna Osk"], ["born"])
    # No name found: nothing to add.
    assert rule_keywords("where was the treaty signed") == ([], ["treaty signed"])


def test_keywords_operator_puts_names_in_the_high_level(world):
    state = State("Where was Renna Osk born?", 4)
    registry.get_operator("question.keywords").fn(world.res, state, mode="offline", keep="high")
    assert state.keywords == ["Renna Osk", "born"]
    assert state.subgraph["keywords"]["source"] == "offline"
    registry.get_operator("question.keywords").fn(world.res, state, mode="offline", keep="high",
                                                  names=False)  # fmt: skip
    assert state.keywords == ["born"]


# --------------------------------------------------------------------------- configs


def test_lightrag_and_graphrag_local_default_to_the_frameworks_ranking():
    from hygraph.methods.graphrag import LocalConfig
    from hygraph.methods.lightrag import LightRAGConfig

    light, local = LightRAGConfig(), LocalConfig()
    assert (light.occurrence, local.occurrence) == ("entity", "entity")
    assert (light.entity_top_k, light.relation_top_k, local.entity_top_k) == (5, 5, 5)
    assert (light.hybrid_first, light.hybrid_order) == ("low", "concat")
    assert (light.relation_vdb_order, light.relation_chunks) == ("degree", "order")
    for mode in ("entity", "similarity", "paper"):
        LightRAGConfig(occurrence=mode)
        LocalConfig(occurrence=mode)
    with pytest.raises(ConfigError, match="relation_vdb_order must be one of"):
        LightRAGConfig(relation_vdb_order="random")
    with pytest.raises(ConfigError, match="relation_chunks must be one of"):
        LightRAGConfig(relation_chunks="random")


FINAL_CUTS = {("chunk.evidence", "k"), ("chunk.from_evidence", "k")}


def test_internal_depths_are_config_fields_not_the_querys_top_k():
    from hygraph.methods.base import get_method

    for name in ("lightrag-local", "lightrag-global", "lightrag-hybrid", "graphrag-local"):
        for step in get_method(name).recipe:
            for key, value in step.params.items():
                if value == "$top_k":  # only the passages that come back
                    assert (step.op, key) in FINAL_CUTS, (name, step)


@pytest.mark.parametrize("module", ["lightrag", "graphrag"])
def test_every_config_field_names_its_source(module):
    import importlib
    import inspect
    import re
    from dataclasses import fields, is_dataclass

    mod = importlib.import_module(f"hygraph.methods.{module}")
    tags = ("paper:", "code:", "framework:", "ours:", "library:")
    for cls in vars(mod).values():
        if not (inspect.isclass(cls) and is_dataclass(cls) and cls.__module__ == mod.__name__):
            continue
        source = inspect.getsource(cls)
        for f in fields(cls):
            line = re.search(rf"^    {f.name}: [^\n]*$", source, re.MULTILINE)
            if line is None:  # inherited (MapReduceOptions, MethodConfig)
                continue
            comment = line.group().partition("  # ")[2]
            assert comment.startswith(tags), f"{cls.__name__}.{f.name}: {comment!r}"
            assert re.search(r"\(.+\)", comment), f"{cls.__name__}.{f.name}: no reference"
