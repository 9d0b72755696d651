"""A LangChain chat model configured for answers stays out of retrieval unless asked in.

One small index (three sample documents, ``hypergraph`` and ``noderag``) is built once
without a model and reopened per test with a chat model test double, through
``HyGraphRetriever.from_persist_dir`` as an app would. Each test asks its own question, so
that the index's LLM cache never answers in place of the model.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.outputs import ChatGeneration, ChatResult  # noqa: E402

from hygraph.demo import sample_dir  # noqa: E402
from langchain_hygraph import HyGraphRetriever  # noqa: E402

NAMES = ["ilse-marrow.md", "great-dunmere-flood.md", "colworth-university.md"]


class RecordingChatModel(BaseChatModel):
    """A chat model test double: replies with ``reply``, counts its calls, and on request
    fails (``fail``) or stalls for ``delay`` seconds first, like a provider in trouble."""

    reply: str = '{"entities": ["Caddow Bridge"]}'
    fail: bool = False
    delay: float = 0.0
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "recording-test-double"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        self.calls += 1
        if self.delay:
            time.sleep(self.delay)
        if self.fail:
            raise RuntimeError("provider unavailable\n(503)")
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.reply))])


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory, minilm):
    """An index built without any model, closed again: each test reopens it."""
    path = tmp_path_factory.mktemp("llm") / "index"
    docs = [
        Document(page_content=(sample_dir() / n).read_text(), metadata={"source": n}) for n in NAMES
    ]
    HyGraphRetriever.from_documents(
        docs, method="hypergraph", methods=["noderag"], persist_dir=path, progress=False
    ).close()
    return path


def test_a_chat_model_for_answers_adds_no_call_to_retrieval(index_dir):
    model = RecordingChatModel(reply="Ilse Marrow.")
    with HyGraphRetriever.from_persist_dir(index_dir, llm=model, k=3) as retriever:
        for method in ("hypergraph", "noderag"):
            docs = HyGraphRetriever(index=retriever.index, method=method, k=3).invoke(
                "Who designed the Caddow Bridge?"
            )
            assert len(docs) == 3
        assert model.calls == 0
        # The same model does answer when asked to.
        result = retriever.index.query("Who designed the Caddow Bridge?", "hypergraph", answer=True)
        assert result.answer == "Ilse Marrow." and model.calls == 1


def test_llm_in_retrieval_is_passed_through(index_dir):
    model = RecordingChatModel()
    with HyGraphRetriever.from_persist_dir(
        index_dir, llm=model, llm_in_retrieval=True, k=2
    ) as retriever:
        assert len(retriever.invoke("Which engineer drew the Caddow Bridge?")) == 2
    assert model.calls == 1  # the question's entities


def test_a_failing_retrieval_llm_falls_back_with_a_warning(index_dir, caplog):
    model = RecordingChatModel(fail=True)
    with HyGraphRetriever.from_persist_dir(
        index_dir, llm=model, llm_in_retrieval=True, k=3
    ) as retriever:
        with caplog.at_level(logging.WARNING):
            start = time.perf_counter()
            docs = retriever.invoke("Where did the bridge engineer study?")
            elapsed = time.perf_counter() - start
    assert model.calls >= 1 and len(docs) == 3 and elapsed < 5
    assert any("offline rules" in r.getMessage() for r in caplog.records)


def test_a_hanging_retrieval_llm_times_out_fast(index_dir, caplog):
    model = RecordingChatModel(delay=2.0)
    with HyGraphRetriever.from_persist_dir(
        index_dir, llm=model, llm_in_retrieval=True, retrieval_timeout=0.2, k=3
    ) as retriever:
        with caplog.at_level(logging.WARNING):
            start = time.perf_counter()
            docs = retriever.invoke("When was the engineer's university founded?")
            elapsed = time.perf_counter() - start
    assert len(docs) == 3 and elapsed < 1.8  # well before the model would have answered
    assert any("within 0.2 s" in r.getMessage() for r in caplog.records)


def test_retrieval_llm_settings_are_checked(index_dir):
    with pytest.raises(TypeError, match="llm_in_retrieval must be True or False"):
        HyGraphRetriever.from_persist_dir(index_dir, llm_in_retrieval="yes")
    with pytest.raises(ValueError, match="retrieval_timeout must be a positive"):
        HyGraphRetriever.from_persist_dir(index_dir, retrieval_timeout=0)
