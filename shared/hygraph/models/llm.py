"""Chat models for hygraph: an OpenAI-compatible client and a disk-caching wrapper.

:class:`OpenAILLM` talks to any endpoint that speaks the OpenAI chat-completions
API (OpenAI itself, vLLM, Ollama, llama.cpp, LiteLLM, ...) through the official
``openai`` SDK. Building an index fans out thousands of calls, so the client
does three things the bare SDK call does not do for us:

* **Own retry loop.** The SDK client is created with ``max_retries=0`` and the
  retries happen here, so that backoff (exponential, full jitter, honouring the
  server's ``Retry-After`` / ``retry-after-ms``), the number of attempts and the
  cost accounting (:class:`~hygraph.usage.UsageTracker`) are all under our control.
  Only transient failures are retried (timeouts, connection errors, 408, 409, 429,
  5xx); a bad request or a wrong key fails at once with one clear line.
* **Bounded concurrency.** At most ``max_concurrency`` requests are in flight per
  event loop, so a build does not flood a local server or trip rate limits.
* **Failures as values.** :meth:`OpenAILLM.amap` runs many calls concurrently and
  returns failures in place, so one bad call never throws away finished work.

:class:`CachedLLM` wraps any :class:`~hygraph.models.base.LLM` with a
:class:`~hygraph.models.cache.DiskCache`, so rebuilding or resuming an index never
pays for the same call twice. It only caches responses worth replaying: never
failures, truncated (``finish_reason == "length"``) or empty responses, nor ones
the caller's ``validate`` function rejects.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import email.utils
import json
import math
import os
import random
import threading
import time
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, TypeVar

import httpx
import openai

from hygraph.errors import ConfigError, ModelError
from hygraph.models.base import LLM, LLMResponse, Message
from hygraph.models.cache import DiskCache, cache_key
from hygraph.secrets import register_secret
from hygraph.usage import UsageTracker

__all__ = ["CachedLLM", "OpenAILLM", "run_sync"]

T = TypeVar("T")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
PLACEHOLDER_API_KEY = "not-needed"
"""Sent when no key is configured; local servers (Ollama, vLLM) ignore it."""

_RETRYABLE_STATUS = frozenset({408, 409, 429})
_MAX_ERROR_CHARS = 300


async def _sleep(seconds: float) -> None:
    """Wait between retries. A module-level hook so tests can record delays."""
    await asyncio.sleep(seconds)


def run_sync(factory: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from synchronous code.

    With no running loop in this thread, use :func:`asyncio.run`. Inside a running
    loop (a notebook, an async web handler) blocking it would deadlock, so run the
    coroutine on a fresh loop in a worker thread and wait for it there.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(factory())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(factory())).result()


def _one_line(text: object) -> str:
    """Collapse an error text to one short line."""
    line = " ".join(str(text).split())
    if len(line) > _MAX_ERROR_CHARS:
        line = line[: _MAX_ERROR_CHARS - 3] + "..."
    return line


def _describe(err: BaseException) -> str:
    """A one-line description of an SDK error, naming the HTTP status if any."""
    if isinstance(err, openai.APIStatusError):
        return _one_line(f"HTTP {err.status_code} ({type(err).__name__}): {err.message}")
    return _one_line(f"{type(err).__name__}: {err}")


class MalformedReply(Exception):
    """A 200 reply that is not a chat completion (an HTML error page, plain text, junk)."""


def _check_completion(completion: Any) -> None:
    """Raise :class:`MalformedReply` unless ``completion`` is a chat completion.

    The SDK hands back the body as it came when it is not JSON; a proxy or an
    overloaded server sends such pages with status 200, so it is retried like a 5xx.
    """
    if not isinstance(getattr(completion, "choices", None), list):
        body = _one_line(str(completion))[:80]
        raise MalformedReply(f"the server's 200 reply is not a chat completion: {body!r}")


def _is_retryable(err: BaseException) -> bool:
    """True for transient failures worth another attempt."""
    if isinstance(err, MalformedReply):
        return True
    if isinstance(err, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(err, openai.APIStatusError):
        return err.status_code in _RETRYABLE_STATUS or err.status_code >= 500
    return False


def _retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The delay the server asked for, from ``retry-after-ms`` or ``Retry-After``.

    ``Retry-After`` may be a number of seconds or an HTTP date. Returns ``None``
    when neither header is present or parseable; never a negative number.
    """
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            delay = float(value) / divisor
        except ValueError:
            continue
        if math.isfinite(delay):
            return max(0.0, delay)
    value = headers.get("retry-after")
    if value:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if when is not None:
            return max(0.0, when.timestamp() - time.time())
    return None


