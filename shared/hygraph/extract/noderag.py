"""NodeRAG's text decomposition (spec 004, §3.1): chunk text to semantic units, entities
and relationships.

One call per chunk (:func:`hygraph.prompts.noderag.decomposition_messages`) splits the
chunk into **semantic units**, each with the UPPER-CASE entities it names and its
relationships as ``"ENTITY A, relation phrase, ENTITY B"`` strings. The reply fills
:class:`~hygraph.extract.schema.Extraction`:

* ``units``: one :class:`~hygraph.extract.schema.Unit` per semantic unit (the S nodes),
  with ``entities`` = the unit's entities plus the ends of its relationships, normalised
  by :func:`normalise_entity` (spec §8 #19: strip, collapse whitespace, upper-case; no
  alias merging);
* ``entities``: every such name once, type ``"entity"`` (the N nodes);
* ``relations``: one :class:`~hygraph.extract.schema.Relation` per relationship
  (label = the relation phrase, description = ``"SOURCE relation TARGET"``; the R nodes).

A relationship string that does not split into exactly three comma-separated parts gets
**one repair call** (:func:`hygraph.prompts.noderag.relationship_repair_messages`, spec
§8 #17); what is still invalid after it is dropped and counted in
``stats.malformed_items``. A failed repair call never fails the chunk.

The parsers of NodeRAG's other replies (entity attributes, community elements, query
elements) sit beside their prompts in :mod:`hygraph.prompts.noderag`.

Failure handling, JSON mode, concurrency and the empty-output guard are those of
:class:`hygraph.extract.llm._LLMExtractorBase`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from hygraph.errors import ModelError
from hygraph.extract.llm import _LLMExtractorBase, _one_line
from hygraph.extract.schema import (
    DEFAULT_TYPE,
    ChunkInput,
    Entity,
    Extraction,
    Relation,
    Unit,
)
from hygraph.prompts.noderag import decomposition_messages, relationship_repair_messages
from hygraph.prompts.replies import (
    ParseError,
    as_list,
    as_text,
    find_sections,
    lower_keys,
    parse_json_payload,
    pick,
    preview,
    strip_thinking,
)

__all__ = [
    "NodeRAGLLMExtractor",
    "normalise_entity",
    "parse_decomposition",
    "parse_repaired_relationship",
    "split_relationship",
]

log = logging.getLogger("hygraph")

Triple = tuple[str, str, str]

# --------------------------------------------------------------------------- small pieces


def normalise_entity(name: str) -> str:
    """An entity name as NodeRAG keys it: stripped, whitespace collapsed, upper-case."""
    return " ".join(str(name).split()).upper()


def split_relationship(text: str) -> Triple | None:
    """``"A, relation, B"`` as ``(A, relation, B)`` (parts stripped); None unless the text
    splits on commas into exactly three non-empty parts."""
    parts = [p.strip() for p in str(text).split(",")]
    if len(parts) != 3 or not all(parts):
        return None
    return parts[0], parts[1], parts[2]


def _triple(source: str, relation: str, target: str) -> Triple | None:
    """A triple with normalised ends and a tidy phrase; None when a part is empty."""
    source, target = normalise_entity(source), normalise_entity(target)
    relation = " ".join(relation.split())
    if not (source and relation and target):
        return None
    return source, relation, target


_SOURCE_KEYS = ("source", "src", "head", "subject", "source_entity", "entity1", "from")
_RELATION_KEYS = ("relationship", "relation", "predicate", "label", "relation_type", "verb")
_TARGET_KEYS = ("target", "tgt", "tail", "object", "target_entity", "entity2", "to")


def _triple_from_mapping(item: Mapping[Any, Any]) -> Triple | None:
    data = lower_keys(item)
    return _triple(
        as_text(pick(data, _SOURCE_KEYS)),
        as_text(pick(data, _RELATION_KEYS)),
        as_text(pick(data, _TARGET_KEYS)),
    )


# --------------------------------------------------------------------------- decomposition

_UNIT_LIST_KEYS = ("output", "outputs", "units", "semantic_units")
_UNIT_TEXT_KEYS = (
    "semantic_unit",
    "unit",
    "text",
    "semantic_unit_text",
    "content",
    "summary",
    "event",
)
_UNIT_ENTITY_KEYS = ("entities", "entity", "entity_names", "named_entities", "entity_list")
_UNIT_RELATION_KEYS = ("relationships", "relations", "relationship", "relation", "triples")


def _relationship(item: Any) -> Triple | str | None:
    """One relationship item: a triple, a string to repair, or None (junk)."""
    if isinstance(item, str):
        raw = " ".join(item.split())
        if not raw:
            return None
        parts = split_relationship(raw)
        return (_triple(*parts) or raw) if parts else raw
    if isinstance(item, list | tuple):
        parts_list = [as_text(p) for p in item]
        if len(parts_list) == 3 and all(parts_list):
            return _triple(*parts_list)
        joined = ", ".join(p for p in parts_list if p)
        return joined or None  # the wrong number of parts: let the repair call sort it out
    if isinstance(item, Mapping):
        found = _triple_from_mapping(item)
        if found is not None:
            return found
        data = lower_keys(item)
        if pick(data, _SOURCE_KEYS) is None and pick(data, _TARGET_KEYS) is None:
            phrase = pick(data, _RELATION_KEYS)  # {"relationship": "A, rel, B"}
            if isinstance(phrase, str):
                return _relationship(phrase)
        return None
    return None


def _add_entity(extraction: Extraction, name: str) -> None:
    if all(e.name != name for e in extraction.entities):
        extraction.entities.append(Entity(name, DEFAULT_TYPE))


def _add_relation(extraction: Extraction, position: int, triple: Triple) -> None:
    """Add a relation to the extraction; its ends join the unit's entities and the list."""
    source, relation, target = triple
    extraction.relations.append(Relation(source, target, relation, f"{source} {relation} {target}"))
    unit = extraction.units[position]
    for name in (source, target):
        if name not in unit.entities:
            unit.entities.append(name)
        _add_entity(extraction, name)


