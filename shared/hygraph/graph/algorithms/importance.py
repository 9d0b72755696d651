"""Important-entity selection for NodeRAG (spec 004, §3.2 Algorithm 1; §8 items 9-11).

NodeRAG writes attribute summaries (A nodes) only for structurally important
entities, ``N* = K(G1) ∪ B(G1)``, to keep indexing cost down. Both metrics are
computed on the whole decomposition graph G1 (S, N and R nodes, so degrees count
S and R neighbours), and only entity (``type == "N"``) nodes are returned.

* K-core part. Threshold ``k = floor(ln|V| · sqrt(mean degree))`` (paper; the
  authors' code rounds instead, ``rounding="round"``). The paper writes the test
  as ``deg(v) >= k`` (``kcore="degree"``); the authors' code takes a true k-core.
  Our default (``kcore="core"``, spec §8 #9) keeps entities whose core number is
  at least ``k``. If ``k`` exceeds the largest core number the set is empty.
* Betweenness part. Approximate betweenness from ``samples`` Brandes source
  samples (paper: 10), normalised as networkx does by default (authors' code);
  selected if ``b(v) > mean(b) · floor(log10|V|)`` (paper). The scale is clamped to
  at least 1 so that graphs under 10 nodes do not select every node with b > 0
  (our choice, spec §8 #11). The seed is explicit (our choice; the code leaves it
  unseeded).
* Mention filter. The authors' code keeps only entities with ``weight > 1`` (seen
  at least twice); ``min_mentions=2`` reproduces it, 0 or 1 disables it (spec §8 #10).

Self-loops are removed before any metric: they carry no structural information
and ``networkx.core_number`` rejects them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import networkx as nx

ENTITY_TYPE = "N"
_ROUNDINGS = ("floor", "round")
_KCORE_MODES = ("core", "degree")


def _round(value: float, rounding: str) -> int:
    """floor() (paper) or Python's round() (authors' code) of a non-negative value."""
    if rounding == "floor":
        return math.floor(value)
    if rounding == "round":
        return round(value)
    raise ValueError(f"rounding must be one of {_ROUNDINGS}, got {rounding!r}")


def kcore_threshold(n_nodes: int, total_degree: float, rounding: str = "floor") -> int:
    """``k = floor(ln n · sqrt(total_degree / n))``; 0 for an empty graph.

    ``total_degree`` is the sum of all node degrees (twice the edge count of an
    undirected simple graph), so ``total_degree / n`` is the mean degree.
    """
    if n_nodes <= 0:
        return 0
    mean_degree = max(float(total_degree), 0.0) / n_nodes
    return max(_round(math.log(n_nodes) * math.sqrt(mean_degree), rounding), 0)


def betweenness_scale(n_nodes: int, rounding: str = "floor") -> int:
    """``floor(log10 n)`` (or rounded), clamped to at least 1 (spec §8 #11)."""
    if n_nodes <= 1:
        return 1
    return max(_round(math.log10(n_nodes), rounding), 1)


@dataclass
class Importance:
    """Entities selected by each criterion, and the thresholds that selected them."""

    kcore: set[str] = field(default_factory=set)
    betweenness: set[str] = field(default_factory=set)
    k: int = 0
    threshold: float = 0.0

    @property
    def entities(self) -> set[str]:
        """``N* = K ∪ B``."""
        return self.kcore | self.betweenness


def _without_self_loops(graph: nx.Graph) -> nx.Graph:
    import networkx as nx

    loops = list(nx.selfloop_edges(graph))
    if not loops:
        return graph
    graph = graph.copy()
    graph.remove_edges_from(loops)
    return graph


def _eligible_entities(graph: nx.Graph, min_mentions: int) -> set[str]:
    """Entity nodes that pass the mention filter (weight defaults to 1)."""
    return {
        node
        for node, data in graph.nodes(data=True)
        if data.get("type") == ENTITY_TYPE
        and (min_mentions <= 1 or data.get("weight", 1) >= min_mentions)
    }


def _kcore_members(graph: nx.Graph, k: int, mode: str) -> set[str]:
    """Nodes with core number >= k (``"core"``) or degree >= k (``"degree"``)."""
    import networkx as nx

    if mode == "core":
        scores = nx.core_number(graph)
    else:
        scores = dict(graph.degree())
    return {node for node, score in scores.items() if score >= k}


def _betweenness_members(
    graph: nx.Graph, samples: int, seed: int, rounding: str
) -> tuple[set[str], float]:
    """Nodes with betweenness above ``mean · scale``, and that threshold."""
    import networkx as nx

    n = graph.number_of_nodes()
    scores = nx.betweenness_centrality(graph, k=min(samples, n), normalized=True, seed=seed)
    threshold = sum(scores.values()) / n * betweenness_scale(n, rounding)
    return {node for node, score in scores.items() if score > threshold}, threshold


def important_entities(
    graph: nx.Graph,
    *,
    samples: int = 10,
    seed: int = 0,
    kcore: str = "core",
    rounding: str = "floor",
    min_mentions: int = 2,
) -> Importance:
    """Select NodeRAG's important entities ``N*`` from the decomposition graph.

    Args:
        graph: G1; nodes carry ``type`` (``"N"``, ``"S"``, ``"R"``, ...) and an
            optional ``weight`` (mention count, default 1).
        samples: Brandes source samples for approximate betweenness (paper: 10).
        seed: seed for the betweenness sampling.
        kcore: ``"core"`` (true k-core, default) or ``"degree"`` (paper's degree test).
        rounding: ``"floor"`` (paper) or ``"round"`` (authors' code) for k and the scale.
        min_mentions: keep entities with ``weight >= min_mentions``; <= 1 disables.
    """
    if kcore not in _KCORE_MODES:
        raise ValueError(f"kcore must be one of {_KCORE_MODES}, got {kcore!r}")
    if rounding not in _ROUNDINGS:
        raise ValueError(f"rounding must be one of {_ROUNDINGS}, got {rounding!r}")
    n = graph.number_of_nodes()
    if n == 0:
        return Importance()
    graph = _without_self_loops(graph)
    total_degree = sum(degree for _, degree in graph.degree())
    k = kcore_threshold(n, total_degree, rounding)
    eligible = _eligible_entities(graph, min_mentions)
    core_set = _kcore_members(graph, k, kcore) & eligible
    between_set, threshold = _betweenness_members(graph, samples, seed, rounding)
    return Importance(kcore=core_set, betweenness=between_set & eligible, k=k, threshold=threshold)
