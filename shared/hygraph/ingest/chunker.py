"""Token-window chunking of documents.

A document's tokens are cut into windows of ``size`` tokens that start every
``size - overlap`` tokens; the last window ends at the last token and may be
shorter. A chunk's text is the slice of the document's original text from its
first token's first character to its last token's last character, so nothing
is normalised, re-joined or lost (whitespace between chunks that belongs to no
token is the only text outside every chunk).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from hygraph.errors import ConfigError
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


def _validate(size: int, overlap: int) -> None:
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


def chunk_document(
    doc: Document,
    *,
    size: int = DEFAULT_SIZE,
    overlap: int = DEFAULT_OVERLAP,
    tokenizer: Tokenizer | None = None,
) -> list[Chunk]:
    """Cut ``doc.text`` into overlapping token windows; ``[]`` when it has no tokens.

    ``doc.title`` is not chunked (it is prepended at embedding time).
    Raises :class:`ConfigError` unless ``size >= 1`` and ``0 <= overlap < size``.
    """
    _validate(size, overlap)
    tok = tokenizer if tokenizer is not None else default_tokenizer()
    if doc.parts is not None:
        return _given_chunks(doc, tok)
    text = doc.text
    starts, ends = tok.offset_arrays(text)
    chunks: list[Chunk] = []
    for index, (start, end) in enumerate(window_bounds(len(starts), size, overlap)):
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
) -> Iterator[Chunk]:
    """Chunks of each document in turn (lazily). Settings are validated at the call."""
    _validate(size, overlap)
    tok = tokenizer if tokenizer is not None else default_tokenizer()

    def generate() -> Iterator[Chunk]:
        for doc in docs:
            yield from chunk_document(doc, size=size, overlap=overlap, tokenizer=tok)

    return generate()


@dataclass(frozen=True)
class Chunker:
    """Chunking settings as one value: ``Chunker(size=600, overlap=50)(doc)``.

    ``tokenizer=None`` means :func:`default_tokenizer`, resolved at call time.
    """

    size: int = DEFAULT_SIZE
    overlap: int = DEFAULT_OVERLAP
    tokenizer: Tokenizer | None = None

    def __post_init__(self) -> None:
        _validate(self.size, self.overlap)

    def __call__(self, doc: Document) -> list[Chunk]:
        return chunk_document(doc, size=self.size, overlap=self.overlap, tokenizer=self.tokenizer)

    def chunk_many(self, docs: Iterable[Document]) -> Iterator[Chunk]:
        return chunk_documents(docs, size=self.size, overlap=self.overlap, tokenizer=self.tokenizer)
