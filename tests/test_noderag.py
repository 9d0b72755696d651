"""NodeRAG (``noderag``): decomposition into the heterograph, augmentation through the
index, exact-match entry points, search quotas and filtering, ablations, incremental
insert and delete, crash resume, LLM-written attributes and insights, and the CLI."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from corpora import HARBOUR_DOCS

import hygraph.layers.heterograph as heterograph_layer
from hygraph import GraphIndex
from hygraph.cli import main
from hygraph.extract import Entity, Extraction, Relation, Unit
from hygraph.extract.extractive import extractive_summary, sentences
from hygraph.graph.algorithms.exact_match import ExactMatcher
from hygraph.graph.entity_graph import entity_node_id
from hygraph.graph.heterograph import (
    HeterographBuilder,
    node_type,
    relationship_id,
    statement,
    unit_id,
)
from hygraph.graph.kinds import HETEROGRAPH_EDGES, HETEROGRAPH_STRUCTURAL, EdgeKind
from hygraph.graph.store import GraphStore
from hygraph.graph.view import graph_view
from hygraph.ingest import Document
from hygraph.layers.heterograph import NODE_COLLECTION
from hygraph.methods.noderag import NodeRAG
from hygraph.models.base import LLMResponse
from hygraph.operators.recipe import resolve
from hygraph.operators.registry import get_operator
from hygraph.operators.state import State
from hygraph.operators.subgraph import heterograph

# --------------------------------------------------------------------------- decomposition


def ent(name: str) -> str:
    return entity_node_id(name.casefold())


def _extractions() -> list[Extraction]:
    a = Extraction(
        "c1",
        entities=[Entity("Ada Lovelace"), Entity("Charles Babbage"), Entity("London")],
        relations=[Relation("Ada Lovelace", "Charles Babbage", "worked with")],
        units=[
            Unit("Ada Lovelace worked with Charles Babbage in London."),
            Unit("She wrote the first program.", entities=["ADA LOVELACE"]),
        ],
    ).normalised()
    b = Extraction(
        "c2",
        entities=[Entity("Charles Babbage"), Entity("Ada Lovelace")],
        relations=[Relation("Charles Babbage", "Ada Lovelace", "corresponded with")],
        units=[Unit("Ada Lovelace worked with Charles Babbage in London.")],
    ).normalised()
    return [a, b]


def test_decompose_plans_units_relationships_and_their_edges():
    store = GraphStore(None)
    dec = HeterographBuilder(store).decompose(_extractions())
    shared = unit_id("Ada Lovelace worked with Charles Babbage in London.")
    program = unit_id("She wrote the first program.")
    nodes = {n.id: n for n in dec.update.nodes}
    # The unit stated in both chunks is one S node with weight 2 (mention count).
    assert nodes[shared].data["weight"] == 2 and set(nodes[shared].sources) == {"c1", "c2"}
    # Units without listed entities link to the chunk entities they name (whole words);
    # units that list theirs link to those only.
    edges = {(e.src, e.dst, e.kind): e for e in dec.update.edges}
    for name in ("Ada Lovelace", "Charles Babbage", "London"):
        assert (shared, ent(name), EdgeKind.UNIT_MENTION) in edges
    assert edges[(shared, ent("Ada Lovelace"), EdgeKind.UNIT_MENTION)].weight == 2.0  # both chunks
    assert (program, ent("Ada Lovelace"), EdgeKind.UNIT_MENTION) in edges
    assert (program, ent("London"), EdgeKind.UNIT_MENTION) not in edges
    # One R per unordered pair; both directions' statements merge into it.
    rid = relationship_id(ent("Ada Lovelace"), ent("Charles Babbage"))
    assert rid == relationship_id(ent("Charles Babbage"), ent("Ada Lovelace"))
    assert nodes[rid].text == (
        "Ada Lovelace worked with Charles Babbage; Charles Babbage corresponded with Ada Lovelace"
    )
    assert (rid, ent("Ada Lovelace"), EdgeKind.RELATIONSHIP_END) in edges and (
        rid,
        ent("Charles Babbage"),
        EdgeKind.RELATIONSHIP_END,
    ) in edges
    assert not any(
        e.kind == EdgeKind.RELATIONSHIP_END and e.src == shared for e in edges.values()
    )  # R–N only
    # T–S edges: each chunk to the units decomposed from it.
    assert {(e.src, e.dst) for e in edges.values() if e.kind == EdgeKind.TEXT} == {
        ("c1", shared), ("c1", program), ("c2", shared),
    }  # fmt: skip
    g1 = dec.g1
    assert g1.nodes[shared]["type"] == "S" and g1.nodes[rid]["type"] == "R"
    assert g1.nodes[ent("Ada Lovelace")]["type"] == "N"
    assert g1.nodes[ent("Ada Lovelace")]["weight"] == 3  # three unit mentions


def test_relationships_can_link_to_their_units():
    store = GraphStore(None)
    dec = HeterographBuilder(store, link_relationships_to_units=True).decompose(_extractions())
    rid = relationship_id(ent("Ada Lovelace"), ent("Charles Babbage"))
    assert any(e.dst == rid and e.src.startswith("unit:") for e in dec.update.edges)


def test_statement_and_node_types():
    assert statement("A", "", "B") == "A related to B"
    assert (
        statement("Ada", "met", "Babbage", "Ada met Babbage in 1833.") == "Ada met Babbage in 1833."
    )
    assert statement("Ada", "met", "Babbage", "They met.") == "Ada met Babbage"
    ids = ("unit:1", "ent:x", "nrel:2", "attr:3", "high:4", "over:5", "c9")
    assert "".join(node_type(i) for i in ids) == "SNRAHOT"


def test_decompose_merges_with_stored_relationship_statements():
    store = GraphStore(None)
    builder = HeterographBuilder(store)
    first, second = _extractions()
    builder.write(builder.decompose([first]).update)
    dec = builder.decompose([second])
    rid = relationship_id(ent("Ada Lovelace"), ent("Charles Babbage"))
    node = next(n for n in dec.update.nodes if n.id == rid)
    assert set(node.data["statements"]) == {"c1", "c2"}
    shared = next(n for n in dec.update.nodes if n.kind == "unit")
    assert shared.data["weight"] == 2  # counted with the chunk stored earlier


# --------------------------------------------------------------------------- exact match


def test_exact_match_is_whole_word_phrase_containment():
    matcher = ExactMatcher(
        {
            "n1": "NOBEL PRIZE",
            "n2": "HINTON",
            "n3": "NOBELIUM",
            "o1": "AI importance",
            "n4": "U.S. Army",
        }
    )
    assert matcher.match(["Nobel"]) == ["n1"]  # not NOBELIUM: whole words only
    assert matcher.match(["nobel prize", "hinton"]) == ["n1", "n2"]
    assert matcher.match(["prize nobel"]) == []  # a phrase keeps its order
    assert matcher.match(["importance"]) == ["o1"]
    assert matcher.match(["u.s."]) == ["n4"]
    assert matcher.match(["Nobel"], equal=True) == []
    assert matcher.match(["nobel  PRIZE"], equal=True) == ["n1"]
    assert matcher.match(["", "  "]) == []


# --------------------------------------------------------------------------- extractive


def test_extractive_summary_picks_central_sentences_never_empty():
    texts = [
        "The shipyard built ferries. The shipyard closed in 1984.",
        "The shipyard built ferries.",  # a duplicate counts once
        "Gulls nest on the cliffs.",
    ]
    summary = extractive_summary(texts, max_words=10)
    assert summary.startswith("The shipyard")
    assert "Gulls" not in summary and len(summary.split()) <= 10
    assert extractive_summary(["the of and"], 5) == "the of and"
    assert extractive_summary([""], 5) == ""
    long = extractive_summary(["word " * 50], 5)
    assert long.split()[:5] == ["word"] * 5 and long.endswith("…")
    assert sentences("One. Two! 3 three?") == ["One.", "Two!", "3 three?"]


# --------------------------------------------------------------------------- through the index

DOCS = HARBOUR_DOCS


def _docs(*names: str) -> list[Document]:
    return [Document(text=DOCS[n][1], id=n, title=DOCS[n][0]) for n in names]


@pytest.fixture(scope="module")
def built(tmp_path_factory, minilm):
    """An offline NodeRAG index of the four documents (built once, read-only)."""
    path = tmp_path_factory.mktemp("noderag") / "index"
    with GraphIndex(path, embedder=minilm, progress=False) as index:
        index.insert(_docs(*DOCS), methods=["noderag"])
    return path


def _integrity(index: GraphIndex) -> None:
    """Every NodeRAG edge joins stored nodes or chunks; every embedded node has a vector."""
    chunks = set(index.store.chunk_ids())
    rows = index.store.edge_rows([*HETEROGRAPH_STRUCTURAL, EdgeKind.SEMANTIC])
    ends = {x for s, d, _ in rows for x in (s, d)}
    nodes = index.store.get_nodes(ends - chunks)
    for s, d, _ in rows:
        for x in (s, d):
            assert x in chunks or x in nodes, (s, d, x)
    embedded = [
        n.id
        for kind in ("unit", "attribute", "high_level")
        for n in index.store.nodes_of_kind(kind)
    ]
    assert index.vectors.count(NODE_COLLECTION) == len(embedded)


def run_step(res, state: State, method, op: str) -> State:
    """Run the step ``op`` of ``method``'s recipe on ``state``, its parameters resolved
    from the method's config as the recipe would."""
    [step] = [s for s in method.recipe if s.op == op]
    get_operator(op).fn(res, state, **resolve(step.params, method.config, state, 0, op))
    return state


