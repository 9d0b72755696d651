"""LightRAG's three retrievals as the 002 framework defines them (spec 002 §4.6).

All three read the rich knowledge graph (RKG): the shared entity graph (entities with
types and descriptions, relations with names, descriptions and weights), keywords on
every relation (``relation-keywords``), and vectors of entities (``entity-vectors``,
``"name: description"``) and of relations (``rich-relation-vectors``, keywords first).

* ``lightrag-local`` (LLightRAG): low-level keywords → the nearest entities (node VDB)
  → every relation at them, by (edge degree, weight) within a token budget (Onehop) →
  the entities' own chunks in entity order, each entity's chunks by how many of its
  neighbours also occur in them (Occurrence as the reference code does it).
* ``lightrag-global`` (GLightRAG): high-level keywords → the nearest relations
  (relationship VDB, re-ordered by (edge degree, weight) within a budget) → their
  entities (RelNode) → the chunks they were extracted from, in relation order (FromRel).
* ``lightrag-hybrid`` (HLightRAG): both, each into its own lists, merged local first
  (one list after the other), then the passages cut to the query's top_k.

The context has LightRAG's three sections: Entities, Relationships, Sources (chunks),
each capped at its token budget. The passage ranking (what citations and passage recall
read) is the Sources chunks, then the chunks of the relations, then of the entities.

**References and options.** Defaults follow the unified framework's code
(``framework:``, JayLZhou/GraphRAG 4e87938: Core/Query/BasicQuery.py, Core/Retriever/,
Option/Method/LightRAG.yaml, Config/RetrieverConfig.py), the spec's reference for these
rows; ``code:`` is HKUDS/LightRAG, "0.0.9" the original release the framework copies,
"1.5.7" the current one (PyPI lightrag-hku). Where they differ, the other is an option:

* ``occurrence``: ``entity`` (framework ChunkRetriever.py:18-77, LightRAG 0.0.9
  operate.py:545-621) | ``similarity``: the entities' chunks by cosine to the question,
  ``related_chunks`` × entities / 2 kept (LightRAG 1.5.7 operate.py:6136-6292, its
  default ``kg_chunk_pick_method="VECTOR"``, constants.py:64) | ``paper``: chunks by the
  number of retrieved relations with both ends in them (spec §4.3 C3, the paper's
  wording, which no reference code implements);
* ``relation_vdb_order``: ``degree`` (framework BaseRetriever.py:39-41, LightRAG 0.0.9
  operate.py:759-761) | ``retrieval``: vector order (LightRAG 1.5.7 operate.py:6339);
* ``relation_chunks``: ``order`` (framework ChunkRetriever.py:79-109) | ``similarity``
  (LightRAG 1.5.7 operate.py:6387-6588);
* ``hybrid_first`` / ``hybrid_order``: ``low`` / ``concat``, the local list then the
  global one (framework BasicQuery.py:28-33 passes the local context first to
  combine_contexts, Utils.py:405 keeps that order) | ``interleave``: one of each in
  turn, local first (LightRAG 1.5.7 operate.py:5301-5355 round-robin) | ``high``
  (original LightRAG passed the high level first but merged through a set, no order:
  0.0.9 utils.py:277).

Depths are config fields (``entity_top_k``, ``relation_top_k``, ``chunk_top_k``); the
query's ``top_k`` is only how many passages come back (the final ``chunk.evidence``).

**Keywords.** LightRAG asks an LLM for the question's low- and high-level keywords.
Here that happens when retrieval may use the LLM (an index opened with
``llm_in_retrieval=True``, or ``keywords=llm``). Otherwise, and when the reply cannot be
read, keywords come from rules: the offline extractor's entity mentions are the
low-level keywords; the high-level ones are the question's other content phrases and,
with ``keyword_names`` (default), those mentions too, in question order (LightRAG's
LLM often names entities among its high-level keywords, and a relation's vector starts
with its keywords and endpoint names, so a high-level text without names rarely meets
the question's relations). An empty level searches with the whole question.

**Relation keywords** are written by the build's LLM when one is configured, else
derived by rule from the relation's labels and descriptions (``relation_keywords``).
"""

from __future__ import annotations

from dataclasses import dataclass

from hygraph.errors import ConfigError
from hygraph.methods.base import Method, MethodConfig, register
from hygraph.operators.chunk import CHUNK_PICKS, OCCURRENCE_MODES
from hygraph.operators.question import KEYWORD_MODES
from hygraph.operators.recipe import Step
from hygraph.operators.relationship import RELATION_ORDERS

SECTION_TITLES = {"entities": "Entities", "relationships": "Relationships", "chunks": "Sources"}


