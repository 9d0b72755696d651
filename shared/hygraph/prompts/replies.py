"""Generic helpers for reading LLM replies, shared by every prompt's reply parser.

Models, small local ones above all, rarely answer in exactly the form they were asked
for: they think aloud in ``<think>`` blocks, wrap JSON in markdown fences or prose, run
out of tokens mid-array, leave trailing commas, use single quotes, rename keys, or give
``"85"`` where a number belongs. The helpers here undo that once, for all parsers: the
reply parsers beside their prompts in :mod:`hygraph.prompts` and the extraction parsers
in :mod:`hygraph.extract`.

A reply with nothing usable raises :class:`ParseError`. Parsers are passed to
:meth:`hygraph.models.llm.CachedLLM.acomplete` as ``validate``, so such replies are
never cached and the call is made again by the next build.

This module sits below :mod:`hygraph.extract` in the import order (extract → prompts →
models), so it must not import the extraction schema or anything above it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from json_repair import repair_json

from hygraph.errors import HygraphError

__all__ = [
    "ParseError",
    "as_list",
    "as_text",
    "drop_think_blocks",
    "find_sections",
    "listed_items",
    "lower_keys",
    "parse_json_payload",
    "pick",
    "preview",
    "strip_thinking",
    "unfence",
]


class ParseError(HygraphError):
    """An LLM reply held no usable answer: no JSON, none of the expected keys, or nothing
    left once reasoning and formatting were removed."""


# --------------------------------------------------------------------------- reasoning, fences

_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"^\s*<think(?:ing)?>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think(?:ing)?>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*[\w+-]*[ \t]*\n?(.*?)(?:```|\Z)", re.DOTALL)


def drop_think_blocks(text: str) -> str:
    """``text`` without its closed ``<think>``/``<thinking>`` blocks (nothing else touched)."""
    return _THINK_BLOCK.sub("", text)


def strip_thinking(text: str) -> str:
    """Remove reasoning: closed blocks, everything before a stray closing tag (some servers
    drop the opening one), and a reply that is all unfinished reasoning (gives ``""``)."""
    text = drop_think_blocks(text)
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:
        text = text[closes[-1].end() :]
    if _THINK_OPEN.match(text):  # reasoning that never ended: there is no answer after it
        return ""
    return text


def unfence(text: str) -> str:
    """Markdown code fences replaced by their content (an unclosed fence runs to the end)."""
    return _FENCE.sub(lambda m: m.group(1), text)


def preview(text: str, limit: int = 80) -> str:
    """A reply collapsed to one short line, for error messages and logs."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


# --------------------------------------------------------------------------- JSON payload

_BARE_KEY = re.compile(r"[A-Za-z_][\w ]{0,40}\s*:")
_MAX_STARTS = 32
_DECODER = json.JSONDecoder()


def _candidates(text: str) -> list[str]:
    """Texts to search for JSON, best first: fenced blocks holding brackets, then the whole."""
    fenced = [m.group(1) for m in _FENCE.finditer(text) if "{" in m.group(1) or "[" in m.group(1)]
    return [*fenced, text] if fenced else [text]


def _looks_like_json_start(text: str, pos: int) -> bool:
    """True when the bracket at ``pos`` plausibly opens JSON rather than prose."""
    rest = text[pos + 1 : pos + 60].lstrip()
    if not rest:
        return True  # a lone bracket at the very end: a reply cut off right after it
    if rest[0] in "\"'{[]}-" or rest[0].isdigit():
        return True
    if text[pos] == "{" and _BARE_KEY.match(rest):  # unquoted keys: {entities: [...]}
        return True
    return text[pos] == "[" and rest.startswith(("true", "false", "null"))


def _trim_trailing_prose(text: str) -> str:
    """Cut what follows the last closing bracket when it holds no JSON syntax (a sign-off)."""
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
        # json_repair gives a list when several top-level values follow each other
        value = next((v for v in value if isinstance(v, dict)), None)
    return value


def _usable(value: Any) -> bool:
    return isinstance(value, dict | list) and len(value) > 0


def cut_off(text: str) -> bool:
    """Whether the reply's first JSON value ends before it closes (an open string or
    bracket when the text runs out): a reply cut short, whatever its finish reason said.

    ``json_repair`` would close such a value and return what came before the cut, a
    partial answer that reads as a whole one; callers that must not accept a partial
    answer (extraction, whose result is stored) ask :func:`parse_json_payload` for
    ``whole=True``.
    """
    body = strip_thinking(text) if isinstance(text, str) else ""
    start = next((i for i, ch in enumerate(body) if ch in "{[" and
                  _looks_like_json_start(body, i)), None)  # fmt: skip
    if start is None:
        return False
    depth, in_string, escaped = 0, False, False
    for ch in body[start:]:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return False  # the first value closed: what follows is not this answer
    return True


