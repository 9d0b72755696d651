"""The personalized-PageRank family: ``hipporag``, ``hipporag2`` and ``fastgraphrag``.

Operators run on a small hand-made knowledge graph (no ``GraphIndex``) with numbers
checked by hand: three one-chunk documents, five entities on a path
``Aldo Brenner — Bellmoor — Corva Lake ~ Lake Corva — Dunhold`` (``~`` a synonym
pair: the same words, so the same bag-of-words vector), three relations. Vectors come
from the deterministic :class:`~doubles.WordEmbedder`. Then the three methods run
through ``GraphIndex`` offline (insert, delete, resume), through the LlamaIndex and
LangChain retrievers with no adapter code, and with :class:`~doubles.ScriptedLLM`
— a scripted test double for the LLM — for question entities and the recognition
filter, well-formed and malformed replies alike.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from corpora import HARBOUR_DOCS
from doubles import ScriptedLLM, WordEmbedder
from operator_coverage import covers
from worlds import word_resources

from hygraph import GraphIndex
from hygraph.errors import ConfigError
from hygraph.graph.algorithms.similar import similar_pairs
from hygraph.graph.entity_graph import entity_node_id
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.ppr_views import entity_walk, passage_walk
from hygraph.graph.store import Edge, GraphStore, Node
from hygraph.graph.view import graph_view
from hygraph.ingest import Chunker, Document
from hygraph.layers.fact_vectors import FactVectors
from hygraph.layers.relation_vectors import RelationVectors
from hygraph.layers.synonyms import Synonyms, name_numbers
from hygraph.methods.base import get_method
from hygraph.operators import registry
from hygraph.operators.ppr import fact_texts
from hygraph.operators.state import Scored, State
from hygraph.prompts.hipporag import (
    parse_question_entities,
    parse_recognition,
    question_entities_messages,
    recognition_messages,
)
from hygraph.prompts.replies import ParseError
from hygraph.resources import Resources
from hygraph.vectors import open_vector_index

METHODS = ("hipporag", "hipporag2", "fastgraphrag")


def op(name: str, res: Resources, state: State, **params: Any) -> None:
    """Run the registered operator ``name`` on ``state``."""
    registry.get_operator(name).fn(res, state, **params)


# --------------------------------------------------------------------------- the world

A, B, C, C2, D = (entity_node_id(k) for k in
                  ("aldo brenner", "bellmoor", "corva lake", "lake corva", "dunhold"))  # fmt: skip
NAMES = {A: "Aldo Brenner", B: "Bellmoor", C: "Corva Lake", C2: "Lake Corva", D: "Dunhold"}
DOCS = [
    ("d1", "Aldo Brenner", "Aldo Brenner was born in Bellmoor."),
    ("d2", "Bellmoor", "Bellmoor lies near Corva Lake. Bellmoor is a mill town."),
    ("d3", "Lake Corva", "Lake Corva feeds the Dunhold river."),
]
#: entity -> documents mentioning it
MENTIONS = {A: ["d1"], B: ["d1", "d2"], C: ["d2"], C2: ["d3"], D: ["d3"]}
#: (source, target, label, documents it was extracted from)
RELATIONS = [
    (A, B, "born in", ["d1"]),
    (B, C, "lies near", ["d2", "d1"]),  # two chunks: M has two ones in this row
    (C2, D, "feeds", ["d3"]),
]


def make_resources(
    store: GraphStore, vectors: Any, path: Path, *, llm: Any = None, in_retrieval: bool = True
) -> Resources:
    return word_resources(store, vectors, path, llm=llm, llm_in_retrieval=in_retrieval)


@pytest.fixture(scope="module")
def kg(tmp_path_factory) -> SimpleNamespace:
    root = tmp_path_factory.mktemp("ppr")
    store = GraphStore(root / "graph.sqlite")
    chunk: dict[str, str] = {}
    for doc_id, title, text in DOCS:
        doc = Document(doc_id, text, title=title)
        (piece,) = Chunker(1200, 100)(doc)
        store.add_document(doc, [piece])
        chunk[doc_id] = piece.id
    store.upsert_nodes(
        Node(e, NodeKind.ENTITY, NAMES[e], "", {}, [chunk[d] for d in docs])
        for e, docs in MENTIONS.items()
    )
    store.upsert_edges(
        [Edge(chunk[d], e, EdgeKind.MENTION, 0.5, {}, [chunk[d]])
         for e, docs in MENTIONS.items() for d in docs]
        + [Edge(s, t, EdgeKind.RELATION, 1.0,
                {"label": label, "entries": {chunk[d]: [[label, "", 1.0]] for d in docs}},
                [chunk[d] for d in docs])
           for s, t, label, docs in RELATIONS]
    )  # fmt: skip
    vectors = open_vector_index(root / "qdrant")
    res = make_resources(store, vectors, root / "index")
    ids = list(chunk.values())
    texts = res.chunk_texts(ids)
    res.upsert_vectors("chunks", ids, [texts[c] for c in ids], [{"kind": "chunk"}] * len(ids))
    res.upsert_vectors("entities", list(NAMES), list(NAMES.values()), [{"kind": "entity"}] * 5)
    RelationVectors().embed(res, [(s, t, EdgeKind.RELATION) for s, t, _, _ in RELATIONS])
    FactVectors().embed(res, [(s, t, EdgeKind.RELATION) for s, t, _, _ in RELATIONS])
    Synonyms().link(res, list(NAMES), Synonyms()._entity_vectors(res))
    return SimpleNamespace(store=store, vectors=vectors, res=res, chunk=chunk, root=root)


def cosine(a: str, b: str) -> float:
    emb = WordEmbedder()
    return float(emb.embed_query(a) @ emb.embed_query(b))


# --------------------------------------------------------------------------- building blocks


def test_similar_pairs_threshold_cap_and_self_skip():
    vectors = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [1.0, 0.0]])
    pairs = similar_pairs(vectors, vectors, threshold=0.8, cap=2, skip=np.arange(4))
    # Row 0: rows 3 (cos 1) and 1 (cos 0.9939); row 2 has no neighbour at 0.8.
    got = {(q, k): round(c, 4) for q, k, c in pairs}
    assert got == {(0, 3): 1.0, (0, 1): 0.9939, (1, 0): 0.9939, (1, 3): 0.9939,
                   (3, 0): 1.0, (3, 1): 0.9939}  # fmt: skip
    assert similar_pairs(vectors, vectors, threshold=0.8, cap=1, skip=np.arange(4))[0][:2] == (0, 3)
    assert similar_pairs(vectors[:0], vectors, threshold=0.8, cap=3) == []


def test_synonym_edges_join_same_named_entities_once(kg):
    rows = kg.store.edge_rows([EdgeKind.SYNONYM])
    assert rows == [(min(C, C2), max(C, C2), 1.0)]  # cos 1, stored once, src < dst
    # "Corva Lake" vs "Bellmoor": no shared word, cosine 0 → no edge; re-linking is idempotent.
    Synonyms().link(kg.res, [C], Synonyms()._entity_vectors(kg.res))
    assert kg.store.edge_rows([EdgeKind.SYNONYM]) == rows
    short = Synonyms({"synonym_min_chars": 20})
    assert short._entity_vectors(kg.res).ids == []  # every name shorter than 20 letters


def test_names_whose_numbers_differ_are_not_synonyms(tmp_path):
    assert name_numbers("15 July 2005") == {"15", "2005"}
    assert name_numbers("05 May") == name_numbers("5 May") == {"5"}
    assert name_numbers("Tallahassee") == frozenset()
    store = GraphStore(tmp_path / "g.sqlite")
    names = {entity_node_id(n.lower()): n for n in ("Expo 2001", "Expo 2003", "April 2001")}
    store.upsert_nodes(Node(i, NodeKind.ENTITY, n) for i, n in names.items())
    res = make_resources(store, open_vector_index(tmp_path / "q"), tmp_path / "i")
    res.upsert_vectors("entities", list(names), list(names.values()), [{}] * 3)

    def pairs(**options: Any) -> set[tuple[str, str]]:
        layer = Synonyms({"synonym_threshold": 0.4, **options})
        layer.link(res, list(names), layer._entity_vectors(res), replace=list(names))
        return {tuple(sorted((names[s], names[d]))) for s, d, _ in
                store.edge_rows([EdgeKind.SYNONYM])}  # fmt: skip

    # Each pair shares one of two words (cosine 0.5); only equal numbers make synonyms.
    assert pairs() == {("April 2001", "Expo 2001")}
    assert pairs(synonym_numbers=False) == {("April 2001", "Expo 2001"), ("Expo 2001", "Expo 2003")}
    assert pairs() == {("April 2001", "Expo 2001")}  # re-linking replaces the old edges


def test_walk_views_hold_the_aggregator_matrices(kg):
    walk = entity_walk(graph_view(kg.store), synonyms=True)
    assert set(walk.relations) == {(s, t) for s, t, _, _ in RELATIONS}
    e = walk.incidence.toarray()
    for j, (s, t) in enumerate(walk.relations):
        assert e[walk.graph.position[s], j] == e[walk.graph.position[t], j] == 1
        assert e[:, j].sum() == 2
    m = walk.provenance.toarray()
    row = walk.relations.index((B, C))
    assert sorted(walk.chunks[j] for j in np.flatnonzero(m[row])) == sorted(
        [kg.chunk["d1"], kg.chunk["d2"]]
    )
    counts = {e: walk.chunk_counts[walk.graph.position[e]] for e in NAMES}
    assert counts == {A: 1, B: 2, C: 1, C2: 1, D: 1}
    # Without synonyms the two lakes are not adjacent; with them they are.
    plain = entity_walk(graph_view(kg.store), synonyms=False)
    assert C2 not in plain.graph.neighbours(C) and C2 in walk.graph.neighbours(C)
    passages = passage_walk(graph_view(kg.store))
    g = passages.graph
    assert passages.is_chunk.sum() == 3
    adjacency = g.adjacency.toarray()
    pos = g.position
    assert adjacency[pos[A], pos[B]] == 2.0  # one triple, counted both ways (reference graph)
    assert adjacency[pos[C], pos[C2]] == 2.0  # synonym cosine 1, both ways
    assert adjacency[pos[kg.chunk["d1"]], pos[A]] == 1.0  # passage edges weigh 1


# --------------------------------------------------------------------------- Link and PPR


@covers("node.link")
def test_link_takes_the_top_entity_per_keyword(kg):
    state = State("Where was Aldo Brenner born?", top_k=3, keywords=["Aldo Brenner", "Dunhold"])
    op("node.link", kg.res, state)
    assert state.seeds == pytest.approx({A: 1.0, D: 1.0})
    state.keywords = ["Aldo"]
    op("node.link", kg.res, state, threshold=0.99)  # cos("Aldo", "Aldo Brenner") = 0.707
    assert state.seeds == {}


@covers("node.ppr")
def test_ppr_hipporag_mode_restarts_by_node_specificity(kg):
    state = State("q", top_k=3, seeds={A: 0.9, B: 0.4})
    # damping 0: the scores are the restart vector itself, 1/1 and 1/2 normalised.
    op("node.ppr", kg.res, state, mode="hipporag", damping=0.0)
    walk = state.subgraph["ppr_walk"]
    p = dict(zip(walk.graph.ids, state.subgraph["ppr"], strict=True))
    assert p[A] == pytest.approx(2 / 3) and p[B] == pytest.approx(1 / 3) and p[C] == 0
    assert [n.id for n in state.nodes] == [A, B]
    op("node.ppr", kg.res, state, mode="hipporag", damping=0.0, specificity=False)
    p = dict(zip(walk.graph.ids, state.subgraph["ppr"], strict=True))
    assert p[A] == pytest.approx(0.5) and p[B] == pytest.approx(0.5)


def test_ppr_walk_matches_the_linear_solution(kg):
    state = State("q", top_k=3, seeds={A: 1.0})
    op("node.ppr", kg.res, state, mode="hipporag", damping=0.5)
    walk = state.subgraph["ppr_walk"]
    # p = (1 - d) (I - d Pᵀ)⁻¹ r on the path A-B-C~C2-D (unit weights, synonym cosine 1).
    adj = walk.graph.adjacency.toarray()
    transition = adj / adj.sum(axis=1, keepdims=True)
    r = np.zeros(len(adj))
    r[walk.graph.position[A]] = 1.0
    expected = 0.5 * np.linalg.solve(np.eye(len(adj)) - 0.5 * transition.T, r)
    assert state.subgraph["ppr"] == pytest.approx(expected, abs=1e-7)
    # By hand, A's share on a path end with d = 0.5 exceeds its neighbour's, and so on.
    order = [n.id for n in state.nodes]
    assert order[:3] == [A, B, C]


def test_ppr_fastgraphrag_mode_adds_the_nearest_entities(kg):
    question = "Which river does Lake Corva feed?"
    state = State(question, top_k=3, seeds={A: 0.9})
    op("node.ppr", kg.res, state, mode="fastgraphrag", damping=0.0, vdb_k=2)
    p = dict(zip(state.subgraph["ppr_walk"].graph.ids, state.subgraph["ppr"], strict=True))
    # Restart: A's link similarity + the two entities nearest to the question (both lakes).
    lake = cosine(question, "Lake Corva")
    assert lake == pytest.approx(cosine(question, "Corva Lake")) and lake > 0
    total = 0.9 + 2 * lake
    assert p[A] == pytest.approx(0.9 / total)
    assert p[C] == pytest.approx(lake / total) and p[C2] == pytest.approx(lake / total)
    with pytest.raises(ConfigError, match="mode"):
        op("node.ppr", kg.res, state, mode="pagerank")


def test_ppr_without_seeds_leaves_nothing_and_dense_fills_in(kg):
    state = State("Aldo Brenner", top_k=2)
    op("node.ppr", kg.res, state)
    assert state.nodes == [] and not state.subgraph["ppr"].any()
    op("relationship.aggregator", kg.res, state)
    op("chunk.aggregator", kg.res, state)
    assert state.relationships == [] and state.chunks == []
    op("chunk.vdb", kg.res, state, k=2, if_empty=True)
    assert state.chunks[0][0] == kg.chunk["d1"]


# --------------------------------------------------------------------------- aggregators


@covers("relationship.aggregator", "chunk.aggregator")
def test_aggregators_by_hand(kg):
    state = State("q", top_k=3)
    walk = entity_walk(graph_view(kg.store), synonyms=True)
    p = np.zeros(len(walk.graph.ids))
    for entity, mass in ((A, 0.5), (B, 0.3), (C, 0.2)):
        p[walk.graph.position[entity]] = mass
    state.subgraph.update({"ppr_walk": walk, "ppr": p})
    op("relationship.aggregator", kg.res, state, k=5)
    # r = Eᵀp: A→B 0.5 + 0.3, B→C 0.3 + 0.2, Lake Corva→Dunhold 0 (left out).
    assert [(r.id, round(r.value, 6)) for r in state.relationships] == [
        (f"{A}|{B}", 0.8), (f"{B}|{C}", 0.5)]  # fmt: skip
    assert state.relationships[0].data == {"kind": EdgeKind.RELATION, "members": (A, B)}
    op("chunk.aggregator", kg.res, state)
    # Ψ = rM: d1 holds A→B and B→C (1.3), d2 B→C (0.5), d3 nothing (0); min-max → 1, 0.5/1.3.
    assert [(c, round(s, 6)) for c, s in state.chunks] == [
        (kg.chunk["d1"], 1.0), (kg.chunk["d2"], round(0.5 / 1.3, 6))]  # fmt: skip
    op("chunk.aggregator", kg.res, state, normalise=False, depth=1)
    assert state.chunks == [(kg.chunk["d1"], pytest.approx(1.3))]
    with pytest.raises(ConfigError, match="node.ppr"):
        op("relationship.aggregator", kg.res, State("q", top_k=1))
    with pytest.raises(ConfigError, match="relationship.aggregator"):
        op("chunk.aggregator", kg.res, State("q", top_k=1))


# --------------------------------------------------------------------------- HippoRAG 2


@covers("relationship.fact_link")
def test_fact_link_normalises_over_every_fact(kg):
    question = "Which river does Lake Corva feed?"
    state = State(question, top_k=3)
    op("relationship.fact_link", kg.res, state, k=2)
    texts = {f"{s}|{t}": f"{NAMES[s]} {label} {NAMES[t]}" for s, t, label, _ in RELATIONS}
    cos = {rid: cosine(question, text) for rid, text in texts.items()}
    high, low = max(cos.values()), min(cos.values())
    ranked = sorted(cos, key=lambda r: -cos[r])[:2]
    assert [r.id for r in state.relationships] == ranked
    for r in state.relationships:
        assert r.cosine == pytest.approx(cos[r.id], abs=1e-5)
        assert r.value == pytest.approx((cos[r.id] - low) / (high - low), abs=1e-5)
    assert state.relationships[0].value == pytest.approx(1.0)


def test_fact_texts_show_names_and_labels(kg):
    facts = [Scored(f"{A}|{B}", 1.0, data={"members": (A, B)})]
    assert fact_texts(kg.res, facts) == ["(Aldo Brenner, born in, Bellmoor)"]


def _facts() -> list[Scored]:
    return [
        Scored(f"{A}|{B}", 1.0, data={"kind": EdgeKind.RELATION, "members": (A, B)}),
        Scored(f"{B}|{C}", 0.5, data={"kind": EdgeKind.RELATION, "members": (B, C)}),
    ]


@covers("node.fact_entities")
def test_fact_entities_average_score_over_chunk_count(kg):
    state = State("q", top_k=3, relationships=_facts())
    op("node.fact_entities", kg.res, state, k=5)
    # A: 1.0/1; B: mean(1.0/2, 0.5/2) = 0.375; C: 0.5/1.
    assert state.seeds == pytest.approx({A: 1.0, C: 0.5, B: 0.375})
    op("node.fact_entities", kg.res, state, k=2)
    assert state.seeds == pytest.approx({A: 1.0, C: 0.5})
    op("node.fact_entities", kg.res, state, k=5, specificity=False)
    assert state.seeds == pytest.approx({A: 1.0, B: 0.75, C: 0.5})


@covers("chunk.ppr")
def test_passage_ppr_by_the_linear_solution(kg):
    question = "Which river does Lake Corva feed?"
    state = State(question, top_k=3, seeds={A: 1.0})
    op("chunk.ppr", kg.res, state, damping=0.5, passage_weight=0.05)
    walk = passage_walk(graph_view(kg.store))
    g = walk.graph
    dense = {c: cosine(question, t) for c, t in kg.res.chunk_texts(kg.chunk.values()).items()}
    low, high = min(dense.values()), max(dense.values())
    r = np.zeros(len(g.ids))
    r[g.position[A]] = 1.0
    for c, s in dense.items():
        r[g.position[c]] += 0.05 * (s - low) / (high - low)
    adj = g.adjacency.toarray()
    rows = adj.sum(axis=1, keepdims=True)
    transition = np.divide(adj, rows, out=np.zeros_like(adj), where=rows > 0)
    r = r / r.sum()
    p = 0.5 * np.linalg.solve(np.eye(len(adj)) - 0.5 * transition.T, r)
    expected = sorted(kg.chunk.values(), key=lambda c: -p[g.position[c]])
    assert [c for c, _ in state.chunks] == expected
    assert state.chunks[0][0] == kg.chunk["d1"]  # the seed's passage, though dense prefers d3
    assert max(dense, key=dense.get) == kg.chunk["d3"]
    for c, s in state.chunks:
        assert s == pytest.approx(p[g.position[c]], abs=1e-6)
    # No seed: the dense ranking, as the reference code falls back to it.
    state = State(question, top_k=3)
    op("chunk.ppr", kg.res, state)
    assert [c for c, _ in state.chunks] == sorted(dense, key=lambda c: -dense[c])
    # Seeding only the densest passage (a pool of one) still ranks the seed's passage first.
    state = State(question, top_k=3, seeds={A: 1.0})
    op("chunk.ppr", kg.res, state, passage_pool=1)
    assert state.chunks[0][0] == kg.chunk["d1"]


# --------------------------------------------------------------------------- LLM replies


@covers("relationship.recognize")
def test_recognition_filter_with_scripted_replies(kg, tmp_path, caplog):
    """Scripted LLM double: a kept subset, none kept, malformed replies and a failing call."""

    runs = iter(range(100))  # a fresh reply cache per run

    def run(
        reply: Any, *, mode: str = "auto", in_retrieval: bool = True, unfiltered: int = 0
    ) -> tuple[State, Any]:
        llm = ScriptedLLM([reply]) if reply is not None else None
        res = make_resources(kg.store, kg.vectors, tmp_path / str(next(runs)),
                             llm=llm, in_retrieval=in_retrieval)  # fmt: skip
        state = State("Where was Aldo Brenner born?", top_k=3, relationships=_facts())
        op("relationship.recognize", res, state, mode=mode, unfiltered=unfiltered)
        return state, llm

    state, llm = run('{"relevant": [2]}')
    assert [r.id for r in state.relationships] == [f"{B}|{C}"]
    prompt = llm.calls[0][0][-1]["content"]
    assert "1. (Aldo Brenner, born in, Bellmoor)" in prompt and "Where was Aldo" in prompt
    state, _ = run('```json\n{"relevant": ["(Aldo Brenner, born in, Bellmoor)"]}\n```')
    assert [r.id for r in state.relationships] == [f"{A}|{B}"]  # a fact written out
    state, _ = run('{"relevant": []}')
    assert state.relationships == []  # none helps: later steps fall back to dense
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        for bad in ("I think the first one.", '{"answer": "Bellmoor"}', '{"relevant": [7]}',
                    RuntimeError("endpoint down")):  # fmt: skip
            state, _ = run(bad)
            assert [r.id for r in state.relationships] == [f"{A}|{B}", f"{B}|{C}"]
        state, _ = run("no JSON", unfiltered=1)  # unread reply: only the best fact stays
        assert [r.id for r in state.relationships] == [f"{A}|{B}"]
    assert sum("fact recognition failed" in r.message for r in caplog.records) == 5
    state, llm = run('{"relevant": [2]}', mode="off")
    assert len(state.relationships) == 2 and llm.calls == []
    state, _ = run(None, mode="off", unfiltered=1)
    assert [r.id for r in state.relationships] == [f"{A}|{B}"]
    state, _ = run('{"relevant": [2]}', unfiltered=1)  # a filter that ran is not cut
    assert [r.id for r in state.relationships] == [f"{B}|{C}"]
    state, llm = run('{"relevant": [2]}', in_retrieval=False)  # auto: retrieval stays LLM-free
    assert len(state.relationships) == 2 and llm.calls == []
    state, llm = run('{"relevant": [2]}', mode="llm", in_retrieval=False)  # asked by name
    assert len(state.relationships) == 1 and len(llm.calls) == 1
    with pytest.raises(ConfigError, match="needs an LLM"):
        run(None, mode="llm")
    with pytest.raises(ConfigError, match="mode"):
        run(None, mode="sometimes")


def test_recognition_parser_and_prompt():
    facts = ["(A, born in, B)", "(B, lies near, C)", "(C, feeds, D)"]
    assert parse_recognition('{"relevant": [3, 1, 1]}', facts) == [0, 2]
    assert parse_recognition("[2]", facts) == [1]
    assert parse_recognition('{"facts": [["B", "lies near", "C"]]}', facts) == [1]
    assert parse_recognition('{"fact": ["C", "feeds", "D"]}', facts) == [2]
    assert parse_recognition('{"relevant": ["2", "(C, feeds, D)"]}', facts) == [1, 2]
    assert parse_recognition('<think>maybe 1</think>{"relevant": []}', facts) == []
    for bad in ("", "none of them", '{"answer": 1}', '{"relevant": [9, "(X, y, Z)"]}'):
        with pytest.raises(ParseError):
            parse_recognition(bad, facts)
    messages = recognition_messages("Q?", facts)
    assert messages[0]["role"] == "system" and "3. (C, feeds, D)" in messages[-1]["content"]


def test_question_entity_parser_and_prompt():
    assert parse_question_entities('{"named_entities": ["Aldo Brenner", "aldo brenner", " X "]}')\
        == ["Aldo Brenner", "X"]  # fmt: skip
    assert parse_question_entities('[{"name": "Bellmoor"}, 1979]') == ["Bellmoor", "1979"]
    assert parse_question_entities('{"named_entities": []}') == []
    for bad in ("no JSON here", '{"answer": "x"}', '{"named_entities": 5}'):
        with pytest.raises(ParseError):
            parse_question_entities(bad)
    assert question_entities_messages("Q?")[-1]["content"] == "Question: Q?"


def test_question_entities_by_llm_with_offline_fallback(kg, tmp_path, caplog):
    """Scripted LLM double for HippoRAG's query NER; malformed replies use the offline rules."""
    question = "Where was Aldo Brenner born?"
    llm = ScriptedLLM(['{"named_entities": ["Aldo Brenner", "Bellmoor"]}', "sorry, no idea"])
    res = make_resources(kg.store, kg.vectors, tmp_path, llm=llm)
    state = State(question, top_k=3)
    op("question.entities", res, state, prompt="hipporag")
    assert state.keywords == ["Aldo Brenner", "Bellmoor"]
    res = make_resources(kg.store, kg.vectors, tmp_path / "again", llm=llm)  # a fresh cache
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        op("question.entities", res, state, prompt="hipporag")
    assert state.keywords == ["Aldo Brenner"]  # the rule extractor's capitalised name
    assert any("question entities failed" in r.message for r in caplog.records)


