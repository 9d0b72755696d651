"""The retrieved context: evidence grouped into titled sections, rendered within a token budget.

Methods fill a :class:`Context` with sections in the order their prompts want
them (for example entities, then facts, then passages). :meth:`Context.render`
writes them as text for an LLM, stopping at the token budget: whole items first,
then one truncated item if enough room is left, so the budget is a hard limit.
Per-section budgets let a method reserve room for each kind of evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hygraph.ingest.tokenizer import Tokenizer, default_tokenizer
from hygraph.retrieval.evidence import Evidence, ranked_chunk_ids

#: An item is cut rather than dropped only if at least this many tokens fit.
MIN_TRUNCATED_TOKENS = 24
#: Lines of a section counted in one tokenizer call (most contexts show about ten).
COUNT_BATCH = 16


@dataclass
class Section:
    """A titled group of evidence; ``budget`` optionally caps its tokens."""

    title: str
    items: list[Evidence] = field(default_factory=list)
    budget: int | None = None


@dataclass
class RenderedContext:
    """Context text plus what went into it."""

    text: str
    tokens: int
    items: list[Evidence]
    truncated: bool
    whole: list[Evidence] = field(default_factory=list)
    """The items shown in full (``items`` also has the one cut to fit, if any)."""


@dataclass
class Context:
    """Ordered sections of evidence.

    ``ranking`` is the method's own order of the chunks it found, most relevant
    first (what passage-level evaluation and citations read). When a method leaves
    it unset, chunks rank in the order the evidence cites them, section by section.
    """

    sections: list[Section] = field(default_factory=list)
    ranking: list[str] | None = None

    def add(self, title: str, items: list[Evidence], budget: int | None = None) -> Section:
        section = Section(title, list(items), budget)
        self.sections.append(section)
        return section

    @property
    def items(self) -> list[Evidence]:
        """All evidence, section by section, in rank order."""
        return [item for section in self.sections for item in section.items]

    def chunk_ranking(self) -> list[str]:
        """Chunk ids, most relevant first (``ranking`` when the method set one)."""
        if self.ranking is not None:
            return list(dict.fromkeys(self.ranking))
        return ranked_chunk_ids(self.items)

    def render(self, budget: int = 2000, tokenizer: Tokenizer | None = None) -> RenderedContext:
        """Render sections as Markdown-ish text using at most ``budget`` tokens.

        Each line is counted once (a section's lines a few at a time, in one call). With
        a tokenizer that cuts words at whitespace first (:attr:`Tokenizer.counts_add_up`,
        the bundled one), a block's and the whole text's tokens are the sum of their
        lines' and headers', exactly. With another, the whole text is counted; where it
        exceeds the budget (a byte-level BPE can count text joined at a line break as
        more than its parts), it is rendered again counting each block whole, within a
        budget smaller by the excess, until it fits: the budget is a hard limit.
        """
        tok = tokenizer or default_tokenizer()
        rendered = self._render(budget, tok, exact_blocks=False)
        room = budget
        while rendered.tokens > budget and room > 0:
            room -= rendered.tokens - budget
            rendered = self._render(max(room, 0), tok, exact_blocks=True)
        return rendered

    def _render(self, budget: int, tok: Tokenizer, *, exact_blocks: bool) -> RenderedContext:
        parts: list[str] = []
        used_items: list[Evidence] = []
        whole: list[Evidence] = []
        used = 0
        truncated = False
        for section in self.sections:
            if not section.items:
                continue
            header = f"## {section.title}\n"
            header_tokens = tok.count(header)
            if used + header_tokens >= budget:
                truncated = True
                break
            section_left = budget - used - header_tokens
            if section.budget is not None:
                section_left = min(section_left, section.budget - header_tokens)
            lines: list[str] = []
            block_tokens = header_tokens
            costs: list[int] = []
            for n, item in enumerate(section.items, start=1):
                line = f"[{n}] {item.text.strip()}\n"
                if len(costs) < n:  # the next few lines counted together
                    batch = section.items[n - 1 : n - 1 + COUNT_BATCH]
                    costs += tok.count_many(
                        [f"[{k}] {x.text.strip()}\n" for k, x in enumerate(batch, start=n)]
                    )
                cost = costs[n - 1]
                if cost <= section_left:
                    lines.append(line)
                    used_items.append(item)
                    whole.append(item)
                    section_left -= cost
                    block_tokens += cost
                    continue
                truncated = True
                if section_left >= MIN_TRUNCATED_TOKENS:
                    cut = tok.truncate(line, section_left - 1).rstrip() + " …\n"
                    lines.append(cut)
                    used_items.append(item)
                    block_tokens += tok.count(cut)
                break
            if lines:
                block = header + "".join(lines)
                parts.append(block)
                used += tok.count(block) if exact_blocks else block_tokens
        text = "\n".join(parts).strip()
        tokens = used if tok.counts_add_up and not exact_blocks else tok.count(text)
        return RenderedContext(
            text=text, tokens=tokens, items=used_items, truncated=truncated, whole=whole
        )
