"""Qdrant clients for the tests of hygraph's Qdrant server backend.

Each such test runs in qdrant-client's in-process local mode and, when
``HYGRAPH_TEST_QDRANT_URL`` names one (``http://host:6333``), on a real Qdrant server
(skipped without it). That server must be a throwaway one: its collections are deleted
before and after each test, so every test starts from an empty server, as in local mode.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

QDRANT_URL_ENV = "HYGRAPH_TEST_QDRANT_URL"
KINDS = ("local", "server")


@contextmanager
def empty_client(kind: str) -> Iterator[Any]:
    """An empty ``QdrantClient`` of ``kind`` (``local`` or ``server``), emptied again after."""
    from qdrant_client import QdrantClient

    if kind == "local":
        warnings.filterwarnings("ignore", message="Payload indexes have no effect")
        client = QdrantClient(":memory:")
    else:
        url = os.environ.get(QDRANT_URL_ENV)
        if not url:
            pytest.skip(f"no Qdrant server (set {QDRANT_URL_ENV}=http://host:6333)")
        client = QdrantClient(url=url)
    _empty(client)
    try:
        yield client
    finally:
        _empty(client)
        client.close()


def _empty(client: Any) -> None:
    for collection in client.get_collections().collections:
        client.delete_collection(collection.name)
