"""HiRAG (``hirag``): cluster sparsity and the stop rule, GMM layers on hand-made
embeddings, summary-entity layers offline and with a scripted LLM (malformed replies fall
back), the multi-layer communities and their reports, resumable and fresh builds after
inserts and deletes, retrieval (local, global, bridge, sources), the method through
GraphIndex, the CLI and the LlamaIndex and LangChain retrievers."""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from corpora import HARBOUR_DOCS
from doubles import ScriptedLLM, WordEmbedder
from operator_coverage import covers

from hygraph import GraphIndex
from hygraph.cli import main
from hygraph.errors import ConfigError
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.ingest import Document
from hygraph.layers import hirag as hirag_layer
from hygraph.layers import hirag_levels
from hygraph.layers.hirag import HIRAG_COMMUNITIES, SUMMARY_COLLECTION, level_records
from hygraph.layers.hirag_levels import (
    change_rate,
    cluster_layer,
    cluster_sparsity,
    group_names,
    stops,
)
from hygraph.methods.base import get_method, parse_method_spec
from hygraph.operators.hirag import chained_walk, shortest_path
from hygraph.prompts.hirag import parse_summary_entities, summary_entity_messages
from hygraph.prompts.replies import ParseError

METHOD = "hirag:reduction=pca"  # PCA instead of UMAP keeps the tests fast (same pipeline)
QUESTION = "Who commanded Gannet's Reach on the Northern Shelf Expedition?"


def _docs(*names: str) -> list[Document]:
    return [Document(text=HARBOUR_DOCS[n][1], id=n, title=HARBOUR_DOCS[n][0]) for n in names]


def _index(path, **kwargs) -> GraphIndex:
    return GraphIndex(path, embedder=WordEmbedder(), progress=False, **kwargs)


def _consistent(index: GraphIndex) -> None:
    """The hierarchy, its communities and vectors agree with the entity graph."""
    store = index.store
    entities = {n.id for n in store.nodes_of_kind(NodeKind.ENTITY)}
    summaries = {n.id: n for n in store.nodes_of_kind(NodeKind.HI_SUMMARY)}
    for src, dst, _ in store.edge_rows([EdgeKind.HI_SUMMARY_OF]):
        assert src in entities or src in summaries, src
        assert dst in summaries, dst
    assert index.vectors.count(SUMMARY_COLLECTION) == len(summaries)
    if summaries:
        assert index.vectors.existing(SUMMARY_COLLECTION, list(summaries)) == set(summaries)
    communities = store.nodes_of_kind(NodeKind.HI_COMMUNITY)
    assert communities
    assert index.vectors.count(HIRAG_COMMUNITIES.collection) == len(communities)
    for node in communities:
        assert set(node.data["members"]) <= entities | set(summaries)
        assert node.data["report"]["title"] and node.text.startswith("community ")
    assert index.layer("hirag").pending(index.resources) == []


# --------------------------------------------------------------------------- sparsity, stop rule


def test_cluster_sparsity_on_hand_made_clusterings():
    assert cluster_sparsity([[0, 1], [2, 3]], 4) == pytest.approx(1 - 4 / 12)
    assert cluster_sparsity([[0], [1], [2]], 3) == 1.0  # nothing groups
    assert cluster_sparsity([[0, 1, 2, 3]], 4) == 0.0  # one cluster
    # Soft clusters may overlap; the raw value would be negative, so it is clamped.
    assert cluster_sparsity([[0, 1, 2], [0, 1, 2], [0, 1, 2]], 3) == 0.0
    with pytest.raises(ValueError):
        cluster_sparsity([[0]], 1)