def ops(state: State) -> list[str]:
    """The operators a run went through, in order (its trace)."""
    return [t.name for t in state.trace]


def test_build_makes_all_seven_types_with_nonempty_texts(built, minilm):
    with GraphIndex(built, embedder=minilm, progress=False) as index:
        counts = index.store.counts()
        kinds = counts["nodes"]
        for kind in ("unit", "entity", "relationship", "attribute", "high_level", "overview"):
            assert kinds.get(kind, 0) > 0, kind
        for kind in ("attribute", "high_level", "overview"):
            assert all((n.text or "").strip() for n in index.store.nodes_of_kind(kind))
        edges = counts["edges"]
        for kind in sorted(set(HETEROGRAPH_EDGES) - {EdgeKind.UNIT_RELATIONSHIP}):
            assert edges.get(kind, 0) > 0, kind
        # Each A hangs off its entity; each O points to an H; H link only to S and A.
        for a in index.store.nodes_of_kind("attribute"):
            assert a.data["written_by"] == "extractive"
            assert a.text.startswith(f"{a.name}:")
            assert any(e.kind == EdgeKind.ATTRIBUTE_OF for e in index.store.edges_of(a.id))
        for src, dst, _ in index.store.edge_rows([EdgeKind.MEMBER]):
            assert node_type(src) == "H" and node_type(dst) in ("S", "A")
        for src, dst, _ in index.store.edge_rows([EdgeKind.TITLE]):
            assert node_type(src) == "H" and node_type(dst) == "O"
        # Semantic edges join embedded types only (T, S, A, H).
        for src, dst, _ in index.store.edge_rows([EdgeKind.SEMANTIC]):
            assert node_type(src) in "TSAH" and node_type(dst) in "TSAH"
        _integrity(index)


