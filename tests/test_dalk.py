"""DALK: k-hop paths and neighbours of the question's entities, filtered by an LLM.

On the hand-made world of :mod:`agent_world` (its docstring has the edge table), with
a scripted LLM double (:mod:`agent_doubles`, over :class:`~doubles.ScriptedLLM`) that
plays good replies, junk, empty choices, unknown ids and failing calls. The question
names Eve, Ada and Cobb; worked out by hand:

* KhopPath from Eve: Cobb is nearest (Eve-Dara-Cobb), then from Cobb, Ada
  (Cobb-Bell-Ada); the two join into Eve-Dara-Cobb-Bell-Ada;
* Onehop: Bell (reached from Ada and Cobb: 2, relation degree 4) and Dara (from Eve
  and Cobb: 2, degree 3), in that order.

The CLI and framework tests of both agent methods are in ``test_tog.py``.
"""

from __future__ import annotations

import json

import pytest
from agent_doubles import agent_llm, choices, kinds
from agent_world import A, B, C, D, E, build_world

from hygraph.errors import ConfigError
from hygraph.methods.base import get_method
from hygraph.operators.agents import agent_run

QUESTION = "How are Eve, Ada and Cobb connected?"
NER = json.dumps({"named_entities": ["Eve", "Ada", "Cobb"]})
PATH = "Eve -[met]-> Dara -[visited]-> Cobb <-[located in]- Bell <-[founded]- Ada"
NEIGHBOUR_DARA = "Eve -[met]-> Dara; Cobb <-[visited]- Dara"
NEIGHBOUR_BELL = "Ada -[founded]-> Bell; Cobb <-[located in]- Bell"


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    return build_world(tmp_path, vectors=True)


def dalk(**options):
    return get_method("dalk")(options)


def sections(state) -> dict[str, list[str]]:
    return {s.title: [i.text for i in s.items] for s in state.context.sections}


def test_dalk_by_hand(world):
    llm = agent_llm(ner=NER, entity=choices((2, 1.0)), path=choices((1, 1.0)))
    state = dalk().run(world.resources(llm), QUESTION)
    assert kinds(llm) == ["ner", "entity", "path"]
    assert [s.name for s in state.trace] == [
        "question.entities", "node.link", "node.seeds", "subgraph.khop_path", "node.onehop",
        "node.agent", "subgraph.agent_path", "subgraph.path_evidence", "subgraph.path_evidence",
        "merge.context"]  # fmt: skip
    # The neighbour filter saw Bell and Dara with the edges joining them to the seeds.
    shown = llm.calls[1][0][-1]["content"]
    bell = "1. Bell (person): Bell is in the story. [Ada founded Bell; Bell located in Cobb]"
    assert bell in shown
    assert "2. Dara (person): Dara is in the story. [Eve met Dara; Dara visited Cobb]" in shown
    assert f"1. {PATH}" in llm.calls[2][0][-1]["content"]
    assert [n.id for n in state.nodes] == [E, A, C, D]
    # Each neighbour as its one-hop paths from the seeds.
    assert sections(state) == {"Paths": [PATH], "Neighbours": [NEIGHBOUR_DARA]}
    assert state.context.chunk_ranking() == [world.d3, world.d1, world.d2]
    assert (agent_run(state).calls, agent_run(state).failures) == (2, 0)


@pytest.mark.parametrize("reply", ["junk", '{"choices": [{"id": 9}]}', RuntimeError("down")])
def test_dalk_unusable_filter_replies_keep_the_candidates(world, reply):
    llm = agent_llm(ner=NER, entity=reply, path=reply)
    state = dalk(neighbour_top_k=1).run(world.resources(llm), QUESTION)
    # Unfiltered: the first neighbour (Bell) and the first path.
    assert kinds(llm) == ["ner", "entity", "path"]
    assert sections(state) == {"Paths": [PATH], "Neighbours": [NEIGHBOUR_BELL]}
    assert agent_run(state).failures == 2


def test_dalk_filters_that_keep_nothing_leave_no_context(world):
    llm = agent_llm(ner=NER, entity=choices(), path=choices())
    state = dalk().run(world.resources(llm), QUESTION)
    assert kinds(llm) == ["ner", "entity", "path"]
    assert state.context.items == [] and [n.id for n in state.nodes] == [E, A, C]


def test_dalk_asks_nothing_without_candidates_and_keeps_its_budget(world):
    # "Quill" shares no word (nor hashed bucket) with any entity name: nothing is linked.
    llm = agent_llm(ner=json.dumps({"named_entities": ["Quill"]}))
    state = dalk().run(world.resources(llm), "Who is Quill?")
    assert kinds(llm) == ["ner"] and state.context.items == []
    # One hop is too short for any path: only the neighbour filter asks.
    llm = agent_llm(ner=NER, entity=choices((1, 1.0)))
    state = dalk(max_hops=1).run(world.resources(llm, "short"), QUESTION)
    assert kinds(llm) == ["ner", "entity"]
    assert sections(state)["Paths"] == [] and sections(state)["Neighbours"]
    # A budget of one call: the path filter does not fit and keeps its candidates.
    llm = agent_llm(ner=NER, entity=choices((2, 1.0)), path=choices())
    state = dalk(max_calls=1).run(world.resources(llm, "budget"), QUESTION)
    assert kinds(llm) == ["ner", "entity"]
    assert agent_run(state).stop == "call budget (1) spent"
    assert sections(state)["Paths"] == [PATH]


def test_dalk_passages_option_and_no_llm(world):
    llm = agent_llm(ner=NER, entity=choices((2, 1.0)), path=choices((1, 1.0)))
    state = dalk(passages=True, top_k=2).run(world.resources(llm), QUESTION)
    assert list(sections(state)) == ["Paths", "Neighbours", "Sources"]
    assert [i.id for i in state.context.sections[2].items] == [world.d3, world.d1]
    with pytest.raises(ConfigError, match="dalk needs an LLM at query time") as err:
        dalk().run(world.res, QUESTION)
    assert len(str(err.value).splitlines()) == 1
    assert B not in [n.id for n in state.nodes]