# --------------------------------------------------------------------------- methods


def test_methods_are_registered_and_valid():
    for name in METHODS:
        cls = get_method(name)
        cls.check()
        assert cls.Config().top_k == 5
    assert get_method("hipporag").Config().damping == 0.1
    assert get_method("hipporag2").Config().damping == 0.5
    with pytest.raises(ConfigError, match="damping"):
        get_method("hipporag")({"damping": 1.0})
    with pytest.raises(ConfigError, match="recognition"):
        get_method("hipporag2")({"recognition": "maybe"})
    with pytest.raises(ConfigError, match="query_entities"):
        get_method("fastgraphrag")({"query_entities": "psychic"})


def _docs(*names: str) -> list[Document]:
    return [Document(text=HARBOUR_DOCS[n][1], id=n, title=HARBOUR_DOCS[n][0]) for n in names]


QUESTION = "Who commanded the research vessel built by the shipyard Josiah Aldercott founded?"


@pytest.fixture(scope="module")
def built(tmp_path_factory, minilm) -> Path:
    """An offline index of the harbour corpus with the three methods (built once)."""
    path = tmp_path_factory.mktemp("ppr-index") / "index"
    with GraphIndex(path, embedder=minilm, progress=False) as index:
        index.insert(_docs(*HARBOUR_DOCS), methods=list(METHODS))
    return path


