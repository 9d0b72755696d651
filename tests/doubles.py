"""Test doubles shared by the extractor tests.

:class:`ScriptedLLM` is a scripted stand-in for the :class:`~hygraph.models.base.LLM`
protocol: it returns realistic replies written into each test (well-formed and
malformed ones alike) and records every call. :class:`SilentBaseline` is an
empty-output-guard baseline that never finds anything.
"""

from __future__ import annotations

import asyncio
import copy
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hygraph.extract import ChunkInput, Extraction, ExtractionStats
from hygraph.models.base import LLMResponse, Message

Reply = str | Exception | LLMResponse
Responder = Callable[[list[Message], dict[str, Any]], Reply]


class ScriptedLLM:
    """A scripted test double for the LLM protocol: scripted replies, recorded calls.

    A reply comes from ``responder(messages, params)`` when one is given; otherwise from
    ``routes`` (a marker → reply map: a call whose last message contains the marker gets
    that reply, for concurrent calls that arrive in any order); otherwise from
    ``replies`` in order. Running out fails the test, so the number of calls is checked
    too. A string reply is the text, an exception is raised, an :class:`LLMResponse` is
    returned as is. Every call's messages and params are kept in :attr:`calls`.
    """

    def __init__(
        self,
        replies: Sequence[Reply] = (),
        *,
        responder: Responder | None = None,
        routes: Mapping[str, Reply] | None = None,
        name: str = "scripted-model",
    ) -> None:
        self.name = name
        self.replies: deque[Reply] = deque(replies)
        self.responder = responder
        self.routes = dict(routes or {})
        self.calls: list[tuple[list[Message], dict[str, Any]]] = []

    async def acomplete(self, messages: Sequence[Message], **params: Any) -> LLMResponse:
        self.calls.append((copy.deepcopy(list(messages)), dict(params)))
        await asyncio.sleep(0)  # let other tasks interleave, as a real endpoint would
        last = messages[-1]["content"] if messages else ""
        if self.responder is not None:
            reply = self.responder(list(messages), dict(params))
        else:
            reply = next((r for marker, r in self.routes.items() if marker in last), None)
            if reply is None:
                if not self.replies:
                    raise AssertionError(f"ScriptedLLM has no reply for: {last[:80]!r}")
                reply = self.replies.popleft()
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, LLMResponse):
            return reply
        return LLMResponse(text=reply, prompt_tokens=100, completion_tokens=len(reply) // 4)

    def complete(self, messages: Sequence[Message], **params: Any) -> LLMResponse:
        return asyncio.run(self.acomplete(messages, **params))


class SilentBaseline:
    """An empty-output-guard baseline that never finds anything (keeps tests quiet)."""

    name = "silent"

    def __init__(self) -> None:
        self.stats = ExtractionStats()

    def extract(self, chunks: Sequence[ChunkInput]) -> list[Extraction]:
        return [Extraction(c.id) for c in chunks]


class WordEmbedder:
    """A deterministic test double for the Embedder protocol: hashed bag of words.

    Each lower-cased word (``\\w+``) is hashed (blake2b, so runs agree) into one of
    ``dim`` buckets; the counts are L2-normalised. Texts sharing words have a positive
    cosine, texts sharing none have cosine 0, and no model is loaded.
    """

    name = "words"

    def __init__(self, dim: int = 64) -> None:
        self._dim = dim

    @property
    def dim(self) -> int:
        return self._dim

    def bucket(self, word: str) -> int:
        """The dimension a (lower-cased) word counts in."""
        import hashlib

        digest = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
        return int.from_bytes(digest, "big") % self._dim

    def words(self, text: str) -> list[str]:
        import re

        return re.findall(r"\w+", text.lower())

    def embed_query(self, text: str) -> Any:
        import numpy as np

        vector = np.zeros(self._dim, dtype=np.float32)
        for word in self.words(text):
            vector[self.bucket(word)] += 1.0
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        for n, text in enumerate(texts):
            out[n] = self.embed_query(text)
        return out
