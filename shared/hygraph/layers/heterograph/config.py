"""The heterograph layer's build options, collection and progress task.

Kept apart from the layer class so that every step module can import the config
type and the collection name without importing the layer (and its steps) back.
The field names are the build fields of ``noderag``'s method config, so a method
config hands them over unchanged (:meth:`~hygraph.layers.base.Layer.config_from`).
"""

from __future__ import annotations

from dataclasses import dataclass

from hygraph.errors import ConfigError
from hygraph.layers.base import LayerConfig

#: The vector collection of the embedded S, A and H nodes (payload ``kind``: the letter).
NODE_COLLECTION = "noderag"
#: The progress task marking the chunks already in the layer (named for existing indexes).
LAYER_TASK = "layer:noderag"


@dataclass
class HeterographConfig(LayerConfig):
    # -- build (spec §3.5)
    kcore: str = "core"  # code: true k-core (nx.k_core; spec 004 §8 #9) | degree (the paper)
    kcore_rounding: str = "floor"  # paper: floor | round (the authors' code; spec 004 §8 #9)
    betweenness_samples: int = 10  # paper: sampled sources (spec 004 §3.5)
    min_entity_mentions: int = 2  # code: keeps entities of weight > 1 (spec 004 §8 #10)
    attribute_max_words: int = 2000  # paper: attribute prompt cap (Appendix E)
    prompt_budget: int = 128_000  # code: tokens of neighbour text per prompt (spec 004 §3.5)
    extractive_words: int = 120  # ours: offline A/H length
    leiden_resolution: float = 1.0  # code: modularity at resolution 1, single level (§8 #12)
    leiden_weighted: bool = False  # code: unweighted (spec 004 §8 #12)
    cluster_size: int = 39  # code: small-graph fallback threshold
    #   (NodeRAG/config/Node_config.yaml:44 Hcluster_size)
    semantic_k: int = 10  # ours: neighbours per embedded node (HNSW L0 in the paper)
    knn: str = "exact"  # ours: exact kNN | qdrant (the vector index's HNSW; spec 004 §8 #20)
    link_relationships_to_units: bool = False  # code: R–S edges, off (spec 004 §8 #16)
    seed: int = 0  # ours: seed of the sampled betweenness, Leiden and K-means

    def __post_init__(self) -> None:
        if self.kcore not in ("core", "degree"):
            raise ConfigError("kcore must be core or degree")
        if self.kcore_rounding not in ("floor", "round"):
            raise ConfigError("kcore_rounding must be floor or round")
        if self.knn not in ("exact", "qdrant"):
            raise ConfigError("knn must be exact or qdrant")
