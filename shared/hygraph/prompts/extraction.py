"""Prompts for LLM extraction: the unified one-call schema, two-step NER → OpenIE, gleaning,
and merging entity descriptions.

Every prompt asks for plain JSON (no delimiter records), because JSON survives small local
models better once :mod:`hygraph.extract.parse` repairs what they get wrong, and because an
OpenAI-compatible ``response_format={"type": "json_object"}`` can then enforce it (that mode
requires the word "JSON" in the conversation, which each prompt contains).

Constants are templates for :meth:`str.format`. Only the ``*_USER`` templates that take
placeholders are formatted; ``*_SYSTEM`` texts, the examples and :data:`GLEAN_USER` are sent
as they are, so their JSON braces are single. The wording and the examples are our own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from hygraph.models.base import Message
from hygraph.prompts.blocks import fenced

# --------------------------------------------------------------------------- unified

UNIFIED_SYSTEM = """\
You read one passage and turn what it says into structured knowledge for a search index.
Reply with a single JSON object and nothing else: no markdown fences, no comments, no text
before or after it. The object has exactly these four keys:

"entities": a list of objects {"name", "type", "description", "importance"}
  - name: the entity exactly as it is written in the passage (same spelling and casing);
    people, organisations, places, dates, works, products, events, concepts and other
    things the passage says something about. Resolve pronouns: never use "he" or "it".
  - type: one short lower-case word or phrase for the kind of entity.
  - description: one or two sentences on who or what it is and what the passage says
    it does or undergoes, using only the passage.
  - importance: a number from 0 to 100 for how central the entity is to the passage.

"relations": a list of objects {"source", "target", "label", "description", "strength"}
  for pairs of entities the passage links directly.
  - source, target: entity names, written exactly as in "entities".
  - label: a short verb phrase for the link, read from source to target.
  - description: one sentence explaining the link.
  - strength: a number from 0 to 10 for how strong and explicit the link is.

"facts": a list of objects {"statement", "entities", "completeness"}
  - statement: one self-contained sentence that restates a piece of knowledge from the
    passage so that it can be understood without the passage. A fact may join two, three
    or more entities at once (who did what, where, when, with whom); do not split such
    a statement into pairs.
  - entities: the names (as in "entities") of every entity the statement involves.
  - completeness: a number from 0 to 10 for how complete and self-sufficient it is.

"units": a list of strings. Paraphrase the passage as a sequence of short self-contained
  sentences, one event or claim each, with names instead of pronouns, together covering
  everything the passage states.

Use only information from the passage. Give numbers as JSON numbers. If the passage has
nothing to extract, return empty lists for all four keys.

Example passage:
In 2019 the Larkspur Rowing Club opened a new boathouse on the Ferrow River, paid for by a
grant from the Dunmore County Council. Club captain Marta Velasquez said it would let the
junior squad train all winter.

Example reply:
{"entities": [
  {"name": "Larkspur Rowing Club", "type": "organization", "importance": 95,
   "description": "Rowing club that opened a new boathouse on the Ferrow River in 2019."},
  {"name": "Ferrow River", "type": "location", "importance": 60,
   "description": "River on which the Larkspur Rowing Club built its new boathouse."},
  {"name": "Dunmore County Council", "type": "organization", "importance": 70,
   "description": "Local council whose grant paid for the boathouse."},
  {"name": "Marta Velasquez", "type": "person", "importance": 75,
   "description": "Club captain; said the boathouse lets the junior squad train all winter."},
  {"name": "2019", "type": "date", "importance": 40,
   "description": "Year the boathouse opened."}],
 "relations": [
  {"source": "Larkspur Rowing Club", "target": "Ferrow River", "label": "opened a boathouse on",
   "description": "The club's new boathouse stands on the Ferrow River.", "strength": 8},
  {"source": "Dunmore County Council", "target": "Larkspur Rowing Club", "label": "funded",
   "description": "A council grant paid for the club's boathouse.", "strength": 9},
  {"source": "Marta Velasquez", "target": "Larkspur Rowing Club", "label": "captain of",
   "description": "Marta Velasquez captains the club.", "strength": 9}],
 "facts": [
  {"statement": "In 2019 the Larkspur Rowing Club opened a boathouse on the Ferrow River.",
   "entities": ["Larkspur Rowing Club", "Ferrow River", "2019"], "completeness": 9},
  {"statement": "The Dunmore County Council funded the Larkspur Rowing Club's new boathouse.",
   "entities": ["Dunmore County Council", "Larkspur Rowing Club"], "completeness": 8},
  {"statement":
   "Marta Velasquez, captain of the Larkspur Rowing Club, said juniors can now train all winter.",
   "entities": ["Marta Velasquez", "Larkspur Rowing Club"], "completeness": 8}],
 "units": [
  "The Larkspur Rowing Club opened a new boathouse on the Ferrow River in 2019.",
  "A grant from the Dunmore County Council paid for the boathouse.",
  "Marta Velasquez, the club captain, said the junior squad can now train all winter."]}"""

UNIFIED_USER = """\
{entity_types}

Passage:
{text}

