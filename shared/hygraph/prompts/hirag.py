"""Prompt and reply parser for HiRAG's summary entities (spec 001 §3.5 step 5, prompt E3).

Each GMM cluster of one layer's entities is shown to the model with a short list of
generic "meta" types; the model names one or more higher-level entities that summarise
the cluster (each an instance of a meta type) and says which members relate to which
of them. The reply is one JSON object (the paper's records use delimiters; JSON is what
every other prompt here asks for, and what a JSON response mode accepts):

``{"entities": [{"name", "type", "description"}],
"relationships": [{"source", "target", "description", "strength"}]}``

where a relationship's source is a member's name as given and its target a summary
entity's name. :func:`parse_summary_entities` reads it tolerantly and raises
:class:`~hygraph.prompts.replies.ParseError` when no summary entity with a name and a
description is left. Which relationships are valid (a given member to a new summary
entity) is for the caller to check. The wording and the worked example are our own.
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
)

#: Meta types a summary entity is an instance of (authors' code; the paper's examples).
META_TYPES = (
    "organization",
    "person",
    "location",
    "event",
    "product",
    "technology",
    "industry",
    "mathematics",
    "social sciences",
)
FALLBACK_TYPE = "normal_entity"

SUMMARY_SYSTEM = """\
You organise a knowledge graph into levels. You are given a set of entities that were
grouped together because their descriptions are similar, and a list of meta types.

Name one or more higher-level entities that summarise the set:
- each summary entity is a specific instance of one of the meta types (for the meta
  type "company", a real company name; for "location", a real place), or of the type
  "normal_entity" when none fits;
- it must be directly relevant to the given entities, with a clear and logical link
  from the set to it;
- give it a capitalised name, its type and a comprehensive description.

Then, for every given entity that is clearly related to one of your summary entities,
write a relationship from the given entity (its name exactly as given) to the summary
entity, with a short explanation and a strength from 1 to 10. Do not write
relationships between two summary entities, and do not invent entities that are
neither given nor summary entities.

Example. Meta types: company, location. Entities:
- INSTAGRAM: a photo and video sharing app
- FACEBOOK: a social networking service
- WHATSAPP: a messaging app
Reply:
{"entities": [{"name": "META PLATFORMS", "type": "company", "description": "A technology
company that owns several social media and messaging services."}],
 "relationships": [
  {"source": "INSTAGRAM", "target": "META PLATFORMS", "description": "Instagram is owned
   by Meta Platforms.", "strength": 8.5},
  {"source": "FACEBOOK", "target": "META PLATFORMS", "description": "Facebook is Meta
   Platforms' original service.", "strength": 9},
  {"source": "WHATSAPP", "target": "META PLATFORMS", "description": "WhatsApp was
   acquired by Meta Platforms.", "strength": 8}]}

Reply with one JSON object and nothing else (no markdown fences, no text around it),
in English:
{"entities": [{"name": "...", "type": "...", "description": "..."}],
 "relationships": [{"source": "...", "target": "...", "description": "...",
 "strength": 1.0}]}
"""

SUMMARY_USER = """\
Meta types: {types}

Entities:
{members}
"""

_ENTITY_LIST_KEYS = ("entities", "summary_entities", "summaries", "entity")
_RELATION_LIST_KEYS = ("relationships", "relations", "edges", "links", "relationship")
_NAME_KEYS = ("name", "entity_name", "entity", "title")
_TYPE_KEYS = ("type", "entity_type", "meta_type", "category")
_DESCRIPTION_KEYS = ("description", "entity_description", "summary", "text")
_SOURCE_KEYS = ("source", "src", "from", "source_entity", "member", "head")
_TARGET_KEYS = ("target", "tgt", "to", "target_entity", "summary_entity", "tail")
_RELATION_TEXT_KEYS = ("description", "relationship_description", "explanation", "reason")
_STRENGTH_KEYS = ("strength", "relationship_strength", "weight", "score")


def summary_entity_messages(members: Sequence[str], meta_types: Sequence[str]) -> list[Message]:
    """The summary-entity prompt for one cluster; ``members`` are ``"NAME: description"``."""
    lines = "\n".join(f"- {' '.join(str(m).split())}" for m in members if str(m).strip())
    types = ", ".join(meta_types) or FALLBACK_TYPE
    return [
        {"role": "system", "content": SUMMARY_SYSTEM},
        {"role": "user", "content": SUMMARY_USER.format(types=types, members=lines or "(none)")},
    ]


def _strength(value: Any) -> float:
    number = as_number(value)
    return number if number is not None and number > 0 else 1.0


def parse_summary_entities(text: str) -> dict[str, list[dict[str, Any]]]:
    """The summary entities and member relationships in a reply to the summary prompt.

    Returns ``{"entities": [{"name", "type", "description"}], "relationships":
    [{"source", "target", "description", "strength"}]}``; entities without a name or a
    description are dropped, a missing type becomes ``normal_entity``, a strength that
    is not a positive number becomes 1.

    Raises:
        ParseError: no JSON object, or no usable summary entity.
    """
    payload = parse_json_payload(text)
    groups = {"entities": _ENTITY_LIST_KEYS, "relationships": _RELATION_LIST_KEYS}
    sections = find_sections(payload, groups) if isinstance(payload, Mapping) else None
    if sections is None:
        raise ParseError(f"the reply holds no summary entities: {preview(text)!r}")
    entities = []
    for item in as_list(sections.get("entities")):
        if not isinstance(item, Mapping):
            continue
        data = lower_keys(item)
        name = " ".join(as_text(pick(data, _NAME_KEYS)).split())
        description = " ".join(as_text(pick(data, _DESCRIPTION_KEYS)).split())
        etype = " ".join(as_text(pick(data, _TYPE_KEYS)).split()).lower() or FALLBACK_TYPE
        if name and description:
            entities.append({"name": name, "type": etype, "description": description})
    if not entities:
        raise ParseError(f"the reply names no summary entity: {preview(text)!r}")
    relationships = []
    for item in as_list(sections.get("relationships")):
        if not isinstance(item, Mapping):
            continue
        data = lower_keys(item)
        source = " ".join(as_text(pick(data, _SOURCE_KEYS)).split())
        target = " ".join(as_text(pick(data, _TARGET_KEYS)).split())
        if source and target:
            relationships.append({
                "source": source, "target": target,
                "description": " ".join(as_text(pick(data, _RELATION_TEXT_KEYS)).split()),
                "strength": _strength(pick(data, _STRENGTH_KEYS)),
            })  # fmt: skip
    return {"entities": entities, "relationships": relationships}
