"""``bm25``: lexical top-k over chunks with ``bm25s`` (English stopwords, no stemming).

The index itself is the ``bm25`` layer (:mod:`hygraph.layers.bm25`), rebuilt when
the set of chunks changes and kept under ``<index>/bm25/``.
"""

from __future__ import annotations

from dataclasses import dataclass

from hygraph.layers.bm25 import BM25LayerConfig
from hygraph.methods.base import Method, MethodConfig, register
from hygraph.operators.recipe import Step


@dataclass
class BM25Config(MethodConfig, BM25LayerConfig):
    top_k: int = 5  # ours: passages returned (as vanilla)


@register
class BM25(Method):
    name = "bm25"
    Config = BM25Config
    description = "lexical BM25 over chunks (bm25s)"
    layers = ("bm25",)
    recipe = (
        Step("chunk.bm25", {"k": "$top_k"}),
        Step("chunk.evidence", {"k": "$top_k"}),
        Step("merge.context", {"sections": "chunks", "titles": {"chunks": "Passages"}}),
    )
