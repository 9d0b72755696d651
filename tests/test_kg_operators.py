"""The knowledge-graph operators and layers of the 002 framework, on a hand-made graph.

The world: three one-chunk documents and five entities joined by five relation edges,
written straight into a store (no ``GraphIndex``, no extractor):

=========  ===============  ======  ====================================  ========
relation   label            weight  description(s)                        chunks
=========  ===============  ======  ====================================  ========
Ada→Bell   founded          2.0     "Ada founded Bell."                   d1
Bell→Cobb  located in       2.0     "Bell stands in Cobb." / "... is ..." d1, d2
Dara→Bell  works at         1.0     "Dara works at Bell."                 d2
Eve→Dara   met              1.0     "Eve met Dara."                       d3
Dara→Cobb  visited          0.5     "Dara visited Cobb."                  d3
=========  ===============  ======  ====================================  ========

Entity mentions (provenance): Ada d1; Bell d1 d2; Cobb d1 d2 d3; Dara d2 d3; Eve d3.
Relation degrees (distinct neighbours): Ada 1, Bell 3, Cobb 2, Dara 3, Eve 1, so the
edge degrees are Ada|Bell 4, Bell|Cobb 5, Dara|Bell 6, Eve|Dara 4, Dara|Cobb 5. Every
expected value below is worked out by hand from these tables. Vectors come from the
bag-of-words :class:`~doubles.WordEmbedder`; the LLM is the scripted double
:class:`~doubles.ScriptedLLM` (well-formed and malformed replies).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from doubles import ScriptedLLM, WordEmbedder
from operator_coverage import covers
from worlds import word_resources

from hygraph.errors import ConfigError
from hygraph.extract.phrases import content_phrases, question_keywords, relation_keywords
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import DeleteResult, Edge, GraphStore, Node
from hygraph.ingest import Chunker, Document
from hygraph.layers.rich_kg import (
    RICH_RELATION_COLLECTION,
    RelationKeywords,
    RichRelationVectors,
    rich_relation_text,
)
from hygraph.layers.tfidf import TfidfLayer
from hygraph.operators import registry
from hygraph.operators.state import Scored, State
from hygraph.prompts.lightrag import (
    parse_query_keywords,
    parse_relation_keywords,
    query_keywords_messages,
)
from hygraph.prompts.replies import ParseError
from hygraph.resources import Resources
from hygraph.retrieval.evidence import Evidence
from hygraph.vectors import open_vector_index

A, B, C, D, E = (f"ent:{n}" for n in ("ada", "bell", "cobb", "dara", "eve"))
NAMES = {A: "Ada", B: "Bell", C: "Cobb", D: "Dara", E: "Eve"}
MENTIONS = {A: ["d1"], B: ["d1", "d2"], C: ["d1", "d2", "d3"], D: ["d2", "d3"], E: ["d3"]}
#: (source, target, label, weight, {document: [descriptions]})
RELATIONS = [
    (A, B, "founded", 2.0, {"d1": ["Ada founded Bell."]}),
    (B, C, "located in", 2.0, {"d1": ["Bell stands in Cobb."], "d2": ["Bell is in Cobb."]}),
    (D, B, "works at", 1.0, {"d2": ["Dara works at Bell."]}),
    (E, D, "met", 1.0, {"d3": ["Eve met Dara."]}),
    (D, C, "visited", 0.5, {"d3": ["Dara visited Cobb."]}),
]
TEXTS = {
    "d1": "Ada founded Bell in Cobb.",
    "d2": "Bell is in Cobb. Dara works at Bell.",
    "d3": "Eve met Dara in Cobb.",
}


def op(name: str, res: Resources, state: State, **params: Any) -> None:
    """Run the registered operator ``name`` on ``state``."""
    registry.get_operator(name).fn(res, state, **params)


def make_resources(
    store: GraphStore, vectors: Any, path: Path, *, llm: Any = None, llm_in_retrieval=True
) -> Resources:
    return word_resources(store, vectors, path, llm=llm, llm_in_retrieval=llm_in_retrieval)


def relation_edges(chunk: dict[str, str]) -> list[Edge]:
    """The relation edges as the entity graph stores them (per-chunk entries)."""
    return [
        Edge(s, t, EdgeKind.RELATION, weight,
             {"label": label, "entries": {chunk[d]: [[label, text, 1.0] for text in texts]
                                          for d, texts in entries.items()}},
             [chunk[d] for d in entries])
        for s, t, label, weight, entries in RELATIONS
    ]  # fmt: skip


@pytest.fixture
def kg(tmp_path, monkeypatch) -> SimpleNamespace:
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    store = GraphStore(tmp_path / "kg.sqlite")
    chunker = Chunker(1200, 100)
    chunk: dict[str, str] = {}
    for doc_id, text in TEXTS.items():
        doc = Document(doc_id, text)
        pieces = chunker(doc)
        store.add_document(doc, pieces)
        chunk[doc_id] = pieces[0].id
    store.upsert_nodes(
        Node(eid, NodeKind.ENTITY, NAMES[eid], f"{NAMES[eid]} text", {"type": "entity"},
             [chunk[d] for d in docs])
        for eid, docs in MENTIONS.items()
    )  # fmt: skip
    store.upsert_edges(relation_edges(chunk))
    vectors = open_vector_index(tmp_path / "qdrant")
    res = make_resources(store, vectors, tmp_path / "index")
    return SimpleNamespace(res=res, store=store, vectors=vectors, path=tmp_path, **chunk)


def state_with(question: str = "q", top_k: int = 4, **slots: Any) -> State:
    state = State(question, top_k)
    for name, value in slots.items():
        setattr(state, name, value)
    return state


def ids(items: list[Scored]) -> list[str]:
    return [i.id for i in items]


# --------------------------------------------------------------------------- node operators


@covers("node.relnode")
def test_relnode_takes_relationship_ends_in_order(kg):
    rels = [Scored(f"{D}|{B}", 3.0, data={"members": (D, B)}),
            Scored(f"{B}|{C}", 2.0, data={"members": (B, C)}),
            Scored(f"{A}|{B}", 1.0, data={"members": (A, B)})]  # fmt: skip
    state = state_with(relationships=rels)
    op("node.relnode", kg.res, state)
    assert ids(state.nodes) == [D, B, C, A]
    assert [n.value for n in state.nodes] == [3.0, 3.0, 2.0, 1.0]  # first relationship's value
    assert [n.data["degree"] for n in state.nodes] == [3, 3, 2, 1]
    op("node.relnode", kg.res, state, k=2)
    assert ids(state.nodes) == [D, B]


@covers("node.onehop")
def test_onehop_scores_neighbours_by_the_seeds_reaching_them(kg):
    state = state_with(nodes=[Scored(A, 1.0), Scored(C, 1.0)])
    op("node.onehop", kg.res, state)
    # Ada reaches Bell; Cobb reaches Bell and Dara (either direction): Bell 2, Dara 1.
    assert ids(state.nodes) == [A, C, B, D]
    assert [n.value for n in state.nodes[2:]] == [2.0, 1.0]
    state = state_with(nodes=[Scored(E, 1.0)])
    op("node.onehop", kg.res, state, keep_seeds=False)
    assert ids(state.nodes) == [D]
    state = state_with(nodes=[Scored(C, 1.0)])
    op("node.onehop", kg.res, state, k=1, keep_seeds=False)
    assert ids(state.nodes) == [B]  # Bell and Dara tie (1.0, degree 3): by id


@covers("node.tfidf")
def test_tfidf_layer_ranks_persists_without_pickle_and_follows_the_chunks(kg):
    layer = TfidfLayer()
    kg.res.layers["tfidf"] = layer
    state = state_with("Did Eve meet Dara?")
    op("node.tfidf", kg.res, state, k=5)
    # "eve" and "dara" are in d3; "dara" alone in d2; d1 shares no term.
    assert ids(state.nodes) == [kg.d3, kg.d2]
    assert state.nodes[0].value > state.nodes[1].value > 0
    assert state.nodes[0].data == {"kind": "chunk"}
    folder = kg.res.path / "tfidf"
    assert sorted(p.name for p in folder.iterdir()) == ["idf.npy", "matrix.npz", "meta.json"]
    np.load(folder / "idf.npy", allow_pickle=False)
    with np.load(folder / "matrix.npz", allow_pickle=False) as saved:
        assert set(saved.files) >= {"data", "indices", "indptr"}
    # The same cosine scikit-learn gives: the query row against the fitted matrix.
    from sklearn.feature_extraction.text import TfidfVectorizer

    fitted = TfidfVectorizer(stop_words="english").fit([kg.res.chunk_texts([c])[c] for c in
                                                        (kg.d1, kg.d2, kg.d3)])  # fmt: skip
    expected = fitted.transform(["Did Eve meet Dara?"]) @ fitted.transform(
        [kg.res.chunk_texts([kg.d3])[kg.d3]]).T  # fmt: skip
    assert state.nodes[0].value == pytest.approx(float(expected.toarray()[0, 0]), rel=1e-5)
    # A fresh layer loads the saved matrix instead of building it again.
    fresh = TfidfLayer()
    fresh._build = None  # type: ignore[assignment]
    kg.res.layers["tfidf"] = fresh
    op("node.tfidf", kg.res, state, k=1, into="chunks")
    assert state.chunks[0][0] == kg.d3
    # A new chunk changes the chunk set: the next use rebuilds; a delete likewise.
    kg.res.layers["tfidf"] = layer
    doc = Document("d4", "Eve and Eve and Eve.")
    pieces = Chunker(1200, 100)(doc)
    kg.store.add_document(doc, pieces)
    op("node.tfidf", kg.res, state, k=1, into="found")
    assert state.rankings["found"] == [pieces[0].id]
    removed = kg.store.delete_document("d4")
    layer.delete(kg.res, removed)
    op("node.tfidf", kg.res, state, k=1, into="found")
    assert state.rankings["found"] == [kg.d3]
    layer.reset(kg.res)
    assert not folder.exists()


# --------------------------------------------------------------------------- relationships


def test_relation_keywords_offline_by_rule(kg):
    layer = RelationKeywords()
    keys = [(s, t, EdgeKind.RELATION) for s, t, *_ in RELATIONS]
    assert layer.annotate(kg.res, keys) == 5
    edges = kg.store.get_edges(keys)
    got = {(k[0], k[1]): e.data["keywords"] for k, e in edges.items()}
    assert got == {(A, B): ["founded"], (B, C): ["located", "stands"], (D, B): ["works"],
                   (E, D): ["met"], (D, C): ["visited"]}  # fmt: skip
    assert {e.data["keywords_by"] for e in edges.values()} == {"offline"}
    # Unchanged relations are not annotated again; a rewritten one (the entity graph
    # replaces an edge's data when a chunk adds to it) is.
    assert layer.annotate(kg.res, keys) == 0
    kg.store.upsert_edges([relation_edges({"d1": kg.d1, "d2": kg.d2, "d3": kg.d3})[0]])
    assert "keywords" not in kg.store.get_edges([keys[0]])[keys[0]].data
    assert layer.annotate(kg.res, keys) == 1
    # A delete re-annotates the relations at touched entities; reset strips them all.
    kg.store.upsert_edges([relation_edges({"d1": kg.d1, "d2": kg.d2, "d3": kg.d3})[3]])
    layer.delete(kg.res, DeleteResult("x", [], [], [E]))
    assert kg.store.get_edges([keys[3]])[keys[3]].data["keywords"] == ["met"]
    layer.reset(kg.res)
    assert all("keywords" not in e.data for e in kg.store.get_edges(keys).values())


def test_relation_keywords_by_llm_with_a_malformed_batch_falling_back(kg, caplog):
    replies = {
        # One batch per call; the second relation of this batch is left out by the LLM.
        "1. Ada | founded | Bell": json.dumps(
            {
                "relations": [
                    {"id": 1, "keywords": ["company founding", "origin"]},
                    {"id": 3, "keywords": "employment, workplace"},
                ]
            }
        ),
    }
    llm = ScriptedLLM(routes=replies)
    res = make_resources(kg.store, kg.vectors, kg.path / "llm", llm=llm)
    layer = RelationKeywords({"relation_keywords": "llm"})
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        assert layer.annotate(res, [(A, B, EdgeKind.RELATION), (B, C, EdgeKind.RELATION),
                                    (D, B, EdgeKind.RELATION)]) == 3  # fmt: skip
    edges = kg.store.get_edges([(A, B, EdgeKind.RELATION), (B, C, EdgeKind.RELATION),
                                (D, B, EdgeKind.RELATION)])  # fmt: skip
    assert edges[(A, B, EdgeKind.RELATION)].data["keywords"] == ["company founding", "origin"]
    assert edges[(A, B, EdgeKind.RELATION)].data["keywords_by"] == "llm"
    assert edges[(D, B, EdgeKind.RELATION)].data["keywords"] == ["employment", "workplace"]
    # The relation the reply skipped keeps the rules' keywords.
    assert edges[(B, C, EdgeKind.RELATION)].data["keywords"] == ["located", "stands"]
    assert edges[(B, C, EdgeKind.RELATION)].data["keywords_by"] == "offline"
    prompt = llm.calls[0][0][-1]["content"]
    # Descriptions in the order the edge keeps its per-chunk entries (by chunk id).
    said = " ".join(located_descriptions(kg))
    assert f"2. Bell | located in | Cobb -- {said}" in prompt
    # A reply with nothing usable: the whole batch falls back to the rules, with a warning.
    bad = make_resources(kg.store, kg.vectors, kg.path / "bad",
                         llm=ScriptedLLM(["I would rather not."]))  # fmt: skip
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        assert layer.annotate(bad, [(E, D, EdgeKind.RELATION)]) == 1
    assert "falls back to the rules" in caplog.text
    assert kg.store.get_edges([(E, D, EdgeKind.RELATION)])[(E, D, EdgeKind.RELATION)].data[
        "keywords_by"] == "offline"  # fmt: skip
    with pytest.raises(ConfigError, match="needs an LLM"):
        layer.annotate(kg.res, [(D, C, EdgeKind.RELATION)])
    with pytest.raises(ConfigError, match="relation_keywords must be one of"):
        RelationKeywords({"relation_keywords": "maybe"})


def located_descriptions(kg) -> list[str]:
    """Bell→Cobb's two descriptions in the order its entries are stored (chunk id order)."""
    by_chunk = {kg.d1: "Bell stands in Cobb.", kg.d2: "Bell is in Cobb."}
    return [by_chunk[c] for c in sorted(by_chunk)]


