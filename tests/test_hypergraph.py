"""HyperGraphRAG (``hypergraph``): scoring and thresholds, the bipartite fact layer,
incremental delete, retrieval with its ablations, answers, the CLI, and method specs."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from hygraph import GraphIndex
from hygraph.cli import main
from hygraph.errors import ConfigError, UnknownMethodError
from hygraph.extract import Entity, Extraction, ExtractionStats, Fact
from hygraph.graph.entity_graph import EntityGraphBuilder, entity_node_id
from hygraph.graph.hypergraph import Bipartite, HypergraphBuilder, fact_node_id
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import GraphStore
from hygraph.ingest import Document
from hygraph.methods.base import parse_method_spec
from hygraph.methods.hypergraph import Hypergraph, HypergraphConfig
from hygraph.models.base import LLMResponse
from hygraph.operators.recipe import resolve
from hygraph.operators.registry import get_operator
from hygraph.operators.scoring import select, uses_scores
from hygraph.operators.state import State
from hygraph.resources import Resources

# --------------------------------------------------------------------------- helpers


class ScriptedExtractor:
    """Test double: a scripted stand-in for an LLM extractor. It returns hand-written
    entities and facts (with LLM-style importance and completeness scores) for each
    chunk, looked up by the chunk's document id, normalised as real extractors do."""

    def __init__(self, script, name="scripted"):
        self.script = script
        self.name = name
        self.stats = ExtractionStats()
        self.calls = 0

    def extract(self, chunks):
        self.calls += 1
        out = []
        for chunk in chunks:
            entities, facts = self.script[chunk.doc_id]
            ex = Extraction(
                chunk.id,
                entities=[Entity(*e) for e in entities],
                facts=[Fact(*f) for f in facts],
                extractor=self.name,
            ).normalised()
            self.stats.count(ex)
            out.append(ex)
        return out


def ent(name: str) -> str:
    return entity_node_id(name.casefold())


def incidence_integrity(store: GraphStore) -> None:
    """Every incidence edge joins a stored fact node to a stored entity node."""
    edges = list(store.iter_edges(EdgeKind.INCIDENCE))
    nodes = store.get_nodes({e.src for e in edges} | {e.dst for e in edges})
    for e in edges:
        assert e.src in nodes and nodes[e.src].kind == NodeKind.FACT, e
        assert e.dst in nodes and nodes[e.dst].kind == "entity", e


def sections(context: str) -> list[str]:
    return [line for line in context.splitlines() if line.startswith("## ")]


def by_kind(result, kind: str) -> list:
    return [i for i in result.items if i.kind == kind]


def run_step(res, state: State, method, op: str, **override) -> State:
    """Run the step ``op`` of ``method``'s recipe on ``state``, its parameters resolved
    from the method's config as the recipe would (``override`` replaces some)."""
    [step] = [s for s in method.recipe if s.op == op]
    params = {**resolve(step.params, method.config, state, 0, op), **override}
    get_operator(op).fn(res, state, **params)
    return state


def question_entities(res, method, question: str) -> list[str]:
    """The question's entities as the method's ``question.entities`` step finds them."""
    return run_step(res, State(question=question, top_k=1), method, "question.entities").keywords


# --------------------------------------------------------------------------- 1. select()

HITS = [
    ("a", 0.8, 10.0),  # product 8.0
    ("b", 0.6, 10.0),  # product 6.0
    ("c", 0.9, 5.0),  # product 4.5: similar, but a low extractor score
    ("d", 0.5, 10.0),  # product exactly 5.0: on the threshold
    ("z", 0.99, 0.0),  # scored 0 by the extractor
]


def _select(threshold_on="product", use_scores=True, k=10, hits=HITS):
    kept = select(
        hits, full=10.0, threshold=5.0, k=k, threshold_on=threshold_on, use_scores=use_scores
    )
    return [s.id for s in kept]


def _kw(**over):
    kw = {"full": 10.0, "threshold": 5.0, "k": 10, "threshold_on": "product", "use_scores": True}
    return {**kw, **over}


def test_select_product_is_strict_ranked_and_cut():
    assert _select() == ["a", "b"]  # d (= 5.0) fails the strict >, z (score 0) never passes
    assert _select(k=1) == ["a"]
    best = select(HITS, full=10.0, threshold=5.0, k=1, threshold_on="product", use_scores=True)
    assert (best[0].cosine, best[0].score, best[0].value) == (0.8, 10.0, 8.0)


def test_select_llm_score_and_cosine_modes():
    # llm_score: the extractor score alone against τ; ranking is still the product.
    assert _select("llm_score") == ["a", "b", "d"]
    # cosine: the cosine against τ / full (0.5); ranked by the product.
    assert _select("cosine", hits=HITS[:4]) == ["a", "b", "c"]
    assert (
        select(
            [("x", 0.51, 100.0), ("y", 0.5, 100.0)],
            full=100.0,
            threshold=50.0,
            k=5,
            threshold_on="cosine",
            use_scores=True,
        )[0].id
        == "x"
    )


def test_select_without_scores_counts_every_item_as_full():
    # Every item is scored 10: the product threshold becomes cosine > 0.5, and the
    # ranking follows the cosine; z (scored 0 by the extractor) now passes.
    assert _select(use_scores=False) == ["z", "c", "a", "b"]
    assert all(s.score == 10.0 for s in select(HITS, **_kw(use_scores=False)))
    assert _select("llm_score", use_scores=False) == ["z", "c", "a", "b", "d"]


def test_select_score_zero_never_passes_product_or_llm_score():
    zero = [("z", 1.0, 0.0)]
    for mode in ("product", "llm_score"):
        assert select(zero, **_kw(threshold_on=mode)) == []
        assert select(zero, **_kw(threshold_on=mode, threshold=0.0)) == []
    ties = select([("b", 0.7, 10.0), ("a", 0.7, 10.0)], **_kw())
    assert [s.id for s in ties] == ["a", "b"]  # equal scores: a stable order by id


