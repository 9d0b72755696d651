"""``hygrag``: HyGRAG (Zhong et al., WWW '26), bi-level retrieval over a hybrid graph.

Build (the ``hygrag`` layer, spec 000 §3): chunks and entities of the shared entity
graph form one graph (mentions, relations, and chunk pairs sharing at least three
entities); every node is embedded with text-initialised Cleora (2 steps); chunks and
entities are bucketed together with 16-hyperplane LSH into communities of 5 to 50
members, each summarised (at most 300 words; extractive without an LLM), and the
summaries are bucketed again, up to 4 layers. An inserted document is summarised,
attached at the lowest layer whose nearest summary passes cosine 0.65, and only the
path above it is summarised again (:mod:`hygraph.layers.hygrag_update`).

Retrieve (spec §4, the authors' ``hk_tree_flat_search``): one pool of summaries (any
layer) and chunks gives k = 5 items (``items_per_part``, the paper's k, whatever the
query's ``top_k``) with at most one summary; the 15 nearest entities
are kept, and with the picked summaries' entity members (at most 25 by cosine) seed
the candidate triples, of which the 5 nearest to the question are kept. The context
has the paper's four parts: community summaries (highest layer first), the 5 best
entities, the 5 key relationships and the documents. Answers use HyGRAG's prompt
(relations as the primary evidence, "Insufficient information" when it is missing).

**Passage ranking** (what citations and passage recall read; the paper has none, as
its metrics are answer-level): the order in which source chunks first appear in the
provenance of the ranked evidence, read section by section in ``passage_rank`` order:
documents first (the dense hits the context shows), then the chunks the key
relationships were extracted from, then the entities' chunks, then the summary's
subtree. Within an item, chunks go by cosine to the question. Documents come first
because they are the only evidence that *is* a passage; a summary covers up to 50
leaves per layer, so it comes last.
"""

from __future__ import annotations

from dataclasses import dataclass

from hygraph.errors import ConfigError
from hygraph.layers.hygrag_config import HyGRAGLayerConfig
from hygraph.methods.base import Method, MethodConfig, register
from hygraph.operators.hygrag import EXPANSIONS, POOLS
from hygraph.operators.recipe import Step

SECTION_TITLES = {
    "communities": "Community summaries",
    "entities": "Entities",
    "relations": "Key relationships",
    "chunks": "Documents",
}


@dataclass
class HyGRAGConfig(MethodConfig, HyGRAGLayerConfig):
    """HyGRAG's retrieval options plus its layer's build options (spec 000)."""

    top_k: int = 5  # ours: not read: each context part holds items_per_part items
    items_per_part: int = 5  # paper: k, entities = communities + chunks = relations (§4.1.3)
    pool: str = "joint"  # paper: one top-k of summaries + chunks (Alg. 2) | separate (eqs. 14-15)
    community_cap: int = 0  # code: most summaries in the pool; 0: max(1, k // 5) (spec A10)
    entity_fetch_factor: int = 5  # code: entities searched, 5k (spec 000 A13)
    entity_pool_factor: int = 3  # code: direct entities kept, 3k (spec 000 A13)
    relation_entity_factor: int = 5  # code: entities seeding triples, at most 5k (spec A13)
    expansion: str = "children"  # code: summary members added: children | descendants (A11)
    use_communities: bool = True  # paper: ablation "w/o community" when false (Table 2)
    use_entities: bool = True  # paper: ablation "w/o entity & relation" when false (Table 2)
    use_chunks: bool = True  # paper: ablation "w/o chunk" when false (Table 2)
    summary_chars: int = 3000  # code: characters of a summary in the context (spec 000 §4.3)
    description_chars: int = 150  # code: characters of an entity description (spec §4.3)
    relation_chars: int = 100  # code: characters of a relation's context line (spec §4.3)
    sections: str = "communities+entities+relations+chunks"  # paper: context order (eq. 23)
    passage_rank: str = "chunks+relations+entities+communities"  # ours: see the module doc

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.pool not in POOLS:
            raise ConfigError(f"pool must be one of {', '.join(POOLS)}")
        if self.expansion not in EXPANSIONS:
            raise ConfigError(f"expansion must be one of {', '.join(EXPANSIONS)}")
        for name in ("sections", "passage_rank"):
            parts = [p.strip() for p in getattr(self, name).replace(",", "+").split("+")]
            unknown = [p for p in parts if p and p not in SECTION_TITLES]
            if unknown or not any(parts):
                raise ConfigError(
                    f"{name} takes sections of {', '.join(SECTION_TITLES)} joined by '+'"
                )
        if self.items_per_part < 1:
            raise ConfigError("items_per_part must be at least 1")


RECIPE = (
    Step("question.embed"),
    Step("hygrag.context", {"k": "$items_per_part", "community_cap": "$community_cap",
                            "pool": "$pool", "entity_fetch": "$entity_fetch_factor",
                            "entity_pool": "$entity_pool_factor",
                            "communities": "$use_communities", "chunks": "$use_chunks"}),
    Step("hygrag.relations", {"k": "$items_per_part", "entity_cap": "$relation_entity_factor",
                              "expansion": "$expansion"}, when="use_entities"),
    Step("hygrag.evidence", {"k": "$items_per_part", "summary_chars": "$summary_chars",
                             "description_chars": "$description_chars",
                             "relation_chars": "$relation_chars", "entities": "$use_entities"}),
    Step("merge.context", {"sections": "$sections", "titles": SECTION_TITLES,
                           "ranking": "$passage_rank"}),
)  # fmt: skip


@register
class HyGRAG(Method):
    name = "hygrag"
    Config = HyGRAGConfig
    description = "HyGRAG: LSH summary layers over chunks + entities, bi-level retrieval"
    layers = ("chunks", "entity-vectors", "relation-vectors", "hygrag")
    recipe = RECIPE
    answer_prompt = "hygrag"