def rich_world(kg) -> None:
    """Keywords and rich relation vectors for every relation of the world."""
    keys = [(s, t, EdgeKind.RELATION) for s, t, *_ in RELATIONS]
    RelationKeywords().annotate(kg.res, keys)
    RichRelationVectors().embed(kg.res, keys)


def test_rich_relation_vectors_put_the_keywords_first(kg):
    rich_world(kg)
    key = (B, C, EdgeKind.RELATION)
    edge = kg.store.get_edges([key])[key]
    said = "; ".join(located_descriptions(kg))
    assert (
        rich_relation_text(edge, "Bell", "Cobb") == f"located, stands\nBell located in Cobb: {said}"
    )
    assert kg.vectors.count(RICH_RELATION_COLLECTION) == 5
    assert not kg.vectors.has_collection("relations")  # the plain index is another layer's


@covers("relationship.kg_onehop")
def test_kg_onehop_orders_by_edge_degree_then_weight_within_the_budget(kg):
    state = state_with(nodes=[Scored(B, 1.0)])
    op("relationship.kg_onehop", kg.res, state, budget=0)
    # Edges at Bell: Dara|Bell (degree 6), Bell|Cobb (5, weight 2), Ada|Bell (4).
    assert ids(state.relationships) == [f"{D}|{B}", f"{B}|{C}", f"{A}|{B}"]
    assert [r.data["degree"] for r in state.relationships] == [6, 5, 4]
    assert state.relationships[0].data["text"] == "Dara works at Bell: Dara works at Bell."
    # The budget keeps relationships while their texts fit (LightRAG's truncation).
    from hygraph.ingest.tokenizer import default_tokenizer

    tok = default_tokenizer()
    two = sum(tok.count(r.data["text"]) for r in state.relationships[:2])
    op("relationship.kg_onehop", kg.res, state, budget=two)
    assert len(state.relationships) == 2
    op("relationship.kg_onehop", kg.res, state, budget=two - 1)
    assert len(state.relationships) == 1
    # "retrieval" order: by the summed value of the retrieved ends, then as reached.
    state = state_with(nodes=[Scored(B, 1.0), Scored(D, 0.5)])
    op("relationship.kg_onehop", kg.res, state, order="retrieval", budget=0)
    assert ids(state.relationships) == [f"{D}|{B}", f"{B}|{C}", f"{A}|{B}", f"{D}|{C}",
                                        f"{E}|{D}"]  # fmt: skip
    assert [r.value for r in state.relationships] == [1.5, 1.0, 1.0, 0.5, 0.5]
    op("relationship.kg_onehop", kg.res, state, k=2, budget=0)
    assert ids(state.relationships) == [f"{D}|{B}", f"{B}|{C}"]
    with pytest.raises(ConfigError, match="order must be one of"):
        op("relationship.kg_onehop", kg.res, state, order="random")


