"""Vectors on a Qdrant server or cluster through ``qdrant-client``.

Same collections and payloads as the embedded backend, under server-wide names:

- by default ``<prefix><collection>`` (``hygraph_<index name>_chunks`` ...), so several
  indexes can share one server;
- with ``names``, some collections get a name of their own. An index opened on a
  framework's Qdrant vector store maps its passage collection (``chunks``) to the
  store's ``collection_name`` (``app``) and names the rest from it (``app_facts``,
  ``app_entities`` ...), so the stock LlamaIndex and LangChain Qdrant stores can read the
  passages where they expect them.

A collection that already exists is adopted as it is: its vector name (unnamed, or the
dense vector a LlamaIndex store made, ``text-dense``) is read from its configuration and
used, and a vector size or distance that does not fit is a one-line error. Points that
hygraph did not write (the stock store's own) may share such a collection: searches and
counts there only see points with hygraph's ``id`` payload, and hygraph only ever
deletes its own points.

A user's own ``QdrantClient`` can be passed in (including ``QdrantClient(":memory:")``
for tests); it is never closed here.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hygraph.errors import IndexMismatchError
from hygraph.secrets import register_secret
from hygraph.vectors.base import (
    INDEXED_FIELDS,
    SEARCH_PAYLOAD,
    TIE_SLACK,
    VectorHit,
    Where,
    as_vector_list,
    by_score_then_id,
    found_rows,
    point_id,
    record_rows,
    record_vectors,
    scrolled,
    with_graph_id,
)

log = logging.getLogger("hygraph")


class ServerVectorIndex:
    """Collections on a Qdrant server, named ``<prefix><name>`` unless ``names`` says otherwise.

    Args:
        url, api_key: the server (ignored when ``client`` is given).
        client: a ``QdrantClient`` to use instead of making one.
        prefix: put before a collection's name to make its server-wide name.
        names: collection → server-wide name, for collections named otherwise (a
            framework store's own collection). Those are treated as shared: points
            without hygraph's ``id`` payload in them are left alone and unseen.
        vector_name: the vector name of the collections this creates ("" is the
            unnamed default vector). Existing collections keep theirs.
        timeout: request timeout of a client made here, in seconds.
    """

    backend = "server"

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        client: Any = None,
        prefix: str = "hygraph_",
        names: Mapping[str, str] | None = None,
        vector_name: str = "",
        timeout: float = 60.0,
    ):
        self._owns_client = client is None
        #: How to reach the server again if the caller closes its client before
        #: :meth:`discard` runs (read from the client when it is not ours).
        self._reconnect = (
            {"url": url, "api_key": api_key} if client is None else _connection(client)
        )
        if client is None:
            from qdrant_client import QdrantClient

            client = QdrantClient(url=url, api_key=api_key, timeout=int(timeout))
        self.client = client
        self.prefix = prefix
        self.names = dict(names or {})
        self.vector_name = vector_name
        self.url = url
        self._api_key = api_key
        register_secret(api_key)
        self._closed = False
        self._using: dict[str, str] = {}  # server-wide name -> vector name in use
        self._created: set[str] = set()  # server-wide names created by this object
        self._written: dict[str, set[str]] | None = None  # point ids, when tracked
        self._lock = threading.Lock()

    def _name(self, name: str) -> str:
        return self.names.get(name) or f"{self.prefix}{name}"

    def server_name(self, name: str) -> str:
        """The server-wide name of collection ``name``."""
        return self._name(name)

    def _shared(self, name: str) -> bool:
        return name in self.names

    def has_collection(self, name: str) -> bool:
        return bool(self.client.collection_exists(self._name(name)))

    def _vector_name(self, name: str, dim: int | None = None) -> str:
        """The vector name to use in collection ``name``, read once from its configuration.

        With ``dim``, also checks that the collection's vectors have that size and are
        compared by cosine (an existing collection may have been made by someone else).
        """
        real = self._name(name)
        if real in self._using and dim is None:
            return self._using[real]
        from qdrant_client import models

        config = self.client.get_collection(real).config.params.vectors
        if isinstance(config, dict):
            if self.vector_name in config:
                using = self.vector_name
            elif len(config) == 1:
                using = next(iter(config))
            else:
                raise IndexMismatchError(
                    f"Qdrant collection {real!r} has several vectors "
                    f"({', '.join(repr(k) for k in config)}) and none named "
                    f"{self.vector_name!r}; pass the vector name to use"
                )
            params = config[using]
        else:
            using, params = "", config
        if dim is not None and params is not None:
            if params.size != dim:
                raise IndexMismatchError(
                    f"Qdrant collection {real!r} holds {params.size}-dimensional vectors but "
                    f"this index embeds with {dim} dimensions; use another collection name "
                    "or the embedding model that collection was made with"
                )
            if params.distance != models.Distance.COSINE:
                raise IndexMismatchError(
                    f"Qdrant collection {real!r} compares vectors by {params.distance.value}; "
                    "hygraph needs cosine: use another collection name"
                )
        self._using[real] = using
        return using

    def ensure_collection(self, name: str, dim: int) -> None:
        real = self._name(name)
        if self.has_collection(name):
            if real not in self._using:
                self._vector_name(name, dim)
            return
        from qdrant_client import models

        params = models.VectorParams(size=dim, distance=models.Distance.COSINE)
        self.client.create_collection(
            real, vectors_config={self.vector_name: params} if self.vector_name else params
        )
        self._using[real] = self.vector_name
        self._created.add(real)
        for field_name in INDEXED_FIELDS:
            self.client.create_payload_index(
                real, field_name=field_name, field_schema=models.PayloadSchemaType.KEYWORD
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

        using = self._vector_name(name)
        points = [
            models.PointStruct(
                id=point_id(i),
                vector={using: as_vector_list(v)} if using else as_vector_list(v),
                payload=with_graph_id(i, p),
            )
            for i, v, p in zip(ids, vectors, payloads, strict=True)
        ]
        real = self._name(name)
        for start in range(0, len(points), 512):
            self.client.upsert(real, points=points[start : start + 512], wait=True)
        if self._written is not None:
            with self._lock:
                self._written.setdefault(real, set()).update(str(p.id) for p in points)

    def _filter(self, name: str, where: Where | None) -> Any:
        """The Qdrant filter of ``where``; in a shared collection, only hygraph's points."""
        from qdrant_client import models

        must: list[Any] = []
        for key, value in (where or {}).items():
            if isinstance(value, (list, tuple, set)):
                match: Any = models.MatchAny(any=list(value))
            else:
                match = models.MatchValue(value=value)
            must.append(models.FieldCondition(key=key, match=match))
        must_not: list[Any] = []
        if self._shared(name):
            must_not.append(models.IsEmptyCondition(is_empty=models.PayloadField(key="id")))
        if not must and not must_not:
            return None
        return models.Filter(must=must or None, must_not=must_not or None)

    def _nearest(
        self, name: str, vector: np.ndarray, limit: int, where: Where | None, payload: bool
    ) -> list[Any]:
        """The collection's ``limit`` nearest hygraph points to ``vector`` (a shared
        collection's foreign points are filtered out, as in every read)."""
        using = self._vector_name(name)
        response = self.client.query_points(
            self._name(name),
            query=as_vector_list(vector),
            using=using or None,
            limit=limit,
            query_filter=self._filter(name, where),
            with_payload=payload,
        )
        return list(response.points)

    def search(
        self, name: str, vector: np.ndarray, k: int, *, where: Where | None = None
    ) -> list[VectorHit]:
        points = self._nearest(name, vector, max(1, int(k)) + TIE_SLACK, where, SEARCH_PAYLOAD)
        found = [VectorHit(p.payload["id"], float(p.score), dict(p.payload)) for p in points]
        return by_score_then_id(found, max(1, int(k)))

    def best_score(self, name: str, vector: np.ndarray) -> float | None:
        if not self.has_collection(name):
            return None
        points = self._nearest(name, vector, 1, None, False)
        return float(points[0].score) if points else None

    def delete(self, name: str, ids: Sequence[str]) -> None:
        if not ids or not self.has_collection(name):
            return
        from qdrant_client import models

        points = [point_id(i) for i in ids]
        self.client.delete(
            self._name(name), points_selector=models.PointIdsList(points=points), wait=True
        )
        if self._written is not None:
            with self._lock:
                self._written.get(self._name(name), set()).difference_update(points)

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
        # A point id is derived from the graph id, so a foreign point can only match by
        # chance; those without our ``id`` payload are dropped all the same.
        return [r for r in records if r.payload and "id" in r.payload]

    def existing(self, name: str, ids: Sequence[str]) -> set[str]:
        return {r.payload["id"] for r in self._retrieve(name, ids, False)}

    def vectors(self, name: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        return record_vectors(self._retrieve(name, ids, True))

    def vector_matrix(
        self, name: str, ids: Sequence[str], *, release: bool = False
    ) -> tuple[list[str], np.ndarray]:
        ids = list(dict.fromkeys(ids))  # (``release``: nothing is held here to let go)
        row_of = {i: n for n, i in enumerate(ids)}
        found = np.zeros(len(ids), dtype=bool)
        out = None
        for start in range(0, len(ids), 512):  # one request's records as floats at a time
            records = self._retrieve(name, ids[start : start + 512], True)
            out = record_rows(records, row_of, out, found)
        return found_rows(ids, out, found)

    def count(self, name: str) -> int:
        if not self.has_collection(name):
            return 0
        return int(
            self.client.count(
                self._name(name), count_filter=self._filter(name, None), exact=True
            ).count
        )

    def collection_names(self) -> list[str]:
        """This index's collections on the server: its named ones, and those with its
        prefix (another index whose prefix extends this one's would be listed too:
        prefixes are per index, ``hygraph_<folder>_`` or ``<collection>_``)."""
        named = {real: name for name, real in self.names.items()}
        out = set()
        for collection in self.client.get_collections().collections:
            real = collection.name
            if real in named:
                out.add(named[real])
            elif real.startswith(self.prefix) and len(real) > len(self.prefix):
                out.add(real[len(self.prefix) :])
        return sorted(out)

    def scroll(
        self, name: str, offset: Any, limit: int
    ) -> tuple[list[tuple[str, np.ndarray, dict[str, Any]]], Any]:
        records, following = self.client.scroll(
            self._name(name),
            scroll_filter=self._filter(name, None),
            limit=limit,
            offset=offset,
            with_payload=True,
            with_vectors=True,
        )
        return scrolled(records), following

    def discard_at_exit(self) -> None:
        """Remove what this object writes when the process exits.

        For an index that lives only as long as the process (a temporary directory): the
        collections it created are dropped, and its points are deleted from collections
        that existed before (a user's own collection keeps the user's points). Without
        this, a later run with the same collection name would find this run's points.
        """
        if self._written is None:
            self._written = {}
            atexit.register(self.discard)

    def discard(self) -> None:
        """Drop the collections this object created and delete its points from the others."""
        written = self._written or {}
        if not (self._created or any(written.values())):
            return
        client = self.client
        if self._closed or not _usable(client):  # closed (by us, or by the app): reconnect
            client = self._connect_again() or client
        left = []
        for real in sorted(self._created | set(written)):
            try:
                if real in self._created:
                    client.delete_collection(real)
                elif written.get(real):
                    from qdrant_client import models

                    client.delete(
                        real,
                        points_selector=models.PointIdsList(points=sorted(written[real])),
                        wait=True,
                    )
            except Exception as err:  # noqa: BLE001 - the server may be gone; say what is left
                left.append(f"{real} ({type(err).__name__})")
        if left:
            log.warning(
                "could not remove the temporary Qdrant collection(s) %s; delete them on the "
                "server (their names start with %r)", ", ".join(left), self.prefix,
            )  # fmt: skip
        if client is not self.client:
            client.close()
        self._created.clear()
        if self._written is not None:
            self._written.clear()

    def _connect_again(self) -> Any:
        """A new client to the same server or local folder, or None if that is unknown."""
        params = self._reconnect
        if not params:
            return None
        from qdrant_client import QdrantClient

        try:
            return QdrantClient(**params)
        except Exception as err:  # noqa: BLE001 - reported by discard as what is left
            log.debug("could not reconnect to Qdrant to clean up: %s", err)
            return None

    def close(self) -> None:
        """Close the client this index made; a client the caller passed stays open."""
        close = getattr(self.client, "close", None)
        if close is not None and self._owns_client and not self._closed:
            close()
            self._closed = True


def _connection(client: Any) -> dict[str, Any] | None:
    """How to open another client to what ``client`` talks to: a server's URL and key,
    or a local folder; None for an in-memory client (nothing outlives it) or one whose
    make is unknown. Read from qdrant-client's own fields, best effort."""
    inner = getattr(client, "_client", None)
    host = getattr(inner, "_host", None)
    if host:
        port = getattr(inner, "_port", None)
        url = f"{getattr(inner, '_scheme', 'http')}://{host}" + (f":{port}" if port else "")
        return {"url": url + (getattr(inner, "_prefix", "") or ""),
                "api_key": getattr(inner, "_api_key", None)}  # fmt: skip
    location = getattr(inner, "location", None)
    if isinstance(location, str) and location != ":memory:":
        return {"path": location}
    return None


def _usable(client: Any) -> bool:
    """Whether ``client`` still answers (an app may have closed it)."""
    try:
        client.get_collections()
    except Exception:  # noqa: BLE001 - closed, or the server is gone
        return False
    return True
