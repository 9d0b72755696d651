"""Vector storage in Qdrant: embedded (Qdrant Edge, the default) or a server (qdrant-client)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hygraph.vectors.base import VectorHit, VectorIndex, point_id

__all__ = ["VectorHit", "VectorIndex", "open_vector_index", "point_id"]


def open_vector_index(
    root: str | Path | None = None,
    *,
    url: str | None = None,
    api_key: str | None = None,
    client: Any = None,
    prefix: str = "hygraph_",
    names: Mapping[str, str] | None = None,
    vector_name: str = "",
) -> VectorIndex:
    """Embedded Qdrant Edge at ``root`` unless a server ``url`` or ``client`` is given.

    On a server, a collection is named ``<prefix><collection>`` unless ``names`` gives it
    a name of its own; ``vector_name`` is the vector name of collections created there
    (see :class:`~hygraph.vectors.server.ServerVectorIndex`). Within one process, embedded
    indexes on the same ``root`` share their loaded shards.
    """
    if url is not None or client is not None:
        from hygraph.vectors.server import ServerVectorIndex

        return ServerVectorIndex(
            url, api_key, client=client, prefix=prefix, names=names, vector_name=vector_name
        )
    if root is None:
        raise ValueError("an embedded vector index needs a directory")
    from hygraph.vectors.edge import EdgeVectorIndex

    return EdgeVectorIndex(root)
