"""Unit tests of the retrieval operators on a small hand-made graph (no ``GraphIndex``).

The world: four one-chunk documents about fictional people and places. Its
hypergraph part has entities, scored n-ary facts with ``incidence`` edges and
``mentions`` edges from the chunks; its heterograph part has semantic units, one
attribute, and one high-level element with its overview title. Vectors come from
the deterministic bag-of-words :class:`~doubles.WordEmbedder`, so cosines are
reproducible; where an expected order depends on them, the test computes the
cosines itself from the same embedder instead of going through the vector index.

Every test that runs an operator says so with ``@covers(...)``
(:mod:`operator_coverage`, usable from any test module); the last test checks that the
covered names are exactly the registered operators, so a new operator without a test
fails here.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from doubles import ScriptedLLM, WordEmbedder
from operator_coverage import covered_everywhere, covers

from hygraph.errors import ConfigError
from hygraph.graph.entity_graph import entity_node_id
from hygraph.graph.heterograph import attribute_id, high_level_id, overview_id, unit_id
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import Edge, GraphStore, Node
from hygraph.ingest import Chunker, Document
from hygraph.layers.bm25 import BM25Layer
from hygraph.manifest import Manifest
from hygraph.operators import recipe, registry
from hygraph.operators.recipe import Step
from hygraph.operators.scoring import select
from hygraph.operators.state import Scored, State
from hygraph.resources import Resources
from hygraph.retrieval.context import Context
from hygraph.retrieval.evidence import Evidence
from hygraph.usage import UsageTracker
from hygraph.vectors import open_vector_index


def op(name: str, res: Resources, state: State, **params: Any) -> None:
    """Run the registered operator ``name`` on ``state``."""
    registry.get_operator(name).fn(res, state, **params)


# --------------------------------------------------------------------------- the world

DOCS = [
    (
        "d1",
        "Zorvan Keel",
        "Zorvan Keel is a painter. He painted the Glass Harbor mural in Marrowby.",
    ),
    (
        "d2",
        "Glass Harbor",
        "The Glass Harbor mural was commissioned by Ilsa Quorn. "
        "Ilsa Quorn serves as mayor of Marrowby.",
    ),
    ("d3", "Ilsa Quorn", "Ilsa Quorn married Teodor Vance in 1999. Teodor Vance is a sculptor."),
    ("d4", "Pellow Fen", "Pellow Fen is a marsh east of Duskmoor, famous for herons."),
]

ZORVAN = entity_node_id("zorvan keel")
MARROWBY = entity_node_id("marrowby")
GLASS = entity_node_id("glass harbor")
ILSA = entity_node_id("ilsa quorn")
TEODOR = entity_node_id("teodor vance")
PELLOW = entity_node_id("pellow fen")
DUSKMOOR = entity_node_id("duskmoor")

#: id -> (name, type, description, importance score, documents mentioning it)
ENTITIES = {
    ZORVAN: ("Zorvan Keel", "person", "A painter.", 70, ["d1"]),
    MARROWBY: ("Marrowby", "place", "A town.", 60, ["d1", "d2"]),
    GLASS: ("Glass Harbor", "artwork", "A mural.", 50, ["d1", "d2"]),
    ILSA: ("Ilsa Quorn", "person", "Mayor of Marrowby.", 80, ["d2", "d3"]),
    TEODOR: ("Teodor Vance", "person", "A sculptor.", 90, ["d3"]),
    PELLOW: ("Pellow Fen", "place", "A marsh.", 40, ["d4"]),
    DUSKMOOR: ("Duskmoor", "entity", "", 30, ["d4"]),
}

F_PAINTED, F_COMMISSIONED, F_MARRIED, F_MARSH, F_MAYOR = (
    "fact:painted",
    "fact:commissioned",
    "fact:married",
    "fact:marsh",
    "fact:mayor",
)
#: id -> (statement, completeness score, members strongest first, document)
FACTS = {
    F_PAINTED: (
        "Zorvan Keel painted the Glass Harbor mural in Marrowby.",
        9,
        [ZORVAN, GLASS, MARROWBY],
        "d1",
    ),
    F_COMMISSIONED: ("Ilsa Quorn commissioned the Glass Harbor mural.", 8, [ILSA, GLASS], "d2"),
    F_MARRIED: ("Ilsa Quorn married Teodor Vance in 1999.", 7, [ILSA, TEODOR], "d3"),
    F_MARSH: ("Pellow Fen is a marsh east of Duskmoor.", 6, [PELLOW, DUSKMOOR], "d4"),
    F_MAYOR: ("Ilsa Quorn serves as mayor of Marrowby.", 5, [ILSA, MARROWBY], "d2"),
}

U_COMMISSIONED = unit_id("Ilsa Quorn commissioned the Glass Harbor mural.")
U_MARRIED = unit_id("Ilsa Quorn married Teodor Vance.")
U_PAINTED = unit_id("Zorvan Keel painted the Glass Harbor mural.")
U_HERONS = unit_id("Pellow Fen shelters herons.")
#: id -> (text, [(entity, nr_mention weight)], document)
UNITS = {
    U_COMMISSIONED: (
        "Ilsa Quorn commissioned the Glass Harbor mural.",
        [(ILSA, 1.0), (GLASS, 1.0)],
        "d2",
    ),
    U_MARRIED: ("Ilsa Quorn married Teodor Vance.", [(ILSA, 2.0), (TEODOR, 1.0)], "d3"),
    U_PAINTED: ("Zorvan Keel painted the Glass Harbor mural.", [(ZORVAN, 1.0), (GLASS, 1.0)], "d1"),
    U_HERONS: ("Pellow Fen shelters herons.", [(PELLOW, 1.0)], "d4"),
}
ATTR = attribute_id(ILSA)
ATTR_TEXT = "Ilsa Quorn: mayor of Marrowby who commissioned a mural."
HIGH_TEXT = "Marrowby's civic art centres on one harbour painting."
HIGH = high_level_id(HIGH_TEXT)
OVER = overview_id("Marrowby art")

BRIDGE_Q = "Who married the person who commissioned the Glass Harbor mural?"


@dataclass
class World:
    store: GraphStore
    vectors: Any
    chunk: dict[str, str]  # document id -> its (only) chunk id
    embedder: WordEmbedder


def make_manifest(extractor: str = "offline") -> Manifest:
    return Manifest(
        embedder="words",
        dim=None,
        chunk_size=1200,
        chunk_overlap=100,
        tokenizer="t",
        vectors={"backend": "edge", "path": "qdrant"},
        extractor=extractor,
    )


def make_resources(
    world: World,
    path: Path,
    *,
    llm: Any = None,
    extractor: str = "offline",
    llm_in_retrieval: bool = True,
) -> Resources:
    path.mkdir(parents=True, exist_ok=True)
    return Resources(
        path=path,
        store=world.store,
        vectors=world.vectors,
        manifest=make_manifest(extractor),
        embedder=world.embedder,
        llm=llm,
        tracker=UsageTracker(),
        progress=False,
        cache_dir=path / "cache",
        llm_in_retrieval=llm_in_retrieval,
    )


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    root = tmp_path_factory.mktemp("operators")
    store = GraphStore(root / "graph.sqlite")
    chunker = Chunker(1200, 100)
    chunk: dict[str, str] = {}
    for doc_id, title, text in DOCS:
        doc = Document(doc_id, text, title=title)
        chunks = chunker(doc)
        assert len(chunks) == 1
        store.add_document(doc, chunks)
        chunk[doc_id] = chunks[0].id

    nodes = [
        Node(eid, NodeKind.ENTITY, name, desc, {"type": etype, "score": score},
             [chunk[d] for d in docs])
        for eid, (name, etype, desc, score, docs) in ENTITIES.items()
    ]  # fmt: skip
    nodes += [
        Node(fid, NodeKind.FACT, None, text, {"score": score}, [chunk[doc]])
        for fid, (text, score, _, doc) in FACTS.items()
    ]
    edges = [
        Edge(fid, member, EdgeKind.INCIDENCE, float(len(members) - n), {}, [chunk[doc]])
        for fid, (_, _, members, doc) in FACTS.items()
        for n, member in enumerate(members)
    ]
    edges += [
        Edge(chunk[d], eid, EdgeKind.MENTION, 1.0, {}, [chunk[d]])
        for eid, (*_, docs) in ENTITIES.items()
        for d in docs
    ]
    # Heterograph: units, one attribute, one high-level element with its title.
    nodes += [
        Node(uid, NodeKind.UNIT, None, text, {}, [chunk[doc]])
        for uid, (text, _, doc) in UNITS.items()
    ]
    nodes += [
        Node(ATTR, NodeKind.ATTRIBUTE, "Ilsa Quorn", ATTR_TEXT, {}, [chunk["d2"], chunk["d3"]]),
        Node(HIGH, NodeKind.HIGH_LEVEL, None, HIGH_TEXT, {}, [chunk["d1"], chunk["d2"]]),
        Node(OVER, NodeKind.OVERVIEW, "Marrowby art", None, {}, [chunk["d1"]]),
    ]
    edges += [
        Edge(uid, eid, EdgeKind.UNIT_MENTION, weight, {}, [chunk[doc]])
        for uid, (_, mentions, doc) in UNITS.items()
        for eid, weight in mentions
    ]
    edges += [
        Edge(chunk[doc], uid, EdgeKind.TEXT, 1.0, {}, [chunk[doc]])
        for uid, (_, _, doc) in UNITS.items()
    ]
    edges += [
        Edge(ILSA, ATTR, EdgeKind.ATTRIBUTE_OF, 1.0, {}, [chunk["d2"]]),
        Edge(HIGH, OVER, EdgeKind.TITLE, 1.0, {}, [chunk["d1"]]),
    ]
    store.upsert_nodes(nodes)
    store.upsert_edges(edges)

    w = World(store, open_vector_index(root / "qdrant"), chunk, WordEmbedder())
    res = make_resources(w, root / "index")
    ids = list(chunk.values())
    texts = res.chunk_texts(ids)
    res.upsert_vectors(
        "chunks", ids, [texts[c] for c in ids], [{"kind": "chunk", "doc_id": d} for d in chunk]
    )
    res.upsert_vectors(
        "entities",
        list(ENTITIES),
        [e[0] for e in ENTITIES.values()],
        [{"kind": "entity"}] * len(ENTITIES),
    )
    res.upsert_vectors(
        "facts", list(FACTS), [f[0] for f in FACTS.values()], [{"kind": "fact"}] * len(FACTS)
    )
    res.upsert_vectors(
        "noderag",
        [*UNITS, ATTR, HIGH],
        [*(u[0] for u in UNITS.values()), ATTR_TEXT, HIGH_TEXT],
        [*({"kind": "S"} for _ in UNITS), {"kind": "A"}, {"kind": "H"}],
    )
    return w


@pytest.fixture
def res(world, tmp_path, monkeypatch) -> Resources:
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    return make_resources(world, tmp_path / "index")


@pytest.fixture
def c(world) -> SimpleNamespace:
    """The chunk ids: ``c.d1`` ... ``c.d4``."""
    return SimpleNamespace(**world.chunk)


def cosine(world: World, a: str, b: str) -> float:
    e = world.embedder
    return float(np.dot(e.embed_query(a), e.embed([b])[0]))


def embedded(res: Resources, question: str, top_k: int = 5) -> State:
    state = State(question, top_k)
    op("question.embed", res, state)
    return state


# --------------------------------------------------------------------------- question


@covers("question.embed")
def test_question_embed_sets_the_query_once(res, world):
    state = State("Who painted the mural?", 3)
    op("question.embed", res, state)
    assert state.query is not None
    assert np.allclose(state.query, world.embedder.embed_query("Who painted the mural?"))
    kept = np.ones(64, dtype=np.float32)
    state.query = kept
    op("question.embed", res, state)
    assert state.query is kept  # an existing query vector is not replaced


@covers("question.entities")
def test_question_entities_question_and_offline_modes(res):
    q = "Who married Ilsa Quorn after the Glass Harbor mural?"
    state = State(q, 3)
    op("question.entities", res, state, mode="question")
    assert state.keywords == [q]
    op("question.entities", res, state, mode="offline")
    assert state.keywords == ["Ilsa Quorn", "Glass Harbor"]
    op("question.entities", res, state, mode="auto")  # no LLM: the offline rules
    assert state.keywords == ["Ilsa Quorn", "Glass Harbor"]
    # Nothing found: the question itself, or nothing with fallback="none".
    state = State("who married her?", 3)
    op("question.entities", res, state, mode="offline")
    assert state.keywords == ["who married her?"]
    op("question.entities", res, state, mode="offline", fallback="none")
    assert state.keywords == []


@covers("question.entities")
def test_question_entities_bad_mode_and_llm_without_one(res):
    with pytest.raises(ConfigError, match="mode must be one of"):
        op("question.entities", res, State("q", 3), mode="psychic")
    with pytest.raises(ConfigError, match="needs an LLM"):
        op("question.entities", res, State("q", 3), mode="llm")


@covers("question.entities")
@pytest.mark.parametrize("mode", ["llm", "auto"])
def test_question_entities_from_the_llm(world, tmp_path, monkeypatch, mode):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    llm = ScriptedLLM(['{"entities": ["Ilsa Quorn", "ilsa quorn", "Teodor Vance"]}'])
    res = make_resources(world, tmp_path, llm=llm)
    state = State("Whom did Ilsa Quorn marry?", 3)
    op("question.entities", res, state, mode=mode)
    assert state.keywords == ["Ilsa Quorn", "Teodor Vance"]
    assert len(llm.calls) == 1
    assert "Whom did Ilsa Quorn marry?" in llm.calls[0][0][-1]["content"]
    assert llm.calls[0][1] == {"temperature": 0}


@covers("question.entities")
def test_question_entities_are_llm_free_unless_asked(world, tmp_path, monkeypatch):
    """An index with an LLM for answers keeps retrieval LLM-free: ``auto`` uses the offline
    rules unless the index was opened with ``llm_in_retrieval=True``; ``llm`` still asks."""
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    llm = ScriptedLLM(['{"entities": ["Teodor Vance"]}'])
    res = make_resources(world, tmp_path, llm=llm, llm_in_retrieval=False)
    state = State("Whom did Ilsa Quorn marry?", 3)
    op("question.entities", res, state, mode="auto")
    assert state.keywords == ["Ilsa Quorn"] and llm.calls == []
    op("question.entities", res, state, mode="llm")
    assert state.keywords == ["Teodor Vance"] and len(llm.calls) == 1


@covers("question.entities")
def test_question_entities_time_out_to_the_offline_rules(world, tmp_path, monkeypatch, caplog):
    """A retrieval-time LLM that hangs is abandoned after ``retrieval_timeout`` seconds."""
    import asyncio
    import time as _time

    class Hanging(ScriptedLLM):
        """Test double: an LLM whose every call hangs for two seconds."""

        async def acomplete(self, messages, **params):
            await asyncio.sleep(2)
            return await super().acomplete(messages, **params)

        def complete(self, messages, **params):
            _time.sleep(2)
            return super().complete(messages, **params)

    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    res = make_resources(world, tmp_path, llm=Hanging(['{"entities": ["X"]}']))
    res.retrieval_timeout = 0.2
    state = State("Whom did Ilsa Quorn marry?", 3)
    start = _time.perf_counter()
    with caplog.at_level("WARNING", logger="hygraph"):
        op("question.entities", res, state, mode="auto")
    assert _time.perf_counter() - start < 1.5
    assert state.keywords == ["Ilsa Quorn"]
    assert "did not answer within 0.2 s" in caplog.text and "offline rules" in caplog.text


@covers("question.entities")
def test_question_entities_noderag_prompt(world, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    llm = ScriptedLLM(['{"elements": ["Teodor Vance", "sculptor"]}', '{"elements": []}'])
    res = make_resources(world, tmp_path, llm=llm)
    state = State("What does Teodor Vance make?", 3)
    op("question.entities", res, state, mode="llm", prompt="noderag")
    assert state.keywords == ["Teodor Vance", "sculptor"]
    state = State("Anything else?", 3)
    op("question.entities", res, state, mode="llm", prompt="noderag")
    assert state.keywords == ["Anything else?"]  # an empty list falls back to the question


@covers("question.entities")
@pytest.mark.parametrize(
    ("prompt", "reply", "fallback", "expected"),
    [
        ("hypergraph", "Sorry, I cannot help with that.", "question", ["Q?"]),
        ("noderag", "Sorry, I cannot help with that.", "question", ["Q?"]),
        ("noderag", "Sorry, I cannot help with that.", "none", []),
        ("hypergraph", RuntimeError("endpoint down"), "question", ["Q?"]),
        ("hypergraph", RuntimeError("endpoint down"), "none", []),
        ("noderag", TimeoutError("slow"), "question", ["Q?"]),
    ],
)
def test_question_entities_llm_failures_fall_back(
    world, tmp_path, monkeypatch, caplog, prompt, reply, fallback, expected
):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    llm = ScriptedLLM([reply])
    res = make_resources(world, tmp_path, llm=llm)
    state = State("Q?", 3)
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        op("question.entities", res, state, mode="llm", prompt=prompt, fallback=fallback)
    assert state.keywords == expected
    assert len(llm.calls) == 1
    if isinstance(reply, Exception) or prompt == "noderag":
        assert "question entities failed" in caplog.text


# --------------------------------------------------------------------------- scoring


def test_select_scores_thresholds_and_orders():
    hits = [("a", 0.9, 5.0), ("b", 0.5, 10.0), ("c", 0.8, 0.0), ("d", 0.6, 10.0)]
    # product: values a 4.5, b 5.0, c 0.0, d 6.0; threshold 4.5 is strict.
    got = select(hits, full=10, threshold=4.5, k=5, threshold_on="product", use_scores=True)
    assert [(s.id, s.value) for s in got] == [("d", 6.0), ("b", 5.0)]
    assert (got[0].cosine, got[0].score) == (0.6, 10.0)
    # Without scores every item counts as full: value = cosine × 10.
    got = select(hits, full=10, threshold=0, k=2, threshold_on="product", use_scores=False)
    assert [(s.id, s.value) for s in got] == [("a", 9.0), ("c", 8.0)]
    # llm_score: the raw score against the threshold, ranking still by the product.
    got = select(hits, full=10, threshold=5, k=5, threshold_on="llm_score", use_scores=True)
    assert [s.id for s in got] == ["d", "b"]
    # cosine: cosine > threshold / full, and an item scored 0 never passes.
    got = select(hits, full=10, threshold=5.5, k=5, threshold_on="cosine", use_scores=True)
    assert [s.id for s in got] == ["d", "a"]
    # Ties order by id.
    tied = [("z", 0.5, 1.0), ("m", 0.5, 1.0)]
    got = select(tied, full=1, threshold=0, k=5, threshold_on="product", use_scores=True)
    assert [s.id for s in got] == ["m", "z"]
    with pytest.raises(ConfigError, match="threshold_on"):
        select(hits, full=1, threshold=0, k=1, threshold_on="median", use_scores=True)


# --------------------------------------------------------------------------- node


@covers("node.vdb")
def test_node_vdb_ranks_entities_by_cosine_times_importance(res, world):
    state = State("Whom did Ilsa Quorn marry? Teodor Vance?", 3)
    state.keywords = ["Ilsa Quorn", "Teodor Vance"]
    op("node.vdb", res, state, k=2, full=100, use_scores="true")
    # Both names share both their words with the joined keywords: equal cosines, so
    # the importance (Teodor 90 > Ilsa 80) decides.
    cos = cosine(world, "Ilsa Quorn, Teodor Vance", "Ilsa Quorn")
    assert cos == pytest.approx(cosine(world, "Ilsa Quorn, Teodor Vance", "Teodor Vance"))
    assert [n.id for n in state.nodes] == [TEODOR, ILSA]
    assert state.nodes[0].value == pytest.approx(cos * 90, rel=1e-4)
    assert state.nodes[1].value == pytest.approx(cos * 80, rel=1e-4)
    assert state.nodes[0].score == 90.0
    # Scores off: every entity is worth ``full``; the higher threshold keeps these two.
    op("node.vdb", res, state, k=5, full=100, threshold=100 * cos - 1e-3, use_scores="false")
    assert sorted(n.id for n in state.nodes) == sorted([ILSA, TEODOR])
    assert all(n.value == pytest.approx(100 * cos, rel=1e-4) for n in state.nodes)
    # auto: the scores count only for an LLM extractor's index.
    op("node.vdb", res, state, k=2, full=100, use_scores="auto")
    assert {n.score for n in state.nodes} == {100.0}


@covers("node.vdb")
def test_node_vdb_auto_scores_with_an_llm_extractor_and_question_fallback(world, tmp_path):
    res = make_resources(world, tmp_path, extractor="llm-nary")
    state = State("Teodor Vance", 3)  # no keywords: the question is the query
    op("node.vdb", res, state, k=1, full=100, use_scores="auto")
    assert [(n.id, n.score) for n in state.nodes] == [(TEODOR, 90.0)]
    assert state.nodes[0].cosine == pytest.approx(1.0, abs=1e-5)


@covers("node.evidence")
def test_node_evidence_retrieved_first_then_members(res, c):
    state = State("q", 3)
    state.nodes = [Scored(TEODOR, 0.7), Scored(ILSA, 0.4)]
    fact = Evidence(
        "fact", "x", 1.0, (c.d1,), id=F_PAINTED,
        metadata={"member_ids": [ZORVAN, ILSA, DUSKMOOR, "ent:ghost"]},
    )  # fmt: skip
    state.evidence["facts"] = [fact]
    op("node.evidence", res, state)
    items = state.evidence["entities"]
    assert [i.id for i in items] == [TEODOR, ILSA, ZORVAN, DUSKMOOR]  # the ghost is gone
    assert [i.score for i in items] == [0.7, 0.4, 0.0, 0.0]
    assert items[0].text == "Teodor Vance (person): A sculptor."
    assert items[3].text == "Duskmoor"  # type "entity" and no description: the bare name
    assert items[0].metadata == {"name": "Teodor Vance", "type": "person", "retrieved": True}
    assert items[2].metadata["retrieved"] is False
    assert items[0].source_ids == (c.d3,)
    op("node.evidence", res, state, into="people")
    assert [i.id for i in state.evidence["people"]] == [TEODOR, ILSA, ZORVAN, DUSKMOOR]


@covers("node.entries")
def test_node_entries_by_type(res, world, c):
    state = embedded(res, "Ilsa Quorn married Teodor Vance.")
    op("node.entries", res, state, k=2, types="S+A")
    assert state.nodes[0].id == U_MARRIED
    assert state.nodes[0].value == pytest.approx(1.0, abs=1e-5)
    assert state.nodes[0].cosine == state.nodes[0].value
    assert len(state.nodes) == 2
    assert state.nodes[1].id in {*UNITS, ATTR}
    op("node.entries", res, state, k=10, types="T")
    assert {n.id for n in state.nodes} == set(world.chunk.values())
    assert state.nodes[0].id == c.d3
    op("node.entries", res, state, k=20)
    assert len(state.nodes) == 4 + len(UNITS) + 2  # T, S, A and H together
    values = [n.value for n in state.nodes]
    assert values == sorted(values, reverse=True)
    with pytest.raises(ConfigError, match="unknown node type"):
        op("node.entries", res, state, types="S+X")


@covers("node.exact")
def test_node_exact_whole_word_matches(res):
    state = State("q", 3)
    state.keywords = ["glass harbor", "Marrowby ART", "quorn", "harb", "Vance Teodor"]
    op("node.exact", res, state)
    # Entities and titles only (the unit texts also say "Glass Harbor"), whole words,
    # phrases in order ("Vance Teodor" is not "Teodor Vance"); sorted ids.
    assert state.subgraph["exact"] == sorted([GLASS, OVER, ILSA])
    state.keywords = ["Quorn", "ilsa quorn", "Marrowby"]
    op("node.exact", res, state, equal=True)
    assert state.subgraph["exact"] == sorted([ILSA, MARROWBY])


# --------------------------------------------------------------------------- relationship


@covers("relationship.vdb")
def test_relationship_vdb_scored_facts(res, world):
    q = "Who commissioned the Glass Harbor mural?"
    state = embedded(res, q)
    op("relationship.vdb", res, state, k=2)
    assert state.relationships[0].id == F_COMMISSIONED
    # Candidates: the k × pool nearest by cosine (commissioned, then painted), each worth
    # cosine × completeness: commissioned ≈ 0.93 × 8 ≈ 7.4, painted ≈ 0.54 × 9 ≈ 4.9.
    cos = {f: cosine(world, q, FACTS[f][0]) for f in (F_COMMISSIONED, F_PAINTED)}
    assert cos[F_PAINTED] > 0.5 and cos[F_PAINTED] * 9 < 5
    op("relationship.vdb", res, state, k=2, full=10, use_scores="true", threshold=5)
    assert [(s.id, s.score) for s in state.relationships] == [(F_COMMISSIONED, 8.0)]
    assert state.relationships[0].value == pytest.approx(cos[F_COMMISSIONED] * 8, rel=1e-4)
    op("relationship.vdb", res, state, k=2, full=10, use_scores="true", threshold=5,
       threshold_on="cosine")  # fmt: skip
    assert [s.id for s in state.relationships] == [F_COMMISSIONED, F_PAINTED]
    assert state.relationships[1].value == pytest.approx(cos[F_PAINTED] * 9, rel=1e-4)
    # The question text works too when no query vector was made.
    state = State(q, 3)
    op("relationship.vdb", res, state, k=1)
    assert [s.id for s in state.relationships] == [F_COMMISSIONED]


@covers("relationship.onehop")
def test_relationship_onehop_order(res, c):
    state = State("q", 3)
    state.relationships = [Scored(F_COMMISSIONED, 0.9)]
    state.nodes = [Scored(ILSA, 0.8), Scored(MARROWBY, 0.5)]
    op("relationship.onehop", res, state)
    items = state.evidence["facts"]
    # Retrieved first; then by reaching entity (Ilsa 0.8 before Marrowby 0.5), and
    # among Ilsa's by completeness (married 7 before mayor 5).
    assert [i.id for i in items] == [F_COMMISSIONED, F_MARRIED, F_MAYOR, F_PAINTED]
    assert [i.score for i in items] == [0.9, 0.8, 0.8, 0.5]
    assert [i.metadata["via"] for i in items] == ["fact", "entity", "entity", "entity"]
    painted = items[3]
    assert painted.text == (
        "Zorvan Keel painted the Glass Harbor mural in Marrowby. "
        "[entities: Zorvan Keel | Glass Harbor | Marrowby]"
    )
    assert painted.metadata["member_ids"] == [ZORVAN, GLASS, MARROWBY]
    assert painted.metadata["completeness"] == 9.0
    assert painted.source_ids == (c.d1,)
    # min_arity drops the two-member facts; budget stops after the first fact.
    op("relationship.onehop", res, state, min_arity=3, into="big")
    assert [i.id for i in state.evidence["big"]] == [F_PAINTED]
    op("relationship.onehop", res, state, budget=1, into="one")
    assert [i.id for i in state.evidence["one"]] == [F_COMMISSIONED]


@covers("relationship.onehop")
def test_relationship_onehop_ties_by_arity_then_id(res):
    state = State("q", 3)
    # Glass Harbor reaches painted (9, 3 members) and commissioned (8, 2);
    # Duskmoor reaches marsh. Equal reach: completeness decides.
    state.nodes = [Scored(GLASS, 0.5), Scored(DUSKMOOR, 0.5)]
    op("relationship.onehop", res, state)
    assert [i.id for i in state.evidence["facts"]] == [F_PAINTED, F_COMMISSIONED, F_MARSH]


# --------------------------------------------------------------------------- chunk


@covers("chunk.vdb")
def test_chunk_vdb(res, world, c):
    q = "Who commissioned the Glass Harbor mural?"
    state = embedded(res, q, top_k=3)
    op("chunk.vdb", res, state, k=2)
    assert [cid for cid, _ in state.chunks][0] == c.d2
    assert len(state.chunks) == 2
    texts = res.chunk_texts([c.d2])
    assert state.chunks[0][1] == pytest.approx(cosine(world, q, texts[c.d2]), rel=1e-4)
    # at_least_top_k searches top_k deep; into=NAME stores a ranking instead.
    op("chunk.vdb", res, state, k=1, at_least_top_k=True, into="dense")
    assert len(state.rankings["dense"]) == 3 and state.rankings["dense"][0] == c.d2
    assert len(state.chunks) == 2
    # threshold keeps scores strictly above it.
    op("chunk.vdb", res, state, k=4, threshold=state.chunks[1][1])
    assert [cid for cid, _ in state.chunks] == [c.d2]
    # if_empty: runs only when no chunks were ranked yet.
    op("chunk.vdb", res, state, k=4, if_empty=True)
    assert len(state.chunks) == 1
    fresh = State(q, 3)  # no query vector: the question is embedded
    op("chunk.vdb", res, fresh, k=4, if_empty=True)
    assert len(fresh.chunks) == 4 and fresh.chunks[0][0] == c.d2


@covers("chunk.bm25")
def test_chunk_bm25(res, c):
    res.layers["bm25"] = BM25Layer()
    state = State("herons in the marsh", 1)
    op("chunk.bm25", res, state)
    assert [cid for cid, _ in state.chunks] == [c.d4]  # positive scores only
    assert state.chunks[0][1] > 0
    state = State("Ilsa Quorn Teodor Vance", 1)
    op("chunk.bm25", res, state, k=1, into="lex")
    assert state.rankings["lex"] == [c.d3]
    op("chunk.bm25", res, state, k=1, into="lex", at_least_top_k=True)
    assert state.rankings["lex"] == [c.d3]
    state.top_k = 5
    op("chunk.bm25", res, state, k=1, into="lex", at_least_top_k=True)
    assert state.rankings["lex"][0] == c.d3 and set(state.rankings["lex"]) == {c.d3, c.d2}


@covers("chunk.from_evidence")
def test_chunk_from_evidence(res, c):
    state = State("q", 3)
    state.evidence["facts"] = [
        Evidence("fact", "a", 1.0, (c.d2, c.d1)),
        Evidence("fact", "b", 0.5, (c.d2,)),
    ]
    state.evidence["entities"] = [Evidence("entity", "e", 1.0, (c.d3, c.d1, c.d4))]
    op("chunk.from_evidence", res, state)
    assert state.chunks == [(c.d2, 1.0), (c.d1, 0.5), (c.d3, 1 / 3)]  # cut at top_k
    op("chunk.from_evidence", res, state, sources="entities")
    assert state.chunks == [(c.d3, 1.0), (c.d1, 0.5), (c.d4, 1 / 3)]
    op("chunk.from_evidence", res, state, sources="facts", if_empty=True)
    assert state.chunks[0] == (c.d3, 1.0)  # not empty: left alone
    # k cuts instead of top_k; into=NAME stores a ranking and leaves the chunks alone.
    op("chunk.from_evidence", res, state, k=4, into="cited")
    assert state.rankings["cited"] == [c.d2, c.d1, c.d3, c.d4]
    assert state.chunks[0] == (c.d3, 1.0)
    op("chunk.from_evidence", res, state, k=1)
    assert state.chunks == [(c.d2, 1.0)]
    op("chunk.from_evidence", res, state, sources="missing")
    assert state.chunks == []


@covers("chunk.evidence")
def test_chunk_evidence(res, c):
    state = State("q", 3)
    state.chunks = [(c.d3, 0.9), ("no-such-chunk", 0.8), (c.d1, 0.4), (c.d2, 0.1)]
    op("chunk.evidence", res, state, k=3)
    items = state.evidence["chunks"]
    assert [(i.id, i.score) for i in items] == [(c.d3, 0.9), (c.d1, 0.4)]
    assert items[0].kind == "chunk"
    assert items[0].text == "Ilsa Quorn\n" + DOCS[2][2]  # the title as a header line
    assert items[0].source_ids == (c.d3,)
    assert items[0].metadata == {"doc_id": "d3"}
    op("chunk.evidence", res, state, k=1, into="top")
    assert [i.id for i in state.evidence["top"]] == [c.d3]


@covers("chunk.walk")
def test_chunk_walk_ranks_the_seeded_facts_chunk_first(res, c):
    state = embedded(res, "herons of the marsh", top_k=4)
    state.relationships = [Scored(F_MARRIED, 0.6)]
    op("chunk.walk", res, state)
    ranked = [cid for cid, _ in state.chunks]
    # The dense search favours the marsh chunk, but only at the chunk_seed weight.
    assert res.search_chunks(state.query, 1)[0].id == c.d4
    assert ranked[0] == c.d3
    assert c.d4 not in ranked or ranked.index(c.d3) < ranked.index(c.d4)
    assert state.rankings["lead"] == ranked
    scores = [s for _, s in state.chunks]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    # Without the dense seeds the marsh chunk is unreachable from the married fact.
    op("chunk.walk", res, state, dense=False)
    ranked = [cid for cid, _ in state.chunks]
    assert ranked[0] == c.d3 and c.d4 not in ranked


@covers("chunk.walk")
def test_chunk_walk_entity_seeds_and_no_seed_fallback(res, c):
    state = embedded(res, "Who is Zorvan Keel?", top_k=2)
    state.nodes = [Scored(PELLOW, 1.0)]
    op("chunk.walk", res, state, dense=False)
    assert state.chunks[0][0] == c.d4  # through the mention edge
    op("chunk.walk", res, state, dense=False, mentions=False)
    # Without mentions an entity reaches chunks only via its facts' provenance.
    assert state.chunks[0][0] == c.d4
    # Seeds outside the graph are ignored; with none left the walk has nothing to rank.
    state = embedded(res, "Who is Zorvan Keel?", top_k=2)
    state.nodes = [Scored("ent:nobody", 1.0)]
    state.relationships = [Scored("fact:nothing", 1.0)]
    op("chunk.walk", res, state, dense=False)
    assert state.chunks == [] and state.rankings["lead"] == []
    # The dense chunks alone seed the walk (each chunk is in the graph).
    op("chunk.walk", res, state)
    assert state.chunks[0][0] == res.search_chunks(state.query, 1)[0].id == c.d1


@covers("chunk.bridge_facts")
def test_chunk_bridge_facts_reaches_the_unnamed_bridge(res, world, c):
    state = embedded(res, BRIDGE_Q)
    state.relationships = [Scored(F_COMMISSIONED, 0.9)]
    assert res.search_chunks(state.query, 1)[0].id == c.d2  # dense alone: the first hop
    # Precondition: married shares a word with the question, mayor none.
    assert cosine(world, BRIDGE_Q, FACTS[F_MARRIED][0]) > cosine(world, BRIDGE_Q, FACTS[F_MAYOR][0])
    op("chunk.bridge_facts", res, state, depth=1)
    # Rankings: dense [d2]; retrieved facts' chunks [d2]; Ilsa Quorn (a member the
    # question does not name; Glass Harbor it names) bridges to married and mayor,
    # whose chunks are [d3, d2]. RRF with k=10, weights 1: d2 = 2/11 + 1/12, d3 = 1/11.
    assert [cid for cid, _ in state.chunks] == [c.d2, c.d3]
    assert state.chunks[0][1] == pytest.approx(2 / 11 + 1 / 12)
    assert state.chunks[1][1] == pytest.approx(1 / 11)
    assert state.rankings["lead"] == [c.d2, c.d3]
    # Weights: dense and retrieved facts off, the bridge hop alone: d3 1/11, d2 1/12.
    op("chunk.bridge_facts", res, state, depth=1, weights="0+0+1")
    assert state.chunks == [(c.d3, pytest.approx(1 / 11)), (c.d2, pytest.approx(1 / 12))]
    # The last weight repeats for later lists: "0+1" weighs the hop 1 too.
    op("chunk.bridge_facts", res, state, depth=1, weights="0+1")
    assert state.chunks == [(c.d2, pytest.approx(1 / 11 + 1 / 12)), (c.d3, pytest.approx(1 / 11))]
    # A hub (more than ``fanout`` facts) is no bridge.
    op("chunk.bridge_facts", res, state, depth=1, fanout=2)
    assert [cid for cid, _ in state.chunks] == [c.d2]


@covers("chunk.bridge_facts")
def test_chunk_bridge_facts_named_members_are_no_bridges(res, c):
    q = "Whom did Ilsa Quorn marry, who commissioned the Glass Harbor mural?"
    state = embedded(res, q)
    state.relationships = [Scored(F_COMMISSIONED, 0.9)]
    op("chunk.bridge_facts", res, state, depth=1, hops=2)
    assert [cid for cid, _ in state.chunks] == [c.d2]


@covers("chunk.bridge_units")
def test_chunk_bridge_units_reaches_the_unnamed_bridge(res, c):
    state = embedded(res, BRIDGE_Q)
    top = res.search_vectors("noderag", state.query, 1)
    assert [h.id for h in top] == [U_COMMISSIONED]  # precondition: the first hop's unit
    op("chunk.bridge_units", res, state, pool=1)
    # Ilsa Quorn is the unnamed entity of the commissioned unit; her other unit is the
    # married one, whose chunk is d3 (never named by the question).
    assert state.rankings["bridge"] == [c.d3]
    op("chunk.bridge_units", res, state, pool=1, fanout=1, into="hub")
    assert state.rankings["hub"] == []  # Ilsa has two units: a hub at fanout 1
    # Units already in the pool are not bridged to.
    op("chunk.bridge_units", res, state, pool=30, into="all")
    assert state.rankings["all"] == []
    named = embedded(res, "Who married Ilsa Quorn, who commissioned the Glass Harbor mural?")
    op("chunk.bridge_units", res, named, pool=1)
    assert named.rankings["bridge"] == []


# --------------------------------------------------------------------------- subgraph


@covers("subgraph.shallow_ppr")
def test_shallow_ppr_quotas_pick_the_strongest_neighbours(res, c):
    state = State("q", 3)
    state.nodes = [Scored(U_MARRIED, 0.9)]
    op("subgraph.shallow_ppr", res, state, quotas={"N": 1, "C": 1}, semantic_edges=False)
    # From the married unit (edges: Ilsa 2, Teodor 1, chunk d3 1), two restart steps:
    # Ilsa 1/8 beats Teodor 1/16 for N and is replaced by her attribute; chunk d3
    # (1/16) beats the two-hop unit and attribute (1/32 each) for C.
    assert state.subgraph["picked"] == [U_MARRIED, c.d3, ATTR]
    assert state.subgraph["walk_scores"] == {
        ILSA: pytest.approx(1 / 8),
        ATTR: pytest.approx(1 / 8),
        c.d3: pytest.approx(1 / 16),
    }
    op("subgraph.shallow_ppr", res, state, quotas={"N": 1, "C": 1}, expand=False)
    assert state.subgraph["picked"] == [U_MARRIED, c.d3]
    op("subgraph.shallow_ppr", res, state, quotas={"N": 2})
    assert state.subgraph["picked"] == [U_MARRIED, ATTR]  # Teodor has no attribute
    assert set(state.subgraph["walk_scores"]) == {ILSA, TEODOR, ATTR}


@covers("subgraph.shallow_ppr")
def test_shallow_ppr_exact_entries_titles_and_mass(res, c):
    state = State("q", 3)
    state.subgraph["exact"] = [OVER]
    op("subgraph.shallow_ppr", res, state, quotas={"O": 1, "C": 0})
    assert state.subgraph["picked"] == [HIGH]  # the title is replaced by its element
    # No entry at all: nothing happens.
    empty = State("q", 3)
    op("subgraph.shallow_ppr", res, empty, quotas={"C": 3})
    assert empty.subgraph == {} and empty.rankings == {}
    # Mass: a chunk's own score plus its units' (d3: 1/16 + 11/16, d2: 1/32 via a unit).
    state = State("q", 3)
    state.nodes = [Scored(U_MARRIED, 0.9)]
    op("subgraph.shallow_ppr", res, state, quotas={}, mass=True)
    assert state.subgraph["picked"] == [U_MARRIED]
    assert state.rankings["walk"] == [c.d3, c.d2]


# --------------------------------------------------------------------------- merge


@covers("merge.dbsf")
def test_merge_dbsf_hand_computed(res):
    state = State("q", 3)
    state.rankings = {"a": ["x", "y"], "b": ["y", "z", "w"]}
    state.ranking_scores = {"a": [3.0, 1.0], "b": [10.0, 4.0, 4.0]}
    op("merge.dbsf", res, state, rankings=["a", "b"])
    # a: mean 2, sd 1 → x (3+1)/6, y (1+1)/6. b: mean 6, sd √8 → (s - 6 + 3√8) / 6√8.
    b = [(s - 6 + 3 * 8**0.5) / (6 * 8**0.5) for s in (10.0, 4.0)]
    assert [i for i, _ in state.chunks] == ["y", "x", "z", "w"]  # z, w tie: first seen first
    assert [s for _, s in state.chunks] == pytest.approx([1 / 3 + b[0], 2 / 3, b[1], b[1]])
    # A ranking kept without scores fuses by 1/rank; weights scale a ranking's share.
    state.rankings["c"] = ["w", "x"]
    op("merge.dbsf", res, state, rankings=["c"], into="fused")
    assert state.rankings["fused"] == ["w", "x"]
    op("merge.dbsf", res, state, rankings=["a", "b"], weights=[3.0, 1.0], into="ranking")
    assert state.context.ranking[:2] == ["x", "y"]  # x 3·2/3 beats y 3·1/3 + 0.74


def test_dbsf_lets_a_decisive_hit_lead_where_rrf_does_not():
    """A rare code matched by BM25 stands far above the other BM25 scores; the dense
    scores of near-duplicate records are all alike. DBSF keeps that, RRF cannot."""
    from hygraph.operators.fusion import distribution_score_fusion, reciprocal_rank_fusion

    dense = [(f"d{i}", 0.62 - 0.002 * i) for i in range(10)]  # the code's record is d4
    lexical = [("d4", 14.0)] + [(f"d{i}", 3.0 - 0.1 * i) for i in range(10) if i != 4]
    assert distribution_score_fusion([dense, lexical])[0][0] == "d4"
    assert reciprocal_rank_fusion([[c for c, _ in dense], [c for c, _ in lexical]])[0][0] != "d4"
    # Statistics over the first `depth` items: a deeper list leaves the top's scores alone.
    deeper = lexical + [(f"e{i}", 0.5) for i in range(40)]
    top = distribution_score_fusion([dense, lexical], depth=len(lexical))[:3]
    assert distribution_score_fusion([dense, deeper], depth=len(lexical))[:3] == top


@covers("merge.rrf")
def test_merge_rrf_hand_computed(res):
    state = State("q", 3)
    state.rankings = {"a": ["x", "y", "z"], "b": ["y", "w"]}
    op("merge.rrf", res, state, rankings=["a", "b"], k=1, weights=[1.0, 2.0])
    # x 1/2; y 1/3 + 2/2; z 1/4; w 2/3.
    assert [i for i, _ in state.chunks] == ["y", "w", "x", "z"]
    assert [s for _, s in state.chunks] == pytest.approx([4 / 3, 2 / 3, 1 / 2, 1 / 4])
    op("merge.rrf", res, state, rankings=["a", "b"], k=1, depths=[2, 0], into="fused")
    assert state.rankings["fused"] == ["y", "x", "w"]  # y 1/3+1/2, x 1/2, w 1/3
    op("merge.rrf", res, state, rankings=["b", "a"], into="ranking")
    assert state.context.ranking == ["y", "x", "w", "z"]  # y 1/61+1/62, x 1/61, w 1/62
    # Ties keep the order of first appearance.
    state.rankings = {"p": ["m", "n"], "q": ["n", "m"]}
    op("merge.rrf", res, state, rankings=["p", "q"])
    assert [i for i, _ in state.chunks] == ["m", "n"]
    # require: a missing or empty ranking skips the fusion; a missing name is empty.
    op("merge.rrf", res, state, rankings=["p"], require="nothing")
    assert [i for i, _ in state.chunks] == ["m", "n"]
    op("merge.rrf", res, state, rankings=["nothing", "q"], require="q")
    assert [i for i, _ in state.chunks] == ["n", "m"]


def _evidence(c: SimpleNamespace) -> dict[str, list[Evidence]]:
    return {
        "facts": [
            Evidence("fact", "Ilsa Quorn married Teodor Vance.", 0.9, (c.d3,), id=F_MARRIED),
            Evidence("fact", "Ilsa Quorn commissioned the mural.", 0.5, (c.d2, c.d1)),
        ],
        "entities": [Evidence("entity", "Ilsa Quorn", 0.8, (c.d2, c.d4), id=ILSA)],
        "chunks": [Evidence("chunk", "passage", 0.3, (c.d1,), id=c.d1)],
    }


@covers("merge.context")
def test_merge_context_sections_budgets_ranking_lead(res, c):
    state = State("q", 3)
    state.evidence = _evidence(c)
    state.rankings["lead"] = [c.d4, c.d3]
    op(
        "merge.context", res, state, sections="entities+facts", titles={"facts": "Relationships"},
        budgets={"facts": 50}, ranking="facts+entities", lead="lead",
    )  # fmt: skip
    sections = state.context.sections
    assert [s.title for s in sections] == ["Entities", "Relationships"]
    assert [s.budget for s in sections] == [None, 50]
    assert sections[1].items == state.evidence["facts"]
    assert state.context.ranking == [c.d4, c.d3, c.d3, c.d2, c.d1, c.d2, c.d4]
    assert state.context.chunk_ranking() == [c.d4, c.d3, c.d2, c.d1]
    # No ranking: passages rank as the context cites them; a list of names works too.
    state = State("q", 3)
    state.evidence = _evidence(c)
    op("merge.context", res, state, sections=["chunks", "facts"])
    assert [s.title for s in state.context.sections] == ["Chunks", "Facts"]
    assert state.context.ranking is None
    assert state.context.chunk_ranking() == [c.d1, c.d3, c.d2]
    with pytest.raises(ConfigError, match="no evidence named 'communities'"):
        op("merge.context", res, state, sections="facts, communities")


@covers("merge.context")
def test_merge_context_budget_caps_rendering(res, c):
    state = State("q", 3)
    long = " ".join(["word"] * 200)
    state.evidence = {"facts": [Evidence("fact", long, 1.0, (c.d1,))] * 3}
    op("merge.context", res, state, sections="facts", budgets={"facts": 30})
    rendered = state.context.render(budget=2000)
    assert rendered.truncated and rendered.tokens <= 31
    assert rendered.whole == []


@covers("merge.lead")
def test_merge_lead(res, c):
    state = State("q", 3)
    state.context.add("Facts", _evidence(c)["facts"])
    state.rankings["walk"] = [c.d4, c.d1]
    op("merge.lead", res, state)
    assert state.context.chunk_ranking() == [c.d4, c.d1, c.d3, c.d2]
    state.rankings["other"] = [c.d2]
    op("merge.lead", res, state, ranking="other")
    assert state.context.chunk_ranking() == [c.d2, c.d4, c.d1, c.d3]
    op("merge.lead", res, state, ranking="missing")
    assert state.context.chunk_ranking() == [c.d2, c.d4, c.d1, c.d3]


def _typed_state(c: SimpleNamespace) -> State:
    state = State("q", 3)
    state.nodes = [Scored(U_MARRIED, 0.9)]
    state.subgraph["picked"] = [
        U_MARRIED, U_COMMISSIONED, ILSA, c.d1, ATTR, HIGH, OVER, "unit:gone", "nobody-chunk",
    ]  # fmt: skip
    state.subgraph["walk_scores"] = {U_COMMISSIONED: 0.2, c.d1: 0.1, ATTR: 0.3, HIGH: 0.05}
    return state


@covers("merge.typed_context")
def test_merge_typed_context_groups_and_ranking(res, c):
    state = _typed_state(c)
    op("merge.typed_context", res, state)
    sections = state.context.sections
    assert [s.title for s in sections] == [
        "High-level elements", "Entity attributes", "Semantic units", "Source passages",
    ]  # fmt: skip
    high, attr, units, passages = (s.items for s in sections)
    assert [(i.id, i.kind, i.score) for i in high] == [(HIGH, "high_level", 0.05)]
    assert [(i.id, i.kind, i.score) for i in attr] == [(ATTR, "attribute", 0.3)]
    assert attr[0].metadata == {"type": "A", "via": "ppr", "rank": 4, "name": "Ilsa Quorn"}
    assert [(i.id, i.score, i.metadata["via"]) for i in units] == [
        (U_MARRIED, 0.9, "vector"), (U_COMMISSIONED, 0.2, "ppr"),
    ]  # fmt: skip
    assert units[0].text == UNITS[U_MARRIED][0]
    assert [(i.id, i.score) for i in passages] == [(c.d1, 0.1)]
    assert passages[0].metadata == {"doc_id": "d1", "type": "T", "via": "ppr", "rank": 3}
    # S and T rank passages in picked order; A and H do not.
    assert state.context.ranking == [c.d3, c.d2, c.d1]
    # Another order, and the entries stand in when no walk ran.
    state = State("q", 3)
    state.nodes = [Scored(U_PAINTED, 0.7), Scored(ATTR, 0.6)]
    op("merge.typed_context", res, state, order="S+A")
    assert [s.title for s in state.context.sections] == ["Semantic units", "Entity attributes"]
    assert state.context.ranking == [c.d1]


@covers("merge.passage_section")
def test_merge_passage_section_replaces_passages(res, c):
    state = _typed_state(c)
    op("merge.typed_context", res, state)
    op("merge.passage_section", res, state, k=2)
    sections = state.context.sections
    assert [s.title for s in sections] == [
        "High-level elements", "Entity attributes", "Semantic units", "Source passages",
    ]  # fmt: skip
    passages = sections[-1].items
    assert [(i.id, i.score) for i in passages] == [(c.d3, 1.0), (c.d2, 0.5)]
    assert passages[0].metadata == {"doc_id": "d3", "type": "T", "via": "ranking"}
    assert passages[0].text == "Ilsa Quorn\n" + DOCS[2][2]
    # No passage section yet: one is added in its place in ``order``; sections not in
    # the order, or empty, are dropped.
    state = State("q", 3)
    state.context = Context()
    state.context.add("Semantic units", [Evidence("unit", "u", 1.0, (c.d4,))])
    state.context.add("Entity attributes", [])
    state.context.ranking = [c.d1, c.d4]
    op("merge.passage_section", res, state, k=5, order="T+S")
    assert [s.title for s in state.context.sections] == ["Source passages", "Semantic units"]
    assert [i.id for i in state.context.sections[0].items] == [c.d1, c.d4]


# --------------------------------------------------------------------------- recipes


@dataclass
class Config:
    top_k: int = 5
    k: int = 2
    use_bm25: bool = False
    mode: str = "Fast"


@pytest.mark.parametrize(
    ("steps", "layers", "message"),
    [
        ([Step("question.embed"), Step("chunk.nope")], [], "step 2 (chunk.nope): unknown operator"),
        ([Step("chunk.vdb", {"kk": 1})], ["chunks"], "step 1 (chunk.vdb): unknown parameter(s) kk"),
        ([Step("merge.rrf")], [], "step 1 (merge.rrf): missing parameter(s) rankings"),
        ([Step("chunk.bm25")], ["chunks"], "step 1 (chunk.bm25) needs layer(s) bm25"),
        (
            [Step("chunk.vdb", {"k": "$depth"})],
            ["chunks"],
            "step 1 (chunk.vdb): no config field 'depth'",
        ),
        (
            [Step("merge.rrf", {"rankings": ["a", "$lists"]})],
            [],
            "step 1 (merge.rrf): no config field 'lists'",
        ),
        (
            [Step("question.embed", when="mode=fast & !fancy")],
            [],
            "step 1 (question.embed): no config field 'fancy'",
        ),
        (  # every clause is checked, even after one that is false for this config
            [Step("question.embed", when="use_bm25 & !fancy")],
            [],
            "step 1 (question.embed): no config field 'fancy'",
        ),
    ],
)
def test_validate_names_the_bad_step(steps, layers, message):
    with pytest.raises(ConfigError) as err:
        recipe.validate(steps, layers, Config())
    text = str(err.value)
    assert message in text
    assert "\n" not in text


def test_validate_accepts_a_good_recipe():
    steps = [
        Step("question.embed"),
        Step("chunk.vdb", {"k": "$k", "into": "dense"}),
        Step("chunk.bm25", {"k": "$top_k", "into": "lex"}, when="use_bm25"),
        Step("merge.rrf", {"rankings": ["dense", "lex"]}),
    ]
    recipe.validate(steps, ["chunks", "bm25"], Config())
    assert steps[2].describe() == "chunk.bm25(k=$top_k, into=lex)  [when use_bm25]"


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        (None, True),
        ("", True),
        ("use_bm25", False),
        ("!use_bm25", True),
        ("mode=fast", True),  # values compare case-insensitively
        ("mode = slow", False),
        ("mode!=fast", False),
        ("mode!=slow", True),
        ("use_bm25=false", True),
        ("k=2 & mode=fast", True),
        ("!use_bm25 & mode=slow", False),
        ("use_bm25 & mode=fast", False),
    ],
)
def test_applies(when, expected):
    assert recipe.applies(when, Config()) is expected


def test_applies_unknown_field_names_the_step():
    with pytest.raises(ConfigError, match=r"step 3 \(chunk.vdb\): no config field 'nope'"):
        recipe.applies("nope", Config(), 3, "chunk.vdb")


@covers("question.embed", "chunk.vdb", "merge.rrf")
def test_run_traces_executed_steps(res):
    steps = [
        Step("question.embed"),
        Step("chunk.vdb", {"k": "$k", "into": "dense"}),
        Step("chunk.bm25", {"into": "lex"}, when="use_bm25"),
        Step("chunk.vdb", {"k": "$top_k", "into": "deep"}, when="mode=fast"),
        Step("merge.rrf", {"rankings": ["dense", "deep"]}),
    ]
    state = State("Who commissioned the Glass Harbor mural?", 3)
    recipe.run(res, state, steps, Config())
    trace = state.trace
    assert [t.name for t in trace] == ["question.embed", "chunk.vdb", "chunk.vdb", "merge.rrf"]
    assert trace[1].params == {"k": 2, "into": "dense"}
    assert trace[2].params == {"k": 3, "into": "deep"}  # $top_k is the query's
    assert [t.added for t in trace] == [
        {}, {"rankings.dense": 2}, {"rankings.deep": 3}, {"chunks": 3},
    ]  # fmt: skip
    assert all(t.seconds >= 0 and t.llm_calls == 0 and t.tokens == 0 for t in trace)
    assert trace[3].to_dict()["name"] == "merge.rrf"
    assert len(state.chunks) == 3


@covers("question.entities")
def test_run_traces_llm_calls_and_tokens(world, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    reply = '{"entities": ["Ilsa Quorn", "Glass Harbor"]}'
    res = make_resources(world, tmp_path, llm=ScriptedLLM([reply]))
    state = State("Did Ilsa Quorn commission the Glass Harbor mural?", 3)
    recipe.run(res, state, [Step("question.entities", {"mode": "llm"})], Config())
    (step,) = state.trace
    assert step.llm_calls == 1
    assert step.tokens == 100 + len(reply) // 4
    assert step.added == {"keywords": 2}


# --------------------------------------------------------------------------- registry


def test_every_operator_has_a_one_line_summary():
    for item in registry.available_operators():
        lines = (item.fn.__doc__ or "").strip().splitlines()
        assert item.summary, f"{item.name} has no docstring"
        assert item.summary == lines[0].strip()
        assert len(lines) == 1 or not lines[1].strip(), f"{item.name}: summary spans lines"
        assert item.summary.endswith("."), item.name


def test_registry_unknown_operator_lists_the_known_ones():
    with pytest.raises(ConfigError, match="unknown operator 'x.y'; known: .*chunk.vdb"):
        registry.get_operator("x.y")
    assert registry.get_operator("chunk.bm25").needs == ("bm25",)
    assert registry.get_operator("merge.rrf").params["k"] == 60


def test_every_operator_is_covered_by_a_test():
    names = {item.name for item in registry.available_operators()}
    covered = covered_everywhere()
    assert covered == names, (
        f"untested: {sorted(names - covered)}; unknown: {sorted(covered - names)}"
    )


# ------------------------------------------------- relationships, communities, paths (KG)


@pytest.fixture
def kg(tmp_path, monkeypatch) -> SimpleNamespace:
    """A small knowledge graph of its own: two triangles of entities joined by one weak
    relation, and an n-ary fact; relation vectors and communities built by their layers."""
    from hygraph.layers.communities import Communities
    from hygraph.layers.relation_vectors import RelationVectors

    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    store = GraphStore(tmp_path / "kg.sqlite")
    doc = Document("k1", "Ada founded Bell. Bell is in Cobb. Dara met Eve and Finn.")
    chunks = Chunker(1200, 100)(doc)
    store.add_document(doc, chunks)
    cid = chunks[0].id
    names = {"a": "Ada", "b": "Bell", "c": "Cobb", "d": "Dara", "e": "Eve", "f": "Finn"}
    store.upsert_nodes(
        [Node(f"ent:{k}", NodeKind.ENTITY, v, f"{v} text", {}, [cid]) for k, v in names.items()]
        + [Node("fact:1", NodeKind.FACT, None, "Ada and Cobb met at Bell.", {"score": 8}, [cid])]
    )
    triangle = [("a", "b", "founded"), ("b", "c", "located in"), ("a", "c", "visited"),
                ("d", "e", "met"), ("e", "f", "met"), ("d", "f", "met")]  # fmt: skip
    store.upsert_edges(
        [Edge(f"ent:{s}", f"ent:{t}", EdgeKind.RELATION, 3.0,
              {"label": label, "entries": {cid: [[label, f"{s} {label} {t}", 1.0]]}}, [cid])
         for s, t, label in triangle]
        + [Edge("ent:c", "ent:d", EdgeKind.RELATION, 0.1, {"label": "near", "entries": {}}, [])]
        + [Edge("fact:1", f"ent:{m}", EdgeKind.INCIDENCE, 1.0, {}, [cid]) for m in "acb"]
    )  # fmt: skip
    w = World(store, open_vector_index(tmp_path / "qdrant"), {"k1": cid}, WordEmbedder())
    res = make_resources(w, tmp_path / "index")
    relations = RelationVectors()
    relations.embed(res, [(s, d, EdgeKind.RELATION) for s, d, _ in
                          store.edge_rows([EdgeKind.RELATION])])  # fmt: skip
    communities = Communities()
    res.layers.update({"relation-vectors": relations, "communities": communities})
    assert communities.update(res) == 0 and communities.pending(res) == []
    return SimpleNamespace(res=res, store=store, chunk=cid, relations=relations,
                           communities=communities)  # fmt: skip


@covers("relationship.of_nodes", "relationship.evidence")
def test_relationships_of_nodes_binary_and_nary_alike(kg):
    state = State(question="q", top_k=3)
    state.nodes = [Scored("ent:a", 1.0), Scored("ent:b", 0.5)]
    op("relationship.of_nodes", kg.res, state, k=4)
    # a|b joins both retrieved entities (1 + 0.5); the fact reaches a and b (1 + 0.5) too;
    # ties break by id; then the single-entity ones (a|c: 1.0, b|c: 0.5).
    assert [r.id for r in state.relationships] == [
        "ent:a|ent:b", "fact:1", "ent:a|ent:c", "ent:b|ent:c"
    ]  # fmt: skip
    assert [r.value for r in state.relationships] == [1.5, 1.5, 1.0, 0.5]
    op("relationship.evidence", kg.res, state)
    texts = [e.text for e in state.evidence["relationships"]]
    assert texts[0] == "Ada founded Bell"
    assert texts[1] == "Ada and Cobb met at Bell. [entities: Ada | Bell | Cobb]"
    assert all(e.source_ids == (kg.chunk,) for e in state.evidence["relationships"])


@covers("relationship.relation_vdb")
def test_relation_vectors_search_and_delete(kg):
    from hygraph.graph.store import DeleteResult

    state = State(question="Ada founded Bell", top_k=3)
    op("relationship.relation_vdb", kg.res, state, k=2)
    assert state.relationships[0].id == "ent:a|ent:b"
    assert state.relationships[0].data["members"] == ("ent:a", "ent:b")
    kg.store.delete_edges([("ent:a", "ent:b", EdgeKind.RELATION)])
    kg.relations.delete(kg.res, DeleteResult("k1", [], [], ["ent:a"]))
    assert kg.res.vectors.count("relations") == 6
    op("relationship.relation_vdb", kg.res, state, k=1)
    assert state.relationships[0].id != "ent:a|ent:b"


@covers("community.of_nodes", "community.evidence")
def test_communities_layer_and_operators(kg):
    comms = kg.store.nodes_of_kind(NodeKind.COMMUNITY)
    groups = sorted(sorted(n.data["members"]) for n in comms)
    assert groups == [["ent:a", "ent:b", "ent:c"], ["ent:d", "ent:e", "ent:f"]]
    assert all(n.data["level"] == 0 and n.text for n in comms)
    state = State(question="q", top_k=3)
    state.nodes = [Scored("ent:a", 1.0), Scored("ent:b", 1.0), Scored("ent:d", 1.0)]
    op("community.of_nodes", kg.res, state, k=5)
    first = kg.store.get_nodes([state.communities[0].id])[state.communities[0].id]
    assert [c.value for c in state.communities] == [2.0, 1.0]
    assert "ent:a" in first.data["members"]
    op("community.evidence", kg.res, state)
    assert state.evidence["communities"][0].text.startswith("community 0.")
    assert "members: Ada" in state.evidence["communities"][0].text or "Bell" in (
        state.evidence["communities"][0].text
    )
    # Unchanged graph: nothing to do; a new relation makes the layer stale, and it recomputes.
    assert kg.communities.pending(kg.res) == []
    kg.store.upsert_edges([Edge("ent:c", "ent:e", EdgeKind.RELATION, 5.0, {"label": "x"})])
    assert kg.communities.pending(kg.res) == ["*"]
    kg.communities.update(kg.res)
    assert kg.communities.pending(kg.res) == []
    kg.communities.reset(kg.res)
    assert kg.store.nodes_of_kind(NodeKind.COMMUNITY) == []


def test_hierarchical_leiden_splits_large_clusters():
    import random

    from hygraph.graph.algorithms.leiden import hierarchical_communities

    # Three dense blocks of 20 (half their pairs linked) joined by single edges.
    rng, edges = random.Random(0), []
    for b in range(3):
        nodes = [f"b{b}n{i}" for i in range(20)]
        edges += [(u, v, 1.0) for i, u in enumerate(nodes) for v in nodes[i + 1 :]
                  if rng.random() < 0.5]  # fmt: skip
    edges += [("b0n0", "b1n0", 1.0), ("b1n1", "b2n1", 1.0)]
    flat = hierarchical_communities(edges, max_cluster_size=100)
    blocks = {(level, cluster) for _, level, cluster, _ in flat}
    assert {level for level, _ in blocks} == {0} and len(blocks) == 3
    split = hierarchical_communities(edges, max_cluster_size=10)
    assert max(level for _, level, _, _ in split) >= 1
    assert all(parent is not None for _, level, _, parent in split if level > 0)
    assert split == hierarchical_communities(edges, max_cluster_size=10)  # seeded
    assert hierarchical_communities([]) == []


def test_shortest_paths_hand_checked():
    from hygraph.graph.algorithms.paths import connecting_paths, shortest_path

    edges = [("a", "b", 1.0), ("b", "c", 1.0), ("a", "c", 5.0), ("d", "e", 1.0)]
    assert shortest_path(edges, "a", "c") == ["a", "b", "c"]  # two short hops beat one long
    assert shortest_path(edges, "a", "d") == [] and shortest_path(edges, "a", "zz") == []
    assert connecting_paths(edges, ["a", "c", "d"]) == [["a", "b", "c"]]
    assert connecting_paths(edges, ["a", "c"], max_hops=1) == []
