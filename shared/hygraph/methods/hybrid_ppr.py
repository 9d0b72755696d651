"""``hybrid-ppr``: the recommended method — a dense + BM25 first stage, re-ranked by a
fact-seeded walk over entities and passages, that never buries the first stage's best hits.

What it does, step by step:

1. **First stage**: the 50 nearest chunks by vector and the 50 best by BM25, fused by
   their scores as Qdrant's distribution-based score fusion does (each list rescaled by
   its mean ± 3 standard deviations, then summed). BM25 keeps names, numbers and rare
   words that a small embedder blurs, and unlike rank fusion (``hybrid``,
   ``fusion=rrf``) score fusion lets a decisive hit of either list lead for the
   question at hand: a rare code BM25 alone matches, or a passage dense search alone
   finds. This is the ranking the method must not lose to.
2. **Facts** (as HippoRAG 2): the 5 relations nearest to the question vector
   (``fact-vectors``); an LLM keeps the useful ones when retrieval may use one,
   otherwise the best 3 pass. Their entities, weighted by fact score over their chunk
   count, are the walk's seeds. Ours: a worded fact's vector is pooled from the
   encoder's pass over the passage that states it (the words from one name to the
   other within a sentence; :mod:`hygraph.layers.fact_spans`), so the facts cost no
   encoder pass of their own and the layers cost less than the chunk embedding;
   ``fact_vector=triple`` embeds each triple ``"source label target"`` as HippoRAG 2
   does. A co-occurrence fact is composed from its two names.
3. **Walk**: personalized PageRank over entities *and* passages (relation, mention and
   synonym edges), restarting at the seed entities, at every passage with 0.05 × its
   normalised dense score (HippoRAG 2's code), and at the first stage's passages with
   ``prior_weight`` × ``(61 / (60 + rank))``, so a lexical hit starts the walk too. A
   passage two or three hops from the question's facts gains the mass the walk carries
   to it; without a seed the first-stage ranking is the answer.
4. **Guard** (``merge.protect``): the first stage's best passage keeps rank 1, and so
   does every next one whose score is a near-tie with it (within a third of the gap from
   the 1st to the 5th score: both films of "which came out first, X or Y?"), or that
   stands with it above a clear drop (the widest between neighbours among the first
   five, at least half that gap: the two films when one scores well below the other but
   both far above the rest); its other passages at rank ``r ≤ 3`` end no lower than
   ``2r``. The dense ranking's best four are held the same way (rank ``r`` no lower than
   ``2r``), unless the first stage already holds them or another passage of their
   document stands above that: the fusion with BM25 can rank a passage dense search was
   sure of below the walk's bridges (on MuSiQue, passages ``vanilla`` had at rank 2–4
   ended at 6–9). All floors are met together (earliest deadline first). The walk spends
   its evidence below the top hit: it may put a bridge passage second, above a weaker
   first-stage hit, but never moves the passage the question matches best.

It runs offline with the rule-based extractor (facts are the extracted relations) and
gains with better extraction (an LLM or a precomputed one) and, at query time, with an
LLM fact filter. Settings were chosen on MuSiQue questions 1–50 only, among the
variants listed in ``benchmarks/results/musique-hybrid-ppr-sweep.md``,
``musique-top-ranks.md`` and ``musique-dense-guard.md``, and confirmed on 51–100; the
walk continues with probability 0.7 (HippoRAG 2 uses 0.5: ``hybrid-ppr:damping=0.5``),
which reaches third hops more often.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hygraph.errors import ConfigError
from hygraph.layers.fact_vectors import check_cooccurrence, check_fact_vector
from hygraph.methods.base import Method, MethodConfig, register
from hygraph.operators.recipe import Step


@dataclass
class HybridPPRConfig(MethodConfig):
    """Defaults: Qdrant's DBSF for the first stage, HippoRAG 2 for the walk, ours where marked."""

    top_k: int = 5  # ours: passages returned (as vanilla)
    fusion: str = "dbsf"  # library: first-stage fusion, Qdrant's distribution-based score
    #   fusion (Fusion.DBSF) | rrf (as hybrid)
    rrf_k: int = 60  # paper: reciprocal-rank constant (Cormack et al. 2009) of fusion=rrf
    #   and of the walk's first-stage prior
    candidates: int = 50  # ours: depth of the dense and BM25 rankings (as hybrid)
    dense_weight: float = 1.0  # ours: weight of the dense ranking in the first stage
    bm25_weight: float = 1.0  # ours: weight of the BM25 ranking in the first stage
    link_top_k: int = 5  # code: facts linked and seed entities kept (HippoRAG 2's
    #   src/hipporag/utils/config_utils.py:184 linking_top_k)
    recognition: str = "auto"  # ours: LLM fact filter: auto (LLM in retrieval) | llm | off
    unfiltered_top_k: int = 3  # ours: facts kept when no filter runs (as hipporag2)
    damping: float = 0.7  # ours: P(follow an edge) (MuSiQue q1-50; HippoRAG 2: 0.5)
    passage_weight: float = 0.05  # code: restart weight of dense passages (HippoRAG 2's
    #   config_utils.py:91 passage_node_weight)
    prior_weight: float = 0.02  # ours: restart weight of the first stage's top passage
    protect_top: int = 3  # ours: first-stage passages kept near the top
    protect_factor: float = 2.0  # ours: ... the r-th ends no lower than factor * r
    protect_dense: int = 4  # ours: the dense ranking's best passages held too (0: none)
    protect_dense_factor: float = 2.0  # ours: ... the r-th ends no lower than factor * r
    protect_keep: int = 1  # ours: first-stage passages that keep their rank (the best)
    protect_tie: float = 1 / 3  # ours: ... and those after it scoring within this share
    #   of (1st - 5th score) of the best (near-ties at the top; MuSiQue q1-50)
    protect_gap: float = 0.5  # ours: ... and those above the widest drop among the first
    #   5 scores when it is at least this share of (1st - 5th score) (a clear head)
    specificity: bool = True  # code: fact score / chunks of the entity (HippoRAG.py:1601)
    synonyms: bool = True  # paper: walk synonym edges between similar entities (HippoRAG)
    synonym_threshold: float = 0.8  # paper: τ for synonym edges (HippoRAG §2.2)
    synonym_max: int = 100  # code: synonyms per entity at most (HippoRAG 2's HippoRAG.py:1007)
    synonym_min_chars: int = 3  # code: names shorter in letters/digits get none
    #   (HippoRAG 2's HippoRAG.py:1002)
    synonym_numbers: bool = True  # ours: names whose numbers differ are not synonyms
    fact_cooccurrence: str = "names"  # ours: a fact with no words of its own (offline
    #   co-occurrence) gets its entities' name vectors, summed | text (code: its triple
    #   embedded; layers 1.99× the chunk embedding against 1.38×, MuSiQue offline)
    fact_vector: str = "passage"  # ours: a worded fact is pooled from the pass over the
    #   passage stating it (hygraph.layers.fact_spans: layers 0.7x / 0.9x the chunk
    #   embedding on MuSiQue against 1.32x / 1.64x; benchmarks/results/fact-passage.md)
    #   | triple (code: embedded as its triple, as HippoRAG 2)

    def __post_init__(self) -> None:
        check_cooccurrence(self.fact_cooccurrence)
        check_fact_vector(self.fact_vector)
        if self.fusion not in ("dbsf", "rrf"):
            raise ConfigError("fusion must be dbsf or rrf")
        if self.recognition not in ("auto", "llm", "off"):
            raise ConfigError("recognition must be auto, llm or off")
        if not 0.0 <= self.damping < 1.0:
            raise ConfigError("damping must be in [0, 1): the probability of following an edge")
        if self.prior_weight < 0 or self.passage_weight < 0:
            raise ConfigError("prior_weight and passage_weight must be ≥ 0")
        if min(self.protect_keep, self.protect_tie, self.protect_gap, self.protect_dense) < 0:
            raise ConfigError(
                "protect_keep, protect_tie, protect_gap and protect_dense must be ≥ 0"
            )
        if self.protect_factor < 1 or self.protect_dense_factor < 1:
            raise ConfigError("protect_factor and protect_dense_factor must be ≥ 1")


