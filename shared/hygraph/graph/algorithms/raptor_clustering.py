"""Clustering for summary trees: RAPTOR's UMAP + Gaussian mixture, and RAPTOR-K's K-means.

**RAPTOR** (spec 002 §2.2, reference-code knobs) groups the nodes of one tree level in
two stages:

1. *global*: the vectors are reduced with UMAP to ``dims`` (10) dimensions, cosine
   metric, ``n_neighbors = int(sqrt(n - 1))``; a Gaussian mixture whose number of
   components is chosen by BIC clusters them, and each point joins every component
   whose posterior exceeds ``threshold`` (0.1): soft assignment, so a node about two
   things joins both clusters;
2. *local*: inside each global cluster the same is done again on a UMAP of that
   cluster alone (``n_neighbors`` 10). A global cluster of at most ``dims + 1``
   points is too small to reduce and stays one cluster.

A cluster whose texts together exceed ``max_tokens`` (3500) is clustered again on its
own, recursively, so every summary prompt fits. When re-clustering cannot split a
cluster (every point lands in one group, as for a group too small to reduce), it is
split with K-means into ``ceil(tokens / max_tokens)`` parts instead: our addition,
which guarantees the recursion ends (the reference code can recurse forever there).

**RAPTOR-K** (spec 002 §5.1 and the ``TreeGraphBalanced`` knobs of §2.2) uses K-means
with ``K = n // size`` (size 10) and hard assignment. The authors' code balances the
sizes: after each assignment step, a cluster holding more than ``n/K + p·n/K`` points
(``p`` = 0.2) gives its points furthest from its centre to the nearest cluster that
holds fewer than ``n/K``; at most ``max_iter`` (10) rounds, until the centres move
less than ``tol`` (1e-4). ``balanced=False`` is plain K-means (the paper says only
"K-means"). The same token cap applies.

UMAP (``umap-learn``) and scikit-learn are imported on first use: both are slow to
import. Results are deterministic for a given seed (UMAP then runs single-threaded).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence

import numpy as np

from hygraph.graph.algorithms.gmm import soft_gmm_clusters

#: RAPTOR's reference-code defaults (spec 002 §2.2).
REDUCTION_DIMENSION = 10
CLUSTER_THRESHOLD = 0.1
MAX_CLUSTER_TOKENS = 3500
RANDOM_SEED = 224
LOCAL_NEIGHBORS = 10
MAX_CLUSTERS = 50
#: RAPTOR-K's (``TreeGraphBalanced``) defaults.
CLUSTER_SIZE = 10
MAX_SIZE_PERCENTAGE = 0.2
KMEANS_MAX_ITER = 10
KMEANS_TOL = 1e-4

Groups = list[list[int]]


def _unique(groups: Sequence[Sequence[int]]) -> Groups:
    """Non-empty groups, each sorted, duplicates (same members) dropped, first kept."""
    seen: set[tuple[int, ...]] = set()
    out: Groups = []
    for group in groups:
        key = tuple(sorted(set(int(i) for i in group)))
        if key and key not in seen:
            seen.add(key)
            out.append(list(key))
    return out


def umap_reduce(
    vectors: np.ndarray, dims: int, n_neighbors: int, *, metric: str = "cosine", seed: int = 0
) -> np.ndarray:
    """``vectors`` embedded by UMAP into ``dims`` dimensions (needs ``dims <= n - 2``)."""
    import umap

    n = len(vectors)
    model = umap.UMAP(
        n_neighbors=max(2, min(int(n_neighbors), n - 1)),
        n_components=int(dims),
        metric=metric,
        random_state=seed,
    )
    with warnings.catch_warnings():
        # A fixed random_state makes UMAP single-threaded, and says so each time.
        warnings.simplefilter("ignore", UserWarning)
        return np.asarray(model.fit_transform(np.asarray(vectors, dtype=np.float32)))


def umap_gmm_clusters(
    vectors: np.ndarray,
    *,
    dims: int = REDUCTION_DIMENSION,
    threshold: float = CLUSTER_THRESHOLD,
    seed: int = RANDOM_SEED,
    max_clusters: int = MAX_CLUSTERS,
    local_neighbors: int = LOCAL_NEIGHBORS,
    metric: str = "cosine",
) -> Groups:
    """RAPTOR's two-stage soft clustering of ``vectors`` (row indices per cluster).

    Fewer than ``dims + 2`` points (too few to reduce) form one cluster.
    """
    x = np.asarray(vectors, dtype=np.float32)
    n = len(x)
    if n == 0:
        return []
    if n <= dims + 1:
        return [list(range(n))]
    from threadpoolctl import threadpool_limits

    # The mixtures are small (10 dimensions): threaded BLAS only adds contention.
    with threadpool_limits(limits=1):
        return _two_stage(x, dims, threshold, seed, max_clusters, local_neighbors, metric)


def _two_stage(
    x: np.ndarray,
    dims: int,
    threshold: float,
    seed: int,
    max_clusters: int,
    local_neighbors: int,
    metric: str,
) -> Groups:
    """The global then local UMAP + GMM stages of :func:`umap_gmm_clusters`."""
    n = len(x)
    neighbors = int(math.sqrt(n - 1))
    reduced = umap_reduce(x, min(dims, n - 2), neighbors, metric=metric, seed=seed)
    out: Groups = []
    for members in soft_gmm_clusters(
        reduced, max_clusters=max_clusters, threshold=threshold, seed=seed
    ):
        if len(members) <= dims + 1:
            out.append(members)
            continue
        local = umap_reduce(x[members], dims, local_neighbors, metric=metric, seed=seed)
        for sub in soft_gmm_clusters(
            local, max_clusters=max_clusters, threshold=threshold, seed=seed
        ):
            out.append([members[i] for i in sub])
    return _unique(out)


def kmeans_labels(vectors: np.ndarray, k: int, *, seed: int = RANDOM_SEED) -> np.ndarray:
    """Plain K-means labels (scikit-learn, one seeded run)."""
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    x = np.asarray(vectors, dtype=np.float32)
    k = max(1, min(int(k), len(x)))
    with warnings.catch_warnings():
        # Duplicate points give fewer distinct clusters than asked: callers handle it.
        warnings.simplefilter("ignore", ConvergenceWarning)
        return KMeans(n_clusters=k, random_state=seed, n_init=1).fit_predict(x)


def _sq_distances(x: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances, rows × centres (without an n × k × d temporary)."""
    d = (x * x).sum(1)[:, None] - 2.0 * x @ centres.T + (centres * centres).sum(1)[None, :]
    return np.maximum(d, 0.0)


