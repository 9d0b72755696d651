"""Prompts for HyperGraphRAG: n-ary extraction with gleaning, question entities, and the
unified think-then-answer generation prompt.

Unlike :mod:`hygraph.prompts.extraction`, the n-ary extraction prompt asks for
**delimited records**, not JSON, because that is the format HyperGraphRAG's reported
numbers were produced with (spec 003, §3.2): one ``hyper-relation`` record per knowledge
segment, followed at once by one ``entity`` record per member of that segment, the
records separated by :data:`RECORD_DELIMITER` and the output closed by
:data:`COMPLETION_DELIMITER`. :mod:`hygraph.extract.records` parses it.

The question-entity prompt (spec §4.1) asks for a small JSON object, and the generation
prompt (spec §5.3) is one user message with ``---Section---`` headers whose final answer
sits in ``<answer>`` tags. Their reply parsers live here too
(:func:`parse_question_entities`, :func:`extract_answer`); the n-ary records fill the
extraction schema, so their parser stays in :mod:`hygraph.extract.records`.

Constants are templates for :meth:`str.format` where they take placeholders; texts
without placeholders are sent as they are. The wording and every example passage are
our own (the hypertension example is the spec authors' worked example).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from hygraph.models.base import Message
from hygraph.prompts.blocks import fenced
from hygraph.prompts.replies import ParseError, drop_think_blocks, parse_json_payload

log = logging.getLogger("hygraph")

TUPLE_DELIMITER = "<|>"
RECORD_DELIMITER = "##"
COMPLETION_DELIMITER = "<|COMPLETE|>"

# --------------------------------------------------------------------------- n-ary extraction

NARY_SYSTEM = """\
You turn a passage into n-ary knowledge for a search index: a list of self-contained
knowledge segments, each followed by the entities it involves. Write every text field in
{language}.

Step 1. Divide the passage into knowledge segments. A segment is one complete piece of
knowledge that can be understood without the passage. Restate it as a sentence (or two)
that names its subjects instead of using pronouns and keeps the conditions, quantities,
times and places that belong to it. A segment may involve any number of entities: keep
them together and do not break the segment into pairs. Write one record per segment:
("hyper-relation"<|>"<segment sentence>"<|><completeness>)
where <completeness> is a number from 0 to 10 saying how complete and self-sufficient
the segment is.

Step 2. Directly after each segment record, write one record for every entity that the
segment involves:
("entity"<|>"<name>"<|>"<type>"<|>"<description>"<|><importance>)
- name: the entity as the passage writes it, with the same spelling and casing;
- type: {types}
- description: what the entity is and what it does, has or undergoes in this segment,
  using only what the passage says;
- importance: a number from 0 to 100 saying how important the entity is in the passage.
An entity that takes part in several segments is listed again under each of them, with
the description and importance that fit that segment.

Step 3. Output all records from steps 1 and 2 as one flat list, in that order, with ##
between consecutive records. Put double quotes around text fields, write the scores as
bare numbers, and add nothing else: no headings, numbering, explanations or code fences.

Step 4. Finish the output with <|COMPLETE|>. If the passage holds nothing worth
extracting, output only <|COMPLETE|>.

Example 1

Passage:
The Halvard Bridge over the Senna Estuary was completed in 1931 by the engineering firm
Quist & Orme. Because of salt corrosion, the city of Brenmouth closed it to lorries in
2008; since then only cars and bicycles may cross.

Output:
("hyper-relation"<|>"The engineering firm Quist & Orme completed the Halvard Bridge over \
the Senna Estuary in 1931."<|>9)##
("entity"<|>"Halvard Bridge"<|>"structure"<|>"Bridge over the Senna Estuary, completed \
in 1931 by Quist & Orme."<|>95)##
("entity"<|>"Senna Estuary"<|>"location"<|>"Estuary that the Halvard Bridge crosses."<|>70)##
("entity"<|>"Quist & Orme"<|>"organization"<|>"Engineering firm that completed the \
Halvard Bridge."<|>80)##
("entity"<|>"1931"<|>"date"<|>"Year in which the Halvard Bridge was completed."<|>60)##
("hyper-relation"<|>"Because of salt corrosion, the city of Brenmouth closed the Halvard \
Bridge to lorries in 2008, and since then only cars and bicycles may cross it."<|>8)##
("entity"<|>"Brenmouth"<|>"city"<|>"City that closed the Halvard Bridge to lorries in \
2008 because of salt corrosion."<|>80)##
("entity"<|>"Halvard Bridge"<|>"structure"<|>"Bridge closed to lorries since 2008 and \
open only to cars and bicycles."<|>90)##
("entity"<|>"Salt corrosion"<|>"concept"<|>"Damage to the bridge that led to the ban on \
lorries."<|>75)##
("entity"<|>"2008"<|>"date"<|>"Year in which lorries were banned from the Halvard \
Bridge."<|>60)##
<|COMPLETE|>

