"""ToG (Think-on-Graph): the beam search on a hand-made graph, through ``GraphIndex``, and
both agent methods (``tog``, ``dalk``) through the CLI, LlamaIndex, LangChain and the
LangGraph tools.

The hand-made world is :mod:`agent_world` (its docstring has the edge table); every
expected frontier, path and call below is worked out from it by hand. The LLM is a
scripted double (:mod:`agent_doubles`, over :class:`~doubles.ScriptedLLM`) keyed on each
prompt's first line; it also plays replies that never say "enough", junk, empty
replies, failing calls and choices of unknown candidates.
"""

from __future__ import annotations

import json
from pathlib import Path as FilePath
from typing import Any

import pytest
from agent_doubles import agent_llm, choices, kinds
from agent_world import QUESTION, B, C, D, F, G, H, J, K, build_world
from corpora import HARBOUR_DOCS
from doubles import WordEmbedder

from hygraph import GraphIndex
from hygraph.errors import ConfigError
from hygraph.ingest import Document
from hygraph.methods.base import get_method, parse_method_spec
from hygraph.operators.agents import agent_run
from hygraph.operators.paths import PATHS
from hygraph.operators.state import State

AGENT_METHODS = ("tog", "dalk")
FINN_QUESTION = "Who owned the mooring of the ship Finn sailed on?"


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    return build_world(tmp_path, vectors=True)


def ner(*names: str) -> str:
    return json.dumps({"named_entities": list(names)})


def steps(state: State) -> list[str]:
    return [s.name for s in state.trace]


def tog(**options: Any) -> Any:
    return get_method("tog")(options)


# --------------------------------------------------------------------------- the beam search


def _bell_or_cobb(text: str) -> str:
    # Dara: 1 "… met Dara", 2 "Dara visited …", 3 "Dara works at …".
    # Bell (from Dara): 1 based in, 2 founded, 3 located in, 4 works at (one tail each).
    # Cobb (from Dara): 1 "… based in Cobb", 2 "… located in Cobb" (both lead to Bell).
    if "Entity: Dara" in text:
        return choices((3, 0.7), (2, 0.3))
    return choices((3, 1.0)) if "Entity: Bell" in text else choices((2, 1.0))


def test_tog_beam_search_by_hand(world):
    llm = agent_llm(ner=ner("Dara"), relation=_bell_or_cobb,
                    enough=lambda t: json.dumps({"enough": "located in" in t}))  # fmt: skip
    state = tog().run(world.resources(llm), QUESTION)
    # Depth 1: Dara's relations "works at" (0.7) and "visited" (0.3) each lead to one
    # entity (no entity call): frontier Bell 0.7, Cobb 0.3; the check says no.
    # Depth 2: Bell → Cobb by "located in", Cobb → Bell by "located in" (score 1 each);
    # the check now sees "located in" and says yes.
    assert kinds(llm) == ["ner", "relation", "enough", "relation", "relation", "enough"]
    assert steps(state) == [
        "question.entities", "node.link", "node.seeds",
        "relationship.agent", "node.agent", "subgraph.agent_check",
        "relationship.agent", "node.agent", "subgraph.agent_check",
        "subgraph.path_evidence", "merge.context"]  # fmt: skip
    assert [n.id for n in state.nodes] == [C, B]
    assert [p.nodes for p in state.subgraph[PATHS]] == [(D, B), (D, C), (D, B, C), (D, C, B)]
    run = agent_run(state)
    assert (run.calls, run.failures, run.stop) == (5, 0, "enough evidence")
    # The context: the two deepest paths (the one-hop ones lie inside them).
    (section,) = state.context.sections
    assert section.title == "Reasoning paths"
    assert [i.text for i in section.items] == [
        "Dara -[works at]-> Bell -[located in]-> Cobb",
        "Dara -[visited]-> Cobb <-[located in]- Bell"]  # fmt: skip
    # Passages: the chunks of each path's edges, hop by hop.
    assert state.context.chunk_ranking() == [world.d2, world.d1, world.d3]


