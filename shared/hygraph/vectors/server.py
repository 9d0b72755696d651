"""Vectors on a Qdrant server or cluster through ``qdrant-client``.

Same collections and payloads as the embedded backend; collection names get a
prefix so several indexes can share one server. A user's own ``QdrantClient``
can be passed in (including ``QdrantClient(":memory:")`` for tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hygraph.vectors.base import (
    INDEXED_FIELDS,
    VectorHit,
    Where,
    as_vector_list,
    point_id,
    record_vectors,
    with_graph_id,
)


class ServerVectorIndex:
    """Collections ``<prefix><name>`` on a Qdrant server."""

    backend = "server"

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        client: Any = None,
        prefix: str = "hygraph_",
        timeout: float = 60.0,
    ):
        self._owns_client = client is None
        if client is None:
            from qdrant_client import QdrantClient

            client = QdrantClient(url=url, api_key=api_key, timeout=int(timeout))
        self.client = client
        self.prefix = prefix
        self.url = url

    def _name(self, name: str) -> str:
        return f"{self.prefix}{name}"

    def has_collection(self, name: str) -> bool:
        return bool(self.client.collection_exists(self._name(name)))

    def ensure_collection(self, name: str, dim: int) -> None:
        if self.has_collection(name):
            return
        from qdrant_client import models

        self.client.create_collection(
            self._name(name),
            vectors_config=models.VectorParams(size=dim, distance=models.Distance.COSINE),
        )
        for field_name in INDEXED_FIELDS:
            self.client.create_payload_index(
                self._name(name),
                field_name=field_name,
                field_schema=models.PayloadSchemaType.KEYWORD,
            )

    def upsert(
        self,
        name: str,
        ids: Sequence[str],
        vectors: np.ndarray,
        payloads: Sequence[dict[str, Any]],
    ) -> None:
        if len(ids) == 0:
            return
        from qdrant_client import models

        points = [
            models.PointStruct(
                id=point_id(i), vector=as_vector_list(v), payload=with_graph_id(i, p)
            )
            for i, v, p in zip(ids, vectors, payloads, strict=True)
        ]
        for start in range(0, len(points), 512):
            self.client.upsert(self._name(name), points=points[start : start + 512], wait=True)

    def search(
        self, name: str, vector: np.ndarray, k: int, *, where: Where | None = None
    ) -> list[VectorHit]:
        from qdrant_client import models

        query_filter = None
        if where:
            must = []
            for key, value in where.items():
                if isinstance(value, (list, tuple, set)):
                    match: Any = models.MatchAny(any=list(value))
                else:
                    match = models.MatchValue(value=value)
                must.append(models.FieldCondition(key=key, match=match))
            query_filter = models.Filter(must=must)
        response = self.client.query_points(
            self._name(name),
            query=as_vector_list(vector),
            limit=max(1, int(k)),
            query_filter=query_filter,
            with_payload=True,
        )
        return [
            VectorHit(p.payload["id"], float(p.score), dict(p.payload)) for p in response.points
        ]

    def delete(self, name: str, ids: Sequence[str]) -> None:
        if not ids or not self.has_collection(name):
            return
        from qdrant_client import models

        self.client.delete(
            self._name(name),
            points_selector=models.PointIdsList(points=[point_id(i) for i in ids]),
            wait=True,
        )

    def _retrieve(self, name: str, ids: Sequence[str], with_vectors: bool) -> list[Any]:
        if not ids or not self.has_collection(name):
            return []
        records: list[Any] = []
        ids = list(ids)
        for start in range(0, len(ids), 512):
            records.extend(
                self.client.retrieve(
                    self._name(name),
                    ids=[point_id(i) for i in ids[start : start + 512]],
                    with_payload=["id"],
                    with_vectors=with_vectors,
                )
            )
        return records

    def existing(self, name: str, ids: Sequence[str]) -> set[str]:
        return {r.payload["id"] for r in self._retrieve(name, ids, False)}

    def vectors(self, name: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        return record_vectors(self._retrieve(name, ids, True))

    def count(self, name: str) -> int:
        if not self.has_collection(name):
            return 0
        return int(self.client.count(self._name(name), exact=True).count)

    def close(self) -> None:
        """Close the client this index made; a client the caller passed stays open."""
        close = getattr(self.client, "close", None)
        if close is not None and self._owns_client:
            close()
