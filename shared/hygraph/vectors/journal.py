"""``WriteJournal``: which points this process wrote to each collection, token to token.

A matrix of a collection's vectors (kept for exact scoring, see
:meth:`hygraph.kept_matrices.KeptMatrices.unit_matrix`) is made at a write token. When the next
build needs it again, reading every vector back costs a third of a one-document insert;
if every write since that token was this process's own, only the points written since
have to be read again. The journal records each write as ``(token before, token after,
ids)``; a write whose token before is not the last one recorded (another process wrote
in between) starts the chain again, so the chain always runs without gaps.
"""

from __future__ import annotations

from collections.abc import Iterable

#: Writes remembered per collection (a bulk build writes in batches of a few hundred).
LIMIT = 100_000


class WriteJournal:
    """The ids written to each collection by this process, as a chain of write tokens."""

    def __init__(self) -> None:
        self._chains: dict[str, list[tuple[str, str, frozenset[str]]]] = {}

    def record(self, name: str, before: str, after: str, ids: Iterable[str]) -> None:
        """One write to ``name``: the token before it, the token it left, the ids written."""
        chain = self._chains.setdefault(name, [])
        if chain and chain[-1][1] != before:
            chain.clear()  # someone else wrote in between: nothing earlier can be trusted
        chain.append((before, after, frozenset(ids)))
        if len(chain) > LIMIT:
            del chain[: len(chain) - LIMIT]

    def since(self, name: str, token: str, current: str) -> set[str] | None:
        """The ids written to ``name`` after ``token`` up to ``current`` (the collection's
        token now), or None when some write between them was not recorded here."""
        if token == current:
            return set()
        chain = self._chains.get(name, [])
        if not chain or chain[-1][1] != current:
            return None
        for n, (before, _, _) in enumerate(chain):
            if before == token:
                return set().union(*(ids for _, _, ids in chain[n:]))
        return None

    def forget(self, name: str) -> None:
        self._chains.pop(name, None)