def test_tog_replies_that_never_say_stop_end_at_depth(world):
    llm = agent_llm(ner=ner("Finn"), relation=choices((1, 1.0)), entity=choices((1, 1.0)),
                    enough='{"enough": false}')  # fmt: skip
    state = tog().run(world.resources(llm), FINN_QUESTION)
    # Finn → Gale → Iris → Jon, one relation and one entity at each step (no calls); the
    # check is asked after depths 1 and 2, never after the last.
    assert kinds(llm) == ["ner", "enough", "enough"]
    assert steps(state).count("relationship.agent") == 3
    assert steps(state).count("subgraph.agent_check") == 2
    assert [i.text for i in state.context.items] == [
        "Finn -[sailed on]-> Gale -[moored at]-> Iris -[owned by]-> Jon"]  # fmt: skip
    assert agent_run(state).stop == ""
    # Deeper: Kai at depth 4; at depth 5 nothing is left to follow and the search stops.
    state = tog(depth=5).run(world.resources(llm, "deeper"), FINN_QUESTION)
    assert [n.id for n in state.nodes] == [K]
    assert steps(state).count("relationship.agent") == 5
    assert agent_run(state).stop == "no relation chosen"
    assert state.context.items[0].metadata["entity_ids"] == [F, G, "ent:iris", J, K]


@pytest.mark.parametrize("reply", [
    "not json at all", '{"choices": [{"id": 9, "score": 1.0}]}', "", '{"choices": []}',
    RuntimeError("endpoint down"),
])  # fmt: skip
def test_tog_stops_cleanly_on_useless_relation_replies(world, reply):
    llm = agent_llm(ner=ner("Dara"), relation=reply)
    state = tog().run(world.resources(llm), QUESTION)
    assert kinds(llm) == ["ner", "relation"]
    assert agent_run(state).stop == "no relation chosen"
    assert state.context.items == [] and state.context.chunk_ranking() == []


def test_tog_question_entities_fall_back_and_entity_junk_scores_equally(world):
    # The NER reply is junk: the offline rules find "Bell". Bell's relations: 1 "… works
    # at Bell" (Dara, Hal), then based in, founded, located in; "works at" is chosen and
    # the junk entity reply scores Dara and Hal equally (0.5 each, candidate order).
    llm = agent_llm(ner="??", relation=choices((1, 1.0)), entity="junk")
    state = tog(depth=1).run(world.resources(llm), "Who works at Bell?")
    assert state.keywords == ["Bell"]
    assert kinds(llm) == ["ner", "relation", "entity"]
    assert [(n.id, n.value) for n in state.nodes] == [(D, 0.5), (H, 0.5)]
    assert agent_run(state).failures == 1


def test_tog_budget_stops_the_search(world):
    llm = agent_llm(ner=ner("Dara"), relation=_bell_or_cobb, enough='{"enough": false}')
    state = tog(max_calls=1).run(world.resources(llm), QUESTION)
    # One relation call at depth 1; the check does not fit: the search ends there.
    assert kinds(llm) == ["ner", "relation"]
    assert agent_run(state).stop == "call budget (1) spent"
    assert [i.text for i in state.context.items] == ["Dara -[works at]-> Bell",
                                                     "Dara -[visited]-> Cobb"]  # fmt: skip


def test_tog_without_an_llm_fails_with_one_line(world):
    with pytest.raises(ConfigError, match="tog needs an LLM at query time") as err:
        tog().run(world.res, QUESTION)
    assert len(str(err.value).splitlines()) == 1


def test_tog_passages_option_adds_the_chunks(world):
    llm = agent_llm(ner=ner("Dara"), relation=_bell_or_cobb,
                    enough=lambda t: json.dumps({"enough": "located in" in t}))  # fmt: skip
    state = tog(passages=True, top_k=2).run(world.resources(llm), QUESTION)
    titles = [s.title for s in state.context.sections]
    assert titles == ["Reasoning paths", "Sources"]
    assert [i.id for i in state.context.sections[1].items] == [world.d2, world.d1]


