"""``hipporag``, ``hipporag2`` and ``fastgraphrag``: personalized PageRank over the entity graph.

**hipporag** — HippoRAG (Gutiérrez et al., NeurIPS 2024) as the unified framework
runs it (spec 002 §4.6: ``Link + PPR → relationship Aggregator → chunk Aggregator``):
question entities → each linked to its nearest entity (top-1, entity vectors) → PPR
over the entity graph, restarting at the linked entities weighted by node specificity
``1 / (chunks mentioning it)`` → each relationship scores ``PPR(u) + PPR(v)`` → each
chunk the sum of its relationships' scores (``Ψ = R × M``). Synonym edges (cosine ≥
0.8, HippoRAG §2.2) join similar entities. Damping: the framework's reference code
passes ``damping: 0.1`` to igraph, where it is the probability of *continuing* the
walk (spec §4.1 N3; HippoRAG's released code has the same default); we keep that
meaning and value, so the walk stays close to the linked entities (``damping=0.5`` is
HippoRAG 2's value).

**fastgraphrag** — FastGraphRAG as the framework re-implements it (spec §4.1 N3
"FastGraphRAG mode", §4.6): the restart vector is the similarity of each question
entity's top-1 entity plus the similarities of the 8 entities nearest to the
question vector (entity vectors embed ``name: description``, the textual KG); then
the same two aggregators. The context shows passages, relationships and entities.

**hipporag2** — HippoRAG 2 (Gutiérrez et al., "From RAG to Memory", ICML 2025; the
spec does not cover it, so it follows the paper and the authors' code ``HippoRAG.py``):

1. query-to-fact linking: the 5 relations nearest to the question vector (``linking_top_k``
   5, code), their cosines min-max normalised over all facts;
2. recognition memory: an LLM keeps the facts that help (our prompt; on only when an
   LLM may be used in retrieval: ``recognition="auto"`` and an index opened with
   ``llm_in_retrieval=True``; ``"llm"`` insists, ``"off"`` never asks). If the LLM keeps
   none, the ranking is dense retrieval (code). Without the filter (or when its reply
   cannot be read) the best ``unfiltered_top_k`` = 3 linked facts pass (ours): the
   filter's job is to drop weakly linked facts, and with a small embedder the 4th and
   5th links are mostly noise. Chosen on MuSiQue questions 1-50: R@2 +7.5 / +1.0 and
   R@5 +4.7 / -1.2 against passing all 5 (precomputed / offline extraction);
   ``unfiltered_top_k=5`` is the reference behaviour;
3. seeds: each kept fact gives its two entities its score divided by the entity's
   chunk count, averaged per entity, top 5 (code);
4. PPR with damping 0.5 (paper, code) over entity *and* passage nodes — relation
   edges, passage–entity edges, synonym edges (cosine ≥ 0.8) — restarting at the seed
   entities and at every passage with weight 0.05 × its min-max normalised dense score
   (``passage_node_weight``, code); passages rank by PPR score.

Facts are the ``fact-vectors`` layer's relation edges, one per entity pair, each
embedded as its triple ``"subject label object"`` alone, as the authors' code embeds
each distinct triple (code: ``src/hipporag/HippoRAG.py:320``, ``str(fact)``; we drop
the tuple punctuation). The descriptions that ``relation-vectors`` adds cost several
times as much to embed and did not change recall on MuSiQue. HippoRAG 2 needs no
question entities, so it runs the same with or without an LLM.

**Question entities** (hipporag, fastgraphrag): an LLM (our NER prompt) when one is
configured and retrieval may use it (``llm_in_retrieval``), else the offline rule
extractor; the whole question when neither finds any. Every method falls back to
dense retrieval when its walk has no seed.
"""

from __future__ import annotations

from dataclasses import dataclass

from hygraph.errors import ConfigError
from hygraph.layers.fact_vectors import check_cooccurrence
from hygraph.methods.base import Method, MethodConfig, register
from hygraph.operators.recipe import Step

PASSAGES = {"chunks": "Passages"}
QUESTION_MODES = ("auto", "llm", "offline", "question")


