"""Embedders and the embedding cache (the LLM client has its own test file)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hygraph.errors import ConfigError
from hygraph.models.cache import DiskCache, cache_key
from hygraph.models.embedders import CachedEmbedder, resolve_embedder
from hygraph.usage import UsageTracker


class CountingEmbedder:
    """Test double: deterministic 4-d vectors from text length, counting every call."""

    name = "counting"
    dim = 4

    def __init__(self):
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        out = np.array([[len(t), 1.0, t.count("a"), 0.5] for t in texts], dtype=np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_query(self, text):
        return self.embed([text])[0]


def test_cached_embedder_persists_and_only_embeds_misses(tmp_path):
    path = tmp_path / "emb.sqlite"
    inner = CountingEmbedder()
    tracker = UsageTracker()
    cached = CachedEmbedder(inner, DiskCache(path), tracker)
    first = cached.embed(["a", "bb", "a"])
    assert inner.calls == [["a", "bb"]]  # duplicates embedded once
    assert np.allclose(first[0], first[2])

    inner2 = CountingEmbedder()
    again = CachedEmbedder(inner2, DiskCache(path), tracker)
    second = again.embed(["bb", "ccc", "a"])
    assert inner2.calls == [["ccc"]]
    assert np.allclose(second[0], first[1]) and np.allclose(second[2], first[0])
    total = tracker.total()
    assert total.embeddings == 3 and total.embeddings_cached == 3


def test_cache_key_depends_on_every_part():
    assert cache_key("m", "text", {"t": 0}) == cache_key("m", "text", {"t": 0})
    assert cache_key("m", "text", {"t": 0}) != cache_key("m", "text", {"t": 1})
    assert cache_key("m1", "text") != cache_key("m2", "text")


def test_disk_cache_roundtrip(tmp_path):
    cache = DiskCache(tmp_path / "c.sqlite")
    cache.set_json("k", {"a": [1, 2]})
    cache.close()
    assert DiskCache(tmp_path / "c.sqlite").get_json("k") == {"a": [1, 2]}
    assert DiskCache(None).get("missing") is None


def test_bundled_minilm_is_offline_and_normalised(minilm):
    vectors = minilm.embed(
        ["The harbour town of Harrowby", "A port town on the coast", "Quantum chromodynamics"]
    )
    assert vectors.shape == (3, 384) and minilm.dim == 384
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    assert resolve_embedder() is minilm


def test_unknown_embedder_spec():
    with pytest.raises(ConfigError, match="unknown embedder"):
        resolve_embedder("word2vec:foo")


def test_openai_embedder_against_scripted_endpoint():
    """The real openai SDK against a scripted /embeddings endpoint (httpx MockTransport)."""
    import httpx

    from hygraph.models.embedders import OpenAIEmbedder

    seen = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        seen.append(body)
        data = [
            {"object": "embedding", "index": i, "embedding": [float(len(t)), 0.0, 1.0]}
            for i, t in enumerate(body["input"])
        ]
        data.reverse()  # the API may return items out of order; index says where they go
        return httpx.Response(
            200,
            json={
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": 3, "total_tokens": 3},
            },
        )

    embedder = OpenAIEmbedder(
        "text-embedding-3-small",
        base_url="http://embed.test/v1",
        api_key="k",
        batch_size=2,
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
    )
    vectors = embedder.embed(["a", "bbb", "cc"])
    assert embedder.name == "openai:text-embedding-3-small" and embedder.dim == 3
    assert [len(b["input"]) for b in seen[:2]] == [2, 1]
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    assert vectors[1][0] > vectors[2][0] > vectors[0][0]  # order restored by index