Example 2

Passage:
For adults aged 65 or older with stage 2 hypertension, Guideline X recommends starting
dual therapy with an ACE inhibitor plus a calcium channel blocker.

Output:
("hyper-relation"<|>"Guideline X recommends initiating dual therapy of an ACE inhibitor \
plus a calcium channel blocker for adults aged 65 or older with stage 2 \
hypertension."<|>9)##
("entity"<|>"Guideline X"<|>"document"<|>"Clinical guideline that issues the treatment \
recommendation."<|>85)##
("entity"<|>"Adults aged 65 or older"<|>"population"<|>"Older patient group targeted by \
the recommendation."<|>90)##
("entity"<|>"Stage 2 hypertension"<|>"disease"<|>"Hypertension grade for which dual \
therapy is advised."<|>95)##
("entity"<|>"ACE inhibitor"<|>"drug class"<|>"First component of the recommended dual \
therapy."<|>90)##
("entity"<|>"Calcium channel blocker"<|>"drug class"<|>"Second component of the \
recommended dual therapy."<|>90)##
<|COMPLETE|>"""
"""The instructions and two worked examples; ``{language}`` and ``{types}`` are filled in.

Each example record is wrapped over several lines here with a trailing backslash, which
Python removes, so the model sees every record on one line."""

NARY_USER = """\
Passage:
{text}

Output:"""

NARY_TYPES_OPEN = (
    "a short lower-case word or phrase for the kind of entity (for example person, "
    "organization, location, date, event, object, role or concept);"
)
NARY_TYPES_GIVEN = 'one of {types}; use "other" when none of them fits;'

NARY_CONTINUE_USER = """\
Your answer left out many knowledge segments and entities that the passage contains.
Read the passage again and write the records you missed, in exactly the same format:
each ("hyper-relation"<|>...) record followed by its ("entity"<|>...) records, ## between
records, and <|COMPLETE|> at the end. Do not repeat records you have already given. If
nothing is missing, reply with <|COMPLETE|> only."""

NARY_LOOP_CHECK_USER = """\
Is any knowledge in the passage still not covered by the segments you have written so
far? Reply with the single word YES if some is still missing, or NO if everything is
covered."""

# --------------------------------------------------------------------------- question entities

QUESTION_ENTITIES_SYSTEM = """\
You pick out the key entities of a question so that a knowledge index can be searched
for them. List every specific thing the question names or clearly implies: named people,
organizations, places, products, works and events, and also concepts, conditions,
measurements, numeric ranges and groups of people. Keep each entity short, write it in
the language of the question as plain readable text (no escape sequences), and do not
answer the question. Reply with one JSON object of the form {"entities": ["...", "..."]}
and nothing else."""

QUESTION_ENTITIES_USER = "Question: {question}"

QUESTION_ENTITIES_EXAMPLES: tuple[tuple[str, list[str]], ...] = (
    (
        "Which engineering firm built the bridge that Brenmouth closed to lorries?",
        ["engineering firm", "bridge", "Brenmouth", "lorries"],
    ),
    (
        "What daily dose of vitamin D is advised for children under 5 who live north of "
        "latitude 50°?",
        ["vitamin D", "daily dose", "children under 5", "latitude above 50°"],
    ),
    (
        "¿Qué premios recibió la novela El faro de Orsa en 2011?",
        ["El faro de Orsa", "novela", "premios", "2011"],
    ),
)
"""Few-shot pairs (question, entities), fictional and in more than one language."""

# --------------------------------------------------------------------------- generation

COT_ANSWER_USER = """\
---Role---
You are a careful assistant who answers questions with the help of the knowledge given
below.

---Knowledge---
{knowledge}

---Goal---
Answer the question. The answer may need several pieces of the knowledge combined, and
some pieces may be irrelevant. First reason step by step inside <think></think>: find
the pieces that bear on the question and work out what they imply together. Then write
the final answer inside <answer></answer>. Keep the final answer direct and complete;
if the knowledge does not settle the question, give your best answer and say briefly
what is uncertain.

---Output Format---
<think>
your reasoning
</think>
<answer>
your final answer
</answer>

