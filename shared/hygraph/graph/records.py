"""Per-chunk records: what one chunk contributed to a node or an edge, one row each.

An entity named in thousands of chunks, or a relation stated in hundreds, would
otherwise carry one record per chunk inside its payload, read and rewritten whole by
every batch that adds to it. Here each record is a row of the store's ``records``
table (``owner``: a node id, or :func:`edge_owner` of an edge), written once and deleted
with its chunk, node or edge; the owner keeps a tally derived from them.

An edge whose payload says ``entries_from: records`` gets its records back as
``data["entries"]`` (chunk id -> record, in the index's chunk order) whenever the
store returns it, so readers find what an edge written with its entries inline holds.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hygraph.graph.store import Edge

ENTRIES_FROM = "entries_from"  # an edge payload key: its per-chunk entries are records
_OWNER_SEP = "\x1f"


def edge_owner(src: str, dst: str, kind: str) -> str:
    """The ``records`` owner id of an edge."""
    return f"{src}{_OWNER_SEP}{dst}{_OWNER_SEP}{kind}"


def payload(edge: Edge, dumps: Callable[[dict[str, Any]], str | None]) -> str | None:
    """An edge's stored payload: entries kept as records are not written into it."""
    if edge.data.get(ENTRIES_FROM) == "records" and "entries" in edge.data:
        return dumps({k: v for k, v in edge.data.items() if k != "entries"})
    return dumps(edge.data)


def forget_edge_records(conn: sqlite3.Connection, keys: Iterable[Sequence[str]]) -> None:
    """Delete the records of the edges ``(src, dst, kind)`` (in the caller's transaction)."""
    conn.executemany("DELETE FROM records WHERE owner = ?", [(edge_owner(*k),) for k in keys])


class RecordsMixin:
    """The :class:`~hygraph.graph.store.GraphStore` methods that read and write records
    (it provides ``transaction`` and ``_query_in``)."""

    transaction: Callable[..., Any]
    _query_in: Callable[[str, Sequence[str]], list[tuple]]

    def _attach_entries(self, edges: Iterable[Edge]) -> None:
        """Put the per-chunk records of edges that keep them in the records table into
        ``data["entries"]`` (in the index's chunk order; chunks it does not hold last, by
        id), as readers find them in an edge written with its entries inline."""
        owners = {edge_owner(e.src, e.dst, e.kind): e for e in edges
                  if e.data.get(ENTRIES_FROM) == "records"}  # fmt: skip
        if not owners:
            return
        for edge in owners.values():
            edge.data["entries"] = {}
        sql = (
            "SELECT r.owner, r.chunk_id, r.data FROM records r LEFT JOIN chunks c"
            " ON c.id = r.chunk_id WHERE r.owner IN ({marks})"
            " ORDER BY c.rowid IS NULL, c.rowid, r.chunk_id"
        )
        for owner, chunk_id, data in self._query_in(sql, list(owners)):
            owners[owner].data["entries"][chunk_id] = json.loads(data)

    def put_records(self, rows: Iterable[tuple[str, str, Any]]) -> None:
        """Store what one chunk contributed to a node or edge (``owner``), replacing an
        older record of the same chunk. Records go with their chunk on a delete, so the
        owner can be derived again from what is left."""
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO records(owner, chunk_id, data) VALUES (?, ?, ?)",
                [(o, c, json.dumps(r, ensure_ascii=False)) for o, c, r in rows],
            )

    def records_of(self, owners: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Every record of each owner: ``owner -> chunk id -> record``."""
        out: dict[str, dict[str, Any]] = {}
        sql = "SELECT owner, chunk_id, data FROM records WHERE owner IN ({marks})"
        for owner, chunk_id, data in self._query_in(sql, list(dict.fromkeys(owners))):
            out.setdefault(owner, {})[chunk_id] = json.loads(data)
        return out

    def records_from(self, chunk_ids: Iterable[str]) -> dict[tuple[str, str], Any]:
        """The records the given chunks contributed: ``(owner, chunk id) -> record``."""
        sql = "SELECT owner, chunk_id, data FROM records WHERE chunk_id IN ({marks})"
        rows = self._query_in(sql, list(dict.fromkeys(chunk_ids)))
        return {(owner, chunk_id): json.loads(data) for owner, chunk_id, data in rows}
