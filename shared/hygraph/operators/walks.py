"""Graph walks that rank chunks: personalized PageRank over shared graph views."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hygraph.graph.kinds import EdgeKind, NodeKind

if TYPE_CHECKING:
    from hygraph.graph.view import GraphView
    from hygraph.operators.state import Scored
    from hygraph.resources import Resources


def fact_walk(
    res: Resources,
    view: GraphView,
    entities: Sequence[Scored],
    facts: Sequence[Scored],
    dense: Sequence[tuple[str, float]],
    *,
    damping: float,
    chunk_seed: float,
    mentions: bool,
) -> list[tuple[str, float]]:
    """Chunks by PPR over the fact–entity–chunk graph, seeded at the retrieved items.

    Each seed group is normalised by its best value; dense chunks weigh ``chunk_seed``.
    With no seed in the graph the dense ranking is returned as it is.
    """
    from hygraph.graph.algorithms.ppr import personalized_pagerank

    kinds = [EdgeKind.INCIDENCE, EdgeKind.MENTION] if mentions else [EdgeKind.INCIDENCE]
    graph = view.walk_graph(kinds, weighted=False, provenance_of=[NodeKind.FACT])
    seeds: dict[int, float] = {}
    groups = [
        ([(h.id, h.value) for h in entities], 1.0),
        ([(h.id, h.value) for h in facts], 1.0),
        (list(dense), chunk_seed),
    ]
    for pairs, weight in groups:
        top = max((v for _, v in pairs), default=0.0)
        for node_id, value in pairs:
            if node_id in graph.position and top > 0:
                pos = graph.position[node_id]
                seeds[pos] = seeds.get(pos, 0.0) + weight * (value / top)
    if not seeds:
        return list(dense)
    scores = personalized_pagerank(graph.transition, seeds, damping=damping)
    chunks = set(res.store.chunk_ids())
    out = []
    for i in np.argsort(-scores):
        if scores[i] <= 0:
            break
        if graph.ids[i] in chunks:
            out.append((graph.ids[i], float(scores[i])))
    return out
