"""Tolerant parsing of HyperGraphRAG's n-ary extraction replies (delimited records).

The parsers of HyperGraphRAG's other replies (question entities, the final answer) sit
beside their prompts in :mod:`hygraph.prompts.hypergraph`; only the one that fills the
extraction schema lives here.

The n-ary extraction prompt (:func:`hygraph.prompts.hypergraph.nary_messages`) asks for
records such as::

    ("hyper-relation"<|>"<segment sentence>"<|>9)##
    ("entity"<|>"<name>"<|>"<type>"<|>"<description>"<|>85)##
    <|COMPLETE|>

:func:`parse_nary_records` follows spec 003 §3.4 (split on the record and completion
delimiters, take what lies between the outer parentheses, split on the tuple delimiter,
clean the fields) and adds what real models need: ``<think>`` blocks and code fences are
dropped, records on separate lines without ``##`` (or run together) are still separated,
curly quotes are stripped, and newlines inside a field become spaces rather than
vanishing. As in :mod:`hygraph.extract.parse`, a reply with no usable record raises
:class:`~hygraph.prompts.replies.ParseError` so a caching model does not keep it, while
single bad records are skipped and counted.
"""

from __future__ import annotations

import html
import re

from hygraph.extract.schema import (
    DEFAULT_ENTITY_SCORE,
    DEFAULT_FACT_SCORE,
    DEFAULT_TYPE,
    Entity,
    Extraction,
    Fact,
)
from hygraph.prompts.hypergraph import COMPLETION_DELIMITER, RECORD_DELIMITER, TUPLE_DELIMITER
from hygraph.prompts.replies import ParseError, preview, strip_thinking, unfence

__all__ = ["parse_nary_records"]

_SPLIT = re.compile(
    "|".join(re.escape(d) for d in (RECORD_DELIMITER, COMPLETION_DELIMITER)), re.IGNORECASE
)
_COMPLETE = re.compile(re.escape(COMPLETION_DELIMITER), re.IGNORECASE)
_RECORD_START = re.compile(
    r"\(\s*[\"'“‘]?\s*(?:hyper[\s_-]*relation|entity)\s*[\"'”’]?\s*" + re.escape(TUPLE_DELIMITER),
    re.IGNORECASE,
)
"""Where a record begins: used to separate records that lack the record delimiter."""
_RECORD = re.compile(r"\((.*)\)", re.DOTALL)
_NUMBER = re.compile(r"^[-+]?[0-9]*\.?[0-9]+$")
_SPACE_CONTROLS = re.compile(r"[\t\n\r\v\f]+")
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_TAG_SEP = re.compile(r"[\s_-]+")
_DOUBLE_QUOTES = '"“”„`'

# --------------------------------------------------------------------------- n-ary records


def _clean(field: str) -> str:
    """HTML-unescaped, control characters removed (line breaks become spaces), stripped."""
    text = html.unescape(field)
    text = _SPACE_CONTROLS.sub(" ", text)
    return _CONTROLS.sub("", text).strip()


def _unquote(text: str) -> str:
    """Surrounding double (or curly) quotes removed; single quotes only as a pair."""
    text = text.strip().strip(_DOUBLE_QUOTES).strip()
    if len(text) >= 2 and text[0] in "'‘" and text[-1] in "'’":
        text = text[1:-1].strip()
    return text


def _score(field: str, default: float) -> float:
    """The field as a number when it is a plain decimal (spec §3.4), else ``default``."""
    value = _unquote(field)
    return float(value) if _NUMBER.match(value) else default


def _tag(field: str) -> str:
    """The record kind, normalised: ``hyper-relation``, ``entity`` or something else."""
    return _TAG_SEP.sub("-", _unquote(field).lower()).replace("hyperrelation", "hyper-relation")


def _pieces(body: str) -> list[str]:
    """The candidate records of a reply: split on the delimiters, then before every
    record opening, so records on separate lines without ``##`` come apart too."""
    pieces: list[str] = []
    for part in _SPLIT.split(body):
        starts = [m.start() for m in _RECORD_START.finditer(part)]
        bounds = [0, *(s for s in starts if s > 0), len(part)]
        pieces.extend(part[a:b] for a, b in zip(bounds, bounds[1:], strict=False))
    return [p for p in pieces if p.strip()]


def parse_nary_records(text: str, chunk_id: str) -> tuple[Extraction, int]:
    """Parse a reply to the n-ary extraction prompt into facts and entity mentions.

    Each ``hyper-relation`` record (three fields or more) starts a new
    :class:`~hygraph.extract.schema.Fact` (score: the last field when numeric, else
    1.0); each ``entity`` record (five fields or more) that follows adds a member to the
    most recent fact, with its per-fact importance and description, and one
    :class:`~hygraph.extract.schema.Entity` mention (score: the last field when
    numeric, else 50.0; type lower-cased; name casing kept). Scores are not clamped
    here; :meth:`~hygraph.extract.schema.Extraction.normalised` does that.

    Skipped and counted as malformed: entity records before any fact, records with too
    few fields or an empty name or statement, and pieces that open like a record (with
    ``(``) but do not parse. Other text (prose, headings) is ignored.

    Returns:
        the raw (not normalised) extraction and the number of malformed records.

    Raises:
        ParseError: the reply holds no fact record and no completion delimiter (prose,
            an empty reply, unfinished reasoning). A reply that is just
            ``<|COMPLETE|>`` is a valid empty extraction: the passage had nothing.
    """
    if not isinstance(text, str) or not text.strip():
        raise ParseError("empty reply")
    body = unfence(strip_thinking(text))  # records may be fenced, or not
    if not body.strip():
        raise ParseError("the reply holds only reasoning (<think>), no records")
    facts: list[Fact] = []
    entities: list[Entity] = []
    malformed = 0
    current: Fact | None = None
    for piece in _pieces(body):
        match = _RECORD.search(piece)
        fields = [_clean(f) for f in match.group(1).split(TUPLE_DELIMITER)] if match else []
        tag = _tag(fields[0]) if fields else ""
        if tag == "hyper-relation" and len(fields) >= 3 and _unquote(fields[1]):
            current = Fact(_unquote(fields[1]), score=_score(fields[-1], DEFAULT_FACT_SCORE))
            facts.append(current)
        elif tag == "entity" and len(fields) >= 5 and _unquote(fields[1]):
            if current is None:  # no fact to attach it to (spec §3.4: dropped)
                malformed += 1
                continue
            name = _unquote(fields[1])
            etype = _unquote(fields[2]).lower() or DEFAULT_TYPE
            description = _unquote(fields[3])
            score = _score(fields[-1], DEFAULT_ENTITY_SCORE)
            entities.append(Entity(name, etype, description, score))
            if name not in current.entities:
                current.entities.append(name)
            current.member_scores[name] = max(score, current.member_scores.get(name, score))
            if description:
                current.member_descriptions[name] = description
        elif tag in ("hyper-relation", "entity") or piece.lstrip().startswith("("):
            malformed += 1
    if not facts and not _COMPLETE.search(body):
        raise ParseError(f"no hyper-relation record in the reply: {preview(text)!r}")
    return Extraction(chunk_id=chunk_id, entities=entities, facts=facts), malformed
