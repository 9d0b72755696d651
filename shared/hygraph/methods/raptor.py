"""``raptor`` and ``raptor-k``: retrieval over a recursive summary tree (spec 002).

RAPTOR (Sarthi et al., ICLR 2024, as re-implemented in the 002 framework) clusters
the chunks, summarises each cluster, and repeats over the summaries, building a tree
bottom-up (layer ``tree``: UMAP + Gaussian mixture with BIC, soft assignment).
RAPTOR-K (002 §5.1) is the same method with K-means clustering (layer
``tree-kmeans``: ``K = n // 10``, size-balanced as the authors' code), proposed
because the GMM version did not finish building on the largest corpora.

Retrieval (002 Table 3: Q vector → node VDB over all layers → direct generation) is
the *collapsed tree*: the question's vector against every node of the tree, chunks and
summaries of every level alike, top ``top_k``, kept in order while they fit
``max_tokens``. ``retrieval="traversal"`` is RAPTOR's other mode (top-k per level from
the roots down). The passage ranking is the order in which chunks first appear in the
chosen nodes' provenance; a summary's chunks are ordered by cosine to the question.

Both trees can live in one index (distinct layers, collections and node ids); tree
options are build options of the layer and are fixed when the index first builds it.
"""

from __future__ import annotations

from dataclasses import dataclass

from hygraph.errors import ConfigError
from hygraph.methods.base import Method, MethodConfig, register
from hygraph.operators.recipe import Step


@dataclass
class RaptorConfig(MethodConfig):
    """RAPTOR's options: spec 002 defaults; tree knobs from RAPTOR's reference code [C]."""

    top_k: int = 4  # nodes retrieved: k = 4 for every top-k (002 §1.3 [M])
    max_tokens: int = 3500  # context budget of the collapsed tree (RAPTOR code max_tokens)
    retrieval: str = "collapsed"  # collapsed (paper, 002 [A Exp.4]) | traversal (RAPTOR)
    # -- tree build (layer ``tree``), RAPTOR's reference code [C] unless marked
    num_layers: int = 5  # levels above the chunks at most (RAPTOR reference code)
    reduction_dimension: int = 10  # UMAP dims; top level: <= dims + 1 nodes (reference code)
    cluster_threshold: float = 0.1  # soft assignment: posterior to join a cluster (reference code)
    max_clusters: int = 50  # most mixture components tried by BIC (reference code)
    max_cluster_tokens: int = 3500  # re-cluster longer ones (reference code max_length_in_cluster)
    summary_length: int = 100  # tokens per summary (reference code summarization_length)
    min_cluster_size: int = 3  # parents for clusters of > 2 members (002 paper [M §4])
    cluster_seed: int = 224  # seed of UMAP, GMM and K-means (reference code random_seed)
    summaries: str = "auto"  # ours: auto (LLM if configured, else extractive) | extractive
    update: str = "local"  # ours: local (re-summarise changed clusters) | rebuild (re-cluster)
    rebuild_fraction: float = 0.5  # ours: local updates re-cluster once this share changed

    def __post_init__(self) -> None:
        _check(self)


def _check(config: RaptorConfig | RaptorKConfig) -> None:
    if config.retrieval not in ("collapsed", "traversal"):
        raise ConfigError("retrieval must be collapsed or traversal")
    if config.summaries not in ("auto", "extractive"):
        raise ConfigError("summaries must be auto or extractive")
    if config.update not in ("local", "rebuild"):
        raise ConfigError("update must be local or rebuild")


def tree_recipe(tree: str) -> tuple[Step, ...]:
    """The recipe over the tree layer ``tree``: collapsed tree (or traversal), then context."""
    params = {"tree": tree, "k": "$top_k", "max_tokens": "$max_tokens"}
    return (
        Step("question.embed"),
        Step("tree.collapsed", params, when="retrieval=collapsed"),
        Step("tree.traverse", params, when="retrieval=traversal"),
        Step("merge.context", {"sections": "tree", "titles": {"tree": "Tree nodes"},
                               "ranking": "tree"}),
    )  # fmt: skip


@register
class Raptor(Method):
    name = "raptor"
    Config = RaptorConfig
    description = "RAPTOR: collapsed-tree retrieval over UMAP + GMM cluster summaries"
    layers = ("chunks", "tree")
    recipe = tree_recipe("tree")


@dataclass
class RaptorKConfig(MethodConfig):
    """RAPTOR-K's options: RAPTOR's, with the K-means knobs of the authors' code [C]."""

    top_k: int = 4  # nodes retrieved: k = 4 for every top-k (002 §1.3 [M])
    max_tokens: int = 3500  # context budget of the collapsed tree (RAPTOR code max_tokens)
    retrieval: str = "collapsed"  # collapsed (paper, 002 [A Exp.4]) | traversal
    # -- tree build (layer ``tree-kmeans``)
    num_layers: int = 5  # levels above the chunks at most (authors' code)
    reduction_dimension: int = 10  # stop rule: top level has <= dims + 1 nodes (authors' code)
    cluster_size: int = 10  # K = n // cluster_size (authors' code size_of_clusters)
    balanced: bool = True  # size-balanced K-means (authors' code); false: plain (paper)
    max_size_percentage: float = 0.2  # balance slack (authors' code max_size_percentage)
    kmeans_max_iter: int = 10  # K-means rounds (authors' code max_iter)
    kmeans_tol: float = 1e-4  # centre shift to stop (authors' code tol)
    max_cluster_tokens: int = 3500  # longer clusters are split (RAPTOR reference code, as RAPTOR)
    summary_length: int = 100  # tokens per summary (reference code summarization_length)
    min_cluster_size: int = 3  # parents for clusters of > 2 members (002 paper [M §4])
    cluster_seed: int = 224  # seed of UMAP, GMM and K-means (reference code random_seed)
    summaries: str = "auto"  # ours: auto (LLM if configured, else extractive) | extractive
    update: str = "local"  # ours: local (re-summarise changed clusters) | rebuild (re-cluster)
    rebuild_fraction: float = 0.5  # ours: local updates re-cluster once this share changed

    def __post_init__(self) -> None:
        _check(self)


@register
class RaptorK(Method):
    name = "raptor-k"
    Config = RaptorKConfig
    description = "RAPTOR-K: collapsed-tree retrieval over K-means cluster summaries"
    layers = ("chunks", "tree-kmeans")
    recipe = tree_recipe("tree-kmeans")
