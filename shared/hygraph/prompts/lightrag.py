"""Prompts for the LightRAG family: a question's two levels of keywords, relation keywords.

* :func:`query_keywords_messages` asks for a question's **low-level** keywords (the
  specific names, things and details it mentions; they search the entity vectors) and
  its **high-level** keywords (the broader concepts and themes it is about; they search
  the relationship vectors), as one JSON object; :func:`parse_query_keywords` reads it.
* :func:`relation_keywords_messages` asks, for a numbered batch of relations, for a
  few high-level keywords per relation (what the rich knowledge graph adds to the
  textual one); :func:`parse_relation_keywords` reads the reply.

Parsers raise :class:`~hygraph.prompts.replies.ParseError` on an unusable reply, so
the caller can fall back to the offline rules. The wording and the examples are ours.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from hygraph.models.base import Message
from hygraph.prompts.replies import (
    ParseError,
    as_list,
    as_text,
    find_sections,
    parse_json_payload,
    preview,
)

# --------------------------------------------------------------------------- question keywords

QUERY_KEYWORDS_SYSTEM = """\
You prepare search keywords for a retrieval system that holds a knowledge graph of
entities and of relationships between them.

For the user's question, list two kinds of keywords:
- "low_level_keywords": the specific things the question names or asks about: people,
  places, organisations, works, dates, objects and precise terms, written as in the
  question;
- "high_level_keywords": the broader concepts, relations and themes behind the question,
  such as the kind of link it asks for (founder, birthplace, spouse) or the topic.

Keep each keyword short (one to four words). Do not answer the question. Reply with one
JSON object with exactly these two keys, each holding a list of strings, and nothing else."""

QUERY_KEYWORDS_USER = "Question: {question}"

QUERY_KEYWORDS_EXAMPLES: tuple[tuple[str, dict[str, list[str]]], ...] = (
    (
        "Which river runs through the town where the painter of Harbour at Dusk was born?",
        {
            "low_level_keywords": ["Harbour at Dusk", "painter", "river", "town"],
            "high_level_keywords": ["birthplace", "painting authorship", "geography"],
        },
    ),
    (
        "How did cheap railway freight change farming in the nineteenth century?",
        {
            "low_level_keywords": ["railway freight", "farming", "nineteenth century"],
            "high_level_keywords": ["transport costs", "agricultural change", "economic history"],
        },
    ),
)

_LOW_KEYS = ("low_level_keywords", "low_level", "low", "low_keywords", "local_keywords")
_HIGH_KEYS = ("high_level_keywords", "high_level", "high", "high_keywords", "global_keywords")


def query_keywords_messages(question: str) -> list[Message]:
    """The keyword prompt for ``question`` (few-shot), read by :func:`parse_query_keywords`."""
    messages: list[Message] = [{"role": "system", "content": QUERY_KEYWORDS_SYSTEM}]
    for example, reply in QUERY_KEYWORDS_EXAMPLES:
        messages.append({"role": "user", "content": QUERY_KEYWORDS_USER.format(question=example)})
        messages.append({"role": "assistant", "content": json.dumps(reply, ensure_ascii=False)})
    messages.append({"role": "user", "content": QUERY_KEYWORDS_USER.format(question=question)})
    return messages


def _keywords(value: Any) -> list[str]:
    """Distinct non-empty keyword strings of a listed value (first spelling kept)."""
    if isinstance(value, str):
        value = [part for part in value.split(",")]
    found: dict[str, str] = {}
    for item in as_list(value):
        text = " ".join(as_text(item).split())
        if text:
            found.setdefault(text.casefold(), text)
    return list(found.values())


def parse_query_keywords(text: str) -> tuple[list[str], list[str]]:
    """``(low-level, high-level)`` keywords in a reply to :func:`query_keywords_messages`.

    Keys are read loosely (``"Low-level keywords"``, ``"low_level"`` ...), a list may be
    a comma-separated string, items may be objects with a ``name``/``text``.

    Raises:
        ParseError: no JSON object, neither list present, or both lists empty.
    """
    payload = parse_json_payload(text)
    sections = find_sections(payload, {"low": _LOW_KEYS, "high": _HIGH_KEYS})
    if sections is None:
        raise ParseError(f"the keyword reply has no keyword lists: {preview(text)!r}")
    low, high = _keywords(sections.get("low")), _keywords(sections.get("high"))
    if not low and not high:
        raise ParseError(f"the keyword reply lists no keywords: {preview(text)!r}")
    return low, high


# --------------------------------------------------------------------------- relation keywords

RELATION_KEYWORDS_SYSTEM = """\
You annotate the relationships of a knowledge graph for search. Each numbered line below
is one relationship: source entity, relation name, target entity, and what the source
texts say about it.

For every relationship give {limit} or fewer high-level keywords: short phrases for the
kind of connection and the themes it belongs to (for example "founding", "employment",
"birthplace", "music recording"), not the entity names themselves.

Reply with one JSON object: {{"relations": [{{"id": <number>, "keywords": [<strings>]}}, ...]}}
with one item per numbered relationship, and nothing else."""

RELATION_KEYWORDS_USER = "Relationships:\n{lines}"


def relation_line(number: int, source: str, label: str, target: str, description: str) -> str:
    """One numbered relationship line of :func:`relation_keywords_messages`."""
    body = f" -- {description}" if description.strip() else ""
    return f"{number}. {source} | {label or 'related to'} | {target}{body}"


def relation_keywords_messages(lines: Sequence[str], limit: int) -> list[Message]:
    """The relation-keyword prompt for numbered ``lines`` (see :func:`relation_line`)."""
    return [
        {"role": "system", "content": RELATION_KEYWORDS_SYSTEM.format(limit=limit)},
        {"role": "user", "content": RELATION_KEYWORDS_USER.format(lines="\n".join(lines))},
    ]


def parse_relation_keywords(text: str, count: int) -> dict[int, list[str]]:
    """Keywords by relationship number (1 … ``count``) in a reply to the relation prompt.

    Accepts ``{"relations": [{"id": 1, "keywords": [...]}, ...]}``, a bare list of such
    items, or an object keyed by number (``{"1": [...]}``). Numbers outside 1 … ``count``
    and items without keywords are ignored.

    Raises:
        ParseError: no JSON, or no relationship with usable keywords.
    """
    payload = parse_json_payload(text)
    items: list[Any]
    if isinstance(payload, Mapping):
        sections = find_sections(payload, {"items": ("relations", "relationships", "items")})
        if sections is not None:
            items = as_list(sections["items"])
        else:
            items = [{"id": k, "keywords": v} for k, v in payload.items()]
    else:
        items = as_list(payload)
    found: dict[int, list[str]] = {}
    for item in items:
        if not isinstance(item, Mapping):
            continue
        lowered = {str(k).strip().lower(): v for k, v in item.items()}
        try:
            number = int(str(as_text(lowered.get("id", lowered.get("number")))).strip())
        except ValueError:
            continue
        keywords = _keywords(lowered.get("keywords", lowered.get("keyword")))
        if 1 <= number <= count and keywords:
            found[number] = keywords
    if not found:
        raise ParseError(f"the relation keyword reply names no relationship: {preview(text)!r}")
    return found
