"""One writer per index: an advisory file lock taken by every write (insert, delete, rebuild).

A second process that starts writing an index another process is extending used to commit
its documents and extractions and only then fail on the vector store's own lock, leaving
half its work behind. The lock is taken before anything is written, so the second writer
fails at once, in one line, naming the process that holds it. Reentrant within an index
handle (an insert that replaces a document deletes it inside the same lock); released when
the write ends or the process dies (the operating system drops ``flock`` locks).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hygraph.errors import HygraphError

LOCK_NAME = ".write.lock"


class IndexBusyError(HygraphError):
    """Another process is writing this index."""


class WriterLock:
    """The write lock of one index directory (see the module docstring)."""

    def __init__(self, directory: Path, shared: Any = None):
        self.path = directory / LOCK_NAME
        #: A store that many hosts write (PostgreSQL): its own lock is taken too, since a
        #: lock file guards one disk only (``try_writer_lock``/``release_writer_lock``).
        self.shared = shared
        self._depth = 0
        self._handle: int | None = None

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the block (nested blocks share the outer hold)."""
        if self._depth == 0:
            self._acquire()
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self._release()

    def _acquire(self) -> None:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - no flock on this platform: no lock
            return
        handle = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(handle, 32, 0).decode(errors="replace").strip() or "another"
            os.close(handle)
            raise IndexBusyError(
                f"index {self.path.parent} is being written by process {holder}; run this "
                "again when it has finished (queries and info work meanwhile where the "
                "vector store allows it)"
            ) from None
        os.ftruncate(handle, 0)
        os.pwrite(handle, str(os.getpid()).encode(), 0)
        self._handle = handle
        holder = self.shared.try_writer_lock() if self.shared is not None else None
        if holder is not None:
            self._release_file()
            raise IndexBusyError(
                f"index {self.path.parent} is being written through its store by {holder}; "
                "run this again when it has finished (queries work meanwhile)"
            )

    def _release(self) -> None:
        if self._handle is not None and self.shared is not None:
            self.shared.release_writer_lock()
        self._release_file()

    def _release_file(self) -> None:
        if self._handle is not None:
            import fcntl

            fcntl.flock(self._handle, fcntl.LOCK_UN)
            os.close(self._handle)
            self._handle = None
