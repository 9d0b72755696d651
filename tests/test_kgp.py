"""KGP: the passage graph layer, the traversal prompt, the agent walk, and the method.

The unit tests run on a hand-made world of five one-chunk documents written straight into
a store (no ``GraphIndex``, no extractor), with hand-written entity mentions:

=====  ================================================  ===================
chunk  text                                              entities mentioned
=====  ================================================  ===================
p1     Ada Vorn founded the Vorn Shipyard in Kessel.     Ada, Shipyard, Kessel
p2     The Vorn Shipyard built the ship Tern in Kessel.  Shipyard, Kessel, Tern
p3     The Tern was captained by Ilse Marr.              Tern, Ilse
p4     Ilse Marr was born in Dorrow.                     Ilse, Dorrow
p5     Kessel is a town on the coast.                    Kessel
=====  ================================================  ===================

Shared entities per pair: p1-p2 2, and 1 for p1-p5, p2-p3, p2-p5, p3-p4; so τ = 2 links
only p1-p2, and τ = 1 gives the walk graph p1: p2 p5 / p2: p1 p3 p5 / p3: p2 p4 / p4: p3 /
p5: p1 p2. Every expected walk below follows from that graph and from TF-IDF ranking the
linked passages against the question. The LLM is the scripted test double
:class:`~doubles.ScriptedLLM` (well-formed, malformed, empty, failing and never-ending
replies; replies naming labels that were never offered).
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
from hygraph.graph.algorithms.shared_entities import shared_entity_pairs
from hygraph.graph.kinds import EdgeKind
from hygraph.graph.store import Edge, GraphStore
from hygraph.ingest import Document
from hygraph.layers.passage_graph import PassageGraph
from hygraph.layers.tfidf import TfidfLayer
from hygraph.methods.base import get_method, parse_method_spec
from hygraph.operators import registry
from hygraph.operators.state import State
from hygraph.prompts.kgp import (
    KGP_FIRST_LINE,
    NextStep,
    next_step_messages,
    parse_next_step,
)
from hygraph.prompts.replies import ParseError
from hygraph.resources import CHUNK_COLLECTION, Resources
from hygraph.vectors import open_vector_index

TEXTS = {
    "p1": "Ada Vorn founded the Vorn Shipyard in Kessel.",
    "p2": "The Vorn Shipyard built the ship Tern in Kessel.",
    "p3": "The Tern was captained by Ilse Marr.",
    "p4": "Ilse Marr was born in Dorrow.",
    "p5": "Kessel is a town on the coast.",
}
MENTIONS = {
    "p1": ["ent:ada", "ent:shipyard", "ent:kessel"],
    "p2": ["ent:shipyard", "ent:kessel", "ent:tern"],
    "p3": ["ent:tern", "ent:ilse"],
    "p4": ["ent:ilse", "ent:dorrow"],
    "p5": ["ent:kessel"],
}
QUESTION = "Who captained the ship that the Vorn Shipyard built?"


def op(name: str, res: Resources, state: State, **params: Any) -> None:
    registry.get_operator(name).fn(res, state, **params)


def make_resources(store: GraphStore, path: Path, *, llm: Any = None) -> Resources:
    return word_resources(store, open_vector_index(path / "qdrant"), path, llm=llm, dim=256)


def make_world(path: Path, *, llm: Any = None, min_shared: int = 1) -> SimpleNamespace:
    """The five passages, their mentions, the TF-IDF layer and a passage graph (τ given)."""
    path.mkdir(parents=True, exist_ok=True)
    store, chunk = store_of_texts(path / "kg.sqlite", TEXTS)
    store.upsert_edges(Edge(chunk[d], e, EdgeKind.MENTION, 1.0, sources=(chunk[d],))
                       for d, ents in MENTIONS.items() for e in ents)  # fmt: skip
    store.mark_done("extract", store.chunk_ids())  # as the entity graph marks extracted chunks
    res = make_resources(store, path / "index", llm=llm)
    res.layers["tfidf"] = TfidfLayer()
    layer = PassageGraph({"pg_min_shared": min_shared})
    res.layers["passage-graph"] = layer
    layer.insert(res, store.chunk_ids())
    name = {c: d for d, c in chunk.items()}
    return SimpleNamespace(res=res, store=store, layer=layer, chunk=chunk, name=name)


def edges_by_name(world: SimpleNamespace, kind: str = EdgeKind.PASSAGE_SHARED) -> dict:
    """The passage graph's edges as ``{(doc, doc): weight}`` (names sorted in each pair)."""
    out = {}
    for src, dst, weight in world.store.edge_rows([kind]):
        a, b = sorted((world.name[src], world.name[dst]))
        out[(a, b)] = weight
    return out


