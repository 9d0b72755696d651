"""Token-budget cuts: the one rule every operator uses to keep a ranked list within a budget.

A ranked list (chunks, relations, community reports, tree nodes, map points) is cut to
the leading items whose costs, summed in order, fit the budget. One meaning everywhere:

* ``budget`` 0 or less means no cut;
* items are taken in order and the cut stops at the first item that would overflow
  (later, smaller items are not packed in: the order is the method's ranking);
* the first item is always kept, so a budget never empties a non-empty list. The
  references differ here (LightRAG's ``truncate_list_by_token_size`` and RAPTOR's
  collapsed-tree loop may return nothing when the first item alone is too long; the
  GraphRAG and HiRAG report selections keep it); an empty context answers nothing, so
  one over-long best item is kept and the context renderer trims it.

Costs are read lazily, so a generator that reads items from the store in batches stops
reading once the budget is met.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def fit_budget(items: Iterable[T], budget: int, cost: Callable[[T], int], *, k: int = 0) -> list[T]:
    """The first ``k`` items (0: all) while their summed ``cost`` fits ``budget`` (0: no cut).

    The first item is always kept (see the module docstring for why).
    """
    kept: list[T] = []
    used = 0
    for item in items:
        if k > 0 and len(kept) >= k:
            break
        if budget > 0:
            spent = cost(item)
            if kept and used + spent > budget:
                break
            used += spent
        kept.append(item)
    return kept


def token_cost(text_of: Callable[[T], str]) -> Callable[[T], int]:
    """A cost function: the default tokenizer's count of ``text_of(item)``."""
    from hygraph.ingest.tokenizer import default_tokenizer

    tok = default_tokenizer()
    return lambda item: tok.count(text_of(item))