def parse_json_payload(text: str, *, whole: bool = False) -> Any:
    """The JSON object or array in an LLM reply, repaired if needed.

    Reasoning is removed first (:func:`strip_thinking`); fenced blocks are preferred to
    the whole text; decoding starts at the first bracket that looks like JSON, strictly
    first and, when that fails (truncation, trailing commas, single quotes, unquoted
    keys), through ``json_repair``.

    Returns:
        a ``dict`` or ``list`` (empty only when the reply literally was ``{}`` or ``[]``).

    ``whole``: a reply whose JSON is cut off before it closes (:func:`cut_off`) is a
    :class:`ParseError`, not repaired into the part that came before the cut.

    Raises:
        ParseError: the reply is empty, all reasoning, or holds no JSON that decodes or
            repairs into a non-empty object or array (or, with ``whole``, is cut off).
    """
    if not isinstance(text, str) or not text.strip():
        raise ParseError("empty reply")
    if whole and cut_off(text):
        raise ParseError(f"the reply's JSON is cut off before it closes: ...{text[-60:]!r}")
    body = strip_thinking(text)
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
            except (RecursionError, ValueError) as err:
                if not isinstance(err, json.JSONDecodeError):
                    # Nested past the parser's depth, or a number past Python's digit limit:
                    # hostile or broken output, not JSON a parser should trust.
                    what = type(err).__name__
                    raise ParseError(f"the reply's JSON cannot be read ({what})") from None
                value = _repair(candidate[pos:])
                if _usable(value):
                    return value
                continue
            if isinstance(value, dict | list):
                return value
    raise ParseError(f"no JSON object or array in the reply: {preview(text)!r}")


# --------------------------------------------------------------------------- loose JSON values


def _norm_key(key: object) -> str:
    return re.sub(r"[\s\-]+", "_", str(key).strip().lower())


def lower_keys(item: Mapping[Any, Any]) -> dict[str, Any]:
    """The mapping with keys lower-cased and spaces/dashes turned into ``_`` (first wins),
    so ``"Entity Name"``, ``"entity-name"`` and ``"entity_name"`` are one key."""
    out: dict[str, Any] = {}
    for key, value in item.items():
        out.setdefault(_norm_key(key), value)
    return out


def pick(item: Mapping[str, Any], keys: Iterable[str]) -> Any:
    """The first value present (not None) under one of ``keys``, tried in order."""
    for key in keys:
        value = item.get(key)
        if value is not None:
            return value
    return None


#: Nesting past this depth is not a value a model meant; it reads as empty.
MAX_TEXT_DEPTH = 20


def as_text(value: Any, sep: str = " ", _depth: int = 0) -> str:
    """A string from whatever a model gave: strings stripped, finite numbers printed (whole
    ones without ``.0``), lists joined with ``sep``, objects by their name/text/value.
    Lists and objects nested deeper than ``MAX_TEXT_DEPTH`` give ``""``."""
    if value is None or isinstance(value, bool) or _depth > MAX_TEXT_DEPTH:
        return ""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int):  # whole already; float() would overflow past 308 digits
        try:
            return str(value)
        except ValueError:  # past Python's digit limit for int → str
            return ""
    if isinstance(value, float):
        if not math.isfinite(value):
            return ""
        return str(int(value)) if value.is_integer() else str(value)
    if isinstance(value, list | tuple):
        parts = (as_text(v, sep, _depth + 1) for v in value)
        return sep.join(p for p in parts if p)
    if isinstance(value, Mapping):
        return as_text(pick(lower_keys(value), ("name", "text", "value")), sep, _depth + 1)
    return ""


_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def as_number(value: Any) -> float | None:
    """A finite number from a reply value: a number, or the first number in its text.

    None for a missing value, a boolean, a non-finite number or text without a number;
    each parser decides what that means (a default score, a neutral weight, no choice).
    """
    if value is None or isinstance(value, bool):
        return None
    try:
        if isinstance(value, int | float):
            number = float(value)
        else:
            match = _NUMBER.search(as_text(value))
            if match is None:
                return None
            number = float(match.group())
    except OverflowError:  # an integer past float's range (309+ digits)
        return None
    return number if math.isfinite(number) else None


def as_list(value: Any) -> list[Any]:
    """A section as a list: None gives ``[]``, a single item ``[item]``."""
    if value is None:
        return []
    if isinstance(value, list | tuple):
        return list(value)
    return [value]


def find_sections(payload: Any, groups: Mapping[str, tuple[str, ...]]) -> dict[str, Any] | None:
    """The sections of a payload object: for each group, the value under the first of its
    keys present. Wrapper objects (``{"result": {...}}``) are looked into when the top
    level has none of the keys; ``None`` when no level has any."""
    if not isinstance(payload, Mapping):
        return None
    data = lower_keys(payload)
    found = {
        group: pick(data, keys) for group, keys in groups.items() if any(k in data for k in keys)
    }
    if found:
        return found
    for value in data.values():
        if isinstance(value, Mapping):
            inner = find_sections(value, groups)
            if inner is not None:
                return inner
    return None


def listed_items(text: str, keys: Sequence[str], what: str, about: str = "") -> list[Any]:
    """The items of a reply that is a JSON list, or an object holding one under ``keys``.

    Raises:
        ParseError: no JSON, or an object with none of ``keys`` (``what`` names the list
            in the message, ``about`` says what the reply was for).
    """
    payload = parse_json_payload(text)
    if isinstance(payload, list):
        return payload
    sections = find_sections(payload, {"items": tuple(keys)})
    if sections is None:
        raise ParseError(f"the reply{about} has no {what!r} list: {preview(text)!r}")
    return as_list(sections["items"])
