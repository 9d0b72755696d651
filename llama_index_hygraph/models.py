"""Model adapters between LlamaIndex and the hygraph core.

- :class:`LlamaIndexEmbedder` and :class:`LlamaIndexLLM` let the core use a LlamaIndex
  ``BaseEmbedding`` or ``LLM`` (for example ``Settings.embed_model`` and ``Settings.llm``).
- :class:`HyGraphEmbedding` goes the other way: the core's offline default (the bundled
  all-MiniLM-L6-v2) as a LlamaIndex ``BaseEmbedding``, so LlamaIndex components such as a
  ``VectorContextRetriever`` embed queries exactly like the index did.

:func:`resolve_embedder` and :func:`resolve_llm` pick, in order: what the caller passed,
what ``Settings`` holds (only when the user set it: reading ``Settings.embed_model``
unset would build LlamaIndex's OpenAI default), then the offline default (no LLM).

A ``MockLLM`` counts as no LLM: LlamaIndex installs one for ``Settings.llm = None``, and
apps pass one to run offline. The core must not build or retrieve with its filler text,
while query and chat engines may still use it to "answer". A model of another framework
(a LangChain chat model or embedding) is refused in one line that says what to pass.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from llama_index.core import MockEmbedding, Settings
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.llms import LLM as LlamaLLM
from llama_index.core.llms import MockLLM
from pydantic import PrivateAttr

from hygraph.errors import ModelError
from hygraph.models.adapters import ForeignEmbedder
from hygraph.models.base import LLM, Embedder, LLMResponse, Message

log = logging.getLogger("hygraph")

_ROLES = {
    "system": MessageRole.SYSTEM,
    "user": MessageRole.USER,
    "assistant": MessageRole.ASSISTANT,
}


class LlamaIndexEmbedder(ForeignEmbedder):
    """A LlamaIndex ``BaseEmbedding`` as a core :class:`~hygraph.models.base.Embedder`.

    The name recorded in an index's manifest is ``llama-index:<model name>``, so an index
    built with one embedding model refuses to be opened with another.
    """

    def __init__(self, embed_model: BaseEmbedding):
        super().__init__()
        self.embed_model = embed_model
        model = getattr(embed_model, "model_name", None)
        if not model or model == "unknown":  # LlamaIndex's placeholder: use the class
            model = type(embed_model).__name__
        self.name = f"llama-index:{model}"

    def _embed_texts(self, texts: list[str]) -> Any:
        return self.embed_model.get_text_embedding_batch(texts)

    def _embed_query(self, text: str) -> Any:
        return self.embed_model.get_query_embedding(text)


def _chat_messages(messages: Sequence[Message]) -> list[ChatMessage]:
    return [
        ChatMessage(role=_ROLES.get(m.get("role", "user"), MessageRole.USER), content=m["content"])
        for m in messages
    ]


def _usage(raw: Any) -> tuple[int, int]:
    usage = getattr(raw, "usage", None) or (raw.get("usage") if isinstance(raw, dict) else None)
    if usage is None:
        return 0, 0
    get = usage.get if isinstance(usage, dict) else lambda k, d=0: getattr(usage, k, d)
    return int(get("prompt_tokens", 0) or 0), int(get("completion_tokens", 0) or 0)


class LlamaIndexLLM:
    """A LlamaIndex ``LLM`` as a core :class:`~hygraph.models.base.LLM` (chat messages).

    Sampling settings (temperature, output cap, JSON mode) belong to the LlamaIndex object,
    so the core's per-call parameters are not forwarded.
    """

    def __init__(self, llm: LlamaLLM):
        self.llm = llm
        model = getattr(getattr(llm, "metadata", None), "model_name", None)
        if not model or model == "unknown":
            model = type(llm).__name__
        self.name = f"llama-index:{model}"

    def _response(self, response: Any) -> LLMResponse:
        prompt, completion = _usage(getattr(response, "raw", None))
        return LLMResponse(
            text=response.message.content or "",
            prompt_tokens=prompt,
            completion_tokens=completion,
        )

    def complete(self, messages: Sequence[Message], **params: Any) -> LLMResponse:
        try:
            return self._response(self.llm.chat(_chat_messages(messages)))
        except Exception as err:
            raise ModelError(f"{self.name}: {err}") from err

    async def acomplete(self, messages: Sequence[Message], **params: Any) -> LLMResponse:
        try:
            return self._response(await self.llm.achat(_chat_messages(messages)))
        except Exception as err:
            raise ModelError(f"{self.name}: {err}") from err


class HyGraphEmbedding(BaseEmbedding):
    """A core embedder (default: the bundled all-MiniLM-L6-v2) as a LlamaIndex embedding."""

    _embedder: Any = PrivateAttr()

    def __init__(self, embedder: Embedder | str | None = None, **kwargs: Any):
        from hygraph.models.embedders import resolve_embedder

        inner = resolve_embedder(embedder) if not isinstance(embedder, Embedder) else embedder
        kwargs.setdefault("model_name", inner.name)
        super().__init__(**kwargs)
        self._embedder = inner

    @classmethod
    def class_name(cls) -> str:
        return "HyGraphEmbedding"

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._embedder.embed_query(query).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._embedder.embed([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._embedder.embed(texts).tolist()


def _foreign(value: Any, role: str, wanted: str) -> TypeError:
    """A one-line error for a model of the wrong kind (never the object's full repr)."""
    cls = type(value)
    name = f"{cls.__module__}.{cls.__qualname__}"
    if cls.__module__.split(".")[0].startswith("langchain"):
        return TypeError(
            f"{role}= takes {wanted}; got the LangChain model {name}. Use a LlamaIndex "
            "model here, or langchain_hygraph for LangChain apps"
        )
    return TypeError(f"{role}= takes {wanted}; got {name}")


def resolve_embedder(embed_model: Any = None) -> Embedder | str | None:
    """The core embedder for an argument, ``Settings.embed_model``, or None (index default)."""
    if embed_model is None:
        embed_model = Settings._embed_model  # set by the user, or None (never the default)
        if isinstance(embed_model, MockEmbedding):
            # ``Settings.embed_model = None`` installs a MockEmbedding (constant vectors of
            # dimension 1): an index built on it ranks nothing. It means "no paid
            # embedding calls", which the bundled offline model also keeps.
            log.warning(
                "Settings.embed_model is LlamaIndex's MockEmbedding (embeddings disabled); "
                "hygraph embeds with its bundled offline model instead. Pass "
                "embed_model=MockEmbedding(...) to the index to really use the mock"
            )
            return None
    elif isinstance(embed_model, MockEmbedding):
        log.warning(
            "embed_model is a MockEmbedding: every text gets the same vector, so dense "
            "retrieval ranks nothing (fine for tests of plumbing, not of results)"
        )
    if embed_model is None or isinstance(embed_model, str):
        return embed_model
    if isinstance(embed_model, HyGraphEmbedding):
        return embed_model.embedder
    if isinstance(embed_model, BaseEmbedding):
        return LlamaIndexEmbedder(embed_model)
    if isinstance(embed_model, Embedder):
        return embed_model
    raise _foreign(
        embed_model,
        "embed_model",
        "a LlamaIndex embedding (BaseEmbedding), a hygraph embedder or an embedder name",
    )


def is_mock_llm(llm: Any) -> bool:
    """Whether ``llm`` is LlamaIndex's ``MockLLM`` (filler text: no LLM for the core)."""
    return isinstance(llm, MockLLM)


def check_llm(llm: Any) -> None:
    """Raise the one-line error :func:`resolve_llm` gives for something that is not an LLM."""
    if llm is not None and not isinstance(llm, str | LlamaLLM | LLM):
        raise _foreign(llm, "llm", "a LlamaIndex LLM, a hygraph LLM or a model name")


def resolve_llm(llm: Any = None) -> LLM | str | None:
    """The core LLM for an argument, ``Settings.llm`` (only if set), or None (no LLM).

    A ``MockLLM``, passed or in ``Settings``, is None: the core neither builds nor
    retrieves with it.
    """
    if llm is None:
        llm = Settings._llm
    check_llm(llm)
    if is_mock_llm(llm):
        return None
    if llm is None or isinstance(llm, str):
        return llm
    if isinstance(llm, LlamaLLM):
        return LlamaIndexLLM(llm)
    return llm
