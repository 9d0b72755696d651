"""Prompts for NodeRAG: text decomposition, relationship repair, entity attributes,
community high-level elements, query elements and the unified answer (spec 004).

* :func:`decomposition_messages` (spec §3.1) splits a chunk into semantic units, each
  with the UPPER-CASE entities it names and ``"A, relation, B"`` relationship strings,
  as ``{"Output": [...]}``; :func:`hygraph.extract.noderag.parse_decomposition` reads it.
* :func:`relationship_repair_messages` (spec §3.1, §8 #17) rewrites one relationship
  string that did not split into three parts as ``{"source", "relationship", "target"}``.
* :func:`attribute_messages` (spec §3.2) writes the plain-text portrait of an important
  entity from its semantic units and relationships (an A node).
* :func:`high_level_messages` (spec §3.3) draws titled high-level elements (H and O
  nodes) from the texts of one community, as ``{"high_level_elements": [...]}``.
* :func:`query_elements_messages` (spec §4.1) lists the entities and key nouns of a
  query as ``{"elements": [...]}``, the exact-match entry points of the search.
* :func:`answer_messages` (spec §4.5) is the unified answer prompt: retrieved context
  and query in, a multi-paragraph answer out.

The replies to the attribute, high-level and query prompts are read by the parsers
beside them (:func:`clean_summary`, :func:`parse_high_level_elements`,
:func:`parse_query_elements`); each raises :class:`~hygraph.prompts.replies.ParseError`
on a reply with no usable answer, so a :class:`~hygraph.models.llm.CachedLLM` never
caches it. The decomposition and repair replies fill the extraction schema, so their
parsers stay in :mod:`hygraph.extract.noderag`.

Every prompt that expects JSON says so (an OpenAI-compatible ``response_format`` JSON
mode requires the word "JSON" in the conversation); the attribute and answer prompts
expect plain text. Constants are templates for :meth:`str.format` only where they take
placeholders (the ``*_USER`` templates and the attribute system text); the other texts
are sent as they are, so their JSON braces are single. The wording and the worked
example are our own.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from hygraph.models.base import Message
from hygraph.prompts.blocks import fenced
from hygraph.prompts.replies import (
    ParseError,
    as_text,
    listed_items,
    lower_keys,
    pick,
    preview,
    strip_thinking,
)

# --------------------------------------------------------------------------- decomposition

DECOMPOSITION_SYSTEM = """\
You break a passage into semantic units so that it can be stored in a knowledge graph.
Reply with one JSON object and nothing else: no markdown fences and no text before or
after it.

1. Divide the passage into semantic units. A unit covers exactly one specific event,
   action or situation. Write each unit as a paraphrase that can be understood on its
   own: use names instead of pronouns and keep every important detail (who, what,
   where, when, how much, why).
2. For each unit, list the entities that occur in the passage's own words for that part
   of the text (not words you introduced in the paraphrase). Write every entity in
   UPPER CASE. Include people, places, organisations, dates and times, and any other
   named or specific things (works, products, events, species, quantities that matter).
   Leave out vague common nouns.
3. For each unit, list the relationships between its entities. Write each relationship
   as one string with exactly three parts separated by commas:
   "ENTITY A, relation phrase, ENTITY B". Both ends must be taken word for word from the
   unit's entity list. The middle part may be a short descriptive phrase, but it must
   not contain a comma itself.

Dates and times: write them only as precisely as the passage gives them. A year alone
stays a year (2021); a month with a year becomes 2021-06; a full date becomes
2021-06-14. Never add a month, day or time that the passage does not state.

The reply has the form
{"Output": [{"semantic_unit": "...", "entities": ["..."], "relationships": ["..."]}]}
with one object per unit, in the order of the passage. If the passage holds nothing to
decompose, reply {"Output": []}.

Example passage:
In March 2023 the Velmora Botanical Society sent its lead botanist, Ines Halloran, to the
island of Torvik to catalogue rare mosses. Working with the local guide Pieter Aas, she
recorded 41 moss species in three weeks, two of them new to science. Her report, which
the society published the following winter, led the Torvik Municipal Council to protect
the island's northern cliffs.

