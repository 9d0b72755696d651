"""Prompts for the personalized-PageRank family (HippoRAG, HippoRAG 2, FastGraphRAG).

Two small query-time prompts, each with the parser of its reply:

* question entities (HippoRAG's query NER, FastGraphRAG's entities in the question):
  the names a question mentions, as ``{"named_entities": [...]}``;
  :func:`parse_question_entities` raises :class:`ParseError` on an unusable reply,
  so the caller falls back to the offline rule extractor;
* fact recognition (HippoRAG 2's "recognition memory" filter): which of a few
  numbered candidate facts help answer the question, as ``{"relevant": [1, 3]}``;
  :func:`parse_recognition` also accepts the facts written out instead of their
  numbers, and raises :class:`ParseError` when nothing in the reply can be read.

The wording and the examples are our own.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hygraph.models.base import Message
from hygraph.prompts.blocks import DATA_NOTE, fenced
from hygraph.prompts.replies import ParseError, find_sections, parse_json_payload, preview

# --------------------------------------------------------------------------- question entities

QUESTION_ENTITIES_SYSTEM = """\
Read a question and list the named entities it mentions: people, places,
organisations, works, events, products, dates and other proper names, written as
the question writes them. Leave out generic words ("president", "river") unless
they are part of a name. Reply with one JSON object and nothing else:
{"named_entities": ["...", "..."]}
Reply {"named_entities": []} when the question names nothing."""

QUESTION_ENTITIES_EXAMPLES = (
    (
        "Which river flows through the city where the composer of The Wreck of the "
        "Hesperus was born?",
        ["The Wreck of the Hesperus"],
    ),
    (
        "Who succeeded Marta Lindqvist as chair of the Orebro Harbour Board in 1974?",
        ["Marta Lindqvist", "Orebro Harbour Board", "1974"],
    ),
)


def question_entities_messages(question: str) -> list[Message]:
    """Ask for the named entities of ``question`` (two worked examples first)."""
    messages: list[Message] = [{"role": "system", "content": QUESTION_ENTITIES_SYSTEM}]
    for example, names in QUESTION_ENTITIES_EXAMPLES:
        messages.append({"role": "user", "content": f"Question: {example}"})
        messages.append({"role": "assistant", "content": json.dumps({"named_entities": names})})
    messages.append({"role": "user", "content": f"Question: {question}"})
    return messages


def parse_question_entities(text: str, question: str = "") -> list[str]:
    """The entity names in a reply to :func:`question_entities_messages` (deduplicated).

    Accepts ``{"named_entities": [...]}`` (or ``entities``), a bare list, and items that
    are strings or objects with a ``name``. An empty list is a valid answer.

    Raises:
        ParseError: no JSON, or JSON without an entity list.
    """
    payload = parse_json_payload(text)
    if isinstance(payload, Mapping):
        sections = find_sections(payload, {"items": ("named_entities", "entities", "names")})
        if sections is None:
            raise ParseError(f"the question-entity reply has no entity list: {preview(text)!r}")
        payload = sections["items"]
        if isinstance(payload, str):
            payload = [payload]
    if not isinstance(payload, list):
        raise ParseError(f"the question-entity reply is not a list: {preview(text)!r}")
    found: dict[str, str] = {}
    for item in payload:
        name = item.get("name") if isinstance(item, Mapping) else item
        if isinstance(name, str | int | float) and not isinstance(name, bool):
            cleaned = " ".join(str(name).split())
            if cleaned:
                found.setdefault(cleaned.casefold(), cleaned)
    return list(found.values())


# --------------------------------------------------------------------------- fact recognition

RECOGNITION_SYSTEM = f"""\
You help a search engine decide which facts matter for a question. You get a
question and a numbered list of candidate facts, each written as
(subject, relation, object). {DATA_NOTE} Keep the facts that state something the question
asks about or that lead towards its answer (for a question with several steps, a
fact that answers any one step counts). Drop facts about other things. Do not
invent facts and do not answer the question. Reply with one JSON object and
nothing else, listing the numbers of the facts you keep in their given order:
{{"relevant": [1, 3]}}
Reply {{"relevant": []}} when no fact helps."""

RECOGNITION_USER = """\
Question: {question}

