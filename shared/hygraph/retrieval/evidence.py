"""Typed evidence: what every retrieval method returns.

Whatever a method retrieves (a passage, an entity, an n-ary fact, a community
summary), it arrives as an :class:`Evidence` with the chunk ids it came from, so
citations and passage-level evaluation work the same for every method.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Evidence:
    """One retrieved item.

    ``kind`` says what it is (``chunk``, ``entity``, ``fact`` ...), ``score`` is the
    method's relevance (higher is better; comparable only within one method), and
    ``source_ids`` are the chunk ids that support it, most relevant first.
    """

    kind: str
    text: str
    score: float
    source_ids: tuple[str, ...] = ()
    id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["source_ids"] = list(self.source_ids)
        return out


def ranked_chunk_ids(items: Iterable[Evidence]) -> list[str]:
    """Chunk ids in the order they first appear in the evidence's provenance."""
    return list(dict.fromkeys(cid for item in items for cid in item.source_ids))
