"""Gaussian-mixture clustering with the number of clusters chosen by BIC, soft assignment.

RAPTOR and HiRAG both group embeddings this way: fit a Gaussian mixture for every
candidate number of components, keep the one with the lowest Bayesian information
criterion, and put each point in every cluster whose posterior probability exceeds a
threshold (0.1 in RAPTOR's code), so a text that is about two things joins both.
A point whose posteriors all fall under the threshold still joins its most likely
cluster: nothing is left out of the level above.

scikit-learn's :class:`~sklearn.mixture.GaussianMixture` does the fitting (imported
lazily: slow import). Full covariances on 384-dimensional vectors need far more
points than a level has, so callers reduce dimensions first (RAPTOR: UMAP) or pass
``covariance_type="diag"``; the default here is the library's ``"full"``, as both
papers' code.
"""

from __future__ import annotations

import numpy as np


def _fit(vectors: np.ndarray, k: int, seed: int, covariance_type: str):  # noqa: ANN202
    from sklearn.mixture import GaussianMixture

    model = GaussianMixture(
        n_components=k, random_state=seed, covariance_type=covariance_type, reg_covar=1e-5
    )
    return model.fit(vectors)


def best_k_by_bic(
    vectors: np.ndarray, *, max_clusters: int = 50, seed: int = 0, covariance_type: str = "full"
) -> int:
    """The number of components in ``1..min(max_clusters, n)`` with the lowest BIC.

    Ties go to the smaller number. One point (or none) gives 1.
    """
    x = np.asarray(vectors, dtype=np.float64)
    n = len(x)
    if n <= 1:
        return 1
    best_k, best_bic = 1, np.inf
    for k in range(1, min(max_clusters, n) + 1):
        bic = _fit(x, k, seed, covariance_type).bic(x)
        if bic < best_bic - 1e-9:
            best_k, best_bic = k, bic
    return best_k


def soft_gmm_clusters(
    vectors: np.ndarray,
    *,
    max_clusters: int = 50,
    threshold: float = 0.1,
    seed: int = 0,
    covariance_type: str = "full",
    k: int | None = None,
) -> list[list[int]]:
    """Clusters of row indices: each row joins every cluster with posterior > ``threshold``.

    ``k`` fixes the number of components (otherwise BIC picks it, up to
    ``max_clusters``). Each row is in at least one cluster (its most likely); clusters
    come back in component order, empty ones dropped, each sorted by row.
    """
    x = np.asarray(vectors, dtype=np.float64)
    n = len(x)
    if n == 0:
        return []
    if n == 1:
        return [[0]]
    if k is None:
        k = best_k_by_bic(x, max_clusters=max_clusters, seed=seed, covariance_type=covariance_type)
    k = max(1, min(int(k), n))
    if k == 1:
        return [list(range(n))]
    probs = _fit(x, k, seed, covariance_type).predict_proba(x)
    members: list[list[int]] = [[] for _ in range(k)]
    for row, p in enumerate(probs):
        chosen = np.flatnonzero(p > threshold)
        if chosen.size == 0:
            chosen = np.array([int(np.argmax(p))])
        for c in chosen:
            members[int(c)].append(row)
    return [group for group in members if group]
