"""A small persistent key-value cache on SQLite, for LLM responses and embeddings.

Keys are SHA-256 digests of a canonical JSON of everything that determines the
result (model name, prompt or text, parameters), so a rebuild or a resumed build
never pays for the same call twice. Callers decide what is worth caching: failed,
truncated or unparseable responses are never written (a cache that replays a
failure forever is worse than no cache).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hygraph.private import private_dir, tighten


def _read_only_cache(path: Path) -> sqlite3.Connection | None:
    """The cache file opened for reading only, or None where there is none to read."""
    from hygraph.readonly import read_only_connection

    if not path.exists():
        return None
    try:
        return read_only_connection(path)
    except Exception:  # an unreadable cache is an empty one: it only saves work
        return None


def cache_key(*parts: Any) -> str:
    """A stable digest of JSON-serialisable parts."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class DiskCache:
    """Thread-safe SQLite-backed mapping from key to bytes.

    ``path=None`` keeps the cache in memory (useful for tests and one-off runs).
    """

    def __init__(self, path: str | Path | None, *, read_only: bool = False):
        self.path = Path(path) if path is not None else None
        #: Entries are read but never written (a cache in a folder this process may not
        #: write: what is computed now is kept in memory for this process only).
        self.read_only = read_only and self.path is not None
        self._lock = threading.Lock()
        if self.read_only:
            self._memory: dict[str, bytes] = {}
            self._conn = _read_only_cache(self.path)  # type: ignore[arg-type]
            return
        if self.path is not None:
            private_dir(self.path.parent)
        self._conn = sqlite3.connect(
            str(self.path) if self.path is not None else ":memory:",
            check_same_thread=False,
            isolation_level=None,
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS cache (key TEXT PRIMARY KEY, value BLOB)")
        if self.path is not None:  # prompts, replies and texts: the owner's alone
            for part in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm")):
                tighten(part)

    def get(self, key: str) -> bytes | None:
        return self.get_many([key]).get(key)

    def get_many(self, keys: Iterable[str]) -> dict[str, bytes]:
        keys = list(keys)
        out: dict[str, bytes] = {}
        if self.read_only:
            out.update((k, self._memory[k]) for k in keys if k in self._memory)
            keys = [k for k in keys if k not in out]
            if self._conn is None:
                return out
        with self._lock:
            for start in range(0, len(keys), 500):
                batch = keys[start : start + 500]
                marks = ",".join("?" * len(batch))
                rows = self._conn.execute(
                    f"SELECT key, value FROM cache WHERE key IN ({marks})", batch
                ).fetchall()
                out.update((k, bytes(v)) for k, v in rows)
        return out

    def set(self, key: str, value: bytes) -> None:
        self.set_many([(key, value)])

    def set_many(self, items: Iterable[tuple[str, bytes]]) -> None:
        items = list(items)
        if not items:
            return
        if self.read_only:
            self._memory.update(items)
            return
        with self._lock:
            self._conn.execute("BEGIN")
            self._conn.executemany("INSERT OR REPLACE INTO cache (key, value) VALUES (?, ?)", items)
            self._conn.execute("COMMIT")

    def get_json(self, key: str) -> Any | None:
        raw = self.get(key)
        return None if raw is None else json.loads(raw.decode("utf-8"))

    def set_json(self, key: str, value: Any) -> None:
        self.set(key, json.dumps(value, ensure_ascii=False).encode("utf-8"))

    def __len__(self) -> int:
        if self._conn is None:
            return len(self._memory)
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM cache").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