def reply(next_labels: list[str] | None = None, missing: str = "more") -> str:
    return json.dumps({"missing": missing, "next": next_labels or []})


def walk(world: SimpleNamespace, seeds: list[str], question: str = QUESTION, **params: Any):
    state = State(question, 5)
    state.chunks = [(world.chunk[s], 1.0) for s in seeds]
    op("chunk.kgp", world.res, state, **params)
    return [world.name[c] for c, _ in state.chunks], state.subgraph["kgp"]


# --------------------------------------------------------------------------- shared entities


def test_shared_entity_pairs_count_common_entities_through_the_index():
    by_chunk = {c: set(e) for c, e in MENTIONS.items()}
    by_entity: dict[str, set[str]] = {}
    for c, ents in MENTIONS.items():
        for e in ents:
            by_entity.setdefault(e, set()).add(c)
    everything = shared_entity_pairs(by_chunk, by_entity, list(MENTIONS), min_shared=1)
    assert everything == {("p1", "p2"): 2, ("p1", "p5"): 1, ("p2", "p3"): 1, ("p2", "p5"): 1,
                          ("p3", "p4"): 1}  # fmt: skip
    assert shared_entity_pairs(by_chunk, by_entity, list(MENTIONS), min_shared=2) == {
        ("p1", "p2"): 2}  # fmt: skip
    # Only pairs with a given chunk; a partner outside ``among`` is left for later.
    assert shared_entity_pairs(by_chunk, by_entity, ["p3"], min_shared=1) == {
        ("p2", "p3"): 1, ("p3", "p4"): 1}  # fmt: skip
    assert shared_entity_pairs(by_chunk, by_entity, ["p3"], min_shared=1, among={"p4"}) == {
        ("p3", "p4"): 1}  # fmt: skip
    # From either side, or in pieces, a pair gets its full count.
    halves = {
        **shared_entity_pairs(by_chunk, by_entity, ["p1", "p3"], min_shared=1),
        **shared_entity_pairs(by_chunk, by_entity, ["p2", "p4", "p5"], min_shared=1),
    }
    assert halves == everything


# --------------------------------------------------------------------------- the layer


def test_passage_graph_links_chunks_sharing_tau_entities(tmp_path):
    world = make_world(tmp_path, min_shared=2)  # the paper's example τ
    assert PassageGraph().config.pg_min_shared == 2
    assert edges_by_name(world) == {("p1", "p2"): 2.0}
    low = make_world(tmp_path / "low", min_shared=1)
    assert edges_by_name(low) == {("p1", "p2"): 2.0, ("p1", "p5"): 1.0, ("p2", "p3"): 1.0,
                                  ("p2", "p5"): 1.0, ("p3", "p4"): 1.0}  # fmt: skip
    # One undirected edge per pair, from the smaller chunk id, citing both chunks.
    for src, dst, _ in low.store.edge_rows([EdgeKind.PASSAGE_SHARED]):
        assert src < dst
    with pytest.raises(ConfigError):
        PassageGraph({"pg_min_shared": 0})


def test_passage_graph_insert_in_pieces_equals_one_build_and_delete_drops_edges(tmp_path):
    whole = make_world(tmp_path / "whole")
    store = whole.store
    # Rebuild from nothing in two inserts: the same graph.
    whole.layer.reset(whole.res)
    assert store.edge_rows([EdgeKind.PASSAGE_SHARED]) == []
    assert whole.layer.pending(whole.res) == store.chunk_ids()
    ids = store.chunk_ids()
    whole.layer.insert(whole.res, ids[:2])
    assert edges_by_name(whole) == {("p1", "p2"): 2.0}
    whole.layer.insert(whole.res, whole.layer.pending(whole.res))
    assert whole.layer.pending(whole.res) == []
    assert len(edges_by_name(whole)) == 5
    # Running an insert again changes nothing (edges are upserts).
    whole.layer.insert(whole.res, ids)
    assert len(store.edge_rows([EdgeKind.PASSAGE_SHARED])) == 5
    # Deleting a document drops its edges; the others keep theirs.
    removed = store.delete_document("p2")
    whole.layer.delete(whole.res, removed)
    assert edges_by_name(whole) == {("p1", "p5"): 1.0, ("p3", "p4"): 1.0}


