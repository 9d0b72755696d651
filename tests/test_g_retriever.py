"""G-Retriever: the PCST solver against brute force, G-Retriever's prizes, the Steiner
operator on a hand-made graph, and the method through the index and both frameworks.

The operator world: five entities joined by five relation edges, written straight into a
store (no ``GraphIndex``):

=========  ===========  =========
relation   label        chunk
=========  ===========  =========
Ada→Bell   founded      d1
Bell→Cobb  located in   d1, d2
Dara→Bell  works at     d2
Eve→Dara   met          d3
=========  ===========  =========

(a tree: Ada-Bell-Cobb, Bell-Dara-Eve) plus Finn, an entity with no relation. Every
expected tree below is worked out by hand from this graph, the prizes and the edge cost
(see each test). The LLM, where one answers, is the scripted test double
:class:`~doubles.ScriptedLLM`.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from corpora import HARBOUR_DOCS
from doubles import ScriptedLLM, WordEmbedder
from operator_coverage import covers

from hygraph import GraphIndex
from hygraph.errors import ConfigError
from hygraph.graph.algorithms import pcst
from hygraph.graph.algorithms.pcst import gretriever_prizes, prize_collecting_tree, solve_pcst
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import Edge, GraphStore, Node
from hygraph.ingest import Chunker, Document
from hygraph.manifest import Manifest
from hygraph.methods.base import get_method
from hygraph.operators import registry
from hygraph.operators.state import Scored, State
from hygraph.resources import Resources
from hygraph.usage import UsageTracker
from hygraph.vectors import open_vector_index

# --------------------------------------------------------------------------- brute force


def _tree_nodes(chosen: tuple[int, ...], edges: np.ndarray) -> set[int] | None:
    """The nodes of ``chosen`` edges when they form one tree, else None."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    nodes: set[int] = set()
    for i in chosen:
        a, b = (int(v) for v in edges[i])
        nodes |= {a, b}
        ra, rb = find(a), find(b)
        if ra == rb:
            return None  # a cycle
        parent[ra] = rb
    return nodes if len({find(v) for v in nodes}) == 1 else None


def penalty_cost(prizes, costs, edges, nodes, chosen) -> float:
    """The PCST objective (minimised): the tree's edge costs plus the prizes it leaves out."""
    inside = set(int(v) for v in nodes)
    return float(sum(costs[i] for i in chosen)) + float(
        sum(p for v, p in enumerate(prizes) if v not in inside)
    )


def brute_force(prizes, costs, edges) -> float:
    """The optimum of the PCST objective over every tree (no node, one node, or edges)."""
    best = float(sum(prizes))
    for v in range(len(prizes)):
        best = min(best, penalty_cost(prizes, costs, edges, [v], ()))
    for r in range(1, len(edges) + 1):
        for chosen in itertools.combinations(range(len(edges)), r):
            nodes = _tree_nodes(chosen, edges)
            if nodes is not None:
                best = min(best, penalty_cost(prizes, costs, edges, nodes, chosen))
    return best


def random_instance(rng: np.random.Generator):
    n = int(rng.integers(2, 7))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    m = int(rng.integers(1, min(8, len(pairs)) + 1))
    edges = np.array([pairs[i] for i in rng.choice(len(pairs), m, replace=False)])
    prizes = np.round(rng.uniform(0, 3, n) * (rng.random(n) < 0.6), 2)
    costs = np.round(rng.uniform(0.1, 2, m), 2)
    return prizes, costs, edges


def assert_tree(nodes: np.ndarray, chosen: np.ndarray, edges: np.ndarray) -> None:
    if len(chosen):
        assert _tree_nodes(tuple(int(i) for i in chosen), edges) == set(nodes.tolist())
    else:
        assert len(nodes) <= 1


# --------------------------------------------------------------------------- the solver


def test_pcst_on_hand_checked_graphs():
    path = np.array([[0, 1], [1, 2], [2, 3]])
    # Prizes 5 at both ends, edges 1 each: joining them (cost 3) beats leaving one (5).
    nodes, chosen = solve_pcst(path, np.array([5.0, 0, 0, 5.0]), np.ones(3))
    assert nodes.tolist() == [0, 1, 2, 3] and chosen.tolist() == [0, 1, 2]
    # Edges 4 each: the path (12) costs more than dropping one end (5).
    nodes, chosen = solve_pcst(path, np.array([5.0, 0, 0, 5.0]), np.full(3, 4.0))
    assert len(nodes) == 1 and chosen.tolist() == []
    # A star: the centre joins the three prized leaves (cost 3 < any prize left out).
    star = np.array([[0, 1], [0, 2], [0, 3], [0, 4]])
    nodes, chosen = solve_pcst(star, np.array([0, 2.0, 2.0, 2.0, 0]), np.ones(4), pruning="strong")
    assert nodes.tolist() == [0, 1, 2, 3] and chosen.tolist() == [0, 1, 2]
    # No prize at all: no tree.
    nodes, chosen = solve_pcst(path, np.zeros(4), np.ones(3))
    assert nodes.tolist() == [] and chosen.tolist() == []
    # No edges: the best single node.
    nodes, chosen = solve_pcst(np.zeros((0, 2)), np.array([1.0, 3.0]), np.zeros(0))
    assert nodes.tolist() == [1]