---Question---
{question}"""


# --------------------------------------------------------------------------- builders


def _types_line(entity_types: Sequence[str] | None) -> str:
    types = [t.strip() for t in entity_types or () if t and t.strip()]
    if not types:
        return NARY_TYPES_OPEN
    return NARY_TYPES_GIVEN.format(types=", ".join(types))


def nary_messages(
    text: str, *, language: str = "English", entity_types: Sequence[str] | None = None
) -> list[Message]:
    """The n-ary extraction conversation for one chunk (open entity types when none given).

    The reply is a list of delimited records (see the module docs), parsed by
    :func:`hygraph.extract.records.parse_nary_records`.
    """
    system = NARY_SYSTEM.format(language=language or "English", types=_types_line(entity_types))
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": NARY_USER.format(text=fenced(text))},
    ]


def nary_continue_messages(history: Sequence[Message], reply: str) -> list[Message]:
    """A gleaning pass: the conversation so far, the model's last reply, and a request for
    the segments and entities it missed, in the same record format."""
    return [
        *history,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": NARY_CONTINUE_USER},
    ]


def nary_loop_check_messages(history: Sequence[Message], reply: str) -> list[Message]:
    """Between gleaning passes: the conversation so far, the model's last reply, and a
    YES/NO question on whether knowledge is still uncovered (the answer is not kept in
    the history of the next pass)."""
    return [
        *history,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": NARY_LOOP_CHECK_USER},
    ]


def question_entities_messages(question: str) -> list[Message]:
    """The key entities of a question as ``{"entities": [...]}`` (few-shot, spec §4.1).

    Parsed by :func:`parse_question_entities`, which falls back to the question itself
    when the reply is unusable.
    """
    messages: list[Message] = [{"role": "system", "content": QUESTION_ENTITIES_SYSTEM}]
    for example, entities in QUESTION_ENTITIES_EXAMPLES:
        messages.append(
            {"role": "user", "content": QUESTION_ENTITIES_USER.format(question=example)}
        )
        messages.append(
            {
                "role": "assistant",
                "content": json.dumps({"entities": entities}, ensure_ascii=False),
            }
        )
    messages.append({"role": "user", "content": QUESTION_ENTITIES_USER.format(question=question)})
    return messages


def cot_answer_messages(question: str, knowledge: str) -> list[Message]:
    """The unified generation prompt (spec §5.3): one user message, reasoning in
    ``<think>`` and the final answer in ``<answer>`` (read it back with
    :func:`extract_answer`)."""
    return [
        {
            "role": "user",
            "content": COT_ANSWER_USER.format(knowledge=knowledge, question=question),
        }
    ]


# --------------------------------------------------------------------------- reply parsers

_NAME_KEYS = ("name", "entity", "entity_name", "text", "value")


def _entity_name(item: Any) -> str:
    """One listed entity as text: a string (whitespace collapsed), a number, or an
    object's name; ``""`` for anything else."""
    if isinstance(item, str):
        return " ".join(item.split())
    if isinstance(item, int | float) and not isinstance(item, bool):
        return str(item)
    if isinstance(item, Mapping):
        lowered = {str(k).strip().lower(): v for k, v in item.items()}
        for key in _NAME_KEYS:
            value = lowered.get(key)
            if isinstance(value, str) and value.strip():
                return " ".join(value.split())
    return ""


def parse_question_entities(text: str, question: str) -> list[str]:
    """The entities in a reply to :func:`question_entities_messages`; ``[question]`` when none.

    Accepts ``{"entities": [...]}`` (key in any case) or a bare list; items may be
    strings or objects with a ``name`` key. Entities are deduplicated (case-insensitive,
    first spelling kept) and empty ones dropped. Any failure falls back to the question
    itself, so retrieval always has something to search with (spec §4.1).
    """
    try:
        payload = parse_json_payload(text)
    except ParseError:
        log.debug("question entities: no JSON in the reply, using the question")
        return [question]
    if isinstance(payload, Mapping):
        lowered = {str(k).strip().lower(): v for k, v in payload.items()}
        payload = lowered.get("entities")
        if isinstance(payload, str):
            payload = [payload]
    if not isinstance(payload, list):
        return [question]
    found: dict[str, str] = {}
    for item in payload:
        name = _entity_name(item)
        if name:
            found.setdefault(name.casefold(), name)
    return list(found.values()) or [question]


_ANSWER_OPEN = re.compile(r"<answer>", re.IGNORECASE)
_ANSWER_CLOSE = re.compile(r"</answer>", re.IGNORECASE)
_LEADING_THINK = re.compile(r"^\s*<think(?:ing)?>.*?</think(?:ing)?>", re.IGNORECASE | re.DOTALL)


def extract_answer(text: str) -> str:
    """The final answer of a reply to :func:`cot_answer_messages` (spec §5.3).

    The text between the first ``<answer>`` and the ``</answer>`` after it, stripped.
    Tags inside a closed ``<think>`` block are not taken for the answer. When either
    tag is missing, the whole reply, stripped, without a leading ``<think>`` block.
    """
    if not text:
        return ""
    body = drop_think_blocks(text)
    for candidate in (body, text):
        opened = _ANSWER_OPEN.search(candidate)
        if opened:
            closed = _ANSWER_CLOSE.search(candidate, opened.end())
            if closed:
                return candidate[opened.end() : closed.start()].strip()
    return _LEADING_THINK.sub("", text).strip()