def test_similarity_links_option(tmp_path):
    world = make_world(tmp_path)
    layer = PassageGraph({"pg_similar_k": 1})
    world.res.layers["passage-graph"] = layer
    texts = world.res.chunk_texts(world.store.chunk_ids())
    ids = world.store.chunk_ids()
    world.res.upsert_vectors(CHUNK_COLLECTION, ids, [texts[c] for c in ids],
                             [{"kind": "chunk"} for _ in ids])  # fmt: skip
    layer.insert(world.res, ids)
    # Each chunk is linked to its most similar other chunk (bag-of-words cosines).
    embedder = WordEmbedder(256)
    vectors = {c: embedder.embed_query(texts[c]) for c in ids}
    expected = set()
    for c in ids:
        best = max((o for o in ids if o != c), key=lambda o: (float(vectors[c] @ vectors[o]), o))
        expected.add(tuple(sorted((world.name[c], world.name[best]))))
    assert set(edges_by_name(world, EdgeKind.PASSAGE_SIMILAR)) == expected
    # A delete relinks the chunks whose nearest chunk went.
    removed = world.store.delete_document("p1")
    layer.delete(world.res, removed)
    linked = {n for pair in edges_by_name(world, EdgeKind.PASSAGE_SIMILAR) for n in pair}
    assert linked == {"p2", "p3", "p4", "p5"}
    layer.reset(world.res)
    assert world.store.edge_rows([EdgeKind.PASSAGE_SIMILAR]) == []


# --------------------------------------------------------------------------- the prompt


def test_prompt_starts_with_a_stable_line_in_both_modes():
    pick = next_step_messages("Q?", ["first passage", "second"], ["linked one", "linked two"])
    assert pick[0]["content"].splitlines()[0] == KGP_FIRST_LINE
    assert '"next"' in pick[0]["content"] and "at most 3 labels" in pick[0]["content"]
    user = pick[1]["content"]
    assert "Question: Q?" in user and "[R1] first passage" in user and "[R2] second" in user
    assert "[L1] linked one" in user and "[L2] linked two" in user
    describe = next_step_messages("Q?", ["first passage"])
    assert describe[0]["content"].splitlines()[0] == KGP_FIRST_LINE
    assert '"next"' not in describe[0]["content"]
    assert "Linked passages" not in describe[1]["content"]
    cut = next_step_messages("Q?", ["one two three four"], ["a b c d e"], passage_words=2,
                             snippet_words=3)[1]["content"]  # fmt: skip
    assert "[R1] one two ..." in cut and "[L1] a b c ..." in cut


def test_parser_reads_loose_replies_and_rejects_unusable_ones():
    expected = NextStep("the captain", ["L2", "L1"])
    assert parse_next_step(reply(["L2", "L1"], "the captain")) == expected
    assert parse_next_step('```json\n{"Missing": "x", "Next": [2, "[l3]", "L2"]}\n```') == (
        NextStep("x", ["L2", "L3"]))  # fmt: skip
    assert parse_next_step('<think>hmm</think>{"next": "L1, L4"}').next == ["L1", "L4"]
    assert parse_next_step('["L3"]') == NextStep("", ["L3"])
    assert parse_next_step('{"missing": "", "next": []}') == NextStep("", [])
    assert parse_next_step('{"missing": "the ship"}') == NextStep("the ship", [])
    assert parse_next_step('{"next": ["p-7"]}').next == ["p-7"]  # kept; the caller drops it
    for bad in ("", "   ", "The captain was Ilse Marr.", '{"answer": "Ilse"}', "<think>..."):
        with pytest.raises(ParseError):
            parse_next_step(bad)


# --------------------------------------------------------------------------- the walk