Example reply:
{"Output": [
  {"semantic_unit": "In March 2023 the Velmora Botanical Society sent Ines Halloran, its \
lead botanist, to the island of Torvik to catalogue rare mosses.",
   "entities": ["2023-03", "VELMORA BOTANICAL SOCIETY", "INES HALLORAN", "TORVIK"],
   "relationships": [
     "VELMORA BOTANICAL SOCIETY, sent its lead botanist, INES HALLORAN",
     "INES HALLORAN, travelled to catalogue mosses on, TORVIK",
     "INES HALLORAN, began the expedition in, 2023-03"]},
  {"semantic_unit": "Together with the local guide Pieter Aas, Ines Halloran recorded 41 \
moss species on Torvik in three weeks, two of which had never been described before.",
   "entities": ["PIETER AAS", "INES HALLORAN", "TORVIK"],
   "relationships": [
     "PIETER AAS, worked as local guide for, INES HALLORAN",
     "INES HALLORAN, recorded 41 moss species on, TORVIK"]},
  {"semantic_unit": "Ines Halloran's report, published by the Velmora Botanical Society \
the following winter, led the Torvik Municipal Council to protect the northern cliffs of \
Torvik.",
   "entities": ["INES HALLORAN", "VELMORA BOTANICAL SOCIETY", "TORVIK MUNICIPAL COUNCIL", \
"NORTHERN CLIFFS"],
   "relationships": [
     "VELMORA BOTANICAL SOCIETY, published the report of, INES HALLORAN",
     "INES HALLORAN, persuaded with her report, TORVIK MUNICIPAL COUNCIL",
     "TORVIK MUNICIPAL COUNCIL, placed under protection, NORTHERN CLIFFS"]}
]}"""
"""The instructions and one worked example (sent as is; the trailing backslashes only
wrap long lines here and are removed by Python)."""

DECOMPOSITION_USER = """\
Passage:
{text}

JSON reply:"""

# --------------------------------------------------------------------------- relationship repair

RELATIONSHIP_REPAIR_SYSTEM = """\
You fix relationship statements that were written in the wrong shape. A relationship
links two entities: a source entity, a short phrase for the link, and a target entity.
You are given one statement that should have had exactly these three parts but has too
few or too many (for instance because a name contains a comma, or a part is missing).
Work out which words are the source, which are the link and which are the target, and
reply with one JSON object and nothing else:
{"source": "...", "relationship": "...", "target": "..."}
Write the source and target in UPPER CASE and keep their wording from the statement.
Extra details such as a date or a place that belong to the link go into the
relationship phrase. If the statement does not name two entities and a link between
them, reply {"source": "", "relationship": "", "target": ""}.

Example statement: HALDEN, NORWAY, hosted the 1994 rally of, NORDIC CAR CLUB
Example reply: {"source": "HALDEN, NORWAY", "relationship": "hosted the 1994 rally of", \
"target": "NORDIC CAR CLUB"}

Example statement: ORA LIND, joined in 2010
Example reply: {"source": "", "relationship": "", "target": ""}"""

RELATIONSHIP_REPAIR_USER = "Statement: {raw}\nJSON reply:"

# --------------------------------------------------------------------------- attributes

ATTRIBUTE_SYSTEM = """\
You write the profile of one entity for a knowledge base, the way a good encyclopedia
or catalogue introduces a person, place, organisation or product. You are given the
entity's name, the semantic units (short statements) that mention it and the
relationships it takes part in.

Write a readable portrait that says what the entity fundamentally is and how it is
connected to the most important other people, places, things and events in the
material. Start with its essential nature, then its most significant links; leave out
minor repetitions. Use only what the material says.

Reply with the profile text only: no title, heading, preamble, list of sources or
closing remarks. Use at most {max_words} words, and far fewer when the material is
short; do not pad."""

ATTRIBUTE_USER = """\
Entity: {name}

Semantic units that mention it:
{units}

Relationships it takes part in:
{relationships}

Profile:"""

# --------------------------------------------------------------------------- high-level elements

HIGH_LEVEL_SYSTEM = """\
You read a group of related texts that were clustered together and distil the
big-picture knowledge they share. Look beyond individual facts for the different kinds
of high-level content they hold: central ideas, topics that keep recurring, principles
or theories behind what happens, consequences or likely developments, and lessons or
conclusions worth remembering.

Give several high-level elements. Each has
- "title": a few keywords naming the element;
- "description": one to three sentences that state the insight itself, using only what
  the texts support.
Choose the most significant elements and make them differ from one another so that
together they cover the different sides of the material; do not list everything.
When two candidate elements say nearly the same thing, merge them into one.

Reply with one JSON object and nothing else:
{"high_level_elements": [{"title": "...", "description": "..."}]}"""

HIGH_LEVEL_USER = """\
Texts of the cluster:
{texts}

