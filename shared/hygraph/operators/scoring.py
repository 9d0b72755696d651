"""Scored vector retrieval: cosine × an extractor score, thresholded, top k (HyperGraphRAG).

HyperGraphRAG ranks entities by cosine × importance (0-100) and facts by cosine ×
completeness (0-10), and keeps those above a threshold (spec 003 §4.2-4.3). With
extractors that give no such scores (offline rules, imported triples), every item
counts as fully scored, so the thresholds become cosine thresholds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from hygraph.errors import ConfigError
from hygraph.operators.state import Scored

if TYPE_CHECKING:
    from hygraph.operators.state import State
    from hygraph.resources import Resources

THRESHOLD_MODES = ("product", "llm_score", "cosine")


def uses_scores(res: Resources, setting: str) -> bool:
    """``auto``: the extractor's scores count only for indexes built with an LLM extractor."""
    setting = str(setting).lower()
    if setting == "auto":
        return res.extractor_name.startswith("llm")
    return setting == "true"


def select(
    hits: Iterable[tuple[str, float, float]],
    *,
    full: float,
    threshold: float,
    k: int,
    threshold_on: str,
    use_scores: bool,
) -> list[Scored]:
    """Score ``(id, cosine, extractor score)`` candidates, threshold strictly, keep the top k.

    The ranking value is cosine × score (score = ``full`` when scores are not used).
    ``threshold`` is on the product's scale; ``threshold_on="cosine"`` compares the
    cosine with ``threshold / full``, ``"llm_score"`` the score with ``threshold``.
    """
    if threshold_on not in THRESHOLD_MODES:
        raise ConfigError(f"threshold_on must be one of {', '.join(THRESHOLD_MODES)}")
    out: list[Scored] = []
    for item_id, cosine, raw in hits:
        score = raw if use_scores else full
        value = cosine * score
        if threshold_on == "product":
            keep = value > threshold
        elif threshold_on == "llm_score":
            keep = score > threshold
        else:  # an item its extractor scored 0 never passes (spec §9 #7)
            keep = cosine > threshold / full and score > 0
        if keep:
            out.append(Scored(item_id, value, cosine, score))
    out.sort(key=lambda s: (-s.value, s.id))
    return out[:k]


def scored_search(
    res: Resources,
    collection: str,
    query: Any,
    *,
    k: int,
    pool: int,
    threshold: float,
    full: float,
    threshold_on: str,
    use_scores: str,
) -> list[Scored]:
    """A candidate pool of ``k × pool`` by cosine, re-ranked and thresholded by :func:`select`."""
    hits = res.search_vectors(collection, query, k * pool)
    nodes = res.store.get_nodes(h.id for h in hits)
    scored = (
        (h.id, h.score, float(nodes[h.id].data.get("score", full))) for h in hits if h.id in nodes
    )
    return select(
        scored, full=full, threshold=threshold, k=k, threshold_on=threshold_on,
        use_scores=uses_scores(res, use_scores),
    )  # fmt: skip


def scored_vdb(
    collection: str, slot: str, query_of: Callable[[Any, State], Any], doc: str
) -> Callable:
    """An operator searching ``collection`` with :func:`scored_search` into ``state.<slot>``.

    ``query_of(res, state)`` gives the query (text or vector). Entity and fact retrieval
    differ only in these three things, so they share this one body.
    """

    def search(
        res: Resources,
        state: State,
        *,
        k: int = 60,
        threshold: float = 0.0,
        full: float = 1.0,
        pool: int = 1,
        threshold_on: str = "product",
        use_scores: str = "false",
    ) -> None:
        found = scored_search(
            res, collection, query_of(res, state), k=k, pool=pool, threshold=threshold,
            full=full, threshold_on=threshold_on, use_scores=use_scores,
        )  # fmt: skip
        setattr(state, slot, found)

    search.__doc__ = doc
    return search
