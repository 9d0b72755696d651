"""Sentence splitting and semantic units, rule-based (stdlib ``re`` only).

:func:`split_sentences` returns character spans so that callers can map mentions
back into the text; :func:`make_units` turns those spans into the short
self-contained statements that serve as NodeRAG's S nodes.
"""

from __future__ import annotations

import re

# Abbreviations that precede a name and so never end a sentence.
_NEVER_FINAL = frozenset(
    """mr mrs ms mx dr prof st ste mt ft gen col lt capt cpt sgt maj cmdr adm rev fr hon gov
    sen rep pres supt insp shri smt e.g i.e cf vs v viz approx ca c dept univ assn""".split()
)
# Abbreviations that precede a number: no boundary before a digit.
_BEFORE_NUMBER = frozenset(
    """no nos vol vols fig figs ch chap sec art op pp p pg b d fl jan feb mar apr jun jul aug
    sep sept oct nov dec""".split()
)
# Abbreviations that often end a sentence too: a boundary only before a typical sentence opener.
_MAYBE_FINAL = frozenset("inc ltd co corp plc llc etc jr sr bros al".split())
# Words that typically open a sentence; after an ambiguous abbreviation they signal a boundary.
_OPENERS = frozenset(
    """the a an in on at it its he she they we i his her their this that these those there
    after before during when while although though however but and since from by for as
    with following later today one two both many some most several""".split()
)

_LINE = re.compile(r"[^\n]+")
_HEADING = re.compile(r"\s*(?:#{1,6}\s+|[-*+]\s+|>\s*)?")
# A candidate boundary: terminal punctuation, optional closing quotes/brackets, whitespace.
_END = re.compile(r"([.!?\u2026]+)[\"'\u2019\u201d\u00bb)\]]*(\s+)(?=\S)")
_NEXT = re.compile(r"[\"'(\[\u201c\u2018`]*(\S*)")
_DOTTED = re.compile(r"(?:[^\W\d_]\.){2,}$")  # U.S. / e.g. / J.R.R.
_OPEN_PUNCT = "(\"'\u2018\u201c[`"


def _boundary(line: str, dot_end: int, punct: str, following: str) -> bool:
    """Whether ``punct`` (ending at ``dot_end``) closes a sentence, given the next word."""
    nxt = following[:1]
    if not nxt or nxt.islower():
        return not nxt  # "e.g. the", "approx. twenty": the sentence goes on
    if punct[0] != "." or len(punct) > 1:
        return True
    start = line.rfind(" ", 0, dot_end) + 1
    core = line[start : dot_end - 1].lstrip(_OPEN_PUNCT)
    if not core:
        return True
    if core[-1].isdigit():
        return True  # "in 1912." ("1.355" never reaches here: no space after its dot)
    low = core.casefold()
    if len(core) == 1 and core.isupper() and core != "I":
        return False  # an initial: "J. R. R. Tolkien", "George T. Solomon"
    if low in _NEVER_FINAL:
        return False
    if low in _BEFORE_NUMBER:
        return not nxt.isdigit()
    if low in _MAYBE_FINAL or _DOTTED.search(core + "."):
        return following.rstrip(",;:").casefold() in _OPENERS
    return True


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the sentences of ``text`` (end exclusive, trimmed).

    Every non-empty line is split on its own, so a markdown heading or a title line
    is a sentence by itself (a leading ``#``, list bullet or ``>`` is left out of the
    span). Inside a line, ``.``, ``!``, ``?`` or ``…`` (plus closing quotes or
    brackets) followed by whitespace end a sentence unless the next word starts in
    lower case, the word before is a single capital initial ("J. R. R."), a title or
    reference abbreviation ("Mr.", "Dr.", "St.", "e.g.", "i.e."), an abbreviation
    before a number ("No. 7", "Sept. 4"), or an abbreviation that may also end a
    sentence ("Inc.", "U.S.", "Ltd.") not followed by a typical sentence opener
    ("The", "He", "In", ...). Decimals ("1.355") never split: no whitespace
    follows their dot.
    """
    spans: list[tuple[int, int]] = []
    for line_match in _LINE.finditer(text):
        line = line_match.group()
        base = line_match.start()
        pos = _HEADING.match(line).end()  # type: ignore[union-attr]
        for end_match in _END.finditer(line, pos):
            after = end_match.end()
            following = _NEXT.match(line, after).group(1)  # type: ignore[union-attr]
            if not _boundary(line, end_match.end(1), end_match.group(1), following):
                continue
            _add(spans, line, base, pos, end_match.start(2))
            pos = after
        _add(spans, line, base, pos, len(line))
    return spans


def _add(spans: list[tuple[int, int]], line: str, base: int, start: int, end: int) -> None:
    segment = line[start:end]
    stripped = segment.strip()
    if not stripped:
        return
    lead = len(segment) - len(segment.lstrip())
    spans.append((base + start + lead, base + start + lead + len(stripped)))


def _words(text: str) -> int:
    return len(text.split())


def make_units(
    text: str, spans: list[tuple[int, int]], max_words: int = 60, min_words: int = 8
) -> list[str]:
    """Semantic units: sentences, with short ones grouped with their neighbours.

    The rule, in sentence order: the next sentence joins the current unit when the
    current unit or the next sentence is short (fewer than ``min_words`` words,
    8 by default) and the joined unit stays within ``max_words`` words; otherwise
    it starts a new unit. So a short heading or a short first sentence joins the
    sentence after it, a short trailing sentence joins the one before it, and
    two long sentences are never merged. A sentence longer than ``max_words`` is
    a unit by itself (it is not cut). Whitespace inside a unit is collapsed.
    """
    units: list[str] = []
    current: list[str] = []
    count = 0
    for start, end in spans:
        sentence = " ".join(text[start:end].split())
        if not sentence:
            continue
        n = _words(sentence)
        if current and (count < min_words or n < min_words) and count + n <= max_words:
            current.append(sentence)
            count += n
            continue
        if current:
            units.append(" ".join(current))
        current, count = [sentence], n
    if current:
        units.append(" ".join(current))
    return units