Reply with the JSON object for this passage only."""

UNIFIED_TYPES_OPEN = (
    "Entity types are open: use whatever short type fits best (for example person, "
    "organization, location, date, event, work, product, concept)."
)
UNIFIED_TYPES_GIVEN = (
    'Choose each entity type from this list: {types}. Use "other" when none of them fits.'
)

# --------------------------------------------------------------------------- two-step

NER_SYSTEM = """\
You find the named entities in a paragraph: people, organisations, places, dates and
times, numbers with units, languages, works, products, events, web sites and other
specific things referred to by name. Copy each one exactly as it is written, list each
only once, and leave out pronouns and generic words. Reply with one JSON object of the
form {"named_entities": ["...", "..."]} and nothing else."""

NER_USER = "Paragraph:\n{text}"

NER_EXAMPLE_TEXT = (
    "The Orvale Institute of Marine Science was founded in 1987 in Portmere, Canada. "
    "Its journal, Tidewatch, is published in English and French, and back issues are "
    "free at tidewatch.example.org."
)
NER_EXAMPLE_REPLY = (
    '{"named_entities": ["Orvale Institute of Marine Science", "1987", "Portmere", '
    '"Canada", "Tidewatch", "English", "French", "tidewatch.example.org"]}'
)

OPENIE_SYSTEM = """\
You turn a paragraph into a small knowledge graph of [subject, relation, object] triples.
You get the paragraph and the list of named entities found in it. Write one triple for
each relationship the paragraph states:
- every triple must contain at least one entity from the list, and preferably two, spelled
  exactly as in the list;
- replace pronouns with the names they refer to;
- keep the relation a short verb phrase and put each piece of information in its own
  triple.
Reply with one JSON object of the form {"triples": [["subject", "relation", "object"], ...]}
and nothing else."""

OPENIE_USER = "Paragraph:\n{text}\n\nNamed entities: {entities}"

OPENIE_EXAMPLE_REPLY = (
    '{"triples": ['
    '["Orvale Institute of Marine Science", "founded in", "1987"], '
    '["Orvale Institute of Marine Science", "located in", "Portmere"], '
    '["Portmere", "located in", "Canada"], '
    '["Orvale Institute of Marine Science", "publishes", "Tidewatch"], '
    '["Tidewatch", "published in", "English"], '
    '["Tidewatch", "published in", "French"], '
    '["Tidewatch", "back issues available at", "tidewatch.example.org"]]}'
)

# --------------------------------------------------------------------------- gleaning

GLEAN_USER = """\
Your previous answer probably missed some of what the passage says. Read the passage again
and reply with the items you left out: entities, relations, facts and units that are not
already in your previous answer. Use the same JSON object with the same four keys and do
not repeat anything you already gave. If nothing is missing, reply with
{"entities": [], "relations": [], "facts": [], "units": []}."""

# --------------------------------------------------------------------------- summaries

SUMMARIZE_SYSTEM = """\
You merge several descriptions of the same entity into one. Keep the information from
every description, remove repetition, and where the descriptions disagree, settle on one
consistent account (prefer the more specific statement, or mention both possibilities if
they cannot be reconciled). Write in the third person, name the entity, and reply with the
description text only."""

SUMMARIZE_USER = """\
Entity: {name}

Descriptions:
{descriptions}

Write one coherent description of {name} in at most {max_words} words."""


# --------------------------------------------------------------------------- helpers


def _types_line(entity_types: Sequence[str] | None) -> str:
    types = [t.strip() for t in entity_types or () if t and t.strip()]
    if not types:
        return UNIFIED_TYPES_OPEN
    return UNIFIED_TYPES_GIVEN.format(types=", ".join(types))


def unified_messages(text: str, entity_types: Sequence[str] | None = None) -> list[Message]:
    """The one-call extraction conversation for one chunk (open types when none are given)."""
    return [
        {"role": "system", "content": UNIFIED_SYSTEM},
        {
            "role": "user",
            "content": UNIFIED_USER.format(
                entity_types=_types_line(entity_types), text=fenced(text)
            ),
        },
    ]


def ner_messages(text: str) -> list[Message]:
    """Step one of the HippoRAG-style pipeline: the named entities of a passage (one-shot)."""
    return [
        {"role": "system", "content": NER_SYSTEM},
        {"role": "user", "content": NER_USER.format(text=fenced(NER_EXAMPLE_TEXT))},
        {"role": "assistant", "content": NER_EXAMPLE_REPLY},
        {"role": "user", "content": NER_USER.format(text=fenced(text))},
    ]


def openie_messages(text: str, entities: Sequence[str]) -> list[Message]:
    """Step two: triples for a passage, given its named entities (one-shot)."""
    example_entities = json.loads(NER_EXAMPLE_REPLY)["named_entities"]
    return [
        {"role": "system", "content": OPENIE_SYSTEM},
        {
            "role": "user",
            "content": OPENIE_USER.format(
                text=fenced(NER_EXAMPLE_TEXT),
                entities=json.dumps(example_entities, ensure_ascii=False),
            ),
        },
        {"role": "assistant", "content": OPENIE_EXAMPLE_REPLY},
        {
            "role": "user",
            "content": OPENIE_USER.format(
                text=fenced(text), entities=json.dumps(list(entities), ensure_ascii=False)
            ),
        },
    ]


def glean_messages(previous_messages: Sequence[Message], previous_reply: str) -> list[Message]:
    """The conversation so far, the model's last reply, and the request for missed items."""
    return [
        *previous_messages,
        {"role": "assistant", "content": previous_reply},
        {"role": "user", "content": GLEAN_USER},
    ]


def summarize_messages(name: str, descriptions: Sequence[str], max_words: int) -> list[Message]:
    """A request to merge ``descriptions`` of entity ``name`` into one of at most ``max_words``."""
    listed = "\n".join(f"- {' '.join(d.split())}" for d in descriptions if d and d.strip())
    return [
        {"role": "system", "content": SUMMARIZE_SYSTEM},
        {
            "role": "user",
            "content": SUMMARIZE_USER.format(
                name=name, descriptions=listed, max_words=int(max_words)
            ),
        },
    ]
