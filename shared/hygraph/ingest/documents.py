"""The two records ingestion produces: :class:`Document` and :class:`Chunk`.

Ids are deterministic so that indexing the same input twice is a no-op and an
interrupted build can resume: a document keeps the id its source gives it (a
.jsonl ``id``, a file's relative path) or else a hash of its content; a chunk's
id is a hash of its document id and its text.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any


def content_hash(*parts: str, length: int = 16) -> str:
    """Hex SHA-256 prefix of the parts joined by NUL (stable across runs and machines)."""
    digest = hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()
    return digest[:length]


#: How the parts of a pre-chunked document are joined into its text.
PART_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Document:
    """A source document.

    ``title`` is kept apart from ``text``: it is prepended to each chunk when the
    chunk is embedded or shown (a contextual header), never chunked itself.

    ``parts`` are chunks the user already made (a framework's nodes or splits of this
    document): when given, they are kept as the chunks, in order, instead of cutting
    ``text`` into token windows; use :meth:`from_parts` to build such a document.
    """

    id: str
    text: str
    title: str | None = None
    source: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    parts: tuple[str, ...] | None = None

    @classmethod
    def from_parts(
        cls,
        id: str,
        parts: list[str] | tuple[str, ...],
        *,
        title: str | None = None,
        source: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Document:
        """A document made of chunks the user already cut (blank parts are dropped)."""
        kept = tuple(p for p in parts if p.strip())
        return cls(id, PART_SEPARATOR.join(kept), title, source, dict(metadata or {}), kept)

    @property
    def content_hash(self) -> str:
        """Changes whenever the title, text or chunking changes (detects edited documents)."""
        if self.parts is not None:
            return content_hash(self.title or "", *self.parts)
        return content_hash(self.title or "", self.text)


@dataclass(frozen=True)
class Chunk:
    """A token window of one document, with where it came from."""

    id: str
    doc_id: str
    index: int
    text: str
    n_tokens: int
    start_char: int
    end_char: int
    start_token: int
    end_token: int

    @staticmethod
    def make_id(doc_id: str, text: str) -> str:
        return "c" + content_hash(doc_id, text)