def test_select_score_zero_never_passes_cosine_mode():
    assert select([("z", 0.99, 0.0)], **_kw(threshold_on="cosine")) == []


def test_use_scores_auto_follows_the_extractor():
    def res(extractor):
        """Resources of an index whose manifest names ``extractor`` (nothing else is read)."""
        return Resources(
            path=None, store=None, vectors=None, manifest=SimpleNamespace(extractor=extractor),
            embedder=None, llm=None, tracker=None, progress=False, cache_dir=None,
        )  # fmt: skip

    def use(method, extractor):
        return uses_scores(res(extractor), method.config.use_scores)

    auto = Hypergraph()
    assert use(auto, "llm-nary") and use(auto, "llm")
    assert not use(auto, "offline") and not use(auto, "scripted")
    assert use(Hypergraph({"use_scores": "true"}), "offline")
    assert not use(Hypergraph({"use_scores": "false"}), "llm")


# --------------------------------------------------------------------------- 2. builder

BUILT = "Maud Fenwick built the Corran Point Lighthouse in 1819."
STANDS = "The Corran Point Lighthouse stands on Skellig Varr."
MEDAL = "Maud Fenwick received the Telford Medal."


def _extraction(chunk_id, entities, facts):
    return Extraction(
        chunk_id, entities=[Entity(*e) for e in entities], facts=[Fact(*f) for f in facts]
    ).normalised()


def _builder_extractions():
    c1 = _extraction(
        "c1",
        [("Maud Fenwick", "person", "", 80), ("Corran Point Lighthouse", "structure", "", 90)],
        [(BUILT, ["Maud Fenwick", "Corran Point Lighthouse", "1819"], 7, {"Maud Fenwick": 85})],
    )
    c2 = _extraction(
        "c2",
        [("Maud Fenwick", "person", "", 70), ("Corran Point Lighthouse", "structure", "", 50)],
        [
            (  # the same statement, spaced differently: the same hyperedge
                "  Maud  Fenwick built the Corran Point Lighthouse in 1819. ",
                ["Maud Fenwick", "Corran Point Lighthouse"],
                9,
                {"Maud Fenwick": 60, "Corran Point Lighthouse": 95},
                {"Corran Point Lighthouse": "The lighthouse Fenwick built."},
            ),
            (STANDS, ["Corran Point Lighthouse", "Skellig Varr"], 8),
            (MEDAL, ["Maud Fenwick"], 5),
        ],
    )
    return [c1, c2]


def test_fact_node_id_is_whitespace_insensitive_and_namespaced():
    assert fact_node_id(BUILT) == fact_node_id(f"  {BUILT.replace(' ', '   ')}\n")
    assert fact_node_id(BUILT).startswith("fact:") and fact_node_id(BUILT) != fact_node_id(MEDAL)


def test_builder_merges_facts_across_chunks_into_a_bipartite_graph():
    store = GraphStore(None)
    extractions = _builder_extractions()
    EntityGraphBuilder(store).add(extractions)
    builder = HypergraphBuilder(store)
    update = builder.plan(extractions)
    assert store.nodes_of_kind(NodeKind.FACT) == []  # planning reads, never writes
    builder.write(update)

    built, stands, medal = (fact_node_id(t) for t in (BUILT, STANDS, MEDAL))
    facts = {n.id: n for n in store.nodes_of_kind(NodeKind.FACT)}
    assert set(facts) == {built, stands, medal}
    node = facts[built]
    assert node.text == BUILT
    assert node.data["score"] == 9.0 and node.data["mention_count"] == 2  # max, not the sum
    assert node.data["mentions"] == {"c1": 7.0, "c2": 9.0}
    assert sorted(node.sources) == ["c1", "c2"]

    # One incidence per member, weighted by the member's highest importance under the
    # fact: per-fact scores first, else the chunk's importance, else the default 50.
    edges = {e.dst: e for e in store.edges_of(built, EdgeKind.INCIDENCE)}
    assert set(edges) == {ent("Maud Fenwick"), ent("Corran Point Lighthouse"), ent("1819")}
    assert edges[ent("Maud Fenwick")].weight == 85.0  # max(85 in c1, 60 in c2)
    assert edges[ent("Corran Point Lighthouse")].weight == 95.0  # max(90 fallback, 95)
    assert edges[ent("1819")].weight == 50.0  # a member with no score anywhere
    entries = edges[ent("Corran Point Lighthouse")].data["entries"]
    assert entries == {"c1": [90.0, ""], "c2": [95.0, "The lighthouse Fenwick built."]}
    assert sum(1 for _ in store.iter_edges(EdgeKind.INCIDENCE)) == 3 + 2 + 1
    incidence_integrity(store)

    graph = Bipartite(store)
    assert set(graph.entities_of(built)) == set(edges)
    assert set(graph.hyperedges_of(ent("Corran Point Lighthouse"))) == {built, stands}
    assert set(graph.hyperedges_of(ent("Maud Fenwick"))) == {built, medal}
    assert graph.hyperedges_of(ent("Skellig Varr")) == [stands]
    assert graph.shared([ent("Maud Fenwick"), ent("Corran Point Lighthouse")]) == {built}
    assert graph.shared([ent("Maud Fenwick"), ent("Skellig Varr")]) == set()
    assert graph.shared([]) == set()
    assert (graph.degree(built), graph.degree(medal)) == (3, 1)
    assert graph.degree(ent("Corran Point Lighthouse")) == 2
    hyper = graph.hyperedges([built, ent("Maud Fenwick"), "fact:missing"])
    assert list(hyper) == [built]  # entity ids and unknown ids are not hyperedges
    assert hyper[built].members == [
        ent("Corran Point Lighthouse"),
        ent("Maud Fenwick"),
        ent("1819"),
    ]  # strongest member first
    assert hyper[built].score == 9.0 and sorted(hyper[built].sources) == ["c1", "c2"]

    # A later batch merges with what is stored; replanning a chunk is idempotent.
    c3 = _extraction("c3", [], [(BUILT, ["Maud Fenwick"], 4, {"Maud Fenwick": 99})])
    EntityGraphBuilder(store).add([c3])
    builder.write(builder.plan([c3, extractions[0]]))
    node = store.get_nodes([built])[built]
    assert node.data["score"] == 9.0 and node.data["mention_count"] == 3
    assert (
        store.get_edges([(built, ent("Maud Fenwick"), EdgeKind.INCIDENCE)])[
            (built, ent("Maud Fenwick"), EdgeKind.INCIDENCE)
        ].weight
        == 99.0
    )
    assert sum(1 for _ in store.iter_edges(EdgeKind.INCIDENCE)) == 6
    incidence_integrity(store)


