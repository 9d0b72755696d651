"""LlamaIndex's persistence idiom for a hygraph index.

A LlamaIndex app saves and reloads an index with::

    index.storage_context.persist(persist_dir="storage")
    index = load_index_from_storage(StorageContext.from_defaults(persist_dir="storage"))

For that to give back a :class:`~llama_index_hygraph.HyGraphIndex`, three things are
needed, all here:

- :class:`HyGraphIndexStruct`, the index struct kept in the index store. It records the
  hygraph index directory and the default method. Its type, ``"hygraph"``, is registered
  in LlamaIndex's two registries (struct type to struct class, struct type to index
  class), so ``load_index_from_storage`` rebuilds the struct and dispatches to
  ``HyGraphIndex``. LlamaIndex's type enum cannot be extended; a plain string key works
  because the enum's members are strings and hash like them.
- :class:`HyGraphStorageContext`, the ``StorageContext`` a ``HyGraphIndex`` hands out.
  Its ``persist`` first puts a copy of the hygraph index directory under
  ``<persist_dir>/hygraph`` (unless the index already lives inside ``persist_dir``),
  records that place in the struct, then writes LlamaIndex's own stores as usual. A
  persisted directory is thus self-contained: it can be moved, archived or reloaded
  after the process that made it (and its temporary directory) is gone.
- :func:`snapshot_index`, the copy: SQLite files through SQLite's online backup (a
  consistent copy while the index is open), every other file with holes kept as holes
  (embedded Qdrant preallocates large sparse files; a naive copy would write them out
  in full).

The vectors of an index on a Qdrant server stay on the server: the copy holds the
graph, and reloading it needs the same ``vector_store=``/``qdrant_client=`` (passed to
``load_index_from_storage`` as keyword arguments).
"""

from __future__ import annotations

import errno
import os
import shutil
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llama_index.core.data_structs.data_structs import IndexStruct
from llama_index.core.data_structs.registry import INDEX_STRUCT_TYPE_TO_INDEX_STRUCT_CLASS
from llama_index.core.storage.storage_context import DEFAULT_PERSIST_DIR, StorageContext

from hygraph.manifest import MANIFEST_NAME

if TYPE_CHECKING:
    from llama_index_hygraph.index import HyGraphIndex

#: The index struct type of a HyGraphIndex in LlamaIndex's registries and index stores.
STRUCT_TYPE = "hygraph"
#: Where ``storage_context.persist`` puts the copy of the hygraph index directory.
SNAPSHOT_DIR = "hygraph"
_BLOCK = 1 << 20


@dataclass
class HyGraphIndexStruct(IndexStruct):
    """The index store's record of a HyGraphIndex: where its directory is, and its method.

    ``path`` is absolute: LlamaIndex does not tell a loaded index which directory its
    storage context was read from. ``load_index_from_storage(..., persist_dir=...)``
    overrides it for a persisted directory that was moved.
    """

    path: str = ""
    method: str | None = None

    @classmethod
    def get_type(cls) -> Any:
        """The registered struct type (a string; see the module docstring)."""
        return STRUCT_TYPE


def register(index_class: type[HyGraphIndex]) -> None:
    """Let ``load_index_from_storage`` rebuild ``index_class`` from its struct (idempotent)."""
    from llama_index.core.indices.registry import INDEX_STRUCT_TYPE_TO_INDEX_CLASS

    INDEX_STRUCT_TYPE_TO_INDEX_STRUCT_CLASS[STRUCT_TYPE] = HyGraphIndexStruct  # type: ignore[index]
    INDEX_STRUCT_TYPE_TO_INDEX_CLASS[STRUCT_TYPE] = index_class  # type: ignore[index]


