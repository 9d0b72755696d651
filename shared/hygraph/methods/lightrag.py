"""LightRAG's three retrievals as the 002 framework defines them (spec 002 §4.6).

All three read the rich knowledge graph (RKG): the shared entity graph (entities with
types and descriptions, relations with names, descriptions and weights), keywords on
every relation (``relation-keywords``), and vectors of entities (``entity-vectors``,
``"name: description"``) and of relations (``rich-relation-vectors``, keywords first).

* ``lightrag-local`` (LLightRAG): low-level keywords → the nearest entities (node VDB)
  → every relation at them, by (edge degree, weight) within a token budget (Onehop) →
  the chunks where both ends of those relations occur (Occurrence).
* ``lightrag-global`` (GLightRAG): high-level keywords → the nearest relations
  (relationship VDB, re-ordered by (edge degree, weight) within a budget) → their
  entities (RelNode) → the chunks they were extracted from (FromRel).
* ``lightrag-hybrid`` (HLightRAG): both, each into its own lists, then merged, the
  high-level context first as LightRAG's code does (``hybrid_first="low"`` puts the
  local one first, ``hybrid_order="interleave"`` takes the two in turn).

The context has LightRAG's three sections: Entities, Relationships, Sources (chunks),
each capped at its token budget. The passage ranking (what citations and passage recall
read) is the Sources chunks, then the chunks of the relations, then of the entities.

**Keywords.** LightRAG asks an LLM for the question's low- and high-level keywords.
Here that happens when retrieval may use the LLM (an index opened with
``llm_in_retrieval=True``, or ``keywords=llm``). Otherwise, and when the reply cannot be
read, keywords come from rules: the offline extractor's entity mentions are the
low-level keywords, the question's other content phrases the high-level ones. An empty
level searches with the whole question.

**Relation keywords** are written by the build's LLM when one is configured, else
derived by rule from the relation's labels and descriptions (``relation_keywords``).
"""

from __future__ import annotations

from dataclasses import dataclass

from hygraph.errors import ConfigError
from hygraph.methods.base import Method, MethodConfig, register
from hygraph.operators.recipe import Step

SECTION_TITLES = {"entities": "Entities", "relationships": "Relationships", "chunks": "Sources"}


@dataclass
class LightRAGConfig(MethodConfig):
    """LightRAG's options; defaults from the 002 paper and LightRAG's code, as marked."""

    top_k: int = 4  # chunks kept by Occurrence / FromRel: the paper's k for every top-k (spec §1.3)
    entity_top_k: int = 60  # entities by vector: LightRAG code QueryParam.top_k (paper k: 4)
    relation_top_k: int = 60  # relations by vector: LightRAG code QueryParam.top_k (paper k: 4)
    entity_budget: int = 4000  # entity tokens: LightRAG code max_token_for_local_context
    relation_budget: int = 4000  # relation tokens: LightRAG code max_token_for_global_context
    chunk_budget: int = 4000  # source tokens: LightRAG code max_token_for_text_unit
    keywords: str = "auto"  # auto (LLM if retrieval may use it, else rules) | llm | offline (ours)
    occurrence: str = "paper"  # paper (spec §4.3): relation ends co-occur | entity: LightRAG's
    relation_order: str = "degree"  # degree: (edge degree, weight), LightRAG code | retrieval
    hybrid_order: str = "concat"  # hybrid: one list after the other, LightRAG code | interleave
    hybrid_first: str = "high"  # hybrid: the high-level context first, LightRAG code | low
    relation_keywords: str = "auto"  # build: the LLM's if configured, else rules (ours)
    keywords_per_relation: int = 5  # build: keywords kept per relation (ours)
    sections: str = "entities+relationships+chunks"  # LightRAG code order of the context

    def __post_init__(self) -> None:
        checks = {
            "keywords": ("auto", "llm", "offline"),
            "occurrence": ("paper", "entity"),
            "relation_order": ("degree", "retrieval"),
            "hybrid_order": ("concat", "interleave"),
            "hybrid_first": ("high", "low"),
            "relation_keywords": ("auto", "llm", "offline"),
        }
        for name, allowed in checks.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name} must be one of {', '.join(allowed)}")
        parts = [s.strip() for s in self.sections.replace(",", "+").split("+") if s.strip()]
        unknown = sorted(set(parts) - set(SECTION_TITLES))
        if unknown or not parts:
            raise ConfigError(f"sections takes {'+'.join(SECTION_TITLES)}, not {self.sections!r}")


