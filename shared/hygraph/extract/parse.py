"""Tolerant parsing of LLM extraction replies into the :class:`~hygraph.extract.schema.Extraction`
schema.

Models, small local ones above all, rarely return exactly the JSON they were asked for:
they wrap it in markdown fences or prose, think aloud in ``<think>`` blocks first, run out
of tokens mid-array, leave trailing commas, use single quotes, rename keys, or give
``"85"`` where a number belongs. Throwing such a reply away wastes a paid call, so the
parsers here keep every item that is still usable and count the ones they had to skip.
The reply-level repairs (reasoning, fences, JSON repair, loose keys) are the generic
helpers of :mod:`hygraph.prompts.replies`; this module maps what they give onto the
extraction schema.

Two levels of failure:

* an *item* that lacks a required field (an entity without a name, a relation without
  both ends, a fact without a statement, a triple that is not three strings) is skipped
  and counted in the returned ``malformed`` number;
* a *reply* with no usable JSON, or JSON with none of the expected keys, raises
  :class:`~hygraph.prompts.replies.ParseError`. Extractors pass the parsers to
  :meth:`hygraph.models.llm.CachedLLM.acomplete` as ``validate``, so such replies are never
  cached and the chunk is retried by the next build.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hygraph.extract.schema import (
    DEFAULT_ENTITY_SCORE,
    DEFAULT_FACT_SCORE,
    DEFAULT_TYPE,
    Entity,
    Extraction,
    Fact,
    Relation,
    Unit,
)
from hygraph.prompts.replies import (
    ParseError,
    as_list,
    as_text,
    find_sections,
    listed_items,
    lower_keys,
    parse_json_payload,
    pick,
    preview,
)

__all__ = ["parse_ner", "parse_triples", "parse_unified"]

_NUMBER = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)")

# --------------------------------------------------------------------------- coercion


def _number(value: Any, default: float) -> float:
    """A float from a number or a numeric string ("85", "7/10", "90%"); else ``default``."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        match = _NUMBER.match(value)
        if not match:
            return default
        number = float(match.group(1))
    else:
        return default
    return number if math.isfinite(number) else default


# --------------------------------------------------------------------------- unified

_ENTITIES_KEYS = ("entities", "entity", "named_entities", "nodes", "entity_list")
_RELATIONS_KEYS = ("relations", "relationships", "relation", "relationship", "edges", "triples")
_FACTS_KEYS = (
    "facts",
    "fact",
    "statements",
    "hyperedges",
    "hyper_relations",
    "knowledge_segments",
    "n_ary_relations",
)
_UNITS_KEYS = ("units", "unit", "semantic_units", "events", "propositions")

_NAME_KEYS = ("name", "entity_name", "entity", "entity_text", "title", "text")
_TYPE_KEYS = ("type", "entity_type", "category", "kind", "label", "class")
_DESC_KEYS = ("description", "entity_description", "desc", "summary", "definition")
_IMPORTANCE_KEYS = ("importance", "score", "key_score", "importance_score", "salience", "weight")

_SOURCE_KEYS = ("source", "src", "head", "subject", "from", "source_entity", "src_id", "entity1")
_TARGET_KEYS = ("target", "tgt", "tail", "object", "to", "target_entity", "tgt_id", "entity2")
_LABEL_KEYS = ("label", "relation", "predicate", "relation_type", "relationship", "type", "verb")
_REL_DESC_KEYS = ("description", "relationship_description", "relation_description", "desc")
_STRENGTH_KEYS = ("strength", "relationship_strength", "weight", "score", "confidence")

_STATEMENT_KEYS = (
    "statement",
    "text",
    "fact",
    "sentence",
    "knowledge_segment",
    "content",
    "description",
)
_MEMBER_KEYS = ("entities", "entity_names", "members", "participants", "arguments", "entity")
_COMPLETENESS_KEYS = ("completeness", "completeness_score", "score", "confidence")

_UNIT_TEXT_KEYS = ("text", "unit", "statement", "sentence", "content", "event", "description")
_UNIT_ENTITY_KEYS = ("entities", "entity_names")


