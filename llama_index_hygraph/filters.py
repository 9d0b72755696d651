"""LlamaIndex ``MetadataFilters`` in the core's filter vocabulary (:mod:`hygraph.filters`).

A LlamaIndex app narrows a retriever with ``as_retriever(filters=MetadataFilters(...))``;
the core filters documents with a plain dict (``{"year": {"$gte": 2000}}``, ``$and`` /
``$or``). This module translates one into the other, so the same filters an app wrote
for ``VectorStoreIndex`` work unchanged here. Filters apply to document metadata (every
chunk of a document shares it), plus ``doc_id``, ``title`` and ``source``.

Supported: the comparison operators (``==``, ``!=``, ``>``, ``>=``, ``<``, ``<=``,
``in``, ``nin``) under ``and``/``or`` conditions, nested. Anything else (``any``,
``contains``, ``text_match``, ``not`` ...) is a one-line error naming it: silently
ignoring a filter would return documents the app meant to exclude.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

#: LlamaIndex operators and the core operator each maps onto.
OPERATORS = {
    FilterOperator.EQ: "$eq",
    FilterOperator.NE: "$ne",
    FilterOperator.GT: "$gt",
    FilterOperator.GTE: "$gte",
    FilterOperator.LT: "$lt",
    FilterOperator.LTE: "$lte",
    FilterOperator.IN: "$in",
    FilterOperator.NIN: "$nin",
}
_CONDITIONS = {FilterCondition.AND: "$and", FilterCondition.OR: "$or"}


def _operator(op: Any) -> str:
    try:
        return OPERATORS[FilterOperator(op)]
    except (ValueError, KeyError):
        name = getattr(op, "value", op)
        supported = ", ".join(o.value for o in OPERATORS)
        raise ValueError(
            f"HyGraphIndex filters do not support the operator {name!r}; "
            f"supported: {supported} (combined with and/or)"
        ) from None


def _translate(filters: MetadataFilters) -> dict[str, Any]:
    condition = filters.condition or FilterCondition.AND
    if condition not in _CONDITIONS:
        raise ValueError(
            f"HyGraphIndex filters do not support the condition {condition.value!r}; "
            "supported: and, or"
        )
    parts: list[dict[str, Any]] = []
    for item in filters.filters:
        if isinstance(item, MetadataFilters):
            parts.append(_translate(item))
        elif isinstance(item, MetadataFilter):  # ExactMatchFilter is a MetadataFilter too
            op = _operator(item.operator)
            value = list(item.value) if isinstance(item.value, list | tuple) else item.value
            parts.append({item.key: {op: value}})
        else:
            raise TypeError(f"not a metadata filter: {type(item).__name__}")
    if len(parts) == 1:
        return parts[0]
    return {_CONDITIONS[condition]: parts}


def to_core_filters(
    filters: MetadataFilters | Mapping[str, Any] | None = None,
    doc_ids: Sequence[str] | None = None,
) -> dict[str, Any] | None:
    """The core filter dict for LlamaIndex ``filters`` and ``doc_ids`` (None: no filter).

    ``filters`` may already be a core filter dict (passed through). ``doc_ids`` keeps
    only those documents, as for LlamaIndex's vector retriever.
    """
    if filters is None:
        core: dict[str, Any] | None = None
    elif isinstance(filters, MetadataFilters):
        core = _translate(filters) if filters.filters else None
    elif isinstance(filters, Mapping):
        core = dict(filters)
    else:
        raise TypeError(
            "filters= takes LlamaIndex MetadataFilters or a dict of metadata conditions, "
            f"not {type(filters).__name__}"
        )
    if doc_ids is not None:
        if isinstance(doc_ids, str):
            raise TypeError("doc_ids= takes a list of document ids, not one string")
        by_id = {"doc_id": {"$in": list(doc_ids)}}
        core = by_id if core is None else {"$and": [core, by_id]}
    return core
