"""Tolerant parsing of LLM extraction replies into the :class:`~hygraph.extract.schema.Extraction`
schema.

Models, small local ones above all, rarely return exactly the JSON they were asked for:
they wrap it in markdown fences or prose, think aloud in ``<think>`` blocks first, run out
of tokens mid-array, leave trailing commas, use single quotes, rename keys, or give
``"85"`` where a number belongs. Throwing such a reply away wastes a paid call, so the
parsers here keep every item that is still usable and count the ones they had to skip.

Two levels of failure:

* an *item* that lacks a required field (an entity without a name, a relation without
  both ends, a fact without a statement, a triple that is not three strings) is skipped
  and counted in the returned ``malformed`` number;
* a *reply* with no usable JSON, or JSON with none of the expected keys, raises
  :class:`ParseError`. Extractors pass the parsers to
  :meth:`hygraph.models.llm.CachedLLM.acomplete` as ``validate``, so such replies are never
  cached and the chunk is retried by the next build.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from json_repair import repair_json

from hygraph.errors import HygraphError
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

__all__ = [
    "ParseError",
    "parse_json_payload",
    "parse_ner",
    "parse_triples",
    "parse_unified",
]


class ParseError(HygraphError):
    """An LLM reply held no usable JSON, or none of the keys the prompt asked for."""


# --------------------------------------------------------------------------- JSON payload

_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"^\s*<think(?:ing)?>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*[\w+-]*[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)
_NUMBER = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)")
_BARE_KEY = re.compile(r"[A-Za-z_][\w ]{0,40}\s*:")
_MAX_STARTS = 32
_DECODER = json.JSONDecoder()


def _strip_thinking(text: str) -> str:
    """Remove reasoning blocks: closed ones, a stray closing tag, an unclosed opening one."""
    text = _THINK_BLOCK.sub("", text)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:  # the opening tag was left out (some servers strip it): drop all before it
        text = text[closes[-1].end() :]
    if _THINK_OPEN.match(text):  # reasoning that never ended: there is no answer after it
        return ""
    return text


def _candidates(text: str) -> list[str]:
    """Texts to search for JSON, best first: fenced blocks holding brackets, then the whole."""
    fenced = [m.group(1) for m in _FENCE.finditer(text) if "{" in m.group(1) or "[" in m.group(1)]
    return [*fenced, text] if fenced else [text]


def _looks_like_json_start(text: str, pos: int) -> bool:
    """True when the bracket at ``pos`` is plausibly the start of JSON, not of prose."""
    rest = text[pos + 1 : pos + 60].lstrip()
    if not rest:
        return True  # a lone bracket at the very end: a reply cut off right after it
    if rest[0] in "\"'{[]}-" or rest[0].isdigit():
        return True
    if text[pos] == "{" and _BARE_KEY.match(rest):  # unquoted keys: {entities: [...]}
        return True
    return text[pos] == "[" and rest.startswith(("true", "false", "null"))


def _trim_trailing_prose(text: str) -> str:
    """Cut text after the last closing bracket when it holds no JSON syntax (a sign-off)."""
    last = max(text.rfind("}"), text.rfind("]"))
    if last < 0:
        return text
    tail = text[last + 1 :]
    if any(ch in tail for ch in '{}[]"'):
        return text  # probably truncated JSON: let the repair see all of it
    return text[: last + 1]


def _repair(fragment: str) -> Any:
    try:
        value = repair_json(_trim_trailing_prose(fragment), return_objects=True)
    except Exception:  # json_repair is best effort; any failure means "nothing usable"
        return None
    if fragment.startswith("{") and isinstance(value, list):
        # json_repair returns a list when several top-level values follow each other
        value = next((v for v in value if isinstance(v, dict)), None)
    return value


def _usable(value: Any) -> bool:
    return isinstance(value, dict | list) and len(value) > 0


def parse_json_payload(text: str) -> Any:
    """The JSON object or array in an LLM reply, repaired if needed.

    Drops ``<think>`` blocks (a reply that is all unfinished reasoning has no payload),
    prefers the content of markdown code fences, skips prose before and after, and
    decodes from the first bracket that looks like JSON. Strict decoding comes first;
    if it fails (truncated output, trailing commas, single quotes, unquoted keys) the
    fragment is repaired with ``json_repair``.

    Returns:
        a ``dict`` or ``list`` (possibly empty when the reply was literally ``{}`` / ``[]``).

    Raises:
        ParseError: the reply is empty, holds no JSON, or cannot be repaired into a
            non-empty object or array.
    """
    if not isinstance(text, str) or not text.strip():
        raise ParseError("empty reply")
    body = _strip_thinking(text)
    if not body.strip():
        raise ParseError("the reply holds only reasoning (<think>), no answer")
    for candidate in _candidates(body):
        starts = [i for i, ch in enumerate(candidate) if ch in "{["]
        tried = 0
        for pos in starts:
            if not _looks_like_json_start(candidate, pos):
                continue
            tried += 1
            if tried > _MAX_STARTS:
                break
            try:
                value, _end = _DECODER.raw_decode(candidate, pos)
            except json.JSONDecodeError:
                value = _repair(candidate[pos:])
                if _usable(value):
                    return value
                continue
            if isinstance(value, dict | list):
                return value
    raise ParseError(f"no JSON object or array in the reply: {_preview(text)!r}")


def _preview(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


# --------------------------------------------------------------------------- coercion


def _norm_key(key: object) -> str:
    return re.sub(r"[\s\-]+", "_", str(key).strip().lower())


def _lower_keys(item: Mapping[Any, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in item.items():
        out.setdefault(_norm_key(key), value)
    return out


def _pick(item: Mapping[str, Any], keys: Iterable[str]) -> Any:
    """The first value present (not None) under one of ``keys``."""
    for key in keys:
        value = item.get(key)
        if value is not None:
            return value
    return None


def _text(value: Any, sep: str = " ") -> str:
    """A string from what a model gave: strings as is, numbers printed, lists joined."""
    if value is None or isinstance(value, bool):
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            return ""
        return str(int(value)) if float(value).is_integer() else str(value)
    if isinstance(value, list | tuple):
        parts = (_text(v, sep) for v in value)
        return sep.join(p for p in parts if p)
    if isinstance(value, Mapping):
        return _text(_pick(_lower_keys(value), ("name", "text", "value")), sep)
    return ""


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


def _items(value: Any) -> list[Any]:
    """A section as a list: None → [], a single item → [item]."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


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
        name = _text(fields[0])
        if not name:
            return None
        return Entity(
            name=name,
            type=_text(fields[1]) or DEFAULT_TYPE,
            description=_text(fields[2], "; "),
            score=_number(fields[3], DEFAULT_ENTITY_SCORE),
        )
    if not isinstance(item, Mapping):
        return None
    data = _lower_keys(item)
    name = _text(_pick(data, _NAME_KEYS))
    if not name:
        return None
    return Entity(
        name=name,
        type=_text(_pick(data, _TYPE_KEYS)) or DEFAULT_TYPE,
        description=_text(_pick(data, _DESC_KEYS), "; "),
        score=_number(_pick(data, _IMPORTANCE_KEYS), DEFAULT_ENTITY_SCORE),
    )


