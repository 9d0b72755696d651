"""LlamaIndex integration for hygraph.

- :class:`HyGraphIndex`: a hygraph index as a LlamaIndex managed index. It is built with
  ``from_documents`` (or from nodes, kept as the chunks), gives retrievers, query engines
  and chat engines, supports ``insert``/``delete_ref_doc``, and persists as its directory
  (``from_persist_dir``) or through ``storage_context.persist`` and
  ``load_index_from_storage``.
- :class:`HyGraphRetriever`: any registered hygraph method as a ``BaseRetriever``: exactly
  ``top_k`` passages in the method's order, each with the graph evidence that led to it
  (or, with ``items="evidence"``, the method's evidence of every kind).
- :class:`HyGraphEmbedding`, :class:`LlamaIndexEmbedder`, :class:`LlamaIndexLLM`: model
  adapters in both directions (``Settings.embed_model``/``Settings.llm`` are honoured).
- :class:`HyGraphPropertyGraphStore`, :class:`HyGraphExtractor` and
  :class:`HyGraphSubRetriever` (loaded on first use): the index's graph for
  LlamaIndex's ``PropertyGraphIndex``.

The core lives in :mod:`hygraph`; nothing here is specific to one method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

try:
    import llama_index.core  # noqa: F401
except ImportError as err:  # pragma: no cover - depends on the environment
    raise ImportError(
        "llama_index_hygraph needs LlamaIndex: pip install 'hygraph[llama-index]'"
    ) from err

from llama_index_hygraph.index import HyGraphIndex
from llama_index_hygraph.models import HyGraphEmbedding, LlamaIndexEmbedder, LlamaIndexLLM
from llama_index_hygraph.retriever import HyGraphRetriever
from llama_index_hygraph.storage import HyGraphIndexStruct, HyGraphStorageContext

if TYPE_CHECKING:
    from llama_index_hygraph.extractors import HyGraphExtractor
    from llama_index_hygraph.graph_store import HyGraphPropertyGraphStore
    from llama_index_hygraph.sub_retriever import HyGraphSubRetriever

__all__ = [
    "HyGraphEmbedding",
    "HyGraphExtractor",
    "HyGraphIndex",
    "HyGraphIndexStruct",
    "HyGraphPropertyGraphStore",
    "HyGraphRetriever",
    "HyGraphStorageContext",
    "HyGraphSubRetriever",
    "LlamaIndexEmbedder",
    "LlamaIndexLLM",
]

# The property-graph pieces import more of LlamaIndex; load them when asked for.
_LAZY = {
    "HyGraphPropertyGraphStore": "llama_index_hygraph.graph_store",
    "HyGraphExtractor": "llama_index_hygraph.extractors",
    "HyGraphSubRetriever": "llama_index_hygraph.sub_retriever",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'llama_index_hygraph' has no attribute {name!r}")