Candidate facts:
{facts}"""

RECOGNITION_EXAMPLE = (
    "In which year was the bridge designed by the founder of Quist & Orme completed?",
    [
        "(Quist & Orme, founded by, Elias Quist)",
        "(Halvard Bridge, designed by, Elias Quist)",
        "(Brenmouth, closed to lorries, Halvard Bridge)",
        "(Orme Hall, located in, Brenmouth)",
    ],
    [1, 2],
)


def _numbered(facts: Sequence[str]) -> str:
    return "\n".join(f"{n}. {fact}" for n, fact in enumerate(facts, start=1))


def recognition_messages(question: str, facts: Sequence[str]) -> list[Message]:
    """Ask which of ``facts`` (shown numbered from 1) help answer ``question``."""
    example_q, example_facts, kept = RECOGNITION_EXAMPLE
    return [
        {"role": "system", "content": RECOGNITION_SYSTEM},
        {"role": "user", "content": RECOGNITION_USER.format(
            question=example_q, facts=fenced(_numbered(example_facts)))},
        {"role": "assistant", "content": json.dumps({"relevant": kept})},
        {"role": "user", "content": RECOGNITION_USER.format(
            question=question, facts=fenced(_numbered(facts)))},
    ]  # fmt: skip


_SPACE = re.compile(r"[\W_]+")


def _key(text: str) -> str:
    return _SPACE.sub(" ", text.casefold()).strip()


def _as_index(item: Any, facts: Sequence[str]) -> int | None:
    """A 0-based candidate index from a number, a numeric string or a written-out fact."""
    if isinstance(item, bool):
        return None
    if isinstance(item, int) or (isinstance(item, float) and item.is_integer()):
        index = int(item) - 1
        return index if 0 <= index < len(facts) else None
    if isinstance(item, Mapping):
        for key in ("number", "id", "index", "fact"):
            if key in item:
                return _as_index(item[key], facts)
        return None
    if isinstance(item, list | tuple):
        item = ", ".join(str(x) for x in item)
    if not isinstance(item, str) or not item.strip():
        return None
    text = item.strip().rstrip(".")
    if text.isdigit():
        return _as_index(int(text), facts)
    keys = [_key(f) for f in facts]
    wanted = _key(text)
    if wanted in keys:
        return keys.index(wanted)
    close = difflib.get_close_matches(wanted, keys, n=1, cutoff=0.75)
    return keys.index(close[0]) if close else None


def parse_recognition(text: str, facts: Sequence[str]) -> list[int]:
    """0-based indices of the kept facts, in candidate order, from a recognition reply.

    Accepts ``{"relevant": [...]}`` (or ``facts``, ``fact``, ``selected``), a bare list;
    items are 1-based numbers or the facts written out (matched to the candidates).
    An empty list means no fact helps.

    Raises:
        ParseError: no JSON, no list, or a non-empty list of which nothing matches.
    """
    payload = parse_json_payload(text)
    if isinstance(payload, Mapping):
        keys = ("relevant", "facts", "fact", "selected", "kept", "numbers")
        sections = find_sections(payload, {"items": keys})
        if sections is None:
            raise ParseError(f"the recognition reply has no list of facts: {preview(text)!r}")
        payload = sections["items"]
    if isinstance(payload, int | str) and not isinstance(payload, bool):
        payload = [payload]
    if not isinstance(payload, list):
        raise ParseError(f"the recognition reply is not a list: {preview(text)!r}")
    # A lone triple written as one fact ["s", "p", "o"] reads as one item.
    if len(payload) == 3 and all(isinstance(x, str) and not x.strip().isdigit() for x in payload):
        joined = _as_index(payload, facts)
        if joined is not None:
            return [joined]
    found = [i for i in (_as_index(item, facts) for item in payload) if i is not None]
    if payload and not found:
        raise ParseError(f"no fact in the recognition reply matches a candidate: {preview(text)!r}")
    return sorted(set(found))
