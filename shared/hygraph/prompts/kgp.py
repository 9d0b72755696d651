"""The KGP traversal prompt: from a question and the passages read so far on one path
through the passage graph, what is still missing, and which linked passages to read next.

One prompt, two modes (:func:`next_step_messages`):

* with linked passages listed (labelled ``L1``, ``L2`` ...), the model names the ones to
  read next, most useful first, at most ``k``;
* without them (the reference code's mode), the model only says what is still missing;
  the caller then ranks the linked passages against the question and that sentence.

Either way the reply is one JSON object, ``{"missing": "...", "next": ["L2", "L1"]}``;
``{"missing": "", "next": []}`` means the passages read so far suffice.
:func:`parse_next_step` reads it loosely (keys, numbers for labels, a comma-separated
string) and raises :class:`ParseError` when the reply holds neither key. Which labels
exist is the caller's business: it drops unknown ones. The wording is ours.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from hygraph.models.base import Message
from hygraph.prompts.blocks import DATA_NOTE, fenced
from hygraph.prompts.replies import (
    ParseError,
    as_list,
    as_text,
    find_sections,
    parse_json_payload,
    preview,
)

#: The system message's first line: stable, so a test double can recognise the prompt.
KGP_FIRST_LINE = "You steer a search through a graph of linked passages (KGP traversal)."

_PICK = """\
You are given a question, the passages read so far along one path through the graph,
and the passages linked to the last one, each with a label such as "L1". Work out what
the question still needs that the passages read so far do not say, and choose the linked
passages most likely to supply it.

Reply with one JSON object and nothing else:
{{"missing": "<one sentence: the fact still needed; empty if nothing is missing>",
 "next": ["<label>", ...]}}
"next" holds at most {k} labels of linked passages, most useful first, copied exactly.
Leave it empty when the passages read so far answer the question or when no linked
passage helps. Do not answer the question."""

_DESCRIBE = """\
You are given a question and the passages read so far along one path through the graph.
Work out what the question still needs that these passages do not say: the next fact to
look for, named as specifically as the passages allow.

Reply with one JSON object and nothing else:
{"missing": "<one sentence: the fact still needed; empty if nothing is missing>"}
Do not answer the question."""

_MISSING_KEYS = ("missing", "missing_evidence", "still_missing", "need", "needed", "next_evidence")
_NEXT_KEYS = ("next", "next_passages", "passages", "labels", "choose", "chosen", "read_next")
_LABEL = re.compile(r"^\[?\s*([A-Za-z]*)\s*(\d+)\s*\]?$")


@dataclass(frozen=True)
class NextStep:
    """A traversal reply: what is still missing, and the labels to read next."""

    missing: str
    next: list[str] = field(default_factory=list)


def _system(k: int, with_links: bool) -> str:
    body = _PICK.format(k=k) if with_links else _DESCRIBE
    return f"{KGP_FIRST_LINE}\n{DATA_NOTE}\n\n{body}"


def _words(text: str, limit: int) -> str:
    words = text.split()
    return " ".join(words[:limit]) + (" ..." if len(words) > limit else "")


def next_step_messages(
    question: str,
    path: Sequence[str],
    linked: Sequence[str] = (),
    *,
    k: int = 3,
    passage_words: int = 300,
    snippet_words: int = 60,
) -> list[Message]:
    """The traversal prompt for ``question``.

    ``path`` holds the texts read so far along this path (the seed first), each cut to
    ``passage_words`` words; ``linked`` the texts of the passages linked to the last one,
    labelled ``L1`` ... in order and cut to ``snippet_words``. Without ``linked`` the
    prompt asks only what is missing.
    """
    read = [f"[R{n}] {_words(text, passage_words)}" for n, text in enumerate(path, start=1)]
    lines = [f"Question: {question}", "", "Passages read so far:", fenced("\n".join(read))]
    if linked:
        shown = [f"[L{n}] {_words(text, snippet_words)}" for n, text in enumerate(linked, 1)]
        lines += ["", "Linked passages:", fenced("\n".join(shown))]
    return [
        {"role": "system", "content": _system(k, bool(linked))},
        {"role": "user", "content": "\n".join(lines)},
    ]


def _label(item: Any) -> str:
    """``"L3"`` from ``"L3"``, ``"[l3]"``, ``3`` or ``"3"``; other text as written."""
    if isinstance(item, int) and not isinstance(item, bool):
        return f"L{item}"
    text = as_text(item).strip()
    match = _LABEL.match(text)
    if match and match.group(1).upper() in ("", "L"):
        return f"L{int(match.group(2))}"
    return text


def parse_next_step(text: str) -> NextStep:
    """The :class:`NextStep` in a reply to :func:`next_step_messages`.

    A bare JSON list is read as the labels. ``next`` may be numbers or a comma-separated
    string; labels are returned in order, each once.

    Raises:
        ParseError: no JSON, or neither ``missing`` nor ``next`` in it.
    """
    payload = parse_json_payload(text)
    if isinstance(payload, list):
        sections: dict[str, Any] | None = {"next": payload}
    else:
        sections = find_sections(payload, {"missing": _MISSING_KEYS, "next": _NEXT_KEYS})
    if sections is None:
        raise ParseError(f"the traversal reply has neither 'missing' nor 'next': {preview(text)!r}")
    raw = sections.get("next")
    items = raw.split(",") if isinstance(raw, str) else as_list(raw)
    labels = [label for label in (_label(i) for i in items) if label]
    return NextStep(as_text(sections.get("missing")), list(dict.fromkeys(labels)))
