"""hygraph: graph retrieval for RAG applications.

The core is framework-agnostic. Build an index from documents, then retrieve
with any registered method::

    from hygraph import GraphIndex
    index = GraphIndex.build(["docs/"], "my-index")
    result = index.query("Who founded the company that built the bridge?", method="vanilla")

Heavy dependencies (torch, sentence-transformers, Qdrant) load only when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from hygraph.index import GraphIndex, QueryResult

__all__ = ["GraphIndex", "QueryResult", "__version__"]


def __getattr__(name: str) -> Any:
    if name in ("GraphIndex", "QueryResult"):
        from hygraph import index

        return getattr(index, name)
    raise AttributeError(f"module 'hygraph' has no attribute {name!r}")