# --------------------------------------------------------------------------- 3. delete

SHARED = "Maud Fenwick designed lighthouses for the Northern Lights Board."
ONLY_ALPHA = "Maud Fenwick built the Corran Point Lighthouse on Skellig Varr in 1819."
ONLY_BETA = "Maud Fenwick trained as a civil engineer at the Aberlyn Institute."

DELETE_SCRIPT = {
    "alpha": (
        [
            ("Maud Fenwick", "person", "Engineer who built the Corran Point Lighthouse.", 95),
            ("Northern Lights Board", "organisation", "Lighthouse authority.", 80),
            ("Corran Point Lighthouse", "structure", "Lighthouse on Skellig Varr.", 90),
            ("Skellig Varr", "location", "Island of the lighthouse.", 70),
            ("Aberlyn Institute", "organisation", "Where Fenwick met the Board.", 40),
        ],
        [
            (
                SHARED,
                ["Maud Fenwick", "Northern Lights Board", "Aberlyn Institute"],
                9,
                {"Maud Fenwick": 95, "Northern Lights Board": 80, "Aberlyn Institute": 40},
            ),
            (ONLY_ALPHA, ["Maud Fenwick", "Corran Point Lighthouse", "Skellig Varr", "1819"], 8),
        ],
    ),
    "beta": (
        [
            ("Maud Fenwick", "person", "Civil engineer from Dunkeld.", 70),
            ("Northern Lights Board", "organisation", "Commissioner of lighthouses.", 60),
            ("Aberlyn Institute", "organisation", "Engineering school.", 75),
        ],
        [
            (SHARED, ["Maud Fenwick", "Northern Lights Board"], 6, {"Maud Fenwick": 70}),
            (ONLY_BETA, ["Maud Fenwick", "Aberlyn Institute"], 7),
        ],
    ),
}
DELETE_DOCS = [
    Document("alpha", "Maud Fenwick built the Corran Point Lighthouse on Skellig Varr in 1819."),
    Document("beta", "Maud Fenwick trained at the Aberlyn Institute in Dunkeld."),
]


def _snapshot(index: GraphIndex) -> dict:
    counts = index.store.counts()
    return {
        "nodes": counts["nodes"],
        "edges": counts["edges"],
        "facts": index.vectors.count("facts"),
        "entities": index.vectors.count("entities"),
    }


def test_delete_removes_exclusive_facts_and_rederives_shared_ones(tmp_path, minilm):
    extractor = ScriptedExtractor(DELETE_SCRIPT)
    with GraphIndex(tmp_path / "idx", extractor=extractor, progress=False) as index:
        index.insert(DELETE_DOCS, methods=["hypergraph"])
        before = _snapshot(index)
        assert before["nodes"] == {"entity": 6, "fact": 3}
        assert before["facts"] == 3 and before["entities"] == 6
        shared, alpha, beta = (fact_node_id(t) for t in (SHARED, ONLY_ALPHA, ONLY_BETA))
        [beta_chunk] = [c.id for c in index.store.chunks_of("beta")]
        gone_entities = [ent("Corran Point Lighthouse"), ent("Skellig Varr"), ent("1819")]

        removed = index.delete("alpha")
        assert alpha in removed.node_ids and set(gone_entities) <= set(removed.node_ids)
        nodes = index.store.get_nodes([shared, alpha, beta, *gone_entities])
        assert set(nodes) == {shared, beta}
        assert index.vectors.existing("facts", [shared, alpha, beta]) == {shared, beta}
        survivors = [ent("Maud Fenwick"), ent("Northern Lights Board"), ent("Aberlyn Institute")]
        assert index.vectors.existing("entities", gone_entities + survivors) == set(survivors)
        assert _snapshot(index) == {
            "nodes": {"entity": 3, "fact": 2},
            "edges": {"incidence": 4, "mentions": 3},
            "facts": 2,
            "entities": 3,
        }
        incidence_integrity(index.store)

        # The shared fact is re-derived from beta alone: score, count, members, weights.
        fact = nodes[shared]
        assert fact.data["score"] == 6.0 and fact.data["mention_count"] == 1
        assert fact.data["mentions"] == {beta_chunk: 6.0} and fact.sources == (beta_chunk,)
        graph = Bipartite(index.store)
        assert set(graph.entities_of(shared)) == {ent("Maud Fenwick"), ent("Northern Lights Board")}
        weights = {e.dst: e.weight for e in index.store.edges_of(shared, EdgeKind.INCIDENCE)}
        # Beta gave Maud a per-fact score (70); the Board falls back to its importance (60).
        assert weights == {ent("Maud Fenwick"): 70.0, ent("Northern Lights Board"): 60.0}

        # The shared entity keeps beta's provenance and description, and is re-embedded.
        maud = index.store.get_nodes([ent("Maud Fenwick")])[ent("Maud Fenwick")]
        assert maud.sources == (beta_chunk,) and maud.text == "Civil engineer from Dunkeld."
        assert maud.data["score"] == 70.0
        hit = index.search_vectors("entities", "Maud Fenwick: Civil engineer from Dunkeld.", 1)[0]
        assert hit.id == ent("Maud Fenwick") and hit.score > 0.99

        # Re-inserting restores exactly what was there; inserting again adds nothing.
        report = index.insert(DELETE_DOCS)
        assert report.added == ["alpha"] and report.unchanged == ["beta"]
        assert _snapshot(index) == before
        fact = index.store.get_nodes([shared])[shared]
        assert fact.data["score"] == 9.0 and fact.data["mention_count"] == 2
        calls = extractor.calls
        report = index.insert(DELETE_DOCS, methods=["hypergraph"])
        assert report.added == [] and sorted(report.unchanged) == ["alpha", "beta"]
        assert _snapshot(index) == before and extractor.calls == calls
        incidence_integrity(index.store)


