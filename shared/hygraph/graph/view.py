"""``GraphView``: the read-optimised snapshot of a store that queries and algorithms read.

SQLite is the graph's source of truth, but a walk or a neighbourhood lookup per
query cannot afford row-by-row reads. A :class:`GraphView` answers them from arrays
and dictionaries built once per store version:

* :meth:`GraphView.walk_graph`: node ids, id → position and a symmetric sparse
  adjacency over chosen edge kinds (plus node → chunk provenance links and isolated
  nodes when asked), with the transition matrices PageRank needs;
* :meth:`GraphView.links`: for one edge kind, targets by source and sources by target,
  in store order;
* :meth:`GraphView.provenance`: the chunks each node of a kind came from;
* :meth:`GraphView.relationships`: the relationships an entity takes part in, binary
  relation edges and n-ary facts alike, as member tuples.

:func:`graph_view` keeps one view per store and replaces it when the store's version
changes, so every method and operator shares the same cache.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import GraphStore


@dataclass
class WalkGraph:
    """Node ids, their positions and a symmetric weighted adjacency (scipy CSR)."""

    ids: list[str]
    position: dict[str, int]
    adjacency: Any

    @cached_property
    def transition(self) -> Any:
        """Row-normalised adjacency (dangling rows stay zero)."""
        from hygraph.graph.algorithms.ppr import transition_matrix

        return transition_matrix(self.adjacency)

    @cached_property
    def transposed(self) -> Any:
        """``P^T`` for the shallow walk (computed once per view)."""
        from hygraph.graph.algorithms.ppr import transition_transpose

        return transition_transpose(self.adjacency)

    @cached_property
    def dangling(self) -> Any:
        """Mask of nodes without edges (their walk mass restarts at the seeds)."""
        return np.asarray(self.adjacency.sum(axis=1)).ravel() == 0

    @cached_property
    def capped_transposed(self) -> Any:
        """``P^T`` after the authors' edge-weight cap (NodeRAG ``cap_edge_weights``)."""
        from hygraph.graph.algorithms.ppr import cap_edge_weights, transition_transpose

        return transition_transpose(cap_edge_weights(self.adjacency))

    def neighbours(self, node_id: str) -> list[str]:
        """Ids adjacent to ``node_id`` (empty if it is not in the graph)."""
        i = self.position.get(node_id)
        if i is None:
            return []
        row = self.adjacency.indptr
        return [self.ids[j] for j in self.adjacency.indices[row[i] : row[i + 1]]]


@dataclass
class Links:
    """One edge kind as adjacency lists: ``out[src]`` targets, ``into[dst]`` sources."""

    out: dict[str, list[str]] = field(default_factory=dict)
    into: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Relationship:
    """A relationship an entity takes part in: a binary relation edge or an n-ary fact."""

    id: str
    kind: str  # EdgeKind.RELATION or NodeKind.FACT
    members: tuple[str, ...]


def build_walk_graph(
    rows: Iterable[tuple[str, str, float]], nodes: Iterable[str] = ()
) -> WalkGraph:
    """A :class:`WalkGraph` from ``(src, dst, weight)`` rows; ``nodes`` adds isolated ids.

    Positions follow first appearance (sources before targets, then ``nodes``); each
    row adds its weight in both directions, repeated pairs sum and self-loops drop.
    """
    from hygraph.graph.algorithms.ppr import symmetric_adjacency

    rows = list(rows)
    position: dict[str, int] = {}
    for src, dst, _ in rows:
        position.setdefault(src, len(position))
        position.setdefault(dst, len(position))
    for node_id in nodes:
        position.setdefault(node_id, len(position))
    adjacency = symmetric_adjacency(
        len(position), ((position[s], position[d], float(w)) for s, d, w in rows)
    )
    return WalkGraph(list(position), position, adjacency)


