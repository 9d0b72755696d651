"""The agent and path operators (ToG, DALK) on a hand-made knowledge graph.

The world (:mod:`agent_world`): five one-chunk documents, twelve entities and ten
relation edges written straight into a store; its docstring has the edge table, each
entity's neighbours and relation degrees. Every expected path, score and choice below
is worked out by hand from those tables. LLM replies come from a scripted double
(:mod:`agent_doubles`, over :class:`~doubles.ScriptedLLM`): well-formed, malformed,
empty, failing, and naming unknown candidates.
"""

from __future__ import annotations

import logging
from types import SimpleNamespace
from typing import Any

import pytest
from agent_doubles import agent_llm, choices, kinds
from agent_world import A, B, C, D, E, F, G, H, build_world, state_with
from operator_coverage import covers

from hygraph.errors import ConfigError
from hygraph.graph.algorithms.khop import khop_paths, merge_paths, nearest_paths
from hygraph.operators import registry
from hygraph.operators.agents import AGENT, agent_run
from hygraph.operators.paths import PATHS, Path
from hygraph.operators.state import Scored, State
from hygraph.prompts.agents import (
    ENOUGH_FIRST_LINE,
    ENTITY_FIRST_LINE,
    PATH_FIRST_LINE,
    RELATION_FIRST_LINE,
    enough_messages,
    entity_messages,
    parse_choices,
    parse_enough,
    path_messages,
    relation_messages,
)
from hygraph.prompts.replies import ParseError
from hygraph.resources import Resources


def op(name: str, res: Resources, state: State, **params: Any) -> None:
    """Run the registered operator ``name`` on ``state``."""
    registry.get_operator(name).fn(res, state, **params)


@pytest.fixture
def kg(tmp_path, monkeypatch) -> SimpleNamespace:
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    return build_world(tmp_path)


def ids(items: list[Scored]) -> list[str]:
    return [i.id for i in items]


# --------------------------------------------------------------------------- k-hop algorithm

LINE = {"a": ["b"], "b": ["a", "c"], "c": ["b", "d"], "d": ["c"]}
SQUARE = {"a": ["b", "c"], "b": ["a", "d"], "c": ["a", "d"], "d": ["b", "c", "e"], "e": ["d"]}


def test_khop_paths_chain_and_merge_as_the_spec_example():
    # From a, the nearest of {c, d} is c (2 hops): a-b-c; a, b, c leave the set; from c,
    # d (1 hop): c-d. The two paths extend one another and merge into a-b-c-d.
    found = khop_paths(LINE, ["a", "c", "d"], max_hops=5)
    assert found == [["a", "b", "c"], ["c", "d"]]
    assert merge_paths(found) == [["a", "b", "c", "d"]]
    # Spec §4.4 S1's own example: A→B→C inside A→B→C→D is dropped.
    assert merge_paths([["A", "B", "C"], ["A", "B", "C", "D"]]) == [["A", "B", "C", "D"]]
    # A reversed repeat is a repeat; without joining, extensions stay apart.
    assert merge_paths([["a", "b"], ["b", "a"]]) == [["a", "b"]]
    assert merge_paths([["a", "b", "c"], ["c", "d"]], join=False) == [["a", "b", "c"], ["c", "d"]]
    # A path that shares more than the joint is not joined (it would repeat a node).
    assert merge_paths([["a", "b", "c"], ["c", "b", "e"]]) == [["a", "b", "c"], ["c", "b", "e"]]


def test_khop_hop_limit_dead_starts_and_alternatives():
    # Two hops from a reach d two ways (sorted neighbours: via b first).
    assert nearest_paths(SQUARE, "a", ["d"], max_hops=2, per_pair=2) == [
        ["a", "b", "d"], ["a", "c", "d"]]  # fmt: skip
    assert nearest_paths(SQUARE, "a", ["d"], max_hops=1) == []
    # Nearest first: from a, b (1 hop) before e (3 hops), whatever the set's order.
    assert nearest_paths(SQUARE, "a", ["e", "b"], max_hops=3) == [["a", "b"]]
    # Nothing within 1 hop of a: a is dropped as a start, then d starts and reaches c.
    assert khop_paths(LINE, ["a", "d", "c"], max_hops=1) == [["d", "c"]]
    # A seed outside the graph is skipped; alternatives of one step all join what follows.
    found = khop_paths(SQUARE, ["a", "zz", "d", "e"], max_hops=3, per_pair=2)
    assert found == [["a", "b", "d"], ["a", "c", "d"], ["d", "e"]]
    assert merge_paths(found) == [["a", "b", "d", "e"], ["a", "c", "d"]]
    assert merge_paths(found, limit=1) == [["a", "b", "d", "e"]]
    assert khop_paths(SQUARE, ["a"], max_hops=3) == []


