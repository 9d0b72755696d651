"""Chunking of documents: whole sentences up to a token budget, or plain token windows.

Two modes, each cutting a document's tokens (those of the tokenizer the chunker is
given, the embedder's) into chunks of at most ``size`` tokens:

- ``"sentences"`` (the default for new indexes): chunks are runs of whole sentences
  of at most ``size`` tokens, evened out so that no short last chunk is left over
  (see :func:`sentence_bounds`). Sentence starts come from
  :func:`hygraph.extract.sentences.sentence_starts`, the project's own rules (stdlib
  ``re``), kept over pysbd, nupunkt, sentencex, blingfire, syntok and
  semantic-text-splitter after measuring them (that module's docstring says how):
  each library cut some abbreviation the rules keep ("Vol. 2", "U.S. Senator", "St.
  Ives", "No. 3"), and the fastest also splits where no whitespace follows, which
  would start a chunk inside a word. So "No. 3", "U.S.", "Dr.", "e.g.", "3.5" and "J.
  R. R. Tolkien" never straddle two chunks. The next chunk repeats the previous
  chunk's last whole sentence(s) when together they hold at most ``overlap`` tokens
  and leave room for the sentence after them (no overlap when the last sentence alone
  is longer). A sentence longer than ``size`` tokens is cut between words (at
  whitespace, and not right after an abbreviation such as "No." unless it must), its
  first piece going with the sentences before it when there is room; its pieces are
  never repeated as overlap. Only a single word longer than ``size`` tokens is cut
  inside, between tokens.
- ``"tokens"`` (what indexes made before sentence mode use): windows of ``size``
  tokens that start every ``size - overlap`` tokens; the last window ends at the last
  token and may be shorter. A window may start or end inside a word.

In both modes a chunk's text is the slice of the document's original text from its
first token's first character to its last token's last character, so nothing is
normalised, re-joined or lost (whitespace between chunks that belongs to no token is
the only text outside every chunk), and ``n_tokens``, ``start_token`` and
``end_token`` index the document's tokens.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from hygraph.errors import ConfigError
from hygraph.extract.sentences import sentence_starts
from hygraph.ingest.documents import PART_SEPARATOR, Chunk, Document
from hygraph.ingest.tokenizer import Tokenizer, default_tokenizer

# Defaults from the papers (source: "paper"): LightRAG (Guo et al., 2024) chunks at
# 1200 tokens with a 100-token overlap, HyperGraphRAG (Luo et al., 2025) keeps that
# setting, and it is also the GraphRAG library's default. Their tokens are tiktoken's;
# ours are WordPiece tokens of the bundled embedder, a little finer-grained.
DEFAULT_SIZE = 1200
DEFAULT_OVERLAP = 100


#: The papers' chunking (HyperGraphRAG, HiRAG, NodeRAG), for embedders that read that much.
PAPER_CHUNK_SIZE = 1200
PAPER_CHUNK_OVERLAP = 100
#: Room left in the embedder's window for the title line and the model's special tokens.
HEADER_TOKENS = 16

#: Chunking modes: whole sentences up to ``size`` tokens, or plain token windows.
MODES = ("sentences", "tokens")
#: The mode of a new index (one whose manifest predates modes reads as "tokens", the
#: chunking it was built with: hygraph.manifest.LEGACY_CHUNK_MODE).
DEFAULT_MODE = "sentences"


def default_chunking(window: int | None) -> tuple[int, int]:
    """``(size, overlap)`` for a new index whose embedder reads ``window`` tokens.

    The papers' 1200/100 when the embedder reads at least 1,200 tokens (or its window is
    unknown); otherwise chunks that fit the window with room for the title line that is
    embedded with them (``HEADER_TOKENS``), with the papers' overlap ratio (1/12), so
    nothing a chunk holds is cut off before it is embedded. The bundled MiniLM reads 256
    word pieces: 240/20.
    """
    if not window or window >= PAPER_CHUNK_SIZE:
        return PAPER_CHUNK_SIZE, PAPER_CHUNK_OVERLAP
    size = max(16, window - HEADER_TOKENS)
    return size, max(1, size * PAPER_CHUNK_OVERLAP // PAPER_CHUNK_SIZE)


def _validate(size: int, overlap: int, mode: str = DEFAULT_MODE) -> None:
    if mode not in MODES:
        raise ConfigError(f"chunk mode must be one of {', '.join(MODES)} (got {mode!r})")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ConfigError(f"chunk size must be an integer >= 1 tokens (got {size!r})")
    if isinstance(overlap, bool) or not isinstance(overlap, int) or overlap < 0:
        raise ConfigError(f"chunk overlap must be an integer >= 0 tokens (got {overlap!r})")
    if overlap >= size:
        raise ConfigError(
            f"chunk overlap must be smaller than chunk size (got overlap={overlap}, size={size})"
        )


def window_bounds(n_tokens: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """``[start, end)`` token ranges of the windows over ``n_tokens`` tokens.

    Starts are ``0, step, 2*step, ...`` with ``step = size - overlap``; each window
    ends at ``min(start + size, n_tokens)`` and the list stops after the first
    window that reaches ``n_tokens``. Consecutive windows therefore share exactly
    ``overlap`` tokens, and the last one, though possibly shorter than ``size``,
    always holds at least one token its predecessor does not.
    """
    _validate(size, overlap)
    step = size - overlap
    bounds: list[tuple[int, int]] = []
    start = 0
    while start < n_tokens:
        end = min(start + size, n_tokens)
        bounds.append((start, end))
        if end == n_tokens:
            break
        start += step
    return bounds


def sentence_bounds(
    text: str, starts: Sequence[int], ends: Sequence[int], size: int, overlap: int
) -> list[tuple[int, int]]:
    """``[start, end)`` token ranges of the sentence-mode chunks of ``text``.

    ``starts`` and ``ends`` are the character spans of ``text``'s tokens (as
    :meth:`Tokenizer.offset_arrays` gives them). A token belongs to the sentence in
    which it starts. A chunk may end where a sentence ends or, inside a sentence
    longer than ``size``, where :func:`_long_sentence_cuts` allows. Each chunk ends at
    such a place within ``size`` tokens, the one nearest to an even share of what is
    left (the tokens from its start to the end, overlaps counted, over the fewest
    chunks that could hold them), so a 250-token text gives two chunks of about 125
    tokens, not 240 and 10, and a long text chunks of nearly ``size``. The next chunk
    starts with the longest run of the previous chunk's last whole sentences that
    holds at most ``overlap`` tokens and leaves room for what follows (none when the
    previous chunk ended inside a sentence), so it always adds tokens its predecessor
    lacks.
    """
    _validate(size, overlap)
    n = len(starts)
    if n == 0:
        return []
    found = {bisect_left(starts, char) for char in sentence_starts(text)}
    found.discard(n)
    found.add(0)
    bounds = array("q", sorted(found))  # the first token of each sentence, then n
    bounds.append(n)
    cuts = array("q")  # where a chunk may end: consecutive cuts are <= size tokens apart
    for a, b in zip(bounds, bounds[1:], strict=False):
        if b - a > size:
            cuts.extend(_long_sentence_cuts(text, starts, ends, a, b, size))
        cuts.append(b)
    chunks: list[tuple[int, int]] = []
    start = 0
    while True:
        end = cuts[bisect_right(cuts, start + size) - 1]  # as much as fits
        if end < n:  # even out what is left instead of leaving a short last chunk
            left = n - start
            parts = -(-(left - overlap) // (size - overlap))  # chunks it takes at least
            target = start + -(-(left + (parts - 1) * overlap) // parts)
            j = bisect_left(cuts, target)
            near = [c for c in (cuts[j - 1], cuts[j]) if start < c <= end]
            if near:
                end = min(near, key=lambda c: abs(c - target))
        chunks.append((start, end))
        if end == n:
            return chunks
        previous, start = start, end
        if overlap and bounds[bisect_left(bounds, end)] == end:  # it ends a sentence
            following = cuts[bisect_right(cuts, end)]  # the least the next chunk must hold
            lowest = max(previous + 1, end - overlap, following - size)
            start = bounds[bisect_left(bounds, lowest)]


_SPACE = re.compile(r"\s")


def _long_sentence_cuts(
    text: str, starts: Sequence[int], ends: Sequence[int], a: int, b: int, size: int
) -> list[int]:
    """Where a chunk may end inside the over-long sentence of tokens ``[a, b)``.

    Between words (a word: tokens with no whitespace between them), so that from
    ``a`` to ``b`` no two consecutive places are more than ``size`` tokens apart. A
    word ending in ``.`` inside a sentence is an abbreviation or an initial, so it
    stays with the words after it ("No. 3", "J. R. R. Tolkien", "Dr. Penn") unless
    together they are longer than ``size``; only a single word longer than ``size``
    tokens is cut between tokens, where possible not between two tokens of one
    character (a Hangul syllable is three).
    """
    words = [a]
    words.extend(j for j in range(a + 1, b) if _SPACE.search(text, ends[j - 1], starts[j]))
    words.append(b)
    cuts: list[int] = []
    first = 0  # index in `words` of the first word of the current phrase
    for k in range(1, len(words)):
        if k < len(words) - 1 and text[ends[words[k] - 1] - 1] == ".":
            continue  # "No." + "3": one phrase
        if words[k] - words[first] <= size:
            cuts.append(words[k])
        else:  # too long to keep together: between its words, a giant word between tokens
            for w0, w1 in zip(words[first:k], words[first + 1 : k + 1], strict=True):
                while w1 - w0 > size:
                    cut = w0 + size
                    while cut > w0 + 1 and starts[cut] < ends[cut - 1]:
                        cut -= 1
                    cuts.append(cut)
                    w0 = cut
                cuts.append(w1)
        first = k
    cuts.pop()  # b: the sentence's end, which the caller adds
    return cuts


def chunk_document(
    doc: Document,
    *,
    size: int = DEFAULT_SIZE,
    overlap: int = DEFAULT_OVERLAP,
    tokenizer: Tokenizer | None = None,
    mode: str = DEFAULT_MODE,
) -> list[Chunk]:
    """Cut ``doc.text`` into chunks (see the module docstring); ``[]`` when it has no tokens.

    ``mode`` is ``"sentences"`` (whole sentences up to ``size`` tokens, the default)
    or ``"tokens"`` (overlapping token windows). ``doc.title`` is not chunked (it is
    prepended at embedding time); a pre-chunked document (``doc.parts``) keeps its
    parts as they are. Raises :class:`ConfigError` unless ``size >= 1``,
    ``0 <= overlap < size`` and ``mode`` is one of :data:`MODES`.
    """
    _validate(size, overlap, mode)
    tok = tokenizer if tokenizer is not None else default_tokenizer()
    if doc.parts is not None:
        return _given_chunks(doc, tok)
    text = doc.text
    starts, ends = tok.offset_arrays(text)
    if mode == "tokens":
        bounds = window_bounds(len(starts), size, overlap)
    else:
        bounds = sentence_bounds(text, starts, ends, size, overlap)
    chunks: list[Chunk] = []
    for index, (start, end) in enumerate(bounds):
        start_char = starts[start]
        piece = text[start_char : ends[end - 1]]
        chunks.append(_chunk(doc.id, index, piece, start_char, start, end - start))
    return chunks


def _chunk(doc_id: str, index: int, text: str, char: int, token: int, n_tokens: int) -> Chunk:
    """A chunk of ``doc_id`` starting at character ``char`` and token ``token``."""
    return Chunk(
        id=Chunk.make_id(doc_id, text),
        doc_id=doc_id,
        index=index,
        text=text,
        n_tokens=n_tokens,
        start_char=char,
        end_char=char + len(text),
        start_token=token,
        end_token=token + n_tokens,
    )


def _given_chunks(doc: Document, tok: Tokenizer) -> list[Chunk]:
    """The user's own chunks of a pre-chunked document, located in its joined text."""
    chunks: list[Chunk] = []
    char = token = 0
    for index, piece in enumerate(doc.parts or ()):
        n = tok.count(piece)
        chunks.append(_chunk(doc.id, index, piece, char, token, n))
        char += len(piece) + len(PART_SEPARATOR)
        token += n
    return chunks


