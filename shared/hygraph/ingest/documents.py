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


@dataclass(frozen=True)
class Document:
    """A source document.

    ``title`` is kept apart from ``text``: it is prepended to each chunk when the
    chunk is embedded or shown (a contextual header), never chunked itself.
    """

    id: str
    text: str
    title: str | None = None
    source: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def content_hash(self) -> str:
        """Changes whenever the title or text changes; used to detect edited documents."""
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