@pytest.mark.parametrize("pruning", ["gw", "strong"])
def test_pcst_within_a_factor_two_of_the_brute_force_optimum(pruning):
    rng = np.random.default_rng(7)
    exact = 0
    for _ in range(150):
        prizes, costs, edges = random_instance(rng)
        nodes, chosen = solve_pcst(edges, prizes, costs, pruning=pruning)
        assert_tree(nodes, chosen, edges)
        got = penalty_cost(prizes, costs, edges, nodes, chosen)
        best = brute_force(prizes, costs, edges)
        assert got <= 2 * best + 1e-9  # Goemans-Williamson's guarantee
        exact += abs(got - best) < 1e-9
    assert exact >= (140 if pruning == "strong" else 110)  # mostly the optimum itself


def test_pcst_rejects_bad_input_and_a_broken_solver(monkeypatch):
    with pytest.raises(ValueError):
        solve_pcst(np.array([[0, 1]]), np.ones(2), np.ones(1), pruning="best")
    with pytest.raises(ValueError):
        solve_pcst(np.array([[0, 1]]), np.ones(2), np.ones(2))
    with pytest.raises(ValueError):
        solve_pcst(np.array([[0, 5]]), np.ones(2), np.ones(1))
    with pytest.raises(ValueError):
        solve_pcst(np.array([[0, 1]]), np.array([1.0, -1.0]), np.ones(1))
    import pcst_fast

    # pcst-fast 1.0.10 under numpy 2 returns arrays of one repeated id.
    monkeypatch.setattr(pcst_fast, "pcst_fast", lambda *a: (np.zeros(3, int), np.ones(2, int)))
    with pytest.raises(RuntimeError, match="pcst-fast2"):
        solve_pcst(np.array([[0, 1], [1, 2]]), np.ones(3), np.ones(2))


def test_gretriever_prizes_by_rank_with_ties_shared():
    nodes, edges, cost = gretriever_prizes(3, [0.9, 0.8, 0.8, 0.5], topk_e=2, cost_e=0.5)
    assert nodes == [3.0, 2.0, 1.0]
    # 0.9 → min(2/1, 2) = 2; 0.8 (two edges) → min(1/2, 2 × 0.99) = 0.5; the rest 0.
    assert edges == [2.0, 0.5, 0.5, 0.0] and cost == 0.5
    # Three edges tie on the top value: each gets 1/3, and the cost drops below that.
    _, edges, cost = gretriever_prizes(0, [0.7, 0.7, 0.7], topk_e=1, cost_e=0.5)
    assert edges == pytest.approx([1 / 3] * 3) and cost == pytest.approx(1 / 3 * 0.995)
    assert gretriever_prizes(2, [], topk_e=2, cost_e=0.5) == ([2.0, 1.0], [], 0.5)
    assert gretriever_prizes(0, [0.4, 0.3], topk_e=0, cost_e=0.5)[1] == [0.0, 0.0]


def test_prize_collecting_tree_collects_edge_prizes_through_virtual_nodes():
    edges = np.array([[0, 1], [1, 2], [2, 3]])
    # Edge 2-3 carries prize 1 against cost 0.4: it joins the tree at node 2 for free and
    # takes node 3 with it; node 0 (prize 1) is worth its edge too (0.4 + 0.4 < 1).
    nodes, chosen = prize_collecting_tree(4, edges, np.array([1.0, 0, 0, 0]),
                                          np.array([0, 0, 1.0]), 0.4)  # fmt: skip
    assert nodes.tolist() == [0, 1, 2, 3] and chosen.tolist() == [0, 1, 2]
    # With a dear edge cost node 0 is not worth joining: the prized edge alone wins.
    nodes, chosen = prize_collecting_tree(4, edges, np.array([0.5, 0, 0, 0]),
                                          np.array([0, 0, 3.0]), 2.0)  # fmt: skip
    assert nodes.tolist() == [2, 3] and chosen.tolist() == [2]
    # Always a connected subgraph holding both ends of its edges (a tree of the transformed
    # instance; mapping a virtual node back to its edge may close a cycle, as in G-Retriever).
    rng = np.random.default_rng(3)
    for _ in range(100):
        prizes, costs, edges = random_instance(rng)
        edge_prizes = np.round(rng.uniform(0, 2, len(edges)) * (rng.random(len(edges)) < 0.4), 2)
        nodes, chosen = prize_collecting_tree(len(prizes), edges, prizes, edge_prizes, 0.5)
        assert set(edges[chosen].ravel().tolist()) <= set(nodes.tolist())
        assert len(nodes) <= 1 or _connected(nodes, edges[chosen])


