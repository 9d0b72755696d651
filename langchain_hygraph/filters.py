"""Metadata filters as LangChain apps write them, in the core's filter vocabulary.

LangChain retrievers take a ``filter`` in their ``search_kwargs``. Two spellings are
common, and both are accepted:

- a dict in the Chroma/PGVector style (``{"year": {"$gte": 2000}}``, ``{"$or": [...]}``):
  this is already the core's vocabulary (:mod:`hygraph.filters`) and passes through;
- a Qdrant ``models.Filter`` (what ``langchain_qdrant`` users write): its simple
  conditions are translated here, so that an app moving from a ``QdrantVectorStore`` to
  hygraph keeps its filters.

A Qdrant filter is translated when it is made of ``must``/``should``/``must_not`` lists
of ``FieldCondition``s (and nested ``Filter``s) that match with ``MatchValue``,
``MatchAny``, ``MatchExcept`` or a numeric ``Range``, on ``metadata.<key>`` (the payload
layout of ``langchain_qdrant``) or plain ``<key>``. Anything else (geo, full-text,
``values_count``, ``is_empty``, ``has_id``, ``min_should``, a negated range or nested
filter) is a one-line :class:`~hygraph.errors.ConfigError` that names it, rather than a
filter that silently matches something else.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hygraph.errors import ConfigError

#: The prefix ``langchain_qdrant`` gives document metadata in a point's payload.
METADATA_PREFIX = "metadata."

# How a ``must_not`` leaf is written as a positive condition.
_NEGATED = {"$eq": "$ne", "$ne": "$eq", "$in": "$nin", "$nin": "$in"}


def is_qdrant_filter(value: Any) -> bool:
    """Whether ``value`` is a ``qdrant_client`` model (checked without importing it)."""
    return type(value).__module__.startswith("qdrant_client")


def to_core_filter(value: Any) -> dict[str, Any] | None:
    """``value`` (None, a dict filter or a Qdrant ``Filter``) as a core filter dict.

    Dicts are checked for shape only (a dict of conditions); their operators are checked
    by the core when the filter is applied.
    """
    if value is None:
        return None
    if isinstance(value, Mapping):
        return dict(value)
    if is_qdrant_filter(value):
        return qdrant_to_core(value)
    raise ConfigError(
        "filter must be a dict of metadata conditions ({'year': {'$gte': 2000}}) or a "
        f"qdrant_client models.Filter, not {type(value).__name__}"
    )


def qdrant_to_core(qfilter: Any) -> dict[str, Any]:
    """A Qdrant ``models.Filter`` as a core filter dict (see the module docstring)."""
    name = type(qfilter).__name__
    if name != "Filter":
        # A bare condition where a Filter was expected: translate it as ``must=[it]``.
        return _condition(qfilter)
    if getattr(qfilter, "min_should", None) is not None:
        raise ConfigError("cannot translate a Qdrant filter with min_should; use should")
    parts: list[dict[str, Any]] = [_condition(c) for c in _as_list(qfilter.must)]
    should = [_condition(c) for c in _as_list(qfilter.should)]
    if should:
        parts.append(should[0] if len(should) == 1 else {"$or": should})
    parts.extend(_negated(c) for c in _as_list(qfilter.must_not))
    if not parts:
        return {}
    return parts[0] if len(parts) == 1 else {"$and": parts}


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _key(raw: str) -> str:
    key = raw[len(METADATA_PREFIX) :] if raw.startswith(METADATA_PREFIX) else raw
    if not key or "." in key or "[" in key:
        raise ConfigError(
            f"cannot translate the Qdrant key {raw!r}: use metadata.<key> or <key> of a "
            "top-level document metadata key"
        )
    return key


def _condition(cond: Any) -> dict[str, Any]:
    """One ``must``/``should`` entry: a nested ``Filter`` or a ``FieldCondition``."""
    name = type(cond).__name__
    if name == "Filter":
        return qdrant_to_core(cond)
    if name != "FieldCondition":
        raise ConfigError(
            f"cannot translate the Qdrant condition {name}: only FieldCondition and nested "
            "Filter are supported"
        )
    key = _key(cond.key)
    unsupported = [
        field
        for field in ("geo_bounding_box", "geo_radius", "geo_polygon", "values_count")
        + ("is_empty", "is_null")
        if getattr(cond, field, None) is not None
    ]
    if unsupported:
        raise ConfigError(f"cannot translate the Qdrant condition {unsupported[0]} on {key!r}")
    ops: dict[str, Any] = {}
    if cond.match is not None:
        ops.update(_match(cond.match, key))
    if cond.range is not None:
        ops.update(_range(cond.range, key))
    if not ops:
        raise ConfigError(f"the Qdrant condition on {key!r} has neither match nor range")
    return {key: ops}


def _match(match: Any, key: str) -> dict[str, Any]:
    name = type(match).__name__
    if name == "MatchValue":
        return {"$eq": match.value}
    if name == "MatchAny":
        return {"$in": list(match.any)}
    if name == "MatchExcept":
        return {"$nin": list(getattr(match, "except_", None) or [])}
    raise ConfigError(
        f"cannot translate the Qdrant match {name} on {key!r}: use MatchValue, MatchAny or "
        "MatchExcept"
    )


def _range(rng: Any, key: str) -> dict[str, Any]:
    if type(rng).__name__ != "Range":
        raise ConfigError(
            f"cannot translate the Qdrant {type(rng).__name__} on {key!r}: use a numeric Range"
        )
    bounds = {op: getattr(rng, op[1:]) for op in ("$gt", "$gte", "$lt", "$lte")}
    return {op: value for op, value in bounds.items() if value is not None}


def _negated(cond: Any) -> dict[str, Any]:
    """A ``must_not`` entry as a positive condition (only match conditions negate)."""
    if type(cond).__name__ != "FieldCondition" or cond.range is not None:
        raise ConfigError(
            f"cannot translate a Qdrant must_not on {type(cond).__name__}"
            + (f" {cond.key!r} with a range" if getattr(cond, "range", None) is not None else "")
            + ": only match conditions can be negated"
        )
    ((key, ops),) = _condition(cond).items()
    ((op, operand),) = ops.items()
    return {key: {_NEGATED[op]: operand}}
