"""Bridge items: one entity away from the best items, ranked by cosine to the question.

A two-hop question ("who married the singer of X?") names the first hop; the passage
that answers it is about an entity the first passage names and the question does not
(the *bridge*: the singer). Given the best items a method retrieved (HyperGraphRAG's
facts, NodeRAG's units), their member entities that the question does not name are
bridges; the other items of those entities, scored by the cosine of their stored
vectors to the question, lead to the passage the question never names. Entities with
more than ``fanout`` items are hubs (a year, a country) and are skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hygraph.index import GraphIndex


def bridge_items(
    index: GraphIndex,
    collection: str,
    query: Any,
    top: Sequence[str],
    *,
    members_of: Callable[[str], Iterable[str]],
    items_of: Callable[[str], Sequence[str]],
    asked: str,
    fanout: int,
    seen: set[str],
    used: set[str],
) -> list[str]:
    """Items of the bridge entities of ``top`` not in ``seen``, best cosine first.

    ``asked`` is the case-folded question (an entity whose name occurs in it is no
    bridge); ``used`` collects the entities tried, so a later hop skips them.
    """
    bridges = list(dict.fromkeys(e for item in top for e in members_of(item)))
    nodes = index.store.get_nodes(e for e in bridges if e not in used)
    candidates: dict[str, None] = {}
    for entity_id, node in nodes.items():
        used.add(entity_id)
        if (node.name or "").casefold() in asked:
            continue
        items = items_of(entity_id)
        if len(items) <= fanout:
            candidates.update((i, None) for i in items if i not in seen)
    # Cosines of the stored vectors (no re-embedding), best first.
    hits = index.search_vectors(collection, query, len(candidates), ids=list(candidates))
    return [h.id for h in hits]