def _entity_items(section: Any) -> list[Any]:
    """Entities as a list; a mapping of name → details is accepted too."""
    if isinstance(section, Mapping):
        data = _lower_keys(section)
        if _pick(data, _NAME_KEYS) is not None:
            return [section]
        out: list[Any] = []
        for name, details in section.items():
            if isinstance(details, Mapping):
                out.append({"name": name, **details})
            else:
                out.append({"name": name, "description": details})
        return out
    return _items(section)


def _relation(item: Any) -> Relation | None:
    if isinstance(item, list | tuple):  # a bare [source, label, target] triple
        if len(item) != 3:
            return None
        source, label, target = (_text(v) for v in item)
        if not source or not target:
            return None
        return Relation(source, target, label, f"{source} {label} {target}".strip())
    if not isinstance(item, Mapping):
        return None
    data = _lower_keys(item)
    source = _text(_pick(data, _SOURCE_KEYS))
    target = _text(_pick(data, _TARGET_KEYS))
    if not source or not target:
        return None
    return Relation(
        source=source,
        target=target,
        label=_text(_pick(data, _LABEL_KEYS), ", "),
        description=_text(_pick(data, _REL_DESC_KEYS), "; "),
        weight=_number(_pick(data, _STRENGTH_KEYS), 1.0),
    )


