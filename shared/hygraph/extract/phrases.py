"""Key phrases by rule: content-word runs, a question's two levels of keywords, relation keywords.

LightRAG asks an LLM for two kinds of keywords: *low-level* ones (the specific
entities and details a question names) and *high-level* ones (the concepts and themes
it is about), and its extraction gives each relationship a few high-level keywords.
Without an LLM these rules stand in:

* :func:`content_phrases`: runs of content words, split at stop words (function
  words, auxiliaries, question words) and punctuation, at most ``MAX_PHRASE_WORDS``
  long ("first president", "published");
* :func:`question_keywords`: low-level = the entity mentions the offline extractor finds
  (:func:`~hygraph.extract.offline.find_entities`: names, dates, quoted titles);
  high-level = the content phrases outside those mentions;
* :func:`relation_keywords`: the phrases of a relation's labels, then those of its
  descriptions with the endpoint names taken out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

MAX_PHRASE_WORDS = 4  # ours: a longer run is cut into pieces of this many words

_TOKEN = re.compile(r"[^\W_]+(?:['’\-][^\W_]+)*", re.UNICODE)
_STOP = frozenset(
    """a an the and or but nor so yet of in on at to for from by with without within about
    above below over under into onto upon out off up down through during before after since
    until as than then that this these those there here what which who whom whose when where
    why how is are was were be been being am do does did done has have had having will would
    shall should can could may might must it its he him his she her hers they them their
    theirs we us our ours you your yours i me my mine one ones also not no yes very more most
    much many some any all each every both either neither other another such same own only
    just even still ever s""".split()
)


def _runs(text: str, skip: Sequence[tuple[int, int]] = ()) -> list[str]:
    """Runs of content words in ``text``; words inside a ``skip`` span break a run."""
    runs: list[list[str]] = []
    current: list[str] = []
    last_end = 0
    for match in _TOKEN.finditer(text):
        word, start = match.group(), match.start()
        gap = text[last_end:start]
        last_end = match.end()
        skipped = any(s < match.end() and start < e for s, e in skip)
        stop = word.casefold().replace("’", "'") in _STOP or len(word) < 2
        if current and (gap.strip() or skipped or stop):
            runs.append(current)
            current = []
        if not skipped and not stop:
            current.append(word)
    if current:
        runs.append(current)
    out = []
    for run in runs:
        for at in range(0, len(run), MAX_PHRASE_WORDS):
            out.append(" ".join(run[at : at + MAX_PHRASE_WORDS]))
    return out


def _distinct(items: Iterable[str]) -> list[str]:
    """Items without repeats (case-insensitive, first spelling kept) or empty ones."""
    seen: dict[str, str] = {}
    for item in items:
        text = " ".join(item.split())
        if text:
            seen.setdefault(text.casefold(), text)
    return list(seen.values())


def content_phrases(text: str, skip: Sequence[tuple[int, int]] = ()) -> list[str]:
    """The distinct content-word phrases of ``text`` in order (``skip``: spans left out)."""
    return _distinct(_runs(text, skip))


def question_keywords(question: str) -> tuple[list[str], list[str]]:
    """``(low-level, high-level)`` keywords of a question by rule (see the module docstring)."""
    from hygraph.extract.offline import find_entities

    mentions = find_entities(question)
    low = _distinct(m.name for m in mentions)
    high = content_phrases(question, [(m.start, m.end) for m in mentions])
    return low, high


def _name_spans(text: str, names: Iterable[str]) -> list[tuple[int, int]]:
    spans = []
    for name in names:
        if name.strip():
            pattern = r"(?<!\w)" + re.escape(name.strip()) + r"(?!\w)"
            spans += [(m.start(), m.end()) for m in re.finditer(pattern, text, re.IGNORECASE)]
    return spans


def relation_keywords(
    labels: Sequence[str], descriptions: Sequence[str], endpoints: Sequence[str], limit: int
) -> list[str]:
    """Up to ``limit`` keywords of a relation: label phrases, then description phrases.

    Endpoint names are left out of the description phrases (a keyword says what the
    relation is about, the endpoints are already on the relation). A label made of stop
    words only ("is a") is kept as written, so every labelled relation has a keyword.
    """
    found: list[str] = []
    for label in labels:
        found += content_phrases(label) or ([" ".join(label.split())] if label.strip() else [])
    for text in descriptions:
        found += content_phrases(text, _name_spans(text, endpoints))
    return _distinct(found)[: max(0, limit)]
