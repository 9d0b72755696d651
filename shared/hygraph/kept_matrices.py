"""Whole collections' unit vectors, and matrices derived from them, kept beside an index.

A query that scores every point of a collection (:func:`hygraph.operators.ppr.
exact_scores`) multiplies one matrix of unit rows; a query process should map that
matrix from a file rather than read every vector back from Qdrant (seconds at 30,000
facts, and the collection's shard need not be loaded). :class:`KeptMatrices` makes those
matrices (patching the last one with the vectors written since, where this process's
vector index can tell which) and keeps them, and other matrices derived from the
vectors (the walk's dense-restart matrix), in ``vector-matrices/`` under the index
folder, each under a key that changes whenever what it is derived from does.

A small insert's matrices are neither made nor written at once (:meth:`KeptMatrices.
make_later`): the next query in the process patches them in memory (as it would have
after the insert), and they are made and written once no insert has come for
:data:`WRITE_DELAY` seconds, when the index closes, or when the process exits. Making
them took 5 ms of a one-document insert's 65 ms at 200 documents (re-reading the facts'
ids and copying their matrix; ``benchmarks/results/insert-parts-ddb1f11.json``), more as
the index grows; a burst pays it once.
The files only spare a later process reading every vector back; at MuSiQue's 26,000
facts the facts' matrix and its half-precision copy are 60 MB, which every one-document
insert rewrote (``benchmarks/results/insert-cost.md``). A burst of inserts now writes
them once; a process killed before then leaves the last written ones, which no longer
match and are not read (the next process reads the vectors back, as with no file).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from hygraph.graph.kept import kept_name, kept_stem
from hygraph.graph.store import GraphStore
from hygraph.idle import WhenIdle
from hygraph.vectors import VectorIndex

_log = logging.getLogger(__name__)

#: Where :meth:`KeptMatrices.unit_matrix` keeps whole collections' matrices (index folder).
MATRIX_DIR = "vector-matrices"
MATRIX_FORMAT = 1  # part of each matrix file's key: a new layout never reads an old file
#: Seconds without an insert after which a small insert's matrices are written.
WRITE_DELAY = 1.0
_TASK = "kept query matrices"  # its name among the index's deferred writes


class KeptMatrices:
    """The kept matrices of one open index.

    Args:
        path: the index folder.
        store, vectors: its graph store and vector index.
        read: reads stored vectors as matrix rows (:meth:`hygraph.resources.Resources.
            vector_matrix`).
        later: where deferred writes wait (:class:`hygraph.idle.WhenIdle`; the index's).
    """

    def __init__(
        self,
        path: Path,
        store: GraphStore,
        vectors: VectorIndex,
        read: Callable[..., tuple[list[str], np.ndarray]],
        later: WhenIdle | None = None,
    ) -> None:
        self.path = path
        #: Where deferred writes wait (the index's, shared with its other deferred files).
        self.later = later if later is not None else WhenIdle()
        self.store = store
        self.vectors = vectors
        self._read = read
        #: Per collection, the last unit matrix made or read: (write token, ids, rows).
        self._bases: dict[str, tuple[str, list[str], np.ndarray]] = {}
        #: Per name, a matrix made while deferring, not written yet: (stem, key, ids, rows).
        self._pending: dict[str, tuple[Path, str, list[str], np.ndarray]] = {}
        self._deferring = 0
        self._lock = threading.Lock()  # guards ``_pending``
        self._writing = threading.Lock()  # one writer at a time (a newer file replaces older)
        self._unmade: Callable[[], Any] | None = None  # makes what a small insert left

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """Within, matrices that are made are kept in memory and not written (see the
        module docstring); :meth:`write_later` or :meth:`write_pending` writes them."""
        self._deferring += 1
        try:
            yield
        finally:
            self._deferring -= 1

    def write_later(self, delay: float | None = None) -> None:
        """Write the deferred matrices once ``delay`` (:data:`WRITE_DELAY`) seconds pass
        without another deferred write of this index (:class:`hygraph.idle.WhenIdle`,
        whose close writes what is left)."""
        delay = WRITE_DELAY if delay is None else delay
        with self._lock:
            if not self._pending and self._unmade is None:
                return
        self.later.later(_TASK, self.write_pending, delay)

    def make_later(self, make: Callable[[], Any], delay: float | None = None) -> None:
        """Run ``make`` (which makes matrices) deferred, and write what it made, once
        ``delay`` seconds pass without another call, at the index's close or at exit, instead
        of now (:meth:`write_later`). A later call replaces an earlier one's ``make``: the
        matrices are made for the index as it is then."""
        with self._lock:
            self._unmade = make
        self.write_later(delay)

    def keep(self, make: Callable[[], Any], *, now: bool) -> None:
        """Make the query matrices with ``make`` and write them: ``now`` (a build; what
        earlier small inserts left to make is then not needed, and what they left to
        write is written once writes pause), or later (:meth:`make_later`)."""
        if not now:
            self.make_later(make)
            return
        with self._lock:
            self._unmade = None
        make()
        self.write_later()

    def write_pending(self) -> None:
        """Make what :meth:`make_later` left, and write every deferred matrix now (its
        files the owner's alone, as an insert's: :mod:`hygraph.private`).

        Making reads the index as a query in another thread would, so the timer's thread
        may run it while the next insert runs: each matrix is keyed by the graph version
        and the write token it was read at, so one made in between is never read as
        current. It only spares later processes a slow first query, so a failure is
        logged and leaves the files as they were."""
        from hygraph.private import tighten

        with self._writing:
            with self._lock:
                make, self._unmade = self._unmade, None
            if make is not None:
                try:
                    with self.deferred():
                        make()
                except Exception:  # noqa: BLE001 - an optional cache; the index is intact
                    _log.warning("could not make the kept query matrices", exc_info=True)
            with self._lock:
                pending, self._pending = self._pending, {}
            for stem, key, ids, matrix in pending.values():
                _write_matrix(stem, key, ids, matrix)
            if pending:
                tighten(self.path / MATRIX_DIR)

    def vector_stamp(self, collection: str) -> str | None:
        """A token that changes whenever ``collection`` is written, by any process.

        The embedded backend keeps one per collection. A Qdrant server keeps none; there
        the graph store's commit counter stands for it: this index writes its vectors
        only inside a build or a delete, each of which commits to the store right after
        (the progress of what was embedded, the delete's journal), so the counter moves
        with every write and a matrix made in between is replaced at that commit.
        """
        stamp = getattr(self.vectors, "stamp", None)
        if stamp is not None:
            return str(stamp(collection))
        return f"store-{self.store.generation()}"

    def unit_matrix(
        self, collection: str, version: Any, ids: Callable[[], Sequence[str]]
    ) -> tuple[list[str], np.ndarray]:
        """The stored vectors of ``ids()``, unit-normalised, as the rows of one float32 matrix.

        For scoring a query against a whole collection (:func:`hygraph.operators.ppr.
        exact_scores`). Ids without a vector are left out. Where there is a write token
        (:meth:`vector_stamp`), the matrix is also kept
        on disk, in ``vector-matrices/`` under the index folder (deleted with it), under
        a name made of the collection, ``version`` (the graph version ``ids()`` was
        read at) and the token, which is read before the vectors are: a write to the
        collection or to the graph gives a new name, so a stale matrix is never read,
        and a later process maps the file instead of reading every vector back from
        Qdrant (seconds at 30,000 facts, and the collection's shard need not be loaded).
        The file is written once and replaced, never changed, so readers need no lock;
        older matrices of the collection are removed when a new one is written.
        """
        stamp = self.vector_stamp(collection)

        def make() -> tuple[list[str], np.ndarray]:
            wanted = list(ids())
            patched = self._patched_matrix(collection, wanted)
            if patched is not None:
                return patched
            found, matrix = self._read(collection, wanted, release=True)
            if not found:
                return [], np.zeros((0, 0), dtype=np.float32)
            return found, _unit_rows(matrix)

        if stamp is None:
            return make()
        kept = self.kept_matrix(collection, [list(version), stamp], make)
        assert kept is not None
        self._bases[collection] = (stamp, kept[0], kept[1])
        return kept

    def _patched_matrix(
        self, collection: str, wanted: list[str]
    ) -> tuple[list[str], np.ndarray] | None:
        """:meth:`unit_matrix`'s rows for ``wanted`` from the last matrix of ``collection``
        this process made or read, reading back only the vectors written since.

        None when there is no such matrix, or when something other than this process's
        vector index wrote to the collection since (its write journal cannot tell what).
        An insert of one document reads its few vectors instead of the whole collection.
        In a process that has made none yet, the matrix the last build left on disk is
        the base (:meth:`_left_on_disk`): a one-document ``hygraph index`` run, a process of
        its own, read every vector back (0.16–0.21 s of its first insert's 0.51–0.86 s at
        200 documents, ``benchmarks/insert_parts.py``; about 3 s at 20,000).
        """
        since = getattr(self.vectors, "written_since", None)
        if since is None:
            return None
        base = self._bases.get(collection) or self._left_on_disk(collection)
        if base is None:
            return None
        changed = since(collection, base[0])
        if changed is None:
            return None
        old = self._base_rows(base[1], wanted, changed)
        fresh_at = np.flatnonzero(old < 0)
        fresh = [wanted[k] for k in fresh_at]
        found, read = self._read(collection, fresh, release=True)
        new_row = {i: n for n, i in enumerate(found)}
        new = np.full(len(wanted), -1, dtype=np.int64)
        new[fresh_at] = [new_row.get(i, -1) for i in fresh]
        keep = (old >= 0) | (new >= 0)  # a fresh id without a vector is left out
        out_ids = wanted if keep.all() else [wanted[k] for k in np.flatnonzero(keep)]
        if not out_ids:
            return [], np.zeros((0, 0), dtype=np.float32)
        old, new = old[keep], new[keep]
        dim = base[2].shape[1] if len(base[1]) else read.shape[1]
        matrix = np.empty((len(out_ids), dim), dtype=np.float32)
        _copy_rows(matrix, base[2], old, new)
        if found:
            matrix[new >= 0] = _unit_rows(read)[new[new >= 0]]
        return list(out_ids), matrix

    def _left_on_disk(self, collection: str) -> tuple[str, list[str], np.ndarray] | None:
        """The unit matrix of ``collection`` kept on disk (by the last build, in any
        process), as a base to patch: its write token, ids and rows (mapped); None if
        there is none. Which vectors changed since its token is for the caller to ask
        the journal, which knows only this process's writes: a matrix older than them,
        or written before another process's write, is not used."""
        folder = self.path / MATRIX_DIR
        for meta in sorted(folder.glob(f"{kept_name(collection)}.*.json")):
            try:  # the key :meth:`unit_matrix` writes: [format, name, version, token]
                key = json.loads(meta.read_text(encoding="utf-8"))["key"]
                fmt, name, _version, stamp = json.loads(key)
            except (OSError, ValueError, KeyError, TypeError):
                continue
            if fmt != MATRIX_FORMAT or name != collection or not isinstance(stamp, str):
                continue
            found = _read_matrix(meta.with_suffix(""), key)
            if found is not None:
                return stamp, found[0], found[1]
        return None

    @staticmethod
    def _base_rows(base_ids: Sequence[str], wanted: list[str], changed: set[str]) -> np.ndarray:
        """For each of ``wanted``, its row in the base matrix of ``base_ids``; -1 for ids not
        there or ``changed`` since. An insert appends: when ``wanted`` starts with the base's
        ids (one comparison in C) only the few changed ones are looked up; otherwise one
        dictionary over the base (at 30,000 rows, per-id Python tuples had cost a tenth of
        a second an insert, the dictionary still costs about 0.05 s)."""
        k = len(base_ids)
        if isinstance(base_ids, list) and len(changed) <= 64 and wanted[:k] == base_ids:
            old = np.full(len(wanted), -1, dtype=np.int64)
            old[:k] = np.arange(k)
            for i in changed:
                try:
                    old[base_ids.index(i)] = -1
                except ValueError:
                    pass
            return old
        row = dict(zip(base_ids, range(k), strict=True))
        for i in changed:
            row.pop(i, None)
        return np.fromiter(map(row.get, wanted, repeat(-1)), dtype=np.int64, count=len(wanted))

    def kept_matrix(
        self,
        name: str,
        key: list[Any],
        make: Callable[[], tuple[list[str], np.ndarray]] | None,
    ) -> tuple[list[str], np.ndarray] | None:
        """A derived matrix kept on disk in ``vector-matrices/`` under ``name`` and ``key``.

        Returns the kept ``(ids, matrix)`` (memory-mapped) when one was written under
        this key; otherwise ``make()``'s, written for later processes (not when empty or
        on a read-only folder), or None without ``make``. The key must change whenever
        what the matrix is derived from does (a graph version, a collection's write
        token, the parameters). Written once and replaced, never changed, so readers
        need no lock; ``name``'s older matrices are removed when a new one is written.
        """
        full = json.dumps([MATRIX_FORMAT, name, *key])
        stem = kept_stem(self.path / MATRIX_DIR, name, full)
        with self._lock:
            pending = self._pending.get(name)
        if pending is not None and pending[1] == full:
            return pending[2], pending[3]
        cached = _read_matrix(stem, full)
        if cached is not None or make is None:
            return cached
        found, matrix = make()
        # while an insert burst's matrices wait (make_later), a query's wait with them
        if found and (self._deferring or self._unmade is not None):
            with self._lock:
                self._pending[name] = (stem, full, found, matrix)
        elif found:
            with self._writing:
                with self._lock:
                    self._pending.pop(name, None)  # this one is newer
                _write_matrix(stem, full, found, matrix)
        return found, matrix


def _copy_rows(matrix: np.ndarray, base: np.ndarray, old: np.ndarray, new: np.ndarray) -> None:
    """Row ``p`` of ``matrix`` = ``base[old[p]]`` wherever ``old[p] ≥ 0`` (rows with
    ``new[p] ≥ 0`` are written by the caller after).

    An insert leaves the base's rows in order with a few new ones between them (fact ids
    sort by their entities, so new facts land all over): each run of consecutive base
    rows is one slice copy, where a gather of every row went through a temporary copy of
    the whole matrix.
    """
    if not len(old):
        return
    breaks = np.flatnonzero((np.diff(old) != 1) | (old[:-1] < 0)) + 1
    starts = np.concatenate(([0], breaks)).tolist()
    ends = np.concatenate((breaks, [len(old)])).tolist()
    firsts = old[starts].tolist()
    for start, end, first in zip(starts, ends, firsts, strict=True):
        if first >= 0:
            matrix[start:end] = base[first : first + end - start]


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    """``matrix`` with each row divided by its norm (zero rows stay zero), in place."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, np.where(norms > 0, norms, 1.0), out=matrix)
    return matrix


def _read_matrix(stem: Path, key: str) -> tuple[list[str], np.ndarray] | None:
    """The ids and (memory-mapped) matrix kept under ``stem`` for ``key``, or None."""
    from hygraph.graph.kept import read_ids

    ids = read_ids(stem, key)
    if ids is None:
        return None
    try:
        matrix = np.load(f"{stem}.npy", mmap_mode="r")
    except (OSError, ValueError):
        return None
    if matrix.ndim != 2 or matrix.shape[0] != len(ids):
        return None
    return ids, matrix


def _write_matrix(stem: Path, key: str, ids: list[str], matrix: np.ndarray) -> None:
    """Keep ``ids`` and ``matrix`` under ``stem`` (:func:`hygraph.graph.kept.write_kept`)."""
    from hygraph.graph.kept import write_kept

    write_kept(stem, key, ids, ".npy", lambda fh: np.save(fh, matrix))