def _check(config: MethodConfig) -> None:
    mode = getattr(config, "query_entities", "auto")
    if mode not in QUESTION_MODES:
        raise ConfigError(f"query_entities must be one of {', '.join(QUESTION_MODES)}")
    if not 0.0 <= float(config.damping) < 1.0:  # type: ignore[attr-defined]
        raise ConfigError("damping must be in [0, 1): the probability of following an edge")


@dataclass
class HippoRAGConfig(MethodConfig):
    """HippoRAG in the unified framework; defaults from spec 002 and the HippoRAG paper."""

    top_k: int = 5  # ours: passages returned (as vanilla; the framework's top-k: 4-5, §1.3)
    query_entities: str = "auto"  # ours: auto: LLM in retrieval, else rules (paper: LLM)
    #   | llm | offline
    damping: float = 0.1  # framework: P(follow an edge), passed to igraph
    #   (Option/Method/HippoRAG.yaml:48, Core/Graph/BaseGraph.py:434; spec 002 §4.1 N3)
    specificity: bool = True  # paper: node specificity 1/|chunks| on the restart (§2.2)
    synonyms: bool = True  # paper: walk synonym edges between similar entities (§2.2)
    synonym_threshold: float = 0.8  # paper: τ for synonym edges (HippoRAG §2.2)
    synonym_max: int = 100  # code: synonyms per entity at most (HippoRAG 2's HippoRAG.py:1007)
    synonym_min_chars: int = 3  # code: names shorter in letters/digits get none
    #   (HippoRAG 2's HippoRAG.py:1002)
    synonym_numbers: bool = True  # ours: names whose numbers differ are not synonyms
    entity_top_k: int = 10  # ours: entities kept in state.nodes after the walk
    relationship_top_k: int = 20  # ours: relationships kept after the aggregator

    def __post_init__(self) -> None:
        _check(self)


PPR_TAIL = (
    Step("relationship.aggregator", {"k": "$relationship_top_k"}),
    Step("chunk.aggregator"),
    Step("chunk.vdb", {"k": "$top_k", "if_empty": True}),
    Step("chunk.evidence", {"k": "$top_k"}),
)


@register
class HippoRAG(Method):
    name = "hipporag"
    Config = HippoRAGConfig
    description = (
        "HippoRAG: question entities (LLM in retrieval, else offline rules) linked to the KG, "
        "PPR from them, relationship and chunk aggregators"
    )
    layers = ("chunks", "entity-vectors", "synonyms")
    recipe = (
        Step("question.embed"),
        Step("question.entities", {"mode": "$query_entities", "prompt": "hipporag"}),
        Step("node.link"),
        Step("node.ppr", {"mode": "hipporag", "damping": "$damping", "k": "$entity_top_k",
                          "specificity": "$specificity", "synonyms": "$synonyms"}),
        *PPR_TAIL,
        Step("merge.context", {"sections": "chunks", "titles": PASSAGES}),
    )  # fmt: skip


@dataclass
class FastGraphRAGConfig(MethodConfig):
    """FastGraphRAG in the unified framework; defaults from spec 002 (reference code)."""

    top_k: int = 5  # ours: passages returned (as vanilla; the framework's top-k: 4-5, §1.3)
    query_entities: str = "auto"  # ours: auto: LLM in retrieval, else rules (paper: LLM)
    #   | llm | offline
    damping: float = 0.1  # framework: P(follow an edge), passed to igraph
    #   (Option/Method/HippoRAG.yaml:48, Core/Graph/BaseGraph.py:434; spec 002 §4.1 N3)
    entity_vdb_k: int = 8  # framework: entities nearest to the question added to the restart
    #   (Config/RetrieverConfig.py:9 top_k_entity_for_ppr, Core/Retriever/BaseRetriever.py:62)
    synonyms: bool = False  # paper: FastGraphRAG walks no synonym edges (spec 002 §2.2 TKG)
    entity_top_k: int = 10  # ours: entities shown after the walk
    relationship_top_k: int = 20  # ours: relationships shown after the aggregator
    entity_budget: int = 1000  # ours: tokens of the entity section
    relationship_budget: int = 1000  # ours: tokens of the relationship section

    def __post_init__(self) -> None:
        _check(self)


