"""Derived data kept on disk beside an index: written once under a key, never changed.

A query process should not rebuild what a build already computed (a walk graph took
8 s to build at 25,000 chunks, a collection's vectors seconds to read back). Each kept
item is a data file (``.npy`` for one matrix a reader maps, ``.npz`` for several
arrays) and a ``.json`` with its key and row ids, under a stem ``<name>.<digest>``. A
reader opens the ``.json`` first and takes the item only when its key is the one it
expects (a new key means the source changed, so a stale item is never read). Files are
written beside their names and renamed into place, data before ids; older items of the
same name are removed after a new one is written; a folder that cannot be written (a
read-only index) keeps nothing and raises nothing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import numpy as np


def kept_name(name: str) -> str:
    """``name`` as the first part of its items' file names (letters, digits, - and _)."""
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)


def kept_stem(folder: Path, name: str, key: str) -> Path:
    """Where the item ``name`` kept under ``key`` lives (a safe file name with a digest)."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    return folder / f"{kept_name(name)}.{digest}"


def read_ids(stem: Path, key: str) -> list[str] | None:
    """The row ids kept under ``stem`` when its key is ``key``; else None."""
    try:
        meta = json.loads(Path(f"{stem}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    ids = meta.get("ids") if isinstance(meta, dict) and meta.get("key") == key else None
    return ids if isinstance(ids, list) else None


def _owner_only(path: str) -> IO[bytes]:
    """``path`` opened for writing, created readable by its owner only whatever the umask
    (an index's files are: :mod:`hygraph.private`), so no other user sees it even while
    it is written."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb")


def write_kept(
    stem: Path, key: str, ids: list[str], suffix: str, save: Callable[[IO[bytes]], Any]
) -> None:
    """Keep a data file (written by ``save``) and ``ids`` under ``stem`` (see above)."""
    tmp = f".{os.getpid()}.tmp"
    written = [Path(f"{stem}{suffix}"), Path(f"{stem}.json")]
    try:
        stem.parent.mkdir(parents=True, exist_ok=True)
        with _owner_only(f"{written[0]}{tmp}") as fh:
            save(fh)
        with _owner_only(f"{written[1]}{tmp}") as fh:
            fh.write(json.dumps({"key": key, "ids": ids}).encode("utf-8"))
        for path in written:
            os.replace(f"{path}{tmp}", path)
    except OSError:
        for path in written:
            with contextlib.suppress(OSError):
                os.unlink(f"{path}{tmp}")
        return
    name = stem.name.split(".", 1)[0]
    for path in stem.parent.glob(f"{name}.*"):
        if path not in written and not path.name.endswith(".tmp"):
            with contextlib.suppress(OSError):
                path.unlink()


def read_arrays(stem: Path, key: str) -> tuple[list[str], dict[str, np.ndarray]] | None:
    """The ids and arrays :func:`write_arrays` kept under ``stem`` for ``key``, or None."""
    ids = read_ids(stem, key)
    if ids is None:
        return None
    try:
        with np.load(f"{stem}.npz", allow_pickle=False) as data:
            return ids, {name: data[name] for name in data.files}
    except (OSError, ValueError):
        return None


def write_arrays(stem: Path, key: str, ids: list[str], arrays: dict[str, np.ndarray]) -> None:
    """Keep several arrays and ``ids`` under ``stem`` (read back whole, not mapped)."""
    write_kept(stem, key, ids, ".npz", lambda fh: np.savez(fh, **arrays))