def balanced_kmeans_labels(
    vectors: np.ndarray,
    k: int,
    *,
    max_size_percentage: float = MAX_SIZE_PERCENTAGE,
    max_iter: int = KMEANS_MAX_ITER,
    tol: float = KMEANS_TOL,
    seed: int = RANDOM_SEED,
) -> np.ndarray:
    """Size-balanced K-means labels (see the module docstring).

    Centres start from k-means++ seeding; a cluster over ``n/k·(1 + max_size_percentage)``
    points hands its points furthest from its centre to the nearest cluster under
    ``n/k`` until it fits.
    """
    from sklearn.cluster import kmeans_plusplus

    x = np.asarray(vectors, dtype=np.float64)
    n = len(x)
    k = max(1, min(int(k), n))
    if k == 1:
        return np.zeros(n, dtype=int)
    centres, _ = kmeans_plusplus(x, k, random_state=seed)
    mean_size = n / k
    cap = mean_size + max_size_percentage * mean_size
    labels = np.zeros(n, dtype=int)
    for _ in range(max(1, max_iter)):
        dist = _sq_distances(x, centres)
        labels = dist.argmin(1)
        sizes = np.bincount(labels, minlength=k)
        for c in np.argsort(-sizes, kind="stable"):
            if sizes[c] <= cap:
                continue
            mine = np.flatnonzero(labels == c)
            for row in mine[np.argsort(-dist[mine, c], kind="stable")]:
                if sizes[c] <= cap:
                    break
                under = np.flatnonzero(sizes < mean_size)
                if under.size == 0:
                    break
                target = int(under[np.argmin(dist[row, under])])
                labels[row] = target
                sizes[c] -= 1
                sizes[target] += 1
        moved = centres.copy()
        for c in range(k):
            if sizes[c]:
                moved[c] = x[labels == c].mean(0)
        shift = float(np.linalg.norm(moved - centres))
        centres = moved
        if shift <= tol:
            break
    return labels


def groups_of(labels: np.ndarray) -> Groups:
    """Row indices per label, in label order."""
    labels = np.asarray(labels)
    return _unique([np.flatnonzero(labels == c).tolist() for c in np.unique(labels)])


