"""Chunk operators: passages by vector, by BM25, by graph walk or bridge, and as evidence.

Each ranks chunks into ``state.chunks`` (``(chunk id, score)``, best first) or, with
``into=NAME``, into ``state.rankings[NAME]`` for a later fusion step.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hygraph.operators.registry import operator

if TYPE_CHECKING:
    from hygraph.operators.state import State
    from hygraph.resources import Resources


def _put(state: State, ranked: list[tuple[str, float]], into: str) -> None:
    if into == "chunks":
        state.chunks = ranked
    else:
        state.rankings[into] = [c for c, _ in ranked]


@operator("chunk.vdb", needs=("chunks",))
def vdb(
    res: Resources,
    state: State,
    *,
    k: int = 5,
    threshold: float | None = None,
    into: str = "chunks",
    at_least_top_k: bool = False,
    if_empty: bool = False,
) -> None:
    """The ``k`` chunks nearest to the question by cosine (above ``threshold`` if set).

    ``at_least_top_k`` searches at least the query's top_k deep; ``if_empty`` runs only
    when no earlier step ranked chunks.
    """
    if if_empty and state.chunks:
        return
    depth = max(k, state.top_k) if at_least_top_k else k
    query = state.query if state.query is not None else state.question
    hits = res.search_chunks(query, depth)
    ranked = [(h.id, h.score) for h in hits if threshold is None or h.score > threshold]
    _put(state, ranked, into)


@operator("chunk.bm25", needs=("bm25",))
def bm25(
    res: Resources, state: State, *, k: int = 5, into: str = "chunks", at_least_top_k: bool = False
) -> None:
    """The ``k`` chunks with the best BM25 score for the question (positive scores only)."""
    depth = max(k, state.top_k) if at_least_top_k else k
    _put(state, res.layer("bm25").search(res, state.question, depth), into)


@operator("chunk.from_evidence")
def from_evidence(
    res: Resources,
    state: State,
    *,
    sources: str = "facts+entities",
    k: int = 0,
    into: str = "chunks",
    if_empty: bool = False,
) -> None:
    """Chunks in the order the named evidence lists cite them (the reference code's mode).

    ``k`` cuts the list (0: the query's top_k); scores are 1, 1/2, 1/3 ...
    """
    if if_empty and state.chunks:
        return
    names = [s for s in sources.split("+") if s]
    cited = [c for n in names for item in state.evidence.get(n, []) for c in item.source_ids]
    ranked = list(dict.fromkeys(cited))[: k or state.top_k]
    _put(state, [(c, 1.0 / (n + 1)) for n, c in enumerate(ranked)], into)


@operator("chunk.evidence", needs=("chunks",))
def evidence(res: Resources, state: State, *, k: int = 5, into: str = "chunks") -> None:
    """Evidence for the best ``k`` ranked chunks (their texts, with the document title)."""
    state.evidence[into] = res.chunk_evidence(state.chunks[:k])


@operator("chunk.walk", needs=("hypergraph",))
def walk(
    res: Resources,
    state: State,
    *,
    damping: float = 0.5,
    chunk_seed: float = 0.05,
    mentions: bool = True,
    dense: bool = True,
) -> None:
    """Chunks ranked by personalized PageRank over facts, entities and chunks.

    Seeds: the retrieved entities and facts (each group normalised to its best value)
    and, at weight ``chunk_seed``, the top_k dense chunks (HippoRAG 2's factor). The
    walk follows incidences, fact provenance and (``mentions``) chunk mentions.
    """
    from hygraph.operators.walks import fact_walk

    hits = res.search_chunks(state.query_vector(res), state.top_k) if dense else []
    ranked = fact_walk(
        res, state.view(res), state.nodes, state.relationships, [(h.id, h.score) for h in hits],
        damping=damping, chunk_seed=chunk_seed, mentions=mentions,
    )  # fmt: skip
    state.chunks = ranked
    state.rankings["lead"] = [c for c, _ in ranked]
