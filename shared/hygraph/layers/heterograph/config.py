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
    kcore: str = "core"  # true k-core (spec §8 #9) | degree (paper's literal test)
    kcore_rounding: str = "floor"  # floor (paper) | round (reference code)
    betweenness_samples: int = 10  # sampled sources (paper)
    min_entity_mentions: int = 2  # reference code keeps weight > 1 (spec §8 #10)
    attribute_max_words: int = 2000  # attribute prompt cap (paper, Appendix E)
    prompt_budget: int = 128_000  # tokens of neighbour text per prompt (reference code)
    extractive_words: int = 120  # offline A/H length (our choice)
    leiden_resolution: float = 1.0  # modularity, single level (spec §8 #12)
    leiden_weighted: bool = False  # reference code: unweighted
    cluster_size: int = 39  # small-graph fallback threshold (reference code Hcluster_size)
    semantic_k: int = 10  # neighbours per embedded node (ours; HNSW L0 in the paper)
    knn: str = "exact"  # exact | qdrant (the vector index's HNSW search)
    link_relationships_to_units: bool = False  # R–S edges (spec §8 #16)
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kcore not in ("core", "degree"):
            raise ConfigError("kcore must be core or degree")
        if self.kcore_rounding not in ("floor", "round"):
            raise ConfigError("kcore_rounding must be floor or round")
        if self.knn not in ("exact", "qdrant"):
            raise ConfigError("knn must be exact or qdrant")
