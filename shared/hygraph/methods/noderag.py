"""``noderag``: NodeRAG (Xu et al., 2025), a heterograph of seven node types.

Build (spec 004 §3), over the chunks new since the last build (the *delta*; the
first build's delta is the whole corpus, so one code path serves both):

1. **decomposition**: each chunk's extraction becomes semantic units (S), the shared
   entities (N) and relationship nodes (R) linked to their two ends
   (:mod:`hygraph.graph.heterograph`); S are embedded;
2. **important entities**: k-core (``k = floor(ln|V| · sqrt(mean degree))``) and
   sampled betweenness (``b > mean(b) · floor(log10|V|)``) on the delta graph G1, kept
   if mentioned at least ``min_entity_mentions`` times; each gets an attribute node (A)
   written from its neighbouring S and R texts, linked to it and embedded. Entities
   that already have one are skipped (spec §5);
3. **communities**: single-level Leiden (graspologic's native Leiden) on G2 = G1 + A;
   per community with S or A members, high-level elements (H, embedded) with their
   titles (O); each H is linked to the S/A of its community that share its K-means
   cluster (``K = ceil(sqrt(|S|+|A|+|H|))``), or to the whole community when the
   average cluster holds 39 nodes or fewer (the authors' small-graph fallback);
4. **enrichment**: the chunks (T) link to their units; semantic edges join every
   embedded node (T, S, A, H) to its ``semantic_k`` nearest neighbours by cosine.

Without an LLM, A and H texts are extractive (:mod:`hygraph.extract.extractive`):
an A is the entity's name followed by the sentences of its units and relationship
statements that share the most vocabulary with the rest of them; an H is the same
selection over its community's S and A texts, and its title O names the
community's most connected entities. Neither is ever empty.

Search (spec §4): dual entry points (the ``entry_points`` = 10 nearest T/S/A/H nodes,
the authors' ``HNSW_results``, whatever the query's ``top_k``; whole-word phrase
match of the question's entities on N and O names), a shallow personalized
PageRank (α = 0.5 restart, 2 iterations) over the whole heterograph as a sparse
matrix, per-type cross-node quotas (N → their A, O → their H, R, and T/S/A/H
together), N and O filtered out, and the context grouped by type.

Semantic edges: the paper merges an HNSW index's base layer into the graph. We use
an exact cosine kNN graph (deterministic; 1.0 s for 9,935 nodes on MuSiQue); ``knn="qdrant"``
takes the neighbours from the vector index's own HNSW search instead, and an insert
always does (new nodes query the index, as the authors' code adds to its HNSW).
"""

from __future__ import annotations

from dataclasses import dataclass

from hygraph.errors import ConfigError
from hygraph.layers.heterograph import HeterographConfig
from hygraph.methods.base import Method, MethodConfig, register
from hygraph.operators.node import node_types
from hygraph.operators.recipe import Step


@dataclass
class NodeRAGConfig(MethodConfig, HeterographConfig):
    """NodeRAG's search options (spec 004 §4.6) plus its layer's build options."""

    # -- search (spec §4.6)
    top_k: int = 5  # ours: not read: the context is the typed retrieval (passage_items cuts)
    entry_points: int = 10  # code: vector entry points (NodeRAG/config/Node_config.yaml:54
    #   HNSW_results 10, read at NodeRAG/search/search.py:85)
    entry_types: str = "T+S+A+H"  # code: vector entry types, T included (spec 004 §8 #5)
    exact_entries: bool = True  # paper: exact entry points; false: ablation "w/o dual search"
    exact_match: str = "contains"  # code: whole-word phrase containment | equal (§8 #8)
    query_entities: str = "auto"  # ours: auto (LLM if configured, else offline) | llm | offline
    semantic_edges: bool = True  # paper: HNSW semantic edges; false: ablation "w/o HNSW"
    ppr: bool = True  # paper: the walk; false: ablation "w/o cross node" (plain vector top-k)
    ppr_alpha: float = 0.5  # paper: teleport probability (spec 004 §4.6)
    ppr_iterations: int = 2  # paper: shallow, t = 2 (spec 004 §4.6)
    ppr_mode: str = "restart"  # paper: restart | lazy (the authors' code, spec 004 §8 #1)
    cap_edge_weights: bool = False  # paper: off | the code's unbalance_adjust (spec 004 §8 #2)
    vector_entry_weight: float = 1.0  # paper: personalization weight, uniform (spec 004 §8 #3)
    exact_entry_weight: float = 1.0  # paper: personalization weight, uniform (spec 004 §8 #3)
    entity_quota: int = 10  # code: N cross nodes, each expanded to its A (Node_config.yaml:51)
    relationship_quota: int = 30  # code: R cross nodes (Node_config.yaml:52 Rnode)
    overview_quota: int = 10  # code: O cross nodes, each expanded to its H (Node_config.yaml:53)
    content_quota: int = 10  # code: T/S/A/H cross nodes together (Node_config.yaml:50)
    expand_cross: bool = True  # code: N -> A and O -> H (spec 004 §8 #7)
    type_order: str = "H+A+S+R+T"  # paper: context groups, in this order (spec 004 §8 #23)
    passage_rank: str = "context"  # paper: context (retrieval order) | ppr | fused (ours, docs)
    rrf_k: int = 10  # ours: fused: reciprocal-rank constant
    fused_depth: int = 50  # ours: fused: depth of the dense and walk rankings that are fused
    passage_items: int = 0  # ours: > 0: the passages shown are the best of the passage ranking
    bridge_units: int = 0  # ours: fused: > 0 adds the chunks of units one bridge entity away
    bridge_pool: int = 30  # ours: fused: nearest embedded nodes searched for the top units
    bridge_weight: float = 0.5  # ours: fused: weight of the bridge list in the fusion
    bridge_fanout: int = 100  # ours: fused: skip bridge entities mentioned by more units

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.ppr_mode not in ("restart", "lazy"):
            raise ConfigError("ppr_mode must be restart or lazy")
        if self.exact_match not in ("contains", "equal"):
            raise ConfigError("exact_match must be contains or equal")
        if self.query_entities not in ("auto", "llm", "offline"):
            raise ConfigError("query_entities must be auto, llm or offline")
        if self.passage_rank not in ("context", "ppr", "fused"):
            raise ConfigError("passage_rank must be context, ppr or fused")
        if not 0.0 <= self.ppr_alpha <= 1.0:
            raise ConfigError("ppr_alpha must be between 0 and 1")
        node_types(self.entry_types, "TSAH")
        node_types(self.type_order, "HASRT")

    @property
    def exact_equal(self) -> bool:
        """Exact entries match whole names (``exact_match=equal``), not containment."""
        return self.exact_match == "equal"

    @property
    def walk_mass(self) -> bool:
        """Whether the walk's passage mass is needed (any passage ranking but ``context``)."""
        return self.passage_rank != "context"


