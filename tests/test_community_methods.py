"""GraphRAG local and global, VGraphRAG and CheapRAG: community operators, map-reduce
answers, the four methods through ``GraphIndex``, the CLI and both frameworks.

The operator tests run on a hand-made graph written straight into a store: five
entities and six communities with hand-set levels, ratings, reports and source chunks:

=====  =====  ======  =======  ============  ===========================================
comm   level  rating  members  chunks        report
=====  =====  ======  =======  ============  ===========================================
c0     0      5       A B C    d1 d2 d3      "Ada, Bell and Cobb": the founding story
c1     0      8       D E      d2 d3         "Dara and Eve": the meeting at the market
c2     1      9       A B      d1 d2         "Ada and Bell": the shipyard
c3     1      2       C        d1 d2 d3      "Cobb": the town
c4     3      10      A B      d1            too fine a level for level <= 2
c5     2      -1      D        d2            rated below zero
=====  =====  ======  =======  ============  ===========================================

Every expected order below is worked out by hand from this table. Vectors come from
the bag-of-words :class:`~doubles.WordEmbedder`; LLM replies come from the scripted
double :class:`~doubles.ScriptedLLM` (well-formed, malformed, empty and failing ones).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from corpora import HARBOUR_DOCS
from doubles import ScriptedLLM, WordEmbedder
from operator_coverage import covers
from worlds import store_of_texts, word_resources

from hygraph import GraphIndex
from hygraph.errors import ConfigError
from hygraph.generation import generate
from hygraph.generation.map_reduce import (
    NO_ANSWER,
    MapReduceOptions,
    batches,
    map_reduce,
    render_unit,
)
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import Edge, GraphStore, Node
from hygraph.ingest import Document
from hygraph.ingest.tokenizer import default_tokenizer
from hygraph.methods.base import get_method, parse_method_spec
from hygraph.models.base import LLMResponse
from hygraph.operators import registry
from hygraph.operators.state import Scored, State
from hygraph.prompts.map_reduce import (
    MAP_SYSTEM,
    REDUCE_SYSTEM,
    parse_map_points,
    parse_reduce,
)
from hygraph.prompts.replies import ParseError
from hygraph.resources import Resources
from hygraph.retrieval.evidence import Evidence
from hygraph.vectors import open_vector_index

METHODS = ("graphrag-local", "graphrag-global", "vgraphrag", "cheaprag")
A, B, C, D, E = (f"ent:{n}" for n in ("ada", "bell", "cobb", "dara", "eve"))
NAMES = {A: "Ada", B: "Bell", C: "Cobb", D: "Dara", E: "Eve"}
TEXTS = {
    "d1": "Ada founded Bell in Cobb.",
    "d2": "Bell is in Cobb. Dara works at Bell.",
    "d3": "Eve met Dara in Cobb.",
}
#: id → (level, rating, members, documents, report text)
COMMUNITIES = {
    "c0": (0, 5.0, [A, B, C], ["d1", "d2", "d3"], "Ada, Bell and Cobb: the founding story."),
    "c1": (0, 8.0, [D, E], ["d2", "d3"], "Dara and Eve: the meeting at the market."),
    "c2": (1, 9.0, [A, B], ["d1", "d2"], "Ada and Bell: the shipyard " + "keel " * 30),
    "c3": (1, 2.0, [C], ["d1", "d2", "d3"], "Cobb: the town."),
    "c4": (3, 10.0, [A, B], ["d1"], "Ada and Bell at a fine level."),
    "c5": (2, -1.0, [D], ["d2"], "Dara alone."),
}


def op(name: str, res: Resources, state: State, **params: Any) -> None:
    """Run the registered operator ``name`` on ``state``."""
    registry.get_operator(name).fn(res, state, **params)


def make_resources(store: GraphStore, vectors: Any, path: Path, *, llm: Any = None) -> Resources:
    return word_resources(store, vectors, path, llm=llm, dim=512)


@pytest.fixture
def world(tmp_path, monkeypatch) -> SimpleNamespace:
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    store, chunk = store_of_texts(tmp_path / "kg.sqlite", TEXTS)
    store.upsert_nodes(Node(e, NodeKind.ENTITY, n, f"{n} text", {"type": "entity"}, [chunk["d1"]])
                       for e, n in NAMES.items())  # fmt: skip
    nodes, edges = [], []
    for cid, (level, rating, members, docs, text) in COMMUNITIES.items():
        report = {"title": text.split(":")[0], "summary": text, "rating": rating, "findings": []}
        data = {"level": level, "size": len(members), "members": members, "report": report,
                "title": report["title"], "rating": rating}  # fmt: skip
        nodes.append(Node(cid, NodeKind.COMMUNITY, report["title"], text, data,
                          [chunk[d] for d in docs]))  # fmt: skip
        edges += [Edge(m, cid, EdgeKind.IN_COMMUNITY, 1.0) for m in members]
    store.upsert_nodes(nodes)
    store.upsert_edges(edges)
    vectors = open_vector_index(tmp_path / "qdrant")
    res = make_resources(store, vectors, tmp_path / "index")
    payloads = [{"kind": "community", "level": c[0]} for c in COMMUNITIES.values()]
    res.upsert_vectors("community_reports", list(COMMUNITIES),
                       [c[4] for c in COMMUNITIES.values()], payloads)  # fmt: skip
    return SimpleNamespace(res=res, store=store, vectors=vectors, path=tmp_path, **chunk)


def ids(items: list[Scored]) -> list[str]:
    return [i.id for i in items]


def tokens(cid: str) -> int:
    return default_tokenizer().count(COMMUNITIES[cid][4])


# --------------------------------------------------------------------------- community.entity


@covers("community.entity")
def test_entity_ranks_by_entities_held_then_rating_within_levels(world):
    state = State("q", 4, nodes=[Scored(A, 1.0), Scored(B, 0.9), Scored(D, 0.8)])
    op("community.entity", world.res, state, budget=0)
    # c2 and c0 hold two of the entities (rating 9 before 5); c1 and c5 one (8 before -1);
    # c3 holds none; c4 is at level 3.
    assert ids(state.communities) == ["c2", "c0", "c1", "c5"]
    assert [c.value for c in state.communities] == [2.0, 2.0, 1.0, 1.0]
    assert state.communities[0].data == {"level": 1, "rating": 9.0}
    op("community.entity", world.res, state, level=0, budget=0)
    assert ids(state.communities) == ["c0", "c1"]
    op("community.entity", world.res, state, level=-1, budget=0)
    assert ids(state.communities)[0] == "c4"  # rating 10, once every level counts


def test_entity_cuts_at_the_report_budget_and_keeps_at_least_one(world):
    state = State("q", 4, nodes=[Scored(A, 1.0), Scored(B, 0.9), Scored(D, 0.8)])
    op("community.entity", world.res, state, budget=tokens("c2") + tokens("c0"))
    assert ids(state.communities) == ["c2", "c0"]
    op("community.entity", world.res, state, budget=tokens("c2") + tokens("c0") - 1)
    assert ids(state.communities) == ["c2"]
    op("community.entity", world.res, state, budget=1)
    assert ids(state.communities) == ["c2"]  # the first report alone is over budget: kept
    op("community.entity", world.res, state, budget=0, k=3)
    assert ids(state.communities) == ["c2", "c0", "c1"]
    op("community.entity", world.res, state, budget=0, single=True)
    assert ids(state.communities) == ["c2"]
    empty = State("q", 4)
    op("community.entity", world.res, empty)
    assert empty.communities == []


# --------------------------------------------------------------------------- community.layer


@covers("community.layer")
def test_layer_takes_levels_by_occurrence_then_rating(world):
    state = State("q", 4)
    op("community.layer", world.res, state)
    # Levels <= 2: c0 c1 c2 c3 c5; c5 is rated below 0. Occurrence (chunks / 3): c0 and
    # c3 1, c1 and c2 2/3; ties by rating: c0 (5) before c3 (2), c2 (9) before c1 (8).
    assert ids(state.communities) == ["c0", "c3", "c2", "c1"]
    assert [round(c.value, 3) for c in state.communities] == [1.0, 1.0, 0.667, 0.667]
    assert state.communities[2].data == {"level": 1, "rating": 9.0, "occurrence": 2 / 3}
    # The 512 cut comes first, by occurrence alone (ties by id): c0, c3, then c1.
    op("community.layer", world.res, state, max_communities=3)
    assert ids(state.communities) == ["c0", "c3", "c1"]
    op("community.layer", world.res, state, level=0)
    assert ids(state.communities) == ["c0", "c1"]
    op("community.layer", world.res, state, min_rating=-5)
    assert ids(state.communities)[-1] == "c5"
    op("community.layer", world.res, state, min_rating=6)
    assert ids(state.communities) == ["c2", "c1"]


def test_layer_ignores_the_question_unless_ordered_by_vector(world):
    first, second = State("Who met Eve at the market?", 4), State("Which keel?", 4)
    op("community.layer", world.res, first)
    op("community.layer", world.res, second)
    assert ids(first.communities) == ids(second.communities)
    op("community.layer", world.res, first, order="vector")
    op("community.layer", world.res, second, order="vector")
    assert ids(first.communities)[0] == "c1"  # "Dara and Eve: the meeting at the market."
    assert ids(second.communities)[0] == "c2"  # "Ada and Bell: the shipyard keel keel ..."
    assert sorted(ids(first.communities)) == ["c0", "c1", "c2", "c3"]
    with pytest.raises(ConfigError, match="order"):
        op("community.layer", world.res, first, order="random")


def test_community_evidence_shows_reports_with_their_chunks(world):
    state = State("q", 4)
    op("community.layer", world.res, state, level=0)
    op("community.evidence", world.res, state)
    items = state.evidence["communities"]
    assert [i.text for i in items] == [COMMUNITIES["c0"][4], COMMUNITIES["c1"][4]]
    assert items[1].source_ids == tuple(sorted([world.d2, world.d3]))
    assert items[0].metadata["rating"] == 5.0


# --------------------------------------------------------------------------- map-reduce prompts


@pytest.mark.parametrize(
    ("reply", "points"),
    [
        ('{"points": [{"description": "Ada founded Bell [1].", "score": 90}]}',
         [("Ada founded Bell [1].", 90.0)]),
        ('```json\n{"Points": [{"Answer": "x", "Importance": "85 out of 100"},'
         ' {"text": "y"}]}\n```', [("x", 85.0), ("y", 1.0)]),
        ('{"points": []}', []),
        ('[{"point": "z", "score": 250}, {"description": "w", "score": -3}]',
         [("z", 100.0), ("w", 0.0)]),
        ('<think>hmm</think>{"answer": "Josiah Aldercott", "confidence": 70}',
         [("Josiah Aldercott", 70.0)]),
        ('{"result": {"points": ["Bare text point"]}}', [("Bare text point", 1.0)]),
    ],
)  # fmt: skip
def test_parse_map_points_reads_loose_replies(reply, points):
    assert parse_map_points(reply) == points


@pytest.mark.parametrize(
    "reply",
    ["", "I cannot help with that.", "{}", '{"title": "no points here"}',
     '{"points": [{"score": 50}, {"description": ""}]}', "<think>only thinking"],
)  # fmt: skip
def test_parse_map_points_refuses_junk(reply):
    with pytest.raises(ParseError):
        parse_map_points(reply)


def test_parse_reduce():
    assert parse_reduce("<think>x</think> Josiah Aldercott. ") == "Josiah Aldercott."
    for junk in ("", "   ", "<think>never finished"):
        with pytest.raises(ParseError):
            parse_reduce(junk)


def _items(*texts: str) -> list[Evidence]:
    return [Evidence("community" if n % 2 == 0 else "chunk", t, 1.0, ("c",), id=f"i{n}",
                     metadata={"title": f"T{n}", "rating": 5.0})
            for n, t in enumerate(texts)]  # fmt: skip


def test_batches_pack_in_order_within_the_budget():
    items = _items("alpha " * 10, "beta " * 10, "gamma " * 10, "delta " * 200)
    cost = [default_tokenizer().count(render_unit(n, i)) for n, i in enumerate(items, 1)]
    groups = batches(items, cost[0] + cost[1])
    assert [[n for n, _ in g] for g in groups] == [[1, 2], [3], [4]]  # 4 alone, over budget
    assert [[n for n, _ in g] for g in batches(items, 0)] == [[1], [2], [3], [4]]
    assert render_unit(1, items[0]).startswith("[1] (community report, rating 5) T0\n")
    assert render_unit(2, items[1]).startswith("[2] (passage)\n")


# --------------------------------------------------------------------------- map-reduce runs


def _map_reply(points: list[tuple[str, float]]) -> str:
    return json.dumps({"points": [{"description": t, "score": s} for t, s in points]})


def _responder(map_replies: dict[str, Any], reduce_reply: Any = "Josiah Aldercott."):
    """Replies by what a call is: a map call by a marker in its pieces, else the reduce."""

    def respond(messages: list[dict[str, str]], params: dict[str, Any]) -> Any:
        if messages[0]["content"] == REDUCE_SYSTEM:
            return reduce_reply
        assert messages[0]["content"] == MAP_SYSTEM
        return next(r for marker, r in map_replies.items() if marker in messages[-1]["content"])

    return respond


def test_map_reduce_skips_malformed_empty_and_failing_map_replies(world, caplog):
    llm = ScriptedLLM(responder=_responder({
        "alpha": _map_reply([("Aldercott founded the yard [1].", 60), ("Minor [1].", 20)]),
        "beta": "Sorry, I cannot produce JSON today.",
        "gamma": RuntimeError("server down"),
        "delta": _map_reply([("The founder was Josiah Aldercott [4].", 95),
                             ("Irrelevant [4].", 0)]),
        "epsilon": '{"points": []}',
    }))  # fmt: skip
    res = make_resources(world.store, world.vectors, world.path / "llm", llm=llm)
    items = _items("alpha", "beta", "gamma", "delta", "epsilon")
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        out = map_reduce(res, "Who founded the yard?", items, MapReduceOptions(map_budget=0))
    assert out.answer == "Josiah Aldercott." and out.reduced
    assert out.map_calls == 5 and out.skipped == 2 and len(llm.calls) == 6
    assert "map reply 2 of 5 skipped" in caplog.text and "map call 3 of 5 failed" in caplog.text
    # Points scored 0 are dropped; the rest go to the reduce call best first.
    assert out.points == [
        ("The founder was Josiah Aldercott [4].", 95.0, 4),
        ("Aldercott founded the yard [1].", 60.0, 1),
        ("Minor [1].", 20.0, 1),
    ]
    reduce_prompt = llm.calls[-1][0][-1]["content"]
    assert reduce_prompt.index("Josiah") < reduce_prompt.index("Aldercott founded")
    assert "Irrelevant" not in reduce_prompt
    assert "--- Reader 4 (score 95) ---" in reduce_prompt
    usage = res.tracker.total()
    assert usage.llm_calls == 5 and usage.llm_failed_calls == 0  # the failure raised before
    assert usage.prompt_tokens == 500  # the scripted double counts 100 per call


def test_map_reduce_groups_pieces_and_cuts_the_points_at_the_reduce_budget(world):
    llm = ScriptedLLM(responder=_responder({
        "alpha": _map_reply([("First point " + "x " * 30, 80), ("Second point", 70)]),
    }))  # fmt: skip
    res = make_resources(world.store, world.vectors, world.path / "llm", llm=llm)
    items = _items("alpha", "beta", "gamma")
    out = map_reduce(res, "q?", items, MapReduceOptions(map_budget=10_000, reduce_budget=5))
    assert out.map_calls == 1  # all three pieces fit one group
    assert "[1] (community report" in llm.calls[0][0][-1]["content"]
    assert "[3] (community report" in llm.calls[0][0][-1]["content"]
    assert [p[0][:11] for p in out.points] == ["First point"]  # over budget, but the first stays


def test_map_reduce_without_points_makes_no_reduce_call(world):
    llm = ScriptedLLM(responder=_responder({"alpha": '{"points": []}', "beta": "junk"}))
    res = make_resources(world.store, world.vectors, world.path / "llm", llm=llm)
    out = map_reduce(res, "q?", _items("alpha", "beta"), MapReduceOptions(map_budget=0))
    assert out.answer == NO_ANSWER and not out.reduced and len(llm.calls) == 2
    assert map_reduce(res, "q?", [], MapReduceOptions()).answer == NO_ANSWER


def test_map_reduce_empty_reduce_reply_and_no_llm(world, caplog):
    llm = ScriptedLLM(responder=_responder({"alpha": _map_reply([("p", 50)])}, reduce_reply=""))
    res = make_resources(world.store, world.vectors, world.path / "llm", llm=llm)
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        out = map_reduce(res, "q?", _items("alpha"))
    assert out.answer == NO_ANSWER and "reduce reply is unusable" in caplog.text
    failing = ScriptedLLM(responder=_responder({"alpha": _map_reply([("p", 50)])},
                                               reduce_reply=RuntimeError("boom")))  # fmt: skip
    res = make_resources(world.store, world.vectors, world.path / "fail", llm=failing)
    with pytest.raises(RuntimeError, match="boom"):
        map_reduce(res, "q?", _items("alpha"))
    with pytest.raises(ConfigError, match="needs an LLM"):
        map_reduce(world.res, "q?", _items("alpha"))
    with pytest.raises(ConfigError, match="resources"):
        generate(llm, "map_reduce", "plain", "q?", "ctx")


# --------------------------------------------------------------------------- methods


def harbour_docs() -> list[Document]:
    return [Document(k, text, title=title) for k, (title, text) in HARBOUR_DOCS.items()]


QUESTION = "Who founded the shipyard that built Gannet's Reach?"


@pytest.fixture(scope="module")
def harbour_index(tmp_path_factory) -> Path:
    """The harbour corpus with the four methods built offline (no LLM: extractive reports)."""
    path = tmp_path_factory.mktemp("harbour") / "index"
    with GraphIndex(path, embedder=WordEmbedder(256), progress=False) as index:
        index.insert(harbour_docs(), methods=list(METHODS))
    return path


def open_index(path: Path, llm: Any = None) -> GraphIndex:
    return GraphIndex(path, embedder=WordEmbedder(256), llm=llm, progress=False)


def test_methods_are_registered_valid_and_described():
    for name in METHODS:
        get_method(name).check()
    assert get_method("graphrag-global").generation == "map_reduce"
    assert get_method("cheaprag").generation == "map_reduce"
    assert get_method("vgraphrag").generation == "direct"
    assert "map-reduce" in get_method("cheaprag").query_llm
    assert get_method("graphrag-local").query_llm == "optional"
    assert parse_method_spec("graphrag-global:map_budget=0,order=vector") == (
        "graphrag-global", {"map_budget": 0, "order": "vector"})  # fmt: skip
    with pytest.raises(ConfigError):
        get_method("graphrag-local").Config(occurrence="random")
    with pytest.raises(ConfigError):
        get_method("cheaprag").Config(sections="chunks+entities+bogus")


def test_retrieval_offline_for_all_four(harbour_index, monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with open_index(harbour_index) as index:
        results = {m: index.retrieve(QUESTION, m) for m in METHODS}
        vanilla_like = index.search_chunks(QUESTION, 4)
    local = results["graphrag-local"]
    assert [s["name"] for s in local.trace][:4] == [
        "node.vdb", "relationship.kg_onehop", "chunk.occurrence", "community.entity"]  # fmt: skip
    for name in ("graphrag-local", "vgraphrag"):
        titles = [line for line in results[name].context.splitlines() if line.startswith("## ")]
        assert titles[:1] == ["## Reports"] and "## Entities" in titles, name
        assert "## Sources" in titles and "## Relationships" in titles, name
    # VGraphRAG and CheapRAG rank passages from the chunk VDB first.
    nearest = [h.id for h in vanilla_like]
    for name in ("vgraphrag", "cheaprag"):
        assert results[name].chunks[: len(nearest)] == nearest, name
        assert results[name].passages[0] == "harbour"
    # GGraphRAG's retrieval is every community of levels <= 2, whatever the question.
    glob = results["graphrag-global"]
    assert [s["name"] for s in glob.trace] == ["community.layer", "community.evidence",
                                               "merge.context"]  # fmt: skip
    assert all(i.kind == "community" for i in glob.items) and glob.chunks
    with open_index(harbour_index) as index:
        other = index.retrieve("When is the Lantern Tide Festival held?", "graphrag-global")
        vector = index.retrieve("When is the Lantern Tide Festival held?",
                                "graphrag-global:order=vector")  # fmt: skip
        communities = len(index.store.nodes_of_kind(NodeKind.COMMUNITY))
    assert other.chunks == glob.chunks
    assert "Lantern" in vector.items[0].text and "festival" in vector.passages
    assert 0 < len(glob.items) <= communities


def test_graphrag_local_ranks_the_entities_chunks_and_top_k_only_cuts(harbour_index, monkeypatch):
    # The framework's LGraphRAG: 5 entities by vector, their chunks in entity order
    # (entity_occurrence), no chunk count before the final cut, only the token budget.
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with open_index(harbour_index) as index:
        few = index.retrieve(QUESTION, "graphrag-local", top_k=1)
        many = index.retrieve(QUESTION, "graphrag-local", top_k=3)
        state = index.method("graphrag-local").run(index.resources, QUESTION, 3)
    params = {s["name"]: s["params"] for s in many.trace}
    assert params["node.vdb"]["k"] == 5
    assert params["chunk.occurrence"] == {"k": 0, "mode": "entity", "budget": 4000, "related": 5}
    # Entity order: every chunk of the first entity comes before the second entity's.
    cites = index_of_first_citing_entity(harbour_index, state)
    assert [cites[c] for c, _ in state.chunks] == sorted(cites[c] for c, _ in state.chunks)

    def sources(result):
        return [i.id for i in result.items if i.kind == "chunk"]

    assert len(sources(few)) == 1 and sources(many)[:1] == sources(few)
    assert sources(many) == [c for c, _ in state.chunks][:3]
    assert many.chunks[0] == few.chunks[0]


def index_of_first_citing_entity(path: Path, state: State) -> dict[str, int]:
    """Each ranked chunk's position of the first retrieved entity citing it."""
    with open_index(path) as index:
        nodes = index.store.get_nodes([h.id for h in state.nodes])
    first: dict[str, int] = {}
    for n, hit in enumerate(state.nodes):
        for chunk_id in nodes[hit.id].sources:
            first.setdefault(chunk_id, n)
    return first


