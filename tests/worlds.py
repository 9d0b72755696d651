"""Building blocks of the hand-made test worlds: resources over a store, without a model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from doubles import WordEmbedder

from hygraph.manifest import Manifest
from hygraph.resources import Resources
from hygraph.usage import UsageTracker


def word_resources(
    store: Any,
    vectors: Any,
    path: Path,
    *,
    llm: Any = None,
    llm_in_retrieval: bool = False,
    dim: int = 64,
) -> Resources:
    """:class:`Resources` over ``store`` and ``vectors`` with the bag-of-words embedder.

    The manifest is an offline index's with the papers' 1200/100 chunking; ``llm`` is a
    scripted double or None. Lets operator tests run on a hand-made graph, no index built.
    """
    path.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(embedder="words", dim=None, chunk_size=1200, chunk_overlap=100,
                        tokenizer="t", vectors={"backend": "edge", "path": "qdrant"},
                        extractor="offline")  # fmt: skip
    return Resources(path=path, store=store, vectors=vectors, manifest=manifest,
                     embedder=WordEmbedder(dim), llm=llm, tracker=UsageTracker(),
                     progress=False, cache_dir=path / "cache",
                     llm_in_retrieval=llm_in_retrieval)  # fmt: skip
