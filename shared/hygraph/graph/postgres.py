"""The graph store on a PostgreSQL server, for indexes shared by several processes and hosts.

The same tables, guarantees and methods as the SQLite :class:`GraphStore` (it is a
subclass: every query is the one SQLite runs, written in the SQL both engines accept,
and a small translation covers the rest: placeholders, ``INSERT OR IGNORE/REPLACE``,
case-insensitive names). What differs is what SQLite gave for free:

- the order rows were added (SQLite's ``rowid``) is a ``BIGSERIAL`` column of the same
  name, so "in the order added" reads the same on both;
- text compares byte by byte (``COLLATE "C"``, as SQLite's ``BINARY``), so keyset paging
  and sorted reads give the same order on both;
- "another process committed" (SQLite's ``data_version``) is read from the commit
  counter every write transaction bumps in ``meta``;
- one writer at a time: a session-level advisory lock (:meth:`try_writer_lock`) that
  every host sees, where SQLite's index uses a lock file on one disk.
- many rows of one ``INSERT OR IGNORE`` (a build's or ``hygraph copy``'s batches) stream
  through COPY into a temporary table, then into the table, skipping rows already there:
  the statement's meaning without a round of the protocol per row.

Each index lives in its own PostgreSQL schema (``?schema=NAME`` in the URL, default
``hygraph``), so one database holds many. Readers are never blocked (MVCC): a query
reads the last committed state while a build writes. Driver: psycopg 3, plain SQL.
"""

from __future__ import annotations

import re
import threading
import zlib
from functools import lru_cache
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from hygraph.errors import ConfigError, HygraphError
from hygraph.graph.store import _SCHEMA as _SQLITE_SCHEMA
from hygraph.graph.store import GraphStore

SCHEMES = ("postgresql", "postgres")
#: The ``meta`` key holding the index's manifest, so every host serving it reads one.
SHARED_MANIFEST = "manifest"
DEFAULT_SCHEMA = "hygraph"


def _schema() -> str:
    """The SQLite store's schema in PostgreSQL's words (see the module docstring): the
    order rows were added as a ``rowid`` column, byte-wise text, 8-byte floats, and an
    index for case-insensitive names."""
    sql = _SQLITE_SCHEMA.replace(" WITHOUT ROWID", "").replace(" REAL", " DOUBLE PRECISION")
    for table in ("documents", "chunks"):
        head = f"CREATE TABLE IF NOT EXISTS {table} ("
        sql = sql.replace(head, f"{head}\n    rowid BIGSERIAL UNIQUE,")
    sql += "CREATE INDEX IF NOT EXISTS nodes_kind_lower_name ON nodes(kind, lower(name));\n"
    return sql.replace("TEXT", 'TEXT COLLATE "C"')


_SCHEMA = _schema()

#: Primary keys of the tables SQLite's ``INSERT OR REPLACE`` writes (the conflict target).
_KEYS = {
    "meta": ("key",),
    "documents": ("id",),
    "records": ("owner", "chunk_id"),
    "extractions": ("chunk_id",),
}
_OR_REPLACE = re.compile(r"INSERT OR REPLACE INTO (\w+)\s*\(([^)]*)\)(.*)$", re.S)
#: A translated ``INSERT OR IGNORE`` of one row of values: many such rows go through COPY.
_PLAIN_IGNORE = re.compile(
    r"INSERT INTO (\w+)\s*\(([^)]*)\) VALUES \([%s, ]+\) ON CONFLICT DO NOTHING"
)
#: Rows from which an ``INSERT OR IGNORE`` batch goes through COPY (below, a statement
#: per row costs less than the temporary table).
COPY_FROM_ROWS = 256
_NOCASE = re.compile(r"(\w+) = \? COLLATE NOCASE")


@lru_cache(maxsize=512)
def translate(sql: str) -> str:
    """A statement of the SQLite store in PostgreSQL's dialect (cached: a few dozen differ)."""
    sql = sql.replace("%", "%%")
    if sql.startswith("BEGIN"):
        return "BEGIN"
    if "INSERT OR IGNORE" in sql:
        sql = sql.replace("INSERT OR IGNORE", "INSERT") + " ON CONFLICT DO NOTHING"
    match = _OR_REPLACE.match(sql)
    if match:
        table, columns, rest = match.group(1), match.group(2), match.group(3)
        keys = _KEYS[table]
        names = [c.strip() for c in columns.split(",")]
        updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in names if c not in keys)
        sql = (
            f"INSERT INTO {table}({columns}){rest} ON CONFLICT ({', '.join(keys)})"
            f" DO UPDATE SET {updates}"
        )
    if "CAST(value AS INTEGER) + 1" in sql:  # the commit counter (a TEXT column)
        sql = sql.replace("CAST(value AS INTEGER) + 1", "(CAST(meta.value AS BIGINT) + 1)::TEXT")
    sql = _NOCASE.sub(r"lower(\1) = lower(?)", sql)
    return sql.replace("?", "%s")


