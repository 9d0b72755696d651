"""Checkpoints of the graph store's write-ahead log, off the committing thread.

SQLite in WAL mode appends commits to ``graph.sqlite-wal`` and, by default, copies them
back into the database file (a checkpoint) inside whichever commit finds the log past
1,000 pages. That commit then waits for the copy and its fsyncs: in a 20,000-document
index one one-document insert in about eight took 2.2–3.1 s instead of 0.4–0.5 s, the
checkpoint inside its extraction's commit (``benchmarks/results/insert-at-scale-20k.md``).
The store turns SQLite's automatic checkpoint off on its connection and, after a commit
that leaves the log past :data:`CHECKPOINT_BYTES`, runs a PASSIVE checkpoint on a
connection of its own in a daemon thread: it copies what no reader still needs without
blocking writers or readers, and the commit returns at once. A process that ends mid-copy
loses nothing (a checkpoint is crash-safe; the log still holds every commit), and the last
connection to close checkpoints what is left, as SQLite does.

SQLite reuses the log file after a complete checkpoint instead of shrinking it, so its size
alone says nothing once it has passed the mark: every commit after that started a
checkpoint thread. The connection therefore
truncates the log when it restarts it (``journal_size_limit``), and a log that could not be
restarted (a reader still needs it) is checkpointed again only after another
:data:`CHECKPOINT_BYTES` of commits.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

#: Log size past which a commit starts a checkpoint (SQLite's default: 1,000 4-KiB pages).
CHECKPOINT_BYTES = 4_096_000


class WalCheckpointer:
    """Starts at most one background checkpoint at a time for the database at ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._wal = f"{path}-wal"
        self._running: threading.Thread | None = None
        self._lock = threading.Lock()
        self._next_at = CHECKPOINT_BYTES  # the log size that starts the next checkpoint
        self.started = 0  # checkpoints started (tests read it)
        self.done = 0  # checkpoints finished (tests read it)

    @classmethod
    def attach(cls, conn: sqlite3.Connection, path: Path | None) -> WalCheckpointer | None:
        """Turn ``conn``'s automatic checkpoint off and checkpoint for it (None in memory)."""
        if path is None:
            return None
        conn.execute("PRAGMA wal_autocheckpoint=0")
        conn.execute("PRAGMA journal_size_limit=0")  # a restarted log starts from empty
        return cls(path)

    def after_commit(self) -> None:
        """Start a checkpoint when the log has grown past :data:`CHECKPOINT_BYTES`."""
        try:
            size = os.stat(self._wal).st_size
        except OSError:
            return
        if size < CHECKPOINT_BYTES:
            self._next_at = CHECKPOINT_BYTES  # restarted since the last checkpoint
        if size < self._next_at:
            return
        with self._lock:
            if self._running is not None and self._running.is_alive():
                return
            self._next_at = size + CHECKPOINT_BYTES
            self.started += 1
            self._running = threading.Thread(target=self._checkpoint, daemon=True)
            self._running.start()

    def wait(self) -> None:
        """Until the running checkpoint (if any) has finished."""
        running = self._running
        if running is not None:
            running.join()

    def _checkpoint(self) -> None:
        try:
            conn = sqlite3.connect(str(self.path), timeout=30)
        except sqlite3.Error:
            return
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            self.done += 1
        except sqlite3.Error:
            pass  # another checkpoint or a closing database: the next commit tries again
        finally:
            conn.close()