def test_methods_through_graph_index_offline(built, minilm):
    with GraphIndex(built, embedder=minilm, progress=False) as index:
        for name in METHODS:
            result = index.retrieve(QUESTION, name, top_k=2)
            assert len(result.passages) == 2, name
            assert {"harbour", "expedition"} & set(result.passages), name
            ops = [t["name"] for t in result.trace]
            assert "chunk.evidence" in ops and all(i.kind for i in result.items)
        trace = {t["name"]: t for t in index.retrieve(QUESTION, "hipporag2").trace}
        assert trace["relationship.fact_link"]["added"] == {"relationships": 5}
        assert trace["relationship.recognize"]["llm_calls"] == 0  # no LLM: no filter
        trace = {t["name"]: t for t in index.retrieve(QUESTION, "hipporag").trace}
        assert trace["node.link"]["added"]["seeds"] >= 1
        kinds = {i.kind for i in index.retrieve(QUESTION, "fastgraphrag").items}
        assert kinds == {"chunk", "relationship", "entity"}
        # Options are plain config fields: a variant without synonyms, another damping.
        assert index.retrieve(QUESTION, "hipporag:synonyms=false,damping=0.5").passages


def test_insert_and_delete_keep_the_walk_current(tmp_path, minilm):
    extra = Document(
        text="The Grey Sound Survey Office keeps the charts of Renna Osk. The office stands "
        "in Harrowby beside the Gannet's Reach museum.",
        id="office",
        title="Grey Sound Survey Office",
    )
    with GraphIndex(tmp_path / "i", embedder=minilm, progress=False) as index:
        index.insert(_docs("harbour", "expedition"), methods=list(METHODS))
        before = index.retrieve("Where are the charts of Renna Osk kept?", "hipporag2").passages
        assert "office" not in before
        index.insert([extra])
        office = entity_node_id("grey sound survey office")
        assert index.store.get_nodes([office])
        for name in METHODS:
            found = index.retrieve("Where are the charts of Renna Osk kept?", name, top_k=3)
            assert "office" in found.passages, name
        index.delete("office")
        assert not index.store.get_nodes([office])
        ends = {x for s, d, _ in index.store.edge_rows([EdgeKind.SYNONYM]) for x in (s, d)}
        assert set(index.store.get_nodes(ends)) == ends  # no synonym edge outlives an entity
        for name in METHODS:
            after = index.retrieve("Where are the charts of Renna Osk kept?", name, top_k=3)
            assert "office" not in after.passages, name


