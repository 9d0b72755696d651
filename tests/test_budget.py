"""The one token-budget cut (hygraph.retrieval.budget): hand-checked lists."""

from __future__ import annotations

from hygraph.retrieval.budget import fit_budget, token_cost


def _len(item: str) -> int:
    return len(item)


def test_keeps_leading_items_that_fit() -> None:
    assert fit_budget(["aa", "bbb", "c", "dddd"], 6, _len) == ["aa", "bbb", "c"]


def test_stops_at_first_overflow_without_packing_later_items() -> None:
    # "dddd" overflows at 2+4; the shorter "e" after it is not packed in: the order is the ranking.
    assert fit_budget(["aa", "dddd", "e"], 5, _len) == ["aa"]


def test_exact_fit_is_kept() -> None:
    assert fit_budget(["aa", "bbb"], 5, _len) == ["aa", "bbb"]


def test_first_item_is_always_kept() -> None:
    assert fit_budget(["a" * 50, "b"], 10, _len) == ["a" * 50]


def test_zero_or_negative_budget_means_no_cut() -> None:
    items = ["a" * 50, "b" * 50]
    assert fit_budget(items, 0, _len) == items
    assert fit_budget(items, -1, _len) == items


def test_k_cuts_before_the_budget() -> None:
    assert fit_budget(["a", "b", "c"], 0, _len, k=2) == ["a", "b"]
    assert fit_budget(["a", "bb", "c"], 2, _len, k=3) == ["a"]


def test_empty_list() -> None:
    assert fit_budget([], 10, _len) == []


def test_costs_are_read_lazily() -> None:
    seen: list[int] = []

    def numbers():
        for n in range(100):
            seen.append(n)
            yield n

    assert fit_budget(numbers(), 3, lambda n: 1) == [0, 1, 2]
    assert len(seen) == 4  # the overflowing item is read, nothing after it


def test_token_cost_counts_tokens() -> None:
    cost = token_cost(lambda item: item)
    assert cost("") == 0
    assert cost("three little words") >= 3
