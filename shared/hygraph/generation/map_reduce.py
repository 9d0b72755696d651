"""Map-reduce answers: GraphRAG's global search and CheapRAG (spec 002 §6.2, §6.3).

The retrieval of these methods hands over a ranked list of pieces (community reports,
and for CheapRAG passages too): every evidence item of the context, not only the part
a rendered context would show. Then:

1. **Map.** The pieces are packed in order into groups of at most ``map_budget`` tokens
   (the reference code's 16,384 for GraphRAG, so a few hundred reports take a few
   dozen calls; ``map_budget=0`` sends each piece alone, as the paper describes it and
   as CheapRAG does). Each group is one LLM call (:func:`~hygraph.prompts.map_reduce.
   map_messages`) returning scored points. All calls go through the shared fan-out
   (:meth:`~hygraph.resources.Resources.complete_many`: bounded concurrency, the disk
   cache, usage charged to the caller's stage, so a query's cost report counts them).
2. **Collect.** A call that failed or a reply that does not parse is skipped with a
   warning (the others still count); points scored ``min_score`` or less are dropped.
3. **Rank and reduce.** The points are sorted by score (ties: the earlier group), kept
   while they fit ``reduce_budget`` tokens (at least one), and one last call writes the
   answer from them (:func:`~hygraph.prompts.map_reduce.reduce_messages`). With no
   point left there is no reduce call: the answer says the material does not tell.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hygraph.errors import ConfigError
from hygraph.prompts.map_reduce import (
    map_messages,
    parse_map_points,
    parse_reduce,
    reduce_messages,
    render_points,
)
from hygraph.prompts.replies import ParseError, preview

if TYPE_CHECKING:
    from hygraph.resources import Resources
    from hygraph.retrieval.evidence import Evidence

log = logging.getLogger("hygraph")

#: The answer when no map step found anything that helps (no reduce call is made).
NO_ANSWER = "I cannot tell from the given material: no part of it helps answer the question."


@dataclass
class MapReduceOptions:
    """How a map-reduce answer is made (a method's config carries the same fields)."""

    map_budget: int = 16384  # framework: tokens per map call
    #   (Config/QueryConfig.py:29 global_max_token_for_community_report)
    reduce_budget: int = 16384  # framework: points' tokens kept for the reduce call
    min_score: float = 0.0  # framework: points scored above this are kept


@dataclass
class MapReduceResult:
    """The answer, the points it was written from, and what the map step did."""

    answer: str
    points: list[tuple[str, float, int]] = field(default_factory=list)
    map_calls: int = 0
    skipped: int = 0
    reduced: bool = False


def _count(text: str) -> int:
    from hygraph.ingest.tokenizer import default_tokenizer

    return default_tokenizer().count(text)


def render_unit(number: int, item: Evidence) -> str:
    """One piece as the map prompt shows it: number, what it is, then its text."""
    if item.kind == "community":
        title = item.metadata.get("title") or ""
        rating = item.metadata.get("rating")
        about = "community report" + (f", rating {float(rating):g}" if rating is not None else "")
        head = f"[{number}] ({about}) {title}".rstrip()
    else:
        head = f"[{number}] ({'passage' if item.kind == 'chunk' else item.kind})"
    return f"{head}\n{item.text.strip()}"


def batches(items: Sequence[Evidence], budget: int) -> list[list[tuple[int, Evidence]]]:
    """``items`` numbered from 1 and packed in order into groups within ``budget`` tokens.

    ``budget`` 0 gives one item per group; an item longer than the budget gets a group of
    its own (it is never dropped).
    """
    groups: list[list[tuple[int, Evidence]]] = []
    used = 0
    for number, item in enumerate(items, start=1):
        cost = _count(render_unit(number, item)) if budget > 0 else 0
        if not groups or budget <= 0 or used + cost > budget:
            groups.append([])
            used = 0
        groups[-1].append((number, item))
        used += cost
    return groups


def _within(points: list[tuple[str, float, int]], budget: int) -> list[tuple[str, float, int]]:
    """The leading points whose texts fit ``budget`` tokens (``fit_budget``'s cut)."""
    from hygraph.retrieval.budget import fit_budget

    return fit_budget(points, budget, lambda point: _count(point[0]))


def map_reduce(
    res: Resources,
    question: str,
    items: Sequence[Evidence],
    options: MapReduceOptions | None = None,
) -> MapReduceResult:
    """Answer ``question`` from ``items`` by map-reduce (see the module docstring)."""
    options = options or MapReduceOptions()
    if res.llm is None:
        raise ConfigError(
            "a map-reduce answer needs an LLM: pass llm=... (or --llm MODEL), or set OPENAI_MODEL"
        )
    units = [item for item in items if item.text and item.text.strip()]
    groups = batches(units, options.map_budget)
    prompts = [map_messages(question, "\n\n".join(render_unit(n, i) for n, i in group))
               for group in groups]  # fmt: skip
    replies = res.complete_many(prompts, desc="map", validate=parse_map_points) if prompts else []
    points: list[tuple[str, float, int]] = []
    skipped = 0
    for reader, reply in enumerate(replies, start=1):
        if isinstance(reply, ParseError):  # an unusable reply: skipped, and never cached
            log.warning("map reply %d of %d skipped: %s", reader, len(replies), reply)
            skipped += 1
            continue
        if isinstance(reply, BaseException):
            log.warning("map call %d of %d failed, skipped: %s", reader, len(replies), reply)
            skipped += 1
            continue
        points += [(text, score, reader) for text, score in parse_map_points(reply)]
    kept = sorted((p for p in points if p[1] > options.min_score), key=lambda p: (-p[1], p[2]))
    kept = _within(kept, options.reduce_budget)
    result = MapReduceResult(NO_ANSWER, kept, len(replies), skipped)
    if not kept:
        return result
    reply = res.complete_many([reduce_messages(question, render_points(kept))], desc="reduce")[0]
    if isinstance(reply, BaseException):
        raise reply
    try:
        result.answer = parse_reduce(reply)
        result.reduced = True
    except ParseError as err:
        log.warning("the reduce reply is unusable (%s): %r", err, preview(reply))
    return result