# --------------------------------------------------------------------------- 4. retrieval

BUILT_1819 = "Maud Fenwick built the Corran Point Lighthouse on Skellig Varr in 1819."
AUTOMATED = "The Corran Point Lighthouse was automated in 1978."
TRAINED = "Maud Fenwick trained as a civil engineer at the Aberlyn Institute."
MEDAL_UNARY = "Maud Fenwick received the Telford Medal for her harbour designs."
ORCHARD = "The Brisby Orchard grows quince and medlar trees near Polwarne."

SCRIPT = {
    "lighthouse": (
        [
            ("Corran Point Lighthouse", "structure", "Lighthouse on Skellig Varr.", 95),
            ("Maud Fenwick", "person", "Engineer who built the Corran Point Lighthouse.", 85),
            ("Skellig Varr", "location", "Island where the lighthouse stands.", 70),
            ("1819", "date", "Year the lighthouse was built.", 60),
            ("1978", "date", "Year the lighthouse was automated.", 55),
        ],
        [
            (BUILT_1819, ["Maud Fenwick", "Corran Point Lighthouse", "Skellig Varr", "1819"], 9),
            (AUTOMATED, ["Corran Point Lighthouse", "1978"], 6),
        ],
    ),
    "fenwick": (
        [
            ("Maud Fenwick", "person", "Civil engineer trained at the Aberlyn Institute.", 90),
            ("Aberlyn Institute", "organisation", "Engineering school in Dunkeld.", 75),
        ],
        [(TRAINED, ["Maud Fenwick", "Aberlyn Institute"], 9), (MEDAL_UNARY, ["Maud Fenwick"], 7)],
    ),
    "orchard": (
        [
            ("Brisby Orchard", "place", "Orchard of quince and medlar trees.", 80),
            ("Polwarne", "location", "Market town near the orchard.", 60),
        ],
        [(ORCHARD, ["Brisby Orchard", "Polwarne"], 6)],
    ),
}
DOCS = [
    Document(
        "lighthouse",
        "Maud Fenwick built the Corran Point Lighthouse on the island of Skellig Varr in 1819. "
        "The lighthouse was automated in 1978.",
        title="Corran Point Lighthouse",
    ),
    Document(
        "fenwick",
        "Maud Fenwick trained as a civil engineer at the Aberlyn Institute. She received the "
        "Telford Medal for her harbour designs.",
        title="Maud Fenwick",
    ),
    Document(
        "orchard",
        "The Brisby Orchard grows quince and medlar trees near the market town of Polwarne.",
        title="Brisby Orchard",
    ),
]
WHO_BUILT = "Who built the Corran Point Lighthouse?"


@pytest.fixture(scope="module")
def lighthouse(tmp_path_factory, minilm):
    """A small hand-made hypergraph (read-only): 3 documents, 5 facts, 8 entities."""
    path = tmp_path_factory.mktemp("hyper") / "idx"
    index = GraphIndex(path, extractor=ScriptedExtractor(SCRIPT), progress=False)
    index.insert(DOCS, methods=["hypergraph"])
    yield index
    index.close()


def _facts(result) -> dict[str, object]:
    return {i.metadata["statement"]: i for i in by_kind(result, "fact")}


def _entities(result) -> dict[str, object]:
    return {i.id: i for i in by_kind(result, "entity")}


def test_index_holds_the_hypergraph(lighthouse):
    counts = lighthouse.store.counts()
    assert counts["nodes"] == {"entity": 8, "fact": 5}
    assert counts["edges"]["incidence"] == 4 + 2 + 2 + 1 + 2
    assert lighthouse.vectors.count("facts") == 5 and lighthouse.vectors.count("entities") == 8
    assert lighthouse.manifest.methods["hypergraph"] == HypergraphConfig().to_dict()
    incidence_integrity(lighthouse.store)


def test_answer_fact_is_retrieved_with_its_members(lighthouse):
    result = lighthouse.query(WHO_BUILT, "hypergraph")
    assert sections(result.context) == ["## Entities", "## Facts", "## Sources"]
    facts = _facts(result)
    built = facts[BUILT_1819]
    assert built.metadata["via"] == "fact" and built.metadata["completeness"] == 9.0
    assert set(built.metadata["members"]) == {
        "Maud Fenwick",
        "Corran Point Lighthouse",
        "Skellig Varr",
        "1819",
    }
    assert built.text.startswith(BUILT_1819) and "[entities: " in built.text
    facts_section = result.context.split("## Facts")[1].split("## Sources")[0]
    assert BUILT_1819 in facts_section and "Maud Fenwick" in facts_section
    assert ORCHARD not in facts  # unrelated knowledge stays out
    assert result.passages[0] == "lighthouse" and "orchard" not in result.passages
    # Without extractor scores (a "scripted" index) every fact counts as scored 10:
    # hyperedge hits rank by cosine × 10, each above τ_H = 5.
    fact_scores = [i.score for i in by_kind(result, "fact") if i.metadata["via"] == "fact"]
    assert fact_scores == sorted(fact_scores, reverse=True) and min(fact_scores) > 5
    assert result.context == lighthouse.query(WHO_BUILT, "hypergraph:use_scores=false").context


