"""Community reports of the ``communities`` layer: the reply parser, extractive reports
offline, LLM reports through the shared fan-out with fallbacks for malformed replies,
reports kept across a recompute when a community is unchanged, and freshness after
inserts and deletes (no report, node or vector of a vanished community)."""

from __future__ import annotations

import json
import re

import pytest
from corpora import HARBOUR_DOCS
from doubles import ScriptedLLM, WordEmbedder
from operator_coverage import covers

from hygraph import GraphIndex
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.ingest import Document
from hygraph.layers.communities import COMMUNITIES, detect_communities, largest_component
from hygraph.operators.registry import get_operator
from hygraph.operators.state import State
from hygraph.prompts.communities import parse_report, render_report, report_messages
from hygraph.prompts.replies import ParseError

COLLECTION = COMMUNITIES.collection
#: A document that shares no entity with the harbour documents (its own component).
ORCHARD = Document(
    text="Brindle Orchard grows Pennock apples. Pennock apples were bred by Marla Quist. "
    "Marla Quist founded the Brindle Cider Press. The Brindle Cider Press buys Pennock "
    "apples from Brindle Orchard.",
    id="orchard",
    title="Brindle Orchard",
)


def _docs(*names: str) -> list[Document]:
    return [Document(text=HARBOUR_DOCS[n][1], id=n, title=HARBOUR_DOCS[n][0]) for n in names]


def _recipe(tmp_path) -> str:
    """A method reading the communities layer (so inserts and deletes keep it current)."""
    path = tmp_path / "kg.json"
    path.write_text(json.dumps({
        "name": "kg-reports", "layers": ["chunks", "entity-vectors", "communities"],
        "steps": [
            {"op": "question.embed"},
            {"op": "node.vdb", "params": {"k": 5}},
            {"op": "community.of_nodes", "params": {"k": 3}},
            {"op": "community.evidence"},
            {"op": "merge.context", "params": {"sections": "communities"}},
        ],
    }))  # fmt: skip
    return str(path)


def _reports(index: GraphIndex) -> dict[str, dict]:
    return {n.id: n.data for n in index.store.nodes_of_kind(NodeKind.COMMUNITY)}


def _fresh(index: GraphIndex) -> None:
    """Every community has a report and a vector; members exist; nothing is left over."""
    nodes = index.store.nodes_of_kind(NodeKind.COMMUNITY)
    assert nodes
    ids = [n.id for n in nodes]
    assert index.vectors.count(COLLECTION) == len(ids)
    assert index.vectors.existing(COLLECTION, ids) == set(ids)
    entities = {n.id for n in index.store.nodes_of_kind(NodeKind.ENTITY)}
    for node in nodes:
        report = node.data["report"]
        assert report["title"] and report["summary"] and node.text.startswith("community ")
        assert 0 <= report["rating"] <= 10
        assert set(node.data["members"]) <= entities
    for src, dst, _ in index.store.edge_rows([EdgeKind.IN_COMMUNITY]):
        assert src in entities and dst in ids


# --------------------------------------------------------------------------- parser


def test_parse_report_reads_loose_replies_and_renders_markdown():
    reply = """Here you go:
```json
{"Title": "Harrowby shipbuilding", "Executive Summary": "Aldercott Shipyard built ships.",
 "rating": "8.5 out of 10", "rating_explanation": "Central to the town.",
 "key_findings": ["The yard was founded in 1819.",
                  {"summary": "Quell", "explanation": "He was mayor."}]}
```"""
    report = parse_report(reply)
    assert report["title"] == "Harrowby shipbuilding"
    assert report["summary"] == "Aldercott Shipyard built ships."
    assert report["rating"] == 8.5
    assert report["findings"] == [
        {"summary": "The yard was founded in 1819.", "explanation": ""},
        {"summary": "Quell", "explanation": "He was mayor."},
    ]
    text = render_report(report)
    assert text.startswith("# Harrowby shipbuilding\n\nAldercott Shipyard built ships.")
    assert "## Quell\n\nHe was mayor." in text
    # A rating out of range is clamped; a missing title comes from the summary.
    clamped = parse_report('{"summary": "A short summary of the harbour.", "rating": 42}')
    assert clamped["rating"] == 10.0 and clamped["title"] == "A short summary of the harbour"
    messages = report_messages("-----Entities-----\nid, entity")
    assert "JSON" in messages[0]["content"] and "-----Entities-----" in messages[1]["content"]


@pytest.mark.parametrize("reply", [
    "", "I cannot write a report.", '{"rating": 5}', "<think>hmm</think>", "[1, 2, 3]",
])  # fmt: skip
def test_parse_report_rejects_unusable_replies(reply):
    with pytest.raises(ParseError):
        parse_report(reply)


def test_detection_ids_and_largest_component():
    rows = [("a", "b", 1.0), ("b", "c", 1.0), ("a", "c", 1.0), ("x", "y", 1.0)]
    assert sorted(largest_component(rows)) == sorted(rows[:3])
    from hygraph.layers.communities import CommunityOptions

    found = detect_communities(rows, CommunityOptions())
    again = detect_communities(list(reversed(rows)), CommunityOptions())
    assert [c.id for c in found] == [c.id for c in again]  # ids: level + members only
    assert {frozenset(c.members) for c in found} == {frozenset("abc"), frozenset("xy")}
    only = detect_communities(rows, CommunityOptions(largest_component=True))
    assert [set(c.members) for c in only] == [set("abc")]


