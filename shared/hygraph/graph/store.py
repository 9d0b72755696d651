"""The graph store: the persisted source of truth of an index (SQLite).

It holds documents, chunks, typed nodes and typed weighted edges, each node and
edge with provenance (the chunks it was derived from), plus a small progress
table that makes builds resumable. Every write happens in a transaction and is
idempotent (ids are content hashes, inserts are upserts), so a build killed
half-way leaves a consistent store and a rerun continues where it stopped.

Queries and algorithms do not read SQLite row by row: they read the arrays of a
:class:`~hygraph.graph.view.GraphView`, rebuilt once per store version.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hygraph.graph.records import (
    RecordsMixin,
    forget_edge_records,
    payload,
)
from hygraph.graph.wal import WalCheckpointer
from hygraph.ingest.documents import Chunk, Document

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY, title TEXT, source TEXT, content_hash TEXT NOT NULL,
    metadata TEXT, n_chunks INTEGER NOT NULL DEFAULT 0, added_at REAL
);
CREATE TABLE IF NOT EXISTS chunks (
    id TEXT PRIMARY KEY,
    doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL, text TEXT NOT NULL, n_tokens INTEGER NOT NULL,
    start_char INTEGER, end_char INTEGER, start_token INTEGER, end_token INTEGER
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id, idx);
CREATE TABLE IF NOT EXISTS nodes (
    id TEXT PRIMARY KEY, kind TEXT NOT NULL, name TEXT, text TEXT, data TEXT
);
CREATE INDEX IF NOT EXISTS nodes_kind ON nodes(kind);
CREATE TABLE IF NOT EXISTS node_sources (
    node_id TEXT NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    chunk_id TEXT NOT NULL,
    PRIMARY KEY (node_id, chunk_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS node_sources_chunk ON node_sources(chunk_id);
CREATE TABLE IF NOT EXISTS edges (
    src TEXT NOT NULL, dst TEXT NOT NULL, kind TEXT NOT NULL,
    weight REAL NOT NULL DEFAULT 1.0, data TEXT,
    PRIMARY KEY (src, dst, kind)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edges_dst_kind ON edges(dst, kind);
CREATE INDEX IF NOT EXISTS edges_kind_src ON edges(kind, src);
DROP INDEX IF EXISTS edges_dst;
DROP INDEX IF EXISTS edges_kind;
CREATE TABLE IF NOT EXISTS edge_sources (
    src TEXT NOT NULL, dst TEXT NOT NULL, kind TEXT NOT NULL, chunk_id TEXT NOT NULL,
    PRIMARY KEY (src, dst, kind, chunk_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS edge_sources_chunk ON edge_sources(chunk_id);
CREATE TABLE IF NOT EXISTS records (
    owner TEXT NOT NULL, chunk_id TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (owner, chunk_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS records_chunk ON records(chunk_id);
CREATE TABLE IF NOT EXISTS extractions (
    chunk_id TEXT PRIMARY KEY, extractor TEXT NOT NULL, data TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS progress (
    task TEXT NOT NULL, item TEXT NOT NULL, PRIMARY KEY (task, item)
) WITHOUT ROWID;
"""


@dataclass
class Node:
    """A typed graph node (entity, fact, unit, summary, ...) with chunk provenance."""

    id: str
    kind: str
    name: str | None = None
    text: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    sources: Sequence[str] = ()


@dataclass
class Edge:
    """A typed, weighted, directed edge with chunk provenance."""

    src: str
    dst: str
    kind: str
    weight: float = 1.0
    data: dict[str, Any] = field(default_factory=dict)
    sources: Sequence[str] = ()


@dataclass
class DeleteResult:
    """What deleting a document removed, and which surviving nodes lost provenance."""

    doc_id: str
    chunk_ids: list[str]
    node_ids: list[str]
    touched_node_ids: list[str] = field(default_factory=list)


def _dumps(value: dict[str, Any] | None) -> str | None:
    return json.dumps(value, ensure_ascii=False, sort_keys=True) if value else None


def _loads(value: str | None) -> dict[str, Any]:
    return json.loads(value) if value else {}


#: Counts every write transaction, kept in ``meta`` (see :meth:`GraphStore.generation`).
_NEXT_GENERATION = (
    "INSERT INTO meta(key, value) VALUES ('generation', '1') ON CONFLICT(key)"
    " DO UPDATE SET value = CAST(value AS INTEGER) + 1"
)