@covers("relationship.kg_vdb")
def test_kg_vdb_searches_the_keyword_text_and_reorders_by_degree(kg):
    rich_world(kg)
    embedder = WordEmbedder()
    texts = {}
    for s, t, *_ in RELATIONS:
        key = (s, t, EdgeKind.RELATION)
        texts[f"{s}|{t}"] = rich_relation_text(kg.store.get_edges([key])[key], NAMES[s], NAMES[t])
    query = embedder.embed_query("founded")
    cosines = {i: float(np.dot(query, embedder.embed([t])[0])) for i, t in texts.items()}
    best = max(cosines, key=cosines.get)
    assert best == f"{A}|{B}"  # the only relation about a founding
    state = state_with("Who founded it?")
    state.subgraph["keywords"] = {"low": [], "high": ["founded"]}
    op("relationship.kg_vdb", kg.res, state, k=1, budget=0)
    assert ids(state.relationships) == [best]
    assert state.relationships[0].cosine == pytest.approx(cosines[best], abs=1e-5)
    # The three relations naming Bell, re-ordered by (edge degree, weight) as LightRAG's
    # code does: Dara|Bell 6, Bell|Cobb 5, Ada|Bell 4.
    query = embedder.embed_query("Bell")
    cosines = {i: float(np.dot(query, embedder.embed([t])[0])) for i, t in texts.items()}
    top3 = sorted(cosines, key=lambda i: -cosines[i])[:3]
    assert set(top3) == {f"{A}|{B}", f"{B}|{C}", f"{D}|{B}"}
    assert min(cosines[i] for i in top3) > max(v for i, v in cosines.items() if i not in top3)
    state.subgraph["keywords"] = {"low": [], "high": ["Bell"]}
    degree = {f"{A}|{B}": (4, 2.0), f"{B}|{C}": (5, 2.0), f"{D}|{B}": (6, 1.0),
              f"{E}|{D}": (4, 1.0), f"{D}|{C}": (5, 0.5)}  # fmt: skip
    op("relationship.kg_vdb", kg.res, state, k=3, budget=0)
    assert ids(state.relationships) == [f"{D}|{B}", f"{B}|{C}", f"{A}|{B}"]
    assert ids(state.relationships) == sorted(top3, key=lambda i: (-degree[i][0], -degree[i][1]))
    op("relationship.kg_vdb", kg.res, state, k=3, budget=0, order="retrieval")
    assert ids(state.relationships) == top3
    # An empty level searches with the question; "keywords" reads state.keywords.
    state.subgraph["keywords"] = {"low": [], "high": []}
    state.keywords = ["visited"]
    op("relationship.kg_vdb", kg.res, state, k=1, budget=0, query="keywords")
    assert ids(state.relationships) == [f"{D}|{C}"]
    with pytest.raises(ConfigError, match="query must be"):
        op("relationship.kg_vdb", kg.res, state, query="middle")