def is_postgres_url(value: object) -> bool:
    return isinstance(value, str) and value.split(":", 1)[0].lower() in SCHEMES


def split_url(url: str) -> tuple[str, str]:
    """``(connection URL, schema)``: the ``schema`` query parameter is ours, not libpq's."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "schema"), DEFAULT_SCHEMA)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,62}", schema):
        raise ConfigError(
            f"schema {schema!r} in the store URL is not a plain PostgreSQL name "
            "(letters, digits, underscores; at most 63)"
        )
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    return urlunsplit(parts._replace(query=rest)), schema


def store_identity(url: str) -> tuple[str, str]:
    """``(database, schema)``: what names one index's graph, whatever address reaches it."""
    dsn, schema = split_url(url)
    return urlsplit(dsn).path.lstrip("/"), schema


def public_url(url: str) -> str:
    """The store URL without a password (what is written into the index's manifest;
    the password comes from ``PGPASSWORD`` or ``~/.pgpass`` when it is reopened)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{parts.username or ''}@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit(parts._replace(netloc=netloc))


class _Connection:
    """A psycopg connection that speaks the SQLite store's SQL (see :func:`translate`)
    and counts the rows its writes changed, as SQLite's ``total_changes`` does."""

    def __init__(self, conn: Any):
        self.raw = conn
        self.total_changes = 0

    def execute(self, sql: str, params: Any = ()) -> Any:
        cursor = self.raw.execute(translate(sql), params or None)
        if cursor.rowcount > 0 and cursor.description is None:
            self.total_changes += cursor.rowcount
        return cursor

    def executemany(self, sql: str, rows: Any) -> Any:
        rows = list(rows)
        cursor = self.raw.cursor()
        if not rows:
            return cursor
        statement = translate(sql)
        plain = _PLAIN_IGNORE.fullmatch(statement)
        if plain and len(rows) >= COPY_FROM_ROWS and self._in_transaction():
            self.total_changes += self._copy_ignoring(cursor, plain[1], plain[2], rows)
        else:
            cursor.executemany(statement, rows)
            self.total_changes += max(cursor.rowcount, 0)
        return cursor

    def _in_transaction(self) -> bool:
        from psycopg import pq

        return self.raw.info.transaction_status == pq.TransactionStatus.INTRANS

    @staticmethod
    def _copy_ignoring(cursor: Any, table: str, columns: str, rows: list) -> int:
        """``INSERT ... ON CONFLICT DO NOTHING`` of many rows, through COPY: the rows stream
        into a temporary table (no statement per row), then go into ``table`` in the order
        given, a row whose key is there already skipped, as the plain statement does. The
        order matters for the tables whose ``rowid`` keeps the order rows were added.
        Returns the rows added."""
        cols = ", ".join(c.strip() for c in columns.split(","))
        cursor.execute(
            f"CREATE TEMP TABLE _bulk ON COMMIT DROP AS SELECT {cols} FROM {table} WITH NO DATA"
        )
        cursor.execute("ALTER TABLE _bulk ADD COLUMN _at BIGSERIAL")
        with cursor.copy(f"COPY _bulk ({cols}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
        cursor.execute(
            f"INSERT INTO {table} ({cols}) SELECT {cols} FROM _bulk ORDER BY _at"
            " ON CONFLICT DO NOTHING"
        )
        added = max(cursor.rowcount, 0)
        cursor.execute("DROP TABLE _bulk")
        return added

    def close(self) -> None:
        self.raw.close()


def connect(url: str, *, read_only: bool = False) -> tuple[Any, str]:
    """A psycopg connection to the store at ``url`` (autocommit: transactions are the
    store's ``BEGIN``/``COMMIT``), with its schema on the search path."""
    try:
        import psycopg
    except ImportError:
        raise ConfigError(
            "a PostgreSQL store needs psycopg 3: pip install 'hygraph[postgres]'"
        ) from None
    dsn, schema = split_url(url)
    try:
        conn = psycopg.connect(dsn, autocommit=True, application_name="hygraph")
    except psycopg.Error as exc:
        raise HygraphError(
            f"cannot connect to the PostgreSQL store {public_url(dsn)}: "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}"
        ) from None
    conn.execute("SET client_min_messages = warning")
    if read_only:
        conn.execute("SET default_transaction_read_only = on")
    else:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    conn.execute(f'SET search_path = "{schema}"')
    return conn, schema


