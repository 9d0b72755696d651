"""``kgp``: KGP, an LLM agent walking the passage graph (spec 002 §2.2 PG, §4.1 N7, §4.6).

KGP (Wang et al., "Knowledge Graph Prompting for Multi-Document Question Answering",
AAAI 2024) as the unified framework runs it: the graph is the passage graph (one node
per chunk, two chunks linked when they share at least τ = 2 entities, the
``passage-graph`` layer), the retrieval primitive is the question text, and the node
operator is TF-IDF over the chunks (the ``tfidf`` layer, ``node.tfidf``). An LLM agent
then reasons, from the question and the passages read so far, about what to fetch next
among the linked passages (``chunk.kgp``; spec §4.6, [M Exp.3]). The framework's code
sets ``top_k`` 30 and ``k_nei`` 3 but seeds with ``top_k // nei_k`` = 10 TF-IDF passages
(``Core/Query/KGPQuery.py`` line 16; ``seed_passages``), one agent call each, and reads
``nei_k`` = 3 linked passages from each, one hop from each seed.

The original KGP trains a small model (T5) as its traversal agent; the framework, and
this method, prompt the configured LLM instead. ``select="llm"`` (ours, the default)
shows the agent the ``candidates`` linked passages nearest to the question and lets it
name up to ``k_nei`` of them; ``select="tfidf"`` follows the reference code: the agent
says what evidence is still missing and the ``k_nei`` linked passages nearest (TF-IDF)
to the question plus that sentence are read. ``depth`` > 1 walks on from what was read.

**LLM at query.** Retrieval needs an LLM (whatever ``llm_in_retrieval`` says: the agent
is the method); without one a query fails with one line. Every call goes through the
shared fan-out (cache, concurrency, cost report) and is bounded: ``depth`` rounds,
``max_calls`` calls, ``max_tokens`` tokens per question; an unreadable reply or one that
names only passages not offered ends the walk with what was found.

**Passage ranking**: each seed in TF-IDF order followed by the passages read from it
(the reference code pairs each seed with its picks); the context shows them in that
order, up to ``context_passages``, within the render budget; the query's ``top_k``
changes neither the seeds nor the walk. Direct answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from hygraph.errors import ConfigError
from hygraph.methods.base import Method, MethodConfig, register
from hygraph.operators.recipe import Step

SELECT_MODES = ("llm", "tfidf")


@dataclass
class KGPConfig(MethodConfig):
    """KGP's options (spec 002 §4.6; the framework's reference code, KGP.yaml)."""

    top_k: int = 5  # ours: not read: the context is every passage read, to context_passages
    seed_passages: int = 10  # framework: TF-IDF seed passages, an agent call each
    #   (Core/Query/KGPQuery.py:16: top_k // nei_k = 30 // 3, with Option/Method/KGP.yaml:39
    #   top_k 30 and Config/QueryConfig.py:12 nei_k 3)
    k_nei: int = 3  # framework: linked passages read per passage (Config/QueryConfig.py:12)
    depth: int = 1  # framework: hops walked from the seeds (KGPQuery.py:27-41, one hop)
    select: str = "llm"  # ours: the agent names the passages (spec §4.6) | tfidf: framework
    candidates: int = 5  # ours: linked passages offered per call, nearest to the question
    max_calls: int = 10  # ours: agent calls per question at most (one per seed, as the code)
    max_tokens: int = 40000  # ours: agent tokens per question at most (prompt + completion)
    passage_words: int = 300  # ours: words of each passage read so far shown to the agent
    snippet_words: int = 60  # ours: words of each linked passage offered to the agent
    context_passages: int = 40  # ours: passages in the context at most (10 seeds + 3 each)
    pg_min_shared: int = 2  # paper: τ, shared entities linking two passages (spec 002 §2.2)
    pg_similar_k: int = 0  # ours: also link each passage to its k most similar (0: off)

    def __post_init__(self) -> None:
        if self.select not in SELECT_MODES:
            raise ConfigError(f"select must be one of {', '.join(SELECT_MODES)}")
        for name in ("seed_passages", "k_nei", "depth", "max_calls", "max_tokens"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must not be negative")
        if self.candidates < 1:
            raise ConfigError("candidates must be at least 1")


@register
class KGP(Method):
    """KGP: TF-IDF seed passages, then an LLM agent walks the passage graph."""

    name = "kgp"
    Config = KGPConfig
    description = "KGP: TF-IDF seed passages, then an LLM agent reads on along the passage graph"
    layers = ("chunks", "tfidf", "passage-graph")
    query_llm = "required: the retrieval agent (a call per seed passage, at most max_calls)"
    recipe = (
        Step("node.tfidf", {"k": "$seed_passages", "into": "chunks"}),
        Step("chunk.kgp", {
            "k_nei": "$k_nei", "depth": "$depth", "max_calls": "$max_calls",
            "max_tokens": "$max_tokens", "select": "$select", "candidates": "$candidates",
            "passage_words": "$passage_words", "snippet_words": "$snippet_words",
        }),
        Step("chunk.evidence", {"k": "$context_passages", "into": "chunks"}),
        Step("merge.context", {"sections": "chunks", "titles": {"chunks": "Passages"},
                               "ranking": "chunks"}),
    )  # fmt: skip
