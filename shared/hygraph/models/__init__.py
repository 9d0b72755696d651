"""Model protocols and implementations: embedders and LLMs, with disk caches.

Implementations import their heavy dependencies (torch, the openai SDK) only
when first used, so ``import hygraph.models`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hygraph.models.base import LLM, Embedder, LLMResponse, Message
from hygraph.models.cache import DiskCache, cache_key

if TYPE_CHECKING:
    from hygraph.models.embedders import CachedEmbedder, resolve_embedder
    from hygraph.models.llm import CachedLLM, OpenAILLM

__all__ = [
    "LLM",
    "CachedEmbedder",
    "CachedLLM",
    "DiskCache",
    "Embedder",
    "LLMResponse",
    "Message",
    "OpenAILLM",
    "cache_key",
    "resolve_embedder",
]

_LAZY = {
    "CachedEmbedder": "hygraph.models.embedders",
    "resolve_embedder": "hygraph.models.embedders",
    "CachedLLM": "hygraph.models.llm",
    "OpenAILLM": "hygraph.models.llm",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'hygraph.models' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module), name)