def _headers_of(err: BaseException) -> Mapping[str, str] | None:
    response = getattr(err, "response", None)
    return getattr(response, "headers", None) if response is not None else None


@dataclasses.dataclass
class _LoopState:
    """What must not outlive one event loop: the semaphore and, if we own it, the SDK client."""

    loop_ref: weakref.ReferenceType[asyncio.AbstractEventLoop]
    semaphore: asyncio.Semaphore
    client: openai.AsyncOpenAI


class OpenAILLM:
    """A chat model behind any OpenAI-compatible endpoint, with retries and a concurrency bound.

    Settings not given fall back to the environment: ``OPENAI_MODEL`` (required
    somewhere), ``OPENAI_BASE_URL`` (default ``https://api.openai.com/v1``) and
    ``OPENAI_API_KEY`` (default a placeholder, enough for Ollama or vLLM).

    Args:
        model: model name sent with each request; also :attr:`name`.
        base_url: endpoint root, e.g. ``http://localhost:11434/v1``.
        api_key: bearer key.
        timeout: seconds allowed for one attempt.
        max_retries: retries after the first attempt for transient failures.
        max_concurrency: requests in flight at once, per event loop.
        backoff_base: first backoff ceiling in seconds; doubles each retry.
        backoff_max: cap on any single wait, including a server's ``Retry-After``.
        default_params: parameters sent with every call (e.g. ``{"temperature": 0}``);
            per-call parameters override them.
        http_client: an ``httpx.AsyncClient`` to send requests with (proxies, tests).
            It belongs to the caller: :meth:`aclose` never closes it. Without one,
            a client is made per event loop, since connections cannot cross loops.
        tracker: usage tracker charged with each call's tokens, failures and retries.
    """

    def __init__(
        self,
        model: str | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        max_retries: int = 6,
        max_concurrency: int = 8,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        default_params: dict[str, Any] | None = None,
        http_client: httpx.AsyncClient | None = None,
        tracker: UsageTracker | None = None,
    ) -> None:
        model = model or os.environ.get("OPENAI_MODEL")
        if not model:
            raise ConfigError(
                "No LLM model configured: pass model=... or set the OPENAI_MODEL "
                "environment variable (e.g. OPENAI_MODEL=gpt-4o-mini)."
            )
        if max_retries < 0:
            raise ConfigError(f"max_retries must be >= 0, got {max_retries}")
        if max_concurrency < 1:
            raise ConfigError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if timeout <= 0:
            raise ConfigError(f"timeout must be > 0, got {timeout}")
        self.name: str = model
        self.model: str = model
        self.base_url: str = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self._api_key: str = api_key or os.environ.get("OPENAI_API_KEY") or PLACEHOLDER_API_KEY
        register_secret(self._api_key)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.max_concurrency = int(max_concurrency)
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.default_params: dict[str, Any] = dict(default_params or {})
        self.tracker = tracker
        self._http_client = http_client
        self._shared_client: openai.AsyncOpenAI | None = (
            self._make_client(http_client) if http_client is not None else None
        )
        self._states: dict[int, _LoopState] = {}
        self._states_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OpenAILLM(model={self.name!r}, base_url={self.base_url!r})"

    # -- per-loop resources -------------------------------------------------

    def _make_client(self, http_client: httpx.AsyncClient | None) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=0,  # retries are ours: see _call
            http_client=http_client,  # type: ignore[arg-type]  # legacy httpx is accepted
        )

    def _state(self) -> _LoopState:
        """The semaphore and client for the running loop, made on first use.

        An ``asyncio.Semaphore`` (and an HTTP connection pool) is bound to the loop
        it was first used on, so each loop gets its own; states of closed loops
        are dropped here.
        """
        loop = asyncio.get_running_loop()
        with self._states_lock:
            for key, state in list(self._states.items()):
                old = state.loop_ref()
                if old is None or old.is_closed():
                    del self._states[key]
            state = self._states.get(id(loop))
            if state is None or state.loop_ref() is not loop:
                client = self._shared_client or self._make_client(None)
                state = _LoopState(
                    weakref.ref(loop), asyncio.Semaphore(self.max_concurrency), client
                )
                self._states[id(loop)] = state
            return state

    async def aclose(self) -> None:
        """Close the HTTP client this object made for the running loop, if any.

        A caller-supplied ``http_client`` is left open. :meth:`complete` calls this
        itself; long-lived async code may call it when done with the model.
        """
        loop = asyncio.get_running_loop()
        with self._states_lock:
            state = self._states.pop(id(loop), None)
        if state is not None and state.loop_ref() is loop and self._shared_client is None:
            await state.client.close()

    # -- calls --------------------------------------------------------------

    def _backoff(self, attempt: int, err: BaseException) -> float:
        """Seconds to wait before retry number ``attempt + 1``."""
        requested = _retry_after_seconds(_headers_of(err))
        if requested is not None:
            return min(self.backoff_max, requested)
        ceiling = min(self.backoff_max, self.backoff_base * 2.0 ** min(attempt, 60))
        return random.random() * ceiling

    def _record(self, *args: int, **kwargs: Any) -> None:
        if self.tracker is not None:
            self.tracker.record_llm(*args, **kwargs)

    async def acomplete(self, messages: Sequence[Message], **params: Any) -> LLMResponse:
        """Send one chat completion and return its text, token counts and finish reason.

        ``params`` (``temperature``, ``max_tokens``, ``response_format``, ``seed``, ...)
        are passed to ``chat.completions.create`` on top of ``default_params``.
        Transient failures are retried with backoff while holding the concurrency
        slot (which also eases pressure on a rate-limited server).

        Raises:
            ModelError: at once for a non-retryable failure (e.g. HTTP 400/401), or
                after ``max_retries`` retries of transient ones.
        """
        request = {**self.default_params, **params}
        state = self._state()
        retries = 0
        async with state.semaphore:
            while True:
                try:
                    completion = await state.client.chat.completions.create(
                        model=self.model,
                        messages=list(messages),  # type: ignore[arg-type]
                        timeout=self.timeout,
                        **request,
                    )
                    _check_completion(completion)
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    if not _is_retryable(err):
                        self._record(failed=True, retries=retries)
                        raise ModelError(
                            f"LLM call to {self.name} failed: {_describe(err)}"
                        ) from err
                    if retries >= self.max_retries:
                        self._record(failed=True, retries=retries)
                        raise ModelError(
                            f"LLM call to {self.name} failed after {retries + 1} attempts: "
                            f"{_describe(err)}"
                        ) from err
                    delay = self._backoff(retries, err)
                    retries += 1
                    await _sleep(delay)
                    continue
                break
        response = self._to_response(completion)
        self._record(response.prompt_tokens, response.completion_tokens, retries=retries)
        return response

    @staticmethod
    def _to_response(completion: Any) -> LLMResponse:
        choice = completion.choices[0] if completion.choices else None
        text = ""
        finish_reason: str | None = None
        if choice is not None:
            finish_reason = choice.finish_reason
            if choice.message is not None and choice.message.content is not None:
                text = choice.message.content
        usage = completion.usage
        return LLMResponse(
            text=text,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            finish_reason=finish_reason,
            raw=completion.model_dump(mode="json"),
        )

    async def _complete_and_close(
        self, messages: Sequence[Message], params: dict[str, Any]
    ) -> LLMResponse:
        try:
            return await self.acomplete(messages, **params)
        finally:
            await self.aclose()

    def complete(self, messages: Sequence[Message], **params: Any) -> LLMResponse:
        """Synchronous :meth:`acomplete`; safe to call from inside a running event loop."""
        return run_sync(lambda: self._complete_and_close(messages, params))

    async def amap(
        self, batch: Sequence[Sequence[Message]], **params: Any
    ) -> list[LLMResponse | ModelError]:
        """Complete many conversations concurrently (at most ``max_concurrency`` at once).

        Returns one entry per input, in order: the response, or the
        :class:`~hygraph.errors.ModelError` that call ended with. One failure never
        cancels the others.
        """
        results = await asyncio.gather(
            *(self.acomplete(messages, **params) for messages in batch), return_exceptions=True
        )
        out: list[LLMResponse | ModelError] = []
        for result in results:
            if isinstance(result, LLMResponse | ModelError):
                out.append(result)
            elif isinstance(result, Exception):
                wrapped = ModelError(f"LLM call to {self.name} failed: {_describe(result)}")
                wrapped.__cause__ = result
                out.append(wrapped)
            else:  # CancelledError, KeyboardInterrupt: not ours to swallow
                raise result
        return out


