"""GraphRAG's local and global search and the 002 paper's VGraphRAG and CheapRAG.

All four read the textual knowledge graph (the shared entity graph: entities with types
and descriptions, relations with descriptions and weights) and its community index
(the ``communities`` layer: hierarchical Leiden with a report per community, each
report embedded). Spec 002 §4.6 gives the pipelines:

* ``graphrag-local`` (LGraphRAG): entities nearest the question (node VDB) → every
  relation at them, by (edge degree, weight) within a budget (relationship Onehop) →
  the entities' own chunks in entity order, each entity's chunks by how many of its
  neighbours also occur in them (chunk Occurrence as the framework's code does it,
  JayLZhou/GraphRAG 4e87938 Core/Query/BasicQuery.py:59-74 with
  Core/Retriever/ChunkRetriever.py:18-77, and as Microsoft GraphRAG's local search
  does, graphrag/query/structured_search/local_search/mixed_context.py
  ``_build_text_unit_context``, sorted by (entity order, -relationships) at 0358330;
  ``occurrence=similarity`` ranks the same chunks by cosine to the question, current
  LightRAG's pick; ``occurrence=paper`` by the number of relations with both ends in a
  chunk, the paper's wording of spec §4.3 C3, which no reference code implements) →
  the communities holding the entities, by (entities held, rating), levels ≤ 2, within
  3,200 report tokens (community Entity). Direct answer. The framework searches
  ``retriever.top_k`` = 5 entities (Option/Method/LGraphRAG.yaml:58; Core/GraphRAG.py:
  180-182 hands the retriever section to the retrievers, which read it at
  Core/Retriever/EntitiyRetriever.py:38-40).
* ``graphrag-global`` (GGraphRAG): every community at levels ≤ 2, by occurrence,
  at most 512, rating ≥ 0 (community Layer) → map-reduce answer over their reports.
* ``vgraphrag`` (VGraphRAG, spec §5.2): node VDB → relationship Onehop as LGraphRAG,
  then the reports nearest the question (community VDB) and the chunks nearest it
  (chunk VDB); all four kinds in one prompt, direct answer.
* ``cheaprag`` (CheapRAG, spec §5.3): the nearest reports (community VDB) and the
  nearest chunks (chunk VDB) → map-reduce with each report and each chunk alone.

The context follows GraphRAG's local-search order: Reports, Entities, Relationships,
Sources (chunks), each section within its budget.

**Passage ranking** (what citations and passage recall read; ours, the papers rank no
passages): the chunks in the order their provenance first appears, reading the
Sources first (Occurrence's or the chunk VDB's order), then the relationships' source
chunks, then the entities', last the communities' (a report spans many chunks, in no
order of relevance). ``graphrag-global`` has only communities: its ranking is their
provenance, in Layer's order, which does not depend on the question (GraphRAG leaves
the choice to the map step), so its passage recall is near chance by design;
``order=vector`` ranks the same communities by report similarity instead (ours).

**LLM at query.** Retrieval never calls an LLM: every method here gives its context,
passages and communities offline. ``graphrag-local`` and ``vgraphrag`` answer with one
call; ``graphrag-global`` and ``cheaprag`` answer by map-reduce
(:mod:`hygraph.generation.map_reduce`: one call per group of pieces, then one to
combine), so an answer needs an LLM and ``query(answer=True)`` without one fails with
one line. Reports are written by the build's LLM when one is configured, else
extractively (:mod:`hygraph.layers.community_reports`).
"""

from __future__ import annotations

from dataclasses import dataclass

from hygraph.errors import ConfigError
from hygraph.generation.map_reduce import MapReduceOptions
from hygraph.methods.base import Method, MethodConfig, register
from hygraph.operators.chunk import OCCURRENCE_MODES
from hygraph.operators.recipe import Step

SECTION_TITLES = {
    "communities": "Reports",
    "entities": "Entities",
    "relationships": "Relationships",
    "chunks": "Sources",
}
LAYER_ORDERS = ("occurrence", "vector")
MAP_REDUCE_LLM = "map-reduce answer (calls per group + 1); retrieval needs none"


def _parts(value: str) -> list[str]:
    return [p.strip() for p in value.replace(",", "+").split("+") if p.strip()]


