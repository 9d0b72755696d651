"""``vanilla``: dense top-k over chunks (the VanillaRAG baseline of the 002 framework).

The chunk vectors are part of every index's base layer, so this method builds
nothing of its own; it embeds the question and returns the nearest chunks.
"""

from __future__ import annotations

from dataclasses import dataclass

from hygraph.methods.base import Method, MethodConfig, register
from hygraph.operators.recipe import Step


@dataclass
class VanillaConfig(MethodConfig):
    top_k: int = 5  # ours: passages returned (the 002 framework: top-k chunks by cosine)


@register
class Vanilla(Method):
    name = "vanilla"
    Config = VanillaConfig
    description = "dense top-k chunk retrieval (cosine over chunk embeddings)"
    layers = ("chunks",)
    recipe = (
        Step("chunk.vdb", {"k": "$top_k"}),
        Step("chunk.evidence", {"k": "$top_k"}),
        Step("merge.context", {"sections": "chunks", "titles": {"chunks": "Passages"}}),
    )