@register
class FastGraphRAG(Method):
    name = "fastgraphrag"
    Config = FastGraphRAGConfig
    description = (
        "FastGraphRAG: PPR from linked question entities (LLM in retrieval, else offline rules) "
        "and the entities nearest the question; relationship and chunk aggregators"
    )
    layers = ("chunks", "entity-vectors")
    recipe = (
        Step("question.embed"),
        Step("question.entities", {"mode": "$query_entities", "prompt": "hipporag"}),
        Step("node.link"),
        Step("node.ppr", {"mode": "fastgraphrag", "damping": "$damping", "k": "$entity_top_k",
                          "vdb_k": "$entity_vdb_k", "synonyms": "$synonyms"}),
        *PPR_TAIL,
        Step("relationship.evidence"),
        Step("node.evidence"),
        Step("merge.context", {
            "sections": "chunks+relationships+entities",
            "titles": {"chunks": "Passages", "relationships": "Relationships",
                       "entities": "Entities"},
            "budgets": {"relationships": "$relationship_budget", "entities": "$entity_budget"},
            "ranking": "chunks",
        }),
    )  # fmt: skip


@dataclass
class HippoRAG2Config(MethodConfig):
    """HippoRAG 2; defaults from the paper and the authors' code (HippoRAG.py)."""

    top_k: int = 5  # ours: passages returned (as vanilla)
    link_top_k: int = 5  # code: facts linked, and seed entities kept
    #   (src/hipporag/utils/config_utils.py:184 linking_top_k)
    recognition: str = "auto"  # paper: the fact filter (§3): auto (LLM in retrieval) | llm | off
    unfiltered_top_k: int = 3  # ours: facts kept when no filter ran (MuSiQue q1-50, see docs)
    damping: float = 0.5  # paper: P(follow an edge) (and the code: config_utils.py:192)
    passage_weight: float = 0.05  # code: restart weight of dense passages
    #   (config_utils.py:91 passage_node_weight)
    passage_pool: int = 0  # code: passages seeded, densest first; 0 = all (HippoRAG.py:1629-33)
    specificity: bool = True  # code: fact score / chunks of the entity (HippoRAG.py:1600-01)
    synonyms: bool = True  # paper: walk synonym edges between similar entities
    synonym_threshold: float = 0.8  # paper: τ for synonym edges (HippoRAG §2.2)
    synonym_max: int = 100  # code: synonyms per entity at most (HippoRAG 2's HippoRAG.py:1007)
    synonym_min_chars: int = 3  # code: names shorter in letters/digits get none
    #   (HippoRAG 2's HippoRAG.py:1002)
    synonym_numbers: bool = True  # ours: names whose numbers differ are not synonyms
    fact_cooccurrence: str = "text"  # code: a fact with no words of its own (offline
    #   co-occurrence) embedded as its triple | names (ours: its entities' name vectors)

    def __post_init__(self) -> None:
        if self.recognition not in ("auto", "llm", "off"):
            raise ConfigError("recognition must be auto, llm or off")
        check_cooccurrence(self.fact_cooccurrence)
        _check(self)


@register
class HippoRAG2(Method):
    name = "hipporag2"
    Config = HippoRAG2Config
    description = (
        "HippoRAG 2: query-to-fact linking, LLM fact filter (when retrieval may use an LLM), "
        "PPR over entities and passages seeded by fact entities and dense scores"
    )
    layers = ("chunks", "fact-vectors", "entity-vectors", "synonyms")
    recipe = (
        Step("question.embed"),
        Step("relationship.fact_link", {"k": "$link_top_k"}),
        Step("relationship.recognize", {"mode": "$recognition", "unfiltered": "$unfiltered_top_k"}),
        Step("node.fact_entities", {"k": "$link_top_k", "specificity": "$specificity"}),
        Step("chunk.ppr", {"damping": "$damping", "passage_weight": "$passage_weight",
                           "passage_pool": "$passage_pool", "synonyms": "$synonyms"}),
        Step("chunk.evidence", {"k": "$top_k"}),
        Step("merge.context", {"sections": "chunks", "titles": PASSAGES}),
    )  # fmt: skip
