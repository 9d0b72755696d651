"""HyperGraphRAG's n-ary extractor: delimited records of knowledge segments and their
entities, with gleaning passes (spec 003, §3.2–3.4).

One call per chunk asks for ``hyper-relation`` records (self-contained knowledge
segments with a completeness score), each followed by the ``entity`` records of its
members (with a per-segment description and importance). The output fills
:attr:`Extraction.facts <hygraph.extract.schema.Extraction.facts>` (the hyperedges, with
``member_scores`` and ``member_descriptions``) and ``entities``; relations and units stay
empty, as HyperGraphRAG has neither.

Gleaning follows the reference code, which produced the paper's numbers: after the
first answer, the same conversation is asked for what it missed; the first such pass is
unconditional, and before each further pass a YES/NO *loop check* asks whether anything
is still uncovered. The default of 2 passes matches the reference; 0 makes one call per
chunk.

Failure handling, concurrency and the empty-output guard are those of
:class:`hygraph.extract.llm._LLMExtractorBase`. The reply is delimited text, so JSON mode
is off.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from hygraph.extract.llm import _LLMExtractorBase, _one_line
from hygraph.extract.records import parse_nary_records
from hygraph.extract.schema import ChunkInput, Extraction, Extractor
from hygraph.models.base import LLM
from hygraph.prompts.hypergraph import (
    nary_continue_messages,
    nary_loop_check_messages,
    nary_messages,
)
from hygraph.prompts.replies import ParseError, strip_thinking

__all__ = ["NaryLLMExtractor", "said_yes"]

log = logging.getLogger("hygraph")

_NOT_A_WORD = re.compile(r"^\W+")


def said_yes(text: str) -> bool:
    """Whether a loop-check reply says YES (reasoning, quotes and markdown ignored).

    Raises:
        ParseError: the reply is empty or holds only reasoning, so it is not cached.
    """
    answer = strip_thinking(text or "").strip()
    if not answer:
        raise ParseError("empty answer to the loop check")
    return _NOT_A_WORD.sub("", answer.lower()).startswith("yes")


class NaryLLMExtractor(_LLMExtractorBase):
    """HyperGraphRAG extraction: n-ary facts with scored members, plus gleaning passes.

    Args:
        llm: any :class:`~hygraph.models.base.LLM`; wrap it in a
            :class:`~hygraph.models.llm.CachedLLM` to make rebuilds free (every call of
            the conversation is cached, loop checks included).
        gleaning: the most extra passes per chunk (0 = one call; the reference code
            uses 2). A pass that adds nothing or does not parse ends gleaning for that
            chunk and keeps what was found so far; a pass whose call fails (after
            retries) fails the chunk, which the next build redoes from the cache.
        language: the language the records are written in.
        entity_types: a closed list of entity types to choose from; open types if None.
        temperature: sampling temperature (0 for reproducible builds).
        max_tokens: output cap per call; None leaves it to the endpoint.
        baseline: the extractor the empty-output guard compares with (default: the
            offline rule-based extractor, loaded on first need).
    """

    def __init__(
        self,
        llm: LLM,
        *,
        gleaning: int = 2,
        language: str = "English",
        entity_types: Sequence[str] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = 4096,
        baseline: Extractor | None = None,
    ) -> None:
        if gleaning < 0:
            raise ValueError(f"gleaning must be >= 0, got {gleaning}")
        super().__init__(
            llm,
            json_mode=False,
            temperature=temperature,
            max_tokens=max_tokens,
            baseline=baseline,
        )
        self.gleaning = int(gleaning)
        self.language = language or "English"
        self.entity_types = list(entity_types) if entity_types else None
        self.name = f"llm-nary:{llm.name}:glean{self.gleaning}"

    def __repr__(self) -> str:
        return f"NaryLLMExtractor(llm={self.llm!r}, gleaning={self.gleaning})"

    async def _extract_chunk(self, chunk: ChunkInput) -> tuple[Extraction, int]:
        def parser(text: str) -> tuple[Extraction, int]:
            return parse_nary_records(text, chunk.id)

        def glean_parser(text: str) -> tuple[Extraction, int]:
            """Like ``parser``, but a reply in words ("nothing is missing") means nothing
            more and is a valid (cacheable) answer; empty or unfinished replies still fail."""
            try:
                return parser(text)
            except ParseError:
                if strip_thinking(text or "").strip():
                    return Extraction(chunk_id=chunk.id), 0
                raise

        messages = nary_messages(chunk.text, language=self.language, entity_types=self.entity_types)
        response = await self._call(messages, parser)
        extraction, malformed = parser(response.text)
        reply = response.text
        for pass_no in range(1, self.gleaning + 1):
            messages = nary_continue_messages(messages, reply)
            try:
                response = await self._call(messages, glean_parser)
                more, bad = glean_parser(response.text)
            except ParseError as err:  # answered, unusably: gleaning ends (a failed call
                self._log_end(chunk, pass_no, err)  # fails the chunk, see the class doc)
                break
            malformed += bad
            if not (more.facts or more.entities):
                break
            extraction.facts.extend(more.facts)
            extraction.entities.extend(more.entities)
            reply = response.text
            if pass_no == self.gleaning:
                break
            # The loop check is asked on the side: its question and answer do not join
            # the conversation the next pass continues.
            check = nary_loop_check_messages(messages, reply)
            try:
                response = await self._call(check, said_yes)
                go_on = said_yes(response.text)
            except ParseError as err:  # answered, unusably: gleaning ends (a failed call
                self._log_end(chunk, pass_no, err)  # fails the chunk, see the class doc)
                break
            if not go_on:
                break
        return extraction, malformed

    def _log_end(self, chunk: ChunkInput, pass_no: int, err: BaseException) -> None:
        log.debug(
            "%s: gleaning pass %d for chunk %s ended: %s",
            self.name,
            pass_no,
            chunk.id,
            _one_line(err),
        )