# --------------------------------------------------------------------------- paths operators


@covers("node.seeds", "subgraph.khop_path", "subgraph.path_evidence")
def test_khop_path_operator_and_its_evidence(kg):
    state = state_with(seeds={E: 0.9, A: 0.8, C: 0.7, F: 0.6})
    op("node.seeds", kg.res, state)
    assert ids(state.nodes) == [E, A, C, F]
    assert state.nodes[0].data["path"] == Path((E,), (), 0.9)
    # From Eve, Cobb is nearest (Eve-Dara-Cobb, 2 hops); from Cobb, Ada (Cobb-Bell-Ada);
    # Finn reaches nobody. The two paths join at Cobb.
    op("subgraph.khop_path", kg.res, state, max_hops=3)
    (path,) = state.subgraph[PATHS]
    assert path.nodes == (E, D, C, B, A)
    assert path.hops == ((E, "met", D), (D, "visited", C), (B, "located in", C), (A, "founded", B))
    assert path.score == pytest.approx((0.9 + 0.7 + 0.8) / 3)
    op("subgraph.path_evidence", kg.res, state)
    (item,) = state.evidence["paths"]
    assert item.kind == "path"
    assert item.text == "Eve -[met]-> Dara -[visited]-> Cobb <-[located in]- Bell <-[founded]- Ada"
    # Chunks hop by hop: met d3; visited d3; located in d1 (its label) then d2; founded d1.
    assert item.source_ids == (kg.d3, kg.d1, kg.d2)
    assert item.metadata["entities"] == ["Eve", "Dara", "Cobb", "Bell", "Ada"]
    # One hop is not enough for any pair; a bad setting is a one-line error.
    op("subgraph.khop_path", kg.res, state, max_hops=1)
    assert state.subgraph[PATHS] == []
    with pytest.raises(ConfigError):
        op("subgraph.khop_path", kg.res, state, max_hops=0)
    with pytest.raises(ConfigError):
        op("subgraph.path_evidence", kg.res, state, source="everything")


def test_path_evidence_orders_drops_inner_paths_and_shows_neighbours(kg):
    short = Path((B, C), ((B, "located in", C),), 0.9)
    longer = Path((D, B, C), ((D, "works at", B), (B, "located in", C)), 0.4)
    other = Path((B, A), ((A, "founded", B),), 0.5)
    state = state_with(subgraph={PATHS: [short, other, longer]})
    op("subgraph.path_evidence", kg.res, state)
    # Bell-Cobb lies inside Dara-Bell-Cobb: dropped; the rest in the given order.
    assert [i.text for i in state.evidence["paths"]] == [
        "Bell <-[founded]- Ada", "Dara -[works at]-> Bell -[located in]-> Cobb"]  # fmt: skip
    op("subgraph.path_evidence", kg.res, state, order="deepest", k=1)
    assert [i.id for i in state.evidence["paths"]] == [f"{D}|{B}|{C}"]
    # Neighbours: each non-seed node with the edges joining it to the seeds.
    nodes = [Scored(B, 1.0), Scored(D, 0.5), Scored(C, 0.7), Scored(F, 0.2)]
    state = state_with(seeds={B: 1.0, D: 0.5}, nodes=nodes)
    op("subgraph.path_evidence", kg.res, state, source="neighbours", into="neighbours")
    (item,) = state.evidence["neighbours"]  # Finn joins no seed
    assert item.text == "Bell -[located in]-> Cobb; Dara -[visited]-> Cobb"
    assert item.score == 0.7 and item.source_ids == (kg.d1, kg.d2, kg.d3)


# --------------------------------------------------------------------------- relationship.agent