def kmeans_clusters(
    vectors: np.ndarray,
    *,
    size: int = CLUSTER_SIZE,
    balanced: bool = True,
    max_size_percentage: float = MAX_SIZE_PERCENTAGE,
    max_iter: int = KMEANS_MAX_ITER,
    tol: float = KMEANS_TOL,
    seed: int = RANDOM_SEED,
) -> Groups:
    """RAPTOR-K's hard clusters: ``K = n // size`` (at least 1), balanced or plain."""
    n = len(vectors)
    if n == 0:
        return []
    k = max(1, n // max(1, size))
    if balanced:
        labels = balanced_kmeans_labels(
            vectors, k, max_size_percentage=max_size_percentage, max_iter=max_iter, tol=tol,
            seed=seed,
        )  # fmt: skip
    else:
        labels = kmeans_labels(vectors, k, seed=seed)
    return groups_of(labels)


def _split_apart(vectors: np.ndarray, members: list[int], parts: int, seed: int) -> Groups:
    """``members`` in ``parts`` K-means groups; halves by position if K-means cannot split."""
    parts = max(2, min(parts, len(members)))
    groups = [[members[i] for i in g] for g in groups_of(kmeans_labels(vectors[members], parts,
                                                                       seed=seed))]  # fmt: skip
    if len(groups) < 2:  # identical points: K-means finds one centre
        half = len(members) // 2
        groups = [members[:half], members[half:]]
    return groups


def cap_tokens(
    vectors: np.ndarray,
    tokens: Sequence[int],
    groups: Groups,
    recluster: Callable[[np.ndarray], Groups],
    *,
    max_tokens: int = MAX_CLUSTER_TOKENS,
    seed: int = RANDOM_SEED,
) -> Groups:
    """Re-cluster every group whose texts exceed ``max_tokens``, recursively.

    ``recluster`` clusters the vectors of one group (row indices into that group). A
    group it cannot split is split by K-means (see the module docstring); a single
    point is kept whatever its length.
    """
    x = np.asarray(vectors)

    def fits(group: list[int]) -> bool:
        return len(group) == 1 or sum(int(tokens[i]) for i in group) <= max_tokens

    def settle(group: list[int], parent: list[int] | None) -> Groups:
        if fits(group):
            return [group]
        if parent is not None and set(group) == set(parent):  # no progress: force a split
            size = sum(int(tokens[i]) for i in group)
            subs = _split_apart(x, group, math.ceil(size / max(1, max_tokens)), seed)
        else:
            subs = [[group[i] for i in g] for g in recluster(x[group])]
        out: Groups = []
        for sub in subs:
            out.extend(settle(sub, group))
        return out

    out: Groups = []
    for group in groups:
        out.extend(settle(list(group), None))
    return _unique(out)


def raptor_clusters(
    vectors: np.ndarray,
    tokens: Sequence[int],
    *,
    dims: int = REDUCTION_DIMENSION,
    threshold: float = CLUSTER_THRESHOLD,
    max_tokens: int = MAX_CLUSTER_TOKENS,
    seed: int = RANDOM_SEED,
    max_clusters: int = MAX_CLUSTERS,
) -> Groups:
    """RAPTOR's clusters of one level: UMAP + GMM, soft, under the token cap."""

    def recluster(x: np.ndarray) -> Groups:
        return umap_gmm_clusters(
            x, dims=dims, threshold=threshold, seed=seed, max_clusters=max_clusters
        )

    x = np.asarray(vectors, dtype=np.float32)
    return cap_tokens(x, tokens, recluster(x), recluster, max_tokens=max_tokens, seed=seed)


def raptor_k_clusters(
    vectors: np.ndarray,
    tokens: Sequence[int],
    *,
    size: int = CLUSTER_SIZE,
    balanced: bool = True,
    max_size_percentage: float = MAX_SIZE_PERCENTAGE,
    max_iter: int = KMEANS_MAX_ITER,
    tol: float = KMEANS_TOL,
    max_tokens: int = MAX_CLUSTER_TOKENS,
    seed: int = RANDOM_SEED,
) -> Groups:
    """RAPTOR-K's clusters of one level: K-means (``K = n // size``), hard, under the cap.

    An over-long cluster is split by plain K-means into ``ceil(tokens / max_tokens)``.
    """
    x = np.asarray(vectors, dtype=np.float32)
    groups = kmeans_clusters(
        x, size=size, balanced=balanced, max_size_percentage=max_size_percentage,
        max_iter=max_iter, tol=tol, seed=seed,
    )  # fmt: skip

    def recluster(sub: np.ndarray) -> Groups:
        return [list(range(len(sub)))]  # cap_tokens then splits by token count

    return cap_tokens(x, tokens, groups, recluster, max_tokens=max_tokens, seed=seed)
