"""Prompts and reply parsers for map-reduce answers (GraphRAG global search, CheapRAG).

**Map.** The model reads the question and a few numbered pieces of material (community
reports, or passages) and returns the points those pieces contribute to an answer, each
with a score from 0 to 100 saying how much it helps, as one JSON object
``{"points": [{"description": "...", "score": 80}]}`` (an empty list when nothing helps).
:func:`parse_map_points` reads it tolerantly: renamed keys (``answer``, ``text``,
``importance``, ``confidence`` ...), a bare list of points, a single partial answer
``{"answer", "score"}`` (the form the 002 paper describes), scores given as text. A
point with no score gets 1 (kept, ranked last, as the reference code does). The
reply is refused (:class:`~hygraph.prompts.replies.ParseError`) when it holds no JSON,
no list of points, or only points without text.

**Reduce.** The model reads the question and the kept points, best first, each with its
score, and writes the final answer. :func:`parse_reduce` refuses an empty reply.

The wording is our own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hygraph.models.base import Message
from hygraph.prompts.replies import (
    ParseError,
    as_list,
    as_number,
    as_text,
    find_sections,
    lower_keys,
    parse_json_payload,
    pick,
    preview,
    strip_thinking,
)

MAP_SYSTEM = """\
You help answer a question from a large collection of documents. You are shown only a
few pieces of that collection (summaries of groups of related entities, or passages of
the original text), each with a number. Other people read the other pieces; a final
step combines everyone's findings.

Write down what these pieces contribute to answering the question, as a list of
points. For each point give:

- "description": a statement that helps answer the question, supported by the pieces,
  mentioning the numbers of the pieces it comes from, for example [2];
- "score": an integer from 0 to 100 saying how much the point helps answer the
  question (100 = it answers it directly, 0 = it does not help at all).

Use only what the pieces say; do not add outside knowledge or guesses. If nothing in
the pieces helps, return an empty list.

Reply with one JSON object and nothing else:
{"points": [{"description": "...", "score": 0}]}
"""

MAP_USER = """\
Pieces:
{units}

Question: {question}
"""

REDUCE_SYSTEM = """\
You answer a question from findings that several readers took from different parts of
a document collection. Each finding comes with a score from 0 to 100 saying how much it
helps; findings are listed from the most to the least helpful, and some may be
irrelevant or repeat each other.

Combine what the findings say into one answer. Use only the findings; when they
disagree, say so; if they do not contain the answer, say that you cannot tell from the
given material. Keep the answer short and factual.
"""

REDUCE_USER = """\
Findings:
{points}

Question: {question}
Answer:"""

_POINTS_KEYS = ("points", "key_points", "answers", "partial_answers", "findings", "results")
_TEXT_KEYS = ("description", "answer", "partial_answer", "point", "text", "content",
              "statement", "finding")  # fmt: skip
_SCORE_KEYS = ("score", "importance", "importance_score", "relevance", "relevance_score",
               "confidence", "rating")  # fmt: skip
MISSING_SCORE = 1.0  # reference code: a point without a score counts 1
MAX_POINTS = 50  # ours: points read from one reply


def map_messages(question: str, units: str) -> list[Message]:
    """The map conversation: ``units`` are the numbered pieces, already rendered."""
    return [
        {"role": "system", "content": MAP_SYSTEM},
        {"role": "user", "content": MAP_USER.format(units=units.strip(), question=question)},
    ]


def reduce_messages(question: str, points: str) -> list[Message]:
    """The reduce conversation: ``points`` are the rendered findings, best first."""
    return [
        {"role": "system", "content": REDUCE_SYSTEM},
        {"role": "user", "content": REDUCE_USER.format(points=points.strip(), question=question)},
    ]


def _score(value: Any) -> float:
    """A score clamped to 0..100 from a number or a text holding one (``MISSING_SCORE``
    when there is none)."""
    number = as_number(value)
    return MISSING_SCORE if number is None else min(100.0, max(0.0, number))


def _point(item: Any) -> tuple[str, float] | None:
    if isinstance(item, str):
        text = " ".join(item.split())
        return (text, MISSING_SCORE) if text else None
    if not isinstance(item, Mapping):
        return None
    data = lower_keys(item)
    text = " ".join(as_text(pick(data, _TEXT_KEYS)).split())
    return (text, _score(pick(data, _SCORE_KEYS))) if text else None


def parse_map_points(text: str) -> list[tuple[str, float]]:
    """The ``(description, score)`` points of a map reply (see the module docstring).

    Returns an empty list when the model said nothing helps (``{"points": []}``).

    Raises:
        ParseError: no JSON, no list of points (nor a single answer), or a non-empty
            list in which no point has text.
    """
    payload = parse_json_payload(text)
    if isinstance(payload, list):
        items = payload
    else:
        sections = find_sections(payload, {"points": _POINTS_KEYS})
        if sections is not None:
            items = as_list(sections["points"])
        elif find_sections(payload, {"text": _TEXT_KEYS}) is not None:
            items = [payload]  # a single partial answer with its score
        else:
            raise ParseError(f"the map reply has no list of points: {preview(text)!r}")
    points = [p for p in (_point(item) for item in items[:MAX_POINTS]) if p is not None]
    if items and not points:
        raise ParseError(f"no point of the map reply has a description: {preview(text)!r}")
    return points


def parse_reduce(text: str) -> str:
    """The final answer in a reply to :func:`reduce_messages` (reasoning removed).

    Raises:
        ParseError: the reply is empty once reasoning is removed.
    """
    answer = strip_thinking(text or "").strip()
    if not answer:
        raise ParseError("the reduce reply is empty")
    return answer


def render_points(points: Sequence[tuple[str, float, int]]) -> str:
    """Findings ``(description, score, reader)`` as the reduce prompt shows them."""
    return "\n\n".join(
        f"--- Reader {reader} (score {score:g}) ---\n{text}" for text, score, reader in points
    )