def test_search_filters_types_and_respects_quotas(built, minilm):
    with GraphIndex(built, embedder=minilm, progress=False) as index:
        method = index.method("noderag:entry_points=3,content_quota=2,relationship_quota=4")
        context = method.retrieve(
            index.resources, "Who commanded Gannet's Reach on the expedition?"
        )
        items = context.items
        kinds = {i.kind for i in items}
        assert kinds <= {"high_level", "attribute", "unit", "relationship", "chunk"}
        via = [i for i in items if i.metadata.get("via") == "vector"]
        assert len(via) == 3  # the vector entry points
        rels = [i for i in items if i.kind == "relationship"]
        assert len(rels) <= 4 and all(i.metadata["via"] == "ppr" for i in rels)
        cross_content = [
            i for i in items if i.metadata["via"] == "ppr" and i.metadata["type"] in "TS"
        ]
        assert len(cross_content) <= 2  # A/H also come from N/O expansion
        # Sections follow the type order; a type's entries come before its cross nodes.
        titles = [s.title for s in context.sections]
        order = ["High-level elements", "Entity attributes", "Semantic units", "Relationships",
                 "Source passages"]  # fmt: skip
        assert titles == [t for t in order if t in titles]
        for section in context.sections:
            flags = [i.metadata["via"] for i in section.items]
            assert flags == sorted(flags, key=lambda v: v != "vector")
        assert context.chunk_ranking()


