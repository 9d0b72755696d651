"""Subgraph operators: NodeRAG's shallow walk from the entry points, with per-type quotas.

The heterograph (spec 004 §4.2-4.3) is walked from the vector entry points and the
exact-match entry points by a shallow personalized PageRank; the best-scoring nodes
that are not entries become *cross nodes*, at most a quota per type: entities (N,
each replaced by its attribute A), relationships (R), titles (O, each replaced by its
element H), and T/S/A/H content together. The picked node ids, their walk scores and
each chunk's walk mass (its own plus its units') land in ``state.subgraph``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from hygraph.graph.kinds import HETEROGRAPH_STRUCTURAL, EdgeKind, NodeKind
from hygraph.operators.registry import operator

if TYPE_CHECKING:
    from hygraph.graph.view import GraphView, WalkGraph
    from hygraph.operators.state import State
    from hygraph.resources import Resources


def heterograph(view: GraphView, semantic_edges: bool) -> tuple[WalkGraph, np.ndarray]:
    """The heterograph's walk graph (entity and title nodes always present) and node types."""
    from hygraph.graph.heterograph import node_type

    kinds = [*HETEROGRAPH_STRUCTURAL, *([EdgeKind.SEMANTIC] if semantic_edges else [])]
    graph = view.walk_graph(kinds, nodes_of=[NodeKind.ENTITY, NodeKind.OVERVIEW])
    types = view.memo(("types", tuple(kinds)), lambda: np.array([node_type(i) for i in graph.ids]))
    return graph, types


@operator("subgraph.shallow_ppr", needs=("heterograph",))
def shallow_ppr(
    res: Resources,
    state: State,
    *,
    alpha: float = 0.5,
    iterations: int = 2,
    mode: str = "restart",
    cap_edge_weights: bool = False,
    semantic_edges: bool = True,
    vector_weight: float = 1.0,
    exact_weight: float = 1.0,
    quotas: dict[str, int] | None = None,
    expand: bool = True,
    mass: bool = False,
) -> None:
    """Walk from the entry nodes (``state.nodes``) and exact matches; pick cross nodes.

    ``quotas`` per group: ``N``, ``R``, ``O`` and ``C`` (T/S/A/H together). ``expand``
    turns N into its A and O into its H; ``mass`` also sums each chunk's walk mass.
    """
    from hygraph.graph.algorithms.ppr import shallow_ppr as walk

    graph, types = heterograph(state.view(res), semantic_edges)
    seeds: dict[int, float] = {}
    for hit in state.nodes:
        if hit.id in graph.position:
            seeds[graph.position[hit.id]] = vector_weight
    for node_id in state.subgraph.get("exact", []):
        pos = graph.position[node_id]
        seeds[pos] = seeds.get(pos, 0.0) + exact_weight
    if not seeds:
        return
    transposed = graph.capped_transposed if cap_edge_weights else graph.transposed
    scores = walk(graph.adjacency, seeds, alpha=alpha, iterations=iterations, mode=mode,
                  transposed=transposed)  # fmt: skip
    _pick(res, state, graph, types, scores, dict(quotas or {}), expand)
    if mass:
        state.rankings["walk"] = _chunk_mass(state, res, graph, types, scores)


def _pick(
    res: Resources,
    state: State,
    graph: WalkGraph,
    types: np.ndarray,
    scores: np.ndarray,
    quotas: dict[str, int],
    expand: bool,
) -> None:
    """Cross nodes by descending score within each type's quota (spec §4.3)."""

    view = state.view(res)
    attributes = view.links(EdgeKind.ATTRIBUTE_OF).out
    elements = view.links(EdgeKind.TITLE).into
    entries = [h.id for h in state.nodes]
    entry_set = set(entries)
    walked: dict[str, float] = {}
    groups: dict[str, list[str]] = {"C": [], "A": [], "H": [], "R": []}
    for pos in np.argsort(-scores, kind="stable"):
        if scores[pos] <= 0 or not any(quotas.values()):
            break
        node_id, kind = graph.ids[pos], str(types[pos])
        group = "C" if kind in ("T", "S", "A", "H") else kind
        if node_id in entry_set or quotas.get(group, 0) <= 0:
            continue
        quotas[group] -= 1
        walked[node_id] = float(scores[pos])
        if group in ("C", "R"):
            groups[group].append(node_id)
        elif expand:
            found = attributes.get(node_id, []) if kind == "N" else elements.get(node_id, [])
            groups["A" if kind == "N" else "H"].extend(found)
            for other in found:
                walked.setdefault(other, float(scores[pos]))
    # The authors' order: entries, cross content, attributes, elements, relationships.
    picked = [*entries, *groups["C"], *groups["A"], *groups["H"], *groups["R"]]
    state.subgraph["picked"] = list(dict.fromkeys(picked))
    state.subgraph["walk_scores"] = walked


def _chunk_mass(
    state: State, res: Resources, graph: WalkGraph, types: np.ndarray, scores: np.ndarray
) -> list[str]:
    """Chunks by walk mass: a chunk's own score plus its units' (best first)."""
    unit_chunks = state.view(res).provenance(NodeKind.UNIT)
    mass: dict[str, float] = {}
    for pos in np.flatnonzero(scores):
        kind, node_id = types[pos], graph.ids[pos]
        if kind == "T":
            mass[node_id] = mass.get(node_id, 0.0) + float(scores[pos])
        elif kind == "S":
            for chunk in unit_chunks.get(node_id, ()):
                mass[chunk] = mass.get(chunk, 0.0) + float(scores[pos])
    return sorted(mass, key=lambda c: (-mass[c], c))