@dataclass
class HyGraphStorageContext(StorageContext):
    """A ``StorageContext`` whose ``persist`` also saves the hygraph index directory.

    It shares the stores of the context it was made from (see :meth:`wrapping`), so the
    user's own docstore or vector store objects stay the ones in use.
    """

    hygraph_index: Any = field(default=None, repr=False, compare=False)

    @classmethod
    def wrapping(cls, context: StorageContext, index: HyGraphIndex) -> HyGraphStorageContext:
        """A context over the same stores as ``context``, persisting ``index`` too."""
        return cls(
            docstore=context.docstore,
            index_store=context.index_store,
            vector_stores=context.vector_stores,
            graph_store=context.graph_store,
            property_graph_store=context.property_graph_store,
            hygraph_index=index,
        )

    def persist(
        self,
        persist_dir: str | os.PathLike = DEFAULT_PERSIST_DIR,
        *args: Any,
        fs: Any = None,
        **kwargs: Any,
    ) -> None:
        """Save the hygraph index directory, then LlamaIndex's stores, under ``persist_dir``.

        The index directory is copied to ``<persist_dir>/hygraph`` (replacing an earlier
        copy there) unless it already lies inside ``persist_dir``. The live index keeps
        working on its own directory. Only local paths are supported (``fs`` must be
        None), since the index is a directory of files that SQLite and Qdrant open.
        """
        index = self.hygraph_index
        if index is None:
            super().persist(persist_dir, *args, fs=fs, **kwargs)
            return
        if fs is not None:
            raise ValueError(
                "HyGraphIndex persists to a local directory; fsspec file systems (fs=) "
                "are not supported"
            )
        target = Path(persist_dir).expanduser().resolve()
        live = Path(index.persist_dir).resolve()
        index.docstore  # noqa: B018 - brings the docstore up to date before it is saved
        if live == target or target in live.parents:
            saved = live
        else:
            saved = target / SNAPSHOT_DIR
            snapshot_index(live, saved)
        struct = index.index_struct
        struct.path = str(saved)
        self.index_store.add_index_struct(struct)
        try:
            super().persist(target, *args, **kwargs)
        finally:
            struct.path = str(live)  # the live index still works on its own directory
            self.index_store.add_index_struct(struct)


def snapshot_index(source: Path, target: Path) -> None:
    """Copy the index directory ``source`` to ``target`` (replacing a hygraph index there).

    SQLite databases are copied with SQLite's backup API (consistent while open);
    write-ahead-log side files are left behind, since the backup includes their content.
    Other files keep their holes. ``target`` is written beside itself and swapped in, so
    a failed copy leaves an earlier one intact.
    """
    if target.exists() and not (target / MANIFEST_NAME).exists():
        raise FileExistsError(
            f"{target} exists and is not a hygraph index; persist to another directory"
        )
    partial = target.with_name(f".{target.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        for path in sorted(source.rglob("*")):
            dest = partial / path.relative_to(source)
            if path.is_dir():
                dest.mkdir(parents=True, exist_ok=True)
            elif path.name.endswith(("-wal", "-shm", "-journal")):
                continue
            elif path.suffix == ".sqlite":
                dest.parent.mkdir(parents=True, exist_ok=True)
                _backup_sqlite(path, dest)
            elif path.is_file():
                dest.parent.mkdir(parents=True, exist_ok=True)
                _copy_sparse(path, dest)
        partial.mkdir(parents=True, exist_ok=True)
        old = target.with_name(f".{target.name}.old-{os.getpid()}")
        if target.exists():
            target.rename(old)
        partial.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def _backup_sqlite(source: Path, target: Path) -> None:
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()


def _copy_sparse(source: Path, target: Path) -> None:
    """Copy a file, leaving holes (unwritten or all-zero blocks) as holes."""
    size = source.stat().st_size
    with open(source, "rb") as src, open(target, "wb") as dst:
        for start, end in _data_ranges(src.fileno(), size):
            src.seek(start)
            pos = start
            while pos < end:
                block = src.read(min(_BLOCK, end - pos))
                if not block:
                    break
                if block.count(0) != len(block):
                    dst.seek(pos)
                    dst.write(block)
                pos += len(block)
        dst.truncate(size)
    shutil.copystat(source, target)


def _data_ranges(fd: int, size: int) -> list[tuple[int, int]]:
    """The byte ranges of a file that hold data (all of it where holes cannot be found)."""
    if not hasattr(os, "SEEK_DATA"):
        return [(0, size)]
    ranges = []
    pos = 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as err:
            if err.errno == errno.ENXIO:  # only a hole remains
                break
            return [(0, size)]
        end = os.lseek(fd, start, os.SEEK_HOLE)
        ranges.append((start, end))
        pos = end
    return ranges
