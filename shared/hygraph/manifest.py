"""The index manifest: what an index directory was built with.

``manifest.json`` records the format version, the embedder (name and
dimension), the chunking, the vector backend, the methods built with their
configs, and a cost report per build. Opening an index checks it, so an index
is never silently queried with another embedder or read by an incompatible
version.

``vectors`` says where the vectors are: ``{"backend": "edge", "path": "qdrant"}``
(Qdrant Edge shards under the index directory), or ``{"backend": "server", "url",
"prefix", "collections", "vector_name"}`` on a Qdrant server. There, collection ``c``
is named ``<prefix><c>``, except those that ``collections`` names otherwise. An index
given a collection name (``qdrant_collection="app"``, or a framework's Qdrant store with
``collection_name="app"``) records ``"prefix": "app_"`` and ``"collections": {"chunks":
"app"}``: its passages are in ``app`` and the rest in ``app_facts``, ``app_entities`` ...
Without a name the prefix is ``hygraph_<index directory name>_``. Manifests written
before ``collections`` existed have only a prefix and keep their names. ``vector_name``
("" is Qdrant's unnamed vector) is the vector name of the collections the index creates;
an existing collection keeps its own.

The chunking is ``chunk_size``, ``chunk_overlap`` and ``chunk_mode`` (``"sentences"``
or ``"tokens"``, see :mod:`hygraph.ingest.chunker`). A manifest written before
``chunk_mode`` existed reads as ``"tokens"``, the chunking it was built with, so a
document inserted again gets the same chunks (and ids) and is not stored twice.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from hygraph.errors import IndexMismatchError, IndexNotFoundError

FORMAT = "hygraph-index"


def _package_version() -> str:
    """The installed hygraph version (read from the package metadata, not the facade)."""
    try:
        return version("hygraph")
    except PackageNotFoundError:  # running from a source tree that is not installed
        return "0+unknown"


__version__ = _package_version()
FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"
MAX_BUILDS_KEPT = 50
#: The chunking of an index whose manifest has no ``chunk_mode`` (hygraph.ingest.chunker).
LEGACY_CHUNK_MODE = "tokens"


@dataclass
class Manifest:
    embedder: str
    dim: int | None
    chunk_size: int
    chunk_overlap: int
    tokenizer: str
    vectors: dict[str, Any]
    chunk_mode: str = "sentences"  # hygraph.ingest.chunker.DEFAULT_MODE
    extractor: str = "offline"
    #: Where the graph store lives: None for ``graph.sqlite`` in the index folder, else a
    #: ``postgresql://`` URL (never with its password: see hygraph.graph.postgres).
    store: str | None = None
    methods: dict[str, dict[str, Any]] = field(default_factory=dict)
    layers: dict[str, dict[str, Any]] = field(default_factory=dict)
    recipes: dict[str, dict[str, Any]] = field(default_factory=dict)
    builds: list[dict[str, Any]] = field(default_factory=list)
    format: str = FORMAT
    format_version: int = FORMAT_VERSION
    hygraph_version: str = __version__
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def save(self, directory: Path) -> None:
        """Write atomically (temp file + rename), so a crash never leaves half a manifest.

        An index whose graph lives on a shared store also writes it there
        (``mirror``), so the other hosts serving the index see what was built."""
        self.updated_at = time.time()
        self.builds = self.builds[-MAX_BUILDS_KEPT:]
        tmp = directory / (MANIFEST_NAME + ".tmp")
        # The fields as they are (to_dict's deep copy is the same JSON, made slower: an
        # index saves its manifest on every insert, with up to MAX_BUILDS_KEPT builds).
        # One line: an indented dump takes Python's encoder, 4-5 times slower than C's.
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        text = json.dumps(data, ensure_ascii=False) + "\n"
        tmp.write_text(text)
        os.replace(tmp, directory / MANIFEST_NAME)
        mirror: Callable[[str], None] | None = self.__dict__.get("mirror")
        if mirror is not None:
            mirror(text)

    @classmethod
    def load(cls, directory: Path) -> Manifest:
        path = directory / MANIFEST_NAME
        if not path.exists():
            if directory.exists():
                raise IndexNotFoundError(
                    f"{directory} is not a hygraph index (no {MANIFEST_NAME}); "
                    "build one with: hygraph index PATH --index DIR"
                )
            raise IndexNotFoundError(
                f"no index at {directory}; build one with: hygraph index PATH --index {directory}"
            )
        try:
            text = path.read_text()
        except OSError as exc:
            raise IndexMismatchError(f"unreadable manifest {path}: {exc}") from exc
        return cls.from_json(text, directory, str(path))

    @classmethod
    def from_json(cls, text: str, directory: Path, origin: str) -> Manifest:
        """A manifest from its JSON (read from ``origin``: a file, or a shared store)."""
        path = origin
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise IndexMismatchError(f"unreadable manifest {path}: {exc}") from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise IndexMismatchError(f"{path} is not a hygraph manifest")
        version = data.get("format_version")
        if version != FORMAT_VERSION:
            raise IndexMismatchError(
                f"index {directory} has format version {version}, this hygraph ({__version__}) "
                f"reads version {FORMAT_VERSION}; rebuild the index with this version"
            )
        data.setdefault("chunk_mode", LEGACY_CHUNK_MODE)
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


def path_inside(root: Path, relative: Any, field: str) -> Path:
    """``root / relative`` when it stays inside ``root``; a one-line error otherwise.

    A manifest is a file a user (or anyone who can write it) may edit: a path it names
    must not lead reads or writes out of the index folder (``..``, an absolute path).
    The check is on the name, so a folder the user linked elsewhere on purpose (a
    bigger disk) still works.
    """
    if not isinstance(relative, str) or not relative or Path(relative).is_absolute():
        raise IndexMismatchError(
            f"index {root}: manifest {field} must be a folder name inside the index, "
            f"not {relative!r}; restore it (the default is 'qdrant')"
        )
    parts = Path(os.path.normpath(relative)).parts
    if not parts or parts[0] in (".", ".."):
        raise IndexMismatchError(
            f"index {root}: manifest {field} {relative!r} leads outside the index folder; "
            "restore it (the default is 'qdrant')"
        )
    return root / relative
