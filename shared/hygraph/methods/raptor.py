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

    top_k: int = 4  # paper: tree nodes returned, k = 4 for every top-k (spec 002 §1.3 [M])
    max_tokens: int = 3500  # code: context budget of the collapsed tree (RAPTOR's max_tokens)
    retrieval: str = "collapsed"  # paper: collapsed (002 [A Exp.4]) | traversal (RAPTOR's)
    # -- tree build (layer ``tree``): the framework's RAPTOR settings unless marked
    num_layers: int = 5  # framework: levels above the chunks at most (RAPTOR.yaml:33)
    reduction_dimension: int = 10  # framework: UMAP dims; top level: <= dims + 1 nodes
    #   (Option/Method/RAPTOR.yaml:31)
    cluster_threshold: float = 0.1  # framework: soft assignment: posterior to join a cluster
    #   (Option/Method/RAPTOR.yaml:38 threshold)
    max_clusters: int = 50  # framework: most mixture components tried by BIC (TreeGraph.py:37)
    max_cluster_tokens: int = 3500  # framework: re-cluster longer ones
    #   (Option/Method/RAPTOR.yaml:37 max_length_in_cluster)
    summary_length: int = 100  # framework: tokens per summary
    #   (Option/Method/RAPTOR.yaml:32 summarization_length)
    min_cluster_size: int = 3  # paper: parents for clusters of > 2 members (002 [M §4])
    cluster_seed: int = 224  # framework: seed of UMAP, GMM and K-means
    #   (Option/Method/RAPTOR.yaml:41 random_seed)
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

    top_k: int = 4  # paper: tree nodes returned, k = 4 for every top-k (spec 002 §1.3 [M])
    max_tokens: int = 3500  # code: context budget of the collapsed tree (RAPTOR's max_tokens)
    retrieval: str = "collapsed"  # paper: collapsed (002 [A Exp.4]) | traversal
    # -- tree build (layer ``tree-kmeans``)
    num_layers: int = 5  # framework: levels above the chunks at most (RAPTOR.yaml:33)
    reduction_dimension: int = 10  # framework: stop rule: top level has <= dims + 1 nodes
    #   (Option/Method/RAPTOR.yaml:31)
    cluster_size: int = 10  # framework: K = n // cluster_size (RAPTOR.yaml:47 size_of_clusters)
    balanced: bool = True  # framework: size-balanced K-means; false: plain (the paper)
    max_size_percentage: float = 0.2  # framework: balance slack (RAPTOR.yaml:44)
    kmeans_max_iter: int = 10  # framework: K-means rounds (RAPTOR.yaml:46 max_iter)
    kmeans_tol: float = 1e-4  # framework: centre shift to stop (RAPTOR.yaml:45 tol)
    max_cluster_tokens: int = 3500  # framework: longer clusters are split
    #   (Option/Method/RAPTOR.yaml:37 max_length_in_cluster)
    summary_length: int = 100  # framework: tokens per summary
    #   (Option/Method/RAPTOR.yaml:32 summarization_length)
    min_cluster_size: int = 3  # paper: parents for clusters of > 2 members (002 [M §4])
    cluster_seed: int = 224  # framework: seed of UMAP, GMM and K-means
    #   (Option/Method/RAPTOR.yaml:41 random_seed)
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
