"""Layers: what a method needs built over the chunks, each built once and shared by name.

A layer (chunk vectors, BM25, the entity graph, entity vectors, the hypergraph, the
heterograph ...) declares the layers it ``requires`` and the vector collections it
owns, and knows how to build itself over new chunks, forget a deleted document and
reset. Methods name the layers they read; the facade builds each one once, in
dependency order, however many methods share it.
"""

from hygraph.layers.base import (
    LAYER_MODULES,
    Layer,
    LayerConfig,
    available_layers,
    get_layer,
    layer_order,
)

__all__ = [
    "LAYER_MODULES",
    "Layer",
    "LayerConfig",
    "available_layers",
    "get_layer",
    "layer_order",
]