def test_answers_need_an_llm_with_one_clear_line(
    tmp_path_factory, minilm, harbour_index, monkeypatch, capsys
):
    from hygraph.cli import main

    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with open_index(harbour_index) as index:
        for name in ("graphrag-global", "cheaprag"):
            with pytest.raises(ConfigError, match="answering needs an LLM"):
                index.query(QUESTION, name, answer=True)
    path = _framework_index(tmp_path_factory, minilm)
    assert main(["query", "--index", str(path), "--method", "cheaprag", QUESTION]) == 0
    assert "## Sources" in capsys.readouterr().out  # retrieval alone needs no LLM
    code = main(["query", "--index", str(path), "--method", "cheaprag", "--answer", QUESTION])
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1 and "needs an LLM" in err, err
    main(["methods"])
    listing = capsys.readouterr().out
    line = next(x for x in listing.splitlines() if x[2:].startswith("graphrag-global"))
    assert "map-reduce" in line


def _scripted_answers(good: str = "Josiah Aldercott.") -> ScriptedLLM:
    """Map replies: a helpful point for pieces naming the founder, a malformed reply for
    pieces about the festival, nothing for the rest; the reduce returns ``good``."""

    def respond(messages: list[dict[str, str]], params: dict[str, Any]) -> Any:
        if messages[0]["content"] == REDUCE_SYSTEM:
            return good
        pieces = messages[-1]["content"]
        if "Josiah" in pieces:
            return _map_reply([("Josiah Aldercott founded Aldercott Shipyard.", 90)])
        if "Lantern" in pieces:
            return "not json at all"
        return '{"points": []}'

    return ScriptedLLM(responder=respond)