@covers("relationship.kg_evidence")
def test_kg_evidence_shows_descriptions_keywords_and_sources(kg):
    rich_world(kg)
    state = state_with(nodes=[Scored(E, 1.0)])
    op("relationship.kg_onehop", kg.res, state, budget=0)
    # A relationship from another operator (no text yet) is described too.
    state.relationships.append(
        Scored(f"{A}|{B}", 0.3, data={"kind": EdgeKind.RELATION, "members": (A, B)})
    )
    state.relationships.append(Scored("fact:x", 0.2, data={"kind": "fact", "members": (A,)}))
    op("relationship.kg_evidence", kg.res, state)
    items = state.evidence["relationships"]
    assert [e.text for e in items] == [
        "Eve met Dara: Eve met Dara. (keywords: met)",
        "Ada founded Bell: Ada founded Bell. (keywords: founded)",
    ]
    assert items[0].source_ids == (kg.d3,) and items[1].source_ids == (kg.d1,)
    assert items[1].score == 0.3 and items[0].metadata["weight"] == 1.0


# --------------------------------------------------------------------------- chunks


def onehop_of_bell(kg) -> State:
    state = state_with(nodes=[Scored(B, 1.0)])
    op("relationship.kg_onehop", kg.res, state, budget=0)
    return state  # Dara|Bell, Bell|Cobb, Ada|Bell


