"""Embedded vectors with Qdrant Edge (``qdrant-edge-py``): the real Qdrant engine in-process.

This is the only module that imports ``qdrant_edge`` (it is pre-1.0; keeping it in
one place keeps API changes cheap). Each collection is one Edge shard in its own
folder under the index's ``qdrant/`` directory. Updates go through Qdrant's
write-ahead log and are flushed after each upsert batch, so a build killed
mid-way keeps what was written.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hygraph.errors import HygraphError
from hygraph.vectors.base import (
    INDEXED_FIELDS,
    VectorHit,
    Where,
    as_vector_list,
    point_id,
    record_vectors,
    with_graph_id,
)

_SHARD_MARKER = "edge_config.json"


def _filter(where: Where | None) -> Any:
    if not where:
        return None
    from qdrant_edge import FieldCondition, Filter, MatchAny, MatchValue

    must = []
    for key, value in where.items():
        if isinstance(value, (list, tuple, set)):
            must.append(FieldCondition(key=key, match=MatchAny(list(value))))
        else:
            must.append(FieldCondition(key=key, match=MatchValue(value)))
    return Filter(must=must)


class EdgeVectorIndex:
    """Collections stored as Qdrant Edge shards under ``root`` (one folder each)."""

    backend = "edge"

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._shards: dict[str, Any] = {}
        self._lock = threading.RLock()

    def _path(self, name: str) -> Path:
        return self.root / name

    def has_collection(self, name: str) -> bool:
        return name in self._shards or (self._path(name) / _SHARD_MARKER).exists()

    def _shard(self, name: str) -> Any:
        with self._lock:
            shard = self._shards.get(name)
            if shard is None:
                if not self.has_collection(name):
                    raise KeyError(f"no vector collection {name!r} in {self.root}")
                from qdrant_edge import EdgeShard

                try:
                    shard = EdgeShard.load(str(self._path(name)))
                except Exception as err:
                    if "WouldBlock" in str(err) or "lock" in str(err).lower():
                        raise HygraphError(
                            f"the vectors of {self.root.parent} are in use elsewhere (another "
                            "process or another open GraphIndex); embedded Qdrant opens them "
                            "once at a time: close the other one, or use a Qdrant server "
                            "(qdrant_url=...) to share an index"
                        ) from None
                    raise
                self._shards[name] = shard
            return shard

    def ensure_collection(self, name: str, dim: int) -> None:
        with self._lock:
            if self.has_collection(name):
                return
            from qdrant_edge import (
                Distance,
                EdgeConfig,
                EdgeShard,
                EdgeVectorParams,
                PayloadSchemaType,
                UpdateOperation,
            )

            path = self._path(name)
            path.mkdir(parents=True, exist_ok=True)
            shard = EdgeShard.create(
                str(path), EdgeConfig(vectors=EdgeVectorParams(size=dim, distance=Distance.Cosine))
            )
            for field_name in INDEXED_FIELDS:
                shard.update(
                    UpdateOperation.create_field_index(field_name, PayloadSchemaType.Keyword)
                )
            shard.flush()
            (path / _SHARD_MARKER).write_text(f'{{"dim": {dim}}}\n')
            self._shards[name] = shard

    def upsert(
        self,
        name: str,
        ids: Sequence[str],
        vectors: np.ndarray,
        payloads: Sequence[dict[str, Any]],
    ) -> None:
        if len(ids) == 0:
            return
        from qdrant_edge import Point, UpdateOperation

        points = [
            Point(point_id(i), as_vector_list(v), with_graph_id(i, p))
            for i, v, p in zip(ids, vectors, payloads, strict=True)
        ]
        shard = self._shard(name)
        with self._lock:
            for start in range(0, len(points), 1024):
                shard.update(UpdateOperation.upsert_points(points[start : start + 1024]))
            shard.flush()

    def search(
        self, name: str, vector: np.ndarray, k: int, *, where: Where | None = None
    ) -> list[VectorHit]:
        from qdrant_edge import Query, QueryRequest

        request = QueryRequest(
            limit=max(1, int(k)),
            query=Query.Nearest(as_vector_list(vector)),
            filter=_filter(where),
            with_payload=True,
            with_vector=False,
        )
        hits = self._shard(name).query(request)
        return [VectorHit(h.payload["id"], float(h.score), dict(h.payload)) for h in hits]

    def delete(self, name: str, ids: Sequence[str]) -> None:
        if not ids or not self.has_collection(name):
            return
        from qdrant_edge import UpdateOperation

        shard = self._shard(name)
        with self._lock:
            shard.update(UpdateOperation.delete_points([point_id(i) for i in ids]))
            shard.flush()

    def _retrieve(self, name: str, ids: Sequence[str], with_vector: bool) -> list[Any]:
        if not ids or not self.has_collection(name):
            return []
        shard = self._shard(name)
        records: list[Any] = []
        ids = list(ids)
        for start in range(0, len(ids), 1024):
            batch = [point_id(i) for i in ids[start : start + 1024]]
            records.extend(shard.retrieve(batch, with_payload=["id"], with_vector=with_vector))
        return records

    def existing(self, name: str, ids: Sequence[str]) -> set[str]:
        return {r.payload["id"] for r in self._retrieve(name, ids, False)}

    def vectors(self, name: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        return record_vectors(self._retrieve(name, ids, True))

    def count(self, name: str) -> int:
        if not self.has_collection(name):
            return 0
        from qdrant_edge import CountRequest

        return int(self._shard(name).count(CountRequest(exact=True)))

    def close(self) -> None:
        with self._lock:
            for shard in self._shards.values():
                shard.flush()
                shard.close()
            self._shards.clear()
