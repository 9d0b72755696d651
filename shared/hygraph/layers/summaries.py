"""Summaries of groups of texts, for the layers that build levels of summary nodes.

RAPTOR, HiRAG and HyGRAG summarise clusters (of chunks, of entities, of tree nodes)
into the nodes of the level above. :func:`summarize_groups` is the one place that
does it:

* with an LLM configured, every group's prompt goes through the shared fan-out
  (:meth:`~hygraph.resources.Resources.complete_many`: cache, retries, bounded
  concurrency, progress bar, usage charged to the caller's stage), and a call that
  fails or a reply with no text falls back to an extractive summary for that group
  only, with a warning;
* without one, the summary is extractive (:func:`~hygraph.extract.extractive.
  extractive_summary`: the sentences most central to the group by shared content
  words, in their original order). It is never empty for a group with any text: when
  no sentence is found, the start of the first text is used.

Callers charge the work to a stage of their own (``with res.tracker.stage(...)``) so
the cost report shows calls and tokens per level.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from hygraph.models.base import Message

if TYPE_CHECKING:
    from hygraph.resources import Resources

log = logging.getLogger(__name__)

#: ``(text, written_by)``: written_by is ``"llm"`` or ``"extractive"``.
Summary = tuple[str, str]


def extractive_group_summary(texts: Sequence[str], max_words: int) -> str:
    """The extractive summary of ``texts``; the first words of the first text if no sentence."""
    from hygraph.extract.extractive import extractive_summary

    body = extractive_summary([t for t in texts if t], max_words)
    if body:
        return body
    for text in texts:
        words = (text or "").split()
        if words:
            return " ".join(words[:max_words])
    return ""


def summarize_groups(
    res: Resources,
    groups: Sequence[Sequence[str]],
    *,
    messages: Callable[[Sequence[str]], list[Message]],
    max_words: int,
    desc: str,
    parse: Callable[[str], str] | None = None,
    use_llm: bool = True,
) -> list[Summary]:
    """One summary per group of texts, in order (see the module docstring).

    Args:
        res: the index's resources (its LLM, if any, and the fan-out).
        groups: the texts of each group, most important first.
        messages: builds the prompt of one group (used only with an LLM).
        max_words: length of an extractive summary (and of the fallback).
        desc: label of the progress bar.
        parse: reads a reply into summary text, raising on an unusable one
            (default: :func:`~hygraph.prompts.noderag.clean_summary`).
        use_llm: False forces extractive summaries even when an LLM is configured.
    """
    if not groups:
        return []
    if not use_llm or res.llm is None:
        return [(extractive_group_summary(g, max_words), "extractive") for g in groups]
    if parse is None:
        from hygraph.prompts.noderag import clean_summary as parse
    replies = res.complete_many([messages(g) for g in groups], desc, validate=parse)
    out: list[Summary] = []
    for group, reply in zip(groups, replies, strict=True):
        try:
            if isinstance(reply, BaseException):
                raise reply
            out.append((parse(reply), "llm"))
        except Exception as err:  # noqa: BLE001 - one bad reply must not lose the build
            log.warning("%s: a summary falls back to extractive (%s)", desc, err)
            out.append((extractive_group_summary(group, max_words), "extractive"))
    return out