def _entity(item: Any) -> Entity | None:
    if isinstance(item, str):
        name = item.strip()
        return Entity(name=name) if name else None
    if isinstance(item, list | tuple):  # positional: [name, type, description, importance]
        fields = list(item) + [None] * 4
        name = as_text(fields[0])
        if not name:
            return None
        return Entity(
            name=name,
            type=as_text(fields[1]) or DEFAULT_TYPE,
            description=as_text(fields[2], "; "),
            score=_number(fields[3], DEFAULT_ENTITY_SCORE),
        )
    if not isinstance(item, Mapping):
        return None
    data = lower_keys(item)
    name = as_text(pick(data, _NAME_KEYS))
    if not name:
        return None
    return Entity(
        name=name,
        type=as_text(pick(data, _TYPE_KEYS)) or DEFAULT_TYPE,
        description=as_text(pick(data, _DESC_KEYS), "; "),
        score=_number(pick(data, _IMPORTANCE_KEYS), DEFAULT_ENTITY_SCORE),
    )


def _entity_items(section: Any) -> list[Any]:
    """Entities as a list; a mapping of name → details is accepted too."""
    if isinstance(section, Mapping):
        data = lower_keys(section)
        if pick(data, _NAME_KEYS) is not None:
            return [section]
        out: list[Any] = []
        for name, details in section.items():
            if isinstance(details, Mapping):
                out.append({"name": name, **details})
            else:
                out.append({"name": name, "description": details})
        return out
    return as_list(section)


def _relation(item: Any) -> Relation | None:
    if isinstance(item, list | tuple):  # a bare [source, label, target] triple
        if len(item) != 3:
            return None
        source, label, target = (as_text(v) for v in item)
        if not source or not target:
            return None
        return Relation(source, target, label, f"{source} {label} {target}".strip())
    if not isinstance(item, Mapping):
        return None
    data = lower_keys(item)
    source = as_text(pick(data, _SOURCE_KEYS))
    target = as_text(pick(data, _TARGET_KEYS))
    if not source or not target:
        return None
    return Relation(
        source=source,
        target=target,
        label=as_text(pick(data, _LABEL_KEYS), ", "),
        description=as_text(pick(data, _REL_DESC_KEYS), "; "),
        weight=_number(pick(data, _STRENGTH_KEYS), 1.0),
    )


def _members(value: Any) -> list[str]:
    names = (as_text(v) for v in as_list(value))
    return [n for n in names if n]


def _fact(item: Any) -> Fact | None:
    if isinstance(item, str):
        text = item.strip()
        return Fact(text) if text else None
    if not isinstance(item, Mapping):
        return None
    data = lower_keys(item)
    text = as_text(pick(data, _STATEMENT_KEYS))
    if not text:
        return None
    return Fact(
        text=text,
        entities=_members(pick(data, _MEMBER_KEYS)),
        score=_number(pick(data, _COMPLETENESS_KEYS), DEFAULT_FACT_SCORE),
    )


def _unit(item: Any) -> Unit | None:
    """A unit from a string, a list of strings, or an object with a text (and optionally
    the names of the entities it mentions)."""
    entities: list[str] = []
    if isinstance(item, Mapping):
        data = lower_keys(item)
        text = as_text(pick(data, _UNIT_TEXT_KEYS))
        entities = list(dict.fromkeys(_members(pick(data, _UNIT_ENTITY_KEYS))))
    elif isinstance(item, str | list | tuple):
        text = as_text(item)
    else:
        text = ""
    return Unit(text, entities) if text else None


def _collect(items: Iterable[Any], build: Callable[[Any], Any]) -> tuple[list[Any], int]:
    kept: list[Any] = []
    bad = 0
    for item in items:
        made = build(item)
        if made is None:
            bad += 1
        else:
            kept.append(made)
    return kept, bad


_UNIFIED_GROUPS = {
    "entities": _ENTITIES_KEYS,
    "relations": _RELATIONS_KEYS,
    "facts": _FACTS_KEYS,
    "units": _UNITS_KEYS,
}