@register
class HybridPPR(Method):
    name = "hybrid-ppr"
    Config = HybridPPRConfig
    recommended = True
    description = (
        "recommended: dense + BM25 first stage; PPR over entities and passages from the "
        "question's facts re-ranks it, keeping the first stage's best hits near the top"
    )
    layers = ("chunks", "bm25", "fact-vectors", "entity-vectors", "synonyms")
    recipe = (
        Step("question.embed"),
        Step("chunk.vdb", {"k": "$candidates", "into": "dense", "at_least_top_k": True}),
        Step("chunk.bm25", {"k": "$candidates", "into": "lexical", "at_least_top_k": True}),
        Step("merge.dbsf", {"rankings": ["dense", "lexical"], "depth": "$candidates",
                            "weights": ["$dense_weight", "$bm25_weight"], "into": "first"},
             when="fusion=dbsf"),
        Step("merge.rrf", {"rankings": ["dense", "lexical"], "k": "$rrf_k",
                           "weights": ["$dense_weight", "$bm25_weight"], "into": "first"},
             when="fusion=rrf"),
        Step("relationship.fact_link", {"k": "$link_top_k"}),
        Step("relationship.recognize", {"mode": "$recognition", "unfiltered": "$unfiltered_top_k"}),
        Step("node.fact_entities", {"k": "$link_top_k", "specificity": "$specificity"}),
        Step("chunk.ppr", {"damping": "$damping", "passage_weight": "$passage_weight",
                           "synonyms": "$synonyms", "prior": "first",
                           "prior_weight": "$prior_weight", "prior_k": "$rrf_k"}),
        Step("merge.protect", {"ranking": "first", "top": "$protect_top",
                               "factor": "$protect_factor", "keep": "$protect_keep",
                               "tie": "$protect_tie", "tie_rank": 5, "gap": "$protect_gap",
                               "also": "dense",
                               "also_top": "$protect_dense",
                               "also_factor": "$protect_dense_factor"}),
        Step("chunk.evidence", {"k": "$top_k"}),
        Step("merge.context", {"sections": "chunks", "titles": {"chunks": "Passages"}}),
    )  # fmt: skip

    def __init__(self, config: HybridPPRConfig | dict[str, Any] | None = None):
        super().__init__(config)
        if not self.config.synonyms:
            # No synonym edges in the walk: nothing reads the entity vectors either, so an
            # index of this method builds neither (its layers then cost the fact vectors
            # alone: benchmarks/results/musique-default-r2.md).
            unused = ("entity-vectors", "synonyms")
            self.layers = tuple(name for name in type(self).layers if name not in unused)