@covers("chunk.kgp")
def test_walk_follows_the_agents_picks_in_reading_order(tmp_path):
    llm = ScriptedLLM(responder=lambda m, p: reply(["L1"], "the ship the shipyard built"))
    world = make_world(tmp_path, llm=llm)
    order, record = walk(world, ["p1"], depth=2)
    assert order == ["p1", "p2", "p3"]
    assert record["calls"] == 2 and record["stopped"] == "depth" and record["tokens"] > 0
    name = world.name
    assert {name[k]: [name[c] for c in v] for k, v in record["picked"].items()} == {
        "p1": ["p2"], "p2": ["p3"]}  # fmt: skip
    first, second = (call[0][1]["content"] for call in llm.calls)
    # Linked passages ranked against the question by TF-IDF; read ones never offered again.
    assert f"[L1] {TEXTS['p2']}" in first and f"[L2] {TEXTS['p5']}" in first
    assert f"[R1] {TEXTS['p1']}" in second and f"[R2] {TEXTS['p2']}" in second
    assert f"[L1] {TEXTS['p3']}" in second and TEXTS["p1"] not in second.split("Linked")[1]
    assert all(call[0][0]["content"].startswith(KGP_FIRST_LINE) for call in llm.calls)


def test_walk_one_hop_per_seed_and_each_passage_read_once(tmp_path):
    llm = ScriptedLLM(responder=lambda m, p: reply(["L1"]))
    world = make_world(tmp_path, llm=llm)
    # p1 picks p2; p3 was offered p2 too (unread when the round began) but it is taken.
    order, record = walk(world, ["p1", "p3"])
    assert order == ["p1", "p2", "p3"] and record["calls"] == 2
    assert record["stopped"] == "depth"


def test_never_ending_replies_stop_at_the_bounds(tmp_path):
    greedy = ScriptedLLM(responder=lambda m, p: reply(["L1", "L2", "L3"]))
    world = make_world(tmp_path, llm=greedy)
    order, record = walk(world, ["p1"], depth=5, max_calls=2)
    assert record["calls"] == 2 and record["stopped"] == "max_calls"
    assert order == ["p1", "p2", "p3", "p5"]  # p5 from p1; p3 from p2 (p5 then read)
    # Labels never offered, next to known ones, are dropped: L3 from p1, L2 and L3 from p2.
    assert record["unknown_labels"] == 3
    order, record = walk(world, ["p1"], depth=50, max_calls=100)
    assert sorted(order) == ["p1", "p2", "p3", "p4", "p5"] and record["stopped"] == "done"
    assert record["calls"] <= 5  # each passage is read once, so the walk runs out
    order, record = walk(world, ["p1"], depth=50, max_tokens=40)
    assert order == ["p1"] and record["calls"] == 0 and record["stopped"] == "max_tokens"
    order, record = walk(world, ["p1"], depth=0)
    assert order == ["p1"] and record["calls"] == 0


@pytest.mark.parametrize(
    ("bad", "unknown"),
    [('{"next": ["L7", "L9"]}', 2), ("The captain was Ilse Marr.", 0), ("", 0),
     (RuntimeError("endpoint down"), 0), ('{"answer": "Ilse"}', 0)],
)  # fmt: skip
def test_unusable_replies_end_the_walk_cleanly(tmp_path, caplog, bad, unknown):
    replies = iter([reply(["L1"]), bad])
    world = make_world(tmp_path, llm=ScriptedLLM(responder=lambda m, p: next(replies)))
    with caplog.at_level(logging.WARNING):
        order, record = walk(world, ["p1"], depth=5)
    assert order == ["p1", "p2"]  # the first pick stands; the walk ends after the bad reply
    assert record["stopped"] == "unusable reply" and record["calls"] == 2
    assert record["unknown_labels"] == unknown
    assert "could not be used" in caplog.text


def test_known_labels_beside_unknown_ones_are_kept_and_done_replies_stop(tmp_path):
    replies = iter([reply(["L9", "L2"]), reply([], "")])
    world = make_world(tmp_path, llm=ScriptedLLM(responder=lambda m, p: next(replies)))
    order, record = walk(world, ["p1"], depth=5)
    assert order == ["p1", "p5"] and record["unknown_labels"] == 1
    assert record["stopped"] == "done"  # p5's links are all read: nothing left to ask


def test_unusable_replies_are_not_cached_usable_ones_are(tmp_path):
    llm = ScriptedLLM(["no json here", reply(["L1"]), reply(["L1"])])
    world = make_world(tmp_path, llm=llm)
    assert walk(world, ["p1"])[0] == ["p1"]
    assert walk(world, ["p1"])[0] == ["p1", "p2"]  # asked again, not served from the cache
    assert walk(world, ["p1"])[0] == ["p1", "p2"] and len(llm.calls) == 2  # now cached


