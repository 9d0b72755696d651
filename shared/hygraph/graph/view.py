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

import sys
import weakref
from collections.abc import Iterable, Iterator, Sequence
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
    def degree(self) -> np.ndarray:
        """Each node's weighted degree (its adjacency row's sum), float64."""
        from hygraph.graph.algorithms.linear_ppr import degrees

        return degrees(self.adjacency)

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
    def ordered_transposed(self) -> Any:
        """``P^T`` renumbered for locality with its threaded product, or None where the
        graph is too small for it to pay (:mod:`hygraph.graph.algorithms.ordered`)."""
        from hygraph.graph.algorithms.ordered import ordered_transpose

        return ordered_transpose(self.transposed)

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
    builder = WalkGraphBuilder()
    builder.add(rows)
    return builder.build(nodes)


#: Rows a view reads from the store at a time when it streams a query (see GraphView.edge_rows).
STREAM_BATCH = 20_000


class WalkGraphBuilder:
    """A :class:`WalkGraph` made from several row lists in turn, each let go once read.

    ``add`` the row lists in the order :func:`build_walk_graph` would read their
    concatenation (positions by first appearance, sources before targets), then
    ``build``: the same graph, bit for bit, but each list's rows are kept as positions
    and weights in arrays, not as Python tuples, so a caller can read the store one edge
    kind at a time and the largest list alone is ever held.
    """

    def __init__(self) -> None:
        self.position: dict[str, int] = {}
        self._src: list[np.ndarray] = []
        self._dst: list[np.ndarray] = []
        self._weight: list[np.ndarray] = []

    def add(
        self, rows: Iterable[tuple[str, str, float]], *, factor: float = 1.0,
        weight: float | None = None,
    ) -> None:  # fmt: skip
        """Rows ``(src, dst, w)``, each weighing ``factor * w`` (or ``weight`` if given)."""
        position = self.position
        src: list[int] = []
        dst: list[int] = []
        weights: list[float] = []

        def keep() -> None:  # this batch's rows as arrays
            self._src.append(np.array(src, dtype=np.int64))
            self._dst.append(np.array(dst, dtype=np.int64))
            if weight is not None:
                self._weight.append(np.full(len(weights), weight, dtype=np.float64))
            elif factor == 1.0:
                self._weight.append(np.array(weights, dtype=np.float64))
            else:  # ``factor * w`` as the Python expression computes it (IEEE doubles alike)
                self._weight.append(factor * np.array(weights, dtype=np.float64))
            src.clear()
            dst.clear()
            weights.clear()

        for s, d, w in rows:
            src.append(position.setdefault(s, len(position)))
            dst.append(position.setdefault(d, len(position)))
            weights.append(w)
            if len(src) == STREAM_BATCH:
                keep()
        keep()

    def build(self, nodes: Iterable[str] = ()) -> WalkGraph:
        """The graph of every row added, with ``nodes`` (after the rows' ids) added too."""
        from hygraph.graph.algorithms.ppr import symmetric_adjacency_of

        position = self.position
        for node_id in nodes:
            position.setdefault(node_id, len(position))
        empty = [np.zeros(0, dtype=np.int64)]
        adjacency = symmetric_adjacency_of(
            len(position), np.concatenate(self._src or empty), np.concatenate(self._dst or empty),
            np.concatenate(self._weight or [np.zeros(0)]),
        )  # fmt: skip
        self._src, self._dst, self._weight = [], [], []
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

    def forget(self, key: tuple) -> None:
        """Drop what is kept under ``key``, so the next :meth:`memo` makes it again."""
        self._cache.pop(key, None)

    def held(self, key: tuple, stamp: Any) -> Any:
        """The value :meth:`keep` kept under ``key`` at ``stamp``, or None."""
        value = self._cache.get(key)
        return value[1] if value is not None and value[0] == stamp else None

    def keep(self, key: tuple, stamp: Any, value: Any) -> None:
        """Keep ``value`` under ``key`` at ``stamp`` (for a value found only sometimes, which
        :meth:`memo` would keep missing once missed)."""
        self._cache[key] = (stamp, value)

    def memo_current(self, key: tuple, stamp: Any, make: Any) -> Any:
        """Like :meth:`memo`, for a value that also depends on something outside the graph
        (a vector collection's write ``stamp``): made again, replacing the one kept, when
        ``stamp`` differs from the one it was made at."""
        held = self._cache.get(key)
        if held is None or held[0] != stamp:
            held = (stamp, make())
            self._cache[key] = held
        return held[1]

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
            builder = WalkGraphBuilder()
            if edge_kinds:
                builder.add(self.edge_rows(edge_kinds), weight=None if weighted else 1.0)
            for kind in provenance_of:
                builder.add(((n, c, 1.0) for n, c in self.provenance_rows(kind)), weight=1.0)
            extra = [n.id for kind in nodes_of for n in self.store.nodes_of_kind(kind)]
            return builder.build(extra)

        return self.memo(key, make)

    def edge_rows(self, kinds: Sequence[str]) -> Iterator[tuple[str, str, float]]:
        """:meth:`GraphStore.edge_rows`, in its order, read a batch at a time.

        A view reads every edge of a kind once per version to build its arrays; the
        store's list of them (its rows, then a tuple per edge: a few hundred bytes an
        edge, ten mention edges a chunk) would all be held at once. This runs the
        store's own query and hands its rows on as they come (the store's lock held
        until the last); a store without that connection gives its list.
        """
        kinds = list(kinds)
        sql = f"SELECT src, dst, weight FROM edges WHERE kind IN ({','.join('?' * len(kinds))})"
        for src, dst, weight in self._stream(sql, kinds, lambda: self.store.edge_rows(kinds)):
            yield src, dst, float(weight)

    def provenance_rows(self, node_kind: str) -> Iterator[tuple[str, str]]:
        """:meth:`GraphStore.provenance_of_kind`, in its order, read a batch at a time."""
        sql = (
            "SELECT ns.node_id, ns.chunk_id FROM node_sources ns JOIN nodes n"
            " ON n.id = ns.node_id WHERE n.kind = ?"
        )
        yield from self._stream(sql, [node_kind], lambda: self.store.provenance_of_kind(node_kind))

    def _stream(self, sql: str, params: list[Any], listed: Any) -> Iterator[tuple]:
        """The rows of the store's query ``sql`` in batches (else the list ``listed()`` gives)."""
        conn = getattr(self.store, "_conn", None)
        lock = getattr(self.store, "_lock", None)
        if conn is None or lock is None:
            yield from listed()
            return
        with lock:
            cursor = conn.execute(sql, params)
            while rows := cursor.fetchmany(STREAM_BATCH):
                yield from rows

    def links(self, kind: str) -> Links:
        """Adjacency lists of one edge kind, in the store's row order."""

        def make() -> Links:
            links = Links()
            for src, dst, _ in self.store.edge_rows([kind]):
                links.out.setdefault(src, []).append(dst)
                links.into.setdefault(dst, []).append(src)
            return links

        return self.memo(("links", kind), make)

    def provenance_counts(self, node_kind: str) -> dict[str, int]:
        """How many chunks each node of ``node_kind`` came from, in :meth:`provenance`'s
        order, without holding the chunk lists (12.7 MB of them at 25,000 chunks)."""

        def make() -> dict[str, int]:
            lists = self._cache.get(("provenance", node_kind))
            if lists is not None:
                return {node_id: len(chunks) for node_id, chunks in lists.items()}
            out: dict[str, int] = {}
            for node_id, _ in self.provenance_rows(node_kind):  # (node, chunk) pairs are unique
                out[node_id] = out.get(node_id, 0) + 1
            return out

        return self.memo(("provenance-counts", node_kind), make)

    def provenance(self, node_kind: str) -> dict[str, list[str]]:
        """Chunk ids each node of ``node_kind`` came from."""

        def make() -> dict[str, list[str]]:
            out: dict[str, list[str]] = {}
            for node_id, chunk_id in self.provenance_rows(node_kind):
                # Interned: each chunk's id is one string, not one per node citing it.
                out.setdefault(node_id, []).append(sys.intern(chunk_id))
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
