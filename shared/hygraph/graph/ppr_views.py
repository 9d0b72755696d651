"""The graphs and matrices the personalized-PageRank methods walk, cached per store version.

Two graphs, both built from the shared entity graph and memoised on the store's
:class:`~hygraph.graph.view.GraphView` (so every query of one version shares them):

* :func:`entity_walk` — HippoRAG and FastGraphRAG as the unified framework runs them
  (spec 002 §4.1 N3, §4.2 R3, §4.3 C1): entities joined by relation edges (and,
  optionally, synonym edges), with the two matrices the aggregators multiply by —
  the entity × relationship incidence ``E`` (a relationship is one directed relation
  edge, joining its two entities) and the relationship × chunk provenance ``M``
  (``M[i, j] = 1`` when relationship ``i`` was extracted from chunk ``j``).
* :func:`passage_walk` — HippoRAG 2's graph: entity *and* passage nodes; relation
  edges between entities, a weight-1 edge from each passage to each entity it
  mentions, and synonym edges. The reference code inserts every triple and every
  synonym pair in both directions into an undirected graph, so those edges weigh
  twice their count (or cosine) against a passage edge; ``pair_factor`` keeps that.

Each entity's *specificity* count (how many chunks mention it, HippoRAG's node
specificity ``1 / |P_i|``) is kept beside the walk graph.

The passage graph can also be kept on disk (:func:`keep_passage_walk`, at the end of a
build): building it reads every mention edge (8 s and 60 MB more at 25,000 chunks),
so a query process loads the arrays instead when their key, the store's write count
(:meth:`~hygraph.graph.store.GraphStore.generation`), is the current one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.view import GraphView, WalkGraph, WalkGraphBuilder


@dataclass
class EntityWalk:
    """An entity walk graph with the aggregators' matrices (see the module docstring)."""

    graph: WalkGraph
    relations: list[tuple[str, str]]  # (source entity, target entity) per column of E
    incidence: Any  # scipy CSR, nodes × relationships (E)
    provenance: Any  # scipy CSR, relationships × chunks (M)
    chunks: list[str]  # the chunk id of each column of M
    chunk_counts: np.ndarray  # per node position: chunks mentioning it (0 if none)

    @property
    def relation_ids(self) -> list[str]:
        """Relationship ids as the relation-vectors layer names them (``"src|dst"``)."""
        return [f"{s}|{d}" for s, d in self.relations]