def _connected(nodes: np.ndarray, edges: np.ndarray) -> bool:
    reach = {int(nodes[0])}
    grew = True
    while grew:
        grew = False
        for a, b in edges.tolist():
            if (a in reach) != (b in reach):
                reach |= {a, b}
                grew = True
    return reach == set(nodes.tolist())


# --------------------------------------------------------------------------- the operator

A, B, C, D, E, F = (f"ent:{n}" for n in ("ada", "bell", "cobb", "dara", "eve", "finn"))
NAMES = {A: "Ada", B: "Bell", C: "Cobb", D: "Dara", E: "Eve", F: "Finn"}
RELATIONS = [
    (A, B, "founded", {"d1": "Ada founded Bell."}),
    (B, C, "located in", {"d1": "Bell stands in Cobb.", "d2": "Bell is in Cobb."}),
    (D, B, "works at", {"d2": "Dara works at Bell."}),
    (E, D, "met", {"d3": "Eve met Dara."}),
]


def op(name: str, res: Resources, state: State, **params: Any) -> None:
    registry.get_operator(name).fn(res, state, **params)


@pytest.fixture
def kg(tmp_path) -> SimpleNamespace:
    store = GraphStore(tmp_path / "kg.sqlite")
    chunk: dict[str, str] = {}
    for doc_id in ("d1", "d2", "d3"):
        doc = Document(doc_id, f"Text of {doc_id}.")
        pieces = Chunker(1200, 100)(doc)
        store.add_document(doc, pieces)
        chunk[doc_id] = pieces[0].id
    store.upsert_nodes(Node(e, NodeKind.ENTITY, n, f"{n} text", {"type": "entity"}, [chunk["d1"]])
                       for e, n in NAMES.items())  # fmt: skip
    store.upsert_edges(
        Edge(s, t, EdgeKind.RELATION, 1.0,
             {"label": label, "entries": {chunk[d]: [[label, text, 1.0]] for d, text in e.items()}},
             [chunk[d] for d in e])
        for s, t, label, e in RELATIONS
    )  # fmt: skip
    path = tmp_path / "index"
    path.mkdir()
    manifest = Manifest(embedder="words", dim=None, chunk_size=1200, chunk_overlap=100,
                        tokenizer="t", vectors={"backend": "edge", "path": "qdrant"},
                        extractor="offline")  # fmt: skip
    res = Resources(path=path, store=store, vectors=open_vector_index(path / "qdrant"),
                    manifest=manifest, embedder=WordEmbedder(), llm=None, tracker=UsageTracker(),
                    progress=False, cache_dir=path / "cache")  # fmt: skip
    return SimpleNamespace(res=res, store=store, **chunk)


def relation(src: str, dst: str, cosine: float) -> Scored:
    return Scored(f"{src}|{dst}", cosine, cosine=cosine,
                  data={"kind": EdgeKind.RELATION, "members": (src, dst)})  # fmt: skip


def ids(items: list[Scored]) -> list[str]:
    return [i.id for i in items]


@covers("subgraph.steiner")
def test_steiner_joins_the_seeds_when_the_path_pays(kg):
    # Ada (prize 2) and Eve (prize 1) are three edges apart: Ada-Bell-Dara-Eve.
    state = State("q", 4)
    state.nodes = [Scored(A, 0.9, cosine=0.9), Scored(E, 0.8, cosine=0.8)]
    op("subgraph.steiner", kg.res, state, cost_e=1.0)  # 3 × 1 = 3 > Eve's 1: Ada alone
    assert ids(state.nodes) == [A] and state.relationships == []
    state.nodes = [Scored(A, 0.9, cosine=0.9), Scored(E, 0.8, cosine=0.8)]
    op("subgraph.steiner", kg.res, state, cost_e=0.2)  # 0.6 < 1: the path joins them
    # Prized entities first, then the tree breadth first from the best one.
    assert ids(state.nodes) == [A, E, B, D]
    assert [n.value for n in state.nodes] == [2.0, 1.0, 0.0, 0.0]
    assert state.nodes[0].cosine == 0.9 and state.nodes[2].data["via"] == "steiner"
    assert ids(state.relationships) == [f"{A}|{B}", f"{D}|{B}", f"{E}|{D}"]
    pairs = [sorted(pair) for pair in state.subgraph["steiner"]["pairs"]]
    assert pairs == [sorted([A, B]), sorted([B, D]), sorted([D, E])]
    assert state.subgraph["steiner"]["nodes"] == [A, E, B, D]