def _evidence(suffix: str = "") -> tuple[Step, ...]:
    """The three evidence lists of one retrieval (named ``entities<suffix>`` ...)."""
    return (
        Step("node.evidence", {"into": f"entities{suffix}"}),
        Step("relationship.kg_evidence", {"into": f"relationships{suffix}"}),
        Step("chunk.evidence", {"k": "$top_k", "into": f"chunks{suffix}"}),
    )


LOCAL = (
    Step("node.vdb", {"k": "$entity_top_k"}),
    Step("relationship.kg_onehop", {"order": "$relation_order", "budget": "$relation_budget"}),
    Step("chunk.occurrence", {"k": "$top_k", "mode": "$occurrence", "budget": "$chunk_budget"}),
)  # fmt: skip
GLOBAL = (
    Step("relationship.kg_vdb", {"k": "$relation_top_k", "query": "high",
                                 "order": "$relation_order", "budget": "$relation_budget"}),
    Step("node.relnode"),
    Step("chunk.from_rel", {"k": "$top_k", "budget": "$chunk_budget"}),
)  # fmt: skip
CONTEXT = Step("merge.context", {
    "sections": "$sections", "titles": SECTION_TITLES,
    "budgets": {"entities": "$entity_budget", "relationships": "$relation_budget",
                "chunks": "$chunk_budget"},
    "ranking": "chunks+relationships+entities",
})  # fmt: skip


class _LightRAG(Method):
    Config = LightRAGConfig
    layers = ("chunks", "entity-vectors", "rich-relation-vectors")
    query_llm = "optional"


@register
class LightRAGLocal(_LightRAG):
    """LLightRAG: low-level keywords → entities → their relations → co-occurrence chunks."""

    name = "lightrag-local"
    description = (
        "LightRAG local: keyword entities, their relations, co-occurring chunks "
        "(keywords by LLM if allowed at query, else rules)"
    )
    recipe = (
        Step("question.keywords", {"mode": "$keywords", "keep": "low"}),
        *LOCAL,
        *_evidence(),
        CONTEXT,
    )


@register
class LightRAGGlobal(_LightRAG):
    """GLightRAG: high-level keywords → relations → their entities and source chunks."""

    name = "lightrag-global"
    description = (
        "LightRAG global: keyword relations, their entities and source chunks "
        "(keywords by LLM if allowed at query, else rules)"
    )
    recipe = (
        Step("question.keywords", {"mode": "$keywords", "keep": "high"}),
        *GLOBAL,
        *_evidence(),
        CONTEXT,
    )


@register
class LightRAGHybrid(_LightRAG):
    """HLightRAG: the global and the local retrieval, merged (high-level first)."""

    name = "lightrag-hybrid"
    description = (
        "LightRAG hybrid: global + local retrieval merged "
        "(keywords by LLM if allowed at query, else rules)"
    )
    recipe = (
        Step("question.keywords", {"mode": "$keywords", "keep": "low"}),
        *GLOBAL,
        *_evidence("_high"),
        *LOCAL,
        *_evidence("_low"),
        *(Step("merge.union", {"lists": f"{name}_{one}+{name}_{two}", "into": name,
                               "mode": "$hybrid_order"}, when=f"hybrid_first={one}")
          for name in SECTION_TITLES for one, two in (("high", "low"), ("low", "high"))),
        CONTEXT,
    )  # fmt: skip