@dataclass
class PassageWalk:
    """HippoRAG 2's entity + passage graph and which positions are passages."""

    graph: WalkGraph
    is_chunk: np.ndarray  # bool per position
    chunk_counts: np.ndarray  # per position: chunks mentioning the entity
    _positions: dict[int, tuple[list[str], np.ndarray]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def positions_of(self, ids: list[str]) -> np.ndarray:
        """The position of each of ``ids`` in the graph (-1 where it has none), as an array.

        Kept for the last few lists asked about, by identity: the passage walk asks each
        query about the same (memoised) lists of chunks (those with a vector, those of
        the kept walk matrix), and looking them up one by one would cost a dictionary
        lookup per chunk per query.
        """
        held = self._positions.get(id(ids))
        if held is None or held[0] is not ids:
            position = self.graph.position
            found = np.fromiter((position.get(i, -1) for i in ids), dtype=np.int64, count=len(ids))
            if len(self._positions) >= 4:
                self._positions.clear()
            held = (ids, found)
            self._positions[id(ids)] = held
        return held[1]


def _chunk_counts(view: GraphView, graph: WalkGraph) -> np.ndarray:
    counts = np.zeros(len(graph.ids), dtype=np.float64)
    for entity, count in view.provenance_counts(NodeKind.ENTITY).items():
        pos = graph.position.get(entity)
        if pos is not None:
            counts[pos] = count
    return counts


def entity_walk(view: GraphView, *, synonyms: bool = True) -> EntityWalk:
    """Entities over relation (+ synonym) edges, with ``E`` and ``M`` (memoised)."""

    def make() -> EntityWalk:
        from scipy import sparse

        kinds = [EdgeKind.RELATION, *([EdgeKind.SYNONYM] if synonyms else [])]
        graph = view.walk_graph(kinds, nodes_of=[NodeKind.ENTITY])
        relations: list[tuple[str, str]] = []
        sources: list[list[str]] = []
        for edge in view.store.iter_edges(EdgeKind.RELATION):
            if edge.src in graph.position and edge.dst in graph.position:
                relations.append((edge.src, edge.dst))
                sources.append(sorted(edge.data.get("entries", {})))
        chunks = sorted({c for cs in sources for c in cs})
        column = {c: j for j, c in enumerate(chunks)}
        m = len(relations)
        rows = [graph.position[s] for s, _ in relations] + [graph.position[d] for _, d in relations]
        cols = list(range(m)) * 2
        incidence = sparse.csr_matrix(
            (np.ones(2 * m), (rows, cols)), shape=(len(graph.ids), m), dtype=np.float64
        )
        incidence.data[:] = 1.0  # a self-loop relation counts its entity once
        prov_rows = [i for i, cs in enumerate(sources) for _ in cs]
        prov_cols = [column[c] for cs in sources for c in cs]
        provenance = sparse.csr_matrix(
            (np.ones(len(prov_rows)), (prov_rows, prov_cols)), shape=(m, len(chunks)),
            dtype=np.float64,
        )  # fmt: skip
        return EntityWalk(graph, relations, incidence, provenance, chunks,
                          _chunk_counts(view, graph))  # fmt: skip

    return view.memo(("ppr:entity-walk", synonyms), make)


#: Part of a kept passage graph's key: a new layout never reads an old file.
WALK_LAYOUT = 1


def _walk_stem(view: GraphView, folder: Path, synonyms: bool, pair_factor: float) -> tuple:
    from hygraph.graph.kept import kept_stem

    key = json.dumps([WALK_LAYOUT, view.store.generation(), synonyms, pair_factor])
    return kept_stem(folder, f"passage-walk-s{int(synonyms)}-f{pair_factor:g}", key), key


def passage_walk(
    view: GraphView, *, synonyms: bool = True, pair_factor: float = 2.0, keep: Path | None = None
) -> PassageWalk:
    """HippoRAG 2's graph of entities and passages (memoised; see the module docstring).

    ``keep``: the folder where a build kept it (:func:`keep_passage_walk`); it is loaded
    from there when kept for the store as it is now, else built.
    """

    def make() -> PassageWalk:
        if keep is not None and hasattr(view.store, "generation"):
            from hygraph.graph.kept import read_arrays
            from hygraph.graph.view import WalkGraph

            stem, key = _walk_stem(view, keep, synonyms, pair_factor)
            loaded = read_arrays(stem, key)
            if loaded is not None:
                from scipy import sparse

                ids, arrays = loaded
                n = len(ids)
                adjacency = sparse.csr_matrix(
                    (arrays["data"], arrays["indices"], arrays["indptr"]), shape=(n, n)
                )
                graph = WalkGraph(ids, {i: p for p, i in enumerate(ids)}, adjacency)
                return PassageWalk(graph, arrays["is_chunk"], arrays["chunk_counts"])
        # One edge kind at a time, streamed from the store and kept as arrays (the mention
        # edges alone are ten a chunk); positions as if the kinds' rows were one list.
        builder = WalkGraphBuilder()
        builder.add(view.edge_rows([EdgeKind.RELATION]), factor=pair_factor)
        if synonyms:
            builder.add(view.edge_rows([EdgeKind.SYNONYM]), factor=pair_factor)
        builder.add(view.edge_rows([EdgeKind.MENTION]), weight=1.0)
        chunks = view.store.chunk_ids()
        entities = view.provenance_counts(NodeKind.ENTITY)  # ids in first-appearance order
        graph = builder.build([*entities, *chunks])
        chunk_set = set(chunks)
        is_chunk = np.array([i in chunk_set for i in graph.ids], dtype=bool)
        return PassageWalk(graph, is_chunk, _chunk_counts(view, graph))

    return view.memo(("ppr:passage-walk", synonyms, pair_factor), make)  # type: ignore[no-any-return]


def keep_passage_walk(
    view: GraphView, folder: Path, *, synonyms: bool = True, pair_factor: float = 2.0
) -> bool:
    """Keep the passage graph in ``folder`` for later processes (unless already kept for
    the store as it is now); whether one is kept."""
    from hygraph.graph.kept import read_ids, write_arrays

    if not hasattr(view.store, "generation"):
        return False
    stem, key = _walk_stem(view, folder, synonyms, pair_factor)
    if read_ids(stem, key) is not None:
        return True
    walk = passage_walk(view, synonyms=synonyms, pair_factor=pair_factor, keep=folder)
    adjacency = walk.graph.adjacency
    write_arrays(stem, key, list(walk.graph.ids), {
        "indptr": adjacency.indptr, "indices": adjacency.indices, "data": adjacency.data,
        "is_chunk": walk.is_chunk, "chunk_counts": walk.chunk_counts,
    })  # fmt: skip
    return read_ids(stem, key) is not None