def _check_sections(config: object, names: tuple[str, ...]) -> None:
    for name in names:
        value = getattr(config, name)
        unknown = sorted(set(_parts(value)) - set(SECTION_TITLES))
        if unknown or not _parts(value):
            raise ConfigError(f"{name} takes {'+'.join(SECTION_TITLES)}, not {value!r}")


@dataclass
class LocalConfig(MethodConfig):
    """LGraphRAG's options (spec 002 §4.5-4.6; the framework's local search)."""

    top_k: int = 4  # paper: passages returned, the final cut (spec §1.3: k = 4 for every top-k)
    entity_top_k: int = 5  # framework: entities by vector (LGraphRAG.yaml:58 retriever.top_k)
    chunk_top_k: int = 0  # framework: chunks kept, 0: chunk_budget only (ChunkRetriever.py:70-74)
    related_chunks: int = 5  # code: similarity keeps this × entities / 2 (LightRAG constants.py:63)
    relation_budget: int = 4800  # framework: relation tokens (LGraphRAG.yaml:59 retriever)
    chunk_budget: int = 4000  # framework: source tokens (RetrieverConfig.py:18, LGraphRAG.yaml:72)
    report_budget: int = 3200  # framework: report tokens (LGraphRAG.yaml:79)
    level: int = 2  # framework: Leiden levels 0..level searched (LGraphRAG.yaml:66)
    occurrence: str = "entity"  # framework: entities' chunks (ChunkRetriever.py:67) | similarity
    single_community: bool = False  # framework: keep one report (LGraphRAG.yaml:80)
    sections: str = "communities+entities+relationships+chunks"  # framework: ctx (BasicQuery.py:49)
    passage_rank: str = "chunks+relationships+entities+communities"  # ours: rank (module docstring)

    def __post_init__(self) -> None:
        if self.occurrence not in OCCURRENCE_MODES:
            raise ConfigError(f"occurrence must be one of {', '.join(OCCURRENCE_MODES)}")
        _check_sections(self, ("sections", "passage_rank"))


@dataclass
class VGraphConfig(MethodConfig):
    """VGraphRAG's options (spec 002 §5.2): LGraphRAG's, with reports and chunks by vector."""

    top_k: int = 4  # paper: chunks by vector, passages returned (spec §1.3 k = 4, §5.2 step 3)
    entity_top_k: int = 5  # framework: as LGraphRAG (spec §5.2 step 1; LGraphRAG.yaml:58)
    community_top_k: int = 4  # paper: reports by vector (spec §1.3 k = 4, §5.2 step 2)
    relation_budget: int = 4800  # framework: as LGraphRAG (LGraphRAG.yaml:59 retriever)
    chunk_budget: int = 4000  # framework: as LGraphRAG (RetrieverConfig.py:18)
    report_budget: int = 3200  # framework: as LGraphRAG (LGraphRAG.yaml:79)
    sections: str = "communities+entities+relationships+chunks"  # framework: ctx (BasicQuery.py:49)
    passage_rank: str = "chunks+relationships+entities+communities"  # ours: rank (module docstring)

    def __post_init__(self) -> None:
        _check_sections(self, ("sections", "passage_rank"))


@dataclass
class GlobalConfig(MethodConfig, MapReduceOptions):
    """GGraphRAG's options (spec 002 §4.5 M2, §6.2; reference code)."""

    top_k: int = 4  # paper: unused by retrieval, Layer takes whole levels (spec §1.3 k = 4)
    level: int = 2  # framework: Leiden levels 0..level (GGraphRAG.yaml:66; paper: the top layers)
    min_rating: float = 0.0  # framework: lowest report rating kept (GGraphRAG.yaml:83)
    max_communities: int = 512  # framework: communities considered at most (GGraphRAG.yaml:84)
    order: str = "occurrence"  # framework: by occurrence (CommunityRetriever.py:75-98) | vector

    def __post_init__(self) -> None:
        if self.order not in LAYER_ORDERS:
            raise ConfigError(f"order must be one of {', '.join(LAYER_ORDERS)}")


