"""``hirag``: HiRAG (hierarchical knowledge, HiIndex + HiRetrieval; spec 001).

Build (the ``hirag`` layer, :mod:`hygraph.layers.hirag`): over the shared entity graph,
layers of summary entities made by clustering each layer's entities with a Gaussian
mixture (BIC, soft assignment) and summarising every cluster (LLM, or extractive
offline), until the cluster sparsity changes by at most 5%; then hierarchical Leiden
over all layers with a report per community. Base entities keep their shared vectors
(``entity-vectors``); summary entities get their own collection.

Retrieve (no LLM call, spec §4):

1. local: the ``top_entities`` (n = 20) entities of all layers nearest the question,
   cosine above 0.2, out of a candidate pool of 10·n;
2. global: the reports of the communities (levels ≤ 2) holding them, ranked by how
   many they hold and by rating, within 12,500 tokens;
3. bridge: the ``key_entities`` (m = 10) best candidates of each of those communities,
   chained by shortest paths in the multi-layer graph; every triple among the path's
   nodes, ranked by degree and weight, within 12,500 tokens;
4. source chunks of the local entities (authors' code; ``include_source_chunks``);
5. the context in the authors' order: Backgrounds (reports), Reasoning Path (bridge
   triples), Detail Entity Information (entities), Source Documents (chunks).

**Passage ranking** (what citations and passage recall read; ours, the paper ranks no
passages): the order in which chunks first appear in the provenance of the ranked
evidence, reading the source chunks first (they are the local entities' chunks, in
entity order, as the authors' code lists them), then the bridge triples', the local
entities' and last the community reports' (a report spans many chunks, in no order).
``passage_rank`` changes that order.

Ablations are options: ``max_layers=0`` builds no summary layer (the paper's w/o
HiIndex: HiRetrieval on the flat graph), ``bridge=none`` drops the bridge level (w/o
Bridge), ``bridge=onehop`` is the authors' w/o-Bridge variant (1-hop relations of the
local entities). The answer prompt is the plain one (one LLM call per query).
"""

from __future__ import annotations

from dataclasses import dataclass

from hygraph.errors import ConfigError
from hygraph.layers.hirag import HiragBuildOptions
from hygraph.methods.base import Method, MethodConfig, register
from hygraph.operators.hirag import BRIDGE_MODES, KEY_SCOPES
from hygraph.operators.recipe import Step

SECTION_TITLES = {
    "reports": "Backgrounds",
    "bridge": "Reasoning Path",
    "entities": "Detail Entity Information",
    "chunks": "Source Documents",
}


@dataclass
class HiragMethodConfig(MethodConfig, HiragBuildOptions):
    """HiRAG's options; defaults are the paper's or the authors' code's (spec 001 §3.10, §4.6)."""

    top_k: int = 10  # ours: source chunks listed (the authors' code caps them by tokens only)
    top_entities: int = 20  # paper: n, the local entities
    key_entities: int = 10  # code: m, key entities per community (spec 001 §9 #15)
    candidate_pool: int = 200  # code: 10 × n candidates for the key entities
    similarity_threshold: float = 0.2  # code: entity hits at or below this cosine drop
    max_community_level: int = 2  # code: Leiden levels used at query time
    key_entity_scope: str = "candidate_pool"  # code: candidate_pool | full_community (§9 #15)
    bridge: str = "paths"  # paper: chained shortest paths | onehop (authors' w/o Bridge) | none
    include_source_chunks: bool = True  # code: list source chunks (spec 001 §9 #18); false:
    #   the paper's 3 levels
    report_budget: int = 12500  # code: tokens of community reports
    bridge_budget: int = 12500  # code: tokens of bridge triples
    chunk_budget: int = 20000  # code: tokens of source chunks
    sections: str = "reports+bridge+entities+chunks"  # code: context order (spec 001 §9 #29)
    passage_rank: str = "chunks+bridge+entities+reports"  # ours: see the module docstring

    def __post_init__(self) -> None:
        if self.bridge not in BRIDGE_MODES:
            raise ConfigError(f"bridge must be one of {', '.join(BRIDGE_MODES)}")
        if self.key_entity_scope not in KEY_SCOPES:
            raise ConfigError(f"key_entity_scope must be one of {', '.join(KEY_SCOPES)}")
        if self.assignment not in ("soft", "hard"):
            raise ConfigError("assignment must be soft or hard")
        if self.reduction not in ("auto", "umap", "pca", "none"):
            raise ConfigError("reduction must be auto, umap, pca or none")
        if self.cluster_text not in ("profile", "index"):
            raise ConfigError("cluster_text must be profile or index")
        for field_name in ("sections", "passage_rank"):
            parts = [p.strip() for p in getattr(self, field_name).replace(",", "+").split("+")]
            unknown = sorted({p for p in parts if p} - set(SECTION_TITLES))
            if unknown:
                raise ConfigError(f"{field_name}: unknown section(s) {', '.join(unknown)}")


RECIPE = (
    Step("question.embed"),
    Step("hirag.entities", {"k": "$top_entities", "pool": "$candidate_pool",
                            "threshold": "$similarity_threshold"}),
    Step("hirag.communities", {"max_level": "$max_community_level", "budget": "$report_budget"}),
    Step("hirag.bridge", {"m": "$key_entities", "budget": "$bridge_budget",
                          "scope": "$key_entity_scope", "mode": "$bridge"}),
    Step("hirag.local"),
    Step("hirag.sources", {"k": "$top_k", "budget": "$chunk_budget",
                           "enabled": "$include_source_chunks"}),
    Step("merge.context", {
        "sections": "$sections", "titles": SECTION_TITLES,
        "budgets": {"reports": "$report_budget", "bridge": "$bridge_budget",
                    "chunks": "$chunk_budget"},
        "ranking": "$passage_rank",
    }),
)  # fmt: skip


@register
class Hirag(Method):
    name = "hirag"
    Config = HiragMethodConfig
    description = "HiRAG: GMM summary-entity layers + Leiden reports; local, global, bridge"
    layers = ("chunks", "entity-vectors", "hirag")
    recipe = RECIPE
    answer_prompt = "plain"