def test_synonym_layer_resumes_without_duplicates(tmp_path, minilm):
    docs = [
        Document(text="Port Alder lies on the Grey Sound. Port Alder has a ferry.", id="a"),
        Document(text="The ferry of Port Alder, Grey Sound, sails at dawn.", id="b"),
    ]
    with GraphIndex(tmp_path / "i", embedder=minilm, progress=False) as index:
        index.insert(docs, methods=["hipporag"])
        edges = sorted(index.store.edge_rows([EdgeKind.SYNONYM]))
        layer = index.layer("synonyms")
        # A build killed before its last batch was marked: the rerun adds nothing twice.
        index.store.clear_progress(layer.task)
        assert layer.update(index.resources) == 2
        assert sorted(index.store.edge_rows([EdgeKind.SYNONYM])) == edges
        layer.reset(index.resources)
        assert index.store.edge_rows([EdgeKind.SYNONYM]) == []
        layer.update(index.resources)
        assert sorted(index.store.edge_rows([EdgeKind.SYNONYM])) == edges


def test_llm_in_retrieval_with_scripted_double(built, minilm):
    """Scripted LLM double at query time: HippoRAG's entities and HippoRAG 2's filter."""

    def reply(messages: list[dict], params: dict) -> str:
        last = messages[-1]["content"]
        if "Candidate facts" in last:
            return '{"relevant": [1]}' if "vessel" in last else "not JSON at all"
        if last.startswith("Question:"):
            return '{"named_entities": ["Josiah Aldercott"]}'
        raise AssertionError(f"unexpected prompt: {last[:60]}")

    llm = ScriptedLLM(responder=reply)
    path = built
    with GraphIndex(path, embedder=minilm, progress=False, llm=llm,
                    llm_in_retrieval=True) as index:  # fmt: skip
        trace = {t["name"]: t for t in index.retrieve(QUESTION, "hipporag").trace}
        assert trace["question.entities"]["llm_calls"] == 1
        trace = {t["name"]: t for t in index.retrieve(QUESTION, "hipporag2").trace}
        assert trace["relationship.recognize"]["llm_calls"] == 1
        assert trace["relationship.recognize"]["added"] == {"relationships": -4}
        # A malformed filter reply keeps the linked facts (and the query still answers).
        other = index.retrieve("Who founded the Lantern Tide Festival?", "hipporag2", top_k=2)
        assert other.passages and "festival" in other.passages
    with GraphIndex(path, embedder=minilm, progress=False) as index:  # no LLM: still works
        assert index.retrieve(QUESTION, "hipporag2:recognition=off", top_k=2).passages
        with pytest.raises(ConfigError, match="needs an LLM"):
            index.retrieve(QUESTION, "hipporag2:recognition=llm")