def test_the_query_top_k_changes_no_entry_point_or_walk(built, minilm):
    question = "Who commanded Gannet's Reach on the expedition?"
    with GraphIndex(built, embedder=minilm, progress=False) as index:
        for name in ("noderag", "noderag-fused"):  # the same layer: one build serves both
            method = index.method(name)
            five, ten = (method.run(index.resources, question, k) for k in (5, 10))
            ranking = five.context.chunk_ranking()
            assert ranking[:5] == ten.context.chunk_ranking()[:5] and ranking, name
            assert five.context.items == ten.context.items, name
            steps = [[(t.name, t.params, t.added) for t in s.trace] for s in (five, ten)]
            assert steps[0] == steps[1], name
            assert steps[0][1][:2] == ("node.entries", {"k": 10, "types": "T+S+A+H"}), name


def test_exact_entries_seed_the_walk(built, minilm):
    with GraphIndex(built, embedder=minilm, progress=False) as index:
        res = index.resources
        question = "Where was Renna Osk born?"
        method = index.method("noderag")
        state = run_step(res, State(question=question, top_k=10), method, "question.entities")
        terms = state.keywords
        assert "Renna Osk" in terms
        hits = run_step(res, state, method, "node.exact").subgraph["exact"]
        assert ent("Renna Osk") in hits
        # With only exact entries (no vector entries), PPR still reaches content nodes.
        walked = NodeRAG({"entry_points": 0}).run(res, question)
        assert walked.nodes == [] and "subgraph.shallow_ppr" in ops(walked)
        picked, exact = walked.subgraph.get("picked", []), walked.subgraph["exact"]
        assert exact and picked and all(node_type(p) not in "NO" for p in picked)
        units = index.store.get_nodes(p for p in picked if node_type(p) == "S")
        assert any("Renna Osk" in (n.text or "") for n in units.values())


def test_ablations(built, minilm):
    with GraphIndex(built, embedder=minilm, progress=False) as index:
        question = "Which shipyard built the vessel Renna Osk commanded?"
        res = index.resources
        plain = index.method("noderag:ppr=false").retrieve(res, question, 5)
        # The entry points (entry_points = 10), whatever the query's top_k.
        assert len(plain.items) == 10 and all(i.metadata["via"] == "vector" for i in plain.items)
        no_exact = index.method("noderag:exact_entries=false").run(res, question)
        assert no_exact.subgraph.get("exact", []) == []
        assert "node.exact" not in ops(no_exact) and "question.entities" not in ops(no_exact)
        assert "subgraph.shallow_ppr" in ops(no_exact)  # the walk still runs, vector entries only
        view = graph_view(index.store)
        full_view, _ = heterograph(view, index.method("noderag").config.semantic_edges)
        bare = index.method("noderag:semantic_edges=false").config.semantic_edges
        bare_view, _ = heterograph(view, bare)
        assert bare_view.adjacency.nnz < full_view.adjacency.nnz
        lazy = index.method("noderag:ppr_mode=lazy,cap_edge_weights=true").retrieve(res, question)
        assert lazy.items
        t_only = index.method("noderag:entry_types=T,ppr=false,entry_points=3").retrieve(
            res, question
        )
        assert {i.kind for i in t_only.items} == {"chunk"}


def test_fused_variant_ranks_passages_by_dense_and_walk(built, minilm):
    with GraphIndex(built, embedder=minilm, progress=False) as index:
        question = "Which shipyard built the vessel Renna Osk commanded?"
        fused = index.method("noderag-fused").retrieve(index.resources, question)
        assert fused.sections[0].title == "Source passages"
        passages = fused.sections[0].items
        assert 0 < len(passages) <= 5 and all(i.kind == "chunk" for i in passages)
        ranking = fused.chunk_ranking()
        assert [i.id for i in passages] == ranking[: len(passages)]
        dense = [h.id for h in index.search_chunks(question, 50)]
        assert set(ranking) >= set(dense)  # the dense ranking is one of the fused lists
        assert index.method("noderag-fused").config.semantic_edges is False