@covers("relationship.agent")
def test_relationship_agent_scores_and_prunes_per_entity(kg, caplog):
    llm = agent_llm(
        relation=lambda text: (
            choices((3, 0.6), (1, 0.2), (2, 0.2)) if "Entity: Dara" in text else "I cannot say."
        )
    )
    res = kg.resources(llm)
    frontier = [Scored(D, 1.0, data={"path": Path((D,), (), 1.0)}),
                Scored(B, 0.5, data={"path": Path((A, B), ((A, "founded", B),), 0.5)}),
                Scored(A, 0.2)]  # fmt: skip
    state = state_with(nodes=frontier)
    with caplog.at_level(logging.WARNING):
        op("relationship.agent", res, state, width=2)
    # Dara's relations, most tails first then by label: "… met Dara", "Dara visited …",
    # "Dara works at …"; the reply keeps 3 (0.6) and 1 (0.2, before the tied 2).
    # Bell's reply is junk: no relation, one failure. Ada (reached nowhere yet) has one
    # relation, "Ada founded …": kept with score 1 and no call.
    assert [(r.data["entity"], r.data["label"], r.data["direction"], r.value)
            for r in state.relationships] == [
        (D, "works at", "out", pytest.approx(0.6)), (D, "met", "in", pytest.approx(0.2)),
        (A, "founded", "out", 1.0)]  # fmt: skip
    assert state.relationships[0].data["tails"] == (B,)
    assert kinds(llm) == ["relation", "relation"]
    # Bell came from Ada, so "… founded Bell" is not offered again; "works at" leads to
    # two entities (Dara, Hal), so it comes first.
    bell_prompt = llm.calls[1][0][-1]["content"]
    assert "founded" not in bell_prompt
    assert "1. … works at Bell\n2. Bell based in …\n3. Bell located in …" in bell_prompt
    run = agent_run(state)
    assert (run.calls, run.failures, run.stop) == (2, 1, "")
    assert "unusable reply" in caplog.text


@pytest.mark.parametrize("reply", [
    '{"choices": []}',  # readable: nothing helps
    '{"choices": [{"id": 9, "score": 1}]}',  # names no candidate
    "",  # empty
    "<think>still thinking",  # all reasoning
    RuntimeError("endpoint down"),  # failed call
])  # fmt: skip
def test_relationship_agent_stops_cleanly_on_useless_replies(kg, reply):
    llm = agent_llm(relation=reply)
    state = state_with(nodes=[Scored(D, 1.0)])
    op("relationship.agent", kg.resources(llm), state)
    assert state.relationships == [] and kinds(llm) == ["relation"]
    run = agent_run(state)
    assert run.stop == "no relation chosen"
    assert run.failures == (0 if reply == '{"choices": []}' else 1)
    # A stopped run asks nothing more.
    op("relationship.agent", kg.resources(llm), state)
    op("node.agent", kg.resources(llm), state)
    op("subgraph.agent_check", kg.resources(llm), state)
    assert len(llm.calls) == 1


def test_agent_budget_sends_only_what_fits(kg):
    llm = agent_llm(relation=choices((1, 1.0)))
    res = kg.resources(llm)
    state = state_with(nodes=[Scored(D, 1.0), Scored(B, 1.0)])
    op("relationship.agent", res, state, max_calls=1)
    # Dara is asked; Bell's call does not fit: no relation from it, and the run stops.
    assert [r.data["entity"] for r in state.relationships] == [D]
    assert agent_run(state).stop == "call budget (1) spent" and len(llm.calls) == 1
    state = state_with(nodes=[Scored(D, 1.0)])
    op("relationship.agent", res, state, max_tokens=10)
    assert state.relationships == [] and len(llm.calls) == 1
    assert agent_run(state).stop == "token budget (10) spent"
    assert agent_run(state).tokens == 0 and agent_run(state).calls == 0


def test_agents_need_an_llm_with_one_line(kg):
    for name in ("relationship.agent", "node.agent", "subgraph.agent_path", "subgraph.agent_check"):
        with pytest.raises(ConfigError, match="needs an LLM at query time") as err:
            op(name, kg.res, state_with(nodes=[Scored(D, 1.0)]))
        assert len(str(err.value).splitlines()) == 1


# --------------------------------------------------------------------------- node.agent


def _relation(entity: str, label: str, direction: str, tails: tuple, value: float,
              path: Path | None = None) -> Scored:  # fmt: skip
    return Scored(f"{entity}|{direction}|{label}", value, data={
        "kind": "agent_relation", "entity": entity, "label": label, "direction": direction,
        "tails": tails, "path": path or Path((entity,), (), 1.0)})  # fmt: skip


