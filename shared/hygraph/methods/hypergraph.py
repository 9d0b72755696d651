"""``hypergraph``: HyperGraphRAG (Luo et al., NeurIPS 2025) over the shared extraction.

Build: every extracted n-ary fact becomes a hyperedge, stored as a bipartite
graph of fact and entity nodes (:mod:`hygraph.graph.hypergraph`), and embedded
into its own vector collection; entities are embedded into another (``"{name}:
{description}"``, re-embedded whenever a merge changes the description). Chunks
already have theirs.

Retrieve (spec §4–5):

1. question entities: an LLM JSON prompt when the index has an LLM, otherwise the
   offline rule extractor on the question; the whole question when none is found;
2. entity retrieval: cosine to the joined question entities × entity importance
   (0–100), kept if above ``entity_threshold`` (τ_V = 50), top ``entity_top_k`` (60);
3. hyperedge retrieval: cosine to the question × fact completeness (0–10), kept if
   above ``fact_threshold`` (τ_H = 5), top ``fact_top_k`` (60);
4. chunk retrieval: dense top ``top_k`` (k_C = 6) with cosine above
   ``chunk_threshold`` (τ_C = 0.5);
5. bidirectional expansion: each retrieved entity brings all its hyperedges, each
   hyperedge all its entities; ordered as the spec recommends and cut at each
   section's token budget (4000, the reference code's caps);
6. the context has the spec's three sections, Entities, Facts (hyperedges with their
   members) and Sources (chunks); answers use the chain-of-thought prompt and read
   the text inside ``<answer>``.

**Scores.** The paper multiplies each cosine by the score the extraction LLM gave
the item. The offline rules and imported OpenIE triples give no such scores (their
numbers are heuristics), so by default (``use_scores="auto"``) scores are used only
for indexes built with an LLM extractor; otherwise every item counts as fully
scored (100 or 10) and the thresholds become cosine thresholds of τ/100 = 0.5 and
τ/10 = 0.5. ``threshold_on`` picks what the thresholds are compared with: the
product (paper), the extractor score alone, or the cosine alone (then τ is divided
by the full score, so 0.5 for both).

The passage ranking (what citations and passage recall read) is the Sources
chunks, then the chunks each fact came from, in fact order, then those of the
entities.

``hypergraph-bridge`` is the same method with our improvement for multi-hop
questions as its default (see :class:`HypergraphBridge`); ``passage_rank="walk"``
(a personalized PageRank over facts, entities and chunks) is kept as an option
because we measured it (it did not beat dense retrieval on MuSiQue).
"""

from __future__ import annotations

from dataclasses import dataclass

from hygraph.errors import ConfigError
from hygraph.methods.base import Method, MethodConfig, register
from hygraph.operators.recipe import Step
from hygraph.operators.scoring import THRESHOLD_MODES

FULL_ENTITY_SCORE = 100.0  # top of the importance range (paper)
FULL_FACT_SCORE = 10.0  # top of the completeness range (paper)
SECTION_TITLES = {"entities": "Entities", "facts": "Facts", "chunks": "Sources"}


@dataclass
class HypergraphConfig(MethodConfig):
    """HyperGraphRAG's options; defaults are the paper's (spec 003) unless marked ours."""

    top_k: int = 6  # paper: k_C, chunks returned (Table 4 / §4.4)
    entity_top_k: int = 60  # paper: k_V, entities kept
    entity_threshold: float = 50.0  # paper: τ_V on cosine × importance
    fact_top_k: int = 60  # paper: k_H, facts kept
    fact_threshold: float = 5.0  # paper: τ_H on cosine × completeness
    chunk_threshold: float = 0.5  # paper: τ_C on cosine
    threshold_on: str = "product"  # paper: product | llm_score | cosine (spec 003 §9 #8)
    use_scores: str = "auto"  # ours: auto | true | false: multiply by the extractor's scores
    entity_retrieval: bool = True  # paper: on; false: ablation "w/o ER" (Fig. 4)
    fact_retrieval: bool = True  # paper: on; false: ablation "w/o HR" (Fig. 4)
    chunk_retrieval: bool = True  # paper: on; false: ablation "w/o CR" (Fig. 4)
    chunk_mode: str = "dense"  # paper: dense | provenance (the authors' code)
    query_entities: str = (
        "auto"  # ours: auto (LLM if configured, else offline) | llm | offline | question
    )
    min_arity: int = 0  # paper: hyperedges with fewer members are skipped (§9 #15; 2 = strict)
    candidates: int = 4  # paper: ANN pool = candidates × k, re-ranked by the product (§4.2)
    entity_budget: int = 4000  # code: entity tokens in the context (spec 003 §5.1)
    fact_budget: int = 4000  # code: fact tokens in the context (§5.1)
    chunk_budget: int = 4000  # code: chunk tokens in the context (§5.1)
    sections: str = "entities+facts+chunks"  # paper: context order, "+"-separated (§5.2)
    embed_style: str = "paper"  # paper: embed fact text, "name: description" | reference (§9 #2)
    passage_rank: str = "context"  # paper: context | walk (PPR) | bridge (ours, see docs)
    bridge_facts: int = 5  # ours: bridge: how many top facts lend their entities as bridges
    bridge_fanout: int = 100  # ours: bridge: skip bridge entities with more facts (hubs)
    bridge_depth: int = 50  # ours: bridge: depth of the dense chunk ranking that is fused
    bridge_hops: int = 1  # ours: bridge: how many bridge steps (2 follows bridges of bridges)
    rrf_k: int = 60  # paper: bridge: reciprocal-rank constant (Cormack et al. 2009)
    fusion_weights: str = "1+1+1"  # ours: bridge: weights of the dense, fact, bridge rankings
    walk_damping: float = 0.5  # paper: walk: P(follow an edge) (HippoRAG's value)
    walk_chunk_seed: float = 0.05  # code: walk: weight of dense chunk seeds
    #   (HippoRAG 2's passage_node_weight, config_utils.py:91)
    walk_mentions: bool = True  # ours: walk: also link chunks to the entities they mention
    walk_dense_k: int = 10  # ours: walk: dense chunks seeding it, whatever the top_k
    #   (10: the top 10 of benchmarks/results/musique-hypergraph-sweep.md)

    def __post_init__(self) -> None:
        if self.threshold_on not in THRESHOLD_MODES:
            raise ConfigError(f"threshold_on must be one of {', '.join(THRESHOLD_MODES)}")
        flag = str(self.use_scores).strip().lower()
        flag = {"1": "true", "yes": "true", "on": "true", "0": "false", "no": "false"}.get(
            flag, {"off": "false"}.get(flag, flag)
        )
        if flag not in ("auto", "true", "false"):
            raise ConfigError("use_scores must be auto, true or false")
        self.use_scores = flag
        if self.chunk_mode not in ("dense", "provenance"):
            raise ConfigError("chunk_mode must be dense or provenance")
        if self.query_entities not in ("auto", "llm", "offline", "question"):
            raise ConfigError("query_entities must be auto, llm, offline or question")
        if self.passage_rank not in ("context", "walk", "bridge"):
            raise ConfigError("passage_rank must be context, walk or bridge")
        if self.embed_style not in ("paper", "reference"):
            raise ConfigError("embed_style must be paper or reference")
        try:
            weights = [float(w) for w in self.fusion_weights.split("+")]
        except ValueError:
            weights = []
        if len(weights) != 3 or min(weights) < 0:
            raise ConfigError("fusion_weights takes three non-negative numbers, like 1+1+1")
        unknown = set(self.section_order) - set(SECTION_TITLES)
        if unknown:
            raise ConfigError(f"unknown section(s) {', '.join(sorted(unknown))}")

    @property
    def section_order(self) -> list[str]:
        return [s.strip() for s in self.sections.replace(",", "+").split("+") if s.strip()]