@covers("chunk.occurrence")
def test_occurrence_paper_counts_relationships_whose_ends_share_a_chunk(kg):
    state = onehop_of_bell(kg)
    op("chunk.occurrence", kg.res, state, mode="paper")
    # Dara|Bell: both in d2. Bell|Cobb: d1, d2. Ada|Bell: d1. d1 and d2 score 2; d2
    # first (reached by the earlier relationship); d3 holds no pair and is not ranked.
    assert state.chunks == [(kg.d2, 2.0), (kg.d1, 2.0)]
    op("chunk.occurrence", kg.res, state, mode="paper", k=1)
    assert state.chunks == [(kg.d2, 2.0)]
    from hygraph.ingest.tokenizer import default_tokenizer

    tokens = {
        c: default_tokenizer().count(t) for c, t in kg.res.chunk_texts([kg.d1, kg.d2]).items()
    }
    op("chunk.occurrence", kg.res, state, mode="paper", budget=tokens[kg.d2] + tokens[kg.d1])
    assert [c for c, _ in state.chunks] == [kg.d2, kg.d1]
    op("chunk.occurrence", kg.res, state, mode="paper",
       budget=tokens[kg.d2] + tokens[kg.d1] - 1)  # fmt: skip
    assert [c for c, _ in state.chunks] == [kg.d2]
    op("chunk.occurrence", kg.res, state, mode="paper", budget=1)
    assert [c for c, _ in state.chunks] == [kg.d2]  # the first chunk is always kept
    with pytest.raises(ConfigError, match="occurrence mode"):
        op("chunk.occurrence", kg.res, state, mode="psychic")