@pytest.mark.parametrize("name", ["graphrag-global", "cheaprag"])
def test_map_reduce_answers_through_the_index_with_costs(harbour_index, name, caplog):
    llm = _scripted_answers()
    with open_index(harbour_index, llm=llm) as index, caplog.at_level(logging.WARNING):
        result = index.query(QUESTION, name, answer=True)
        calls = len(llm.calls)
        pieces = len(result.items) if name == "graphrag-global" else None
        again = index.query(QUESTION, name, answer=True)
    assert result.answer == "Josiah Aldercott."
    assert result.usage["llm_calls"] == calls and calls >= 2
    assert result.usage["prompt_tokens"] == 100 * calls  # 100 a call in the scripted double
    reduce_prompt = llm.calls[calls - 1][0][-1]["content"]
    assert "Josiah Aldercott founded" in reduce_prompt
    if name == "cheaprag":
        # CheapRAG maps every report and every chunk alone: 4 + 4, then one reduce.
        assert calls == 4 + 4 + 1
        assert any("(passage)" in c[0][-1]["content"] for c in llm.calls[: calls - 1])
    else:
        assert pieces and calls < pieces + 1  # reports are grouped within 16,384 tokens
    # The same query again comes from the LLM cache, except map replies that were
    # unusable: those were not cached and are asked again.
    assert again.answer == result.answer
    retried = len(llm.calls) - calls
    assert again.usage["llm_calls"] == retried < calls
    assert again.usage["llm_cached_calls"] + retried == calls