class PostgresGraphStore(GraphStore):
    """:class:`GraphStore` on a PostgreSQL server (see the module docstring).

    ``url``: ``postgresql://user@host:port/database?schema=NAME`` (libpq's URL; the
    password from the URL, ``PGPASSWORD`` or ``~/.pgpass``).
    """

    def __init__(self, url: str, *, read_only: bool = False):
        self.path = None
        self.url = public_url(url)
        self.read_only = read_only
        self._lock = threading.RLock()
        self._depth = 0
        self._done_below: dict[str, int] = {}  # chunks_not_done's marks (GraphStore's)
        self._done_below_at: int | None = None
        self._version_key: tuple[int, int] | None = None
        self._version = (0, 0, 0)
        self._chunk_ids: tuple[tuple[int, int], list[str]] | None = None
        self._own_commits = 0
        raw, self.schema = connect(url, read_only=read_only)
        self._conn = _Connection(raw)  # type: ignore[assignment]
        self._writer_key = zlib.crc32(f"hygraph:{self.schema}".encode())
        if read_only:
            if self._query("SELECT to_regclass('meta')")[0][0] is None:
                raise HygraphError(f"the PostgreSQL store {self.url} holds no index")
            return
        with self._lock:
            # One process creates the tables; another starting at the same moment waits.
            raw.execute("SELECT pg_advisory_lock(%s)", (self._writer_key + 1,))
            try:
                self._create_tables(_SCHEMA)
            finally:
                raw.execute("SELECT pg_advisory_unlock(%s)", (self._writer_key + 1,))

    def __repr__(self) -> str:
        return f"PostgresGraphStore({self.url!r})"

    def change_key(self) -> tuple[int, int]:
        """Changes whenever anything may have been written: through this connection (the
        rows its writes changed) or by another (the commit counter in ``meta``)."""
        with self._lock:
            return (self._conn.total_changes, self.generation())

    def data_version(self) -> int:
        """Changes whenever another connection commits a write (the commit counter, less
        this store's own commits); this store's own writes leave it as it is."""
        with self._lock:
            return self.generation() - self._own_commits

    # -- one writer -----------------------------------------------------------------------

    def try_writer_lock(self) -> str | None:
        """Take the index's write lock (every host sees it): None when taken, else who
        holds it. Held by this connection until :meth:`release_writer_lock` or its end."""
        with self._lock:
            raw = self._conn.raw
            got = raw.execute("SELECT pg_try_advisory_lock(%s)", (self._writer_key,)).fetchone()
            if got[0]:
                return None
            row = raw.execute(
                "SELECT a.pid, a.client_addr, a.application_name FROM pg_locks l"
                " JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory'"
                " AND l.objid = %s::oid AND l.granted LIMIT 1",
                (self._writer_key & 0xFFFFFFFF,),
            ).fetchone()
            if row is None:
                return "another session"
            return f"server process {row[0]} ({row[2] or 'client'} at {row[1] or 'local'})"

    def release_writer_lock(self) -> None:
        with self._lock:
            self._conn.raw.execute("SELECT pg_advisory_unlock(%s)", (self._writer_key,))

    def size_bytes(self) -> int:
        """What this index's tables and their indexes take on the server."""
        return sum(n for _, n, _ in self.table_sizes())

    def table_sizes(self) -> list[tuple[str, int, int]]:
        """``(table, bytes with its indexes and TOAST, rows estimated)`` of each table."""
        rows = self._query(
            "SELECT c.relname, pg_total_relation_size(c.oid), c.reltuples::BIGINT"
            " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = ? AND c.relkind = 'r' ORDER BY 2 DESC",
            (self.schema,),
        )
        return [(name, int(size), max(int(tuples), 0)) for name, size, tuples in rows]

    def close(self) -> None:
        with self._lock:
            if not self._conn.raw.closed:
                self._conn.close()

    def drop(self) -> None:
        """Remove this index's schema and everything in it (tests, ``hygraph`` copies)."""
        with self._lock:
            self._conn.raw.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')


def shared_manifest(url: str) -> str | None:
    """The manifest an index keeps in the store at ``url`` (None: the store holds none)."""
    raw, _ = connect(url, read_only=True)
    try:
        if raw.execute("SELECT to_regclass('meta')").fetchone()[0] is None:
            return None
        row = raw.execute("SELECT value FROM meta WHERE key = %s", (SHARED_MANIFEST,)).fetchone()
        return row[0] if row else None
    finally:
        raw.close()