def _unit_items(payload: Any, text: str) -> list[Any]:
    """The list of unit objects in a decomposition reply."""
    if isinstance(payload, list):
        return payload
    sections = find_sections(payload, {"units": _UNIT_LIST_KEYS})
    if sections is not None:
        return as_list(sections["units"])
    if isinstance(payload, Mapping) and pick(lower_keys(payload), _UNIT_TEXT_KEYS) is not None:
        return [payload]  # a single unit object, not wrapped in a list
    raise ParseError(f"the reply has no 'Output' list of semantic units: {preview(text)!r}")


def parse_decomposition(text: str, chunk_id: str) -> tuple[Extraction, list[tuple[int, str]], int]:
    """Parse a reply to the decomposition prompt (tolerantly: fences, ``<think>``, repairs).

    The unit list may sit at the top level or under ``Output`` (``units``,
    ``semantic_units``); each item gives its text under ``semantic_unit`` (``unit``,
    ``text``), its ``entities``, and its ``relationships`` (``relations``) as
    ``"A, relation, B"`` strings, ``[A, relation, B]`` lists or
    ``{"source", "relationship", "target"}`` objects. A bare string item is a unit
    without entities.

    Returns:
        the extraction (not yet normalised; unit entities upper-case and including the
        ends of the unit's relationships, which are in ``entities`` too); the
        relationship strings to repair as ``(unit position, raw string)``, the position
        indexing ``extraction.units``; and the number of malformed items dropped (units
        without a text, empty or non-string entities and relationships).

    Raises:
        ParseError: no JSON, no unit list, or a non-empty unit list with no usable unit.
            ``{"Output": []}`` is a valid empty result.
    """
    payload = parse_json_payload(text, whole=True)
    items = _unit_items(payload, text)
    extraction = Extraction(chunk_id=chunk_id)
    pending: list[tuple[int, str]] = []
    malformed = 0
    for item in items:
        unit_text = ""
        raw_entities: list[Any] = []
        raw_relations: list[Any] = []
        if isinstance(item, Mapping):
            data = lower_keys(item)
            unit_text = as_text(pick(data, _UNIT_TEXT_KEYS))
            raw_entities = as_list(pick(data, _UNIT_ENTITY_KEYS))
            raw_relations = as_list(pick(data, _UNIT_RELATION_KEYS))
        elif isinstance(item, str):
            unit_text = item
        unit_text = " ".join(unit_text.split())
        if not unit_text:
            malformed += 1
            continue
        names: list[str] = []
        for raw in raw_entities:
            usable = isinstance(raw, str | int | float | Mapping) and not isinstance(raw, bool)
            name = normalise_entity(as_text(raw)) if usable else ""
            if not name:
                malformed += 1
            elif name not in names:
                names.append(name)
        position = len(extraction.units)
        extraction.units.append(Unit(unit_text, names))
        for name in names:
            _add_entity(extraction, name)
        for raw in raw_relations:
            found = _relationship(raw)
            if found is None:
                malformed += 1
            elif isinstance(found, str):
                pending.append((position, found))
            else:
                _add_relation(extraction, position, found)
    if items and not extraction.units:
        raise ParseError(f"no usable semantic unit in the reply: {preview(text)!r}")
    return extraction, pending, malformed


