"""Copy an index into another topology and back (``hygraph copy``).

An index built on one machine (SQLite file, embedded Qdrant Edge) moves to a shared
topology (a PostgreSQL graph store, a Qdrant server) that many processes and hosts
serve, or back to a folder of its own. Everything is copied as it is, nothing is
extracted or embedded again: the graph store's tables row by row (documents and chunks
in the order they were added), every vector collection point by point (vectors and
payloads, so stock LlamaIndex and LangChain stores read the passage collection as
before), and the files derived from them (caches, walk matrices), which stay valid
because the store's commit counter is copied too; where the target's vectors are
embedded, their write tokens are new, and the matrices keyed by them are made again.

**Resumable.** The copy records each table and collection it finished in the target's
own progress table; a copy stopped half-way (killed, a lost connection) is run again
with the same command and goes on from there. Rows and points are written with their
own keys, so a part copied twice is not duplicated. Until the copy finishes, the
target is marked (``.hygraph-copying``) and refuses to be opened as an index.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hygraph.errors import IndexMismatchError
from hygraph.graph.postgres import SHARED_MANIFEST
from hygraph.graph.store import GraphStore
from hygraph.index import GraphIndex
from hygraph.manifest import MANIFEST_NAME, Manifest
from hygraph.placement import COPYING_MARKER, opening_a_copy
from hygraph.progress import progress_bar

TASK = "copy"  # the target's progress task
BATCH = 20000  # rows per transaction (one page of keyset paging; a COPY each on PostgreSQL)
POINTS = 512  # vectors per page

#: Tables in the order they are copied (parents before the rows that name them), with
#: the key they are read in order of (``rowid``: the order documents and chunks were
#: added, kept in the copy) and the columns written.
TABLES: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("documents", ("rowid",),
     ("id", "title", "source", "content_hash", "metadata", "n_chunks", "added_at")),
    ("chunks", ("rowid",),
     ("id", "doc_id", "idx", "text", "n_tokens", "start_char", "end_char", "start_token",
      "end_token")),
    ("nodes", ("id",), ("id", "kind", "name", "text", "data")),
    ("node_sources", ("node_id", "chunk_id"), ("node_id", "chunk_id")),
    ("edges", ("src", "dst", "kind"), ("src", "dst", "kind", "weight", "data")),
    ("edge_sources", ("src", "dst", "kind", "chunk_id"), ("src", "dst", "kind", "chunk_id")),
    ("records", ("owner", "chunk_id"), ("owner", "chunk_id", "data")),
    ("extractions", ("chunk_id",), ("chunk_id", "extractor", "data")),
    ("progress", ("task", "item"), ("task", "item")),
)  # fmt: skip
#: Meta keys the target keeps its own of (the rest, the commit counter included, are copied).
OWN_META = ("schema_version", "manifest")
#: Files of the source folder that are not copied as files.
NOT_FILES = (MANIFEST_NAME, "graph.sqlite", "graph.sqlite-wal", "graph.sqlite-shm",
             ".write.lock", COPYING_MARKER, ".hygraph-creating")  # fmt: skip


@dataclass
class CopyReport:
    """What a copy moved (counted in this run; parts finished by an earlier run: resumed)."""

    source: str
    target: str
    rows: dict[str, int] = field(default_factory=dict)
    points: dict[str, int] = field(default_factory=dict)
    resumed: list[str] = field(default_factory=list)
    files: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "rows": self.rows,
            "points": self.points,
            "resumed": self.resumed,
            "files": self.files,
            "seconds": round(self.seconds, 3),
        }


def copy_index(
    source: str | Path,
    target: str | Path,
    *,
    store: str | None = None,
    qdrant_url: str | None = None,
    qdrant_api_key: str | None = None,
    qdrant_client: Any = None,
    qdrant_collection: str | None = None,
    source_options: dict[str, Any] | None = None,
    progress: bool | None = None,
) -> CopyReport:
    """Copy the index at ``source`` to a new index at ``target``.

    The target keeps its graph on ``store`` (a ``postgresql://`` URL; None: a SQLite
    file in ``target``) and its vectors on a Qdrant server (``qdrant_url`` or
    ``qdrant_client``, with ``qdrant_collection`` naming its passage collection; none:
    embedded in ``target``). ``source_options``: more arguments to open the source
    with (``qdrant_client=`` for one on a server reached through a client object).
    """
    started = time.perf_counter()
    target = Path(target).expanduser()
    marker = target / COPYING_MARKER
    if (target / MANIFEST_NAME).exists() and not marker.exists():
        raise IndexMismatchError(
            f"{target} already holds an index; copy to a new folder (or remove it first)"
        )
    report = CopyReport(str(source), str(target))
    with contextlib.ExitStack() as stack:
        src = stack.enter_context(GraphIndex.open(source, progress=False, **(source_options or {})))
        m = src.manifest
        with opening_a_copy():
            dst = stack.enter_context(
                GraphIndex(
                    target, embedder=m.embedder, store=store, qdrant_url=qdrant_url,
                    qdrant_api_key=qdrant_api_key, qdrant_client=qdrant_client,
                    qdrant_collection=qdrant_collection, chunk_size=m.chunk_size,
                    chunk_overlap=m.chunk_overlap, chunk_mode=m.chunk_mode,
                    extractor=m.extractor, progress=False,
                )
            )  # fmt: skip
            marker.write_text(f"{source}\n")
            with dst._writer.held():
                done = dst.store.done_items(TASK)
                for table, key, columns in TABLES:
                    if f"table:{table}" in done:
                        report.resumed.append(f"table:{table}")
                        continue
                    report.rows[table] = _copy_table(src.store, dst.store, table, key, columns,
                                                     progress)  # fmt: skip
                    dst.store.mark_done(TASK, [f"table:{table}"])
                for name in src.vectors.collection_names():
                    if f"vectors:{name}" in done:
                        report.resumed.append(f"vectors:{name}")
                        continue
                    report.points[name] = _copy_vectors(src, dst, name, progress)
                    dst.store.mark_done(TASK, [f"vectors:{name}"])
                report.files = _copy_files(src.path, target, m)
                dst.store.clear_progress(TASK)
                _copy_meta(src.store, dst.store)
                copied = Manifest.from_json(
                    _manifest_json(m), target, f"{src.path / MANIFEST_NAME}"
                )
                copied.store, copied.vectors = dst.manifest.store, dst.manifest.vectors
                copied.save(target)
                if copied.store:  # shared with other hosts; written as the meta rows were
                    text = (target / MANIFEST_NAME).read_text()
                    _write_meta(dst.store, [(SHARED_MANIFEST, text)])
                dst.manifest = copied  # (no mirror: closing the copy writes nothing more)
                _keep_query_files(dst)
            marker.unlink()
    report.seconds = time.perf_counter() - started
    return report


def _keep_query_files(index: GraphIndex) -> None:
    """What a build leaves for queries, made for the copy's own vectors: embedded
    collections' HNSW graphs (points copied one by one are not indexed until it is made;
    without it each search scans: dense search 11.6 against 4.2 ms at 24,857 passages) and the
    matrices a query process maps (:func:`hygraph.operators.ppr.keep_query_matrices`).

    The files copied are keyed by the store's commit counter (copied too) and by each
    collection's write token; embedded vectors get tokens of their own in the target, so
    there the copied files no longer match, and without this the first query of each
    process would read every vector back and the default method would walk the whole
    graph until a later build. Files that still match (vectors on a Qdrant server) are
    found and kept as they are.
    """
    from hygraph.operators.ppr import keep_query_matrices
    from hygraph.operators.recipe import method_settings

    index.resources.build_search_index()
    steps = method_settings(index.method(name) for name in index.manifest.methods)
    keep_query_matrices(index.resources, steps, walks=True)


def _manifest_json(manifest: Manifest) -> str:
    import json

    return json.dumps(manifest.to_dict())


def _pages(store: GraphStore, table: str, key: tuple[str, ...], columns: tuple[str, ...]
           ) -> Iterator[list[tuple]]:  # fmt: skip
    """The rows of ``table`` in ``key`` order, a page at a time (keyset paging)."""
    cols = ", ".join((*key, *columns))
    order = ", ".join(key)
    after: tuple | None = None
    while True:
        if after is None:
            sql, params = f"SELECT {cols} FROM {table} ORDER BY {order} LIMIT ?", [BATCH]
        else:
            marks = ", ".join("?" * len(key))
            sql = f"SELECT {cols} FROM {table} WHERE ({order}) > ({marks}) ORDER BY {order} LIMIT ?"
            params = [*after, BATCH]
        rows = store._query(sql, params)
        if not rows:
            return
        yield [row[len(key) :] for row in rows]
        after = tuple(rows[-1][: len(key)])


def _copy_table(src: GraphStore, dst: GraphStore, table: str, key: tuple[str, ...],
                columns: tuple[str, ...], progress: bool | None) -> int:  # fmt: skip
    total = int(src._query(f"SELECT COUNT(*) FROM {table}")[0][0])
    marks = ", ".join("?" * len(columns))
    sql = f"INSERT OR IGNORE INTO {table}({', '.join(columns)}) VALUES ({marks})"
    bar = progress_bar(None, total=total, desc=f"copying {table}", enabled=progress, unit="row")
    copied = 0
    try:
        for rows in _pages(src, table, key, columns):
            with dst.transaction() as conn:
                conn.executemany(sql, rows)
            copied += len(rows)
            bar.update(len(rows))
    finally:
        bar.close()
    return copied


def _copy_vectors(src: Any, dst: Any, name: str, progress: bool | None) -> int:
    dim = int(src.manifest.dim or 0)
    total = src.vectors.count(name)
    if dim:
        dst.vectors.ensure_collection(name, dim)
    bar = progress_bar(None, total=total, desc=f"copying vectors {name}", enabled=progress,
                       unit="point")  # fmt: skip
    copied, offset = 0, None
    try:
        while True:
            points, offset = src.vectors.scroll(name, offset, POINTS)
            if points:
                import numpy as np

                ids = [p[0] for p in points]
                vectors = np.vstack([np.asarray(p[1], dtype=np.float32) for p in points])
                if not dim:
                    dim = int(vectors.shape[1])
                    dst.vectors.ensure_collection(name, dim)
                dst.vectors.upsert(name, ids, vectors, [p[2] for p in points])
                copied += len(points)
                bar.update(len(points))
            if offset is None:
                return copied
    finally:
        bar.close()


def _copy_files(source: Path, target: Path, manifest: Manifest) -> int:
    """The source folder's other files (caches, derived matrices), not its graph file,
    manifest or embedded vectors."""
    skip = set(NOT_FILES)
    if manifest.vectors.get("backend") != "server":
        skip.add(str(manifest.vectors.get("path", "qdrant")))
    copied = 0
    for entry in sorted(source.iterdir()):
        if entry.name in skip or entry.name.startswith(".waiting"):
            continue
        if entry.is_dir():
            shutil.copytree(entry, target / entry.name, dirs_exist_ok=True)
            copied += sum(1 for p in entry.rglob("*") if p.is_file())
        elif entry.is_file():
            shutil.copy2(entry, target / entry.name)
            copied += 1
    return copied


def _copy_meta(src: GraphStore, dst: GraphStore) -> None:
    """The source's meta rows (its commit counter included), written one statement at a
    time outside a write transaction, so writing them does not count as a commit and
    the counter ends equal to the source's: what is keyed by it stays valid."""
    _write_meta(dst, [r for r in src._query("SELECT key, value FROM meta") if r[0] not in OWN_META])


def _write_meta(store: GraphStore, rows: list[tuple[str, str]]) -> None:
    with store._lock:
        for key, value in rows:
            store._conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                                (key, value))  # fmt: skip