def test_steiner_collects_prized_relations(kg):
    # Cobb (prize 2) and Ada (prize 1); Eve→Dara is the one prized relation (topk_e=1: prize
    # 1, cost 0.4, a surplus of 0.6). Joining Ada costs 0.8 < 1 (Cobb-Bell-Ada) and Eve→Dara
    # 0.4 < 0.6 (Bell-Dara): the optimum takes everything (cost 1.2, nothing left out).
    state = State("q", 4)
    state.nodes = [Scored(C, 0.9, cosine=0.9), Scored(A, 0.7, cosine=0.7)]
    state.relationships = [relation(E, D, 0.9), relation(A, B, 0.3)]
    op("subgraph.steiner", kg.res, state, topk_e=1, cost_e=0.4)
    # Prized first (Cobb, Ada; Eve→Dara), then breadth first from Cobb, branches by id.
    assert ids(state.nodes) == [C, A, B, D, E]
    assert ids(state.relationships) == [f"{E}|{D}", f"{B}|{C}", f"{A}|{B}", f"{D}|{B}"]
    assert state.relationships[0].value == 1.0 and state.relationships[0].cosine == 0.9
    assert state.relationships[2].cosine == 0.3 and state.relationships[2].value == 0.0
    # The evidence operators textualise the tree: entities, then relations with sources.
    op("node.evidence", kg.res, state, into="entities")
    op("relationship.kg_evidence", kg.res, state, into="relationships")
    assert [i.text for i in state.evidence["entities"]] == [
        f"{NAMES[n]}: {NAMES[n]} text" for n in (C, A, B, D, E)]  # fmt: skip
    assert [i.text.split(":")[0] for i in state.evidence["relationships"]] == [
        "Eve met Dara",
        "Bell located in Cobb",
        "Ada founded Bell",
        "Dara works at Bell",
    ]
    assert state.evidence["relationships"][0].source_ids == (kg.d3,)
    assert set(state.evidence["relationships"][1].source_ids) == {kg.d1, kg.d2}


def test_steiner_edge_cases(kg):
    state = State("q", 4)
    op("subgraph.steiner", kg.res, state)  # nothing retrieved: nothing changes
    assert state.nodes == [] and "steiner" not in state.subgraph
    state.nodes = [Scored(F, 0.9, cosine=0.9), Scored(A, 0.5, cosine=0.5)]
    op("subgraph.steiner", kg.res, state)  # Finn has no relation: the best single node
    assert ids(state.nodes) == [F] and state.relationships == []
    with pytest.raises(ConfigError):
        op("subgraph.steiner", kg.res, State("q", 4), pruning="best")
    with pytest.raises(ConfigError):
        op("subgraph.steiner", kg.res, State("q", 4), cost_e=-1.0)


# --------------------------------------------------------------------------- the method

QUESTION = "Who founded the shipyard that built Gannet's Reach?"


def harbour_docs() -> list[Document]:
    return [Document(k, text, title=title) for k, (title, text) in HARBOUR_DOCS.items()]


@pytest.fixture(scope="module")
def harbour(tmp_path_factory, minilm) -> Path:
    path = tmp_path_factory.mktemp("g-retriever") / "index"
    with GraphIndex(path, embedder=minilm, progress=False) as index:
        index.insert(harbour_docs(), methods=["g-retriever"])
    return path


def test_method_defaults_and_options():
    cls = get_method("g-retriever")
    cls.check()
    config = cls.Config()
    defaults = (config.prize_entities, config.topk_e, config.cost_e, config.pruning)
    assert defaults == (3, 2, 0.5, "gw")  # the framework's GR.yaml (prizes: its top_k 3)
    assert cls.query_llm == "optional" and cls.generation == "direct"
    with pytest.raises(ConfigError):
        cls.Config(pruning="best")
    with pytest.raises(ConfigError):
        cls.Config(passage_rank="relationships+chunks")