def test_bridge_units_lead_to_the_second_hop(built, minilm):
    with GraphIndex(built, embedder=minilm, progress=False) as index:
        # The nearest unit ("led by Renna Osk, who commanded Gannet's Reach") lends its
        # entities the question does not name; the ship's other units lead on.
        res = index.resources
        method = index.method("noderag-fused:bridge_pool=1,bridge_units=1")
        question = "Who built the ship that Renna Osk commanded?"
        query = index.embedder.embed_query(question)

        def bridge_chunks(method) -> list[str]:
            state = State(question=question, top_k=method.config.top_k, query=query)
            return run_step(res, state, method, "chunk.bridge_units").rankings["bridge"]

        chunks = bridge_chunks(method)
        harbour = index.store.chunks_of("harbour")[0].id  # names the builder, not Renna Osk
        assert harbour in chunks
        # Hubs are skipped: with a fanout of 0 no entity is a bridge.
        hubless = index.method("noderag-fused:bridge_pool=1,bridge_units=1,bridge_fanout=0")
        assert bridge_chunks(hubless) == []


def test_insert_and_delete_keep_the_layer_consistent(tmp_path, minilm):
    path = tmp_path / "idx"
    with GraphIndex(path, embedder=minilm, progress=False) as index:
        index.insert(_docs("harbour", "expedition", "mayor"), methods=["noderag"])
        before = index.store.counts()["nodes"]
        units_before = {n.id for n in index.store.nodes_of_kind("unit")}
        attrs_before = {n.id: n.text for n in index.store.nodes_of_kind("attribute")}
        view = graph_view(index.store)
        assert graph_view(index.store) is view  # the view is kept while the store is unchanged
        index.insert(_docs("festival"))  # joins without a rebuild
        assert graph_view(index.store) is not view  # a write replaces it
        after = index.store.counts()["nodes"]
        assert after["unit"] > before["unit"]
        festival_chunk = index.store.chunks_of("festival")[0].id
        new_units = {n.id for n in index.store.nodes_of_kind("unit")} - units_before
        assert new_units and all(
            festival_chunk in index.store.get_nodes([u])[u].sources for u in new_units
        )
        # Existing attributes are not rewritten by an insert (spec §5).
        for aid, text in attrs_before.items():
            assert index.store.get_nodes([aid])[aid].text == text
        # New units are reachable: linked to their chunk and to semantic neighbours.
        some = next(iter(new_units))
        kinds = {e.kind for e in index.store.edges_of(some)}
        assert EdgeKind.TEXT in kinds and EdgeKind.SEMANTIC in kinds
        _integrity(index)
        # Inserting the same documents again changes nothing.
        again = index.store.counts()
        index.insert(_docs("festival"))
        assert index.store.counts() == again
        # Deleting takes the document's contribution with it.
        index.delete("festival")
        _integrity(index)
        remaining = {n.id for n in index.store.nodes_of_kind("unit")}
        assert remaining == units_before
        for node in index.store.nodes_of_kind("relationship"):
            assert festival_chunk not in node.data["statements"]
        assert not index.store.nodes_from_sources([festival_chunk])
        result = index.retrieve("When is the Lantern Tide Festival held?", "noderag")
        assert festival_chunk not in result.chunks


def test_rebuild_recomputes_the_layer_over_the_whole_corpus(tmp_path, minilm, built):
    path = tmp_path / "idx"
    with GraphIndex(path, embedder=minilm, progress=False) as index:
        index.insert(_docs("harbour", "expedition"), methods=["noderag"])
        index.insert(_docs("mayor", "festival"))  # incremental: its own communities
        index.rebuild(["noderag"])
        _integrity(index)
        rebuilt = index.store.counts()
    with GraphIndex(built, embedder=minilm, progress=False) as index:
        clean = index.store.counts()
    assert rebuilt["nodes"] == clean["nodes"] and rebuilt["edges"] == clean["edges"]
    assert main(["index", "--index", str(path), "--method", "noderag", "--rebuild"]) == 0


def test_a_crash_mid_build_resumes_without_duplicates(tmp_path, minilm, monkeypatch, built):
    path = tmp_path / "idx"
    calls = {"n": 0}
    original = heterograph_layer.build_elements  # the layer's high-level element step

    def crash(*args, **kwargs):
        calls["n"] += 1
        raise RuntimeError("killed")

    monkeypatch.setattr(heterograph_layer, "build_elements", crash)
    with GraphIndex(path, embedder=minilm, progress=False) as index:
        with pytest.raises(RuntimeError):
            index.insert(_docs(*DOCS), methods=["noderag"])
    monkeypatch.setattr(heterograph_layer, "build_elements", original)
    with GraphIndex(path, embedder=minilm, progress=False) as index:
        index.insert([], methods=["noderag"])
        resumed = index.store.counts()
        _integrity(index)
    with GraphIndex(built, embedder=minilm, progress=False) as index:
        clean = index.store.counts()
    assert calls["n"] == 1
    assert resumed["nodes"] == clean["nodes"] and resumed["edges"] == clean["edges"]


