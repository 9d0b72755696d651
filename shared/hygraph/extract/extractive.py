"""Extractive summaries: the offline stand-in for LLM-written summaries.

Methods that ask an LLM to summarise a group of texts (NodeRAG's attribute and
high-level nodes) need text even when no LLM is configured. This module picks
whole sentences instead of writing new ones, with a centroid rule in the spirit
of SumBasic (Nenkova & Vanderwende, 2005): a sentence scores the mean frequency,
across the whole group, of the content words it contains, so the sentences that
share the most vocabulary with the rest of the group come first. Picked sentences
are shown in their original order and the summary stops at ``max_words``.

The result is never empty for non-empty input: when nothing scores (every word a
stop word), the first sentence is used.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'“(\[]?[A-Z0-9])")
_STOP = frozenset(
    """a an and are as at be been but by for from had has have he her his i in is it its
    of on or she that the their them they this to was were which who will with would
    also into than then there these those not no""".split()
)


def sentences(text: str) -> list[str]:
    """Split ``text`` into sentences at end punctuation followed by a capital or digit."""
    out = []
    for part in _SENTENCE_END.split(" ".join(text.split())):
        part = part.strip()
        if part:
            out.append(part)
    return out


def _content_words(text: str) -> list[str]:
    return [w for w in (m.group().casefold() for m in _WORD.finditer(text)) if w not in _STOP]


def extractive_summary(texts: Sequence[str], max_words: int = 120) -> str:
    """The sentences of ``texts`` most central to the group, in their original order.

    Duplicated sentences count once. At least one sentence is returned (cut to
    ``max_words`` words if it alone is longer); ``""`` only when ``texts`` has no text.
    """
    pool: list[str] = []
    seen: set[str] = set()
    for text in texts:
        for sentence in sentences(text or ""):
            key = sentence.casefold()
            if key not in seen:
                seen.add(key)
                pool.append(sentence)
    if not pool:
        return ""
    words = [_content_words(s) for s in pool]
    freq = Counter(w for ws in words for w in set(ws))
    scores = [(sum(freq[w] for w in ws) / len(ws)) if ws else 0.0 for ws in words]
    order = sorted(range(len(pool)), key=lambda i: (-scores[i], i))
    picked: list[int] = []
    used = 0
    for i in order:
        n = len(pool[i].split())
        if picked and used + n > max_words:
            continue
        picked.append(i)
        used += n
        if used >= max_words:
            break
    chosen = [pool[i] for i in sorted(picked)]
    text = " ".join(chosen)
    tokens = text.split()
    if len(tokens) > max_words:
        text = " ".join(tokens[:max_words]) + " …"
    return text