class GraphStore(RecordsMixin):
    """SQLite-backed typed graph with documents, chunks and provenance.

    ``path=None`` opens a private in-memory store (tests, throwaway indexes).
    Use :meth:`transaction` to group writes; nested blocks join the outer one.
    """

    _wal: WalCheckpointer | None = None  # a file's log checkpoints (:mod:`hygraph.graph.wal`)

    def __init__(self, path: str | Path | None, *, read_only: bool = False):
        self.path = Path(path) if path is not None else None
        self.read_only = read_only and self.path is not None
        self._lock = threading.RLock()
        self._depth = 0
        #: :meth:`chunks_not_done`'s marks: task → a chunk row at or below which all are
        #: done, valid while ``data_version`` is ``_done_below_at``.
        self._done_below: dict[str, int] = {}
        self._done_below_at: int | None = None
        self._version_key: tuple[int, int] | None = None
        self._version = (0, 0, 0)
        self._chunk_ids: tuple[tuple[int, int], list[str]] | None = None
        self._own_commits = 0  # write transactions committed through this store
        if self.read_only:
            assert self.path is not None
            from hygraph.readonly import read_only_connection

            self._conn = read_only_connection(self.path)
            return
        self._conn = sqlite3.connect(
            str(self.path) if self.path is not None else ":memory:",
            check_same_thread=False,
            isolation_level=None,
        )
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._wal = WalCheckpointer.attach(self._conn, self.path)
        self._create_tables(_SCHEMA)

    def _create_tables(self, schema: str) -> None:
        """Create what is missing of ``schema`` and record the schema version, in one
        transaction."""
        with self.transaction():
            for statement in schema.split(";"):
                if statement.strip():
                    self._conn.execute(statement)
            self._conn.execute(
                "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )

    # -- transactions -------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """All-or-nothing block; an exception rolls back everything inside it."""
        with self._lock:
            outer = self._depth == 0
            if outer:
                self._conn.execute("BEGIN IMMEDIATE")
                start = self._conn.total_changes
            self._depth += 1
            try:
                yield self._conn
            except BaseException:
                self._depth -= 1
                if outer:
                    self._conn.execute("ROLLBACK")
                raise
            else:
                self._depth -= 1
                if outer:
                    changed = self._conn.total_changes != start
                    if changed:  # something was written
                        self._conn.execute(_NEXT_GENERATION)
                    self._conn.execute("COMMIT")
                    self._own_commits += changed
                    if changed and self._wal is not None:
                        self._wal.after_commit()

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            return self._conn.execute(sql, params).fetchall()

    def _query_in(self, sql: str, ids: Sequence[str], params: Sequence[Any] = ()) -> list[tuple]:
        """Run ``sql`` (containing ``IN ({marks})``, after ``params``' marks) over ``ids``
        in batches SQLite accepts."""
        rows: list[tuple] = []
        for start in range(0, len(ids), 500):
            batch = list(ids[start : start + 500])
            marks = ",".join("?" * len(batch))
            rows.extend(self._query(sql.format(marks=marks), [*params, *batch]))
        return rows

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    # -- meta ---------------------------------------------------------------------------

    def get_meta(self, key: str, default: str | None = None) -> str | None:
        rows = self._query("SELECT value FROM meta WHERE key = ?", (key,))
        return rows[0][0] if rows else default

    def set_meta(self, key: str, value: str) -> None:
        with self.transaction() as conn:
            conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)", (key, value))

    # -- documents and chunks ---------------------------------------------------------------

    def document_hash(self, doc_id: str) -> str | None:
        """The stored content hash of a document, or None if it is not in the store."""
        rows = self._query("SELECT content_hash FROM documents WHERE id = ?", (doc_id,))
        return rows[0][0] if rows else None

    def add_document(self, doc: Document, chunks: Sequence[Chunk]) -> bool:
        """Store a document and its chunks atomically. Returns False if it was already there."""
        with self.transaction() as conn:
            if self.document_hash(doc.id) == doc.content_hash:
                return False
            conn.execute(
                "INSERT OR REPLACE INTO documents"
                "(id, title, source, content_hash, metadata, n_chunks, added_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    doc.id,
                    doc.title,
                    doc.source,
                    doc.content_hash,
                    _dumps(doc.metadata),
                    len(chunks),
                    time.time(),
                ),
            )
            conn.executemany(
                "INSERT OR IGNORE INTO chunks(id, doc_id, idx, text, n_tokens, start_char,"
                " end_char, start_token, end_token) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        c.id,
                        c.doc_id,
                        c.index,
                        c.text,
                        c.n_tokens,
                        c.start_char,
                        c.end_char,
                        c.start_token,
                        c.end_token,
                    )
                    for c in chunks
                ],
            )
        return True

    def add_documents(self, pairs: Iterable[tuple[Document, Sequence[Chunk]]]) -> int:
        """Store several documents with their chunks in one transaction; how many were new."""
        pairs = list(pairs)
        if not pairs:
            return 0
        with self.transaction():
            return sum(self.add_document(doc, chunks) for doc, chunks in pairs)

    def get_document(self, doc_id: str) -> Document | None:
        rows = self._query(
            "SELECT id, title, source, metadata FROM documents WHERE id = ?", (doc_id,)
        )
        if not rows:
            return None
        doc_id, title, source, metadata = rows[0]
        text = "".join(c.text for c in self._dedup_overlap(self.chunks_of(doc_id)))
        return Document(id=doc_id, text=text, title=title, source=source, metadata=_loads(metadata))

    @staticmethod
    def _dedup_overlap(chunks: list[Chunk]) -> list[Chunk]:
        # Used only to show a document; the chunk texts overlap, so keep each char once.
        out: list[Chunk] = []
        end = -1
        for c in chunks:
            if c.start_char >= end:
                out.append(c)
            else:
                cut = end - c.start_char
                out.append(
                    Chunk(
                        c.id,
                        c.doc_id,
                        c.index,
                        c.text[cut:],
                        c.n_tokens,
                        end,
                        c.end_char,
                        c.start_token,
                        c.end_token,
                    )
                )
            end = max(end, c.end_char)
        return out

    def document_metadata(self, doc_ids: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
        """Documents' metadata (all, or ``doc_ids``) with ``doc_id``, ``title``, ``source``."""
        sql = "SELECT id, title, source, metadata FROM documents"
        if doc_ids is None:
            rows = self._query(sql + " ORDER BY rowid")
        else:
            rows = self._query_in(sql + " WHERE id IN ({marks})", list(dict.fromkeys(doc_ids)))
        return {
            doc_id: {**_loads(meta), "doc_id": doc_id, "title": title, "source": source}
            for doc_id, title, source, meta in rows
        }

    def chunk_ids_of(self, doc_ids: Iterable[str]) -> list[str]:
        """The chunk ids of the given documents."""
        ids = list(dict.fromkeys(doc_ids))
        return [
            r[0] for r in self._query_in("SELECT id FROM chunks WHERE doc_id IN ({marks})", ids)
        ]

    def document_ids(self) -> list[str]:
        return [r[0] for r in self._query("SELECT id FROM documents ORDER BY rowid")]

    def list_documents(self, offset: int = 0, limit: int = 100) -> tuple[int, list[dict[str, Any]]]:
        """How many documents there are, and a page of them in the order they were added:
        id, title, source, chunk count, when added (seconds since the epoch), metadata."""
        total = int(self._query("SELECT COUNT(*) FROM documents")[0][0])
        rows = self._query(
            "SELECT id, title, source, n_chunks, added_at, metadata FROM documents"
            " ORDER BY rowid LIMIT ? OFFSET ?",
            (min(max(0, int(limit)), 2**62), min(max(0, int(offset)), 2**62)),
        )
        return total, [
            {"id": i, "title": t, "source": s, "chunks": n, "added_at": a, "metadata": _loads(m)}
            for i, t, s, n, a, m in rows
        ]

    def nodes_named(self, name: str, kind: str, limit: int = 10) -> list[str]:
        """Ids of the nodes of ``kind`` whose name is ``name`` (case ignored), at most ``limit``."""
        rows = self._query(
            "SELECT id FROM nodes WHERE kind = ? AND name = ? COLLATE NOCASE LIMIT ?",
            (kind, name, int(limit)),
        )
        return [r[0] for r in rows]

    def documents_meta(self, doc_ids: Iterable[str]) -> dict[str, tuple[str | None, str]]:
        """``doc id -> (title, content hash)`` for the given documents."""
        ids = list(dict.fromkeys(doc_ids))
        rows = self._query_in(
            "SELECT id, title, content_hash FROM documents WHERE id IN ({marks})", ids
        )
        return {doc_id: (title, digest) for doc_id, title, digest in rows}

    def document_titles(self, doc_ids: Iterable[str]) -> dict[str, str | None]:
        ids = list(dict.fromkeys(doc_ids))
        out: dict[str, str | None] = {}
        out.update(self._query_in("SELECT id, title FROM documents WHERE id IN ({marks})", ids))
        return out

    _CHUNK_COLS = "id, doc_id, idx, text, n_tokens, start_char, end_char, start_token, end_token"

    def chunks_of(self, doc_id: str) -> list[Chunk]:
        rows = self._query(
            f"SELECT {self._CHUNK_COLS} FROM chunks WHERE doc_id = ? ORDER BY idx", (doc_id,)
        )
        return [Chunk(*row) for row in rows]

    def get_chunks(self, chunk_ids: Iterable[str]) -> dict[str, Chunk]:
        ids = list(dict.fromkeys(chunk_ids))
        out: dict[str, Chunk] = {}
        rows = self._query_in(f"SELECT {self._CHUNK_COLS} FROM chunks WHERE id IN ({{marks}})", ids)
        out.update((row[0], Chunk(*row)) for row in rows)
        return out

    def iter_chunks(self, batch_size: int = 1000) -> Iterator[Chunk]:
        """All chunks in insertion order, read in batches (constant memory)."""
        last = 0
        while True:
            rows = self._query(
                f"SELECT rowid, {self._CHUNK_COLS} FROM chunks WHERE rowid > ?"
                " ORDER BY rowid LIMIT ?",
                (last, batch_size),
            )
            if not rows:
                return
            for row in rows:
                yield Chunk(*row[1:])
            last = rows[-1][0]

    def chunk_ids(self) -> list[str]:
        """Every chunk id in the order chunks were added (a new list each call).

        Kept between calls while nothing was written (:meth:`change_key`): a query
        asks for them (BM25's index, the passage walk) and reading 25,000 ids took
        40 ms. Not kept inside a transaction, which may still roll back.
        """
        with self._lock:
            key = self.settled_key()
            if key is not None and self._chunk_ids is not None and self._chunk_ids[0] == key:
                return list(self._chunk_ids[1])
            ids = [r[0] for r in self._query("SELECT id FROM chunks ORDER BY rowid")]
            if key is not None:
                self._chunk_ids = (key, ids)
            return list(ids)

    def generation(self) -> int:
        """How many write transactions the store has committed, by any process.

        Derived data kept on disk (a walk graph) is keyed by it: unlike :meth:`version`,
        a size fingerprint, it changes with every write, even one that leaves every count
        as it was (a document replaced by one of the same size).
        """
        rows = self._query("SELECT value FROM meta WHERE key = 'generation'")
        return int(rows[0][0]) if rows else 0

    def settled_key(self) -> tuple[int, int] | None:
        """:meth:`change_key` outside a transaction; None inside one (what is read there
        may still roll back, so nothing read there is kept under a key)."""
        with self._lock:
            return self.change_key() if self._depth == 0 else None

    def change_key(self) -> tuple[int, int]:
        """Changes whenever anything may have been written: through this connection
        (SQLite's ``total_changes``, which a rollback does not undo) or committed by
        another (``data_version``)."""
        with self._lock:
            return (
                self._conn.total_changes,
                self._conn.execute("PRAGMA data_version").fetchone()[0],
            )

    def source_counts(self, node_ids: Iterable[str]) -> dict[str, int]:
        """How many chunks each of ``node_ids`` came from (those with none are absent)."""
        ids = list(dict.fromkeys(node_ids))
        sql = (
            "SELECT node_id, COUNT(*) FROM node_sources WHERE node_id IN ({marks}) GROUP BY node_id"
        )
        return {n: int(c) for n, c in self._query_in(sql, ids)}

    def chunk_positions(self, chunk_ids: Iterable[str]) -> dict[str, int]:
        """Each known chunk's position in the index (the order chunks were added)."""
        ids = list(dict.fromkeys(chunk_ids))
        return dict(self._query_in("SELECT id, rowid FROM chunks WHERE id IN ({marks})", ids))

    def delete_document(self, doc_id: str) -> DeleteResult:
        """Remove a document, its chunks, and every node and edge left without provenance.

        Nodes and edges that other chunks also support stay, minus this document's
        provenance. Returns what went, so vector indexes can drop the same ids.
        """
        with self.transaction() as conn:
            chunk_ids = [
                r[0] for r in conn.execute("SELECT id FROM chunks WHERE doc_id = ?", (doc_id,))
            ]
            removed = self._forget(conn, doc_id, chunk_ids)
            conn.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
            conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))
        return removed

    def forget_sources(self, source_ids: Iterable[str]) -> DeleteResult:
        """Withdraw provenance ids (chunks that live outside ``chunks``, such as nodes
        written by a framework adapter) as :meth:`delete_document` withdraws a document's.

        Nodes and edges supported only by ``source_ids`` go, edges touching them go,
        and surviving nodes that lose provenance are reported as touched, so the
        builders can re-derive them (``EntityGraphBuilder.repair``).
        """
        ids = list(dict.fromkeys(source_ids))
        with self.transaction() as conn:
            return self._forget(conn, "", ids)

    def _forget(self, conn: sqlite3.Connection, doc_id: str, chunk_ids: list[str]) -> DeleteResult:
        """Drop the provenance of ``chunk_ids`` and what only it supported (in a transaction)."""
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS _gone_chunks (id TEXT PRIMARY KEY)")
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS _gone_nodes (id TEXT PRIMARY KEY)")
        conn.execute("DELETE FROM _gone_chunks")
        conn.execute("DELETE FROM _gone_nodes")
        conn.executemany("INSERT INTO _gone_chunks VALUES (?)", [(c,) for c in chunk_ids])
        # Nodes whose only provenance is in the deleted chunks.
        conn.execute(
            "INSERT INTO _gone_nodes SELECT DISTINCT ns.node_id FROM node_sources ns"
            " WHERE ns.chunk_id IN (SELECT id FROM _gone_chunks) AND NOT EXISTS ("
            "  SELECT 1 FROM node_sources o WHERE o.node_id = ns.node_id"
            "  AND o.chunk_id NOT IN (SELECT id FROM _gone_chunks))"
        )
        node_ids = [r[0] for r in conn.execute("SELECT id FROM _gone_nodes")]
        touched = [
            r[0]
            for r in conn.execute(
                "SELECT DISTINCT node_id FROM node_sources WHERE chunk_id IN"
                " (SELECT id FROM _gone_chunks) AND node_id NOT IN (SELECT id FROM _gone_nodes)"
            )
        ]
        conn.execute("DELETE FROM node_sources WHERE chunk_id IN (SELECT id FROM _gone_chunks)")
        conn.execute("DELETE FROM nodes WHERE id IN (SELECT id FROM _gone_nodes)")
        # Edges touching removed nodes or chunks, and edges that lost all provenance.
        conn.execute(
            "DELETE FROM edges WHERE src IN (SELECT id FROM _gone_nodes)"
            " OR dst IN (SELECT id FROM _gone_nodes)"
            " OR src IN (SELECT id FROM _gone_chunks) OR dst IN (SELECT id FROM _gone_chunks)"
        )
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS _gone_edges (src TEXT, dst TEXT, kind TEXT)")
        conn.execute("DELETE FROM _gone_edges")
        conn.execute(
            "INSERT INTO _gone_edges SELECT DISTINCT es.src, es.dst, es.kind"
            " FROM edge_sources es WHERE es.chunk_id IN (SELECT id FROM _gone_chunks)"
            " AND NOT EXISTS (SELECT 1 FROM edge_sources o WHERE o.src = es.src"
            "  AND o.dst = es.dst AND o.kind = es.kind"
            "  AND o.chunk_id NOT IN (SELECT id FROM _gone_chunks))"
        )
        conn.execute(
            "DELETE FROM edges WHERE (src, dst, kind) IN (SELECT src, dst, kind FROM _gone_edges)"
        )
        conn.execute("DELETE FROM edge_sources WHERE chunk_id IN (SELECT id FROM _gone_chunks)")
        conn.execute(
            "DELETE FROM edge_sources WHERE src IN (SELECT id FROM _gone_nodes)"
            " OR dst IN (SELECT id FROM _gone_nodes)"
        )
        conn.execute("DELETE FROM records WHERE chunk_id IN (SELECT id FROM _gone_chunks)")
        conn.execute("DELETE FROM records WHERE owner IN (SELECT id FROM _gone_nodes)")
        conn.execute("DELETE FROM progress WHERE item IN (SELECT id FROM _gone_chunks)")
        self._forget_done_below()  # a deleted last chunk's row number can be given again
        conn.execute("DELETE FROM extractions WHERE chunk_id IN (SELECT id FROM _gone_chunks)")
        return DeleteResult(
            doc_id=doc_id, chunk_ids=chunk_ids, node_ids=node_ids, touched_node_ids=touched
        )

    def drop_dangling(self, ids: Iterable[str]) -> tuple[int, int]:
        """Remove edges to any of ``ids`` that is neither a node nor a chunk now, and
        provenance rows naming such an id: ``(edges, provenance rows)`` removed.

        A delete forgets a document's chunks and what only they supported; a layer that
        then rewrites edges from a view read before the delete could name a chunk that is
        gone. Run over what a delete removed, after every layer has handled it, this
        keeps the invariant whatever a layer did: every edge joins two things that
        exist, every source is one that exists.
        """
        with self.transaction() as conn:
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS _dangling (id TEXT PRIMARY KEY)")
            conn.execute("DELETE FROM _dangling")
            conn.executemany("INSERT OR IGNORE INTO _dangling VALUES (?)", [(i,) for i in ids])
            conn.execute(
                "DELETE FROM _dangling WHERE id IN (SELECT id FROM nodes)"
                " OR id IN (SELECT id FROM chunks)"
            )
            gone = conn.execute(
                "SELECT src, dst, kind FROM edges WHERE src IN (SELECT id FROM _dangling)"
                " OR dst IN (SELECT id FROM _dangling)"
            ).fetchall()
            for table in ("edges", "edge_sources"):
                conn.executemany(
                    f"DELETE FROM {table} WHERE src = ? AND dst = ? AND kind = ?", gone
                )
            forget_edge_records(conn, gone)
            rows = 0
            for table in ("edge_sources", "node_sources", "records"):
                cursor = conn.execute(
                    f"DELETE FROM {table} WHERE chunk_id IN (SELECT id FROM _dangling)"
                )
                rows += max(cursor.rowcount, 0)
            conn.execute("DELETE FROM records WHERE owner IN (SELECT id FROM _dangling)")
        return len(gone), rows

    # -- nodes and edges ------------------------------------------------------------------

    def upsert_nodes(self, nodes: Iterable[Node]) -> None:
        """Insert or replace nodes; provenance accumulates (it is never replaced)."""
        nodes = list(nodes)
        with self.transaction() as conn:
            conn.executemany(
                "INSERT INTO nodes(id, kind, name, text, data) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(id) DO UPDATE SET kind=excluded.kind, name=excluded.name,"
                " text=excluded.text, data=excluded.data",
                [(n.id, n.kind, n.name, n.text, _dumps(n.data)) for n in nodes],
            )
            conn.executemany(
                "INSERT OR IGNORE INTO node_sources(node_id, chunk_id) VALUES (?, ?)",
                [(n.id, s) for n in nodes for s in n.sources],
            )

    def upsert_edges(self, edges: Iterable[Edge]) -> None:
        """Insert or replace edges (keyed by src, dst, kind); provenance accumulates."""
        edges = list(edges)
        with self.transaction() as conn:
            conn.executemany(
                "INSERT INTO edges(src, dst, kind, weight, data) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT(src, dst, kind) DO UPDATE SET weight=excluded.weight,"
                " data=excluded.data",
                [(e.src, e.dst, e.kind, float(e.weight), payload(e, _dumps)) for e in edges],
            )
            conn.executemany(
                "INSERT OR IGNORE INTO edge_sources(src, dst, kind, chunk_id) VALUES (?, ?, ?, ?)",
                [(e.src, e.dst, e.kind, s) for e in edges for s in e.sources],
            )

    def delete_nodes(self, node_ids: Iterable[str]) -> None:
        """Remove nodes with their provenance, every edge touching them, and its provenance."""
        ids = list(dict.fromkeys(node_ids))
        with self.transaction() as conn:
            for start in range(0, len(ids), 500):
                batch = ids[start : start + 500]
                marks = ",".join("?" * len(batch))
                conn.execute(f"DELETE FROM node_sources WHERE node_id IN ({marks})", batch)
                conn.execute(f"DELETE FROM records WHERE owner IN ({marks})", batch)
                conn.execute(f"DELETE FROM nodes WHERE id IN ({marks})", batch)
                touching = conn.execute(
                    f"SELECT src, dst, kind FROM edges WHERE src IN ({marks}) OR dst IN ({marks})",
                    [*batch, *batch],
                ).fetchall()
                forget_edge_records(conn, touching)
                for table in ("edges", "edge_sources"):
                    conn.execute(
                        f"DELETE FROM {table} WHERE src IN ({marks}) OR dst IN ({marks})",
                        [*batch, *batch],
                    )

    def delete_edges(self, keys: Iterable[tuple[str, str, str]]) -> None:
        """Remove edges by ``(src, dst, kind)`` with their provenance (missing keys are fine)."""
        rows = list(dict.fromkeys(keys))
        with self.transaction() as conn:
            for table in ("edges", "edge_sources"):
                conn.executemany(
                    f"DELETE FROM {table} WHERE src = ? AND dst = ? AND kind = ?", rows
                )
            forget_edge_records(conn, rows)

    def nodes_from_sources(self, source_ids: Iterable[str]) -> list[str]:
        """Ids of the nodes whose provenance includes any of ``source_ids``."""
        ids = list(dict.fromkeys(source_ids))
        rows = self._query_in(
            "SELECT DISTINCT node_id FROM node_sources WHERE chunk_id IN ({marks})", ids
        )
        return list(dict.fromkeys(r[0] for r in rows))

    def edges_from_sources(self, source_ids: Iterable[str]) -> list[tuple[str, str, str]]:
        """``(src, dst, kind)`` of the edges whose provenance includes any of ``source_ids``."""
        ids = list(dict.fromkeys(source_ids))
        rows = self._query_in(
            "SELECT DISTINCT src, dst, kind FROM edge_sources WHERE chunk_id IN ({marks})", ids
        )
        return list(dict.fromkeys((r[0], r[1], r[2]) for r in rows))

    def get_nodes(self, node_ids: Iterable[str], *, sources: bool = True) -> dict[str, Node]:
        """Nodes by id (missing ids are absent). ``sources=False`` leaves provenance out:
        a node many chunks mention has as many rows, and a merge does not need them."""
        ids = list(dict.fromkeys(node_ids))
        rows = self._query_in(
            "SELECT id, kind, name, text, data FROM nodes WHERE id IN ({marks})", ids
        )
        found: dict[str, list[str]] = {}
        sql = "SELECT node_id, chunk_id FROM node_sources WHERE node_id IN ({marks})"
        for node_id, chunk_id in self._query_in(sql, ids) if sources else ():
            found.setdefault(node_id, []).append(chunk_id)
        return {
            node_id: Node(node_id, kind, name, text, _loads(data), tuple(found.get(node_id, ())))
            for node_id, kind, name, text, data in rows
        }

    def node_names(self, kind: str, node_ids: Iterable[str] | None = None) -> dict[str, str]:
        """Display names (else texts, else "") of the nodes of ``kind``, all or of ``node_ids``.

        What :meth:`get_nodes` would give as ``name or text``, without reading the nodes'
        data and provenance.
        """
        if node_ids is None:
            rows = self._query("SELECT id, kind, name, text FROM nodes WHERE kind = ?", (kind,))
        else:
            rows = self._query_in(
                "SELECT id, kind, name, text FROM nodes WHERE id IN ({marks})",
                list(dict.fromkeys(node_ids)),
            )
        return {node_id: name or text or "" for node_id, k, name, text in rows if k == kind}

    def provenance_of_kind(self, kind: str) -> list[tuple[str, str]]:
        """``(node id, chunk id)`` for every node of ``kind`` and chunk it came from."""
        return [
            (r[0], r[1])
            for r in self._query(
                "SELECT ns.node_id, ns.chunk_id FROM node_sources ns JOIN nodes n"
                " ON n.id = ns.node_id WHERE n.kind = ?",
                (kind,),
            )
        ]

    def edge_count(self, kind: str) -> int:
        """How many edges of ``kind`` the graph holds."""
        return int(self._query("SELECT COUNT(*) FROM edges WHERE kind = ?", (kind,))[0][0])

    def edge_rows(self, kinds: Sequence[str]) -> list[tuple[str, str, float]]:
        """``(src, dst, weight)`` of every edge of the given kinds (no payloads: fast)."""
        kinds = list(kinds)
        return [
            (r[0], r[1], float(r[2]))
            for r in self._query(
                f"SELECT src, dst, weight FROM edges WHERE kind IN ({','.join('?' * len(kinds))})",
                kinds,
            )
        ]

    def edge_pairs(self, kind: str) -> list[tuple[str, str]]:
        """``(src, dst)`` of every edge of ``kind``, by source then target: read from the
        ``(kind, src)`` index alone (:meth:`edge_rows`' weights are in the table's rows,
        one lookup an edge: about twice the time, 95 against 50 ms at 33,000 relations)."""
        sql = "SELECT src, dst FROM edges WHERE kind = ? ORDER BY src, dst"
        return self._query(sql, (kind,))  # rows are (src, dst) tuples already

    def version(self) -> tuple[int, int, int]:
        """A cheap fingerprint of the graph's size (changes whenever nodes or edges do).

        The counts are taken again only when something may have changed them: a write
        through this connection (``total_changes``) or a commit by another one (SQLite's
        ``data_version``). Counting a large graph takes milliseconds, and every graph
        query asks for the version once.
        """
        with self._lock:
            key = self.change_key()
            if self._version_key != key:
                row = self._conn.execute(
                    "SELECT (SELECT COUNT(*) FROM nodes), (SELECT COUNT(*) FROM edges),"
                    " (SELECT COUNT(*) FROM node_sources)"
                ).fetchone()
                self._version = (int(row[0]), int(row[1]), int(row[2]))
                self._version_key = key
            return self._version

    def data_version(self) -> int:
        """SQLite's ``data_version``: changes whenever another connection (another process,
        or another store on the same file) commits; this store's own writes leave it as it
        is. A cache of derived data that this store's writers keep current is valid while
        it has not changed."""
        with self._lock:
            return int(self._conn.execute("PRAGMA data_version").fetchone()[0])

    def nodes_of_kind(self, kind: str) -> list[Node]:
        ids = [r[0] for r in self._query("SELECT id FROM nodes WHERE kind = ?", (kind,))]
        found = self.get_nodes(ids)
        return [found[i] for i in ids]

    def get_edges(
        self, keys: Iterable[tuple[str, str, str]], *, entries: bool = True
    ) -> dict[tuple[str, str, str], Edge]:
        """Edges by ``(src, dst, kind)``; missing keys are absent from the result.

        ``entries=False`` leaves out per-chunk entries kept as records (a merge that
        only adds to an edge's tally does not read them)."""
        out: dict[tuple[str, str, str], Edge] = {}
        with self._lock:
            for src, dst, kind in dict.fromkeys(keys):
                row = self._conn.execute(
                    "SELECT weight, data FROM edges WHERE src = ? AND dst = ? AND kind = ?",
                    (src, dst, kind),
                ).fetchone()
                if row is not None:
                    out[(src, dst, kind)] = Edge(src, dst, kind, row[0], _loads(row[1]))
        if entries:
            self._attach_entries(out.values())
        return out

    def iter_edges(self, kind: str | None = None, batch_size: int = 5000) -> Iterator[Edge]:
        """All edges (optionally of one kind), read in key order in batches (keyset paging)."""
        kind_filter, params = (" AND kind = ?", [kind]) if kind is not None else ("", [])
        last = ("", "", "")
        while True:
            rows = self._query(
                "SELECT src, dst, kind, weight, data FROM edges WHERE (src, dst, kind) > (?, ?, ?)"
                f"{kind_filter} ORDER BY src, dst, kind LIMIT ?",
                [*last, *params, batch_size],
            )
            if not rows:
                return
            batch = [Edge(s, d, k, w, _loads(data)) for s, d, k, w, data in rows]
            self._attach_entries(batch)
            yield from batch
            last = rows[-1][:3]

    def edges_of(self, node_id: str, kind: str | None = None) -> list[Edge]:
        """Edges leaving or entering ``node_id`` (optionally of one kind)."""
        # Two indexed lookups (by src: the primary key; by dst and kind: edges_dst_kind):
        # an OR would scan. With a kind, the dst side does not read the node's edges of
        # other kinds (an entity named in thousands of chunks has as many mention edges
        # pointing at it).
        # Each half in its index's order, stated (a server's heap order is no order).
        kind_filter, extra = (" AND kind = ?", [kind]) if kind is not None else ("", [])
        out_sql = (
            f"SELECT src, dst, kind, weight, data FROM edges WHERE src = ?{kind_filter}"
            " ORDER BY dst, kind"
        )
        in_sql = (
            "SELECT src, dst, kind, weight, data FROM edges WHERE dst = ?"
            f" AND src != ?{kind_filter} ORDER BY kind, src"
        )
        rows = self._query(out_sql, [node_id, *extra])
        rows += self._query(in_sql, [node_id, node_id, *extra])
        edges = [Edge(s, d, k, w, _loads(data)) for s, d, k, w, data in rows]
        self._attach_entries(edges)
        return edges

    # -- extractions -------------------------------------------------------------------

    def put_extractions(self, extractions: Iterable[Any]) -> None:
        """Store per-chunk extractions (``Extraction`` objects), replacing older ones."""
        rows = [
            (e.chunk_id, e.extractor, json.dumps(e.to_dict(), ensure_ascii=False))
            for e in extractions
        ]
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO extractions(chunk_id, extractor, data) VALUES (?, ?, ?)",
                rows,
            )

    def get_extractions(self, chunk_ids: Iterable[str]) -> dict[str, Any]:
        """Stored extractions by chunk id (chunks never extracted are absent)."""
        from hygraph.extract.schema import Extraction

        ids = list(dict.fromkeys(chunk_ids))
        rows = self._query_in(
            "SELECT chunk_id, data FROM extractions WHERE chunk_id IN ({marks})", ids
        )
        return {cid: Extraction.from_dict(json.loads(data)) for cid, data in rows}

    def iter_extractions(self, batch_size: int = 1000) -> Iterator[Any]:
        """All stored extractions, in chunk order, read in batches."""
        ids = self.chunk_ids()
        for start in range(0, len(ids), batch_size):
            batch = ids[start : start + batch_size]
            found = self.get_extractions(batch)
            yield from (found[c] for c in batch if c in found)

    # -- progress (resumable builds) ----------------------------------------------------

    def done_items(self, task: str) -> set[str]:
        return {r[0] for r in self._query("SELECT item FROM progress WHERE task = ?", (task,))}

    def chunks_not_done(self, task: str) -> list[str]:
        """Chunk ids without a ``task`` progress item, in the order added: what a layer
        has still to take in, found by the database (an insert into a large index reads
        its few new chunks, not every chunk and every item done).

        The store remembers, per task, a row below which every chunk was done when it
        last looked (outside a transaction, so nothing it read can roll back), and looks
        only above it: five layers an insert each probing 25,000 chunks took 0.3 s. The
        mark is forgotten when another connection writes (``data_version``), when this
        store removes a task's items or deletes chunks (a reused row number), and with
        the process.
        """
        with self._lock:
            version = self.data_version()
            if self._done_below_at != version:
                self._done_below, self._done_below_at = {}, version
            below = self._done_below.get(task, 0)
            rows = self._query(
                "SELECT id, rowid FROM chunks WHERE rowid > ? AND NOT EXISTS (SELECT 1 FROM"
                " progress p WHERE p.task = ? AND p.item = chunks.id) ORDER BY rowid",
                (below, task),
            )
            if self._depth == 0:
                if rows:
                    self._done_below[task] = int(rows[0][1]) - 1
                else:
                    top = self._query("SELECT MAX(rowid) FROM chunks")[0][0]
                    self._done_below[task] = int(top or 0)
            return [r[0] for r in rows]

    def _forget_done_below(self, task: str | None = None) -> None:
        """Drop the marks of :meth:`chunks_not_done` (of ``task``, or all)."""
        if task is None:
            self._done_below = {}
        else:
            self._done_below.pop(task, None)

    def done_among(self, task: str, items: Sequence[str]) -> set[str]:
        """Those of ``items`` that ``task`` has marked done."""
        sql = "SELECT item FROM progress WHERE task = ? AND item IN ({marks})"
        return {r[0] for r in self._query_in(sql, items, (task,))}

    def mark_done(self, task: str, items: Iterable[str]) -> None:
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO progress(task, item) VALUES (?, ?)",
                [(task, i) for i in items],
            )

    def unmark_done(self, task: str, items: Iterable[str]) -> None:
        self._forget_done_below(task)
        with self.transaction() as conn:
            conn.executemany(
                "DELETE FROM progress WHERE task = ? AND item = ?", [(task, i) for i in items]
            )

    def clear_progress(self, task: str) -> None:
        self._forget_done_below(task)
        with self.transaction() as conn:
            conn.execute("DELETE FROM progress WHERE task = ?", (task,))

    # -- statistics and views -------------------------------------------------------------

    def chunk_count(self) -> int:
        return int(self._query("SELECT COUNT(*) FROM chunks")[0][0])

    def counts(self) -> dict[str, Any]:
        """Counts of documents, chunks, edges and nodes by kind."""
        by_kind = dict(self._query("SELECT kind, COUNT(*) FROM nodes GROUP BY kind ORDER BY kind"))
        edge_kinds = dict(
            self._query("SELECT kind, COUNT(*) FROM edges GROUP BY kind ORDER BY kind")
        )
        return {
            "documents": self._query("SELECT COUNT(*) FROM documents")[0][0],
            "chunks": self.chunk_count(),
            "extractions": self._query("SELECT COUNT(*) FROM extractions")[0][0],
            "nodes": by_kind,
            "edges": edge_kinds,
        }


def open_store(location: str | Path | None, *, read_only: bool = False) -> GraphStore:
    """The graph store at ``location``: a ``postgresql://`` URL opens one on a PostgreSQL
    server (:mod:`hygraph.graph.postgres`), anything else a SQLite file (None: in memory)."""
    from hygraph.graph.postgres import PostgresGraphStore, is_postgres_url

    if is_postgres_url(location):
        assert isinstance(location, str)
        return PostgresGraphStore(location, read_only=read_only)
    return GraphStore(location, read_only=read_only)
