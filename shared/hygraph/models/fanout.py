"""One LLM fan-out: many independent prompts, run concurrently, replies back in order.

Index builds send the same kind of prompt for many items at once (entity summaries,
NodeRAG attributes and community elements, ...). :func:`complete_many` is the one place
that does this, so every such loop gets the same three things:

* **bounded concurrency**: at most ``concurrency`` calls in flight (an
  :class:`asyncio.Semaphore`), so a build does not queue thousands of coroutines on a
  local server at once;
* **order and failures as values**: the result has one entry per prompt, in prompt
  order, holding the reply text or the exception that call raised; one failure never
  loses the finished work of the others, and the caller decides each fallback;
* **progress**: one bar (``unit="call"``) advanced as calls finish.

What it deliberately does *not* do is already done by the LLM wrappers in
:mod:`hygraph.models.llm`: caching (:class:`~hygraph.models.llm.CachedLLM`), retries with
backoff and usage accounting (:class:`~hygraph.models.llm.OpenAILLM`, which also keeps its
own per-loop bound). Doing any of it here again would double-count or double-retry.

Only prompts that do not depend on each other belong here. Multi-turn pipelines (a
gleaning conversation, an OpenIE call that needs the NER reply) are sequences per item,
not a list of prompts, and stay with their extractor.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from hygraph.models.base import LLM, Message
from hygraph.models.llm import run_sync
from hygraph.progress import progress_bar

__all__ = ["DEFAULT_CONCURRENCY", "acomplete_many", "complete_many"]

log = logging.getLogger("hygraph")

DEFAULT_CONCURRENCY = 8
"""Calls (or per-item call pipelines) in flight at once; matches ``OpenAILLM``'s default."""

Reply = str | BaseException


async def acomplete_many(
    llm: LLM,
    prompts: Sequence[list[Message]],
    *,
    desc: str = "llm",
    progress: bool | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    temperature: float = 0,
    validate: Callable[[str], object] | None = None,
) -> list[Reply]:
    """Async :func:`complete_many`, for code already running inside an event loop.

    Runs on the caller's loop and leaves the model's per-loop resources open (the loop
    is not ours to clean up). See :func:`complete_many` for the arguments and result.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    if not prompts:
        return []
    gate = asyncio.Semaphore(concurrency)
    bar = progress_bar(None, total=len(prompts), desc=desc, enabled=progress, unit="call")
    extra: dict[str, Any] = {}
    if validate is not None and "validate" in inspect.signature(llm.acomplete).parameters:
        extra["validate"] = validate  # a caching model then stores only accepted replies

    async def one(messages: list[Message]) -> str:
        async with gate:
            try:
                response = await llm.acomplete(messages, temperature=temperature, **extra)
            finally:
                bar.update(1)
        if validate is not None:
            validate(response.text)  # an unusable reply is this item's exception
        return response.text

    try:
        outcomes = await asyncio.gather(*(one(p) for p in prompts), return_exceptions=True)
    finally:
        bar.close()
    replies: list[Reply] = []
    for outcome in outcomes:
        if isinstance(outcome, asyncio.CancelledError | KeyboardInterrupt | SystemExit):
            raise outcome  # a cancelled or interrupted build is not one failed call
        replies.append(outcome)
    return replies


def complete_many(llm: LLM, prompts: Sequence[list[Message]], **options: Any) -> list[Reply]:
    """Send every prompt to ``llm`` concurrently and return the replies in prompt order.

    Each entry is the reply's text, or the exception that call raised (returned, never
    raised), so the caller can fall back per item. Caching, retries and usage accounting
    are the model wrapper's business (:class:`~hygraph.models.llm.CachedLLM`,
    :class:`~hygraph.models.llm.OpenAILLM`); this adds the concurrency bound, the order
    and the progress bar.

    Safe to call from inside a running event loop: the work then runs on a fresh loop in
    a worker thread (:func:`~hygraph.models.llm.run_sync`). That loop is ours, so the
    model's resources for it (an HTTP client) are closed when it ends.

    Args:
        llm: any :class:`~hygraph.models.base.LLM`.
        prompts: one conversation per call; they must not depend on each other's replies.
        options: those of :func:`acomplete_many`:
        desc: the progress bar's label.
        progress: show the bar (True), hide it (False), or only on a terminal (None).
        concurrency: the most calls in flight at once.
        validate: reads a reply and raises on an unusable one; that item's entry is then
            the exception, and a caching model (:class:`~hygraph.models.llm.CachedLLM`)
            does not store the reply, so the next run asks again.
        temperature: sent with every call. It is part of a caching model's key, and
            ``json`` writes ``0`` and ``0.0`` differently, so the default is the int ``0``
            that existing callers sent: replies they cached keep hitting.

    Returns:
        one entry per prompt, in order: the reply text or the exception. ``[]`` for no
        prompts, without starting an event loop.
    """
    if options.get("concurrency", DEFAULT_CONCURRENCY) < 1:
        raise ValueError(f"concurrency must be >= 1, got {options['concurrency']}")
    if not prompts:
        return []

    async def run() -> list[Reply]:
        try:
            return await acomplete_many(llm, prompts, **options)
        finally:  # the loop ends with this call: release what the model opened on it
            closer: Callable[[], Awaitable[None]] | None = getattr(llm, "aclose", None)
            if closer is not None:
                try:
                    await closer()
                except Exception as err:  # closing is best effort; the replies are in
                    log.debug("closing %s failed: %s", getattr(llm, "name", llm), err)

    return run_sync(run)