def test_extractor_scores_change_what_passes(lighthouse):
    result = lighthouse.query(WHO_BUILT, "hypergraph:use_scores=true")
    facts = _facts(result)
    # 9 × cos ≈ 6.3 passes τ_H = 5; the automation fact (scored 6) falls below it as a
    # hyperedge hit but is still reached through its retrieved lighthouse entity.
    assert facts[BUILT_1819].metadata["via"] == "fact"
    assert facts[AUTOMATED].metadata["via"] == "entity"
    assert list(facts)[0] == BUILT_1819
    entities = _entities(result)
    assert entities[ent("Corran Point Lighthouse")].metadata["retrieved"]
    assert entities[ent("Corran Point Lighthouse")].score > 50  # 95 × cos, above τ_V
    # Skellig Varr (importance 70) is too weak a match to pass τ_V, but as a member of
    # a kept fact it is still shown.
    assert not entities[ent("Skellig Varr")].metadata["retrieved"]
    plain = _entities(lighthouse.query(WHO_BUILT, "hypergraph"))
    assert plain[ent("Skellig Varr")].metadata["retrieved"]  # scored as 100 without scores


def test_expansion_entity_brings_all_its_facts(lighthouse):
    result = lighthouse.query(WHO_BUILT, "hypergraph:fact_retrieval=false")
    graph = Bipartite(lighthouse.store)
    retrieved = [i.id for i in by_kind(result, "entity") if i.metadata["retrieved"]]
    assert ent("Corran Point Lighthouse") in retrieved and ent("Maud Fenwick") in retrieved
    fact_ids = {i.id for i in by_kind(result, "fact")}
    for entity_id in retrieved:  # F_V*: every hyperedge of every retrieved entity
        assert set(graph.hyperedges_of(entity_id)) <= fact_ids
    assert {TRAINED, MEDAL_UNARY, AUTOMATED, BUILT_1819} == set(_facts(result))
    assert all(i.metadata["via"] == "entity" for i in by_kind(result, "fact"))


def test_expansion_fact_brings_all_its_members(lighthouse):
    result = lighthouse.query(WHO_BUILT, "hypergraph:entity_retrieval=false")
    graph = Bipartite(lighthouse.store)
    entities = _entities(result)
    assert entities and not any(i.metadata["retrieved"] for i in entities.values())
    for fact in by_kind(result, "fact"):  # F_H*: all members of every kept hyperedge
        assert fact.metadata["via"] == "fact"
        assert set(graph.entities_of(fact.id)) <= set(entities)
    assert set(entities) == {m for f in by_kind(result, "fact") for m in graph.entities_of(f.id)}
    # Maud Fenwick's other facts came only through entity retrieval: now they are gone.
    assert set(_facts(result)) == {BUILT_1819, AUTOMATED}
    assert ent("Aberlyn Institute") not in entities


def test_ablations_remove_their_contribution(lighthouse):
    full = lighthouse.query(WHO_BUILT, "hypergraph")
    assert {i.kind for i in full.items} == {"entity", "fact", "chunk"}
    no_chunks = lighthouse.query(WHO_BUILT, "hypergraph:chunk_retrieval=false")
    assert not by_kind(no_chunks, "chunk") and sections(no_chunks.context) == [
        "## Entities",
        "## Facts",
    ]
    assert [i.id for i in no_chunks.items] == [i.id for i in full.items if i.kind != "chunk"]
    chunks_only = lighthouse.query(
        WHO_BUILT, "hypergraph:entity_retrieval=false,fact_retrieval=false"
    )
    assert {i.kind for i in chunks_only.items} == {"chunk"}
    assert sections(chunks_only.context) == ["## Sources"]
    nothing = lighthouse.query(
        WHO_BUILT, "hypergraph:entity_retrieval=false,fact_retrieval=false,chunk_retrieval=false"
    )
    assert nothing.items == [] and nothing.context == "" and nothing.chunks == []


def test_min_arity_drops_unary_facts(lighthouse):
    assert MEDAL_UNARY in _facts(lighthouse.query(WHO_BUILT, "hypergraph"))
    strict = _facts(lighthouse.query(WHO_BUILT, "hypergraph:min_arity=2"))
    assert MEDAL_UNARY not in strict and {BUILT_1819, TRAINED} <= set(strict)
    assert all(len(f.metadata["members"]) >= 2 for f in strict.values())
    big = _facts(lighthouse.query(WHO_BUILT, "hypergraph:min_arity=4"))
    assert list(big) == [BUILT_1819]


def test_thresholds_and_top_k_through_the_index(lighthouse):
    spec = "hypergraph:entity_retrieval=false,chunk_retrieval=false"
    hits = _facts(lighthouse.query(WHO_BUILT, spec))
    assert len(hits) == 2
    best = max(hits.values(), key=lambda i: i.score)
    top1 = _facts(lighthouse.query(WHO_BUILT, spec + ",fact_top_k=1"))
    assert list(top1) == [best.metadata["statement"]]
    # A threshold just under the best product keeps only it; just at it keeps nothing.
    under = _facts(lighthouse.query(WHO_BUILT, f"{spec},fact_threshold={best.score - 1e-6}"))
    assert list(under) == [best.metadata["statement"]]
    at = lighthouse.query(WHO_BUILT, f"{spec},fact_threshold={best.score + 1e-6}")
    assert at.items == []
    cosine = _facts(lighthouse.query(WHO_BUILT, f"{spec},threshold_on=cosine,fact_threshold=9.99"))
    assert cosine == {}  # τ / full = 0.999: no fact is that similar


def test_sections_order_titles_and_budgets(lighthouse):
    only_facts = lighthouse.query(WHO_BUILT, "hypergraph:sections=facts")
    assert sections(only_facts.context) == ["## Facts"]
    assert {i.kind for i in only_facts.items} == {"fact"}
    tight = lighthouse.query(WHO_BUILT, "hypergraph:fact_budget=1")
    assert len(by_kind(tight, "fact")) == 1  # the budget stops after the first fact


