"""Community operators: the communities of the retrieved entities, as evidence.

GraphRAG's local search brings in the communities its entities belong to, ranked by
how many of the retrieved entities each holds (then by level, finer first). The
community layer stores the Leiden hierarchy; reports are written over its nodes by the
methods that need them (a community shows its report when it has one, else its members).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hygraph.graph.kinds import EdgeKind
from hygraph.operators.registry import operator
from hygraph.operators.state import Scored
from hygraph.retrieval.evidence import Evidence

if TYPE_CHECKING:
    from hygraph.operators.state import State
    from hygraph.resources import Resources


@operator("community.of_nodes", needs=("communities",))
def of_nodes(res: Resources, state: State, *, k: int = 5, level: int = -1) -> None:
    """Communities holding the retrieved entities, by how many they hold (``level`` -1: any)."""

    membership = state.view(res).links(EdgeKind.IN_COMMUNITY).out
    count: dict[str, int] = {}
    for hit in state.nodes:
        for cid in membership.get(hit.id, []):
            count[cid] = count.get(cid, 0) + 1
    nodes = res.store.get_nodes(count)
    ranked = [
        Scored(cid, float(n), data={"level": int(nodes[cid].data.get("level", 0))})
        for cid, n in count.items()
        if cid in nodes and (level < 0 or nodes[cid].data.get("level") == level)
    ]
    ranked.sort(key=lambda s: (-s.value, -s.data["level"], s.id))
    state.communities = ranked[:k]


@operator("community.evidence", needs=("communities",))
def evidence(res: Resources, state: State, *, into: str = "communities") -> None:
    """Evidence for the chosen communities: the report when written, else the members."""
    nodes = res.store.get_nodes(c.id for c in state.communities)
    out = []
    for item in state.communities:
        node = nodes.get(item.id)
        if node is None:
            continue
        report = node.data.get("report")
        text = f"{node.name}: {report or 'members: ' + (node.text or '')}"
        meta = {"level": node.data.get("level"), "size": node.data.get("size")}
        out.append(Evidence("community", text, item.value, tuple(node.sources), id=node.id,
                            metadata=meta))  # fmt: skip
    state.evidence[into] = out
