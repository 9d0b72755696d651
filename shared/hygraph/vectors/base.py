"""The small interface every vector backend implements, and what they share.

An index keeps several named collections (chunks now; entities, facts, summaries
as methods add them). Points carry the graph id in their payload, so a vector hit
always leads back to a node or chunk in the :class:`~hygraph.graph.store.GraphStore`.
Qdrant point ids must be integers or UUIDs: we derive a UUIDv5 from the graph id,
which makes upserts idempotent (the same node always lands on the same point).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

_NAMESPACE = uuid.UUID("6c2a8d0e-2f4b-5b6f-9a51-0b7e6d1c4a39")

#: Payload fields that get a keyword index in every collection (we filter on them).
INDEXED_FIELDS = ("kind", "doc_id")
#: The payload fields a search returns: the graph id and the filterable fields, not the
#: passage text and framework fields a payload may also hold (no caller reads them, and
#: reading whole payloads slows a deep search).
SEARCH_PAYLOAD = ["id", *INDEXED_FIELDS]


def point_id(graph_id: str) -> str:
    """The Qdrant point id (UUIDv5 string) of a graph id."""
    return str(uuid.uuid5(_NAMESPACE, graph_id))


@dataclass
class VectorHit:
    """One search result: the graph id, its cosine similarity, and its payload."""

    id: str
    score: float
    payload: dict[str, Any] = field(default_factory=dict)


Where = dict[str, Any]
"""Exact-match filter on payload fields; a list value matches any of its items."""

#: Hits a search asks the store for beyond ``k``, so that points tied at the ``k``-th
#: score are chosen by id as well (see :func:`by_score_then_id`).
TIE_SLACK = 8


def by_score_then_id(hits: Sequence[VectorHit], k: int) -> list[VectorHit]:
    """The ``k`` best ``hits``, ties in score ordered by graph id.

    Qdrant returns points of equal score in the order of its segments, which depends
    on how the points were written (one bulk upsert or one per document) and on whether
    a search reads the write-ahead log or flushed segments: without this, the same
    index could rank two equally near passages either way from one query to the next,
    and a later rank-based step (a fusion, a walk's prior) would score differently.
    """
    return sorted(hits, key=lambda h: (-h.score, h.id))[: max(0, int(k))]


@runtime_checkable
class VectorIndex(Protocol):
    """Named collections of cosine vectors with payloads."""

    backend: str

    def ensure_collection(self, name: str, dim: int) -> None: ...

    def has_collection(self, name: str) -> bool: ...

    def upsert(
        self,
        name: str,
        ids: Sequence[str],
        vectors: np.ndarray,
        payloads: Sequence[dict[str, Any]],
    ) -> None: ...

    def search(
        self, name: str, vector: np.ndarray, k: int, *, where: Where | None = None
    ) -> list[VectorHit]: ...

    def best_score(self, name: str, vector: np.ndarray) -> float | None:
        """The greatest cosine of ``vector`` to the collection's points (None when it is
        empty), without reading any point's payload: a search for one score alone."""
        ...

    def delete(self, name: str, ids: Sequence[str]) -> None: ...

    def existing(self, name: str, ids: Sequence[str]) -> set[str]: ...

    def vectors(self, name: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors by graph id (missing ids are absent)."""
        ...

    def vector_matrix(
        self, name: str, ids: Sequence[str], *, release: bool = False
    ) -> tuple[list[str], np.ndarray]:
        """The stored vectors of ``ids`` as the rows of one float32 matrix, read in batches.

        Returns the ids found, in the order given, and their rows (missing ids are left
        out; none found: an empty ``0 × 0`` matrix). ``release``: what was loaded for
        this read alone (an embedded shard) is let go after it.
        """
        ...

    def count(self, name: str) -> int: ...

    def collection_names(self) -> list[str]:
        """The names of this index's collections (for copying an index elsewhere)."""
        ...

    def scroll(
        self, name: str, offset: Any, limit: int
    ) -> tuple[list[tuple[str, np.ndarray, dict[str, Any]]], Any]:
        """A page of collection ``name``: ``(graph id, vector, payload)`` of up to ``limit``
        points from ``offset`` (None: the first), and the next page's offset (None: no
        more). The payloads are as given to :meth:`upsert`."""
        ...

    def close(self) -> None: ...


def with_graph_id(graph_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The payload stored for a point: the caller's fields plus the graph id."""
    out = dict(payload)
    out["id"] = graph_id
    return out


def record_vectors(records: Sequence[Any]) -> dict[str, np.ndarray]:
    """Graph id → vector of retrieved Qdrant records (a single named vector is unwrapped)."""
    out: dict[str, np.ndarray] = {}
    for record in records:
        vector = record.vector
        if isinstance(vector, dict):
            vector = next(iter(vector.values()))
        out[record.payload["id"]] = np.asarray(vector, dtype=np.float32)
    return out


def record_rows(
    records: Sequence[Any], row_of: dict[str, int], out: np.ndarray | None, found: np.ndarray
) -> np.ndarray | None:
    """Copy one batch of retrieved records' vectors into ``out`` at their ids' rows.

    ``out`` is the ``len(found) × dim`` float32 matrix being filled (None until the first
    vector is seen: it is made then, its width the vector's); ``found`` marks the rows
    filled. Returns ``out``. Reading a collection batch by batch this way holds one batch
    of vectors as Python floats at a time (32 bytes a number), not the whole collection.
    """
    rows: list[int] = []
    vectors: list[Any] = []
    for record in records:
        vector = record.vector
        if isinstance(vector, dict):
            vector = next(iter(vector.values()))
        row = row_of.get(record.payload["id"])
        if row is not None and vector is not None:
            rows.append(row)
            vectors.append(vector)
    if not rows:
        return out
    batch = np.asarray(vectors, dtype=np.float32)
    if out is None:
        out = np.empty((len(found), batch.shape[1]), dtype=np.float32)
    out[rows] = batch
    found[rows] = True
    return out


def found_rows(
    ids: Sequence[str], out: np.ndarray | None, found: np.ndarray
) -> tuple[list[str], np.ndarray]:
    """The ids whose rows were filled, in order, and those rows (see :func:`record_rows`)."""
    if out is None:
        return [], np.zeros((0, 0), dtype=np.float32)
    if found.all():
        return list(ids), out
    return [i for i, hit in zip(ids, found, strict=True) if hit], out[found]


def as_vector_list(vector: np.ndarray) -> list[float]:
    return np.asarray(vector, dtype=np.float32).ravel().tolist()


def scrolled(records: Sequence[Any]) -> list[tuple[str, np.ndarray, dict[str, Any]]]:
    """``(graph id, vector, payload without the graph id)`` of scrolled Qdrant records
    (points without hygraph's ``id`` payload, in a shared collection, are left out)."""
    vectors = record_vectors(records)
    out = []
    for record in records:
        payload = dict(record.payload or {})
        graph_id = payload.pop("id", None)
        if graph_id is not None and graph_id in vectors:
            out.append((graph_id, vectors[graph_id], payload))
    return out
