"""Prompts of the graph agents (ToG's beam search, DALK's filters), with their parsers.

Four query-time prompts. Each system message starts with a fixed first line that
names the step, so a log or a test double can tell the calls apart:

* :func:`relation_messages` — ``Relation agent: ...`` (spec 002 §4.2 R4): which
  relations of one entity to follow, at most ``width``, with scores;
* :func:`entity_messages` — ``Entity agent: ...`` (§4.1 N4): how much each
  candidate entity helps, at most ``keep`` of them, with scores;
* :func:`path_messages` — ``Path agent: ...`` (§4.4 S3): which candidate paths
  help, at most ``keep``, with scores;
* :func:`enough_messages` — ``Evidence check: ...`` (ToG's reasoning step): whether
  the paths found so far answer the question.

The three choosing prompts share one reply form, read by :func:`parse_choices`::

    {"choices": [{"id": 2, "score": 0.7}, {"id": 1, "score": 0.3}]}

(ids are the candidates' numbers; ``{"choices": []}`` when none helps). The check
replies ``{"enough": true}`` or ``{"enough": false}``, read by :func:`parse_enough`.
Both parsers raise :class:`ParseError` on a reply they cannot use. The wording and
the examples are our own.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hygraph.models.base import Message
from hygraph.prompts.blocks import DATA_NOTE, fenced
from hygraph.prompts.replies import (
    ParseError,
    as_list,
    as_number,
    find_sections,
    lower_keys,
    parse_json_payload,
    pick,
    preview,
    strip_thinking,
)

#: The first line of each agent prompt's system message (stable: logs and doubles key on it).
RELATION_FIRST_LINE = "Relation agent: choose which relations of an entity to follow."
ENTITY_FIRST_LINE = "Entity agent: score candidate entities by how much they help."
PATH_FIRST_LINE = "Path agent: keep the graph paths that help answer a question."
ENOUGH_FIRST_LINE = "Evidence check: are the graph paths found so far enough?"

_REPLY_FORM = """\
Reply with one JSON object and nothing else, giving the numbers of your choices,
best first, each with a score between 0 and 1 (the scores add up to 1):
{"choices": [{"id": 2, "score": 0.7}, {"id": 1, "score": 0.3}]}
Reply {"choices": []} when nothing helps."""

RELATION_SYSTEM = f"""\
{RELATION_FIRST_LINE}
{DATA_NOTE}
You help search a knowledge graph for the answer to a question. You get the
question, one entity of the graph, and a numbered list of the relations that
leave or reach it; "…" stands for the entity at the other end. Choose at most the
given number of relations whose other end is most likely to lead towards the
answer (for a question with several steps, a relation that answers any step
counts). Do not answer the question.
{_REPLY_FORM}"""

ENTITY_SYSTEM = f"""\
{ENTITY_FIRST_LINE}
{DATA_NOTE}
You help search a knowledge graph for the answer to a question. You get the
question, how the candidates were reached, and a numbered list of candidate
entities. Choose at most the given number of candidates that most help answer
the question or lead towards its answer, and leave out the others. Do not answer
the question.
{_REPLY_FORM}"""

PATH_SYSTEM = f"""\
{PATH_FIRST_LINE}
{DATA_NOTE}
You help select evidence from a knowledge graph. You get a question and a
numbered list of paths through the graph, each written as entities joined by
[relation] arrows. Keep at most the given number of paths that state something
the question asks about or connect its entities in a way that helps answer it;
drop paths about other things. Do not answer the question.
{_REPLY_FORM}"""

ENOUGH_SYSTEM = f"""\
{ENOUGH_FIRST_LINE}
{DATA_NOTE}
You help decide when to stop searching a knowledge graph. You get a question and
the paths found in the graph so far, each written as entities joined by
[relation] arrows. Say whether these paths, with general knowledge, are enough
to answer the question. Do not answer it. Reply with one JSON object and nothing
else: {{"enough": true}} or {{"enough": false}}."""

RELATION_USER = """\
Question: {question}
Entity: {entity}
Relations ("…" is the other end):
{candidates}
Choose at most {keep}."""

ENTITY_USER = """\
Question: {question}
How the candidates were reached: {reached}
Candidates:
{candidates}
Choose at most {keep}."""

PATH_USER = """\
Question: {question}
Candidate paths:
{candidates}
Keep at most {keep}."""

ENOUGH_USER = """\
Question: {question}
Paths found so far:
{paths}"""

RELATION_EXAMPLE = (
    "Which harbour did the ship built by Quist & Orme sail from?",
    "Quist & Orme (organisation)",
    ["Quist & Orme built …", "… employs Quist & Orme", "Quist & Orme located in …"],
    2,
    [(1, 0.8), (3, 0.2)],
)
ENTITY_EXAMPLE = (
    "Which harbour did the ship built by Quist & Orme sail from?",
    "Quist & Orme built …",
    ["Halvard Lamp (product)", "Sea Wren (ship): a schooner launched in 1902", "Orme Hall"],
    2,
    [(2, 1.0)],
)


def numbered(items: Sequence[str]) -> str:
    """``items`` as a list numbered from 1, one per line."""
    return "\n".join(f"{n}. {item}" for n, item in enumerate(items, start=1))


def _choices(picked: Sequence[tuple[int, float]]) -> str:
    return json.dumps({"choices": [{"id": i, "score": s} for i, s in picked]})


def _with_example(
    system: str,
    user: str,
    example: dict[str, Any],
    picked: Sequence[tuple[int, float]],
    ask: dict[str, Any],
) -> list[Message]:
    """The system prompt, one worked example (``user`` filled from ``example``, answered
    with ``picked``), then the real ask (``user`` filled from ``ask``)."""
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": user.format(**example)},
        {"role": "assistant", "content": _choices(picked)},
        {"role": "user", "content": user.format(**ask)},
    ]  # fmt: skip


def relation_messages(
    question: str, entity: str, relations: Sequence[str], keep: int
) -> list[Message]:
    """Ask which of ``relations`` (of ``entity``, numbered from 1) to follow, at most ``keep``."""
    q, e, rels, k, picked = RELATION_EXAMPLE
    return _with_example(
        RELATION_SYSTEM, RELATION_USER,
        {"question": q, "entity": e, "candidates": fenced(numbered(rels)), "keep": k}, picked,
        {"question": question, "entity": entity, "candidates": fenced(numbered(relations)),
         "keep": keep},
    )  # fmt: skip


def entity_messages(
    question: str, reached: str, entities: Sequence[str], keep: int
) -> list[Message]:
    """Ask how much each of ``entities`` (numbered from 1) helps, keeping at most ``keep``."""
    q, r, ents, k, picked = ENTITY_EXAMPLE
    return _with_example(
        ENTITY_SYSTEM, ENTITY_USER,
        {"question": q, "reached": r, "candidates": fenced(numbered(ents)), "keep": k}, picked,
        {"question": question, "reached": reached, "candidates": fenced(numbered(entities)),
         "keep": keep},
    )  # fmt: skip


def path_messages(question: str, paths: Sequence[str], keep: int) -> list[Message]:
    """Ask which of ``paths`` (numbered from 1) help answer ``question``, at most ``keep``."""
    user = PATH_USER.format(question=question, candidates=fenced(numbered(paths)), keep=keep)
    return [{"role": "system", "content": PATH_SYSTEM}, {"role": "user", "content": user}]


def enough_messages(question: str, paths: Sequence[str]) -> list[Message]:
    """Ask whether ``paths`` are enough to answer ``question``."""
    shown = fenced("\n".join(f"- {p}" for p in paths))
    user = ENOUGH_USER.format(question=question, paths=shown)
    return [{"role": "system", "content": ENOUGH_SYSTEM}, {"role": "user", "content": user}]


# --------------------------------------------------------------------------- parsers

_CHOICE_KEYS = ("choices", "choice", "selected", "chosen", "relations", "entities", "paths",
                "candidates", "keep", "kept", "ids", "scores", "results")  # fmt: skip
_ID_KEYS = ("id", "number", "index", "candidate", "choice", "relation", "entity", "path")
_SCORE_KEYS = ("score", "relevance", "weight", "confidence", "probability")
_LEADING_ID = re.compile(r"^\s*#?(\d+)\b")


def _number(value: Any) -> float | None:
    """A finite number from a number or a text holding one (None otherwise)."""
    return as_number(value) if isinstance(value, int | float | str) else None


_SPACE = re.compile(r"[\W_]+")


def _key(text: str) -> str:
    return _SPACE.sub(" ", text.casefold()).strip()


def _by_text(text: str, candidates: Sequence[str]) -> int | None:
    """The 1-based number of the candidate a written-out choice names (None if none)."""
    keys = [_key(c) for c in candidates]
    wanted = _key(text)
    if not wanted:
        return None
    if wanted in keys:
        return keys.index(wanted) + 1
    close = difflib.get_close_matches(wanted, keys, n=1, cutoff=0.8)
    return keys.index(close[0]) + 1 if close else None


def _choice(item: Any, names: Sequence[str]) -> tuple[int | None, float | None]:
    """``(1-based id, score)`` of one listed choice (None where a part is missing)."""
    if isinstance(item, Mapping):
        data = lower_keys(item)
        raw_id = pick(data, _ID_KEYS)
        ident, _ = _choice(raw_id, names) if raw_id is not None else (None, None)
        return ident, _number(pick(data, _SCORE_KEYS))
    if isinstance(item, list | tuple) and item:
        ident, _ = _choice(item[0], names)
        return ident, (_number(item[1]) if len(item) > 1 else None)
    if isinstance(item, bool):
        return None, None
    if isinstance(item, int):
        return item, None
    if isinstance(item, float):
        return (int(item) if item.is_integer() else None), None
    if isinstance(item, str):
        match = _LEADING_ID.match(item)
        if match:
            return int(match.group(1)), None
        return _by_text(item, names), None
    return None, None


def parse_choices(
    text: str, candidates: int | Sequence[str] | None = None
) -> list[tuple[int, float]]:
    """The ``(0-based candidate index, share)`` choices of a reply, best share first.

    Accepts ``{"choices": [...]}`` (or ``selected``, ``relations``, ``entities``,
    ``paths`` ...), a bare list, and items that are numbers, numeric strings
    (``"2. Bell"``), ``[id, score]`` pairs, objects with an ``id`` and a ``score``, or
    (when ``candidates`` are texts) a candidate written out. A choice without a score
    counts 1; a score of 0 or less means "not chosen"; the kept scores are divided by
    their sum, so they add up to 1. ``candidates`` (their texts, or how many there
    were) drops ids outside ``1..n``; without it only the form is checked. A repeated
    id keeps its first score. An empty list is a valid answer (nothing helps).

    Raises:
        ParseError: no JSON, no list, or a non-empty list of which no item names a
            candidate.
    """
    names: Sequence[str] = candidates if isinstance(candidates, Sequence) else ()
    count = len(candidates) if isinstance(candidates, Sequence) else candidates
    payload = parse_json_payload(text)
    if isinstance(payload, Mapping):
        sections = find_sections(payload, {"items": _CHOICE_KEYS})
        if sections is None:
            raise ParseError(f"the agent reply has no list of choices: {preview(text)!r}")
        payload = sections["items"]
        if isinstance(payload, Mapping):  # {"choices": {"2": 0.7, "1": 0.3}}
            payload = [[k, v] for k, v in payload.items()]
    items = as_list(payload)
    read = [_choice(item, names) for item in items]
    named = [(i, s) for i, s in read if i is not None and (count is None or 1 <= i <= count)]
    if items and not named:
        raise ParseError(f"no choice in the agent reply names a candidate: {preview(text)!r}")
    scores: dict[int, float] = {}
    for ident, score in named:
        scores.setdefault(ident - 1, 1.0 if score is None else score)
    kept = {i: s for i, s in scores.items() if s > 0}
    total = sum(kept.values())
    order = {i: n for n, i in enumerate(scores)}
    shares = [(i, s / total) for i, s in kept.items()]
    return sorted(shares, key=lambda c: (-c[1], order[c[0]]))


_YES = ("yes", "true", "enough", "sufficient")
_NO = ("no", "false", "not", "insufficient")
_FIRST_WORD = re.compile(r"\W*(\w+)")


def _verdict(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        match = _FIRST_WORD.match(value)
        head = match.group(1).lower() if match else ""
        if head in _YES:
            return True
        if head in _NO:
            return False
    return None


def parse_enough(text: str) -> bool:
    """Whether a reply to :func:`enough_messages` says the paths are enough.

    Accepts ``{"enough": true}`` (or ``sufficient``, ``answerable``, with booleans or
    yes/no words) and a bare yes/no answer.

    Raises:
        ParseError: empty, or neither form.
    """
    if not isinstance(text, str) or not strip_thinking(text).strip():
        raise ParseError("empty reply")
    try:
        payload = parse_json_payload(text)
    except ParseError:
        payload = None
    if isinstance(payload, Mapping):
        data = lower_keys(payload)
        verdict = _verdict(pick(data, ("enough", "sufficient", "answerable", "answer")))
        if verdict is not None:
            return verdict
    verdict = _verdict(strip_thinking(text))
    if verdict is None:
        raise ParseError(f"the evidence check reply says neither yes nor no: {preview(text)!r}")
    return verdict
