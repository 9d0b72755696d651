"""Pairs of chunks that mention common entities, found through the entity → chunk index.

Comparing the entity sets of all chunk pairs is quadratic in the chunks; going through
each entity's chunks instead touches only the pairs that share at least one entity,
``sum over entities of (chunks mentioning it)²`` at most. On MuSiQue (1,941 chunks,
about 21k mentions) that is under 0.1 million pair updates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping


def shared_entity_pairs(
    chunk_entities: Mapping[str, Iterable[str]],
    entity_chunks: Mapping[str, Collection[str]],
    chunks: Iterable[str],
    *,
    min_shared: int,
    among: Collection[str] | None = None,
) -> dict[tuple[str, str], int]:
    """``(a, b) -> shared entity count`` (``a < b``) for the pairs with a member in ``chunks``.

    ``chunk_entities`` and ``entity_chunks`` are the two directions of the mention index.
    A pair counts when its chunks mention at least ``min_shared`` common entities; the
    partner must be in ``among`` when given (e.g. the chunks already in a layer). Each
    pair's count is the full size of the two chunks' common entity set, so computing a
    pair again (from its other side, or in a later call) gives the same value.
    """
    wanted = list(dict.fromkeys(chunks))
    new = set(wanted)
    counts: Counter[tuple[str, str]] = Counter()
    for chunk in wanted:
        for entity in set(chunk_entities.get(chunk, ())):
            for other in entity_chunks.get(entity, ()):
                if other == chunk or (other in new and other < chunk):
                    continue  # a pair of two given chunks is counted from its smaller id
                if among is not None and other not in among and other not in new:
                    continue
                counts[(chunk, other) if chunk < other else (other, chunk)] += 1
    return {pair: n for pair, n in sorted(counts.items()) if n >= max(1, min_shared)}