def _members(value: Any) -> list[str]:
    names = (_text(v) for v in _items(value))
    return [n for n in names if n]


def _fact(item: Any) -> Fact | None:
    if isinstance(item, str):
        text = item.strip()
        return Fact(text) if text else None
    if not isinstance(item, Mapping):
        return None
    data = _lower_keys(item)
    text = _text(_pick(data, _STATEMENT_KEYS))
    if not text:
        return None
    return Fact(
        text=text,
        entities=_members(_pick(data, _MEMBER_KEYS)),
        score=_number(_pick(data, _COMPLETENESS_KEYS), DEFAULT_FACT_SCORE),
    )


def _unit(item: Any) -> Unit | None:
    """A unit from a string, a list of strings, or an object with a text (and optionally
    the names of the entities it mentions)."""
    entities: list[str] = []
    if isinstance(item, Mapping):
        data = _lower_keys(item)
        text = _text(_pick(data, _UNIT_TEXT_KEYS))
        entities = list(dict.fromkeys(_members(_pick(data, _UNIT_ENTITY_KEYS))))
    elif isinstance(item, str | list | tuple):
        text = _text(item)
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


def _sections(payload: Any, groups: Mapping[str, tuple[str, ...]]) -> dict[str, Any] | None:
    """The expected sections of a payload object, looking one wrapper level deep.

    Returns ``None`` when no expected key is present (``{"result": {...}}`` style
    wrappers around the real object are unwrapped).
    """
    if not isinstance(payload, Mapping):
        return None
    data = _lower_keys(payload)
    found = {
        group: _pick(data, keys)
        for group, keys in groups.items()
        if any(key in data for key in keys)
    }
    if found:
        return found
    for value in data.values():
        if isinstance(value, Mapping):
            inner = _sections(value, groups)
            if inner is not None:
                return inner
    return None


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
    payload = parse_json_payload(text)
    if isinstance(payload, list):
        sections: dict[str, Any] | None = {"entities": payload}
    else:
        sections = _sections(payload, _UNIFIED_GROUPS)
    if sections is None:
        raise ParseError(
            f"the reply has none of the keys entities, relations, facts, units: {_preview(text)!r}"
        )
    entities, bad_e = _collect(_entity_items(sections.get("entities")), _entity)
    relations, bad_r = _collect(_items(sections.get("relations")), _relation)
    facts, bad_f = _collect(_items(sections.get("facts")), _fact)
    units, bad_u = _collect(_items(sections.get("units")), _unit)
    if isinstance(payload, list) and payload and not entities:
        raise ParseError(f"a bare list with no entities in it: {_preview(text)!r}")
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
        return _text(item) or None  # a year given as a number
    if isinstance(item, Mapping):
        return _text(_pick(_lower_keys(item), _NAME_KEYS)) or None
    return None


def listed_items(text: str, keys: Sequence[str], what: str, about: str = "") -> list[Any]:
    """The items of a reply that is a JSON list, or an object holding one under ``keys``.

    Raises:
        ParseError: no JSON, or an object with none of ``keys`` (``what`` names the list
            in the message, ``about`` what the reply was for).
    """
    payload = parse_json_payload(text)
    if isinstance(payload, list):
        return payload
    sections = _sections(payload, {"items": tuple(keys)})
    if sections is None:
        raise ParseError(f"the reply{about} has no {what!r} list: {_preview(text)!r}")
    return _items(sections["items"])


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
        data = _lower_keys(item)
        parts: list[Any] = [
            _pick(data, _SUBJECT_KEYS),
            _pick(data, _PREDICATE_KEYS),
            _pick(data, _OBJECT_KEYS),
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
    payload = parse_json_payload(text)
    if isinstance(payload, list):
        if len(payload) == 3 and all(isinstance(p, str) for p in payload):
            items: list[Any] = [payload]  # one bare triple
        else:
            items = payload
    else:
        sections = _sections(payload, {"triples": _TRIPLE_KEYS})
        if sections is not None:
            items = _items(sections["triples"])
        elif _triple(payload) is not None:  # a single triple object
            items = [payload]
        else:
            raise ParseError(f"the reply has no 'triples' key: {_preview(text)!r}")
    triples, bad = _collect(items, _triple)
    return triples, bad