@covers("node.agent")
def test_node_agent_scores_tails_by_relation_times_entity(kg):
    llm = agent_llm(entity=choices((2, 0.75), (1, 0.25)))
    res = kg.resources(llm)
    state = state_with(relationships=[_relation(B, "works at", "in", (D, H), 0.5),
                                      _relation(B, "located in", "out", (C,), 0.5)])  # fmt: skip
    op("node.agent", res, state, k=2)
    # works at: Hal 0.5 x 0.75, Dara 0.5 x 0.25; located in: Cobb 0.5 x 1 (one tail, no call).
    assert ids(state.nodes) == [C, H]
    assert [n.value for n in state.nodes] == [pytest.approx(0.5), pytest.approx(0.375)]
    assert kinds(llm) == ["entity"]
    prompt = llm.calls[0][0][-1]["content"]
    assert "How the candidates were reached: … works at Bell" in prompt
    assert "1. Dara (person): Dara is in the story.\n2. Hal (person)" in prompt
    hal = state.nodes[1].data["path"]
    assert hal.nodes == (B, H) and hal.hops == ((H, "works at", B),)
    assert [p.nodes for p in state.subgraph[PATHS]] == [(B, C), (B, H)]


def test_node_agent_unreadable_reply_scores_candidates_equally(kg, caplog):
    llm = agent_llm(entity="no json here")
    state = state_with(relationships=[_relation(B, "works at", "in", (D, H), 0.5),
                                      _relation(B, "located in", "out", (C,), 0.5)])  # fmt: skip
    with caplog.at_level(logging.WARNING):
        op("node.agent", kg.resources(llm), state, k=2)
    # Dara and Hal score 0.25 each (ToG's code); Cobb 0.5; the tie keeps candidate order.
    assert ids(state.nodes) == [C, D] and agent_run(state).failures == 1
    # Tails already on the path are no candidates; a relation leading nowhere new stops.
    state = state_with(
        relationships=[
            _relation(B, "works at", "in", (D,), 1.0, Path((D, B), ((D, "works at", B),), 1.0))
        ]
    )
    op("node.agent", kg.resources(llm), state)
    assert state.nodes == [] and agent_run(state).stop == "no entity kept"
    with pytest.raises(ConfigError):
        op("node.agent", kg.resources(llm), state, source="everything")


def test_node_agent_picks_neighbours_after_the_linked_entities(kg):
    nodes = [Scored(B, 1.0), Scored(C, 1.0), Scored(D, 1.0), Scored(H, 1.0)]
    state = state_with(seeds={B: 1.0}, nodes=nodes)
    llm = agent_llm(entity=choices((2, 3.0), (3, 1.0)))
    op("node.agent", kg.resources(llm), state, source="nodes", k=1)
    assert ids(state.nodes) == [B, D] and state.nodes[1].value == pytest.approx(0.75)
    prompt = llm.calls[0][0][-1]["content"]
    assert "linked to the question's entities" in prompt
    assert "2. Dara (person): Dara is in the story. [Dara works at Bell]" in prompt
    # Junk: the first k unfiltered; a readable empty choice: none.
    state.nodes = [Scored(B, 1.0), Scored(C, 1.0), Scored(D, 1.0)]
    op("node.agent", kg.resources(agent_llm(entity="???"), "i2"), state, source="nodes", k=1)
    assert ids(state.nodes) == [B, C]
    state.nodes = [Scored(B, 1.0), Scored(C, 1.0)]
    op("node.agent", kg.resources(agent_llm(entity=choices()), "i3"), state, source="nodes")
    assert ids(state.nodes) == [B]
    # No candidate: no call.
    quiet = agent_llm()
    op("node.agent", kg.resources(quiet, "i4"), state, source="nodes")
    assert ids(state.nodes) == [B] and quiet.calls == []


# --------------------------------------------------------------------------- agent_path, check


@covers("subgraph.agent_path")
def test_agent_path_keeps_the_chosen_paths(kg):
    paths = [Path((B, C), ((B, "located in", C),), 0.5),
             Path((D, B), ((D, "works at", B),), 0.5),
             Path((F, G), ((F, "sailed on", G),), 0.5)]  # fmt: skip
    llm = agent_llm(path=choices((2, 0.8), (1, 0.2)))
    state = state_with(subgraph={PATHS: list(paths)})
    op("subgraph.agent_path", kg.resources(llm), state, k=5)
    assert [p.nodes for p in state.subgraph[PATHS]] == [(D, B), (B, C)]
    assert [p.score for p in state.subgraph[PATHS]] == [pytest.approx(0.8), pytest.approx(0.2)]
    prompt = llm.calls[0][0][-1]["content"]
    assert "1. Bell -[located in]-> Cobb\n2. Dara -[works at]-> Bell\n3. Finn" in prompt
    # Unknown ids or a failed call: the first k stay unfiltered; an empty choice keeps none.
    for n, (reply, kept) in enumerate([(choices((7, 1.0)), 2), (RuntimeError("down"), 2),
                                       (choices(), 0)]):  # fmt: skip
        state = state_with(subgraph={PATHS: list(paths)})
        op("subgraph.agent_path", kg.resources(agent_llm(path=reply), f"p{n}"), state, k=2)
        assert [p.nodes for p in state.subgraph[PATHS]] == [p.nodes for p in paths[:kept]]
    # No path: no call.
    state = state_with()
    quiet = agent_llm()
    op("subgraph.agent_path", kg.resources(quiet, "p9"), state)
    assert quiet.calls == [] and PATHS not in state.subgraph


