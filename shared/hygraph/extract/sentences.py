"""Sentence splitting and semantic units, rule-based (stdlib ``re`` only).

:func:`split_sentences` returns character spans so that callers can map mentions
back into the text; :func:`make_units` turns those spans into the short
self-contained statements that serve as NodeRAG's S nodes; :func:`sentence_starts`
gives the sentence-mode chunker (:mod:`hygraph.ingest.chunker`) the places where it
may start a chunk.

These rules, not a library, split sentences. Checked against libraries (all MIT) on
31 hand-made English cases (titles and reference abbreviations, "No. 3", "U.S.",
initials, decimals, headings) and by comparing boundaries on the 1,890 MuSiQue
paragraphs:

- pysbd 0.3.4 (pure Python, last release 2021): cuts "Vol. | 2", "ca. | 1500",
  "Co. | Ltd." and "5 ft. | 3 in."; 0.08 M chars/s (10.5 s for MuSiQue).
- nupunkt 0.8.0 (pure Python, 2026): cuts "Lt. | Col.", and on MuSiQue "U.S. |
  Senator", "St. | Mary", "W.E.B. | Du Bois", while missing ends such as "World War
  I. A ..."; 3.2 M chars/s.
- sentencex 1.0.32 (a compiled Rust wheel, 2026): 32 M chars/s, but cuts "Vol. | 2",
  before lower-case words ("Say What? | is a ...") and where no space follows
  ("... area.|[citation needed]"), which would start a chunk inside a word.
- blingfire 0.1.8 (2021, a 99 MB wheel of native libraries): cuts "St. | Ives",
  "Rev. | Dr. | King", "Sgt. | Pepper".
- syntok 1.4.4 (2022): 8 of the 31 cases wrong ("Op. | 27", "Rev. | Dr.", "5 ft. | 3").
- semantic-text-splitter 0.33.1 (Rust; chunks by a Hugging Face tokenizer itself):
  Unicode sentence boundaries cut "J. R. | R. Tolkien" and "No. | 3".

These rules get all the cases but one (an ellipsis before a capital, "Wait... What?",
which every library splits too), give exact character offsets, run at about 14 M
chars/s, and only ever put a boundary after whitespace.
"""

from __future__ import annotations

import re

# Abbreviations that precede a name and so never end a sentence.
_NEVER_FINAL = frozenset(
    """mr mrs ms mx dr prof st ste mt ft gen col lt capt cpt sgt maj cmdr adm rev fr hon gov
    sen rep pres supt insp shri smt e.g i.e cf vs v viz approx ca c dept univ assn pron
    translit pvt""".split()
)
# Abbreviations that precede a number: no boundary before a digit.
_BEFORE_NUMBER = frozenset(
    """no nos vol vols fig figs ch chap sec art op pp p pg b d fl r jan feb mar apr jun jul
    aug sep sept oct nov dec""".split()
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
        base = line_match.start()
        spans.extend((base + a, base + b) for a, b in _line_spans(line_match.group()))
    return spans


def _line_spans(line: str) -> list[tuple[int, int]]:
    """The trimmed sentence spans of one line, relative to the line."""
    spans: list[tuple[int, int]] = []
    pos = _HEADING.match(line).end()  # type: ignore[union-attr]
    for end_match in _END.finditer(line, pos):
        after = end_match.end()
        following = _NEXT.match(line, after).group(1)  # type: ignore[union-attr]
        if not _boundary(line, end_match.end(1), end_match.group(1), following):
            continue
        _add(spans, line, 0, pos, end_match.start(2))
        pos = after
    _add(spans, line, 0, pos, len(line))
    return spans


def sentence_starts(text: str) -> list[int]:
    """Offsets in ``text`` where sentences start, for cutting it into chunks.

    The starts of :func:`split_sentences`' spans, except that a line's first sentence
    starts at the line's first non-space character, so a heading marker (``#``, a list
    bullet, ``>``) stays with its line, and that a line continues the sentence of the
    line before it (hard-wrapped text) when only one line break separates them and
    either it starts in lower case or the line before ends with an abbreviation that
    the next word does not follow across a sentence end ("the No." / "3 Dry Dock",
    "Dr." / "Penn", "J. R. R." / "Tolkien"). A list number that :func:`split_sentences`
    makes a sentence of its own ("1. First step") starts its item's sentence. Every
    start but the text's first follows whitespace.
    """
    starts: list[int] = []
    prev_line = ""  # the last line that held a sentence, right-trimmed
    prev_end = 0  # where that line's text ends
    for line_match in _LINE.finditer(text):
        line = line_match.group()
        spans = _line_spans(line)
        if not spans:
            continue
        base = line_match.start()
        first = base + len(line) - len(line.lstrip())
        if not (starts and _continues(text, prev_line, prev_end, first)):
            starts.append(first)
        inner = spans[1:]
        if inner and _LIST_NUMBER.fullmatch(line, *spans[0]):
            inner = spans[2:]  # "1. First step": the number stays with its item
        starts.extend(base + a for a, _ in inner)
        prev_line = line.rstrip()
        prev_end = base + len(prev_line)
    return starts


_TAIL = re.compile(r"([.!?\u2026]+)[\"'\u2019\u201d\u00bb)\]]*$")
_LIST_NUMBER = re.compile(r"\d{1,3}\.")


def _continues(text: str, prev_line: str, prev_end: int, start: int) -> bool:
    """Whether the line starting at ``start`` goes on with the sentence of ``prev_line``."""
    gap = text[prev_end:start]
    if gap.count("\n") != 1 or not gap.isspace():
        return False  # a blank line or a heading marker between them: a new paragraph
    if text[start].islower():
        return True
    tail = _TAIL.search(prev_line)
    if tail is None:
        return False  # no end punctuation: a title or heading line before this one
    following = _NEXT.match(text, start).group(1)  # type: ignore[union-attr]
    return not _boundary(prev_line, tail.end(1), tail.group(1), following)


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