class GraphView:
    """Lookups over one version of a :class:`GraphStore`, each built on first use."""

    def __init__(self, store: GraphStore, version: tuple[int, int, int]):
        self.store = store
        self.version = version
        self._cache: dict[tuple, Any] = {}

    def memo(self, key: tuple, make: Any) -> Any:
        """The value cached under ``key`` for this version (made by ``make()`` once)."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def walk_graph(
        self,
        edge_kinds: Sequence[str],
        *,
        weighted: bool = True,
        provenance_of: Sequence[str] = (),
        nodes_of: Sequence[str] = (),
    ) -> WalkGraph:
        """The graph over ``edge_kinds`` (stored weights, or 1 with ``weighted=False``).

        ``provenance_of`` adds a weight-1 link from every node of those kinds to each
        chunk it came from; ``nodes_of`` adds the nodes of those kinds even when no
        edge reaches them (so a seed among them still has a position).
        """
        key = ("walk", tuple(edge_kinds), weighted, tuple(provenance_of), tuple(nodes_of))

        def make() -> WalkGraph:
            rows = self.store.edge_rows(list(edge_kinds)) if edge_kinds else []
            if not weighted:
                rows = [(s, d, 1.0) for s, d, _ in rows]
            for kind in provenance_of:
                rows += [(n, c, 1.0) for n, c in self.store.provenance_of_kind(kind)]
            extra = [n.id for kind in nodes_of for n in self.store.nodes_of_kind(kind)]
            return build_walk_graph(rows, extra)

        return self.memo(key, make)

    def links(self, kind: str) -> Links:
        """Adjacency lists of one edge kind, in the store's row order."""

        def make() -> Links:
            links = Links()
            for src, dst, _ in self.store.edge_rows([kind]):
                links.out.setdefault(src, []).append(dst)
                links.into.setdefault(dst, []).append(src)
            return links

        return self.memo(("links", kind), make)

    def provenance(self, node_kind: str) -> dict[str, list[str]]:
        """Chunk ids each node of ``node_kind`` came from."""

        def make() -> dict[str, list[str]]:
            out: dict[str, list[str]] = {}
            for node_id, chunk_id in self.store.provenance_of_kind(node_kind):
                out.setdefault(node_id, []).append(chunk_id)
            return out

        return self.memo(("provenance", node_kind), make)

    def names(self, node_kinds: Sequence[str]) -> dict[str, str]:
        """Display names (or texts) of every node of the given kinds."""

        def make() -> dict[str, str]:
            return {
                n.id: n.name or n.text or ""
                for kind in node_kinds
                for n in self.store.nodes_of_kind(kind)
            }

        return self.memo(("names", tuple(node_kinds)), make)

    def relationships(self, entity_id: str) -> list[Relationship]:
        """Relation edges and n-ary facts ``entity_id`` takes part in (facts after edges)."""
        relation = self.links(EdgeKind.RELATION)
        incidence = self.links(EdgeKind.INCIDENCE)
        out = [
            Relationship(f"{entity_id}|{other}", EdgeKind.RELATION, (entity_id, other))
            for other in relation.out.get(entity_id, [])
        ]
        out += [
            Relationship(f"{other}|{entity_id}", EdgeKind.RELATION, (other, entity_id))
            for other in relation.into.get(entity_id, [])
        ]
        out += [
            Relationship(fact, NodeKind.FACT, tuple(incidence.out.get(fact, [])))
            for fact in incidence.into.get(entity_id, [])
        ]
        return out


_VIEWS: weakref.WeakKeyDictionary[GraphStore, GraphView] = weakref.WeakKeyDictionary()


def graph_view(store: GraphStore) -> GraphView:
    """The store's view at its current version (rebuilt lazily after any write)."""
    version = store.version()
    view = _VIEWS.get(store)
    if view is None or view.version != version:
        view = GraphView(store, version)
        _VIEWS[store] = view
    return view


def positions(graph: WalkGraph, ids: Iterable[str]) -> np.ndarray:
    """Positions of the ids that are in ``graph`` (others skipped), in input order."""
    return np.array([graph.position[i] for i in ids if i in graph.position], dtype=np.int64)