# --------------------------------------------------------------------------- offline


@covers("community.of_nodes", "community.evidence", "community.vdb")
def test_offline_reports_are_extractive_never_empty_and_embedded(tmp_path):
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(), progress=False) as index:
        index.insert(_docs(*HARBOUR_DOCS), methods=[_recipe(tmp_path)])
        _fresh(index)
        reports = _reports(index)
        assert all(d["written_by"] == "extractive" for d in reports.values())
        assert any(d["report"]["findings"] for d in reports.values())
        # Through a recipe: the community evidence shows the report.
        result = index.retrieve("Who founded Aldercott Shipyard?", "kg-reports")
        items = [i for i in result.items if i.kind == "community"]
        assert items and all(i.text.startswith("community ") for i in items)
        assert all(i.metadata["title"] and i.metadata["title"] in i.text for i in items)
        # Reports are searchable by vector.
        state = State("Aldercott Shipyard", top_k=3)
        get_operator("community.vdb").fn(index.resources, state, k=2)
        assert len(state.communities) == 2 and state.communities[0].cosine > 0
        assert index.layer("communities").pending(index.resources) == []


# --------------------------------------------------------------------------- with an LLM

GOOD = {
    "title": "The Harrowby waterfront",
    "summary": "Shipbuilding and civic life around Harrowby harbour.",
    "rating": 7,
    "rating_explanation": "The harbour shaped the town.",
    "findings": [{"summary": "A shipyard", "explanation": "Aldercott Shipyard built ships."}],
}


class ReportLLM(ScriptedLLM):
    """Scripted double answering report prompts: a good JSON report, except for
    communities whose tables name ``bad`` (a refusal in prose) or ``fenced`` (JSON in a
    code fence with a trailing comma)."""

    def __init__(self, bad: str = "Gannet", fenced: str = "Quell"):
        super().__init__(responder=self.reply)
        self.bad, self.fenced = bad, fenced

    def reply(self, messages, params) -> str:
        user = messages[-1]["content"]
        assert "Write the report" in user, user[:80]
        title = re.search(r'"([^"]+)",\t"', user.split("-----Entities-----")[1]).group(1)
        if self.bad in user:
            return "I'm sorry, I can't help with that."
        report = {**GOOD, "title": f"About {title}"}
        if self.fenced in user:
            return "```json\n" + json.dumps(report)[:-1] + ",}\n```"
        return json.dumps(report)


def test_llm_reports_with_fallback_for_malformed_replies(tmp_path):
    llm = ReportLLM()
    path = tmp_path / "i"
    with GraphIndex(path, embedder=WordEmbedder(), llm=llm, progress=False) as index:
        index.insert(_docs(*HARBOUR_DOCS), methods=[_recipe(tmp_path)])
        _fresh(index)
        reports = _reports(index)
        assert len(llm.calls) == len(reports)  # one call per community
        by = {cid: d["written_by"] for cid, d in reports.items()}
        assert "llm" in by.values() and "extractive" in by.values()
        for cid, data in reports.items():
            if by[cid] == "llm":
                assert data["report"]["title"].startswith("About ")
                assert data["report_of"]  # current: kept by the next recompute
            else:  # the refusal fell back to an extractive report, tried again next time
                assert data["report"]["summary"] and data["report_of"] == ""
        usage = index.tracker.report()
        assert any(k.startswith("build:communities:reports:level") for k in usage["stages"])


def test_unchanged_communities_keep_their_reports(tmp_path):
    llm = ReportLLM(bad="no such text")
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(), llm=llm, progress=False) as index:
        index.insert(_docs(*HARBOUR_DOCS), methods=[_recipe(tmp_path)])
        before = _reports(index)
        calls = len(llm.calls)
        index.insert([ORCHARD])  # a component of its own: the harbour's communities stay
        after = _reports(index)
        kept = set(before) & set(after)
        assert kept and set(after) - set(before)
        for cid in kept:
            assert after[cid]["report"] == before[cid]["report"]
            assert after[cid]["report_of"] == before[cid]["report_of"]
        # Only the new communities were written (no call for a kept one).
        assert len(llm.calls) - calls == len(set(after) - set(before))
        _fresh(index)


def test_delete_leaves_no_report_or_vector_of_a_vanished_community(tmp_path):
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(), progress=False) as index:
        index.insert([*_docs(*HARBOUR_DOCS), ORCHARD], methods=[_recipe(tmp_path)])
        before = set(_reports(index))
        index.delete("orchard")
        after = set(_reports(index))
        vanished = before - after
        assert vanished
        assert index.vectors.existing(COLLECTION, sorted(vanished)) == set()
        names = {n.name for n in index.store.nodes_of_kind(NodeKind.ENTITY)}
        assert not any("Brindle" in (name or "") for name in names)
        for data in _reports(index).values():
            assert "Brindle" not in json.dumps(data["report"])
        _fresh(index)
        index.delete("festival")  # a delete inside the connected part
        _fresh(index)
        assert index.layer("communities").pending(index.resources) == []
        # Reset clears everything of the layer, the next update rebuilds it.
        index.layer("communities").reset(index.resources)
        assert not index.store.nodes_of_kind(NodeKind.COMMUNITY)
        assert index.vectors.count(COLLECTION) == 0
        index.layer("communities").update(index.resources)
        _fresh(index)
