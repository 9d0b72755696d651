"""Index files readable by their owner only.

An index holds the user's documents several times over: chunk texts in SQLite, LLM
prompts and replies in the cache, vectors and payloads in Qdrant's shards. None of it
should be readable by other users of the machine, whatever their umask. Two
mechanisms, because some files are written by libraries that take the process umask
(SQLite's ``-wal``/``-shm``, Qdrant Edge's segments):

- folders hygraph creates are made ``0700`` (:func:`private_dir`), which already keeps
  other users out of everything below them;
- after each write to an index or a cache, :func:`tighten` removes the group and
  other bits from every file and folder under it that this user owns.

The CLI also sets the process umask to ``077``, so that nothing it creates is ever
readable by others even for an instant.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from pathlib import Path

PRIVATE_DIR_MODE = 0o700
OTHERS = stat.S_IRWXG | stat.S_IRWXO


def private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) readable by its owner only; return it."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    path.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
    for created in missing:  # mkdir's mode is filtered by the umask: set it outright
        _restrict(created)
    return path


#: Folder → its modification time (ns) when all its entries were last tightened, kept
#: once that time was :data:`SETTLED_NS` old. While a folder's time is unchanged no entry
#: was added, removed or renamed in it (a file written in place keeps its mode), so a walk
#: visits only its subfolders there. A folder changed more recently is walked in full,
#: since a coarse file-system clock could give a change just after the walk the same time.
_SETTLED: dict[str, int] = {}
SETTLED_NS = 1_000_000_000


def tighten(path: Path) -> None:
    """Drop group and other permissions on ``path`` and everything below it that we own.

    Errors are ignored: a read-only mount or a file owned by someone else keeps its mode,
    and no write of the user's data depends on this. Runs after every insert, so it walks
    with ``os.scandir`` (one system call per entry, no path objects), and in a folder
    unchanged since its entries were tightened only into its subfolders.
    """
    if not path.exists():
        return
    _restrict(path)
    if path.is_dir():
        with contextlib.suppress(OSError):
            _tighten_below(os.fspath(path), path.stat().st_mtime_ns)


def _tighten_below(folder: str, mtime: int) -> None:
    settled = _SETTLED.get(folder) == mtime
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        try:
            if settled and not entry.is_dir(follow_symlinks=False):
                continue
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if _restricted(entry.path, info) and stat.S_ISDIR(info.st_mode):
            _tighten_below(entry.path, info.st_mtime_ns)
    if time.time_ns() - mtime >= SETTLED_NS:
        _SETTLED[folder] = mtime


def _restrict(path: Path) -> None:
    try:
        info = path.lstat()
    except OSError:
        return
    _restricted(os.fspath(path), info)


def _restricted(path: str, info: os.stat_result) -> bool:
    """Drop others' permissions on ``path`` (whose ``lstat`` is ``info``) when it is ours
    and not a link; whether it was."""
    if stat.S_ISLNK(info.st_mode) or info.st_uid != os.getuid():
        return False
    if info.st_mode & OTHERS:
        with contextlib.suppress(OSError):
            os.chmod(path, stat.S_IMODE(info.st_mode) & ~OTHERS)
    return True