def parse_repaired_relationship(text: str) -> Triple | None:
    """The triple in a reply to the relationship-repair prompt, or None.

    Accepts ``{"source", "relationship", "target"}`` (with common key variants, also
    wrapped one level deep or in a list), a ``[source, relationship, target]`` list, or
    a bare ``"A, relation, B"`` line. Ends are upper-cased (:func:`normalise_entity`).
    """
    try:
        payload = parse_json_payload(text, whole=True)
    except ParseError:
        body = strip_thinking(text or "").strip().strip("`").strip()
        parts = split_relationship(body) if body and "\n" not in body else None
        return _triple(*parts) if parts else None
    if isinstance(payload, list):
        if len(payload) == 3 and all(isinstance(p, str) for p in payload):
            return _triple(*payload)
        payload = next((p for p in payload if isinstance(p, Mapping)), None)
    if not isinstance(payload, Mapping):
        return None
    found = _triple_from_mapping(payload)
    if found is not None:
        return found
    for value in payload.values():  # {"result": {...}}
        if isinstance(value, Mapping):
            found = _triple_from_mapping(value)
            if found is not None:
                return found
    return None


def _require_repaired(text: str) -> Triple:
    """``parse_repaired_relationship`` for ``CachedLLM.validate``: junk is not cached."""
    found = parse_repaired_relationship(text)
    if found is None:
        raise ParseError(f"no valid relationship in the repair reply: {preview(text)!r}")
    return found


# --------------------------------------------------------------------------- the extractor


class NodeRAGLLMExtractor(_LLMExtractorBase):
    """NodeRAG's decomposition: semantic units with their entities and relationships.

    One decomposition call per chunk, then one repair call per relationship string that
    did not split into three parts (spec §8 #17). Entities are upper-cased (§8 #19).

    Args:
        llm: any :class:`~hygraph.models.base.LLM`; wrap it in a
            :class:`~hygraph.models.llm.CachedLLM` to make rebuilds free (repair calls are
            cached too; a repair reply with no valid relationship is not).
        json_mode: send ``response_format={"type": "json_object"}`` (dropped automatically
            if the endpoint rejects it).
        temperature: sampling temperature (0, as in the paper).
        max_tokens: output cap per call; None leaves it to the endpoint.
        baseline: the extractor the empty-output guard compares with (default: the
            offline rule-based extractor, loaded on first need).
    """

    kind = "llm-noderag"

    async def _extract_chunk(self, chunk: ChunkInput) -> tuple[Extraction, int]:
        def parser(text: str) -> tuple[Extraction, list[tuple[int, str]], int]:
            return parse_decomposition(text, chunk.id)

        response = await self._call(decomposition_messages(chunk.text), parser)
        extraction, pending, malformed = parser(response.text)
        repaired: dict[str, Triple | None] = {}
        for position, raw in pending:  # few per chunk: one at a time keeps it simple
            if raw not in repaired:
                repaired[raw] = await self._repair(chunk, raw)
            triple = repaired[raw]
            if triple is None:
                malformed += 1
            else:
                _add_relation(extraction, position, triple)
        return extraction, malformed

    async def _repair(self, chunk: ChunkInput, raw: str) -> Triple | None:
        """One repair call; None (logged at debug) when it fails or gives no valid triple."""
        try:
            response = await self._call(relationship_repair_messages(raw), _require_repaired)
        except (ModelError, ParseError) as err:
            log.debug(
                "%s: relationship %r of chunk %s dropped: %s",
                self.name,
                raw,
                chunk.id,
                _one_line(err),
            )
            return None
        triple = parse_repaired_relationship(response.text)
        if triple is None:
            log.debug(
                "%s: relationship %r of chunk %s dropped: the repair gave %r",
                self.name,
                raw,
                chunk.id,
                preview(response.text),
            )
        return triple