@dataclass
class LightRAGConfig(MethodConfig):
    """LightRAG's options; each default's source is tagged (see the module docstring)."""

    top_k: int = 4  # paper: passages returned, the final cut (spec §1.3: k = 4 for every top-k)
    entity_top_k: int = 5  # framework: entities by vector (LightRAG.yaml:48 retriever.top_k)
    relation_top_k: int = 5  # framework: relations by vector (LightRAG.yaml:48 retriever.top_k)
    chunk_top_k: int = 0  # framework: chunks kept, 0: chunk_budget only (ChunkRetriever.py:70-74)
    related_chunks: int = 5  # code: similarity keeps this × sources / 2 (LightRAG constants.py:63)
    entity_budget: int = 4800  # framework: entity tokens (RetrieverConfig.py:16, local context)
    relation_budget: int = 4800  # framework: one-hop relation tokens (RetrieverConfig.py:16)
    relation_vdb_budget: int = 4000  # framework: relation-VDB tokens (RetrieverConfig.py:17)
    chunk_budget: int = 4000  # framework: source tokens per retrieval (RetrieverConfig.py:18)
    keywords: str = "auto"  # ours: LLM if retrieval may, else rules (question.keywords) | llm
    keyword_names: bool = True  # ours: rules' high-level keywords hold names (rule_keywords)
    occurrence: str = "entity"  # framework: entities' chunks (ChunkRetriever.py:67) | similarity
    relation_order: str = "degree"  # framework: (degree, weight) (RelationshipRetriever.py:70)
    relation_vdb_order: str = "degree"  # framework: (degree, weight) (BaseRetriever.py:39-41)
    relation_chunks: str = "order"  # framework: relation order (ChunkRetriever.py:101) | similarity
    hybrid_first: str = "low"  # framework: local context first (BasicQuery.py:31-33) | high
    hybrid_order: str = "concat"  # framework: one list, then the other (Utils.py:405) | interleave
    relation_keywords: str = "auto"  # ours: build: the LLM's, else rules (layers/rich_kg.py)
    keywords_per_relation: int = 5  # ours: build: keywords per relation (layers/rich_kg.py)
    sections: str = "entities+relationships+chunks"  # framework: context order (BasicQuery.py:34)

    def __post_init__(self) -> None:
        checks = {
            "keywords": KEYWORD_MODES,
            "occurrence": OCCURRENCE_MODES,
            "relation_order": RELATION_ORDERS,
            "relation_vdb_order": RELATION_ORDERS,
            "relation_chunks": CHUNK_PICKS,
            "hybrid_order": ("concat", "interleave"),
            "hybrid_first": ("low", "high"),
            "relation_keywords": KEYWORD_MODES,
        }
        for name, allowed in checks.items():
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name} must be one of {', '.join(allowed)}")
        parts = [s.strip() for s in self.sections.replace(",", "+").split("+") if s.strip()]
        unknown = sorted(set(parts) - set(SECTION_TITLES))
        if unknown or not parts:
            raise ConfigError(f"sections takes {'+'.join(SECTION_TITLES)}, not {self.sections!r}")


def _evidence(suffix: str = "", k: str | int = "$top_k") -> tuple[Step, ...]:
    """The three evidence lists of one retrieval (named ``entities<suffix>`` ...).

    ``k`` is how many ranked chunks become evidence: the query's top_k for a retrieval
    that answers alone, 0 (all kept) for a hybrid half, which is cut after the merge.
    """
    return (
        Step("node.evidence", {"into": f"entities{suffix}"}),
        Step("relationship.kg_evidence", {"into": f"relationships{suffix}"}),
        Step("chunk.evidence", {"k": k, "into": f"chunks{suffix}"}),
    )


def _keywords(keep: str) -> Step:
    return Step("question.keywords", {"mode": "$keywords", "keep": keep,
                                      "names": "$keyword_names"})  # fmt: skip


LOCAL = (
    Step("node.vdb", {"k": "$entity_top_k"}),
    Step("relationship.kg_onehop", {"order": "$relation_order", "budget": "$relation_budget"}),
    Step("chunk.occurrence", {"k": "$chunk_top_k", "mode": "$occurrence",
                              "budget": "$chunk_budget", "related": "$related_chunks"}),
)  # fmt: skip
GLOBAL = (
    Step("relationship.kg_vdb", {"k": "$relation_top_k", "query": "high",
                                 "order": "$relation_vdb_order",
                                 "budget": "$relation_vdb_budget"}),
    Step("node.relnode"),
    Step("chunk.from_rel", {"k": "$chunk_top_k", "budget": "$chunk_budget",
                            "pick": "$relation_chunks", "related": "$related_chunks"}),
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
    """LLightRAG: low-level keywords → entities → their relations → the entities' chunks."""

    name = "lightrag-local"
    description = (
        "LightRAG local: keyword entities, their relations, the entities' chunks "
        "(keywords by LLM if allowed at query, else rules)"
    )
    recipe = (
        _keywords("low"),
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
        _keywords("high"),
        *GLOBAL,
        *_evidence(),
        CONTEXT,
    )


@register
class LightRAGHybrid(_LightRAG):
    """HLightRAG: the local and the global retrieval, merged (local first), then cut."""

    name = "lightrag-hybrid"
    description = (
        "LightRAG hybrid: local + global retrieval merged "
        "(keywords by LLM if allowed at query, else rules)"
    )
    recipe = (
        _keywords("low"),
        *LOCAL,
        *_evidence("_low", 0),
        *GLOBAL,
        *_evidence("_high", 0),
        *(Step("merge.union", {"lists": f"{name}_{one}+{name}_{two}", "into": name,
                               "mode": "$hybrid_order"}, when=f"hybrid_first={one}")
          for name in SECTION_TITLES for one, two in (("low", "high"), ("high", "low"))),
        # The merged passages, cut to the query's top_k: asking for more passages only
        # lengthens the list (the first ones stay where they are).
        Step("chunk.from_evidence", {"sources": "chunks", "k": "$top_k"}),
        Step("chunk.evidence", {"k": "$top_k", "into": "chunks"}),
        CONTEXT,
    )  # fmt: skip