def chunk_documents(
    docs: Iterable[Document],
    *,
    size: int = DEFAULT_SIZE,
    overlap: int = DEFAULT_OVERLAP,
    tokenizer: Tokenizer | None = None,
    mode: str = DEFAULT_MODE,
) -> Iterator[Chunk]:
    """Chunks of each document in turn (lazily). Settings are validated at the call."""
    _validate(size, overlap, mode)
    tok = tokenizer if tokenizer is not None else default_tokenizer()

    def generate() -> Iterator[Chunk]:
        for doc in docs:
            yield from chunk_document(doc, size=size, overlap=overlap, tokenizer=tok, mode=mode)

    return generate()


@dataclass(frozen=True)
class Chunker:
    """Chunking settings as one value: ``Chunker(size=600, overlap=50)(doc)``.

    ``tokenizer=None`` means :func:`default_tokenizer`, resolved at call time;
    ``mode="tokens"`` gives the token windows of indexes made before sentence mode.
    """

    size: int = DEFAULT_SIZE
    overlap: int = DEFAULT_OVERLAP
    tokenizer: Tokenizer | None = None
    mode: str = DEFAULT_MODE

    def __post_init__(self) -> None:
        _validate(self.size, self.overlap, self.mode)

    def __call__(self, doc: Document) -> list[Chunk]:
        return chunk_document(
            doc, size=self.size, overlap=self.overlap, tokenizer=self.tokenizer, mode=self.mode
        )

    def chunk_many(self, docs: Iterable[Document]) -> Iterator[Chunk]:
        return chunk_documents(
            docs, size=self.size, overlap=self.overlap, tokenizer=self.tokenizer, mode=self.mode
        )
