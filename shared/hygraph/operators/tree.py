"""Tree operators: retrieval over a summary tree (RAPTOR, RAPTOR-K).

``tree.collapsed`` is the retrieval the 002 framework uses for both methods (N1 VDB
over every tree node, [A Exp.4]): the question's vector is compared with every node
of the tree at once, chunks (level 0, the ``chunks`` collection) and summaries of every
level (the tree's collection), so the results can mix levels; the best ``k`` are kept
in order while their texts fit ``max_tokens`` (RAPTOR's collapsed-tree rule: stop at the
first node that does not fit). ``tree.traverse`` is RAPTOR's other mode: the best
``k`` roots, then the best ``k`` among the children of those chosen, level by level
down to the chunks.

Each chosen node becomes evidence: a chunk as a passage, a summary with its text and,
as provenance, the chunks below it ordered by cosine to the question, so the passage
ranking (the order chunks first appear in the evidence) puts a summary's most
relevant chunk first. Evidence metadata carries the node's ``level`` (0 for chunks),
the layer distribution the 002 paper reports (Table 13).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from hygraph.layers.tree import SUMMARY_PREFIX
from hygraph.operators.registry import operator
from hygraph.operators.state import Scored
from hygraph.resources import CHUNK_COLLECTION
from hygraph.retrieval.evidence import Evidence

if TYPE_CHECKING:
    from hygraph.graph.store import Node
    from hygraph.operators.state import State
    from hygraph.resources import Resources


def _ranked_sources(res: Resources, query: np.ndarray, sources: list[str]) -> tuple[str, ...]:
    """``sources`` ordered by cosine of their chunk vectors to ``query`` (ties: by id)."""
    stored = res.stored_vectors(CHUNK_COLLECTION, sorted(sources))
    q = np.asarray(query, dtype=np.float32).ravel()
    score = {c: float(np.asarray(v, dtype=np.float32) @ q) for c, v in stored.items()}
    return tuple(sorted(sources, key=lambda c: (-score.get(c, -2.0), c)))


def _evidence(
    res: Resources, query: np.ndarray, hits: list[tuple[str, float]], tree: str
) -> list[Evidence]:
    """Evidence for ranked tree node ids (chunks or summaries), in the same order."""
    summaries = res.store.get_nodes([i for i, _ in hits if not _is_chunk(i)])
    chunk_items = {
        e.id: e for e in res.chunk_evidence([(i, s) for i, s in hits if i not in summaries])
    }
    out = []
    for node_id, score in hits:
        node = summaries.get(node_id)
        if node is None:
            item = chunk_items.get(node_id)
            if item is not None:
                item.metadata = {**item.metadata, "level": 0, "tree": tree}
                out.append(item)
            continue
        meta = {"level": node.data.get("level"), "tree": tree,
                "written_by": node.data.get("written_by"), "size": len(node.sources)}  # fmt: skip
        out.append(Evidence("tree_summary", node.text or "", float(score),
                            _ranked_sources(res, query, list(node.sources)), id=node.id,
                            metadata=meta))  # fmt: skip
    return out


def _is_chunk(node_id: str) -> bool:
    return not node_id.startswith(SUMMARY_PREFIX)


def _fit(res: Resources, items: list[Evidence], max_tokens: int) -> list[Evidence]:
    """The leading items whose texts fit ``max_tokens`` together (0: no limit).

    The cut is :func:`hygraph.retrieval.budget.fit_budget`'s: the first item is kept even
    when it alone is longer (RAPTOR's loop would return nothing).
    """
    from hygraph.ingest.tokenizer import default_tokenizer
    from hygraph.retrieval.budget import fit_budget

    if max_tokens <= 0 or not items:
        return items
    counts = default_tokenizer().count_many([i.text for i in items])
    cost = dict(zip((id(i) for i in items), counts, strict=True))
    return fit_budget(items, max_tokens, lambda item: cost[id(item)])


def _keep(state: State, items: list[Evidence], into: str) -> None:
    state.evidence[into] = items
    state.nodes = [
        Scored(i.id or "", i.score, cosine=i.score, data={"level": i.metadata.get("level")})
        for i in items
    ]


@operator("tree.collapsed", needs=("chunks",))
def collapsed(
    res: Resources,
    state: State,
    *,
    tree: str = "tree",
    k: int = 4,
    max_tokens: int = 3500,
    into: str = "tree",
) -> None:
    """The ``k`` tree nodes nearest the question over every level, within ``max_tokens``.

    ``tree`` names the tree layer (``tree`` or ``tree-kmeans``).
    """
    layer = res.layer(tree)
    query = state.query_vector(res)
    hits = res.search_vectors(CHUNK_COLLECTION, query, k)
    hits += res.search_vectors(layer.collection, query, k)
    ranked = sorted(((h.id, h.score) for h in hits), key=lambda h: (-h[1], h[0]))[:k]
    _keep(state, _fit(res, _evidence(res, query, ranked, tree), max_tokens), into)


def _roots_and_children(
    res: Resources, layer: Any
) -> tuple[list[str], dict[str, list[str]], dict[str, Node]]:
    """Nodes without a parent (summaries and chunks), each summary's members, the summaries."""
    nodes = {n.id: n for n in layer.tree_nodes(res)}
    children = {n.id: list(n.data.get("members", [])) for n in nodes.values()}
    has_parent = {m for members in children.values() for m in members}
    roots = [i for i in nodes if i not in has_parent]
    roots += [c for c in res.store.chunk_ids() if c not in has_parent]
    return roots, children, nodes


def _best(
    res: Resources, layer: Any, query: np.ndarray, ids: list[str], k: int
) -> list[tuple[str, float]]:
    """The ``k`` of ``ids`` (chunks or summaries) nearest the question."""
    summaries = [i for i in ids if not _is_chunk(i)]
    chunks = [i for i in ids if _is_chunk(i)]
    hits = res.search_vectors(layer.collection, query, k, ids=summaries) if summaries else []
    hits += res.search_vectors(CHUNK_COLLECTION, query, k, ids=chunks) if chunks else []
    return sorted(((h.id, h.score) for h in hits), key=lambda h: (-h[1], h[0]))[:k]


@operator("tree.traverse", needs=("chunks",))
def traverse(
    res: Resources,
    state: State,
    *,
    tree: str = "tree",
    k: int = 4,
    max_tokens: int = 3500,
    into: str = "tree",
) -> None:
    """Tree traversal: the ``k`` best roots, then the ``k`` best children, down to the chunks.

    Roots are the nodes without a parent (the top level, and nodes of clusters too
    small for a parent). The chosen nodes, level by level, fill ``max_tokens``.
    """
    layer = res.layer(tree)
    query = state.query_vector(res)
    candidates, children, _ = _roots_and_children(res, layer)
    chosen: list[tuple[str, float]] = []
    seen: set[str] = set()
    while candidates:
        best = [h for h in _best(res, layer, query, candidates, k) if h[0] not in seen]
        chosen += best
        seen.update(i for i, _ in best)
        below = [m for i, _ in best for m in children.get(i, [])]
        candidates = [m for m in dict.fromkeys(below) if m not in seen]
    _keep(state, _fit(res, _evidence(res, query, chosen, tree), max_tokens), into)
