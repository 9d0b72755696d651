"""LLM extractors: fill the :class:`~hygraph.extract.schema.Extraction` schema with a chat model.

Two pipelines, both behind the :class:`~hygraph.extract.schema.Extractor` protocol:

* :class:`UnifiedLLMExtractor` makes **one call per chunk** that returns the whole schema
  as one JSON object: typed, scored entities; binary relations with a strength; n-ary
  facts with a completeness score (HyperGraphRAG's hyperedges); and short self-contained
  units (NodeRAG's semantic units). Optional *gleaning* passes continue the same
  conversation, asking for what the first answer missed (HyperGraphRAG/LightRAG). One
  call filling everything is what lets one extraction serve every graph method.
* :class:`TwoStepLLMExtractor` is the HippoRAG/HyGRAG pipeline: a named-entity call,
  then an OpenIE call that turns the passage and its entity list into triples. It yields
  entities and relations only; facts and units for those methods come from other sources
  (sentence-level facts and units are derived elsewhere, as for precomputed OpenIE).

Building an index fans out thousands of calls, so the extractors are built to survive
real endpoints and small local models:

* replies are parsed tolerantly (:mod:`hygraph.extract.parse`); unusable replies raise
  :class:`~hygraph.prompts.replies.ParseError`, which a :class:`~hygraph.models.llm.CachedLLM`
  sees through ``validate``, so they are **never cached**;
* a chunk whose call fails or whose reply is unusable is **left out** of the result
  (counted in ``stats.failed_chunks``, one warning per batch) and is retried by the next
  build; one bad chunk never aborts the batch;
* ``response_format={"type": "json_object"}`` is sent in JSON mode; an endpoint that
  rejects it gets the call again without it, and is not sent it again;
* an **empty-output guard** compares chunks where the model found no entity with a cheap
  rule-based baseline: when the baseline finds three or more there, the model is probably
  not following the instructions, and one warning per batch says so.

Concurrency: one task per chunk under :func:`asyncio.gather`, at most
:data:`~hygraph.models.fanout.DEFAULT_CONCURRENCY` chunks at a time (the bound every LLM
fan-out in hygraph uses); the model bounds calls in flight as well
(:class:`~hygraph.models.llm.OpenAILLM` has its own semaphore). Chunks do not go through
:func:`~hygraph.models.fanout.complete_many`, because a chunk is not one prompt: gleaning
continues a conversation with the previous reply, the two-step OpenIE call needs the NER
reply, NodeRAG repairs depend on the decomposition, and every call carries its own
``validate`` parser, ``max_tokens`` and JSON-mode setting (which are part of a cached
reply's key).
"""

from __future__ import annotations

import asyncio
import logging
import re
import warnings
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from hygraph.errors import ModelError
from hygraph.extract.parse import parse_ner, parse_triples, parse_unified
from hygraph.extract.schema import (
    DEFAULT_TYPE,
    ChunkInput,
    Entity,
    Extraction,
    ExtractionStats,
    Extractor,
    Relation,
)
from hygraph.models.base import LLM, LLMResponse, Message
from hygraph.models.fanout import DEFAULT_CONCURRENCY
from hygraph.models.llm import CachedLLM, run_sync
from hygraph.prompts.extraction import (
    glean_messages,
    ner_messages,
    openie_messages,
    unified_messages,
)
from hygraph.prompts.replies import ParseError, parse_json_payload

__all__ = ["EmptyExtractionWarning", "TwoStepLLMExtractor", "UnifiedLLMExtractor"]

log = logging.getLogger("hygraph")

JSON_MODE = {"type": "json_object"}
EMPTY_GUARD_MIN_ENTITIES = 3
"""The baseline must find at least this many entities for an empty LLM answer to count."""

_HTTP_400 = re.compile(r"\b400\b")


class EmptyExtractionWarning(UserWarning):
    """The LLM returned no entities for chunks where a rule-based baseline found several."""


def _rejects_response_format(err: ModelError) -> bool:
    """True when a failed call may have failed because of ``response_format``."""
    if getattr(err.__cause__, "status_code", None) in (400, 422):
        return True
    message = str(err)
    return "response_format" in message or bool(_HTTP_400.search(message))


