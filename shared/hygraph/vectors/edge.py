"""Embedded vectors with Qdrant Edge (``qdrant-edge-py``): the real Qdrant engine in-process.

This is the only module that imports ``qdrant_edge`` (it is pre-1.0; keeping it in
one place keeps API changes cheap). Each collection is one Edge shard in its own
folder under the index's ``qdrant/`` directory. Updates go through Qdrant's
write-ahead log before an upsert returns, so a process killed mid-way keeps what was
written (loading a shard replays its log). Flushing (writing the segments and syncing
them to disk, 50-150 ms a shard even when little changed) is what makes them survive a
machine crash; it is done at most every ``FLUSH_INTERVAL_S`` seconds per shard, by the
next write or by the watcher below once the shard is idle, and always when a shard is
closed or handed over, so a stream of small inserts does not pay one flush per
collection per document.

**Sharing.** A shard folder can be loaded by one process at a time (Qdrant Edge locks
it and has no read-only mode). Within a process, every :class:`EdgeVectorIndex` on the
same folder (two ``GraphIndex.open(path)``, two framework wrappers over one
``persist_dir``) uses the same loaded shard, counted by a registry. Across processes,
the shards are handed over between operations:

* a process that finds a shard locked leaves a marker (``qdrant/.waiting/<pid>``) and
  tries again, with a growing pause, for up to ``wait`` seconds (``HYGRAPH_VECTORS_WAIT``,
  default 60);
* a process holding shards gives them back as soon as no operation of its own is using
  them and another process's marker is there: at the end of each operation, and from a
  small watcher thread while it is idle (an app that keeps an index open does not block
  a build, nor a build a ``hygraph query``). It loads them again (about 30 ms a
  collection) when it next needs them.

So any number of readers and one writer (the index-level write lock sees to that) take
turns, each operation seeing the last flushed state. A process that cannot get a shard
within ``wait`` gets a one-line error naming the processes holding it. A Qdrant server
(``qdrant_url=...``) serves many processes at once without turns.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from hygraph.errors import HygraphError
from hygraph.vectors.base import (
    INDEXED_FIELDS,
    SEARCH_PAYLOAD,
    TIE_SLACK,
    VectorHit,
    Where,
    as_vector_list,
    by_score_then_id,
    found_rows,
    point_id,
    record_rows,
    record_vectors,
    scrolled,
    with_graph_id,
)
from hygraph.vectors.journal import WriteJournal

_SHARD_MARKER = "edge_config.json"
WAITING_DIR = ".waiting"  # markers of processes waiting for a shard
HOLDERS_DIR = ".holders"  # markers of processes holding shards (named in errors)
WAIT_ENV = "HYGRAPH_VECTORS_WAIT"
DEFAULT_WAIT_S = 60.0
WATCH_INTERVAL_S = 0.05  # how often an idle holder looks for waiting processes
#: Most seconds a write stays unflushed (in Qdrant's write-ahead log only): a machine crash
#: loses at most this much. Qdrant server's own default ``flush_interval_sec`` is 5.
FLUSH_INTERVAL_S = 5.0
#: A collection's write token (see :meth:`EdgeVectorIndex.stamp`), beside its shard.
STAMP_FILE = "hygraph-writes"
RETRIEVE_BATCH = 1024  # points read per call when reading vectors back
_WRITES = itertools.count()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _marked_pids(folder: Path) -> list[int]:
    """Live processes with a marker in ``folder`` other than this one (stale ones removed)."""
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return []
    pids = []
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        if _pid_alive(int(name)):
            pids.append(int(name))
        else:
            with contextlib.suppress(OSError):
                os.unlink(folder / name)
    return pids


def _mark(folder: Path, on: bool) -> None:
    marker = folder / str(os.getpid())
    if on:
        folder.mkdir(exist_ok=True)
        marker.touch()
    else:
        with contextlib.suppress(OSError):
            marker.unlink()


@dataclass
class _Loaded:
    """A shard folder of this process, shared by its :class:`EdgeVectorIndex` objects.

    ``shard`` is None while the shard is given back to another process; ``busy`` counts
    the operations using it (it is given back only when none is). ``dirty_since`` is
    when the oldest write not yet flushed was made (None: nothing unflushed).
    """

    path: Path
    key: str
    wait: float
    shard: Any = None
    users: int = 0
    busy: int = 0
    lock: threading.RLock = field(default_factory=threading.RLock)
    dirty_since: float | None = None

    @property
    def root(self) -> Path:
        return self.path.parent

    def acquire(self) -> Any:
        """The loaded shard (loading it, waiting for another process if need be); busy + 1."""
        with self.lock:
            fresh = self.shard is None
            if fresh:
                self.shard = _load_waiting(self.path, self.wait)
            self.busy += 1
            shard = self.shard
        if fresh:  # registry work outside the shard's lock: locks are taken registry first
            _holding(self.root)
            _Watcher.ensure()
        return shard

    def release(self) -> None:
        with self.lock:
            self.busy -= 1
        self.yield_if_wanted()

    def yield_if_wanted(self) -> None:
        """Give the shard back if another process waits for this folder and it is idle."""
        if self.shard is None or not _marked_pids(self.root / WAITING_DIR):
            return
        with self.lock:
            if self.busy != 0:
                return
            closed = self._close()
        if closed:
            _holding(self.root)

    def unload(self) -> None:
        with self.lock:
            closed = self._close()
        if closed:
            _holding(self.root)

    def unload_if_idle(self) -> None:
        """Close the shard unless an operation of this process is using it (it loads
        again, in about 30 ms, when next needed)."""
        with self.lock:
            closed = self.busy == 0 and self._close()
        if closed:
            _holding(self.root)

    def wrote(self) -> None:
        """Record a write (call holding ``lock``); flush if the oldest unflushed one is due."""
        now = time.monotonic()
        if self.dirty_since is None:
            self.dirty_since = now
        if now - self.dirty_since >= FLUSH_INTERVAL_S:
            self.flush()

    def flush(self) -> None:
        """Flush the shard now if it holds unflushed writes (call holding ``lock``)."""
        if self.shard is not None and self.dirty_since is not None:
            self.shard.flush()
        self.dirty_since = None

    def flush_if_due(self) -> None:
        """From the watcher: flush an idle shard whose oldest unflushed write is due."""
        since = self.dirty_since
        if since is None or time.monotonic() - since < FLUSH_INTERVAL_S:
            return
        with self.lock:
            if self.busy == 0:
                self.flush()

    def _close(self) -> bool:
        if self.shard is None:
            return False
        try:
            self.shard.flush()
        finally:
            self.shard.close()
            self.shard = None
            self.dirty_since = None
        return True


def _holding(root: Path) -> None:
    """Mark this process as holding shards of ``root`` exactly while it holds one."""
    with _REGISTRY_LOCK:
        held = any(x.shard is not None for x in _LOADED.values() if x.root == root)
    _mark(root / HOLDERS_DIR, held)


#: Shard folders of this process by real path; guarded by ``_REGISTRY_LOCK``.
_LOADED: dict[str, _Loaded] = {}
_REGISTRY_LOCK = threading.RLock()


class _Watcher:
    """One daemon thread per process that gives idle shards back to waiting processes."""

    _thread: threading.Thread | None = None

    @classmethod
    def ensure(cls) -> None:
        with _REGISTRY_LOCK:
            if cls._thread is None or not cls._thread.is_alive():
                cls._thread = threading.Thread(
                    target=cls._run, name="hygraph-edge-watcher", daemon=True
                )
                cls._thread.start()

    @classmethod
    def _run(cls) -> None:
        while True:
            time.sleep(WATCH_INTERVAL_S)
            with _REGISTRY_LOCK:
                held = [x for x in _LOADED.values() if x.shard is not None]
                if not held:
                    cls._thread = None
                    return
            for loaded in held:
                with contextlib.suppress(Exception):  # a shard closing under us: try later
                    loaded.yield_if_wanted()
                    loaded.flush_if_due()


def open_shard_count() -> int:
    """How many shard folders this process has open (for tests and diagnostics)."""
    with _REGISTRY_LOCK:
        return len(_LOADED)


def _load_waiting(path: Path, wait: float) -> Any:
    """Load the shard at ``path``, waiting up to ``wait`` s while another process holds it."""
    from qdrant_edge import EdgeShard

    deadline = time.monotonic() + wait
    pause = 0.01
    waiting = path.parent / WAITING_DIR
    try:
        while True:
            try:
                return EdgeShard.load(str(path))
            except Exception as err:
                if "WouldBlock" not in str(err) and "lock" not in str(err).lower():
                    raise
            if time.monotonic() >= deadline:
                holders = _marked_pids(path.parent / HOLDERS_DIR)
                named = ", ".join(map(str, holders)) or "unknown"
                raise HygraphError(
                    f"the vectors of {path.parent.parent} are in use elsewhere (another "
                    f"process: {named}) and were not handed over within {wait:g} s; embedded "
                    "Qdrant serves one process at a time: close it, raise "
                    f"{WAIT_ENV}, or use a Qdrant server (qdrant_url=...) to share an index"
                ) from None
            _mark(waiting, True)
            time.sleep(pause)
            pause = min(pause * 2, 0.2)
    finally:
        _mark(waiting, False)


def _default_wait() -> float:
    raw = os.environ.get(WAIT_ENV, "")
    try:
        return max(0.0, float(raw)) if raw.strip() else DEFAULT_WAIT_S
    except ValueError:
        return DEFAULT_WAIT_S


def _filter(where: Where | None) -> Any:
    if not where:
        return None
    from qdrant_edge import FieldCondition, Filter, MatchAny, MatchValue

    must = []
    for key, value in where.items():
        if isinstance(value, (list, tuple, set)):
            must.append(FieldCondition(key=key, match=MatchAny(list(value))))
        else:
            must.append(FieldCondition(key=key, match=MatchValue(value)))
    return Filter(must=must)


class EdgeVectorIndex:
    """Collections stored as Qdrant Edge shards under ``root`` (one folder each).

    Shards load lazily, are shared with the other instances of this process on the
    same folder, and are handed over to other processes between operations (see the
    module docstring); :meth:`close` gives this instance's share back.

    Args:
        root: the folder holding one sub-folder per collection.
        wait: seconds to wait for a shard another process holds (default
            ``HYGRAPH_VECTORS_WAIT``, else 60).
    """

    backend = "edge"

    def __init__(self, root: str | Path, *, wait: float | None = None):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._real_root = Path(os.path.realpath(self.root))
        self.wait = _default_wait() if wait is None else float(wait)
        self._shards: dict[str, _Loaded] = {}  # the shares this instance holds
        self.journal = WriteJournal()  # what this instance wrote, token to token

    def _path(self, name: str) -> Path:
        return self.root / name

    def _key(self, name: str) -> str:
        return os.path.realpath(self._path(name))

    def has_collection(self, name: str) -> bool:
        return name in self._shards or (self._path(name) / _SHARD_MARKER).exists()

    def _loaded(self, name: str) -> _Loaded:
        held = self._shards.get(name)
        if held is not None:
            return held
        with _REGISTRY_LOCK:
            held = self._shards.get(name)
            if held is not None:
                return held
            if not self.has_collection(name):
                raise KeyError(f"no vector collection {name!r} in {self.root}")
            key = self._key(name)
            loaded = _LOADED.get(key)
            if loaded is None:
                loaded = _Loaded(Path(key), key, self.wait)
                _LOADED[key] = loaded
            loaded.users += 1
            self._shards[name] = loaded
            return loaded

    @contextlib.contextmanager
    def _use(self, name: str, *, write: bool = False) -> Iterator[Any]:
        """The shard of ``name`` for one operation (writes also hold its lock)."""
        loaded = self._loaded(name)
        shard = loaded.acquire()
        try:
            if write:
                with loaded.lock:
                    yield shard
            else:
                yield shard
        finally:
            loaded.release()

    def ensure_collection(self, name: str, dim: int) -> None:
        with _REGISTRY_LOCK:
            if self.has_collection(name):
                return
            from qdrant_edge import (
                Distance,
                EdgeConfig,
                EdgeShard,
                EdgeVectorParams,
                PayloadSchemaType,
                UpdateOperation,
            )

            path = self._path(name)
            path.mkdir(parents=True, exist_ok=True)
            shard = EdgeShard.create(
                str(path), EdgeConfig(vectors=EdgeVectorParams(size=dim, distance=Distance.Cosine))
            )
            for field_name in INDEXED_FIELDS:
                shard.update(
                    UpdateOperation.create_field_index(field_name, PayloadSchemaType.Keyword)
                )
            shard.flush()
            (path / _SHARD_MARKER).write_text(f'{{"dim": {dim}}}\n')
            loaded = _Loaded(Path(self._key(name)), self._key(name), self.wait, shard, users=1)
            _LOADED[loaded.key] = loaded
            self._shards[name] = loaded
        _holding(self._real_root)
        _Watcher.ensure()

    def upsert(
        self,
        name: str,
        ids: Sequence[str],
        vectors: np.ndarray,
        payloads: Sequence[dict[str, Any]],
    ) -> None:
        if len(ids) == 0:
            return
        from qdrant_edge import Point, UpdateOperation

        points = [
            Point(point_id(i), as_vector_list(v), with_graph_id(i, p))
            for i, v, p in zip(ids, vectors, payloads, strict=True)
        ]
        before = self.stamp(name)
        with self._use(name, write=True) as shard:
            for start in range(0, len(points), 1024):
                shard.update(UpdateOperation.upsert_points(points[start : start + 1024]))
            self._loaded(name).wrote()  # in the write-ahead log now; flushed when due
        self.journal.record(name, before, self._wrote(name), ids)

    def flush(self) -> None:
        """Flush every shard of this instance that holds unflushed writes (before copying
        the folder, for example; closing flushes as well)."""
        for loaded in list(self._shards.values()):
            with loaded.lock:
                loaded.flush()

    def _nearest(
        self, name: str, vector: np.ndarray, limit: int, where: Where | None, payload: bool
    ) -> list[Any]:
        """The shard's ``limit`` nearest points to ``vector`` (one request for both readers)."""
        from qdrant_edge import Query, QueryRequest

        request = QueryRequest(
            limit=limit,
            query=Query.Nearest(as_vector_list(vector)),
            filter=_filter(where),
            with_payload=payload,
            with_vector=False,
        )
        with self._use(name) as shard:
            return shard.query(request)

    def search(
        self, name: str, vector: np.ndarray, k: int, *, where: Where | None = None
    ) -> list[VectorHit]:
        hits = self._nearest(name, vector, max(1, int(k)) + TIE_SLACK, where, SEARCH_PAYLOAD)
        found = [VectorHit(h.payload["id"], float(h.score), dict(h.payload)) for h in hits]
        return by_score_then_id(found, max(1, int(k)))

    def best_score(self, name: str, vector: np.ndarray) -> float | None:
        # No payload: reading the hits' payloads is part of a search's cost, and only
        # the score is wanted here.
        if not self.has_collection(name):
            return None
        hits = self._nearest(name, vector, 1, None, False)
        return float(hits[0].score) if hits else None

    def delete(self, name: str, ids: Sequence[str]) -> None:
        if not ids or not self.has_collection(name):
            return
        from qdrant_edge import UpdateOperation

        before = self.stamp(name)
        with self._use(name, write=True) as shard:
            shard.update(UpdateOperation.delete_points([point_id(i) for i in ids]))
            shard.flush()
        self.journal.record(name, before, self._wrote(name), ids)

    def written_since(self, name: str, token: str) -> set[str] | None:
        """The ids this instance wrote to ``name`` since its write token was ``token``;
        None when another process (or instance) wrote since (see :class:`WriteJournal`)."""
        return self.journal.since(name, token, self.stamp(name))

    def _retrieve(self, name: str, ids: Sequence[str], with_vector: bool) -> list[Any]:
        if not ids or not self.has_collection(name):
            return []
        records: list[Any] = []
        ids = list(ids)
        with self._use(name) as shard:
            for start in range(0, len(ids), 1024):
                batch = [point_id(i) for i in ids[start : start + 1024]]
                records.extend(shard.retrieve(batch, with_payload=["id"], with_vector=with_vector))
        return records

    def existing(self, name: str, ids: Sequence[str]) -> set[str]:
        return {r.payload["id"] for r in self._retrieve(name, ids, False)}

    def vectors(self, name: str, ids: Sequence[str]) -> dict[str, np.ndarray]:
        return record_vectors(self._retrieve(name, ids, True))

    def vector_matrix(
        self, name: str, ids: Sequence[str], *, release: bool = False
    ) -> tuple[list[str], np.ndarray]:
        ids = list(dict.fromkeys(ids))
        if not ids or not self.has_collection(name):
            return [], np.zeros((0, 0), dtype=np.float32)
        row_of = {i: n for n, i in enumerate(ids)}
        found = np.zeros(len(ids), dtype=bool)
        out = None
        loaded = self._loaded(name)
        was_loaded = loaded.shard is not None
        with self._use(name) as shard:
            for start in range(0, len(ids), RETRIEVE_BATCH):
                batch = [point_id(i) for i in ids[start : start + RETRIEVE_BATCH]]
                records = shard.retrieve(batch, with_payload=["id"], with_vector=True)
                out = record_rows(records, row_of, out, found)
        if release and not was_loaded:
            # Loaded for this read alone (a whole collection copied out to be kept apart):
            # its memory-mapped segments, which the read made resident, are let go.
            loaded.unload_if_idle()
        return found_rows(ids, out, found)

    def stamp(self, name: str) -> str:
        """A token that changes whenever any process writes to collection ``name``.

        Every upsert and delete through this class replaces it once the write is in
        Qdrant's log, so a cache of the collection's vectors (see
        :meth:`hygraph.kept_matrices.KeptMatrices.unit_matrix`) that notes the token when it is
        made, before reading them, is current while the token is the same. "" when the
        collection was never written by a version that keeps it.
        """
        try:
            return (self._path(name) / STAMP_FILE).read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            return ""

    def _wrote(self, name: str) -> str:
        """Replace the collection's write token (after a write; see :meth:`stamp`); the new one."""
        path = self._path(name) / STAMP_FILE
        token = f"{time.time_ns()}-{os.getpid()}-{threading.get_ident()}-{next(_WRITES)}"
        tmp = path.with_name(f".{STAMP_FILE}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text(token, encoding="utf-8")
        os.replace(tmp, path)
        return token

    def count(self, name: str) -> int:
        if not self.has_collection(name):
            return 0
        from qdrant_edge import CountRequest

        with self._use(name) as shard:
            return int(shard.count(CountRequest(exact=True)))

    def build_search_index(self, names: Sequence[str]) -> list[str]:
        """Build Qdrant's HNSW graph for each collection of ``names`` whose vectors outgrew
        Qdrant's indexing threshold (10 MB of vectors by default, about 6,500 of 384
        dimensions).

        Qdrant Edge runs its optimizers only when asked, so without this every search of
        a large collection is a full scan, growing with the corpus. Below the threshold
        the segments stay plain and searches exact. The names of the collections whose
        segments changed.
        """
        built = []
        for name in names:
            if not self.has_collection(name):
                continue
            with self._use(name, write=True) as shard:
                info = shard.info()
                if info.indexed_vectors_count < info.points_count and shard.optimize():
                    built.append(name)
        return built

    def collection_names(self) -> list[str]:
        return sorted(
            p.name for p in self.root.iterdir() if p.is_dir() and (p / _SHARD_MARKER).exists()
        )

    def scroll(
        self, name: str, offset: Any, limit: int
    ) -> tuple[list[tuple[str, np.ndarray, dict[str, Any]]], Any]:
        from qdrant_edge import ScrollRequest

        request = ScrollRequest(offset=offset, limit=limit, with_payload=True, with_vector=True)
        with self._use(name) as shard:
            records, following = shard.scroll(request)
        return scrolled(records), following

    def close(self) -> None:
        """Give back this instance's shards; a shard closes when no instance uses it."""
        with _REGISTRY_LOCK:
            for loaded in self._shards.values():
                loaded.users -= 1
                if loaded.users <= 0:
                    loaded.unload()
                    _LOADED.pop(loaded.key, None)
                elif loaded.shard is not None:
                    with loaded.lock:
                        loaded.shard.flush()
                        loaded.dirty_since = None
            self._shards.clear()
