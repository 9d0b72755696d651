"""Build options of the ``hygrag`` layer (spec 000 §3.0; the method's config carries them)."""

from __future__ import annotations

from dataclasses import dataclass

from hygraph.errors import ConfigError
from hygraph.graph.algorithms.lsh import ORDERS, REMAINDERS
from hygraph.layers.base import LayerConfig


@dataclass
class HyGRAGLayerConfig(LayerConfig):
    """HyGRAG's build options; defaults are the paper's (Table 8) unless marked."""

    min_shared_entities: int = 3  # code: l, a chunk-chunk edge at >= l shared entities (A1)
    hub_entity_chunks: int = 0  # ours: entities in more chunks are not counted (0: all are)
    cleora_iterations: int = 2  # paper: Cleora steps (Table 8)
    cleora_weighted: bool = False  # code: edge weights ignored (spec 000 A6)
    lsh_hyperplanes: int = 16  # paper: k, LSH hyperplanes (Table 8)
    lsh_min_cluster_size: int = 5  # paper: S_min, smallest community (Table 8)
    lsh_max_cluster_size: int = 50  # paper: S_max, largest community (Table 8)
    lsh_order: str = "integer"  # code: bucket order: integer | gray (spec 000 A9 a)
    lsh_remainder: str = "merge"  # paper: leftovers Merge(B, B_neighbor) | drop (spec A9 b)
    max_levels: int = 4  # paper: L, summary layers at most (Table 8)
    summary_words: int = 300  # paper: words per summary (Table 8 community_summary_length)
    summary_input_tokens: int = 8000  # ours: prompt input cap per summary (spec A17)
    attach_threshold: float = 0.65  # paper: tau_attach for inserted documents (Table 8)
    seed: int = 42  # code: LSH seed; layer l's hyperplanes use seed + l (spec 000 A9)
    rebuild_fraction: float = 0.99  # code: rebuild when more is new than this share

    def __post_init__(self) -> None:
        if self.lsh_order not in ORDERS:
            raise ConfigError(f"lsh_order must be one of {', '.join(ORDERS)}")
        if self.lsh_remainder not in REMAINDERS:
            raise ConfigError(f"lsh_remainder must be one of {', '.join(REMAINDERS)}")
        if not 1 <= self.lsh_min_cluster_size <= self.lsh_max_cluster_size:
            raise ConfigError("need 1 <= lsh_min_cluster_size <= lsh_max_cluster_size")
        if self.lsh_max_cluster_size < 2:
            raise ConfigError("lsh_max_cluster_size must be at least 2")
        if self.max_levels < 1:
            raise ConfigError("max_levels must be at least 1")
        if self.cleora_iterations < 0 or self.lsh_hyperplanes < 1:
            raise ConfigError("cleora_iterations must be >= 0 and lsh_hyperplanes >= 1")
