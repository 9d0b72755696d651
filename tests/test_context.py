"""Context rendering within a token budget."""

from __future__ import annotations

from hygraph.ingest import default_tokenizer
from hygraph.ingest.tokenizer import Tokenizer
from hygraph.retrieval import Context, Evidence, ranked_chunk_ids


def _items(n: int, words: int = 30) -> list[Evidence]:
    return [
        Evidence("chunk", " ".join(f"word{i}x{j}" for j in range(words)), 1.0 - i / 10, (f"c{i}",))
        for i in range(n)
    ]


def test_render_fits_everything_when_budget_allows():
    context = Context()
    context.add("Passages", _items(2, words=5))
    rendered = context.render(budget=500)
    assert rendered.text.startswith("## Passages")
    assert "[1] word0x0" in rendered.text and "[2] word1x0" in rendered.text
    assert not rendered.truncated and len(rendered.items) == 2


def test_render_never_exceeds_budget_and_truncates_last_item():
    tok = default_tokenizer()
    context = Context()
    context.add("Entities", _items(3))
    context.add("Passages", _items(5))
    for budget in (10, 50, 120, 333, 1000):
        rendered = context.render(budget=budget)
        assert tok.count(rendered.text) <= budget
        assert rendered.tokens == tok.count(rendered.text)
    small = context.render(budget=120)
    assert small.truncated and small.text.endswith("…")


def test_section_budget_caps_a_section():
    context = Context()
    context.add("Entities", _items(10), budget=60)
    context.add("Passages", _items(2, words=5))
    rendered = context.render(budget=2000)
    entities, passages = rendered.text.split("## Passages")
    assert default_tokenizer().count(entities) <= 62
    assert "[2]" in passages


def test_ranked_chunk_ids_first_appearance():
    items = [Evidence("fact", "x", 1, ("c2", "c1")), Evidence("chunk", "y", 0.5, ("c1", "c3"))]
    assert ranked_chunk_ids(items) == ["c2", "c1", "c3"]


def _prose(n: int) -> list[Evidence]:
    """Items like real passages: names with accents, numbers, punctuation, a line break."""
    base = (
        "Liège, 1830: the Belgian Revolution began in Brussels; No. 3 Dry Dock (built "
        "1909) is now used by a boat-repair co-operative.\nIts length is 12.5 m."
    )
    return [
        Evidence("chunk", f"{base} Item {i}. " * (1 + i % 3), 1.0, (f"c{i}",)) for i in range(n)
    ]


def test_render_counts_lines_once_and_agrees_with_counting_blocks_whole():
    """The bundled tokenizer's counts add up, so the sums the render keeps are the exact
    counts: the same text, items and tokens as counting every block and the whole text."""
    tok = default_tokenizer()
    assert tok.counts_add_up
    context = Context()
    context.add("Entities", _prose(5), budget=150)
    context.add("Passages", _prose(40))  # more lines than one counting batch
    for budget in (12, 40, 90, 200, 333, 1000, 5000):
        fast = context.render(budget=budget)
        exact = context._render(budget, tok, exact_blocks=True)
        assert (fast.text, fast.tokens, fast.truncated) == (
            exact.text,
            exact.tokens,
            exact.truncated,
        )
        assert fast.items == exact.items and fast.whole == exact.whole
        assert fast.tokens == tok.count(fast.text) <= budget


class _NewlineTokenizer(Tokenizer):
    """Test double: a word per token and every line break a token of its own, so text
    joined with a line break counts more than its parts (as a byte-level BPE can)."""

    counts_add_up = False

    def __init__(self) -> None:  # no backend: every count is the double's own
        self.name = "newline-words"

    def count(self, text: str) -> int:
        return len(text.split()) + text.count("\n")

    def count_many(self, texts):  # type: ignore[no-untyped-def]
        return [self.count(t) for t in texts]

    def truncate(self, text: str, max_tokens: int) -> str:
        words = text.split()
        return " ".join(words[: max(0, max_tokens - 1)])


def test_render_keeps_the_budget_with_a_tokenizer_whose_counts_do_not_add_up(monkeypatch):
    tok = _NewlineTokenizer()
    context = Context()
    for title in ("Entities", "Facts", "Passages"):
        context.add(title, _items(4, words=6))
    calls: list[bool] = []
    render = Context._render

    def spy(self, budget, tokenizer, *, exact_blocks):  # type: ignore[no-untyped-def]
        calls.append(exact_blocks)
        return render(self, budget, tokenizer, exact_blocks=exact_blocks)

    monkeypatch.setattr(Context, "_render", spy)
    for budget in range(20, 120):
        rendered = context.render(budget=budget, tokenizer=tok)
        assert rendered.tokens == tok.count(rendered.text) <= budget
    assert True in calls  # some budget needed the second, block-by-block rendering