@covers("subgraph.agent_check")
def test_agent_check_stops_only_on_yes(kg):
    paths = [Path((D, B), ((D, "works at", B),), 0.5),
             Path((D, B, C), ((D, "works at", B), (B, "located in", C)), 0.5)]  # fmt: skip
    for n, (reply, stop, failures) in enumerate([
        ('{"enough": true}', "enough evidence", 0), ("Yes.", "enough evidence", 0),
        ('{"enough": false}', "", 0), ("maybe later", "", 1), (RuntimeError("x"), "", 1),
    ]):  # fmt: skip
        llm = agent_llm(enough=reply)
        state = state_with(subgraph={PATHS: list(paths)})
        op("subgraph.agent_check", kg.resources(llm, f"c{n}"), state)
        run = state.subgraph[AGENT]
        assert (run.stop, run.failures) == (stop, failures), reply
    # The prompt shows each path once, inner paths dropped.
    shown = llm.calls[0][0][-1]["content"]
    assert shown.endswith(
        'Paths found so far:\n"""\n- Dara -[works at]-> Bell -[located in]-> Cobb\n"""'
    )


# --------------------------------------------------------------------------- prompts, parsers


def test_prompts_start_with_their_stable_first_lines():
    built = [
        (relation_messages("q", "Ada", ["Ada founded …"], 3), RELATION_FIRST_LINE),
        (entity_messages("q", "Ada founded …", ["Bell"], 3), ENTITY_FIRST_LINE),
        (path_messages("q", ["Ada -[founded]-> Bell"], 5), PATH_FIRST_LINE),
        (enough_messages("q", ["Ada -[founded]-> Bell"]), ENOUGH_FIRST_LINE),
    ]
    for messages, first in built:
        assert messages[0]["role"] == "system"
        assert messages[0]["content"].splitlines()[0] == first
        assert messages[-1]["role"] == "user" and "Question: q" in messages[-1]["content"]
    assert len({first for _, first in built}) == 4


def test_parse_choices_reads_many_forms_and_refuses_junk():
    assert parse_choices(choices((2, 0.6), (1, 0.4)), 3) == [(1, 0.6), (0, 0.4)]
    # Shares: scores divided by their sum; no score counts 1; zero is "not chosen".
    assert parse_choices('{"selected": [3, "1", {"id": 2, "score": 0}]}', 3) == [
        (2, 0.5), (0, 0.5)]  # fmt: skip
    assert parse_choices('```json\n[[1, "80"], [2, "20"]]\n```', 2) == [(0, 0.8), (1, 0.2)]
    assert parse_choices('{"choices": {"2": 1}}', 2) == [(1, 1.0)]
    assert parse_choices('{"choices": ["2. Bell", "2", "Ada founded …"]}',
                         ["Ada founded …", "Bell"]) == [(1, 0.5), (0, 0.5)]  # fmt: skip
    assert parse_choices('{"choices": []}', 3) == []
    # Unknown ids are dropped; only unknown ones is unusable; the form alone passes.
    assert parse_choices(choices((1, 0.5), (9, 0.5)), 2) == [(0, 1.0)]
    assert parse_choices(choices((9, 1.0))) == [(8, 1.0)]
    for junk in ["", "no idea", '{"answer": "Cobb"}', choices((9, 1.0)), '{"choices": [true]}']:
        with pytest.raises(ParseError):
            parse_choices(junk, 2)


def test_parse_enough_reads_yes_and_no():
    assert parse_enough('{"enough": true}') is True
    assert parse_enough('{"sufficient": "no"}') is False
    assert parse_enough("<think>hmm</think> Yes, the paths say so.") is True
    assert parse_enough("No.") is False
    for junk in ["", "<think>", "perhaps", '{"verdict": 1}']:
        with pytest.raises(ParseError):
            parse_enough(junk)
