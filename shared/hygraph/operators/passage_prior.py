"""HippoRAG 2's passage walk without walking the whole graph per query.

The walk restarts at the seed entities, at the first stage's passages (a few dozen)
and at *every* passage with ``passage_weight`` × its dense cosine min-max normalised
over all passages. On a large corpus that last part is nearly all the restart mass
(99.7 % of it on 25,000 chunks), and it made each query a power iteration over the
whole graph: 32 sparse products, 55 ms at 25,000 chunks, growing with the corpus.

The walk is linear in its restart (:mod:`hygraph.graph.algorithms.linear_ppr`), and the
dense restart of passage ``c`` is ``w / span · (ĉ · q̂ - low)``: linear in the unit query
vector ``q̂`` once ``low`` and ``span`` are known. So the build walks, once, from each
dimension of the unit chunk vectors and from the all-passages vector, and keeps the
passages' rows of the result: a matrix ``[G | g]`` with a row per chunk (``G`` n × dim,
``g`` n × 1) and a last row of column totals over every node. A query then needs

* the dense part: ``w / span · (G q̂ - low · g)``, one product with the matrix, exact up
  to float32 rounding. ``low`` and ``span`` come from two exact searches of the chunk
  collection (the question and its negation), which reads the vectors the loaded shard
  already holds, so a query maps this matrix instead of the chunks' own (38 MB at
  25,000 chunks); the matrix's last row, the sum of the unit chunk vectors, gives the
  sum of all cosines;
* the sparse part (seeds and first-stage passages): a local push
  (:func:`~hygraph.graph.algorithms.linear_ppr.push_ppr`) whose threshold is
  :data:`PUSH_TOLERANCE` of the whole restart mass, so that each passage's score is
  within ``PUSH_TOLERANCE · deg(passage)`` of the exact walk's (scores are shares of
  the walk's mass), whatever the corpus size;

and the scores are the sum over the total mass, as the whole-graph iteration gives
them. Two passages change places only where their exact scores differ by less than
that bound.

On a small corpus the whole-graph walk is cheaper than the push (the seeds hold more of
the restart mass, and the graph is small): below :data:`MIN_CHUNKS` passages queries walk
the whole graph and no matrix is written.

The matrix depends on the graph, the chunk vectors and the walk's settings, and is kept
on disk beside the index (:meth:`~hygraph.resources.Resources.kept_matrix`). A build
writes it; an insert that adds less than :data:`REFRESH_SHARE` of the index's chunks
does not (the solve costs about as much as 20 whole-graph walks per block of columns,
more than such an insert), and until a later build writes it again queries walk the
whole graph as before. Where the vectors live on a Qdrant server, the file is keyed by
the graph store's commit counter instead of the collection's write token
(:meth:`~hygraph.resources.Resources.vector_stamp`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from hygraph.graph.ppr_views import PassageWalk
    from hygraph.graph.view import GraphView
    from hygraph.resources import Resources

#: Push threshold as a share of the walk's whole restart mass (see the module docstring).
PUSH_TOLERANCE = 1e-9
#: An insert adding at least this share of the index's chunks writes the matrix again.
REFRESH_SHARE = 0.1
#: Right-hand sides solved together (memory: a few n × COLUMNS float64 arrays).
COLUMNS = 48
#: Below this many passages the whole-graph walk is the faster one (MuSiQue's 1,941
#: chunks: 37.6 ms a query against 52.0 ms with the matrix; 24,857 chunks: 98 against
#: 57 ms), so no matrix is written or read.
MIN_CHUNKS = 5_000
#: The row of column totals after the chunks' rows, and after it the sum of the unit
#: chunk vectors (the sum of every passage's cosine is that row times the query).
TOTALS = "\x00totals"
COSINE_SUM = "\x00cosine-sum"
#: Part of the kept matrix's key: a new layout never reads an old file.
LAYOUT = 2


def _name(damping: float, synonyms: bool, pair_factor: float) -> str:
    return f"walk-prior-d{damping:g}-s{int(synonyms)}-f{pair_factor:g}"


def _key(res: Resources, view: GraphView) -> list[Any] | None:
    stamp = res.vector_stamp("chunks")
    return None if stamp is None else [LAYOUT, list(view.version), stamp]


def prior_matrix(
    res: Resources,
    view: GraphView,
    walk: PassageWalk,
    *,
    damping: float,
    synonyms: bool,
    pair_factor: float,
    make: bool = False,
) -> tuple[list[str], np.ndarray] | None:
    """The kept ``(chunk ids, [G | g])`` for this graph and these settings: a row per
    chunk, then a row of column totals over every node of the walk, then the sum of the
    unit chunk vectors (and their count).

    None when none was written for the current graph and chunk vectors (and ``make``
    is false), where nothing can be kept, or below :data:`MIN_CHUNKS` passages. With
    ``make``, solves and writes it.
    """
    key = _key(res, view)
    if key is None or int(walk.is_chunk.sum()) < MIN_CHUNKS:
        return None
    name = _name(damping, synonyms, pair_factor)
    memo = ("walk-prior", name)
    held = view.held(memo, key)  # a found matrix is kept; a miss is looked for again
    if held is not None:
        return held  # type: ignore[no-any-return]

    def solve() -> tuple[list[str], np.ndarray]:
        return _solve(res, view, walk, damping)

    kept = res.kept_matrix(name, key, solve if make else None)
    if kept is None or kept[0][-2:] != [TOTALS, COSINE_SUM]:
        return None
    found = (kept[0][:-2], kept[1])  # the chunks' ids; the matrix keeps its last two rows
    view.keep(memo, key, found)
    return found


def _solve(
    res: Resources, view: GraphView, walk: PassageWalk, damping: float
) -> tuple[list[str], np.ndarray]:
    from hygraph.graph.algorithms.linear_ppr import linear_ppr_block
    from hygraph.operators.ppr import collection_matrix

    ids, vectors = collection_matrix(res, view, "chunks")
    at = walk.positions_of(ids)
    keep = at >= 0
    ids = [c for c, k in zip(ids, keep, strict=True) if k]
    at = at[keep]
    vectors = np.asarray(vectors)[keep]
    if not ids:
        return [], np.zeros((0, 0), dtype=np.float32)
    n, dim = len(walk.graph.ids), vectors.shape[1]
    out = np.empty((len(ids) + 2, dim + 1), dtype=np.float32)
    out[-1, :dim] = vectors.sum(axis=0, dtype=np.float64)
    out[-1, dim] = len(ids)
    for start in range(0, dim + 1, COLUMNS):
        stop = min(start + COLUMNS, dim + 1)
        rhs = np.zeros((n, stop - start), dtype=np.float64)
        inside = min(stop, dim) - start  # columns of the chunk vectors in this block
        if inside > 0:
            rhs[at, :inside] = vectors[:, start : start + inside]
        if stop == dim + 1:
            rhs[at, -1] = 1.0  # the all-passages restart
        solved = linear_ppr_block(walk.graph.adjacency, rhs, damping=damping)
        out[:-2, start:stop] = solved[at]
        out[-2, start:stop] = solved.sum(axis=0)
    return [*ids, TOTALS, COSINE_SUM], out


def walk_scores(
    walk: PassageWalk,
    prior: tuple[list[str], np.ndarray],
    query: np.ndarray,
    sparse_restart: np.ndarray,
    *,
    damping: float,
    passage_weight: float,
    low: float,
    high: float,
) -> np.ndarray:
    """Each walk position's share of the walk's mass (passages; entities 0), as the whole
    walk from ``sparse_restart`` plus the dense passage restart gives it (see above).

    ``low`` and ``high``: the least and the greatest cosine of the question to a passage
    (``high > low``).
    """
    from hygraph.graph.algorithms.linear_ppr import push_ppr

    ids, matrix = prior
    rows = len(ids)
    q = np.asarray(query, dtype=np.float32).ravel()
    norm = float(np.sqrt(q @ q))
    unit = np.append(q / norm if norm > 0 else q, np.float32(-low)).astype(np.float32)
    # einsum, not ``@``: BLAS threads left spinning slow the next query (see exact_scores).
    projected = np.einsum("ij,j->i", matrix, unit).astype(np.float64)
    scale = passage_weight / (high - low)
    dense = scale * projected[:rows]
    dense_total = scale * float(projected[rows])
    dense_mass = scale * float(projected[rows + 1])  # Σ (cosine - low): the dense restart
    restart_mass = float(sparse_restart.sum()) + dense_mass
    estimate, residual = push_ppr(
        walk.graph.adjacency, walk.graph.degree, sparse_restart, damping=damping,
        threshold=PUSH_TOLERANCE * restart_mass,
    )  # fmt: skip
    total = dense_total + float(estimate.sum()) + float(residual.sum())
    scores = np.where(walk.is_chunk, estimate, 0.0)
    scores[walk.positions_of(ids)] += dense
    return scores / total if total > 0 else scores
