"""HyGRAG prompts: community summaries, the summary of newly added material, the answer.

Written in our own words from the structure the spec describes (000 §3.6, §5):

* a **layer-1 community** is summarised from its passages, its entities and the
  relations among those entities (:func:`community_messages`);
* a **higher community** from the summaries of its sub-communities
  (:func:`upper_community_messages`);
* **new material** (an inserted document's chunks and the relations extracted from
  them, spec §6.1 step 2) with the same instructions (:func:`new_material_messages`),
  so its summary is comparable with the communities' when it is attached;
* the **answer** prompt puts the relations first among the evidence and asks for the
  reasoning, then the answer with its sources, or "Insufficient information".

:func:`parse_summary` reads a summary reply (prose) and raises
:class:`~hygraph.prompts.replies.ParseError` when nothing usable is left.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from hygraph.models.base import Message
from hygraph.prompts.replies import ParseError, preview, strip_thinking, unfence

SUMMARY_WORDS = 300  # community_summary_length (paper Table 8)
#: Markers of the three prompt kinds (tests and scripted doubles route on them).
COMMUNITY_MARKER = "Knowledge community to summarise"
UPPER_MARKER = "Sub-community summaries to combine"
NEW_MATERIAL_MARKER = "Newly added material to summarise"

SUMMARY_SYSTEM = (
    "You write summaries of groups of related knowledge drawn from a document collection. "
    "A group can hold passages of text, named entities and relations between entities. "
    "Write one compact but complete summary in plain prose that covers: the main themes "
    "and topics of the group; the important entities and the part each plays; how those "
    "entities relate to and depend on each other; and the wider context that makes the "
    "group matter. The summary will be embedded for semantic search, so prefer specific "
    "names, dates and facts over generic wording. Use only what the group says; do not "
    "add outside knowledge. Stay under {max_words} words. Reply with the summary only: "
    "no title, no list markup, no JSON."
)


def _section(title: str, lines: Sequence[str]) -> str:
    body = "\n".join(lines) if lines else "(none)"
    return f"### {title}\n{body}"


def community_messages(
    passages: Sequence[str],
    entities: Sequence[str],
    relations: Sequence[str],
    *,
    max_words: int = SUMMARY_WORDS,
) -> list[Message]:
    """Messages asking for the summary of a layer-1 community.

    ``passages`` are chunk texts, ``entities`` lines such as ``"Prague Castle (place):
    description"``, ``relations`` lines such as ``"Jan Klapac --[born in]--> Prague"``.
    """
    user = "\n\n".join(
        [
            f"## {COMMUNITY_MARKER}",
            _section("Passages", [f"Passage {n}: {t}" for n, t in enumerate(passages, 1)]),
            _section("Entities", [f"- {e}" for e in entities]),
            _section("Relations between these entities", [f"- {r}" for r in relations]),
            "Summary:",
        ]
    )
    return [
        {"role": "system", "content": SUMMARY_SYSTEM.format(max_words=max_words)},
        {"role": "user", "content": user},
    ]


def upper_community_messages(
    summaries: Sequence[str], *, max_words: int = SUMMARY_WORDS
) -> list[Message]:
    """Messages asking for the summary of a community of communities (layer 2 and above)."""
    user = "\n\n".join(
        [
            f"## {UPPER_MARKER}",
            _section("Summaries", [f"Summary {n}: {t}" for n, t in enumerate(summaries, 1)]),
            "Summary:",
        ]
    )
    return [
        {"role": "system", "content": SUMMARY_SYSTEM.format(max_words=max_words)},
        {"role": "user", "content": user},
    ]


def new_material_messages(
    passages: Sequence[str], relations: Sequence[str], *, max_words: int = SUMMARY_WORDS
) -> list[Message]:
    """Messages asking for the summary of newly inserted chunks and their relations."""
    user = "\n\n".join(
        [
            f"## {NEW_MATERIAL_MARKER}",
            _section("Passages", [f"Passage {n}: {t}" for n, t in enumerate(passages, 1)]),
            _section("Relations extracted from them", [f"- {r}" for r in relations]),
            "Summary:",
        ]
    )
    return [
        {"role": "system", "content": SUMMARY_SYSTEM.format(max_words=max_words)},
        {"role": "user", "content": user},
    ]


_FENCED = re.compile(r"^```[ \t]*[\w+-]*[ \t]*\n?(.*?)\n?```$", re.DOTALL)
_LABEL = re.compile(r"^\s*(?:#+\s*)?(?:\*\*|__)?\s*summary\s*(?:\*\*|__)?\s*:\s*", re.IGNORECASE)


def parse_summary(text: str) -> str:
    """The summary in a reply: reasoning, a code fence, a ``{"summary": ...}`` wrapper and a
    leading ``Summary:`` label removed; whitespace runs collapsed.

    Raises:
        ParseError: nothing is left (an empty reply, reasoning only, an empty JSON value).
    """
    body = unfence(strip_thinking(text or "")).strip()
    if body.startswith("{") and body.endswith("}"):
        try:
            data = json.loads(body)
        except (RecursionError, ValueError):
            data = None
        if isinstance(data, dict):
            inner = next(
                (v for k, v in data.items() if str(k).strip().lower() in ("summary", "text")),
                None,
            )
            body = inner.strip() if isinstance(inner, str) else ""
    body = _LABEL.sub("", body, count=1)
    body = " ".join(body.split())
    if not body:
        raise ParseError(f"no summary text in the reply: {preview(text or '')!r}")
    return body


ANSWER_SYSTEM = (
    "You answer questions over a knowledge graph that joins text passages, entities, the "
    "relations between entities, and summaries of communities at several levels. Weigh "
    "all four kinds of evidence together. Treat a fact listed under the key relationships "
    "as the most reliable evidence, even when it looks unusual or appears nowhere else, "
    "and do not replace it with common-sense assumptions; use the documents for "
    "background and corroboration, without requiring them before accepting a "
    "relationship. Say whether the sources agree and describe any conflict. Do not invent "
    "facts and stay close to the wording of the sources. First analyse the evidence and "
    "your reasoning, then give the answer and name its sources (for example: Key "
    "relationships 2, Documents 1)."
)
ANSWER_USER = (
    "Answer the question from the context below.\n\n{context}\n\nQuestion: {question}\n\n"
    "For a multiple-choice question give the best complete option; otherwise answer "
    "accurately and in detail. If the context does not hold enough information, say "
    'exactly "Insufficient information". Cite the context where you can.'
)


def answer_messages(question: str, context: str) -> list[Message]:
    """Chat messages asking for an answer to ``question`` from HyGRAG's four-part context."""
    return [
        {"role": "system", "content": ANSWER_SYSTEM},
        {"role": "user", "content": ANSWER_USER.format(context=context, question=question)},
    ]