def test_occurrence_entity_mode_follows_the_reference_code(kg):
    # Cobb's chunks d1 d2 d3; its neighbours Bell (d1 d2) and Dara (d2 d3): d2 holds both.
    state = state_with(nodes=[Scored(C, 1.0)])
    op("chunk.occurrence", kg.res, state, mode="entity")
    assert [c for c, _ in state.chunks] == [kg.d2, kg.d1, kg.d3]
    # Entity order first: Ada's d1, then Dara's d2 (its neighbours Bell, Cobb: 2) and d3
    # (Eve, Cobb: 2), tie by index order.
    state = state_with(nodes=[Scored(A, 1.0), Scored(D, 0.5)])
    op("chunk.occurrence", kg.res, state, mode="entity", into="occ")
    assert state.rankings["occ"] == [kg.d1, kg.d2, kg.d3]


@covers("chunk.from_rel")
def test_from_rel_unions_source_chunks_in_relationship_order(kg):
    state = onehop_of_bell(kg)
    op("chunk.from_rel", kg.res, state)
    # Dara|Bell from d2; Bell|Cobb from d1, d2; Ada|Bell from d1.
    # Each chunk scores the value of the first relationship citing it (1.0: Bell's value).
    assert state.chunks == [(kg.d2, 1.0), (kg.d1, 1.0)]
    # Relationships without carried sources are looked up (relation edges and n-ary facts).
    kg.store.upsert_nodes([Node("fact:f", NodeKind.FACT, None, "Eve met Dara.", {}, [kg.d3])])
    state = state_with(
        relationships=[
            Scored("fact:f", 1.0, data={"kind": "fact", "members": (E, D)}),
            Scored(f"{A}|{B}", 0.5, data={"kind": EdgeKind.RELATION, "members": (A, B)}),
        ]
    )
    op("chunk.from_rel", kg.res, state, k=5)
    assert state.chunks == [(kg.d3, 1.0), (kg.d1, 0.5)]
    op("chunk.from_rel", kg.res, state, k=1, into="rel")
    assert state.rankings["rel"] == [kg.d3]


