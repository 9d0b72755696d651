"""Shared fixtures: the bundled embedder (loaded once per session) and sample data."""

from __future__ import annotations

from pathlib import Path

import pytest

from hygraph.demo import sample_dir


@pytest.fixture(scope="session")
def minilm():
    """The real bundled all-MiniLM-L6-v2 embedder (offline), loaded once."""
    from hygraph.models.embedders import bundled_minilm

    embedder = bundled_minilm()
    embedder.embed(["warm up"])
    return embedder


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
