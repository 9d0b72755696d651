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

* the dense part: ``w / span · (G q̂ - low · g)``. ``low`` and ``span`` come from the
  chunk collection's search with the question (the first stage's dense search, where it
  made one) and with its negation (see
  :meth:`~hygraph.resources.Resources.cosine_range`). The matrix's rows are
  kept grouped in about √n clusters (k-means over the rows made unit length by one
  more coordinate, so that the largest product with the query is the nearest row:
  Bachrach et al., RecSys 2014), and a query multiplies only the rows of the
  :data:`PROBE` clusters whose centres score best, plus those of the passages the
  sparse part reaches: about ``PROBE · √n`` rows instead of ``n``, and only those pages
  of the mapped file are read. A passage in a cluster not probed and not reached keeps
  no score; ``benchmarks/walk_matrix_check.py`` compares the rankings with the
  product over every row and with the whole-graph walk. The matrix's totals row and
  the sum of the unit chunk vectors give the walk's whole mass exactly;
* the sparse part (seeds and first-stage passages): a local push
  (:func:`~hygraph.graph.algorithms.linear_ppr.push_ppr`) whose threshold is
  :data:`PUSH_TOLERANCE` of the whole restart mass, so that each passage's score is
  within ``PUSH_TOLERANCE · deg(passage)`` of the exact walk's (scores are shares of
  the walk's mass), whatever the corpus size;

and the scores are the sum over the total mass, as the whole-graph iteration gives
them. Two scored passages change places only where their exact scores differ by less
than that bound.

On a small corpus the whole-graph walk is cheaper than the push (the seeds hold more of
the restart mass, and the graph is small): below :data:`MIN_CHUNKS` passages queries walk
the whole graph and no matrix is written.

The matrix depends on the graph, the chunk vectors and the walk's settings, and is kept
on disk beside the index (:meth:`~hygraph.kept_matrices.KeptMatrices.kept_matrix`). A build
writes it; an insert that adds less than :data:`REFRESH_SHARE` of the index's chunks
does not (the solve costs about as much as 20 whole-graph walks per block of columns,
more than such an insert), and until a later build writes it again queries walk the
whole graph as before. Where the vectors live on a Qdrant server, the file is keyed by
the graph store's commit counter instead of the collection's write token
(:meth:`~hygraph.kept_matrices.KeptMatrices.vector_stamp`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
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
#: Rows a cluster's centre is learned from at most, and rows given their centre at once.
TRAIN_PER_CLUSTER = 64
ASSIGN_BLOCK = 65_536
#: The build stage charged with the solve.
SOLVE_STAGE = "walk-matrix"
#: Clusters whose rows a query multiplies (of about √n; all of them when there are fewer).
PROBE = 16
#: Each cluster's row after the others: its id, then the row where the cluster ends.
CLUSTER = "\x00cluster:"
#: Part of the kept matrix's key: a new layout never reads an old file.
LAYOUT = 4  # 4: float32 throughout (3 wrote the centres, and so the whole file, in float64)


@dataclass(frozen=True)
class KeptPrior:
    """The kept walk of the dense restart, grouped by cluster (see the module docstring)."""

    ids: list[str]  # the chunks, one per row of ``rows``, cluster after cluster
    rows: np.ndarray  # [G | g]: n × (dim + 1)
    totals: np.ndarray  # column totals over every node of the walk
    cosine_sum: np.ndarray  # the sum of the unit chunk vectors, then their count
    centres: np.ndarray  # a row per cluster, in the rows' scale
    stops: np.ndarray  # the row where each cluster ends
    row_at: np.ndarray  # walk position -> row (-1: not a kept chunk)
    at: np.ndarray  # row -> walk position


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
) -> KeptPrior | None:
    """The kept walk of the dense restart for this graph and these settings: a row of
    ``[G | g]`` per chunk, grouped by cluster, the row of column totals over every node
    of the walk, the sum of the unit chunk vectors (and their count), and a centre per
    cluster.

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
        with res.tracker.stage(SOLVE_STAGE):  # its own line in the build's cost report
            return _solve(res, view, walk, damping)

    kept = res.kept_matrix(name, key, solve if make else None)
    found = None if kept is None else _unpack(*kept, walk)
    if found is not None:
        view.keep(memo, key, found)
    return found


def _unpack(ids: list[str], matrix: np.ndarray, walk: PassageWalk) -> KeptPrior | None:
    """The parts of a kept matrix (None when it is not in this layout)."""
    try:
        n = ids.index(TOTALS)
    except ValueError:
        return None
    clusters = ids[n + 2 :]
    if ids[n + 1] != COSINE_SUM or not all(c.startswith(CLUSTER) for c in clusters):
        return None
    at = walk.positions_of(ids[:n])
    row_at = np.full(len(walk.graph.ids), -1, dtype=np.int64)
    row_at[at[at >= 0]] = np.flatnonzero(at >= 0)
    return KeptPrior(
        ids=ids[:n], rows=matrix[:n], totals=np.asarray(matrix[n]),
        cosine_sum=np.asarray(matrix[n + 1]), centres=np.asarray(matrix[n + 2 :]),
        stops=np.array([int(c[len(CLUSTER):]) for c in clusters], dtype=np.int64),
        row_at=row_at, at=at,
    )  # fmt: skip


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
    order, stops, centres = _clusters(out[:-2])
    ids = [ids[i] for i in order]
    ends = [f"{CLUSTER}{stop}" for stop in stops]
    rows = np.vstack([out[:-2][order], out[-2:], centres.astype(np.float32)])
    return [*ids, TOTALS, COSINE_SUM, *ends], rows


def _clusters(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows grouped in about √n clusters: ``(row order, each cluster's end, centres)``.

    Each row gets one more coordinate, ``√(M² - |r|²)`` with ``M`` the largest norm, so
    every row has length ``M`` and the best product with a query (whose extra
    coordinate is 0) is the nearest row; k-means (scipy) then groups near rows. It
    learns the centres from at most :data:`TRAIN_PER_CLUSTER` rows a cluster (a sample,
    as FAISS does) and then gives every row its nearest centre in blocks, so the cost
    stays a few matrix products at any size. The centres are kept without the extra
    coordinate, which a query never weighs.
    """
    from scipy.cluster.vq import kmeans2

    n = len(rows)
    k = int(round(np.sqrt(n)))
    if k <= PROBE:  # a query probes them all: one cluster
        return np.arange(n), np.array([n]), rows.mean(axis=0, keepdims=True, dtype=np.float64)
    norms = np.linalg.norm(rows, axis=1).astype(np.float64)
    longest = float(norms.max()) or 1.0
    lifted = np.column_stack(
        [rows / longest, np.sqrt(np.maximum(0.0, 1.0 - (norms / longest) ** 2))]
    )
    sample = lifted
    if n > TRAIN_PER_CLUSTER * k:
        sample = lifted[np.random.default_rng(0).choice(n, TRAIN_PER_CLUSTER * k, replace=False)]
    with warnings.catch_warnings():  # a cluster left empty holds no rows: harmless
        warnings.simplefilter("ignore", UserWarning)
        learned, _ = kmeans2(sample, k, iter=10, minit="points", seed=0)
    # Nearest centre: the largest x·c - |c|²/2 (every lifted row has length 1).
    half = 0.5 * np.einsum("ij,ij->i", learned, learned)
    labels = np.concatenate([
        np.argmax(lifted[i : i + ASSIGN_BLOCK] @ learned.T - half, axis=1)
        for i in range(0, n, ASSIGN_BLOCK)
    ])  # fmt: skip
    order = np.argsort(labels, kind="stable")
    stops = np.cumsum(np.bincount(labels, minlength=k))
    sums = np.zeros((k, rows.shape[1]), dtype=np.float64)
    np.add.at(sums, labels, rows)
    centres = sums / np.maximum(1, np.bincount(labels, minlength=k))[:, None]
    return order, stops, centres


