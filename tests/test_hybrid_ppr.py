"""``hybrid-ppr``, the recommended method: its guard, its walk prior, and being the default.

The guard (``merge.protect``) and the walk's first-stage prior (``chunk.ppr`` with
``prior=``) are checked on hand-made rankings and on the small hand-made knowledge graph
of ``test_ppr_methods`` (numbers solved by hand with numpy). Then the method runs offline
through ``GraphIndex``, the CLI, LlamaIndex and LangChain, as the method each uses when
none is named.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from corpora import HARBOUR_DOCS
from operator_coverage import covers
from test_ppr_methods import A, cosine, kg, op  # noqa: F401 - kg is a fixture

from hygraph import GraphIndex
from hygraph.errors import ConfigError
from hygraph.graph.ppr_views import passage_walk
from hygraph.graph.view import graph_view
from hygraph.ingest import Document
from hygraph.methods.base import RECOMMENDED_METHOD, available_methods, get_method
from hygraph.operators.fusion import reciprocal_rank_fusion
from hygraph.operators.merge import hold_floors, leaders, protect_ranks, rank_floors
from hygraph.operators.state import State

QUESTION = "Who commanded the research vessel built by the shipyard Josiah Aldercott founded?"


# --------------------------------------------------------------------------- the guard


def _ranked(*ids: str) -> list[tuple[str, float]]:
    return [(c, float(len(ids) - n)) for n, c in enumerate(ids)]


def test_protect_keeps_first_stage_hits_within_factor_times_rank():
    walk = _ranked("w1", "w2", "w3", "w4", "w5", "w6", "f1")
    # f1 (1st) must be in the top 2, f2 (2nd, absent) in the top 4, f3 (3rd, 3rd) stays.
    out = protect_ranks(walk, ["f1", "f2", "w3"], top=3, factor=2.0)
    assert [c for c, _ in out] == ["w1", "f1", "w2", "f2", "w3", "w4", "w5", "w6"]
    scores = [s for _, s in out]
    assert scores == sorted(scores, reverse=True)  # moved items take the displaced score
    # Already high enough: nothing moves; top=0 or factor large: the walk's order.
    assert protect_ranks(walk, ["w1", "w2"], top=2, factor=2.0) == walk
    assert protect_ranks(walk, ["f1"], top=0, factor=2.0) == walk
    assert protect_ranks(walk, ["f1"], top=1, factor=7.0) == walk
    # factor 1: the first stage's order at the top, then the rest of the walk.
    out = protect_ranks(walk, ["f1", "w5"], top=2, factor=1.0)
    assert [c for c, _ in out][:3] == ["f1", "w5", "w1"]
    # A short walk: the protected passage is appended, never lost.
    assert [c for c, _ in protect_ranks([], ["f1", "f2"], top=2, factor=2.0)] == ["f1", "f2"]


@covers("merge.protect")
def test_protect_operator_reads_a_named_ranking(kg):  # noqa: F811
    state = State("q", top_k=3)
    state.chunks = _ranked("a", "b", "c", "d")
    op("merge.protect", kg.res, state, ranking="first", top=3)
    assert [c for c, _ in state.chunks] == ["a", "b", "c", "d"]  # no such ranking: unchanged
    state.rankings["first"] = ["d"]
    op("merge.protect", kg.res, state, ranking="first", top=3, factor=2.0)
    assert [c for c, _ in state.chunks] == ["a", "d", "b", "c"]
    # keep=1: the ranking's best keeps rank 1 (the walk can no longer push it to 2).
    state.chunks = _ranked("a", "b", "c", "d")
    op("merge.protect", kg.res, state, ranking="first", top=3, keep=1)
    assert [c for c, _ in state.chunks] == ["d", "a", "b", "c"]


def test_keep_holds_the_leaders_at_their_ranks_and_floors_the_rest():
    walk = _ranked("w1", "w2", "w3", "w4", "w5", "w6")
    out = protect_ranks(walk, ["f1", "f2", "f3"], top=3, factor=2.0, keep=1)
    # f1 keeps rank 1; f2 ends at 4, f3 at 6 (2r): the walk's best passages between.
    assert [c for c, _ in out][:7] == ["f1", "w1", "w2", "f2", "w3", "f3", "w4"]
    out = protect_ranks(walk, ["f1", "f2", "f3"], top=3, factor=2.0, keep=2)
    assert [c for c, _ in out][:4] == ["f1", "f2", "w1", "w2"]


def test_hold_floors_meets_every_floor_together():
    walk = _ranked("w1", "w2", "w3", "w4", "w5", "w6", "w7", "d2", "f1", "d1")
    # Two passages due at 2 take the top two; d2 (due at 4) comes before the walk's w2.
    out = hold_floors(walk, {"f1": 2, "d1": 2, "d2": 4})
    assert [c for c, _ in out][:5] == ["f1", "d1", "w1", "d2", "w2"]
    scores = [s for _, s in out]
    assert scores == sorted(scores, reverse=True)
    assert sorted(c for c, _ in out) == sorted(c for c, _ in walk)  # nothing lost or doubled
    # Floors already met: the walk's order, scores and all.
    assert hold_floors(walk, {"w1": 2, "w3": 6}) == walk
    # One ranking's floors give protect_ranks' order (a sequence of single moves).
    first = ["f1", "d2", "w5"]
    assert hold_floors(walk, rank_floors(first, top=3, factor=2.0)) == protect_ranks(
        walk, first, top=3, factor=2.0
    )
    assert rank_floors(["a", "b", "c"], top=3, factor=2.0, keep=1) == {"a": 1, "b": 4, "c": 6}


def test_protect_also_holds_the_dense_rankings_best(kg):  # noqa: F811
    state = State("q", top_k=3)
    state.chunks = _ranked("w1", "w2", "w3", "w4", "w5", "w6", "d2", "d1")
    state.rankings["first"] = ["w1", "x"]
    state.rankings["dense"] = ["d1", "d2", "w1"]
    op("merge.protect", kg.res, state, ranking="first", top=2, factor=2.0, keep=1,
       also="dense", also_top=2, also_factor=2.0)  # fmt: skip
    # w1 keeps rank 1 (the first stage's best); d1 (dense 1st) ends in the top 2, d2
    # (dense 2nd) and x (the first stage's 2nd, absent from the walk) in the top 4.
    assert [c for c, _ in state.chunks][:4] == ["w1", "d1", "d2", "x"]
    # also_top=0 (the method's default): the first ranking alone is held.
    state.chunks = _ranked("w1", "w2", "w3", "w4", "w5", "w6", "d2", "d1")
    op("merge.protect", kg.res, state, ranking="first", top=2, factor=2.0, keep=1,
       also="dense", also_top=0)  # fmt: skip
    assert [c for c, _ in state.chunks][:4] == ["w1", "w2", "w3", "x"]


def test_protect_does_not_hold_a_second_chunk_of_a_document_in_view():
    from types import SimpleNamespace

    from hygraph.operators.merge import protect

    docs = {"a1": "A", "a2": "A", "b1": "B", "c1": "C", "e1": "E"}
    store = SimpleNamespace(
        get_chunks=lambda ids: {c: SimpleNamespace(doc_id=docs[c]) for c in ids if c in docs}
    )
    state = State("q", top_k=3)
    state.chunks = _ranked("a2", "b1", "c1", "a1", "e1")
    state.rankings["first"] = ["b1"]
    state.rankings["dense"] = ["a1", "e1"]
    protect(SimpleNamespace(store=store), state, ranking="first", top=1, factor=2.0,
            also="dense", also_top=2, also_factor=2.0)  # fmt: skip
    # a1 (dense 1st) is not pulled up to 2: a2, of the same document, stands above that;
    # e1 (dense 2nd), of a document not in view, is held at 4.
    assert [c for c, _ in state.chunks] == ["a2", "b1", "c1", "e1", "a1"]


def test_leaders_are_the_best_and_its_near_ties():
    # Gap from the 1st to the 5th score: 2.0 - 1.0 = 1; a third of it: 0.33.
    assert leaders([2.0, 1.8, 1.5, 1.2, 1.0], keep=1, tie=1 / 3, tie_rank=5, most=3) == 2
    assert leaders([2.0, 1.9, 1.7, 1.2, 1.0], keep=1, tie=1 / 3, tie_rank=5, most=3) == 3
    assert leaders([2.0, 1.6, 1.5, 1.2, 1.0], keep=1, tie=1 / 3, tie_rank=5, most=3) == 1
    assert leaders([2.0, 1.9, 1.8, 1.7, 1.0], keep=1, tie=1 / 3, tie_rank=5, most=2) == 2
    assert leaders([2.0, 1.9], keep=1, tie=0.0, tie_rank=5, most=3) == 1  # tie 0: keep only
    assert leaders([2.0, 2.0, 2.0], keep=1, tie=1 / 3, tie_rank=5, most=3) == 3  # all equal
    assert leaders([], keep=1, tie=1 / 3, tie_rank=5, most=3) == 0


def test_leaders_include_a_clear_head_above_the_widest_drop():
    # The two-hop check's "which came out first, A Lamp in Kessel or Northbound Hours?":
    # the second film 0.39 below the first (no tie: 0.39 > 1.018 / 3), then a drop of
    # 0.60 (over half of 1.018) before the rest: both films lead.
    kessel = [1.994, 1.605, 1.009, 0.978, 0.976]
    assert leaders(kessel, keep=1, tie=1 / 3, tie_rank=5, most=3) == 1
    assert leaders(kessel, keep=1, tie=1 / 3, tie_rank=5, most=3, gap=0.5) == 2
    assert leaders(kessel, keep=1, tie=1 / 3, tie_rank=5, most=3, gap=0.6) == 1  # too small
    # The widest drop after the 4th: more than `most` above it, so no head beyond the tie.
    assert leaders([2.0, 1.9, 1.8, 1.7, 0.0], keep=1, tie=0.0, tie_rank=5, most=3, gap=0.5) == 1
    # The widest drop after the 1st: only the best leads, as without the rule.
    assert leaders([2.0, 1.0, 0.9, 0.8, 0.7], keep=1, tie=1 / 3, tie_rank=5, most=3, gap=0.5) == 1
    # A tie already holding more is never cut back.
    assert leaders([2.0, 1.9, 1.8, 1.0, 0.9], keep=1, tie=1 / 3, tie_rank=5, most=3, gap=0.5) == 3
    assert leaders([2.0, 2.0, 2.0], keep=1, tie=0.0, tie_rank=5, most=3, gap=0.5) == 1  # no drop


@covers("merge.protect")
def test_protect_operator_keeps_near_ties_by_the_rankings_scores(kg):  # noqa: F811
    state = State("q", top_k=3)
    state.chunks = _ranked("w1", "w2", "f1", "f2", "f3")
    state.rankings["first"] = ["f1", "f2", "f3", "x", "y"]
    state.ranking_scores["first"] = [2.0, 1.95, 1.4, 1.2, 1.0]
    op("merge.protect", kg.res, state, ranking="first", top=3, keep=1, tie=1 / 3)
    assert [c for c, _ in state.chunks][:3] == ["f1", "f2", "w1"]  # f2 ties f1: both lead


# --------------------------------------------------------------------------- the prior


def test_walk_prior_adds_restart_mass_by_first_stage_rank(kg):  # noqa: F811
    question = "Which river does Lake Corva feed?"
    chunks = list(kg.chunk.values())
    first = [kg.chunk["d2"], kg.chunk["d3"]]
    state = State(question, top_k=3, seeds={A: 1.0})
    state.rankings["first"] = first
    op("chunk.ppr", kg.res, state, damping=0.5, passage_weight=0.05, prior="first",
       prior_weight=0.5, prior_k=1.0)  # fmt: skip
    g = passage_walk(graph_view(kg.store)).graph
    dense = {c: cosine(question, t) for c, t in kg.res.chunk_texts(chunks).items()}
    low, high = min(dense.values()), max(dense.values())
    r = np.zeros(len(g.ids))
    r[g.position[A]] = 1.0
    for c, s in dense.items():
        r[g.position[c]] += 0.05 * (s - low) / (high - low)
    for rank, c in enumerate(first, start=1):
        r[g.position[c]] += 0.5 * 2.0 / (1.0 + rank)  # (k + 1) / (k + rank), k = 1
    adj = g.adjacency.toarray()
    rows = adj.sum(axis=1, keepdims=True)
    transition = np.divide(adj, rows, out=np.zeros_like(adj), where=rows > 0)
    p = 0.5 * np.linalg.solve(np.eye(len(adj)) - 0.5 * transition.T, r / r.sum())
    for c, s in state.chunks:
        assert s == pytest.approx(p[g.position[c]], abs=1e-6)
    # Weight 0 is the HippoRAG 2 walk; with no seed the first stage is the ranking.
    plain, zero = State(question, top_k=3, seeds={A: 1.0}), State(question, top_k=3, seeds={A: 1.0})
    zero.rankings["first"] = first
    op("chunk.ppr", kg.res, plain)
    op("chunk.ppr", kg.res, zero, prior="first", prior_weight=0.0)
    assert plain.chunks == zero.chunks
    unseeded = State(question, top_k=3)
    unseeded.rankings["first"] = first
    op("chunk.ppr", kg.res, unseeded, prior="first", prior_weight=0.02)
    assert [c for c, _ in unseeded.chunks] == first


# --------------------------------------------------------------------------- the method


def test_exactly_one_method_is_recommended_and_its_config_is_checked():
    marked = [n for n in available_methods() if get_method(n).recommended]
    assert marked == [RECOMMENDED_METHOD] == ["hybrid-ppr"]
    method = get_method("hybrid-ppr")
    method.check()
    config = method.Config()
    assert (config.damping, config.passage_weight, config.link_top_k) == (0.7, 0.05, 5)
    assert (config.protect_top, config.protect_factor, config.candidates) == (3, 2.0, 50)
    for bad in ({"damping": 1.0}, {"recognition": "maybe"}, {"protect_factor": 0.5},
                {"prior_weight": -1}):  # fmt: skip
        with pytest.raises(ConfigError):
            method.Config.from_dict(bad)


def _docs(*names: str) -> list[Document]:
    return [Document(text=HARBOUR_DOCS[n][1], id=n, title=HARBOUR_DOCS[n][0]) for n in names]


@pytest.fixture(scope="module")
def default_index(tmp_path_factory, minilm) -> Path:
    """An offline index of the harbour corpus built with the default methods."""
    path = tmp_path_factory.mktemp("recommended") / "index"
    with GraphIndex(path, embedder=minilm, progress=False) as index:
        index.insert(_docs(*HARBOUR_DOCS))
    return path


def test_default_build_and_query_use_the_recommended_method(default_index, minilm):
    with GraphIndex(default_index, embedder=minilm, progress=False) as index:
        assert index.methods[0] == "hybrid-ppr" and {"vanilla", "bm25"} <= set(index.methods)
        assert index.default_method == "hybrid-ppr"
        result = index.query(QUESTION, top_k=2)
        assert result.method == "hybrid-ppr" and len(result.passages) == 2
        assert {"harbour", "expedition"} & set(result.passages)
        steps = [t["name"] for t in result.trace]
        assert (
            steps.index("chunk.ppr") < steps.index("merge.protect") < steps.index("chunk.evidence")
        )
        # The guard: the first stage's best passage is in the top 2 whatever the walk did.
        dense = index.query(QUESTION, "vanilla", top_k=10).passages
        lexical = index.query(QUESTION, "bm25", top_k=10).passages
        first = reciprocal_rank_fusion([dense, lexical], 60)[0][0]  # the first stage's best
        assert first in index.query(QUESTION, top_k=2).passages


def test_the_query_top_k_only_cuts_the_passages(default_index, minilm):
    with GraphIndex(default_index, embedder=minilm, progress=False) as index:
        five = index.retrieve(QUESTION, "hybrid-ppr", top_k=5)
        ten = index.retrieve(QUESTION, "hybrid-ppr", top_k=10)
    assert five.chunks[:5] == ten.chunks[:5] and five.chunks
    # Every step but the final cut ran with the same parameters.
    steps = [[(t["name"], t["params"]) for t in r.trace] for r in (five, ten)]
    assert steps[0][-2] == ("chunk.evidence", {"k": 5}) and steps[1][-2][1] == {"k": 10}
    assert steps[0][:-2] == steps[1][:-2] and steps[0][-1] == steps[1][-1]


def test_an_index_without_the_recommended_method_queries_its_first(tmp_path, minilm):
    with GraphIndex(tmp_path / "i", embedder=minilm, progress=False) as index:
        index.insert(_docs("harbour", "mayor"), methods=["bm25", "vanilla"])
        assert index.default_method == "bm25"
        assert index.query("Who was Mayor of Harrowby?").method == "bm25"


def test_without_synonyms_no_entity_vector_is_built(tmp_path, minilm):
    """``hybrid-ppr:synonyms=false`` walks without synonym edges, so nothing reads the
    entity vectors: an index of it builds neither them nor the synonyms (the cheaper build
    measured in ``musique-default-r2.md``), and it still answers with the walk."""
    with GraphIndex(tmp_path / "i", embedder=minilm, progress=False) as index:
        report = index.insert(_docs(*HARBOUR_DOCS), methods=["hybrid-ppr:synonyms=false"])
        stages = set(report.usage["stages"])
        assert "build:fact-vectors" in stages
        assert not stages & {"build:entity-vectors", "build:synonyms"}
        assert "entity-vectors" not in index.manifest.layers
        result = index.query(QUESTION, method="hybrid-ppr", top_k=3)
        assert result.passages and any(t["name"] == "chunk.ppr" for t in result.trace)
    assert get_method("hybrid-ppr")().layers == get_method("hybrid-ppr").layers  # default: all


def test_cli_marks_and_uses_the_recommended_method(default_index, capsys):
    from hygraph.cli import main

    assert main(["methods", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["hybrid-ppr"]["recommended"] is True
    assert not any(r["recommended"] for n, r in rows.items() if n != "hybrid-ppr")
    assert main(["methods"]) == 0
    listing = capsys.readouterr().out
    assert "* hybrid-ppr" in listing and "recommended" in listing
    assert main(["query", QUESTION, "--index", str(default_index), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["method"] == "hybrid-ppr"


def test_framework_integrations_default_to_the_recommended_method(tmp_path, minilm):
    from langchain_core.documents import Document as LCDocument
    from llama_index.core import Document as LIDocument

    from langchain_hygraph import HyGraphRetriever as LangChainRetriever
    from llama_index_hygraph import HyGraphIndex

    texts = [LIDocument(text=HARBOUR_DOCS[n][1], id_=n) for n in HARBOUR_DOCS]
    with HyGraphIndex.from_documents(texts, persist_dir=tmp_path / "li") as li:
        nodes = li.as_retriever(similarity_top_k=2).retrieve(QUESTION)
        assert len(nodes) == 2 and nodes[0].node.metadata["method"] == "hybrid-ppr"
    lc = LangChainRetriever.from_documents(
        [LCDocument(page_content=HARBOUR_DOCS[n][1], metadata={"source": n}) for n in HARBOUR_DOCS],
        persist_dir=tmp_path / "lc", top_k=2,
    )  # fmt: skip
    docs = lc.invoke(QUESTION)
    assert len(docs) == 2 and all(d.metadata["method"] == "hybrid-ppr" for d in docs)
    lc.close()


def test_demo_runs_the_recommended_method_first(capsys):
    from hygraph.demo import run_demo

    assert run_demo(as_json=True) == 0
    out = json.loads(capsys.readouterr().out)
    recall = out["recall@3"]
    assert list(recall)[0] == "hybrid-ppr"
    assert recall["hybrid-ppr"] >= recall["vanilla"]


def test_many_facts_are_searched_and_link_as_when_scored(default_index, minilm, monkeypatch):
    """Past SEARCH_FACTS_FROM facts a query searches the facts collection (Qdrant's HNSW on
    a large one) instead of scoring every fact; on a collection Qdrant still scans, the
    search is exact, so the linked facts, their weights and the ranking are the same."""
    import hygraph.layers.fact_vectors as fact_vectors
    from hygraph.operators.registry import get_operator

    def linked(index: GraphIndex) -> list[tuple[str, float, float]]:
        state = State(QUESTION, top_k=5)
        get_operator("relationship.fact_link").fn(index.resources, state, k=5)
        return [(r.id, round(r.value, 5), round(r.cosine, 5))
                for r in state.relationships]  # fmt: skip

    with GraphIndex(default_index, embedder=minilm, progress=False) as index:
        scored, scored_facts = index.retrieve(QUESTION, "hybrid-ppr", top_k=5), linked(index)
        assert fact_vectors.FACT_COLLECTION not in index.resources.searched_collections()
        monkeypatch.setattr(fact_vectors, "SEARCH_FACTS_FROM", 1)
    with GraphIndex(default_index, embedder=minilm, progress=False) as index:
        searched, searched_facts = index.retrieve(QUESTION, "hybrid-ppr", top_k=5), linked(index)
        assert fact_vectors.FACT_COLLECTION in index.resources.searched_collections()
    assert searched.chunks == scored.chunks
    assert searched_facts == scored_facts and len(scored_facts) == 5