def _one_line(err: BaseException, limit: int = 200) -> str:
    text = " ".join(f"{type(err).__name__}: {err}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _LLMExtractorBase:
    """What both LLM extractors share: the call with JSON-mode fallback, the batch loop,
    failure accounting and the empty-output guard."""

    name: str
    stats: ExtractionStats
    kind: str = "llm"  # the extractor spec's kind; ``name`` is ``"{kind}:{llm name}"``

    def __init__(
        self,
        llm: LLM,
        *,
        json_mode: bool = True,
        temperature: float = 0.0,
        max_tokens: int | None = 4096,
        baseline: Extractor | None = None,
    ) -> None:
        self.name = f"{self.kind}:{llm.name}"
        self.llm = llm
        self.json_mode = json_mode
        self.temperature = float(temperature)
        self.max_tokens = max_tokens
        self.stats = ExtractionStats()
        self._baseline = baseline
        self._baseline_unavailable = False
        self._send_response_format = json_mode
        self._json_mode_confirmed = False
        self._probe_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(llm={self.llm!r})"

    # -- one call -------------------------------------------------------------

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": self.temperature}
        if self.max_tokens is not None:
            params["max_tokens"] = int(self.max_tokens)
        return params

    def _probe_lock(self) -> asyncio.Lock:
        """The lock serialising JSON-mode probes on the running loop (locks are per loop)."""
        loop = asyncio.get_running_loop()
        lock = self._probe_locks.get(loop)
        if lock is None:
            lock = self._probe_locks[loop] = asyncio.Lock()
        return lock

    async def _call(
        self, messages: Sequence[Message], parser: Callable[[str], object]
    ) -> LLMResponse:
        """One completion; JSON mode when enabled, dropped for good if the endpoint rejects it.

        Until one call has shown that the endpoint accepts ``response_format``, calls in
        JSON mode go one at a time, so a batch of thousands of chunks does not send
        thousands of requests that are all going to be rejected.

        With a :class:`CachedLLM`, ``parser`` is its ``validate`` so an unparseable reply
        raises :class:`ParseError` here and is not cached.

        Raises:
            ModelError: the call failed (after the model's own retries).
            ParseError: the reply was cut off at the token limit, or (with a CachedLLM)
                did not parse.
        """
        response = await self._complete(messages, parser)
        if response.truncated:
            # A reply cut off at the token limit parses (the parsers are tolerant) but misses
            # what came after the cut: the chunk fails and stays pending, never half-stored.
            raise ParseError("the reply was cut off at the token limit (finish_reason=length)")
        return response

    async def _complete(
        self, messages: Sequence[Message], parser: Callable[[str], object]
    ) -> LLMResponse:
        """The completion itself (see :meth:`_call`)."""
        params = self._params()
        extra: dict[str, Any] = {"validate": parser} if isinstance(self.llm, CachedLLM) else {}
        if self._send_response_format and not self._json_mode_confirmed:
            async with self._probe_lock():
                if self._send_response_format and not self._json_mode_confirmed:
                    return await self._call_json_mode(messages, extra, params)
        if self._send_response_format:
            return await self._call_json_mode(messages, extra, params)
        return await self.llm.acomplete(messages, **extra, **params)

    async def _call_json_mode(
        self, messages: Sequence[Message], extra: dict[str, Any], params: dict[str, Any]
    ) -> LLMResponse:
        try:
            response = await self.llm.acomplete(
                messages, **extra, **params, response_format=dict(JSON_MODE)
            )
        except ParseError:  # the endpoint answered: it accepts response_format
            self._json_mode_confirmed = True
            raise
        except ModelError as err:
            if not _rejects_response_format(err):
                raise
            first_error = err
        else:
            self._json_mode_confirmed = True
            return response
        # Retry without response_format. If that fails too, the cause was something else
        # (a prompt too long, say) and JSON mode stays on.
        response = await self.llm.acomplete(messages, **extra, **params)
        if self._send_response_format:
            self._send_response_format = False
            log.warning(
                "%s: the endpoint rejected response_format (%s); continuing without JSON mode",
                self.name,
                _one_line(first_error),
            )
        return response

    # -- the batch --------------------------------------------------------------

    async def _extract_chunk(self, chunk: ChunkInput) -> tuple[Extraction, int]:
        """The raw (not normalised) extraction of one chunk and its malformed-item count."""
        raise NotImplementedError

    def extract(self, chunks: Sequence[ChunkInput]) -> list[Extraction]:
        """Extract every chunk; chunks that failed are left out (see ``stats.failed_chunks``).

        Safe to call from inside a running event loop (the work then runs on a fresh
        loop in a worker thread).
        """
        chunks = list(chunks)
        if not chunks:
            return []
        return run_sync(lambda: self._extract_and_close(chunks))

    async def _extract_and_close(self, chunks: Sequence[ChunkInput]) -> list[Extraction]:
        try:
            return await self.aextract(chunks)
        finally:  # the loop is ours and ends here: release the model's per-loop client
            closer = getattr(self.llm, "aclose", None)
            if closer is not None:
                try:
                    await closer()
                except Exception as err:  # closing is best effort
                    log.debug("closing %s failed: %s", self.llm.name, _one_line(err))

    async def aextract(self, chunks: Sequence[ChunkInput]) -> list[Extraction]:
        """Async :meth:`extract`: one task per chunk (a bounded number at once), results in
        input order."""
        chunks = list(chunks)
        gate = asyncio.Semaphore(DEFAULT_CONCURRENCY)

        async def bounded(chunk: ChunkInput) -> tuple[Extraction, int] | BaseException:
            async with gate:
                return await self._guarded(chunk)

        outcomes = await asyncio.gather(*(bounded(chunk) for chunk in chunks))
        results: list[Extraction] = []
        failures: list[tuple[ChunkInput, BaseException]] = []
        for chunk, outcome in zip(chunks, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                failures.append((chunk, outcome))
                continue
            extraction, malformed = outcome
            extraction.extractor = self.name
            extraction = extraction.normalised()
            self.stats.malformed_items += malformed
            self.stats.count(extraction)
            results.append(extraction)
        if failures:
            self.stats.failed_chunks += len(failures)
            first_chunk, first_error = failures[0]
            log.warning(
                "%s: extraction failed for %d of %d chunks; they are left out and will be "
                "retried by the next build (first: chunk %s, %s)",
                self.name,
                len(failures),
                len(chunks),
                first_chunk.id,
                _one_line(first_error),
            )
        self._guard_empty(chunks, results)
        return results

    async def _guarded(self, chunk: ChunkInput) -> tuple[Extraction, int] | BaseException:
        """One chunk's extraction, or the exception that ended it (never raised)."""
        try:
            return await self._extract_chunk(chunk)
        except (ModelError, ParseError) as err:
            return err
        except Exception as err:  # an adapter raising something else: still only this chunk
            log.debug("extraction of chunk %s raised", chunk.id, exc_info=True)
            return err

    # -- the empty-output guard -----------------------------------------------

    def _get_baseline(self) -> Extractor | None:
        if self._baseline is None and not self._baseline_unavailable:
            try:
                from hygraph.extract.offline import OfflineExtractor
            except ImportError:
                self._baseline_unavailable = True
                log.debug("no offline extractor available: the empty-output guard is off")
                return None
            self._baseline = OfflineExtractor()
        return self._baseline

    def _guard_empty(self, chunks: Sequence[ChunkInput], results: Sequence[Extraction]) -> None:
        """Count chunks with no LLM entities where the baseline finds several; warn once."""
        empty_ids = {e.chunk_id for e in results if not e.entities}
        if not empty_ids:
            return
        baseline = self._get_baseline()
        if baseline is None:
            return
        try:
            found = baseline.extract([c for c in chunks if c.id in empty_ids])
        except Exception as err:  # the guard must never break extraction
            log.debug("the empty-output baseline failed: %s", _one_line(err))
            return
        suspicious = sum(
            1
            for e in found
            if e.chunk_id in empty_ids and len(e.entities) >= EMPTY_GUARD_MIN_ENTITIES
        )
        if not suspicious:
            return
        self.stats.empty_llm_chunks += suspicious
        warnings.warn(
            f"{self.name}: the model returned no entities for {suspicious} of {len(chunks)} "
            f"chunks where rule-based extraction finds {EMPTY_GUARD_MIN_ENTITIES} or more "
            f"({self.stats.empty_llm_chunks} so far). Use a model that follows JSON "
            "instructions (an instruction-tuned model, 7B or larger), keep json_mode on, "
            "and check that the endpoint and model name are right.",
            EmptyExtractionWarning,
            stacklevel=2,
        )


class UnifiedLLMExtractor(_LLMExtractorBase):
    """One LLM call per chunk fills the whole schema; optional gleaning passes add what it missed.

    Args:
        llm: any :class:`~hygraph.models.base.LLM`; wrap it in a
            :class:`~hygraph.models.llm.CachedLLM` to make rebuilds free.
        gleaning: extra passes per chunk in the same conversation, each asking for
            missed items (0 = none; HyperGraphRAG's reference code uses 2). A pass that
            finds nothing new or does not parse ends the gleaning for that chunk and keeps
            what was found so far. A pass whose call fails (the endpoint, after retries)
            fails the chunk: it stays pending and the next build redoes it (the passes
            already answered come from the cache), so a fault never leaves a chunk with
            fewer passes than a clean build gives it.
        entity_types: a closed list of entity types to choose from; open types if None.
        json_mode: send ``response_format={"type": "json_object"}`` (dropped automatically
            if the endpoint rejects it).
        temperature: sampling temperature (0 for reproducible builds).
        max_tokens: output cap per call; None leaves it to the endpoint.
        baseline: the extractor the empty-output guard compares with (default: the
            offline rule-based extractor, loaded on first need).
    """

    def __init__(
        self,
        llm: LLM,
        *,
        gleaning: int = 0,
        entity_types: Sequence[str] | None = None,
        json_mode: bool = True,
        temperature: float = 0.0,
        max_tokens: int | None = 4096,
        baseline: Extractor | None = None,
    ) -> None:
        if gleaning < 0:
            raise ValueError(f"gleaning must be >= 0, got {gleaning}")
        super().__init__(
            llm,
            json_mode=json_mode,
            temperature=temperature,
            max_tokens=max_tokens,
            baseline=baseline,
        )
        self.gleaning = int(gleaning)
        self.entity_types = list(entity_types) if entity_types else None
        self.name = f"llm-unified:{llm.name}" + (f":glean{self.gleaning}" if self.gleaning else "")

    def __repr__(self) -> str:
        return f"UnifiedLLMExtractor(llm={self.llm!r}, gleaning={self.gleaning})"

    async def _extract_chunk(self, chunk: ChunkInput) -> tuple[Extraction, int]:
        def parser(text: str) -> tuple[Extraction, int]:
            return parse_unified(text, chunk.id)

        def glean_parser(text: str) -> tuple[Extraction, int]:
            try:
                return parser(text)
            except ParseError:
                if parse_json_payload(text) in ({}, []):  # "nothing missing", tersely
                    return Extraction(chunk_id=chunk.id), 0
                raise

        messages = unified_messages(chunk.text, self.entity_types)
        response = await self._call(messages, parser)
        extraction, malformed = parser(response.text)
        reply = response.text
        for round_no in range(1, self.gleaning + 1):
            messages = glean_messages(messages, reply)
            try:
                response = await self._call(messages, glean_parser)
                more, bad = glean_parser(response.text)
            except ParseError as err:  # the model answered, unusably: gleaning ends here
                log.debug(
                    "%s: gleaning round %d for chunk %s ended: %s",
                    self.name,
                    round_no,
                    chunk.id,
                    _one_line(err),
                )
                break
            malformed += bad
            if not (more.entities or more.relations or more.facts or more.units):
                break
            extraction.entities.extend(more.entities)
            extraction.relations.extend(more.relations)
            extraction.facts.extend(more.facts)
            extraction.units.extend(more.units)
            reply = response.text
        return extraction, malformed


class TwoStepLLMExtractor(_LLMExtractorBase):
    """HippoRAG/HyGRAG extraction: a named-entity call, then an OpenIE call for triples.

    Entities come from the NER list (type ``"entity"``, default importance); each triple
    becomes a relation (label = the relation, description = "subject relation object",
    weight 1.0), and triple ends missing from the NER list become entities too.
    **Facts and units stay empty**: one fact per triple would only restate the relations,
    so methods that need facts or units get them from other sources (e.g. sentences of
    the chunk). A chunk whose NER finds nothing skips the OpenIE call (its prompt needs
    entities to anchor triples); the empty-output guard then judges it.

    Args:
        llm: any :class:`~hygraph.models.base.LLM` (a :class:`CachedLLM` caches both calls).
        json_mode: send ``response_format={"type": "json_object"}`` (dropped if rejected).
        temperature: sampling temperature.
        max_tokens: output cap per call; None leaves it to the endpoint.
        baseline: the extractor the empty-output guard compares with.
    """

    kind = "llm-twostep"

    async def _extract_chunk(self, chunk: ChunkInput) -> tuple[Extraction, int]:
        response = await self._call(ner_messages(chunk.text), parse_ner)
        names, malformed = parse_ner(response.text)
        triples: list[tuple[str, str, str]] = []
        if names:
            response = await self._call(openie_messages(chunk.text, names), parse_triples)
            triples, bad = parse_triples(response.text)
            malformed += bad
        extraction = Extraction(
            chunk_id=chunk.id,
            entities=[Entity(name=name, type=DEFAULT_TYPE) for name in names],
            relations=[
                Relation(subject, obj, relation, f"{subject} {relation} {obj}", 1.0)
                for subject, relation, obj in triples
            ],
        )
        return extraction, malformed
