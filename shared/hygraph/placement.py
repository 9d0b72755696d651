"""Where an index's graph lives: the index folder's SQLite file, or a shared PostgreSQL
store that other processes and hosts serve the same index from.

With a shared store the manifest is kept in the store too (``meta.manifest``): a host
with an empty folder joins the index the store holds, and a host that reopens sees the
methods another host built. The target of an unfinished ``hygraph copy`` carries a
marker and refuses to open, except to the copy itself.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Iterator
from pathlib import Path

from hygraph.errors import ConfigError, IndexMismatchError
from hygraph.graph.postgres import (
    SHARED_MANIFEST,
    is_postgres_url,
    public_url,
    shared_manifest,
    store_identity,
)
from hygraph.graph.store import GraphStore, open_store
from hygraph.manifest import Manifest
from hygraph.private import private_dir

SQLITE_NAME = "graph.sqlite"
#: Present in the target of ``hygraph copy`` until the copy has finished (hygraph.copy).
COPYING_MARKER = ".hygraph-copying"
_COPYING: contextvars.ContextVar[bool] = contextvars.ContextVar("hygraph_copying", default=False)


@contextlib.contextmanager
def opening_a_copy() -> Iterator[None]:
    """Let the copy itself open its unfinished target (see :mod:`hygraph.copy`)."""
    token = _COPYING.set(True)
    try:
        yield
    finally:
        _COPYING.reset(token)


def check_not_copying(path: Path) -> None:
    """Refuse an unfinished copy's folder (outside :func:`opening_a_copy`)."""
    marker = path / COPYING_MARKER
    if marker.exists() and not _COPYING.get():
        raise IndexMismatchError(
            f"{path} is an unfinished copy of the index in {marker.read_text().strip()}: "
            "run the same `hygraph copy` again to finish it"
        )


def join_shared_index(path: Path, store: str) -> None:
    """A folder with no index, given a store that holds one (built by another host):
    take the store's manifest and serve that index from here. Its vectors must be on a
    Qdrant server: embedded ones stay on the host that built them."""
    if not is_postgres_url(store):
        return  # refused with a clear error by open_graph_store
    text = shared_manifest(store)
    if text is None:
        return
    manifest = Manifest.from_json(text, path, f"the store {public_url(store)}")
    if manifest.vectors.get("backend") != "server":
        raise IndexMismatchError(
            f"the index in {public_url(store)} keeps its vectors embedded on the host "
            "that built it; copy it to a Qdrant server there (hygraph copy --qdrant-url "
            "...) to serve it from other hosts"
        )
    private_dir(path)
    manifest.save(path)


def open_graph_store(
    path: Path, manifest: Manifest, store: str | None, *, read_only: bool
) -> tuple[GraphStore, Manifest]:
    """The index's graph store and its manifest (the shared store's, where another host
    saved a newer one).

    The store is the manifest's (a new index records ``store``, never with a password),
    else the SQLite file in the folder. Another store for an existing index is an
    error; the same database and schema reached by another address is how this
    process reaches it.
    """
    if store is not None and not is_postgres_url(store):
        raise ConfigError(
            f"store {store!r} is not a postgresql:// URL (leave it out for the index's "
            "own SQLite file)"
        )
    recorded = manifest.store
    if store is not None and recorded is None and (path / SQLITE_NAME).exists():
        raise IndexMismatchError(
            f"index {path} keeps its graph in {path / SQLITE_NAME}; "
            "copy it to the server with `hygraph copy` instead"
        )
    # Hosts may reach one server by different addresses: the database and the schema
    # name the index's graph.
    if store is not None and recorded is not None:
        if store_identity(store) != store_identity(recorded):
            raise IndexMismatchError(
                f"index {path} keeps its graph in {recorded}, not {public_url(store)}"
            )
    if store is not None and recorded is None:
        manifest.store = public_url(store)
    opened = open_store(store or manifest.store or path / SQLITE_NAME, read_only=read_only)
    if manifest.store:
        manifest = _share_manifest(path, manifest, opened, read_only)
    return opened, manifest


def _share_manifest(path: Path, manifest: Manifest, store: GraphStore, read_only: bool) -> Manifest:
    """Keep the manifest in the shared store too: take the store's when another host
    saved a newer one, and write it there on every save from now on."""
    text = store.get_meta(SHARED_MANIFEST)
    if text is not None:
        shared = Manifest.from_json(text, path, f"the store {store!r}")
        if shared.updated_at > manifest.updated_at:
            from hygraph.methods.recipes import register_recipes

            manifest = shared
            register_recipes(shared.recipes)
            if not read_only:
                shared.save(path)
    if not read_only:
        manifest.mirror = lambda text: store.set_meta(SHARED_MANIFEST, text)  # type: ignore[attr-defined]
        if text is None:
            store.set_meta(SHARED_MANIFEST, json.dumps(manifest.to_dict()))
    return manifest
