"""Random-hyperplane LSH bucketing with size bounds (HyGRAG's and EraRAG's clustering).

Each unit vector ``z`` gets a ``k``-bit code, bit ``j`` set when ``z · h_j > 0`` for
``k`` random Gaussian hyperplanes ``h_j`` (HyGRAG eq. 8; k = 16). Vectors with equal
codes share a bucket. Buckets are then brought within ``[S_min, S_max]`` (eq. 9):

* **order**: buckets are visited in ascending code order (the authors' code, read as
  a k-bit integer) or, with ``order="gray"``, in Gray-code order, where neighbouring
  buckets differ in one bit (spec 000 §10 A9 a);
* **split**: a bucket of ``S_max`` or more gives ``S_max``-sized clusters, its rest
  goes back to the front of the queue;
* **merge**: consecutive buckets are packed greedily while the pack stays within
  ``S_max``; a pack that cannot take the next bucket is closed;
* **remainders**: a closed pack smaller than ``S_min`` is dropped by the authors' code
  (``remainder="drop"``); by default (``"merge"``, spec A9 b, the paper's
  Merge(B, B_neighbour)) it joins the cluster whose centroid is nearest to its own,
  and a cluster that grows past ``S_max`` that way is split into equal consecutive
  halves (each at least ``S_min`` when ``S_max >= 2 S_min - 1``). So every vector gets a
  cluster. When no pack reaches ``S_min`` at all, the remainders form one cluster
  (the code's tiny-corpus rule), provided there are at least two vectors.

The hyperplanes come from ``numpy.random.default_rng(seed)``, so a seed (HyGRAG: 42,
plus the layer number per layer) reproduces them exactly; nothing needs persisting.
"""

from __future__ import annotations

from collections import deque

import numpy as np

LSH_PLANES = 16  # k, HyGRAG paper Table 8
MIN_SIZE = 5  # S_min, paper Table 8
MAX_SIZE = 50  # S_max, paper Table 8
SEED = 42  # authors' code
ORDERS = ("integer", "gray")
REMAINDERS = ("merge", "drop")


def hyperplanes(dim: int, n_planes: int = LSH_PLANES, seed: int = SEED) -> np.ndarray:
    """``n_planes × dim`` standard-normal hyperplane normals, reproducible from ``seed``."""
    return np.random.default_rng(seed).standard_normal((n_planes, dim))


def signatures(vectors: np.ndarray, planes: np.ndarray) -> np.ndarray:
    """Each row's code: bit j (most significant first) is 1 when ``row · plane_j > 0``."""
    bits = (np.asarray(vectors, dtype=np.float64) @ planes.T) > 0
    weights = 1 << np.arange(planes.shape[0] - 1, -1, -1, dtype=np.int64)
    return bits.astype(np.int64) @ weights


def from_gray(code: int) -> int:
    """The position of ``code`` in the reflected Gray sequence (the inverse Gray map)."""
    value, shift = code, code >> 1
    while shift:
        value ^= shift
        shift >>= 1
    return value


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


def pack_buckets(
    buckets: list[list[int]], *, min_size: int, max_size: int
) -> tuple[list[list[int]], list[list[int]]]:
    """Split and greedily merge ordered buckets: ``(clusters, remainders below min_size)``."""
    queue = deque(buckets)
    clusters: list[list[int]] = []
    remainders: list[list[int]] = []
    current: list[int] = []

    def close(pack: list[int]) -> None:
        if pack:
            (clusters if len(pack) >= min_size else remainders).append(pack)

    while queue:
        bucket = queue.popleft()
        if len(bucket) >= max_size:
            clusters.append(bucket[:max_size])
            if bucket[max_size:]:
                queue.appendleft(bucket[max_size:])
            continue
        if len(current) + len(bucket) <= max_size:
            current = current + bucket
        else:
            close(current)
            current = list(bucket)
    close(current)
    return clusters, remainders


def split_even(members: list[int], max_size: int) -> list[list[int]]:
    """``members`` cut into the fewest consecutive parts of at most ``max_size``, sizes equal
    to within one."""
    parts = max(1, -(-len(members) // max_size))
    cuts = [round(len(members) * p / parts) for p in range(parts + 1)]
    return [members[cuts[p] : cuts[p + 1]] for p in range(parts)]


def merge_remainders(
    z: np.ndarray, clusters: list[list[int]], remainders: list[list[int]], *, max_size: int
) -> list[list[int]]:
    """Each remainder joins the cluster with the nearest centroid; oversized ones split."""
    clusters = [list(c) for c in clusters]
    if not clusters:
        together = [i for r in remainders for i in r]
        return split_even(together, max_size) if len(together) >= 2 else []
    for rest in remainders:
        centroids = _unit(np.vstack([z[c].mean(axis=0) for c in clusters]))
        own = _unit(z[rest].mean(axis=0))
        # Ties go to the earlier cluster (argmax takes the first maximum).
        best = int(np.argmax(centroids @ own))
        clusters[best : best + 1] = split_even(clusters[best] + rest, max_size)
    return clusters


def lsh_buckets(
    vectors: np.ndarray,
    *,
    n_planes: int = LSH_PLANES,
    min_size: int = MIN_SIZE,
    max_size: int = MAX_SIZE,
    seed: int = SEED,
    order: str = "integer",
    remainder: str = "merge",
) -> list[list[int]]:
    """Clusters of row indices of ``vectors`` (see the module docstring).

    Args:
        vectors: ``n × d`` vectors (normalised here).
        n_planes: bits per code (k = 16).
        min_size, max_size: S_min and S_max (5 and 50).
        seed: the hyperplanes' seed.
        order: ``"integer"`` (authors' code) or ``"gray"`` bucket order.
        remainder: ``"merge"`` (every row gets a cluster) or ``"drop"`` (authors' code).

    Returns:
        Clusters in bucket order, each a list of row indices in input order within a
        bucket; with ``remainder="merge"`` every row is in exactly one cluster (when
        there are at least two rows).
    """
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}")
    if remainder not in REMAINDERS:
        raise ValueError(f"remainder must be one of {', '.join(REMAINDERS)}")
    if not 1 <= min_size <= max_size:
        raise ValueError("need 1 <= min_size <= max_size")
    z = _unit(np.asarray(vectors, dtype=np.float64))
    if len(z) == 0:
        return []
    codes = signatures(z, hyperplanes(z.shape[1], n_planes, seed))
    by_code: dict[int, list[int]] = {}
    for row, code in enumerate(codes.tolist()):
        by_code.setdefault(code, []).append(row)
    key = from_gray if order == "gray" else (lambda c: c)
    buckets = [by_code[c] for c in sorted(by_code, key=key)]
    clusters, remainders = pack_buckets(buckets, min_size=min_size, max_size=max_size)
    if remainder == "drop":
        return clusters
    return merge_remainders(z, clusters, remainders, max_size=max_size)