def test_map_reduce_answer_when_every_map_reply_fails(harbour_index):
    def respond(messages: list[dict[str, str]], params: dict[str, Any]) -> Any:
        if messages[0]["content"] == REDUCE_SYSTEM:
            raise AssertionError("no reduce call expected")
        return LLMResponse(text="", prompt_tokens=10, completion_tokens=0)

    llm = ScriptedLLM(responder=respond)
    with open_index(harbour_index, llm=llm) as index:
        # (another question than the other tests', whose replies are in the LLM cache)
        result = index.query("Who led the expedition?", "cheaprag:top_k=2,community_top_k=1",
                             answer=True)  # fmt: skip
    assert result.answer == NO_ANSWER and len(llm.calls) == 3
    assert result.usage["llm_calls"] == 3 and result.usage["prompt_tokens"] == 30


def test_direct_answer_for_local_methods(harbour_index):
    llm = ScriptedLLM(["Josiah Aldercott.", "Josiah Aldercott."])
    with open_index(harbour_index, llm=llm) as index:
        for name in ("graphrag-local", "vgraphrag"):
            assert index.query(QUESTION, name, answer=True).answer == "Josiah Aldercott."
    assert len(llm.calls) == 2 and "## Reports" in llm.calls[0][0][-1]["content"]