# --------------------------------------------------------------------------- question


QUESTION = "Where did the founder of Bell meet Eve?"


@covers("question.keywords")
def test_question_keywords_offline_rules(kg):
    state = state_with(QUESTION)
    op("question.keywords", kg.res, state, mode="offline")
    # High-level: the content phrases and the names, in question order.
    assert state.subgraph["keywords"] == {
        "low": ["Bell", "Eve"], "high": ["founder", "Bell", "meet", "Eve"],
        "source": "offline"}  # fmt: skip
    assert state.keywords == ["Bell", "Eve"]
    op("question.keywords", kg.res, state, mode="offline", keep="high")
    assert state.keywords == ["founder", "Bell", "meet", "Eve"]
    op("question.keywords", kg.res, state, mode="offline", keep="high", names=False)
    assert state.keywords == ["founder", "meet"]
    op("question.keywords", kg.res, state, mode="auto", keep="both")  # no LLM: the rules
    assert state.keywords == ["Bell", "Eve", "founder", "meet"]
    with pytest.raises(ConfigError, match="mode must be one of"):
        op("question.keywords", kg.res, state, mode="psychic")
    with pytest.raises(ConfigError, match="keep must be one of"):
        op("question.keywords", kg.res, state, keep="middle")
    with pytest.raises(ConfigError, match="needs an LLM"):
        op("question.keywords", kg.res, state, mode="llm")