def test_reference_mode_ranks_links_by_the_missing_evidence(tmp_path):
    llm = ScriptedLLM(responder=lambda m, p: reply(["L1"], "who was the captain of the Tern"))
    world = make_world(tmp_path, llm=llm)
    order, _ = walk(world, ["p2"], question="Which ship did the shipyard build?",
                    select="tfidf", k_nei=1)  # fmt: skip
    assert order == ["p2", "p3"]
    system, user = (m["content"] for m in llm.calls[0][0])
    assert system.startswith(KGP_FIRST_LINE) and '"next"' not in system
    assert "Linked passages" not in user
    nothing = ScriptedLLM(responder=lambda m, p: reply([], ""))
    world = make_world(tmp_path / "other", llm=nothing)
    assert walk(world, ["p2"], select="tfidf")[0] == ["p2"]


def test_walk_needs_an_llm_and_checks_its_options(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    world = make_world(tmp_path)
    with pytest.raises(ConfigError, match="needs an LLM") as err:
        walk(world, ["p1"])
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError):
        walk(world, ["p1"], select="random")
    llm = ScriptedLLM()  # no reply scripted: a call would be a failed call
    world = make_world(tmp_path / "other", llm=llm)
    assert walk(world, [])[1]["stopped"] == "no seeds"
    order, record = walk(world, list(TEXTS))  # every linked passage is a seed: nothing to ask
    assert order == list(TEXTS) and record["calls"] == 0 and llm.calls == []


# --------------------------------------------------------------------------- the method


def harbour_docs() -> list[Document]:
    return [Document(k, text, title=title) for k, (title, text) in HARBOUR_DOCS.items()]


HARBOUR_QUESTION = "Who founded the shipyard that built Gannet's Reach?"


