"""Reading an index from a folder this process may not write.

A read-only mount, a shared folder, an index copied with ``cp -a`` as another user: a
query or ``info`` must still answer. What is needed is to know that the folder is not
writable (:func:`writable`) and to open SQLite files without the side files and locks
it cannot create (:func:`read_only_connection`). Writes (an insert, a delete) are
refused with one line instead.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from hygraph.errors import HygraphError


def writable(folder: Path) -> bool:
    """Whether this process may create and change files in ``folder`` (a missing folder:
    whether its nearest existing parent is writable)."""
    for candidate in (folder, *folder.parents):
        if candidate.exists():
            return os.access(candidate, os.W_OK | os.X_OK)
    return False


def read_only_connection(path: Path) -> sqlite3.Connection:
    """A connection that reads the database at ``path`` and never writes beside it.

    SQLite reads a WAL database read-only only where it can find or make the ``-shm``
    index: with a ``-wal`` file left holding commits, ``mode=ro`` reads them; without
    one (a cleanly closed database) nothing is pending, and ``immutable=1`` reads the
    file as it is, without the locks and side files it could not create.
    """
    wal = Path(f"{path}-wal")
    pending = wal.exists() and wal.stat().st_size > 0
    mode = "mode=ro" if pending else "mode=ro&immutable=1"
    try:
        conn = sqlite3.connect(
            f"file:{quote(str(path))}?{mode}", uri=True, check_same_thread=False,
            isolation_level=None,
        )  # fmt: skip
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.Error as exc:
        raise HygraphError(f"cannot read {path} read-only: {exc}") from None
    return conn


def vectors_copy(index: Path, folder: Path) -> tuple[Path, Path]:
    """A private temporary copy of a read-only index's embedded vectors: the temporary
    folder (the caller removes it at close) and the copy in it.

    Qdrant Edge opens its segments for writing (memory-mapped payload storage), which
    a read-only folder refuses; the copy costs the folder's size in temporary space.
    """
    import shutil
    import tempfile

    from hygraph.private import tighten

    temporary = Path(tempfile.mkdtemp(prefix="hygraph-readonly-"))
    copy = temporary / folder.name
    try:
        shutil.copytree(folder, copy)
    except OSError as exc:
        raise HygraphError(
            f"index {index} is read-only and its vectors could not be copied to "
            f"{temporary} to read them ({exc.strerror or exc}); free space there "
            "(or set TMPDIR), or open a writable copy of the index"
        ) from None
    tighten(temporary)
    return temporary, copy