# --------------------------------------------------------------------------- with an LLM


class ScriptedLLM:
    """Test double: a scripted stand-in for a chat model. It recognises NodeRAG's prompts
    by their system message and answers with realistic replies: attribute portraits (one
    wrapped in a preamble label and a code fence), high-level elements as JSON (one reply
    in prose, which must fall back to an extractive element), query elements as JSON, and
    answers. ``fail`` makes every call raise, as an unreachable endpoint would."""

    name = "scripted"

    def __init__(self, fail: bool = False):
        from hygraph.prompts import noderag as p

        self.p = p
        self.fail = fail
        self.seen: list[str] = []
        self.high_calls = 0

    def _reply(self, messages) -> str:
        system = messages[0]["content"]
        user = messages[-1]["content"]
        p = self.p
        if system[:40] == p.ATTRIBUTE_SYSTEM[:40]:
            self.seen.append("attribute")
            return "```\nSummary: A notable figure of the Harrowby waterfront.\n```"
        if system[:40] == p.HIGH_LEVEL_SYSTEM[:40]:
            self.seen.append("high_level")
            self.high_calls += 1
            if self.high_calls == 1:
                return "I am sorry, I cannot produce JSON today."
            return json.dumps(
                {
                    "high_level_elements": [
                        {
                            "title": "Maritime heritage",
                            "description": "Shipbuilding shaped the town.",
                        },
                        {"title": "Civic life", "description": "Mayors rebuilt the harbour."},
                    ]
                }
            )
        if system[:40] == p.QUERY_ELEMENTS_SYSTEM[:40]:
            self.seen.append("query")
            return '{"elements": ["Renna Osk", "Maritime heritage"]}'
        if system[:40] == p.ANSWER_SYSTEM[:40]:
            self.seen.append("answer")
            assert "Renna" in user or "context" in user.lower()
            return "Renna Osk was born in Harrowby."
        raise AssertionError(f"unexpected prompt: {system[:60]!r}")

    async def acomplete(self, messages, **params):
        return self.complete(messages, **params)

    def complete(self, messages, **params):
        if self.fail:
            from hygraph.errors import ModelError

            raise ModelError("connection refused")
        return LLMResponse(self._reply(messages), 10, 5)


def test_llm_writes_attributes_and_insights_with_fallbacks(tmp_path, minilm):
    llm = ScriptedLLM()
    with GraphIndex(
        tmp_path / "idx", embedder=minilm, llm=llm, progress=False, llm_in_retrieval=True
    ) as index:
        index.insert(_docs(*DOCS), methods=["noderag"])
        attrs = index.store.nodes_of_kind("attribute")
        assert attrs and all(
            a.text == "A notable figure of the Harrowby waterfront." for a in attrs
        )
        assert all(a.data["written_by"] == "llm" for a in attrs)
        highs = {n.text for n in index.store.nodes_of_kind("high_level")}
        assert "Shipbuilding shaped the town." in highs
        titles = {n.text for n in index.store.nodes_of_kind("overview")}
        assert "Maritime heritage" in titles
        assert len(highs) >= 3  # the prose reply fell back to an extractive element
        result = index.query("Where was Renna Osk born?", "noderag", answer=True)
        assert result.answer == "Renna Osk was born in Harrowby."
        assert "query" in llm.seen and "answer" in llm.seen
        # The query element "Maritime heritage" matches an O title: its H joins the walk.
        state = index.method("noderag").run(index.resources, "Where was Renna Osk born?")
        assert "Maritime heritage" in state.keywords  # the LLM's query elements
        exact = state.subgraph["exact"]
        assert any(node_type(x) == "O" for x in exact)
        # A delete writes the attributes and elements that lost sources again (LLM).
        calls = len(llm.seen)
        index.delete("festival")
        _integrity(index)
        assert all(n.text for n in index.store.nodes_of_kind("high_level"))
        assert all(n.text for n in index.store.nodes_of_kind("attribute"))
        assert len(llm.seen) > calls and set(llm.seen[calls:]) <= {"attribute", "high_level"}