def harbour_llm(answer: str = "Josiah Aldercott.") -> ScriptedLLM:
    """Traversal replies pick the first linked passage; the answer prompt gets ``answer``."""

    def respond(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        if messages[0]["content"].startswith(KGP_FIRST_LINE):
            return reply(["L1"], "who founded the shipyard")
        return answer

    return ScriptedLLM(responder=respond)


@pytest.fixture(scope="module")
def harbour(tmp_path_factory, minilm) -> Path:
    path = tmp_path_factory.mktemp("kgp") / "index"
    with GraphIndex(path, embedder=minilm, progress=False) as index:
        index.insert(harbour_docs(), methods=["kgp"])  # no LLM is needed to build
    return path


def test_method_is_registered_with_the_code_defaults():
    cls = get_method("kgp")
    cls.check()
    config = cls.Config()
    defaults = (config.seed_passages, config.k_nei, config.depth, config.pg_min_shared)
    assert defaults == (10, 3, 1, 2)  # the framework seeds with top_k // nei_k = 30 // 3
    assert (config.top_k, config.max_calls, config.context_passages) == (5, 10, 40)
    assert cls.layers == ("chunks", "tfidf", "passage-graph")
    assert cls.query_llm.startswith("required")
    assert parse_method_spec("kgp:select=tfidf,depth=2") == ("kgp", {"select": "tfidf",
                                                                      "depth": 2})  # fmt: skip
    with pytest.raises(ConfigError):
        cls.Config(select="random")
    with pytest.raises(ConfigError):
        cls.Config(max_calls=-1)
    with pytest.raises(ConfigError):
        cls.Config(candidates=0)


def test_the_query_top_k_changes_neither_the_seeds_nor_the_walk(harbour, minilm):
    with GraphIndex.open(harbour, embedder=minilm, llm=harbour_llm(), progress=False) as index:
        five = index.retrieve(HARBOUR_QUESTION, "kgp", top_k=5)
        ten = index.retrieve(HARBOUR_QUESTION, "kgp", top_k=10)
    assert five.chunks[:5] == ten.chunks[:5] and len(five.chunks) >= 2
    seeds = [r.trace[0]["params"]["k"] for r in (five, ten)]
    assert five.trace[0]["name"] == "node.tfidf" and seeds == [10, 10]
    assert five.trace[1]["params"] == ten.trace[1]["params"]


def test_retrieval_without_an_llm_fails_with_one_line(harbour, minilm, monkeypatch, capsys):
    from hygraph.cli import main

    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with GraphIndex.open(harbour, embedder=minilm, progress=False) as index:
        with pytest.raises(ConfigError, match="kgp needs an LLM") as err:
            index.retrieve(HARBOUR_QUESTION, "kgp")
    assert "\n" not in str(err.value)
    code = main(["query", "--index", str(harbour), "--method", "kgp", HARBOUR_QUESTION])
    err_text = capsys.readouterr().err.strip()
    assert code != 0 and len(err_text.splitlines()) == 1 and "needs an LLM" in err_text


def test_query_through_the_index_with_costs(harbour, minilm):
    llm = harbour_llm()
    method = "kgp:seed_passages=1"  # one seed, so that it has unread linked passages
    with GraphIndex.open(harbour, embedder=minilm, llm=llm, progress=False) as index:
        result = index.query(HARBOUR_QUESTION, method, answer=True)
        state = index.method(method).run(index.resources, HARBOUR_QUESTION)
    assert [s["name"] for s in result.trace] == ["node.tfidf", "chunk.kgp", "chunk.evidence",
                                                 "merge.context"]  # fmt: skip
    walk_step = result.trace[1]
    calls = walk_step["llm_calls"]
    assert calls >= 1 and walk_step["tokens"] > 100 * calls  # the double: 100 prompt tokens
    assert result.answer == "Josiah Aldercott."
    assert result.usage["llm_calls"] == calls + 1  # the walk's calls and the answer
    assert result.passages[0] == "harbour" and "## Passages" in result.context
    # The ranking is the reading order: the seed, then what the agent read from it.
    picked = state.subgraph["kgp"]["picked"]
    (seed,) = picked
    assert [c for c, _ in state.chunks] == [seed, *picked[seed]]
    assert len(result.chunks) == 1 + len(picked[seed]) >= 2


def test_describe_and_listing(capsys):
    from hygraph.cli import main

    assert main(["methods", "--describe", "kgp"]) == 0
    out = capsys.readouterr().out
    assert "chunk.kgp" in out and "seed_passages" in out and "[framework code]" in out
    assert main(["methods", "--json"]) == 0
    listing = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert listing["kgp"]["query_llm"].startswith("required")


def test_insert_and_delete_keep_the_passage_graph_current(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    docs = harbour_docs()

    def graph(index: GraphIndex) -> set[tuple[str, str, float]]:
        chunks = index.store.get_chunks(index.store.chunk_ids())
        return {(*sorted((chunks[s].doc_id, chunks[d].doc_id)), w)
                for s, d, w in index.store.edge_rows([EdgeKind.PASSAGE_SHARED])}  # fmt: skip

    with GraphIndex(tmp_path / "all", embedder=WordEmbedder(256), progress=False) as index:
        index.insert(docs, methods=["kgp"])
        whole = graph(index)
    with GraphIndex(tmp_path / "parts", embedder=WordEmbedder(256), progress=False) as index:
        index.insert(docs[:2], methods=["kgp"])
        index.insert(docs[2:])
        assert graph(index) == whole and whole
        index.delete("harbour")
        assert graph(index) == {e for e in whole if "harbour" not in e[:2]}
        index.insert(docs[:1])
        assert graph(index) == whole


# --------------------------------------------------------------------------- frameworks


def test_llama_index_langchain_and_the_langgraph_tool(harbour, minilm):
    pytest.importorskip("llama_index.core")
    pytest.importorskip("langchain_core")
    from langchain_hygraph import HyGraphRetriever
    from langchain_hygraph.graph import make_method_tools
    from llama_index_hygraph import HyGraphIndex

    llm = harbour_llm()
    question = "Which vessel did the shipyard in Harrowby build?"  # not in the LLM cache yet
    method = "kgp:seed_passages=1"
    with GraphIndex.open(harbour, embedder=minilm, llm=llm, progress=False) as opened:
        li = HyGraphIndex(graph_index=opened)
        nodes = li.as_retriever(method=method, similarity_top_k=2).retrieve(question)
        assert len(nodes) == 2 and nodes[0].node.metadata["method"] == method
        assert llm.calls  # the agent ran
        docs = HyGraphRetriever(index=opened, method=method, k=2).invoke(question)
        assert [d.page_content for d in docs] == [n.node.get_content() for n in nodes]
        retriever = HyGraphRetriever(index=opened, method=method, k=2)
        (tool,) = make_method_tools(retriever, [method])
        call = {"name": tool.name, "args": {"query": question}, "id": "c", "type": "tool_call"}
        message = tool.invoke(call)
        assert "Harrowby" in message.content
        assert {d.metadata["method"] for d in message.artifact} == {method}
