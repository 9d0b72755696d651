"""Free disk space: checked before an index is opened or written, named when it runs out.

Qdrant Edge keeps its segments in memory-mapped files that it grows as it writes. On a
full disk a write through such a mapping cannot fail with an error: the process gets
SIGBUS and dies without a word, and every later command on the index dies the same way.
So hygraph refuses, in one line, to open an embedded index with less than
:data:`MIN_FREE_MB` free on its file system, and to insert documents when the free
space is short of a rough estimate of what they will take. Errors that say the disk
filled up anyway (SQLite's "database or disk is full", ``ENOSPC``) are reported in the
same one line by the CLI. Nothing already committed is lost: builds resume, so the same
command completes once space is freed.
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hygraph.errors import HygraphError

#: Free space an embedded index needs to be opened at all (``HYGRAPH_MIN_FREE_MB``).
MIN_FREE_MB = 64
#: Bytes of index (SQLite rows, WAL, vectors, caches) per byte of input, roughly: in
#: ``hygraph bench`` MuSiQue's 1.0 MB corpus file made a 59.7 MB shared index (chunks,
#: extraction, chunk vectors, BM25) before any method's own layers.
INDEX_BYTES_PER_INPUT_BYTE = 50

_FULL_MESSAGES = ("no space left on device", "database or disk is full", "os error 28",
                  "disk quota exceeded")  # fmt: skip


class DiskFullError(HygraphError):
    """Too little free space to open or write an index (nothing was lost)."""


def min_free_bytes() -> int:
    try:
        mb = float(os.environ.get("HYGRAPH_MIN_FREE_MB", MIN_FREE_MB))
    except ValueError:
        mb = MIN_FREE_MB
    return int(max(mb, 0) * 1024 * 1024)


def free_bytes(path: Path) -> int:
    """Free bytes on the file system holding ``path`` (or its nearest existing parent)."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return int(shutil.disk_usage(candidate).free)
    return 0


def check_free(path: Path, need: int, doing: str) -> None:
    """Raise :class:`DiskFullError` when ``path``'s file system has less than ``need`` free."""
    free = free_bytes(path)
    if free < need:
        raise DiskFullError(
            f"not enough free disk space to {doing} {path}: {_mb(free)} free, about "
            f"{_mb(need)} needed; free some space (or set HYGRAPH_MIN_FREE_MB) and run the "
            "command again: what is already indexed is kept"
        )


def input_bytes(sources: Iterable[Any]) -> int:
    """The size of what an insert reads: files, files under folders, documents' text."""
    total = 0
    for source in sources:
        text = getattr(source, "text", None)
        if isinstance(text, str):
            total += len(text.encode("utf-8", errors="replace"))
            continue
        path = Path(source)
        try:
            if path.is_dir():
                total += sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
            elif path.exists():
                total += path.stat().st_size
        except OSError:
            continue  # unreadable: the loader reports it
    return total


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` (an OSError, a SQLite error, a Qdrant error's text) says the disk is full."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    text = str(exc).lower()
    return any(m in text for m in _FULL_MESSAGES)


def disk_full_line(path: Path) -> str:
    """The one line the CLI prints when a write found the disk full."""
    return (
        f"no space left on the disk of {path} ({_mb(free_bytes(path))} free): free some "
        "space and run the command again; what was committed is kept and the build resumes"
    )


def _mb(n: int) -> str:
    return f"{n / 1024 / 1024:,.1f} MB"


def used_bytes(path: Path) -> int:
    """Bytes allocated to the files under ``path`` (blocks, not apparent sizes: Qdrant
    preallocates sparse files). Files and folders that go while it walks (a build's
    temporary files, in another thread or process) are skipped, not an error."""
    total = 0
    for folder, _, files in os.walk(path):  # os.walk ignores folders it cannot list
        for name in files:
            try:
                total += os.stat(os.path.join(folder, name)).st_blocks * 512
            except OSError:
                continue
    return total
