"""Semantic matching within a community: H → S/A edges (spec 004, §3.3 step 3; §8 item 14).

Each high-level element (H) is linked to the semantically related members of
the community it was generated from, instead of to all of them (paper,
Algorithm 2): K-means over the embeddings of all S, A and H nodes with
``K = sqrt(n)`` clusters (the paper's population; ``ceil`` as in the authors'
code), then each H is linked to the S/A nodes that share both its community and
its cluster.

* Small-graph fallback (authors' code, ``Hcluster_size = 39``): when the mean
  cluster size ``n / K`` is at most ``cluster_size``, K-means is skipped and
  every H is linked to all S/A of its community.
* Nearest fallback (our choice, spec §8 #14): an H that shares its cluster with
  no S/A of its community is linked to the single most similar (cosine) S/A of
  its community, so that no H is left without a member edge.

K-means is scikit-learn's (Lloyd, ``n_init=1``, seeded) where the authors use
``faiss.Kmeans``; the paper names MacQueen's K-means. Vectors are expected
L2-normalised, so the dot product is the cosine.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np

HIGH_LEVEL = "H"
MEMBER_TYPES = frozenset({"S", "A"})


def kmeans_k(n: int) -> int:
    """Number of K-means clusters, ``ceil(sqrt(n))``, at least 1."""
    return max(math.ceil(math.sqrt(max(n, 0))), 1)


def _cluster_labels(vectors: np.ndarray, k: int, seed: int) -> np.ndarray:
    """K-means labels for each row (scikit-learn, imported lazily: slow import)."""
    from sklearn.cluster import KMeans

    model = KMeans(n_clusters=k, random_state=seed, n_init=1)
    return model.fit_predict(np.asarray(vectors, dtype=np.float32))


def _members_by_key(
    rows: Sequence[int], keys: Sequence[object], types: Sequence[str]
) -> dict[object, list[int]]:
    """S/A row indices grouped by ``keys[row]``."""
    groups: dict[object, list[int]] = defaultdict(list)
    for row in rows:
        if types[row] in MEMBER_TYPES:
            groups[keys[row]].append(row)
    return groups


def _nearest(vectors: np.ndarray, row: int, candidates: list[int]) -> int:
    """The candidate row most similar (dot product) to ``row``; ties → first listed."""
    sims = vectors[candidates] @ vectors[row]
    return candidates[int(np.argmax(sims))]


def link_high_level(
    ids: Sequence[str],
    types: Sequence[str],
    vectors: np.ndarray,
    communities: Mapping[str, int],
    *,
    seed: int = 0,
    cluster_size: int = 39,
    nearest_fallback: bool = True,
) -> list[tuple[str, str]]:
    """``(h_id, member_id)`` edges between each H and S/A nodes of its own community.

    Args:
        ids, types, vectors: aligned rows over the S, A and H nodes; vectors are
            L2-normalised, shape ``(n, d)``.
        communities: node id → community; rows missing from it are ignored.
        seed: K-means seed.
        cluster_size: skip K-means when ``n / K <= cluster_size`` (authors' code: 39).
        nearest_fallback: link an H left without members to its community's closest S/A.

    Returns:
        Unique pairs, sorted.
    """
    n = len(ids)
    if n == 0:
        return []
    vectors = np.asarray(vectors)
    k = kmeans_k(n)
    if n / k <= cluster_size:
        clusters: Sequence[object] = [0] * n
    else:
        clusters = _cluster_labels(vectors, k, seed).tolist()
    rows = [row for row in range(n) if ids[row] in communities]
    community = [communities.get(node) for node in ids]
    by_community = _members_by_key(rows, community, types)
    by_cell = _members_by_key(rows, list(zip(community, clusters, strict=True)), types)
    links: set[tuple[str, str]] = set()
    for row in rows:
        if types[row] != HIGH_LEVEL:
            continue
        members = by_cell.get((community[row], clusters[row]), [])
        if not members and nearest_fallback and by_community.get(community[row]):
            members = [_nearest(vectors, row, by_community[community[row]])]
        links.update((ids[row], ids[member]) for member in members)
    return sorted(links)
