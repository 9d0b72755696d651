"""Shared fixtures: the bundled embedder (loaded once per session) and sample data."""

from __future__ import annotations

from pathlib import Path

import pytest

from hygraph.demo import sample_dir


@pytest.fixture(scope="session", autouse=True)
def onnx_exports(tmp_path_factory):
    """The embedder's ONNX export, made once per test run in a folder of its own (not the
    user's cache); processes the tests start inherit the setting."""
    import os

    from hygraph.models.onnx_runtime import ONNX_DIR_ENV

    if ONNX_DIR_ENV not in os.environ:
        os.environ[ONNX_DIR_ENV] = str(tmp_path_factory.mktemp("onnx-exports"))
    return os.environ[ONNX_DIR_ENV]


@pytest.fixture(scope="session")
def minilm(onnx_exports):
    """The real bundled all-MiniLM-L6-v2 embedder (offline), loaded once."""
    from hygraph.models.embedders import bundled_minilm

    embedder = bundled_minilm()
    embedder.embed(["warm up"])
    return embedder


@pytest.fixture
def layer_by_layer(monkeypatch):
    """Builds embed layer by layer, in each layer's batches, whatever their size: a small
    build's one call ahead (:mod:`hygraph.layers.ahead`) is off, so a test can fail an
    embedder part-way through a layer."""
    from hygraph.layers import ahead

    monkeypatch.setattr(ahead, "AHEAD_CHUNKS", 0)


@pytest.fixture(scope="session")
def sample_path() -> Path:
    return sample_dir()


@pytest.fixture(scope="session")
def sample_index_dir(tmp_path_factory, minilm, sample_path) -> Path:
    """An index of the bundled sample corpus with vanilla and bm25 (built once, read-only)."""
    from hygraph.index import GraphIndex

    path = tmp_path_factory.mktemp("sample") / "index"
    with GraphIndex(path, progress=False) as index:
        index.insert(sorted(sample_path.glob("*.md")), methods=["vanilla", "bm25"])
    return path


@pytest.fixture(scope="session")
def postgres_server():
    """A PostgreSQL server URL (see ``tests/postgres_server.py``), or None."""
    from postgres_server import start_server

    yield from start_server()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_location(request, tmp_path, postgres_server):
    """Where a fresh graph store lives, on each backend: call it with a name to get the
    same location again (a reopen), or another name for another store."""
    from postgres_server import schema_url

    if request.param == "postgresql" and postgres_server is None:
        pytest.skip("no PostgreSQL server (set HYGRAPH_TEST_POSTGRES or install postgresql)")
    made: dict[str, str] = {}

    def location(name: str = "g") -> str:
        if name not in made:
            made[name] = (
                str(tmp_path / f"{name}.sqlite")
                if request.param == "sqlite"
                else schema_url(postgres_server, name)
            )
        return made[name]

    location.backend = request.param  # type: ignore[attr-defined]
    yield location
    if request.param == "postgresql":
        from hygraph.graph.postgres import PostgresGraphStore

        for url in made.values():
            store = PostgresGraphStore(url)
            store.drop()
            store.close()


@pytest.fixture(params=["local", "server"])
def qdrant(request):
    """A ``QdrantClient`` in qdrant-client's local mode, then on a real Qdrant server
    (skipped without one): see ``tests/qdrant_server.py``."""
    from qdrant_server import empty_client

    with empty_client(request.param) as client:
        yield client