def test_failing_llm_falls_back_to_extractive(tmp_path, minilm):
    with GraphIndex(tmp_path / "idx", embedder=minilm, progress=False) as index:
        index.insert(_docs("harbour", "mayor"), methods=["vanilla"])
    with GraphIndex(tmp_path / "idx", llm=ScriptedLLM(fail=True), progress=False) as index:
        index.insert([], methods=["noderag"])
        assert all(
            a.data["written_by"] == "extractive" for a in index.store.nodes_of_kind("attribute")
        )
        assert all(n.text for n in index.store.nodes_of_kind("high_level"))
        result = index.retrieve("Who was Mayor of Harrowby?", "noderag")  # entries: vectors only
        assert result.items


# --------------------------------------------------------------------------- CLI


def test_cli_index_and_query_json(tmp_path, capsys, built):
    path = tmp_path / "copy"
    shutil.copytree(built, path)
    assert main(["query", "--index", str(path), "--method", "noderag", "--json",
                 "Who founded Aldercott Shipyard?"]) == 0  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert out["method"] == "noderag" and out["context_tokens"] > 0
    assert {i["kind"] for i in out["items"]} <= {
        "high_level",
        "attribute",
        "unit",
        "relationship",
        "chunk",
    }
    assert main(["query", "--index", str(path), "--method", "noderag:ppr_mode=bad", "x"]) != 0


def test_view_matrix_counts_overlapping_edges_twice(built, minilm):
    with GraphIndex(built, embedder=minilm, progress=False) as index:
        store_view = graph_view(index.store)
        view, types = heterograph(store_view, index.method("noderag").config.semantic_edges)
        # One view per store version, its walk graph built once and shared by every query.
        assert graph_view(index.store) is store_view
        assert heterograph(graph_view(index.store), True)[0] is view
        assert list(types) == [node_type(i) for i in view.ids]
        rows = index.store.edge_rows([*HETEROGRAPH_STRUCTURAL, EdgeKind.SEMANTIC])
        pairs: dict[tuple[str, str], float] = {}
        for s, d, w in rows:
            key = (s, d) if s < d else (d, s)
            pairs[key] = pairs.get(key, 0.0) + w
        (a, b), w = max(pairs.items(), key=lambda kv: kv[1])
        dense = view.adjacency.toarray()
        assert dense[view.position[a], view.position[b]] == pytest.approx(w)
        assert np.allclose(dense, dense.T)


@pytest.mark.parametrize("doc", ["festival", "mayor"])
def test_a_delete_killed_between_rewrites_ends_like_one_that_ran_through(
    tmp_path, minilm, monkeypatch, built, doc
):
    """A kill after the rewritten A nodes were stored (before their vectors): the next
    run finishes the delete, and every A and H text equals an uninterrupted delete's."""
    from hygraph.layers.heterograph import maintain

    def texts(index: GraphIndex) -> dict[str, str]:
        return {n.id: n.text for kind in ("attribute", "high_level")
                for n in index.store.nodes_of_kind(kind)}  # fmt: skip

    shutil.copytree(built, tmp_path / "clean")
    shutil.copytree(built, tmp_path / "killed")
    with GraphIndex.open(tmp_path / "clean", embedder=minilm, progress=False) as index:
        index.delete(doc)
        expected = (texts(index), index.vectors.count(NODE_COLLECTION))
    embed = maintain.embed_nodes
    kills = []

    def killed_after_attributes(res, ids, node_texts, letter):
        if letter == "A" and ids:
            kills.append(len(ids))
            raise KeyboardInterrupt
        return embed(res, ids, node_texts, letter)

    index = GraphIndex.open(tmp_path / "killed", embedder=minilm, progress=False)
    with monkeypatch.context() as patched:
        patched.setattr(maintain, "embed_nodes", killed_after_attributes)
        with pytest.raises(KeyboardInterrupt):
            index.delete(doc)
    index.close()
    assert kills, "the delete rewrote no attribute: the kill point was not reached"
    with GraphIndex.open(tmp_path / "killed", embedder=minilm, progress=False) as index:
        index.insert([], methods=["noderag"])  # finishes the pending delete
        assert (texts(index), index.vectors.count(NODE_COLLECTION)) == expected
        _integrity(index)