def test_retrieval_is_offline_and_ranks_the_trees_sources(harbour, minilm, monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with GraphIndex.open(harbour, embedder=minilm, progress=False) as index:
        result = index.retrieve(QUESTION, "g-retriever")
        state = index.method("g-retriever").run(index.resources, QUESTION)
        flipped = index.retrieve(QUESTION, "g-retriever:passage_rank=entities+relationships")
    assert [s["name"] for s in result.trace] == [
        "question.embed", "node.vdb", "relationship.relation_vdb", "subgraph.steiner",
        "node.evidence", "relationship.kg_evidence", "merge.context"]  # fmt: skip
    assert all(s["llm_calls"] == 0 for s in result.trace)
    titles = [line for line in result.context.splitlines() if line.startswith("## ")]
    assert titles == ["## Entities", "## Relationships"]  # graph structure only, no passages
    # Passages: the tree's relations' source chunks first, in subgraph order.
    cited = list(dict.fromkeys(c for i in state.evidence["relationships"] for c in i.source_ids))
    assert result.chunks[: len(cited)] == cited and result.passages[0] == "harbour"
    assert set(flipped.chunks) == set(result.chunks)
    tree = state.subgraph["steiner"]
    assert [n.id for n in state.nodes] == tree["nodes"] and len(tree["pairs"]) >= 1


def test_the_query_top_k_changes_neither_the_prizes_nor_the_tree(harbour, minilm):
    with GraphIndex.open(harbour, embedder=minilm, progress=False) as index:
        five = index.retrieve(QUESTION, "g-retriever", top_k=5)
        ten = index.retrieve(QUESTION, "g-retriever", top_k=10)
    assert five.chunks[:5] == ten.chunks[:5] and five.chunks
    assert five.trace[1]["name"] == "node.vdb"
    assert five.trace[1]["params"] == ten.trace[1]["params"] == {"k": 3}
    assert five.trace[1]["added"] == ten.trace[1]["added"]


def test_direct_answer_describe_and_listing(harbour, minilm, capsys):
    from hygraph.cli import main

    llm = ScriptedLLM(["Josiah Aldercott."])
    with GraphIndex.open(harbour, embedder=minilm, llm=llm, progress=False) as index:
        result = index.query(QUESTION, "g-retriever", answer=True)
    assert result.answer == "Josiah Aldercott." and len(llm.calls) == 1
    assert "## Relationships" in llm.calls[0][0][-1]["content"]
    assert main(["methods", "--describe", "g-retriever"]) == 0
    out = capsys.readouterr().out
    assert "subgraph.steiner" in out and "cost_e" in out and "authors' code" in out
    assert main(["methods", "--json"]) == 0
    assert "g-retriever" in {row["name"] for row in json.loads(capsys.readouterr().out)}
    assert main(["query", "--index", str(harbour), "--method", "g-retriever", "--json",
                 QUESTION]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out)["method"] == "g-retriever"


def test_insert_and_delete(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    docs = harbour_docs()
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(256), progress=False) as index:
        index.insert(docs[:1], methods=["g-retriever"])
        index.insert(docs[1:])
        before = index.retrieve("Who led the Northern Shelf Expedition?", "g-retriever")
        assert "expedition" in before.passages
        index.delete("expedition")
        after = index.retrieve("Who led the Northern Shelf Expedition?", "g-retriever")
        assert "expedition" not in after.passages
        assert "Renna Osk" not in after.context


def test_llama_index_langchain_and_the_langgraph_tool(harbour, minilm):
    pytest.importorskip("llama_index.core")
    pytest.importorskip("langchain_core")
    from langchain_hygraph import HyGraphRetriever
    from langchain_hygraph.graph import make_method_tools
    from llama_index_hygraph import HyGraphIndex

    with GraphIndex.open(harbour, embedder=minilm, progress=False) as opened:
        li = HyGraphIndex(graph_index=opened)
        nodes = li.as_retriever(method="g-retriever", similarity_top_k=3).retrieve(QUESTION)
        assert len(nodes) == 3 and nodes[0].node.metadata["method"] == "g-retriever"
        docs = HyGraphRetriever(index=opened, method="g-retriever", k=3).invoke(QUESTION)
        assert [d.page_content for d in docs] == [n.node.get_content() for n in nodes]
        retriever = HyGraphRetriever(index=opened, method="g-retriever", k=3)
        (tool,) = make_method_tools(retriever, ["g-retriever"])
        call = {"name": tool.name, "args": {"query": QUESTION}, "id": "c", "type": "tool_call"}
        message = tool.invoke(call)
        assert "## Relationships" in message.content
        assert {d.metadata["method"] for d in message.artifact} == {"g-retriever"}


def test_solver_module_names_its_source():
    assert "pcst-fast2" in (pcst.__doc__ or "") and "Goemans-Williamson" in (pcst.__doc__ or "")
