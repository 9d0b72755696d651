"""Community selection of the 002 framework: Entity and Layer (spec 002 §4.5, M1 and M2).

* ``community.entity`` (M1, GraphRAG local search): the communities that hold any of the
  retrieved entities, levels up to ``level`` only, ranked by how many of those entities
  each holds, then by the report's rating (both descending), and kept while their
  reports fit a token budget (the reference code's 3,200 tokens).
* ``community.layer`` (M2, GraphRAG global search): every community at or below
  ``level`` (level 0 is the coarsest Leiden level, so ``level=2`` keeps the top three),
  ordered by occurrence (how many source chunks a community spans, the reference code's
  ``occurrence``), the first ``max_communities`` (512) kept, those rated below
  ``min_rating`` dropped, then ranked by (occurrence, rating). The question plays no
  part: GraphRAG's global search leaves the choice to its map step.
  ``order="vector"`` (ours) instead ranks the same communities by their report
  vector's similarity to the question, for retrieval without the map step.

M3, the nearest reports by vector, is ``community.vdb`` (:mod:`hygraph.operators.community`).
All three write ``state.communities`` (:class:`~hygraph.operators.state.Scored`, with
``level``, ``rating`` and, for Layer, ``occurrence`` in ``data``); ``community.evidence``
turns them into report evidence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hygraph.errors import ConfigError
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.operators.community import REPORT_COLLECTION, rank_by_members
from hygraph.operators.registry import operator
from hygraph.operators.state import Scored

if TYPE_CHECKING:
    from hygraph.graph.store import Node
    from hygraph.operators.state import State
    from hygraph.resources import Resources

LAYER_ORDERS = ("occurrence", "vector")


def report_tokens(node: Node) -> int:
    """Tokens of a community's shown text (its rendered report, else its member list)."""
    from hygraph.ingest.tokenizer import default_tokenizer

    return default_tokenizer().count(node.text or node.name or "")


def within_budget(res: Resources, ranked: list[Scored], budget: int, k: int = 0) -> list[Scored]:
    """The first ``k`` (0: all) of ``ranked`` while their reports fit ``budget`` tokens.

    The cut is :func:`hygraph.retrieval.budget.fit_budget`'s: ``budget`` 0 means no cut,
    and the first community is always kept, so one long report never leaves the
    selection empty (the reference code would return nothing). Communities missing from
    the store are skipped.
    """
    from hygraph.retrieval.budget import fit_budget

    ranked = ranked[:k] if k > 0 else ranked
    if budget <= 0 or not ranked:
        return ranked
    nodes = res.store.get_nodes(c.id for c in ranked)
    present = [item for item in ranked if item.id in nodes]
    return fit_budget(present, budget, lambda item: report_tokens(nodes[item.id]))


@operator("community.entity", needs=("communities",))
def entity(
    res: Resources,
    state: State,
    *,
    level: int = 2,
    budget: int = 3200,
    k: int = 0,
    single: bool = False,
) -> None:
    """Communities holding the retrieved entities, by (entities held, rating), in a budget.

    ``level`` keeps levels 0..level (-1: all); ``budget`` caps the reports' tokens (0:
    no cut) and ``k`` their number (0: no cap); ``single`` keeps only the first (the
    reference code's ``local_community_single_one``).
    """
    ranked = rank_by_members(res, state, (h.id for h in state.nodes), EdgeKind.IN_COMMUNITY,
                             max_level=level, by_rating=True)  # fmt: skip
    kept = within_budget(res, ranked, budget, k)
    state.communities = kept[:1] if single else kept


@operator("community.layer", needs=("communities",))
def layer(
    res: Resources,
    state: State,
    *,
    level: int = 2,
    min_rating: float = 0.0,
    max_communities: int = 512,
    order: str = "occurrence",
) -> None:
    """Every community at or below ``level``, by occurrence and rating (GraphRAG global).

    Occurrence is the number of source chunks a community spans, divided by the most any
    community spans. The ``max_communities`` most frequent are kept (0: all), those rated
    below ``min_rating`` dropped, the rest ranked by (occurrence, rating) descending, or
    by report similarity to the question with ``order="vector"``.
    """
    if order not in LAYER_ORDERS:
        raise ConfigError(f"community.layer order must be one of {', '.join(LAYER_ORDERS)}")
    nodes = [n for n in res.store.nodes_of_kind(NodeKind.COMMUNITY)
             if level < 0 or int(n.data.get("level", 0)) <= level]  # fmt: skip
    most = max((len(n.sources) for n in nodes), default=0) or 1
    ranked = [
        Scored(n.id, len(n.sources) / most, data={
            "level": int(n.data.get("level", 0)),
            "rating": float(n.data.get("rating", 0.0)),
            "occurrence": len(n.sources) / most,
        })
        for n in nodes
    ]  # fmt: skip
    ranked.sort(key=lambda s: (-s.value, s.id))
    if max_communities > 0:
        ranked = ranked[:max_communities]
    ranked = [s for s in ranked if s.data["rating"] >= min_rating]
    ranked.sort(key=lambda s: (-s.value, -s.data["rating"], s.id))
    if order == "vector":
        ranked = _by_report_vector(res, state, ranked)
    state.communities = ranked


def _by_report_vector(res: Resources, state: State, ranked: list[Scored]) -> list[Scored]:
    """``ranked`` re-ordered by report cosine to the question (unembedded ones last)."""
    import numpy as np

    stored = res.stored_vectors(REPORT_COLLECTION, [s.id for s in ranked])
    query = state.query_vector(res)
    for item in ranked:
        vector = stored.get(item.id)
        item.cosine = float(np.dot(vector, query)) if vector is not None else 0.0
    return sorted(ranked, key=lambda s: (s.id not in stored, -s.cosine))