JSON reply:"""

# --------------------------------------------------------------------------- query elements

QUERY_ELEMENTS_SYSTEM = """\
You prepare a search query for lookup in a knowledge graph whose nodes are entities and
key terms. List the main entities and key nouns of the query as one flat list: names of
people, organisations, places, works, products, events, dates, and the specific things
or concepts the query is about. Keep the query's own wording. Add a closely related
term (a full name for an abbreviation, a common alternative name) only when you are
confident what the user means; otherwise list only what the query itself says. Keep
generic common nouns such as "thing", "person", "information" or "year" to a minimum,
and do not answer the query.

Reply with one JSON object and nothing else: {"elements": ["...", "..."]}

Example query: Which botanist surveyed the mosses of Torvik for the Velmora society?
Example reply: {"elements": ["botanist", "mosses", "Torvik", "Velmora Botanical Society"]}"""

QUERY_ELEMENTS_USER = "Query: {question}\nJSON reply:"

# --------------------------------------------------------------------------- answer

ANSWER_SYSTEM = """\
You are a thorough assistant who answers questions from retrieved information. Give a
clear and accurate answer to the query. Read the retrieved information carefully and
build the answer on it; bring in general background knowledge only where it is needed
to answer the query fully. If the information leaves you unsure, say so plainly. Never
invent facts, and do not include details that the retrieved information does not
support.

Write the answer as several paragraphs of prose."""

ANSWER_USER = """\
Retrieved information:
{context}

Query: {question}

Answer:"""


# --------------------------------------------------------------------------- builders


def _lines(items: Sequence[str]) -> str:
    """Items one per line, empty ones dropped; "(none)" when nothing is left."""
    kept = [" ".join(str(item).split()) for item in items]
    kept = [item for item in kept if item]
    return "\n".join(kept) if kept else "(none)"


def decomposition_messages(text: str) -> list[Message]:
    """The text-decomposition conversation for one chunk (spec §3.1).

    The reply is ``{"Output": [{"semantic_unit", "entities", "relationships"}]}``,
    parsed by :func:`hygraph.extract.noderag.parse_decomposition`.
    """
    return [
        {"role": "system", "content": DECOMPOSITION_SYSTEM},
        {"role": "user", "content": DECOMPOSITION_USER.format(text=fenced(text))},
    ]


def relationship_repair_messages(raw: str) -> list[Message]:
    """Rewrite one malformed ``"A, relation, B"`` string as
    ``{"source", "relationship", "target"}`` (spec §3.1); parsed by
    :func:`hygraph.extract.noderag.parse_repaired_relationship`."""
    return [
        {"role": "system", "content": RELATIONSHIP_REPAIR_SYSTEM},
        {"role": "user", "content": RELATIONSHIP_REPAIR_USER.format(raw=" ".join(raw.split()))},
    ]


def attribute_messages(
    name: str,
    units: Sequence[str],
    relationships: Sequence[str],
    max_words: int = 2000,
) -> list[Message]:
    """The attribute (A node) prompt for one important entity (spec §3.2).

    ``units`` and ``relationships`` are the texts of the entity's neighbouring S and R
    nodes, one per line in the prompt. The reply is plain text, cleaned by
    :func:`clean_summary`.
    """
    if max_words < 1:
        raise ValueError(f"max_words must be >= 1, got {max_words}")
    return [
        {"role": "system", "content": ATTRIBUTE_SYSTEM.format(max_words=int(max_words))},
        {
            "role": "user",
            "content": ATTRIBUTE_USER.format(
                name=name.strip(), units=_lines(units), relationships=_lines(relationships)
            ),
        },
    ]


def high_level_messages(texts: Sequence[str]) -> list[Message]:
    """The high-level element prompt for the S and A texts of one community (spec §3.3).

    The texts are numbered in the prompt. The reply is
    ``{"high_level_elements": [{"title", "description"}]}``, parsed by
    :func:`parse_high_level_elements`.
    """
    kept = [" ".join(str(t).split()) for t in texts]
    numbered = "\n".join(f"{i}. {t}" for i, t in enumerate((t for t in kept if t), start=1))
    return [
        {"role": "system", "content": HIGH_LEVEL_SYSTEM},
        {"role": "user", "content": HIGH_LEVEL_USER.format(texts=numbered or "(none)")},
    ]


def query_elements_messages(question: str) -> list[Message]:
    """The query-decomposition prompt (spec §4.1): ``{"elements": [...]}``, parsed by
    :func:`parse_query_elements`."""
    return [
        {"role": "system", "content": QUERY_ELEMENTS_SYSTEM},
        {"role": "user", "content": QUERY_ELEMENTS_USER.format(question=question.strip())},
    ]


def answer_messages(question: str, context: str) -> list[Message]:
    """NodeRAG's unified answer prompt (spec §4.5): the retrieved context, then the query."""
    return [
        {"role": "system", "content": ANSWER_SYSTEM},
        {"role": "user", "content": ANSWER_USER.format(context=context, question=question)},
    ]