def walk_scores(
    walk: PassageWalk,
    prior: KeptPrior,
    query: np.ndarray,
    sparse_restart: np.ndarray,
    *,
    damping: float,
    passage_weight: float,
    low: float,
    high: float,
) -> np.ndarray:
    """Each walk position's share of the walk's mass (passages; entities 0), as the whole
    walk from ``sparse_restart`` plus the dense passage restart gives it (see above),
    for the passages of the probed clusters and those the sparse part reaches (the
    others: 0).

    ``low`` and ``high``: the least and the greatest cosine of the question to a passage
    (``high > low``).
    """
    from hygraph.graph.algorithms.linear_ppr import push_ppr

    q = np.asarray(query, dtype=np.float32).ravel()
    norm = float(np.sqrt(q @ q))
    unit = np.append(q / norm if norm > 0 else q, np.float32(-low)).astype(np.float32)
    scale = passage_weight / (high - low)
    dense_total = scale * float(prior.totals @ unit)
    dense_mass = scale * float(prior.cosine_sum @ unit)  # Σ (cosine - low): the dense restart
    restart_mass = float(sparse_restart.sum()) + dense_mass
    estimate, residual = push_ppr(
        walk.graph.adjacency, walk.graph.degree, sparse_restart, damping=damping,
        threshold=PUSH_TOLERANCE * restart_mass,
    )  # fmt: skip
    total = dense_total + float(estimate.sum()) + float(residual.sum())
    scores = np.where(walk.is_chunk, estimate, 0.0)
    probed = _probed(prior, unit)
    # The rows of passages the push reached outside the probed clusters, in row order:
    # marked in a byte a row (each reached position has its own row), no sort.
    extra = np.zeros(len(prior.ids), dtype=bool)
    reached = prior.row_at[np.flatnonzero(scores)]
    extra[reached[reached >= 0]] = True
    for start, stop in probed:
        extra[start:stop] = False
    # The probed clusters' rows are read in place (slices of the mapped file), the rows
    # only the push reached are gathered; each row is added once.
    # einsum, not ``@``: BLAS threads left spinning slow the next query (see exact_scores).
    for rows in [*(slice(a, b) for a, b in probed), np.flatnonzero(extra)]:
        dense = scale * np.einsum("ij,j->i", prior.rows[rows], unit).astype(np.float64)
        scores[prior.at[rows]] += dense
    return scores / total if total > 0 else scores


def _probed(prior: KeptPrior, unit: np.ndarray) -> list[tuple[int, int]]:
    """The rows (start, stop) of the :data:`PROBE` clusters whose centres score best with
    ``unit``, in row order."""
    k = len(prior.stops)
    if k <= PROBE:
        return [(0, len(prior.ids))]
    best = np.argpartition(-np.einsum("ij,j->i", prior.centres, unit), PROBE - 1)[:PROBE]
    starts = np.concatenate([[0], prior.stops[:-1]])
    return [(int(starts[c]), int(prior.stops[c])) for c in np.sort(best)]
