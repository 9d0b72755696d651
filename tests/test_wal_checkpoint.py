"""The graph store's write-ahead log is checkpointed off the committing thread.

SQLite's automatic checkpoint runs inside the commit that finds the log long, which made
one insert in about eight into a 20,000-document index take seconds
(:mod:`hygraph.graph.wal`). The store turns it off and checkpoints in a thread of its own.
"""

from __future__ import annotations

import threading

from hygraph.graph import wal
from hygraph.graph.store import GraphStore


def test_a_long_log_is_checkpointed_by_another_thread(tmp_path, monkeypatch):
    monkeypatch.setattr(wal, "CHECKPOINT_BYTES", 64 * 1024)
    store = GraphStore(tmp_path / "graph.sqlite")
    assert store._conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    committing = threading.get_ident()
    ran_in: list[int] = []
    inner = wal.WalCheckpointer._checkpoint

    def recorded(self: wal.WalCheckpointer) -> None:
        ran_in.append(threading.get_ident())
        inner(self)

    monkeypatch.setattr(wal.WalCheckpointer, "_checkpoint", recorded)
    for i in range(40):  # about 5 KB a commit: the log passes 64 KB a few times
        with store.transaction() as conn:
            conn.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (f"k{i}", "x" * 5000))
        if store._wal is not None:
            store._wal.wait()
    assert store._wal is not None
    assert ran_in and committing not in ran_in  # never inside a commit
    assert store._wal.done >= 1
    # the copy left the log reusable: what it holds now is less than all 40 commits
    busy, frames, copied = store._conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert busy == 0 and frames < 40
    assert store.get_meta("k39") == "x" * 5000
    store.close()


def test_an_in_memory_store_has_no_log_to_checkpoint():
    store = GraphStore(None)
    with store.transaction() as conn:
        conn.execute("INSERT INTO meta(key, value) VALUES ('a', 'b')")
    assert store._wal is None


def test_a_checkpointed_log_restarts_empty_and_is_not_checkpointed_at_every_commit(
    tmp_path, monkeypatch
):
    """SQLite reuses a checkpointed log without shrinking it: the size once past the mark
    started a checkpoint at every commit. The log now restarts from empty, and the next
    checkpoint waits for another mark's worth of commits."""
    monkeypatch.setattr(wal, "CHECKPOINT_BYTES", 64 * 1024)
    path = tmp_path / "graph.sqlite"
    store = GraphStore(path)
    assert store._conn.execute("PRAGMA journal_size_limit").fetchone()[0] == 0
    sizes = []
    commits = 120
    for i in range(commits):
        with store.transaction() as conn:
            conn.execute("INSERT INTO meta(key, value) VALUES (?, ?)", (f"k{i}", "x" * 5000))
        assert store._wal is not None
        store._wal.wait()
        sizes.append((tmp_path / "graph.sqlite-wal").stat().st_size)
    first = next(i for i, size in enumerate(sizes) if size >= wal.CHECKPOINT_BYTES)
    assert min(sizes[first + 1 :]) < wal.CHECKPOINT_BYTES  # restarted, and smaller
    grown = sum(1 for size in sizes if size >= wal.CHECKPOINT_BYTES)
    assert 2 <= store._wal.started <= grown  # one per time the log passed the mark
    logged, before = 0, 0  # bytes of log written over the commits
    for size in sizes:
        logged += size - before if size >= before else size
        before = size
    assert store._wal.started <= logged // wal.CHECKPOINT_BYTES + 1
    assert store._wal.started < commits - first - 1  # not one a commit
    store.close()