def test_config_validation_and_registration():
    for name in AGENT_METHODS:
        cls = get_method(name)
        cls.check()
        assert cls.query_llm.startswith("required")
    assert tog().config.depth == 3 and tog().config.width == 3
    assert parse_method_spec("tog:depth=2,width=4,passages=true") == (
        "tog", {"depth": 2, "width": 4, "passages": True})  # fmt: skip
    for bad in ({"depth": 0}, {"width": 0}, {"query_entities": "magic"}, {"max_calls": -1}):
        with pytest.raises(ConfigError):
            get_method("tog").Config(**bad)
    with pytest.raises(ConfigError):
        get_method("dalk").Config(max_hops=0)


def test_describe_names_every_default_source(capsys):
    from hygraph.cli import main
    from hygraph.methods.describe import describe

    for name in AGENT_METHODS:
        info = describe(name)
        assert [f["name"] for f in info["fields"] if not f["source"]] == [], name
    sources = {f["name"]: f["source"] for f in describe("tog")["fields"]}
    assert sources["depth"] == sources["width"] == "framework code"
    assert sources["query_entities"] == "paper" and sources["max_calls"] == "ours"
    assert main(["methods", "--describe", "tog"]) == 0
    out = capsys.readouterr().out
    assert "relationship.agent" in out and "node.agent" in out and "steps 4-6 repeat" in out
    assert main(["methods", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["tog"]["query_llm"].startswith("required")
    assert rows["dalk"]["query_llm"].startswith("required")


# --------------------------------------------------------------------------- through the index


def harbour_docs() -> list[Document]:
    return [Document(k, text, title=title) for k, (title, text) in HARBOUR_DOCS.items()]


HARBOUR_QUESTION = "Who commanded Gannet's Reach on the Northern Shelf Expedition?"


def harbour_llm() -> Any:
    """Question entities, then always the first relation, entity and path; never enough;
    any other prompt (the answer) gets "Renna Osk."."""

    def first(text: str) -> str:
        single = text.startswith("Question:") and "\n" not in text.strip()
        return ner("Renna Osk", "Gannet's Reach") if single else "Renna Osk."

    return agent_llm(ner=first, relation=choices((1, 0.6), (2, 0.4)), entity=choices((1, 1.0)),
                     path=choices((1, 1.0)), enough='{"enough": false}')  # fmt: skip


@pytest.fixture(scope="module")
def harbour_index(tmp_path_factory) -> FilePath:
    path = tmp_path_factory.mktemp("agents") / "index"
    with GraphIndex(path, embedder=WordEmbedder(256), progress=False) as index:
        index.insert(harbour_docs(), methods=list(AGENT_METHODS))
    return path


@pytest.mark.parametrize("name", AGENT_METHODS)
def test_through_graph_index_with_costs_and_cache(harbour_index, name, monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    llm = harbour_llm()
    with GraphIndex(harbour_index, embedder=WordEmbedder(256), llm=llm, progress=False) as index:
        result = index.query(HARBOUR_QUESTION, name, answer=True)
        calls = len(llm.calls)
        again = index.retrieve(HARBOUR_QUESTION, name)
    assert result.answer == "Renna Osk."
    assert result.passages and "expedition" in result.passages
    title = "## Reasoning paths" if name == "tog" else "## Paths"
    assert title in result.context
    assert result.usage["llm_calls"] == calls and calls >= 3
    assert sum(s["llm_calls"] for s in result.trace) == calls - 1  # the answer is the last
    assert result.usage["prompt_tokens"] == 100 * calls  # 100 a call in the scripted double
    # The same retrieval again: every agent reply comes from the LLM cache.
    asked = result.usage["llm_calls"] + result.usage["llm_cached_calls"] - 1  # not the answer
    assert again.usage["llm_calls"] == 0 and again.usage["llm_cached_calls"] == asked
    assert again.context == result.context and len(llm.calls) == calls
    with GraphIndex(harbour_index, embedder=WordEmbedder(256), progress=False) as index:
        with pytest.raises(ConfigError, match=f"{name} needs an LLM"):
            index.retrieve(HARBOUR_QUESTION, name)


@pytest.mark.parametrize("name", AGENT_METHODS)
def test_insert_and_delete_reach_the_agents(tmp_path, name, monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    docs = harbour_docs()
    expedition = [d for d in docs if d.id == "expedition"]
    others = [d for d in docs if d.id != "expedition"]
    llm = harbour_llm()
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(256), llm=llm, progress=False) as index:
        index.insert(others, methods=[name])
        assert "expedition" not in index.retrieve(HARBOUR_QUESTION, name).passages
        index.insert(expedition)
        assert "expedition" in index.retrieve(HARBOUR_QUESTION, name).passages
        index.delete("expedition")
        assert "expedition" not in index.retrieve(HARBOUR_QUESTION, name).passages


# --------------------------------------------------------------------------- CLI and frameworks

_FRAMEWORK: dict[str, FilePath] = {}


def _framework_index(factory: pytest.TempPathFactory, embedder: Any) -> FilePath:
    """One index of the harbour corpus with the bundled MiniLM and both agent methods."""
    if "path" not in _FRAMEWORK:
        path = factory.mktemp("agent-frameworks") / "index"
        with GraphIndex(path, embedder=embedder, progress=False) as index:
            index.insert(harbour_docs(), methods=list(AGENT_METHODS))
        _FRAMEWORK["path"] = path
    return _FRAMEWORK["path"]


@pytest.mark.parametrize("name", AGENT_METHODS)
def test_cli_query_without_an_llm_is_one_line(tmp_path_factory, minilm, monkeypatch, capsys,
                                              name):  # fmt: skip
    from hygraph.cli import main

    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    path = _framework_index(tmp_path_factory, minilm)
    code = main(["query", "--index", str(path), "--method", name, HARBOUR_QUESTION])
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1 and f"{name} needs an LLM" in err, err


@pytest.mark.parametrize("name", AGENT_METHODS)
def test_through_llama_index_langchain_and_langgraph(tmp_path_factory, minilm, monkeypatch, name):
    pytest.importorskip("llama_index.core")
    pytest.importorskip("langchain_core")
    pytest.importorskip("langgraph")
    from hygraph.passages import retrieve_passages
    from langchain_hygraph import HyGraphRetriever as LCRetriever
    from langchain_hygraph.graph import make_method_tools, tool_name
    from llama_index_hygraph import HyGraphIndex

    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    path = _framework_index(tmp_path_factory, minilm)
    li = HyGraphIndex.from_persist_dir(path, llm=harbour_llm())
    try:
        nodes = li.as_retriever(method=name, similarity_top_k=2).retrieve(HARBOUR_QUESTION)
        core = retrieve_passages(li.graph_index, HARBOUR_QUESTION, name, 2).passages
        assert nodes and [n.node.node_id for n in nodes] == [p.id for p in core]
        assert all(n.node.metadata["method"] == name for n in nodes)
    finally:
        li.graph_index.close()
    lc = LCRetriever.from_persist_dir(path, method=name, llm=harbour_llm(), k=2)
    try:
        found = lc.invoke(HARBOUR_QUESTION)
        assert [d.page_content for d in found] == [n.node.get_content() for n in nodes]
        (tool,) = make_method_tools(lc, [name])
        assert tool.name == tool_name(name) and f"`{name}`" in tool.description
        call = {"name": tool.name, "args": {"query": HARBOUR_QUESTION}, "id": "c1",
                "type": "tool_call"}  # fmt: skip
        message = tool.invoke(call)
        assert message.content.strip() and {d.metadata["method"] for d in message.artifact} == {
            name}  # fmt: skip
    finally:
        lc.close()
    bare = LCRetriever.from_persist_dir(path, method=name, k=2)
    try:
        with pytest.raises(ConfigError, match=f"{name} needs an LLM"):
            bare.invoke(HARBOUR_QUESTION)
    finally:
        bare.close()
