"""Summary-tree prompts (RAPTOR, RAPTOR-K): the summary of one cluster of tree nodes.

Written in our own words. A cluster's member texts (chunks at the first level,
summaries above) are listed in order, separated by blank lines, and the model is
asked for one dense summary that keeps the specific facts (names, dates, numbers), so
that the summary node is found by the questions its members answer.
:func:`parse_summary` reads the reply and raises
:class:`~hygraph.prompts.replies.ParseError` when nothing usable is left.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hygraph.models.base import Message
from hygraph.prompts.replies import ParseError, preview, strip_thinking, unfence

#: Marker of the summary prompt (tests and scripted doubles route on it).
SUMMARY_MARKER = "Texts of one cluster to summarise"

SUMMARY_SYSTEM = (
    "You condense groups of related passages from a document collection into one "
    "summary. Keep every key detail the passages state: who and what they are about, "
    "names, places, dates, numbers and how the things they mention are connected. "
    "Use only what the passages say. Write plain prose of at most {max_words} words. "
    "Reply with the summary only: no title, no preamble, no list markup."
)

_LABEL = re.compile(r"^\s*(?:here is (?:the|a) summary[^:\n]*:|summary\s*:)\s*", re.IGNORECASE)


def summary_messages(texts: Sequence[str], *, max_words: int = 75) -> list[Message]:
    """Messages asking for the summary of one cluster whose member texts are ``texts``."""
    body = "\n\n".join(" ".join(t.split()) for t in texts if t and t.strip())
    return [
        {"role": "system", "content": SUMMARY_SYSTEM.format(max_words=max_words)},
        {"role": "user", "content": f"{SUMMARY_MARKER}:\n\n{body}\n\nSummary:"},
    ]


def parse_summary(text: str) -> str:
    """The summary in a reply: reasoning, code fences and a leading label removed.

    Raises:
        ParseError: nothing is left (an empty reply, or reasoning only).
    """
    body = unfence(strip_thinking(text or "")).strip()
    body = _LABEL.sub("", body, count=1).strip()
    if not body:
        raise ParseError(f"no summary text in the reply: {preview(text or '')!r}")
    return body