def test_sections_order_can_be_set_in_a_method_spec(lighthouse):
    result = lighthouse.query(WHO_BUILT, "hypergraph:sections=facts+chunks")
    assert sections(result.context) == ["## Facts", "## Sources"]


def test_question_entities_modes(lighthouse):
    res = lighthouse.resources
    offline = lighthouse.method("hypergraph")
    assert question_entities(res, offline, WHO_BUILT) == ["Corran Point Lighthouse"]
    assert question_entities(res, offline, "what is it?") == ["what is it?"]  # fallback
    whole = lighthouse.method("hypergraph:query_entities=question")
    assert question_entities(res, whole, WHO_BUILT) == [WHO_BUILT]
    with pytest.raises(ConfigError, match="needs an LLM"):
        lighthouse.query(WHO_BUILT, "hypergraph:query_entities=llm")
    # Without entity retrieval no question entities are needed, so no LLM either.
    assert lighthouse.query(WHO_BUILT, "hypergraph:query_entities=llm,entity_retrieval=false")


def test_chunk_mode_provenance_and_passage_ranking(lighthouse):
    result = lighthouse.query(WHO_BUILT, "hypergraph:chunk_mode=provenance")
    chunks = [i.source_ids[0] for i in by_kind(result, "chunk")]
    provenance = [
        c for i in by_kind(result, "fact") + by_kind(result, "entity") for c in i.source_ids
    ]
    assert chunks == list(dict.fromkeys(provenance))[:6]
    assert [i.score for i in by_kind(result, "chunk")] == [1 / (n + 1) for n in range(len(chunks))]
    orchard = lighthouse.store.chunks_of("orchard")[0].id
    assert orchard not in chunks
    top1 = lighthouse.query(WHO_BUILT, "hypergraph:chunk_mode=provenance", top_k=1)
    assert [i.source_ids[0] for i in by_kind(top1, "chunk")] == chunks[:1]

    # The passage ranking: the Sources chunks, then fact provenance, then entities'.
    dense = lighthouse.query(WHO_BUILT, "hypergraph")
    sources = [i.id for i in by_kind(dense, "chunk")]
    assert sources and dense.chunks[: len(sources)] == sources
    expected = [
        c
        for kind in ("chunk", "fact", "entity")
        for i in by_kind(dense, kind)
        for c in i.source_ids
    ]
    assert dense.chunks == list(dict.fromkeys(expected))
    docs = {c: chunk.doc_id for c, chunk in lighthouse.store.get_chunks(dense.chunks).items()}
    assert dense.passages == list(dict.fromkeys(docs[c] for c in dense.chunks))


# --------------------------------------------------------------------------- 6. answers


class AnsweringLLM:
    """Test double: answers the question-entity prompt with JSON and the knowledge
    prompt like a reasoning model (think, then answer); records what it was sent."""

    name = "scripted-answerer"

    def __init__(self):
        self.prompts = []

    async def acomplete(self, messages, **params):
        return self.complete(messages, **params)

    def complete(self, messages, **params):
        text = messages[-1]["content"]
        self.prompts.append(text)
        if "---Knowledge---" in text:
            return LLMResponse(
                "<think>The facts say Fenwick built it in 1819.</think><answer>1819</answer>",
                300,
                20,
            )
        return LLMResponse(json.dumps({"entities": ["Corran Point Lighthouse"]}), 80, 10)


def test_answer_reads_the_answer_tags(tmp_path, minilm):
    llm = AnsweringLLM()
    extractor = ScriptedExtractor(SCRIPT)
    with GraphIndex(
        tmp_path / "idx", llm=llm, extractor=extractor, progress=False, llm_in_retrieval=True
    ) as index:
        index.insert(DOCS, methods=["hypergraph"])
        question = "In what year was the Corran Point Lighthouse built?"
        result = index.query(question, "hypergraph", answer=True)
    assert result.answer == "1819"
    answer_prompts = [p for p in llm.prompts if "---Knowledge---" in p]
    assert len(answer_prompts) == 1
    prompt = answer_prompts[0]
    knowledge = prompt.split("---Knowledge---")[1].split("---Goal---")[0]
    assert "## Facts" in knowledge and BUILT_1819 in knowledge
    assert "<answer>" in prompt and prompt.rstrip().endswith(question)
    # The question's entities came from the LLM (spec §4.1), and were retrieved.
    assert any(question in p for p in llm.prompts if p is not prompt)
    retrieved = [i.id for i in by_kind(result, "entity") if i.metadata["retrieved"]]
    assert retrieved[0] == ent("Corran Point Lighthouse")
    assert result.usage["llm_calls"] == 2


class FailingLLM(AnsweringLLM):
    """Test double: an endpoint that times out on every call."""

    def complete(self, messages, **params):
        from hygraph.errors import ModelError

        raise ModelError("scripted-answerer: timed out after 3 attempts")


def test_question_entities_fall_back_to_the_offline_rules_when_the_llm_fails(
    tmp_path, minilm, caplog
):
    extractor = ScriptedExtractor(SCRIPT)
    with GraphIndex(
        tmp_path / "idx", llm=FailingLLM(), extractor=extractor, progress=False,
        llm_in_retrieval=True,
    ) as index:  # fmt: skip
        index.insert(DOCS, methods=["hypergraph"])
        with caplog.at_level("WARNING", logger="hygraph"):
            result = index.query(WHO_BUILT, "hypergraph")
    assert "using the offline rules" in caplog.text
    assert BUILT_1819 in {i.metadata.get("statement") for i in by_kind(result, "fact")}