QUOTAS = {"N": "$entity_quota", "R": "$relationship_quota", "O": "$overview_quota",
          "C": "$content_quota"}  # fmt: skip
WALK = "ppr"
EXACT = "ppr & exact_entries"
RECIPE = (
    Step("question.embed"),
    Step("node.entries", {"k": "$entry_points", "types": "$entry_types"}),
    Step("question.entities", {"mode": "$query_entities", "prompt": "noderag",
                               "fallback": "none"}, when=EXACT),
    Step("node.exact", {"equal": "$exact_equal"}, when=EXACT),
    Step("subgraph.shallow_ppr", {
        "alpha": "$ppr_alpha", "iterations": "$ppr_iterations", "mode": "$ppr_mode",
        "cap_edge_weights": "$cap_edge_weights", "semantic_edges": "$semantic_edges",
        "vector_weight": "$vector_entry_weight", "exact_weight": "$exact_entry_weight",
        "quotas": QUOTAS, "expand": "$expand_cross", "mass": "$walk_mass",
    }, when=WALK),
    Step("merge.typed_context", {"order": "$type_order"}),
    Step("merge.lead", {"ranking": "walk"}, when="passage_rank=ppr"),
    Step("chunk.vdb", {"k": "$fused_depth", "into": "dense"}, when="passage_rank=fused"),
    Step("chunk.bridge_units", {"units": "$bridge_units", "pool": "$bridge_pool",
                                "fanout": "$bridge_fanout"},
         when="passage_rank=fused & bridge_units"),
    Step("merge.rrf", {"rankings": ["dense", "walk", "bridge"], "k": "$rrf_k",
                       "weights": [1.0, 1.0, "$bridge_weight"], "depths": [0, "$fused_depth", 0],
                       "require": "walk", "into": "ranking"}, when="passage_rank=fused"),
    Step("merge.passage_section", {"k": "$passage_items", "order": "$type_order"},
         when="passage_items"),
)  # fmt: skip


@register
class NodeRAG(Method):
    name = "noderag"
    Config = NodeRAGConfig
    description = "NodeRAG: heterograph of units, entities, attributes and insights; shallow PPR"
    layers = ("chunks", "heterograph")
    recipe = RECIPE
    answer_prompt = "noderag"


@dataclass
class NodeRAGFusedConfig(NodeRAGConfig):
    passage_rank: str = "fused"  # ours: dense ranking fused with the walk's passage mass
    semantic_edges: bool = False  # ours: the walk follows shared entities, not similarity
    ppr_iterations: int = 3  # ours: one more step reaches a second passage's units
    type_order: str = "T+S+H+A+R"  # ours: passages first, so a tight budget keeps them
    passage_items: int = 5  # ours: the passages shown are the best of the fused ranking
    bridge_units: int = 3  # ours: also fuse the chunks of units one bridge entity away


@register
class NodeRAGFused(NodeRAG):
    """NodeRAG's graph and search with our passage ranking for multi-hop questions.

    Same layer as ``noderag`` (built once for both) and the same entry points, walk and
    quotas. Passages rank by fusing dense retrieval, the PageRank mass each chunk and
    its units receive, and (at half weight) the chunks of units one bridge entity away
    from the three best units; the walk ignores the kNN edges and takes three steps,
    and the context opens with the best five passages. Any option of ``noderag``
    applies.
    """

    name = "noderag-fused"
    Config = NodeRAGFusedConfig
    description = "noderag + fused passage ranking (our improvement for multi-hop)"