@dataclass
class CheapConfig(MethodConfig, MapReduceOptions):
    """CheapRAG's options (spec 002 §5.3, §6.3)."""

    top_k: int = 4  # paper: chunks by vector, passages returned (spec §1.3 k = 4, §5.3 step 2)
    community_top_k: int = 4  # paper: reports by vector (spec §1.3 k = 4, §5.3 step 1)
    map_budget: int = 0  # paper: a partial answer per community and per chunk (spec §6.3)
    report_budget: int = 3200  # ours: report tokens in the context (as LGraphRAG.yaml:79)
    chunk_budget: int = 4000  # ours: source tokens in the context (as RetrieverConfig.py:18)
    sections: str = "communities+chunks"  # ours: reports, then sources (module docstring)
    passage_rank: str = "chunks+communities"  # ours: passage order (module docstring)

    def __post_init__(self) -> None:
        _check_sections(self, ("sections", "passage_rank"))


def _context(*budgeted: str) -> Step:
    """The context step: sections and passage ranking from the config, ``budgeted``
    sections capped by the config's ``<kind>_budget`` (``report_budget`` for reports)."""
    fields = {"communities": "$report_budget", "relationships": "$relation_budget",
              "chunks": "$chunk_budget"}  # fmt: skip
    return Step("merge.context", {
        "sections": "$sections", "titles": SECTION_TITLES,
        "budgets": {name: fields[name] for name in budgeted}, "ranking": "$passage_rank",
    })  # fmt: skip


ENTITIES = (
    Step("node.vdb", {"k": "$entity_top_k"}),
    Step("relationship.kg_onehop", {"budget": "$relation_budget"}),
)
EVIDENCE = (
    Step("node.evidence", {"into": "entities"}),
    Step("relationship.kg_evidence", {"into": "relationships"}),
    Step("community.evidence", {"into": "communities"}),
    Step("chunk.evidence", {"k": "$top_k", "into": "chunks"}),
)


@register
class GraphRAGLocal(Method):
    """LGraphRAG: entities → their relations → the entities' chunks → their communities."""

    name = "graphrag-local"
    Config = LocalConfig
    description = "GraphRAG local: vector entities, their relations, the entities' chunks, reports"
    layers = ("chunks", "entity-vectors", "communities")
    recipe = (
        *ENTITIES,
        Step("chunk.occurrence", {"k": "$chunk_top_k", "mode": "$occurrence",
                                  "budget": "$chunk_budget", "related": "$related_chunks"}),
        Step("community.entity", {"level": "$level", "budget": "$report_budget",
                                  "single": "$single_community"}),
        *EVIDENCE,
        _context("communities", "relationships", "chunks"),
    )  # fmt: skip


@register
class VGraphRAG(Method):
    """VGraphRAG: LGraphRAG's entities and relations, reports and chunks by vector."""

    name = "vgraphrag"
    Config = VGraphConfig
    description = "VGraphRAG: vector entities + their relations, reports and chunks by vector"
    layers = ("chunks", "entity-vectors", "communities")
    recipe = (
        Step("question.embed"),
        *ENTITIES,
        Step("community.vdb", {"k": "$community_top_k"}),
        Step("chunk.vdb", {"k": "$top_k"}),
        *EVIDENCE,
        _context("communities", "relationships", "chunks"),
    )  # fmt: skip


@register
class GraphRAGGlobal(Method):
    """GGraphRAG: every community of the top levels, answered by map-reduce."""

    name = "graphrag-global"
    Config = GlobalConfig
    description = "GraphRAG global: all reports of the top Leiden levels, map-reduce answer"
    layers = ("chunks", "communities")
    generation = "map_reduce"
    query_llm = MAP_REDUCE_LLM
    recipe = (
        Step("community.layer", {"level": "$level", "min_rating": "$min_rating",
                                 "max_communities": "$max_communities", "order": "$order"}),
        Step("community.evidence", {"into": "communities"}),
        Step("merge.context", {"sections": "communities", "titles": SECTION_TITLES,
                               "ranking": "communities"}),
    )  # fmt: skip


@register
class CheapRAG(Method):
    """CheapRAG: the nearest reports and chunks, answered by map-reduce, each alone."""

    name = "cheaprag"
    Config = CheapConfig
    description = "CheapRAG: reports and chunks by vector, map-reduce answer over each"
    layers = ("chunks", "communities")
    generation = "map_reduce"
    query_llm = MAP_REDUCE_LLM
    recipe = (
        Step("question.embed"),
        Step("community.vdb", {"k": "$community_top_k"}),
        Step("chunk.vdb", {"k": "$top_k"}),
        Step("community.evidence", {"into": "communities"}),
        Step("chunk.evidence", {"k": "$top_k", "into": "chunks"}),
        _context("communities", "chunks"),
    )  # fmt: skip