def test_parse_answer_without_tags_keeps_the_reply():
    method = Hypergraph()
    assert method.parse_answer("<think>x</think><answer> 1819 </answer>") == "1819"
    assert method.parse_answer("<think>hm</think>It was 1819.") == "It was 1819."
    messages = method.answer_messages("When?", "## Facts\n[1] A fact.")
    assert len(messages) == 1 and "[1] A fact." in messages[0]["content"]


# --------------------------------------------------------------------------- 5. end to end


def test_sample_corpus_end_to_end(tmp_path, minilm):
    from hygraph.demo import sample_documents, sample_questions

    docs = sample_documents()
    with GraphIndex.build(docs, tmp_path / "idx", methods=["hypergraph"], progress=False) as index:
        info = index.info()
        counts = info["counts"]
        n_facts, n_entities = counts["nodes"]["fact"], counts["nodes"]["entity"]
        assert n_facts > 20 and n_entities > 20
        assert info["manifest"]["methods"]["hypergraph"]["fact_threshold"] == 5.0
        assert index.vectors.count("facts") == n_facts
        assert index.vectors.count("entities") == n_entities
        graph = Bipartite(index.store)
        fact_nodes = index.store.nodes_of_kind(NodeKind.FACT)
        assert counts["edges"]["incidence"] == sum(graph.degree(f.id) for f in fact_nodes)
        assert all(f.data["mention_count"] == len(f.sources) for f in fact_nodes)
        assert all(0 < f.data["score"] <= 10 for f in fact_nodes)
        incidence_integrity(index.store)

        questions = {q["id"]: q for q in sample_questions()}
        for qid in ("q01", "q02"):
            q = questions[qid]
            result = index.query(q["question"], "hypergraph")
            assert result.passages[0] == q["supporting_ids"][0], qid
            assert result.context_tokens <= 2000
            assert sections(result.context) == ["## Entities", "## Facts", "## Sources"]
        founded = _facts(index.query(questions["q02"]["question"], "hypergraph"))
        assert any(
            "1819" in s and "Josiah Aldercott" in f.metadata["members"] for s, f in founded.items()
        )

        report = index.insert(docs)
        assert report.added == [] and index.store.counts() == counts


def _run(args, capsys):
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_builds_and_queries_hypergraph(tmp_path, capsys, minilm, sample_path):
    docs = [str(sample_path / n) for n in ("aldercott-shipyard.md", "harrowby.md")]
    index = str(tmp_path / "idx")
    code, out, _ = _run(
        ["index", *docs, "--index", index, "--method", "hypergraph", "--json"], capsys
    )
    assert code == 0
    report = json.loads(out)
    assert report["methods"] == ["hypergraph"] and len(report["added"]) == 2

    code, out, _ = _run(["info", "--index", index, "--json"], capsys)
    counts = json.loads(out)["counts"]
    assert code == 0 and counts["nodes"]["fact"] > 0 and counts["edges"]["incidence"] > 0

    question = "In what year was Aldercott Shipyard founded?"
    spec = "hypergraph:chunk_retrieval=false"
    code, out, _ = _run(["query", question, "--index", index, "--method", spec, "--json"], capsys)
    assert code == 0
    result = json.loads(out)
    assert result["method"] == spec and result["passages"][0] == "aldercott-shipyard.md"
    kinds = {i["kind"] for i in result["items"]}
    assert kinds == {"entity", "fact"} and "## Sources" not in result["context"]
    assert any("1819" in i["text"] for i in result["items"] if i["kind"] == "fact")

    for bad, message in [
        ("hypergraph:nosuch=1", "unknown option 'nosuch'"),
        ("hypergraph:top_k", "must look like name=value"),
        ("hypergraph:chunk_retrieval=maybe", "takes true or false"),
        ("hypergraph:threshold_on=median", "threshold_on must be one of"),
    ]:
        code, out, err = _run(["query", question, "--index", index, "--method", bad], capsys)
        lines = [x for x in err.splitlines() if x.strip()]
        assert code == 2 and out == "" and len(lines) == 1, bad
        assert lines[0].startswith("hygraph: error:") and message in lines[0], bad


# --------------------------------------------------------------------------- 7. method specs


def test_parse_method_spec_coerces_types():
    name, options = parse_method_spec(
        "hypergraph: top_k=3, fact_threshold=2, entity_threshold=42.5, chunk_retrieval=off,"
        " fact_retrieval=YES, use_scores=true, chunk_mode=provenance,"
    )
    assert name == "hypergraph"
    assert options == {
        "top_k": 3,
        "fact_threshold": 2.0,
        "entity_threshold": 42.5,
        "chunk_retrieval": False,
        "fact_retrieval": True,
        "use_scores": "true",
        "chunk_mode": "provenance",
    }
    assert isinstance(options["fact_threshold"], float) and type(options["top_k"]) is int
    assert parse_method_spec("hypergraph") == ("hypergraph", {})
    config = Hypergraph(options).config
    assert config.top_k == 3 and config.chunk_retrieval is False


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("hypergraph:nosuch=1", "unknown option 'nosuch' for method hypergraph"),
        ("hypergraph:top_k", "must look like name=value"),
        ("hypergraph:top_k=three", "takes a number"),
        ("hypergraph:min_arity=1.5", "takes a number"),
        ("hypergraph:fact_threshold=high", "takes a number"),
        ("hypergraph:chunk_retrieval=maybe", "takes true or false"),
    ],
)
def test_parse_method_spec_rejects_bad_options(spec, message):
    with pytest.raises(ConfigError, match=message):
        parse_method_spec(spec)


def test_bad_config_values_and_unknown_method():
    for options in (
        {"threshold_on": "median"},
        {"use_scores": "sometimes"},
        {"chunk_mode": "sparse"},
        {"query_entities": "magic"},
        {"embed_style": "fancy"},
        {"sections": "facts,appendix"},
    ):
        with pytest.raises(ConfigError):
            Hypergraph(options)
    with pytest.raises(ConfigError, match="unknown option"):
        Hypergraph({"nosuch": 1})
    with pytest.raises(UnknownMethodError):
        parse_method_spec("hypergraf:top_k=1")


