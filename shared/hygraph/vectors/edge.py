"""Embedded vectors with Qdrant Edge (``qdrant-edge-py``): the real Qdrant engine in-process.

This is the only module that imports ``qdrant_edge`` (it is pre-1.0; keeping it in
one place keeps API changes cheap). Each collection is one Edge shard in its own
folder under the index's ``qdrant/`` directory. Updates go through Qdrant's
write-ahead log and are flushed after each upsert batch, so a build killed
mid-way keeps what was written.

A shard folder can be loaded by one process at a time (Qdrant Edge locks it, and has no
read-only mode). Within a process, the loaded shards are shared: every
:class:`EdgeVectorIndex` on the same folder (two ``GraphIndex.open(path)``, two framework
wrappers over one ``persist_dir``) uses the same shard object, counted by a registry, and
the shard is closed when the last of them closes. Another process gets a one-line error.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
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


@dataclass
class _Loaded:
    """A loaded shard, shared by the :class:`EdgeVectorIndex` objects of this process."""

    shard: Any
    key: str
    users: int = 0
    lock: threading.RLock = field(default_factory=threading.RLock)


#: Loaded shards by real folder path; guarded by ``_REGISTRY_LOCK``.
_LOADED: dict[str, _Loaded] = {}
_REGISTRY_LOCK = threading.RLock()


def open_shard_count() -> int:
    """How many shards this process has loaded (for tests and diagnostics)."""
    with _REGISTRY_LOCK:
        return len(_LOADED)


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
    """Collections stored as Qdrant Edge shards under ``root`` (one folder each).

    Shards load lazily and are shared with the other instances of this process on the
    same folder (see the module docstring); :meth:`close` gives this instance's share back.
    """

    backend = "edge"

    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._shards: dict[str, _Loaded] = {}  # the shares this instance holds

    def _path(self, name: str) -> Path:
        return self.root / name

    def _key(self, name: str) -> str:
        return os.path.realpath(self._path(name))

    def has_collection(self, name: str) -> bool:
        return name in self._shards or (self._path(name) / _SHARD_MARKER).exists()

    def _loaded(self, name: str) -> _Loaded:
        held = self._shards.get(name)
        if held is not None:
            return held
        with _REGISTRY_LOCK:
            held = self._shards.get(name)
            if held is not None:
                return held
            if not self.has_collection(name):
                raise KeyError(f"no vector collection {name!r} in {self.root}")
            key = self._key(name)
            loaded = _LOADED.get(key)
            if loaded is None:
                loaded = _Loaded(self._load(name), key)
                _LOADED[key] = loaded
            loaded.users += 1
            self._shards[name] = loaded
            return loaded

    def _load(self, name: str) -> Any:
        from qdrant_edge import EdgeShard

        try:
            return EdgeShard.load(str(self._path(name)))
        except Exception as err:
            if "WouldBlock" in str(err) or "lock" in str(err).lower():
                raise HygraphError(
                    f"the vectors of {self.root.parent} are in use elsewhere (another process); "
                    "embedded Qdrant opens them in one process at a time: close it, or "
                    "use a Qdrant server (qdrant_url=...) to share an index"
                ) from None
            raise

    def _shard(self, name: str) -> Any:
        return self._loaded(name).shard

    def ensure_collection(self, name: str, dim: int) -> None:
        with _REGISTRY_LOCK:
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
            loaded = _Loaded(shard, self._key(name), users=1)
            _LOADED[loaded.key] = loaded
            self._shards[name] = loaded

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
        loaded = self._loaded(name)
        with loaded.lock:
            for start in range(0, len(points), 1024):
                loaded.shard.update(UpdateOperation.upsert_points(points[start : start + 1024]))
            loaded.shard.flush()

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

        loaded = self._loaded(name)
        with loaded.lock:
            loaded.shard.update(UpdateOperation.delete_points([point_id(i) for i in ids]))
            loaded.shard.flush()

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
        """Give back this instance's shards; a shard closes when no instance uses it."""
        with _REGISTRY_LOCK:
            for loaded in self._shards.values():
                loaded.users -= 1
                with loaded.lock:
                    loaded.shard.flush()
                    if loaded.users <= 0:
                        loaded.shard.close()
                        _LOADED.pop(loaded.key, None)
            self._shards.clear()