# --------------------------------------------------------------------------- reply parsers

_ELEMENT_LIST_KEYS = ("high_level_elements", "elements", "high_level_element", "insights")
_TITLE_KEYS = ("title", "name", "keywords", "keyword", "topic", "heading")
_DESCRIPTION_KEYS = ("description", "content", "text", "insight", "summary", "detail", "details")
_TITLE_WORDS = 8
_TRAILING_PUNCT = re.compile(r"[\s.,;:!?]+$")


def _title_from(description: str) -> str:
    words = description.split()
    title = " ".join(words[:_TITLE_WORDS])
    return _TRAILING_PUNCT.sub("", title) or title


def parse_high_level_elements(text: str) -> list[tuple[str, str]]:
    """``(title, description)`` pairs from a reply to :func:`high_level_messages`.

    The list may sit at the top level or under ``high_level_elements`` (``elements``).
    Items without a description are skipped; an item with no title gets the first
    words of its description; a bare string item is a description. Duplicates are kept
    (the builder merges them by id and counts them).

    Raises:
        ParseError: no JSON, or an object with no element list.
    """
    items = listed_items(text, _ELEMENT_LIST_KEYS, "high_level_elements")
    out: list[tuple[str, str]] = []
    for item in items:
        if isinstance(item, str):
            title, description = "", item
        elif isinstance(item, Mapping):
            data = lower_keys(item)
            title = as_text(pick(data, _TITLE_KEYS), ", ")
            description = as_text(pick(data, _DESCRIPTION_KEYS))
        else:
            continue
        description = " ".join(description.split())
        if not description:
            continue
        title = " ".join(title.split()) or _title_from(description)
        out.append((title, description))
    return out


_QUERY_ELEMENT_KEYS = ("elements", "entities", "keywords", "key_elements", "terms", "nouns")


def parse_query_elements(text: str, question: str) -> list[str]:
    """The entities and key nouns in a reply to :func:`query_elements_messages`.

    Reads the ``elements`` list (or ``entities``, ``keywords``) or a top-level list;
    strings and numbers are kept, objects contribute their ``name``; items are
    whitespace-collapsed and deduplicated case-insensitively (first spelling kept). An
    empty list gives ``[]``: the caller decides the fallback (e.g. the question itself).

    Raises:
        ParseError: no JSON, or an object with no element list (``question`` is named
            in the message).
    """
    about = f" for query {preview(question, 40)!r}"
    items = listed_items(text, _QUERY_ELEMENT_KEYS, "elements", about)
    out: list[str] = []
    seen: set[str] = set()
    for item in items:
        if isinstance(item, bool) or not isinstance(item, str | int | float | Mapping):
            continue
        element = " ".join(as_text(item).split())
        if element and element.casefold() not in seen:
            seen.add(element.casefold())
            out.append(element)
    return out


_FENCED = re.compile(r"^```[ \t]*[\w+-]*[ \t]*\n?(.*?)\n?```$", re.DOTALL)
_LABEL = re.compile(
    r"^\s*(?:#+\s*)?(?:\*\*|__)?\s*(?:entity\s+|attribute\s+)?"
    r"(?:summary|profile|portrait|description|attributes?)\s*(?:\*\*|__)?\s*:\s*(?:\*\*|__)?\s*",
    re.IGNORECASE,
)
_SUMMARY_KEYS = ("summary", "profile", "portrait", "description", "attribute", "text", "content")


def clean_summary(text: str) -> str:
    """The summary text of a reply to :func:`attribute_messages`: ``<think>`` blocks, an
    enclosing code fence, a JSON wrapper (``{"summary": ...}``) and a leading label such
    as ``Summary:`` removed.

    Raises:
        ParseError: nothing is left (an empty reply, or reasoning only).
    """
    body = strip_thinking(text or "").strip()
    in_fence = _FENCED.match(body)
    if in_fence:
        body = in_fence.group(1).strip()
    if body.startswith("{") and body.endswith("}"):
        try:
            data = json.loads(body)
        except (RecursionError, ValueError):  # not JSON, or nested / sized past reading
            data = None
        if isinstance(data, Mapping):
            inner = pick(lower_keys(data), _SUMMARY_KEYS)
            if isinstance(inner, str):
                body = inner.strip()
    body = _LABEL.sub("", body, count=1).strip()
    if not body:
        raise ParseError(f"no summary text in the reply: {preview(text or '')!r}")
    return body