def test_change_rate_and_stop_rule_follow_the_paper():
    assert change_rate(0.95, 0.9) == pytest.approx(0.05 / 0.9)
    assert not stops(0.5, None, 0.05)  # the first layer is always built
    assert not stops(0.95, 0.9, 0.05)  # 5.6% > 5%: another layer
    assert stops(0.93, 0.9, 0.05)  # 3.3%: stop
    assert stops(0.84, 0.8, 0.05)  # 5% (to float precision): "<= epsilon" stops
    assert stops(0.8, 0.8, 0.05)
    assert stops(0.85, 0.9, 0.06)  # falling counts as a change too (|.|)
    assert change_rate(0.0, 0.0) == 0.0 and stops(0.0, 0.0, 0.05)
    assert change_rate(0.2, 0.0) == math.inf and not stops(0.2, 0.0, 0.05)


def _blobs(seed: int = 0) -> tuple[np.ndarray, list[int]]:
    """Three well-separated blobs of twenty points each in 4 dimensions."""
    rng = np.random.RandomState(seed)
    centres = np.array([[5, 0, 0, 0], [0, 5, 0, 0], [0, 0, 5, 0]], dtype=float)
    points = np.vstack([c + 0.5 * rng.randn(20, 4) for c in centres])
    return points, [i // 20 for i in range(60)]


def test_gmm_layer_finds_the_blobs_with_bic():
    points, truth = _blobs()
    expected = [[0] * 20, [1] * 20, [2] * 20]
    for reduction in ("none", "pca"):
        clusters = cluster_layer(points, assignment="hard", reduction=reduction, max_clusters=8)
        assert sorted(sorted(truth[i] for i in c) for c in clusters) == expected
    soft = cluster_layer(points, assignment="soft", reduction="none", max_clusters=8)
    assert sorted(sorted(truth[i] for i in c) for c in soft) == expected  # no doubt: no overlap
    assert cluster_sparsity(soft, 60) == pytest.approx(1 - 3 * 20 * 19 / (60 * 59))
    assert cluster_layer(points[:1]) == [[0]]
    # BIC over 1 .. min(N, max_clusters) - 1: two points can only form one cluster.
    assert cluster_layer(points[:2], reduction="none") == [[0, 1]]


def test_group_names_skip_numbers_and_open_nested_groups():
    assert group_names(["1931", "Harrowby", "Dunmere", "River Ost"]) == [
        "Harrowby", "Dunmere", "River Ost"]  # fmt: skip
    assert group_names(["Group: A, B, C", "Group: D, E"]) == ["A", "D", "B"]
    assert group_names(["1931", "1932"]) == ["1931", "1932"]


# --------------------------------------------------------------------------- prompt parser


def test_summary_entity_parser_and_prompt():
    reply = """```json
{"Entities": [{"Entity Name": "Harrowby Maritime Industry", "type": "Industry",
  "description": "Shipbuilding on the harbour."}, {"name": "no description"}],
 "relations": [{"source": "ALDERCOTT SHIPYARD", "target": "Harrowby Maritime Industry",
  "description": "A shipyard of the town.", "strength": "9"},
  {"src": "Tobiah Quell", "tgt": "Harrowby Maritime Industry", "strength": "high"}]}
```"""
    parsed = parse_summary_entities(reply)
    assert parsed["entities"] == [{"name": "Harrowby Maritime Industry", "type": "industry",
                                   "description": "Shipbuilding on the harbour."}]  # fmt: skip
    assert [r["strength"] for r in parsed["relationships"]] == [9.0, 1.0]
    for bad in ("", "No.", '{"entities": []}', '{"entities": [{"name": "X"}]}'):
        with pytest.raises(ParseError):
            parse_summary_entities(bad)
    messages = summary_entity_messages(["A: one", "B: two"], ["person", "location"])
    assert "person, location" in messages[1]["content"] and "- A: one" in messages[1]["content"]


# --------------------------------------------------------------------------- the layer, offline


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """An offline HiRAG index of the four harbour documents (built once, read-only)."""
    path = tmp_path_factory.mktemp("hirag") / "index"
    with _index(path) as index:
        index.insert(_docs(*HARBOUR_DOCS), methods=[METHOD])
    return path


def test_offline_build_layers_summaries_and_communities(built):
    with _index(built) as index:
        _consistent(index)
        records = level_records(index.resources)
        built_levels = [r for r in records if not r["stopped"]]
        assert built_levels and records[-1]["stopped"]  # at least layer 1, then a stop
        assert hirag_layer.summary_layers(index.resources) == len(built_levels)
        # The stop rule, exactly: every built layer after the first changed by more than
        # 5%, and the stop came from the rule (or from too few entities to cluster).
        for before, after in zip(built_levels, built_levels[1:], strict=False):
            assert change_rate(after["cs"], before["cs"]) > 0.05
        last = records[-1]
        if last["cs"] is not None:
            assert stops(last["cs"], built_levels[-1]["cs"], 0.05)
        summaries = index.store.nodes_of_kind(NodeKind.HI_SUMMARY)
        assert summaries and all(n.text and n.name.startswith("Group: ") for n in summaries)
        assert all(n.data["written_by"] == "extractive" for n in summaries)
        assert {n.data["level"] for n in summaries} <= {r["level"] for r in built_levels}
        # Every member of a multi-member layer-1 cluster links up (no summary-summary edge
        # within a layer).
        level_of = {n.id: n.data["level"] for n in summaries}
        for src, dst, _ in index.store.edge_rows([EdgeKind.HI_SUMMARY_OF]):
            assert level_of.get(src, 0) == level_of[dst] - 1
        linked = {s for s, _, _ in index.store.edge_rows([EdgeKind.HI_SUMMARY_OF])}
        members = [m for m in records[0]["members"] if m.startswith("ent:")]  # carried ones
        entities = {n.id for n in index.store.nodes_of_kind(NodeKind.ENTITY)}
        assert entities - set(members) <= linked
        # Communities span layers: some hold summary entities and base entities together.
        mixed = [n for n in index.store.nodes_of_kind(NodeKind.HI_COMMUNITY)
                 if {m.split(":")[0] for m in n.data["members"]} == {"ent", "hsum"}]  # fmt: skip
        assert mixed


def test_stop_rule_in_the_build_discards_the_last_clustering(tmp_path, monkeypatch):
    """Scripted clusterings: layer 1 halves the entities (CS ≈ 0.5), layer 2 keeps its two
    summaries apart (CS = 1, a change of ~100%: built, both carried up), layer 3 the same
    (CS = 1, change 0): the rule stops and layer 3 is never built."""
    calls = []

    def scripted(vectors, **kwargs):
        n = len(vectors)
        calls.append(n)
        if len(calls) == 1:
            return [list(range(n // 2)), list(range(n // 2, n))]
        return [[i] for i in range(n)]

    monkeypatch.setattr(hirag_levels, "cluster_layer", scripted)
    with _index(tmp_path / "i") as index:
        index.insert(_docs(*HARBOUR_DOCS), methods=[METHOD])
        records = level_records(index.resources)
        assert [r["stopped"] for r in records] == [False, False, True]
        assert records[1]["cs"] == records[2]["cs"] == 1.0
        assert records[2]["reason"] == "sparsity change rate within epsilon"
        assert hirag_layer.summary_layers(index.resources) == 2
        summaries = index.store.nodes_of_kind(NodeKind.HI_SUMMARY)
        assert len(summaries) == 2 and {n.data["level"] for n in summaries} == {1}
        assert sorted(records[1]["members"]) == sorted(n.id for n in summaries)  # carried
        assert calls[1:] == [2, 2]
        _consistent(index)


def test_a_single_cluster_then_too_few_entities(tmp_path, monkeypatch):
    monkeypatch.setattr(hirag_levels, "cluster_layer", lambda v, **kw: [list(range(len(v)))])
    with _index(tmp_path / "i") as index:
        index.insert(_docs("harbour", "mayor"), methods=[METHOD])
        records = level_records(index.resources)
        assert records[0]["cs"] == 0.0 and not records[0]["stopped"]
        assert records[1]["reason"] == "fewer than two entities"
        (summary,) = index.store.nodes_of_kind(NodeKind.HI_SUMMARY)
        entities = index.store.nodes_of_kind(NodeKind.ENTITY)
        assert len(index.store.edges_of(summary.id, EdgeKind.HI_SUMMARY_OF)) == len(entities)


def test_flat_ablation_builds_no_summary_layer(tmp_path):
    with _index(tmp_path / "i") as index:
        index.insert(_docs("harbour", "expedition"), methods=[f"{METHOD},max_layers=0"])
        assert not index.store.nodes_of_kind(NodeKind.HI_SUMMARY)
        assert index.store.nodes_of_kind(NodeKind.HI_COMMUNITY)
        assert index.retrieve(QUESTION, "hirag").passages


# --------------------------------------------------------------------------- with an LLM


class SummaryLLM(ScriptedLLM):
    """Scripted double for the summary-entity and report prompts. A summary reply names
    one entity after the cluster's first member, relates the first two members to it,
    adds two invalid relations (an unknown source; summary to summary) and leaves the
    other members to the fallback links; every third summary reply is prose (malformed).
    Report replies are a fixed JSON report."""

    def __init__(self):
        super().__init__(responder=self.reply)
        self.summaries = 0

    def reply(self, messages, params) -> str:
        user = messages[-1]["content"]
        if user.startswith("Write the report"):
            return json.dumps({"title": "A community", "summary": "Scripted summary.",
                               "rating": 5, "findings": []})  # fmt: skip
        assert user.startswith("Meta types:"), user[:60]
        self.summaries += 1
        if self.summaries % 3 == 0:
            return "These entities have something in common, I think."
        members = re.findall(r"^- ([^:\n]+)", user, flags=re.MULTILINE)
        name = f"THEME OF {members[0].upper()}"
        relations = [{"source": m, "target": name, "description": f"{m} is part of it.",
                      "strength": 8} for m in members[:2]]  # fmt: skip
        relations += [{"source": "Nobody Known", "target": name, "strength": 5},
                      {"source": name, "target": name, "strength": 5}]  # fmt: skip
        return json.dumps({"entities": [{"name": name, "type": "event",
                                          "description": f"What {members[0]} stands for."}],
                           "relationships": relations})  # fmt: skip


def test_llm_summary_entities_validate_links_and_fall_back(tmp_path):
    llm = SummaryLLM()
    with _index(tmp_path / "i", llm=llm) as index:
        index.insert(_docs(*HARBOUR_DOCS), methods=[METHOD])
        _consistent(index)
        summaries = index.store.nodes_of_kind(NodeKind.HI_SUMMARY)
        by = {n.data["written_by"] for n in summaries}
        assert llm.summaries >= 1 and "llm" in by
        assert ("extractive" in by) == (llm.summaries >= 3)
        for node in summaries:
            edges = index.store.edges_of(node.id, EdgeKind.HI_SUMMARY_OF)
            into = [e for e in edges if e.dst == node.id]
            assert into  # every summary entity has members
            assert all(e.src != node.id for e in into)  # no self or summary-summary link
            if node.data["written_by"] == "llm":
                assert node.name.startswith("THEME OF ") and node.data["type"] == "event"
                strong = [e for e in into if e.weight == 8]
                assert 1 <= len(strong) <= 2  # the LLM's links, kept with their strength
                assert all(e.data.get("templated") for e in into if e.weight != 8)
        usage = index.tracker.report()["stages"]
        assert any(k.startswith("build:hirag:level") for k in usage)
        reports = index.store.nodes_of_kind(NodeKind.HI_COMMUNITY)
        assert {n.data["written_by"] for n in reports} == {"llm"}


# --------------------------------------------------------------------------- freshness, resume


def test_insert_and_delete_keep_the_hierarchy_fresh(tmp_path):
    with _index(tmp_path / "i") as index:
        index.insert(_docs("harbour", "expedition", "mayor"), methods=[METHOD])
        _consistent(index)
        index.insert(_docs("festival"))
        _consistent(index)
        festival = {n.id for n in index.store.nodes_of_kind(NodeKind.ENTITY)
                    if "Lantern" in (n.name or "")}  # fmt: skip
        assert festival
        summaries_before = {n.id for n in index.store.nodes_of_kind(NodeKind.HI_SUMMARY)}
        communities_before = {n.id for n in index.store.nodes_of_kind(NodeKind.HI_COMMUNITY)}
        index.delete("festival")
        _consistent(index)
        for node in index.store.nodes_of_kind(NodeKind.HI_COMMUNITY):
            assert not festival & set(node.data["members"])
        gone = summaries_before - {n.id for n in index.store.nodes_of_kind(NodeKind.HI_SUMMARY)}
        assert index.vectors.existing(SUMMARY_COLLECTION, sorted(gone)) == set()
        vanished = communities_before - {
            n.id for n in index.store.nodes_of_kind(NodeKind.HI_COMMUNITY)}  # fmt: skip
        assert vanished
        assert index.vectors.existing(HIRAG_COMMUNITIES.collection, sorted(vanished)) == set()
        result = index.retrieve("When is the Lantern Tide Festival held?", "hirag")
        assert "festival" not in result.passages
        # Unchanged graph: nothing to do.
        assert index.layer("hirag").pending(index.resources) == []
        # A rebuild from scratch ends as the incremental build did.
        counts = index.store.counts()
        index.rebuild(["hirag"])
        _consistent(index)
        assert index.store.counts() == counts


def test_a_crash_resumes_reusing_finished_layers(tmp_path, monkeypatch, built):
    original = hirag_layer.compute_communities

    def crash(*args, **kwargs):
        raise RuntimeError("killed")

    monkeypatch.setattr(hirag_layer, "compute_communities", crash)
    path = tmp_path / "i"
    with _index(path) as index, pytest.raises(RuntimeError):
        index.insert(_docs(*HARBOUR_DOCS), methods=[METHOD])
    monkeypatch.setattr(hirag_layer, "compute_communities", original)
    summarised = []
    real = hirag_levels.summarise_clusters
    monkeypatch.setattr(hirag_levels, "summarise_clusters",
                        lambda *a, **k: summarised.append(a[5]) or real(*a, **k))  # fmt: skip
    with _index(path) as index:
        index.insert([])
        assert summarised == []  # every finished layer was reused
        _consistent(index)
        resumed = index.store.counts()
    with _index(built) as index:
        clean = index.store.counts()
    assert resumed["nodes"] == clean["nodes"] and resumed["edges"] == clean["edges"]


# --------------------------------------------------------------------------- retrieval


def test_bfs_paths_and_chained_walk():
    from hygraph.graph.view import build_walk_graph

    graph = build_walk_graph([("a", "b", 1), ("b", "c", 1), ("c", "d", 1), ("a", "d", 5),
                              ("x", "y", 1)])  # fmt: skip
    assert shortest_path(graph, "a", "c") in (["a", "b", "c"], ["a", "d", "c"])
    assert shortest_path(graph, "a", "d") == ["a", "d"]  # unweighted: one hop
    assert shortest_path(graph, "a", "x") == [] and shortest_path(graph, "a", "zz") == []
    # Consecutive keys are joined; a disconnected key is appended and the walk goes on.
    assert chained_walk(graph, ["a", "d", "x", "y"]) == ["a", "d", "x", "y"]
    assert chained_walk(graph, ["b", "d"]) == ["b", "c", "d"] or chained_walk(
        graph, ["b", "d"]) == ["b", "a", "d"]  # fmt: skip


@covers("hirag.entities", "hirag.communities", "hirag.bridge", "hirag.local", "hirag.sources")
def test_retrieval_has_the_three_levels_and_source_chunks(built):
    with _index(built) as index:
        state = index.method("hirag").run(index.resources, QUESTION)
        assert [t.name for t in state.trace] == [
            "question.embed", "hirag.entities", "hirag.communities", "hirag.bridge",
            "hirag.local", "hirag.sources", "merge.context"]  # fmt: skip
        assert 0 < len(state.nodes) <= 20
        assert all(h.cosine > 0.2 for h in state.nodes)
        assert state.evidence["reports"] and state.evidence["bridge"]
        assert all(r.metadata["level"] <= 2 for r in state.evidence["reports"])
        titles = [s.title for s in state.context.sections]
        assert titles == ["Backgrounds", "Reasoning Path", "Detail Entity Information",
                          "Source Documents"]  # fmt: skip
        walk = state.subgraph["bridge_walk"]
        on_walk = set(walk)
        for item in state.evidence["bridge"]:
            assert set(item.metadata["member_ids"]) <= on_walk
        ranks = [i.metadata["rank"] for i in state.evidence["bridge"]]
        assert ranks == sorted(ranks, reverse=True)
        # Passages: the local entities' source chunks first.
        chunks = [i.id for i in state.evidence["chunks"]]
        assert state.context.chunk_ranking()[: len(chunks)] == chunks
        result = index.retrieve(QUESTION, "hirag")
        assert result.passages[0] == "expedition"
        assert {"community", "relationship", "entity", "chunk"} <= {i.kind for i in result.items}


@covers("hirag.bridge", "hirag.sources")
def test_ablation_options(built):
    with _index(built) as index:
        plain = index.method("hirag:bridge=none").run(index.resources, QUESTION)
        assert plain.evidence["bridge"] == []
        onehop = index.method("hirag:bridge=onehop").run(index.resources, QUESTION)
        local = {h.id for h in onehop.nodes}
        assert all(local & set(i.metadata["member_ids"]) for i in onehop.evidence["bridge"])
        full = index.method("hirag:key_entity_scope=full_community").run(index.resources, QUESTION)
        assert full.evidence["bridge"]
        paper = index.method("hirag:include_source_chunks=false").run(index.resources, QUESTION)
        assert [s.title for s in paper.context.sections if s.items][
            -1
        ] == "Detail Entity Information"
        assert paper.context.chunk_ranking()  # entities, bridge and reports still cite chunks
    name, options = parse_method_spec("hirag:bridge=sideways")
    with pytest.raises(ConfigError):
        get_method(name)(options)
    with pytest.raises(ConfigError):
        get_method("hirag")({"passage_rank": "chunks+nothing"})


def test_describe(capsys):
    assert main(["methods", "--describe", "hirag"]) == 0
    out = capsys.readouterr().out
    assert "hirag.bridge" in out and "sparsity_epsilon" in out and "paper" in out


# --------------------------------------------------------------------------- frameworks


def test_llama_index_langchain_and_cli(tmp_path, minilm, capsys):
    pytest.importorskip("llama_index.core")
    pytest.importorskip("langchain_core")
    from li_support import li_documents

    from langchain_hygraph import HyGraphRetriever
    from llama_index_hygraph import HyGraphIndex

    question = "Who designed the Caddow Bridge?"
    names = ["ilse-marrow.md", "great-dunmere-flood.md", "dunmere.md"]
    li = HyGraphIndex.from_documents(li_documents(names), method=METHOD,
                                     persist_dir=tmp_path / "li", embed_model=minilm)  # fmt: skip
    nodes = li.as_retriever(similarity_top_k=2).retrieve(question)
    assert len(nodes) == 2 and nodes[0].node.metadata["method"] == METHOD
    assert nodes[0].node.metadata["doc_ids"] == ["ilse-marrow.md"]
    li.close()
    with GraphIndex.open(tmp_path / "li", embedder=minilm, progress=False) as opened:
        docs = HyGraphRetriever(index=opened, method="hirag", top_k=3).invoke(question)
    assert len(docs) == 3 and "Ilse Marrow" in docs[0].page_content
    assert main(["query", "--index", str(tmp_path / "li"), "--method", "hirag", "--json",
                 question]) == 0  # fmt: skip
    result = json.loads(capsys.readouterr().out)
    assert result["method"] == "hirag" and result["items"]