@pytest.mark.parametrize(
    ("reply", "low", "high", "source"),
    [
        ('{"high_level_keywords": ["founding"], "low_level_keywords": ["Bell", "Eve"]}',
         ["Bell", "Eve"], ["founding"], "llm"),
        ('Here you go:\n```json\n{"Low-level keywords": "Bell, Eve", "High level": []}\n```',
         ["Bell", "Eve"], [], "llm"),
        ("I cannot help with that.", ["Bell", "Eve"], ["founder", "Bell", "meet", "Eve"],
         "offline"),
        ('{"high_level_keywords": [], "low_level_keywords": []}',
         ["Bell", "Eve"], ["founder", "Bell", "meet", "Eve"], "offline"),
        ('{"keywords": ["Bell"]}', ["Bell", "Eve"], ["founder", "Bell", "meet", "Eve"],
         "offline"),
    ],
)  # fmt: skip
def test_question_keywords_from_the_llm_good_and_malformed_replies(
    kg, caplog, reply, low, high, source
):
    llm = ScriptedLLM([reply])
    res = make_resources(kg.store, kg.vectors, kg.path / "q", llm=llm)
    state = state_with(QUESTION)
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        op("question.keywords", res, state, keep="both")
    assert state.subgraph["keywords"] == {"low": low, "high": high, "source": source}
    assert state.keywords == list(dict.fromkeys([*low, *high]))
    assert len(llm.calls) == 1 and QUESTION in llm.calls[0][0][-1]["content"]
    assert ("using the offline rules" in caplog.text) is (source == "offline")


def test_question_keywords_need_retrieval_llm_in_auto_mode(kg):
    llm = ScriptedLLM([])
    res = make_resources(kg.store, kg.vectors, kg.path / "n", llm=llm, llm_in_retrieval=False)
    state = state_with(QUESTION)
    op("question.keywords", res, state)
    assert state.subgraph["keywords"]["source"] == "offline" and llm.calls == []


def test_keyword_prompt_and_parsers():
    messages = query_keywords_messages("Who built the Old Ost Bridge?")
    assert messages[0]["role"] == "system" and messages[-1]["content"].endswith("Bridge?")
    assert parse_query_keywords('{"low_level_keywords": ["X"]}') == (["X"], [])
    with pytest.raises(ParseError):
        parse_query_keywords("no json here")
    assert parse_relation_keywords('{"1": ["a", "a"], "9": ["out of range"]}', 2) == {1: ["a"]}
    assert parse_relation_keywords('[{"id": "2", "keyword": "b"}]', 2) == {2: ["b"]}
    with pytest.raises(ParseError):
        parse_relation_keywords('{"relations": [{"id": 1, "keywords": []}]}', 1)


def test_phrase_rules():
    assert content_phrases("the first president of the association, which published it") == [
        "first president", "association", "published"]  # fmt: skip
    assert question_keywords("When was the institute that owned The Collegian founded?") == (
        ["The Collegian"], ["institute", "owned", "founded"])  # fmt: skip
    assert relation_keywords(["is a"], ["Ada is a painter from Bell."], ["Ada", "Bell"], 5) == [
        "is a", "painter"]  # fmt: skip
    assert relation_keywords(["founded"], [], [], 0) == []


# --------------------------------------------------------------------------- merge


@covers("merge.union")
def test_union_of_evidence_lists_concat_and_interleave(kg):
    def ev(kind: str, ident: str) -> Evidence:
        return Evidence(kind, ident.upper(), 1.0, (), id=ident)

    state = state_with()
    state.evidence["high"] = [ev("chunk", "a"), ev("chunk", "b"), ev("chunk", "c")]
    state.evidence["low"] = [ev("chunk", "b"), ev("chunk", "d"), ev("entity", "a")]
    op("merge.union", kg.res, state, lists="high+low", into="all")
    assert [(e.kind, e.id) for e in state.evidence["all"]] == [
        ("chunk", "a"),
        ("chunk", "b"),
        ("chunk", "c"),
        ("chunk", "d"),
        ("entity", "a"),
    ]
    op("merge.union", kg.res, state, lists=["high", "low", "missing"], into="all",
       mode="interleave")  # fmt: skip
    assert [e.id for e in state.evidence["all"]] == ["a", "b", "d", "c", "a"]
    with pytest.raises(ConfigError, match="merge.union mode"):
        op("merge.union", kg.res, state, lists="high", into="x", mode="zip")
