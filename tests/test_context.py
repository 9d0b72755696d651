"""Context rendering within a token budget."""

from __future__ import annotations

from hygraph.ingest import default_tokenizer
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