def test_insert_and_delete_refresh_the_communities(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    docs = harbour_docs()
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(256), progress=False) as index:
        index.insert(docs[:3], methods=["cheaprag"])
        before = index.retrieve("When is the Lantern Tide Festival held?", "cheaprag")
        assert "festival" not in before.passages
        index.insert(docs[3:])
        after = index.retrieve("When is the Lantern Tide Festival held?", "cheaprag")
        assert after.passages[0] == "festival"
        assert any("Lantern" in i.text for i in after.items if i.kind == "community")
        index.delete("festival")
        gone = index.retrieve("When is the Lantern Tide Festival held?", "cheaprag")
        assert "festival" not in gone.passages
        assert not any("Lantern" in i.text for i in gone.items if i.kind == "community")


# --------------------------------------------------------------------------- frameworks


@pytest.mark.parametrize("name", METHODS)
def test_through_llama_index_and_langchain(tmp_path_factory, minilm, name):
    pytest.importorskip("llama_index.core")
    pytest.importorskip("langchain_core")
    from hygraph.passages import retrieve_passages
    from langchain_hygraph import HyGraphRetriever as LCRetriever
    from llama_index_hygraph import HyGraphIndex

    path = _framework_index(tmp_path_factory, minilm)
    li = HyGraphIndex.from_persist_dir(path)
    try:
        nodes = li.as_retriever(method=name, similarity_top_k=3).retrieve(QUESTION)
        core = retrieve_passages(li.graph_index, QUESTION, name, 3).passages
        assert nodes and [n.node.node_id for n in nodes] == [p.id for p in core]
        assert nodes[0].node.metadata["method"] == name
    finally:
        li.graph_index.close()
    lc = LCRetriever.from_persist_dir(path, method=name, k=3)
    try:
        found = lc.invoke(QUESTION)
        assert found and all(d.metadata["method"] == name for d in found)
        assert [d.page_content for d in found] == [n.node.get_content() for n in nodes]
    finally:
        lc.close()


_FRAMEWORK: dict[str, Path] = {}


def _framework_index(factory: pytest.TempPathFactory, embedder: Any) -> Path:
    """One index of the harbour corpus with the bundled MiniLM and the four methods."""
    if "path" not in _FRAMEWORK:
        path = factory.mktemp("frameworks") / "index"
        with GraphIndex(path, embedder=embedder, progress=False) as index:
            index.insert(harbour_docs(), methods=list(METHODS))
        _FRAMEWORK["path"] = path
    return _FRAMEWORK["path"]
