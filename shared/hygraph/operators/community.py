"""Community operators: the communities of the retrieved entities, reports by vector, evidence.

GraphRAG's local search brings in the communities its entities belong to, ranked by
how many of the retrieved entities each holds (then by level, finer first); its global
search reads the reports themselves. The community layer stores the Leiden hierarchy
with a report per community (:mod:`hygraph.layers.communities`); a community shows its
report as evidence (its members when reports are off).

The helpers :func:`rank_by_members` and :func:`report_evidence` take the scheme's
membership edge kind, so HiRAG's operators rank and show the communities of its own
multi-layer graph with the same code.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from hygraph.graph.kinds import EdgeKind
from hygraph.operators.registry import operator
from hygraph.operators.state import Scored
from hygraph.retrieval.evidence import Evidence

if TYPE_CHECKING:
    from hygraph.operators.state import State
    from hygraph.resources import Resources

REPORT_COLLECTION = "community_reports"  # the communities layer's report collection


def rank_by_members(
    res: Resources,
    state: State,
    node_ids: Iterable[str],
    member_edge: str,
    *,
    level: int = -1,
    max_level: int = -1,
    by_rating: bool = False,
) -> list[Scored]:
    """Communities holding any of ``node_ids``, by how many they hold.

    ``level`` keeps one level (-1: any), ``max_level`` levels up to it (-1: any). Ties
    go to the higher rating when ``by_rating`` (HiRAG), else to the finer level.
    """
    membership = state.view(res).links(member_edge).out
    count: dict[str, int] = {}
    for node_id in dict.fromkeys(node_ids):
        for cid in membership.get(node_id, []):
            count[cid] = count.get(cid, 0) + 1
    nodes = res.store.get_nodes(count)
    ranked = []
    for cid, n in count.items():
        node = nodes.get(cid)
        if node is None:
            continue
        lvl = int(node.data.get("level", 0))
        if (level >= 0 and lvl != level) or (max_level >= 0 and lvl > max_level):
            continue
        rating = float(node.data.get("rating", 0.0))
        ranked.append(Scored(cid, float(n), data={"level": lvl, "rating": rating}))
    second = "rating" if by_rating else "level"
    ranked.sort(key=lambda s: (-s.value, -s.data[second], s.id))
    return ranked


def report_evidence(res: Resources, items: Sequence[Scored]) -> list[Evidence]:
    """Evidence for communities: the report as the node shows it (``"<label>: <title>"``, the
    summary, the findings) when one is written, else the members."""
    nodes = res.store.get_nodes(c.id for c in items)
    out = []
    for item in items:
        node = nodes.get(item.id)
        if node is None:
            continue
        if node.data.get("report"):
            text = node.text or node.name or ""
        else:
            text = f"{node.name}: members: {node.text or ''}"
        meta = {
            "level": node.data.get("level"),
            "size": node.data.get("size"),
            "title": node.data.get("title", node.name),
            "rating": node.data.get("rating"),
        }
        out.append(Evidence("community", text, item.value, tuple(node.sources), id=node.id,
                            metadata=meta))  # fmt: skip
    return out


@operator("community.of_nodes", needs=("communities",))
def of_nodes(res: Resources, state: State, *, k: int = 5, level: int = -1) -> None:
    """Communities holding the retrieved entities, by how many they hold (``level`` -1: any)."""
    ranked = rank_by_members(res, state, (h.id for h in state.nodes), EdgeKind.IN_COMMUNITY,
                             level=level)  # fmt: skip
    state.communities = ranked[:k]


@operator("community.vdb", needs=("communities",))
def vdb(res: Resources, state: State, *, k: int = 5, level: int = -1) -> None:
    """Communities whose reports are nearest to the question (``level`` -1: any)."""
    hits = res.search_vectors(
        REPORT_COLLECTION, state.query_vector(res), k if level < 0 else 10 * k
    )
    nodes = res.store.get_nodes(h.id for h in hits)
    out = []
    for hit in hits:
        node = nodes.get(hit.id)
        if node is None or (level >= 0 and node.data.get("level") != level):
            continue
        data = {"level": int(node.data.get("level", 0)), "rating": node.data.get("rating", 0.0)}
        out.append(Scored(hit.id, hit.score, cosine=hit.score, data=data))
    state.communities = out[:k]


@operator("community.evidence", needs=("communities",))
def evidence(res: Resources, state: State, *, into: str = "communities") -> None:
    """Evidence for the chosen communities: the report when written, else the members."""
    state.evidence[into] = report_evidence(res, state.communities)