def test_framework_retrievers_need_no_adapter_code(tmp_path, minilm):
    from langchain_core.documents import Document as LCDocument
    from llama_index.core import Document as LIDocument

    from langchain_hygraph import HyGraphRetriever as LangChainRetriever
    from llama_index_hygraph import HyGraphIndex

    texts = [LIDocument(text=HARBOUR_DOCS[n][1], id_=n) for n in HARBOUR_DOCS]
    with HyGraphIndex.from_documents(texts, method="hipporag2", persist_dir=tmp_path / "li") as li:
        nodes = li.as_retriever(similarity_top_k=2).retrieve(QUESTION)
        assert len(nodes) == 2 and nodes[0].node.metadata["method"] == "hipporag2"
        for name in ("hipporag", "fastgraphrag"):
            more = li.as_retriever(method=name, similarity_top_k=2).retrieve(QUESTION)
            assert len(more) == 2 and more[0].node.metadata["method"] == name
    lc = LangChainRetriever.from_documents(
        [LCDocument(page_content=HARBOUR_DOCS[n][1], metadata={"source": n}) for n in HARBOUR_DOCS],
        method="fastgraphrag", persist_dir=tmp_path / "lc", top_k=2,
    )  # fmt: skip
    docs = lc.invoke(QUESTION)
    assert len(docs) == 2 and all(d.metadata["method"] == "fastgraphrag" for d in docs)
    assert len(lc.with_config(tags=["x"]).invoke(QUESTION)) == 2
    lc.close()


def test_describe_names_every_default_source(capsys):
    from hygraph.cli import main
    from hygraph.methods.describe import describe

    for name in METHODS:
        info = describe(name)
        unsourced = [f["name"] for f in info["fields"] if not f["source"]]
        assert unsourced == [], (name, unsourced)
    assert main(["methods", "--describe", "hipporag2"]) == 0
    out = capsys.readouterr().out
    assert "unfiltered_top_k" in out and "chunk.ppr" in out and "[paper]" in out
    assert main(["methods"]) == 0
    listed = capsys.readouterr().out
    assert "offline rules" in listed and "hipporag2" in listed