SCORING = {"threshold_on": "$threshold_on", "use_scores": "$use_scores", "pool": "$candidates"}

RECIPE = (
    Step("question.embed"),
    Step("question.entities", {"mode": "$query_entities", "prompt": "hypergraph"},
         when="entity_retrieval"),
    Step("node.vdb", {"k": "$entity_top_k", "threshold": "$entity_threshold",
                      "full": FULL_ENTITY_SCORE, **SCORING}, when="entity_retrieval"),
    Step("relationship.vdb", {"k": "$fact_top_k", "threshold": "$fact_threshold",
                              "full": FULL_FACT_SCORE, **SCORING}, when="fact_retrieval"),
    Step("relationship.onehop", {"budget": "$fact_budget", "min_arity": "$min_arity"}),
    Step("node.evidence"),
    Step("chunk.walk", {"damping": "$walk_damping", "chunk_seed": "$walk_chunk_seed",
                        "mentions": "$walk_mentions", "dense": "$chunk_retrieval",
                        "dense_k": "$walk_dense_k"},
         when="passage_rank=walk"),
    Step("chunk.bridge_facts", {"top": "$bridge_facts", "fanout": "$bridge_fanout",
                                "depth": "$bridge_depth", "hops": "$bridge_hops",
                                "rrf_k": "$rrf_k", "weights": "$fusion_weights"},
         when="passage_rank=bridge"),
    Step("chunk.vdb", {"k": "$top_k", "threshold": "$chunk_threshold", "if_empty": True},
         when="chunk_retrieval & chunk_mode=dense"),
    Step("chunk.from_evidence", {"sources": "facts+entities", "if_empty": True},
         when="chunk_retrieval & chunk_mode=provenance"),
    Step("chunk.evidence", {"k": "$top_k"}),
    Step("merge.context", {
        "sections": "$sections", "titles": SECTION_TITLES,
        "budgets": {"entities": "$entity_budget", "facts": "$fact_budget",
                    "chunks": "$chunk_budget"},
        "ranking": "chunks+facts+entities", "lead": "lead",
    }),
)  # fmt: skip


@register
class Hypergraph(Method):
    name = "hypergraph"
    Config = HypergraphConfig
    description = "HyperGraphRAG: n-ary facts as hyperedges, entity + fact + chunk retrieval"
    layers = ("chunks", "entity-vectors", "hypergraph")
    recipe = RECIPE
    answer_prompt = "cot"


@dataclass
class HypergraphBridgeConfig(HypergraphConfig):
    passage_rank: str = "bridge"  # ours: fuse dense chunks with facts one bridge entity away
    sections: str = "chunks+facts+entities"  # ours: passages first, so a tight budget keeps them
    rrf_k: int = 10  # ours: a steeper fusion than 60, so a passage first in one list can win


@register
class HypergraphBridge(Hypergraph):
    """HyperGraphRAG's retrieval with our passage ranking for multi-hop questions.

    Same layer and the same entity, fact and chunk retrieval as ``hypergraph``
    (the paper's configuration). Two defaults differ: passages rank by fusing
    dense chunk retrieval with the chunks of retrieved facts and of facts one
    bridge entity away (``passage_rank="bridge"``), and the context lists the
    passages first. Any option of ``hypergraph`` still applies.
    """

    name = "hypergraph-bridge"
    Config = HypergraphBridgeConfig
    description = "hypergraph + bridge-entity passage ranking (our improvement for multi-hop)"
