"""The prompt budget: how much neighbour text an attribute or element prompt may hold.

Attribute (A) and high-level element (H) prompts list the texts around an entity or
in a community, most important first. The reference code caps that list at a token
budget (``prompt_budget``, 128k tokens), so one hub entity cannot produce a prompt
the model rejects; the offline writers read the same kept texts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hygraph.layers.heterograph.config import HeterographConfig


def fit_budget(
    cfg: HeterographConfig, units: list[str], rels: list[str]
) -> tuple[list[str], list[str]]:
    """Keep neighbours in order of importance until the prompt budget is reached.

    Units come before relationship statements; the first text that does not fit ends
    the list (later, shorter ones are not squeezed in).
    """
    from hygraph.ingest.tokenizer import default_tokenizer

    left = cfg.prompt_budget
    if sum(len(t) for t in units) + sum(len(t) for t in rels) <= left:
        return units, rels  # a token is at least one character: everything fits
    tok = default_tokenizer()
    kept_u: list[str] = []
    kept_r: list[str] = []
    for text, into in [*((u, kept_u) for u in units), *((r, kept_r) for r in rels)]:
        cost = tok.count(text)
        if cost > left:
            break
        into.append(text)
        left -= cost
    return kept_u, kept_r