def parse_unified(text: str, chunk_id: str) -> tuple[Extraction, int]:
    """Parse a reply to the unified prompt into an :class:`Extraction` (not yet normalised).

    Accepts common key variants (``entity_name``, ``head``/``tail``, ``statement``/
    ``text``, ...), coerces types (numeric strings become numbers, a list where a
    string belongs is joined, a bare string entity becomes ``Entity(name=...)``), and
    uses the schema defaults for missing or non-numeric scores. A bare JSON list is
    read as a list of entities.

    Returns:
        the extraction and the number of malformed items skipped.

    Raises:
        ParseError: no JSON, or an object with none of the expected keys.
    """
    payload = parse_json_payload(text, whole=True)
    if isinstance(payload, list):
        sections: dict[str, Any] | None = {"entities": payload}
    else:
        sections = find_sections(payload, _UNIFIED_GROUPS)
    if sections is None:
        raise ParseError(
            f"the reply has none of the keys entities, relations, facts, units: {preview(text)!r}"
        )
    entities, bad_e = _collect(_entity_items(sections.get("entities")), _entity)
    relations, bad_r = _collect(as_list(sections.get("relations")), _relation)
    facts, bad_f = _collect(as_list(sections.get("facts")), _fact)
    units, bad_u = _collect(as_list(sections.get("units")), _unit)
    if isinstance(payload, list) and payload and not entities:
        raise ParseError(f"a bare list with no entities in it: {preview(text)!r}")
    extraction = Extraction(
        chunk_id=chunk_id, entities=entities, relations=relations, facts=facts, units=units
    )
    return extraction, bad_e + bad_r + bad_f + bad_u


# --------------------------------------------------------------------------- two-step

_NER_KEYS = ("named_entities", "entities", "ner", "names", "entity_list", "entity_names")
_TRIPLE_KEYS = ("triples", "triplets", "relations", "relationships", "edges", "facts")
_SUBJECT_KEYS = ("subject", "head", "source", "s", "subj", "entity1")
_PREDICATE_KEYS = ("predicate", "relation", "relationship", "label", "p", "pred", "verb")
_OBJECT_KEYS = ("object", "tail", "target", "o", "obj", "entity2")


def _ner_name(item: Any) -> str | None:
    if isinstance(item, str):
        return item.strip() or None
    if isinstance(item, int | float) and not isinstance(item, bool):
        return as_text(item) or None  # a year given as a number
    if isinstance(item, Mapping):
        return as_text(pick(lower_keys(item), _NAME_KEYS)) or None
    return None


def parse_ner(text: str) -> tuple[list[str], int]:
    """Parse a reply to the NER prompt: ``{"named_entities": [...]}`` or a bare list.

    Strings are kept (exact repeats once), objects contribute their ``name``; anything
    else is skipped and counted.

    Returns:
        the entity names in reply order and the number of malformed items skipped.

    Raises:
        ParseError: no JSON, or an object with none of the expected keys.
    """
    items = listed_items(text, _NER_KEYS, "named_entities")
    names: list[str] = []
    bad = 0
    for item in items:
        name = _ner_name(item)
        if name is None:
            bad += 1
        elif name not in names:
            names.append(name)
    return names, bad


def _triple(item: Any) -> tuple[str, str, str] | None:
    if isinstance(item, Mapping):
        data = lower_keys(item)
        parts: list[Any] = [
            pick(data, _SUBJECT_KEYS),
            pick(data, _PREDICATE_KEYS),
            pick(data, _OBJECT_KEYS),
        ]
    elif isinstance(item, list | tuple) and len(item) == 3:
        parts = list(item)
    else:
        return None
    if not all(isinstance(p, str) and p.strip() for p in parts):
        return None
    subject, relation, obj = (p.strip() for p in parts)
    return subject, relation, obj


def parse_triples(text: str) -> tuple[list[tuple[str, str, str]], int]:
    """Parse a reply to the OpenIE prompt: ``{"triples": [[s, r, o], ...]}`` or a bare list.

    A triple may also be an object with subject/predicate/object (or head/relation/tail)
    keys. Triples whose length is not 3 or with a non-string or empty part are skipped
    and counted.

    Returns:
        the triples in reply order and the number of malformed items skipped.

    Raises:
        ParseError: no JSON, or an object with none of the expected keys.
    """
    payload = parse_json_payload(text, whole=True)
    if isinstance(payload, list):
        if len(payload) == 3 and all(isinstance(p, str) for p in payload):
            items: list[Any] = [payload]  # one bare triple
        else:
            items = payload
    else:
        sections = find_sections(payload, {"triples": _TRIPLE_KEYS})
        if sections is not None:
            items = as_list(sections["triples"])
        elif _triple(payload) is not None:  # a single triple object
            items = [payload]
        else:
            raise ParseError(f"the reply has no 'triples' key: {preview(text)!r}")
    triples, bad = _collect(items, _triple)
    return triples, bad