class CachedLLM:
    """Any :class:`~hygraph.models.base.LLM` with a persistent response cache in front.

    The key is ``cache_key("llm", llm.name, messages, params)``, so a different
    model, prompt or parameter is a different entry. A response is written only
    if it is worth replaying: not truncated (``finish_reason == "length"``), not
    empty, and accepted by ``validate`` when one is given. Exceptions are never
    cached.

    Usage accounting: on a hit this records ``tracker.record_llm(cached=True)``;
    on a miss it records nothing, because the inner model (e.g. an
    :class:`OpenAILLM` sharing the same tracker) records its own real calls.
    Counting them here too would count every miss twice. For an inner model that
    keeps no accounts (a user's own LLM object, a framework adapter), pass
    ``record_misses=True`` and misses are recorded here with their token counts.
    """

    def __init__(
        self,
        llm: LLM,
        cache: DiskCache,
        tracker: UsageTracker | None = None,
        *,
        record_misses: bool = False,
    ) -> None:
        self.llm = llm
        self.cache = cache
        self.tracker = tracker
        self.record_misses = record_misses
        self.name: str = llm.name

    def __repr__(self) -> str:
        return f"CachedLLM({self.llm!r})"

    def key(self, messages: Sequence[Message], params: Mapping[str, Any]) -> str:
        """The cache key of one call (``validate`` is not part of it)."""
        return cache_key("llm", self.llm.name, list(messages), dict(params))

    def _load(self, key: str) -> LLMResponse | None:
        raw = self.cache.get(key)
        if raw is None:
            return None
        try:
            data = json.loads(raw.decode("utf-8"))
            data["cached"] = True
            return LLMResponse(**data)
        except (ValueError, TypeError):  # corrupt or from an incompatible version: a miss
            return None

    def _store(self, key: str, response: LLMResponse) -> None:
        data = dataclasses.asdict(response)
        data["cached"] = False
        self.cache.set(key, json.dumps(data, ensure_ascii=False, default=str).encode("utf-8"))

    async def acomplete(
        self,
        messages: Sequence[Message],
        *,
        validate: Callable[[str], object] | None = None,
        **params: Any,
    ) -> LLMResponse:
        """Return the cached response for this call, or call the inner model and maybe cache it.

        Args:
            messages: the conversation.
            validate: optional check of the response text (e.g. ``json.loads``); if
                it raises, the response is not cached and the exception propagates.
                It is not run again on cache hits, since only accepted text is stored.
            **params: passed to the inner model and part of the cache key.
        """
        key = self.key(messages, params)
        hit = self._load(key)
        if hit is not None:
            if self.tracker is not None:
                self.tracker.record_llm(cached=True)
            return hit
        response = await self.llm.acomplete(messages, **params)
        if self.record_misses and self.tracker is not None:
            self.tracker.record_llm(response.prompt_tokens, response.completion_tokens)
        if response.truncated or not response.text:
            return response
        if validate is not None:
            validate(response.text)  # raises: not cached, caller sees the error
        self._store(key, response)
        return response

    async def aclose(self) -> None:
        """Close the inner model's per-loop resources, if it has an ``aclose``."""
        closer: Callable[[], Awaitable[None]] | None = getattr(self.llm, "aclose", None)
        if closer is not None:
            await closer()

    async def _complete_and_close(
        self,
        messages: Sequence[Message],
        validate: Callable[[str], object] | None,
        params: dict[str, Any],
    ) -> LLMResponse:
        try:
            return await self.acomplete(messages, validate=validate, **params)
        finally:
            await self.aclose()

    def complete(
        self,
        messages: Sequence[Message],
        *,
        validate: Callable[[str], object] | None = None,
        **params: Any,
    ) -> LLMResponse:
        """Synchronous :meth:`acomplete`; safe to call from inside a running event loop."""
        return run_sync(lambda: self._complete_and_close(messages, validate, params))

    async def amap(
        self,
        batch: Sequence[Sequence[Message]],
        *,
        validate: Callable[[str], object] | None = None,
        **params: Any,
    ) -> list[LLMResponse | Exception]:
        """Complete many conversations concurrently, with failures returned in place.

        Each entry is the response, or the exception that call raised (a
        :class:`~hygraph.errors.ModelError` from the model, or whatever ``validate``
        raised). Concurrency is bounded by the inner model.
        """
        results = await asyncio.gather(
            *(self.acomplete(m, validate=validate, **params) for m in batch),
            return_exceptions=True,
        )
        out: list[LLMResponse | Exception] = []
        for result in results:
            if isinstance(result, LLMResponse | Exception):
                out.append(result)
            else:  # CancelledError, KeyboardInterrupt: not ours to swallow
                raise result
        return out