# --------------------------------------------------------------------------- 8. our rankings


def test_bridge_ranking_reaches_the_second_hop(tmp_path, minilm):
    """The trained-where passage shares no words of note with the question: only the
    bridge entity (Maud Fenwick, a member of the best fact) leads to it."""
    index = GraphIndex(tmp_path / "idx", extractor=ScriptedExtractor(SCRIPT), progress=False)
    index.insert(DOCS, methods=["hypergraph", "hypergraph-bridge"])
    question = "Where did the builder of the Corran Point Lighthouse study engineering?"
    bridge = index.query(question, "hypergraph-bridge", top_k=3)
    assert bridge.passages[:2] == ["lighthouse", "fenwick"]
    assert sections(bridge.context)[0] == "## Sources"
    # The variant shares the layer: nothing was built twice.
    assert index.store.done_items("layer:hypergraph") == set(index.store.chunk_ids())
    assert index.vectors.count("facts") == 5
    walk = index.query(question, "hypergraph:passage_rank=walk", top_k=3)
    assert set(walk.passages[:2]) == {"lighthouse", "fenwick"}
    index.close()


def test_bridge_skips_hub_entities(tmp_path, minilm):
    index = GraphIndex(tmp_path / "idx", extractor=ScriptedExtractor(SCRIPT), progress=False)
    index.insert(DOCS, methods=["hypergraph-bridge"])
    question = "Where did the builder of the Corran Point Lighthouse study engineering?"
    res = index.resources
    method = index.method("hypergraph-bridge:bridge_fanout=1,chunk_retrieval=false")
    # The same fact hits for both rankings (extractor scores off, as before the fusion).
    hits = State(question=question, top_k=method.config.top_k)
    hits.query = res.embed_query(question)
    run_step(res, hits, method, "relationship.vdb", use_scores="false")
    assert hits.relationships

    def bridge(method) -> list[str]:
        state = State(question=question, top_k=method.config.top_k, query=hits.query)
        state.relationships = list(hits.relationships)
        run_step(res, state, method, "chunk.bridge_facts")
        assert state.rankings["lead"] == [c for c, _ in state.chunks]
        return [c for c, _ in state.chunks]

    ranked = bridge(method)
    fenwick = index.store.chunks_of("fenwick")[0].id
    # Maud Fenwick is in 3 facts (> fanout 1): no bridge, and her other chunk is only
    # reachable through the dense ranking.
    with_bridge = bridge(index.method("hypergraph-bridge"))
    assert with_bridge.index(fenwick) <= ranked.index(fenwick)
    index.close()


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect")
def test_hypergraph_on_a_qdrant_server_client(tmp_path, minilm):
    """The same layer and rankings with vectors in qdrant-client (in-memory server API)."""
    from qdrant_client import QdrantClient

    client = QdrantClient(":memory:")
    index = GraphIndex(
        tmp_path / "idx",
        extractor=ScriptedExtractor(SCRIPT),
        qdrant_client=client,
        progress=False,
    )
    index.insert(DOCS, methods=["hypergraph-bridge"])
    assert index.vectors.count("facts") == 5 and index.vectors.count("entities") == 8
    question = "Where did the builder of the Corran Point Lighthouse study engineering?"
    result = index.query(question, "hypergraph-bridge", top_k=3)
    assert result.passages[:2] == ["lighthouse", "fenwick"]
    index.close()


class FlakyExtractor(ScriptedExtractor):
    """Test double: the scripted extractor, except that it fails on the chunks of one
    document (as an LLM that keeps timing out would) until ``healed`` is set."""

    def __init__(self, script, failing: str):
        super().__init__(script)
        self.failing = failing
        self.healed = False

    def extract(self, chunks):
        keep = [c for c in chunks if self.healed or c.doc_id != self.failing]
        return super().extract(keep)


def test_chunks_extracted_late_reach_the_layers(tmp_path, minilm):
    """A chunk whose extraction failed stays pending in the layers that read extractions,
    and the build that finally extracts it takes it in: the result equals a clean build."""
    failing = DOCS[0].id
    flaky = FlakyExtractor(SCRIPT, failing)
    with GraphIndex(tmp_path / "flaky", extractor=flaky, progress=False) as index:
        index.insert(DOCS, methods=["hypergraph"])
        missing = {c.id for c in index.store.chunks_of(failing)}
        assert not missing & index.store.done_items("extract")
        assert not missing & index.store.done_items("layer:hypergraph")
        assert not missing & index.store.done_items("layer:entity-vectors")
        flaky.healed = True
        index.insert([], methods=["hypergraph"])  # the next build extracts and takes them in
        assert missing <= index.store.done_items("layer:hypergraph")
        late = index.store.counts()["nodes"]
        late_vectors = {c: index.vectors.count(c) for c in ("facts", "entities")}
    clean = ScriptedExtractor(SCRIPT)
    with GraphIndex(tmp_path / "clean", extractor=clean, progress=False) as index:
        index.insert(DOCS, methods=["hypergraph"])
        assert index.store.counts()["nodes"] == late
        assert {c: index.vectors.count(c) for c in ("facts", "entities")} == late_vectors


def test_rebuild_gives_the_hypergraph_of_a_clean_build(tmp_path, minilm):
    """``rebuild`` resets the hypergraph layer (facts, incidences, fact vectors, progress)
    and builds it again from the stored extractions: the same as a clean build."""
    with GraphIndex(tmp_path / "idx", extractor=ScriptedExtractor(SCRIPT), progress=False) as index:
        index.insert(DOCS, methods=["hypergraph"])
        before = (index.store.counts(), index.vectors.count("facts"))
        assert before[0]["nodes"].get("fact", 0) > 0
        index.rebuild(["hypergraph"])
        assert (index.store.counts(), index.vectors.count("facts")) == before
