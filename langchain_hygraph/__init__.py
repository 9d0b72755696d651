"""LangChain and LangGraph integration for hygraph.

- :class:`HyGraphRetriever`: any registered hygraph method as a LangChain
  ``BaseRetriever`` (sync and async, LCEL, batching, callbacks and streaming events),
  built with ``from_documents(documents, embedding)`` or reopened with
  ``from_persist_dir``. It returns ``k`` passage ``Document``s in the method's order with
  comparable descending scores and the graph evidence behind each, and takes LangChain's
  ``search_type``/``search_kwargs`` (MMR, score threshold, metadata filters).
- :class:`HyGraphEmbeddings`, :class:`LangChainEmbedder`, :class:`LangChainLLM`: model
  adapters in both directions (LangChain ``Embeddings`` and chat models for the core, the
  core's bundled embedder for LangChain).
- ``make_retrieve_node``, ``make_retriever_tool`` and ``make_method_tools`` (loaded on
  first use, listed by ``dir()``): a LangGraph node (it also works in a plain
  ``MessagesState`` graph) and agent tools over a retriever.

The core lives in :mod:`hygraph`; nothing here is specific to one method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:
    import langchain_core  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError(
        "langchain_hygraph needs LangChain: pip install 'hygraph[langchain]'"
    ) from err

from langchain_hygraph.models import HyGraphEmbeddings, LangChainEmbedder, LangChainLLM
from langchain_hygraph.retriever import HyGraphRetriever

if TYPE_CHECKING:
    from langchain_hygraph.graph import (
        RetrievalState,
        make_method_tools,
        make_retrieve_node,
        make_retriever_tool,
    )

__all__ = [
    "HyGraphEmbeddings",
    "HyGraphRetriever",
    "LangChainEmbedder",
    "LangChainLLM",
    "RetrievalState",
    "make_method_tools",
    "make_retrieve_node",
    "make_retriever_tool",
]

# The LangGraph helpers are loaded when asked for.
_LAZY = {
    "RetrievalState": "langchain_hygraph.graph",
    "make_method_tools": "langchain_hygraph.graph",
    "make_retrieve_node": "langchain_hygraph.graph",
    "make_retriever_tool": "langchain_hygraph.graph",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'langchain_hygraph' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names with the lazily loaded ones, so completion and ``dir`` show them."""
    return sorted(set(globals()) | set(_LAZY))
