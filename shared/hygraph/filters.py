"""Metadata filters on documents, in one small vocabulary both frameworks map onto.

A filter is a dict from a metadata key to a condition:

* a scalar: the value must equal it (``{"year": 2021}``);
* a list: the value must be one of them (``{"topic": ["rivers", "bridges"]}``);
* a dict of operators: ``{"year": {"$gte": 2000, "$lt": 2010}}`` with ``$eq``, ``$ne``,
  ``$gt``, ``$gte``, ``$lt``, ``$lte``, ``$in``, ``$nin`` (LangChain's and Chroma's
  spelling; LlamaIndex ``MetadataFilters`` and Qdrant ``Filter``s are translated to it by
  the integrations).

``{"$and": [...]}`` and ``{"$or": [...]}`` combine filters. Every key must match. An
unknown operator is a one-line error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hygraph.errors import ConfigError

_MISSING = object()
_OPS = {
    "$eq": lambda v, x: v == x,
    "$ne": lambda v, x: v != x,
    "$gt": lambda v, x: v is not _MISSING and v is not None and v > x,
    "$gte": lambda v, x: v is not _MISSING and v is not None and v >= x,
    "$lt": lambda v, x: v is not _MISSING and v is not None and v < x,
    "$lte": lambda v, x: v is not _MISSING and v is not None and v <= x,
    "$in": lambda v, x: v in list(x),
    "$nin": lambda v, x: v not in list(x),
}


def _combined(key: str, condition: Any) -> list[Mapping[str, Any]]:
    """The filters an ``$and`` / ``$or`` combines: a list of dicts, or a one-line error."""
    if not isinstance(condition, list | tuple) or not all(
        isinstance(f, Mapping) for f in condition
    ):
        raise ConfigError(f"{key} takes a list of filters (dicts), not {condition!r:.80}")
    return list(condition)


def _condition(value: Any, condition: Any) -> bool:
    if isinstance(condition, Mapping):
        for op, operand in condition.items():
            if op not in _OPS:
                raise ConfigError(f"unknown filter operator {op!r}; known: {', '.join(_OPS)}")
            if op in ("$in", "$nin") and not isinstance(operand, list | tuple | set | frozenset):
                raise ConfigError(f"{op} takes a list of values, not {operand!r:.80}")
            try:
                if not _OPS[op](value, operand):
                    return False
            except TypeError:  # comparing a number with a string: no match, not an error
                return False
        return True
    try:
        if isinstance(condition, list | tuple | set | frozenset):
            return value in condition
        return bool(value == condition)
    except TypeError:  # an unhashable value against a set: no match
        return False


def match_filters(metadata: Mapping[str, Any], filters: Mapping[str, Any]) -> bool:
    """Whether ``metadata`` satisfies ``filters`` (see the module docstring)."""
    if not isinstance(filters, Mapping):
        raise ConfigError(f"filters must be a dict of metadata conditions, not {type(filters)}")
    for key, condition in filters.items():
        if key in ("$and", "$or"):
            parts = _combined(key, condition)
            test = all if key == "$and" else any
            if not test(match_filters(metadata, f) for f in parts):
                return False
        elif isinstance(key, str) and key.startswith("$"):
            raise ConfigError(f"unknown filter combinator {key!r}; known: $and, $or")
        elif not _condition(metadata.get(key, _MISSING), condition):
            return False
    return True
