"""Exact entry points: whole-word phrase matching of question terms against node names.

NodeRAG enters its graph not only by vector similarity but also at the entity (N) and
title (O) nodes whose names contain a term of the question (spec 004 §4.1, §8 #8):
the term, lower-cased and split on whitespace, must occur in the name as a run of
whole words (``"nobel"`` matches ``"NOBEL PRIZE"``, ``"nob"`` does not). One term can
hit many nodes. ``equal=True`` asks for the whole name instead.

A regex over every name per term would scan tens of thousands of names per query;
an inverted index from word to names narrows the candidates to those holding every
word of the term, and only those are checked with the regex.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_WORD = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())


class ExactMatcher:
    """Finds the node ids whose names contain a question term as whole words.

    Args:
        names: node id → name (text matched against).
    """

    def __init__(self, names: Mapping[str, str]):
        self.names = {node_id: " ".join(_words(name)) for node_id, name in names.items()}
        self.postings: dict[str, set[str]] = {}
        for node_id, normal in self.names.items():
            for word in set(normal.split()):
                self.postings.setdefault(word, set()).add(node_id)

    def match(self, terms: Iterable[str], *, equal: bool = False) -> list[str]:
        """Ids of the nodes matched by any of ``terms`` (sorted, no duplicates)."""
        found: set[str] = set()
        for term in terms:
            words = _words(term)
            if not words:
                continue
            candidates = set.intersection(*(self.postings.get(w, set()) for w in words))
            phrase = " ".join(words)
            if equal:
                found.update(c for c in candidates if self.names[c] == phrase)
                continue
            pattern = re.compile(rf"(?:^| ){re.escape(phrase)}(?: |$)")
            found.update(c for c in candidates if pattern.search(self.names[c]))
        return sorted(found)
