"""Keeping the layer right after a delete, and removing it (reset).

A deleted document takes its chunks' S and R nodes, their edges, and every A or H
whose every source is gone with it (the store drops what lost all provenance). What
survives with fewer sources is repaired here: an R loses the deleted chunks'
statements, an S its weight, and an A or H that summarised deleted text is written
again from the neighbours it still has (one LLM call each when an LLM is configured,
else extractively) and embedded again. A reset removes the whole layer (S, R, A, H,
O nodes, ``nr_*`` edges, vectors, progress marks) but not the shared entities.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hygraph.extract.extractive import extractive_summary
from hygraph.graph.heterograph import TYPE_KINDS, node_type
from hygraph.graph.kinds import HETEROGRAPH_STRUCTURAL, EdgeKind, NodeKind
from hygraph.layers.heterograph.attributes import offline_attribute, write_attributes
from hygraph.layers.heterograph.config import LAYER_TASK, NODE_COLLECTION
from hygraph.layers.heterograph.semantic import embed_nodes

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult, Node
    from hygraph.layers.heterograph.config import HeterographConfig
    from hygraph.resources import Resources

log = logging.getLogger("hygraph")

#: The texts an A (its entity's neighbours) or an H (its members) is written from.
SOURCE_KINDS = {
    NodeKind.ATTRIBUTE: (NodeKind.UNIT, NodeKind.RELATIONSHIP),
    NodeKind.HIGH_LEVEL: (NodeKind.UNIT, NodeKind.ATTRIBUTE),
}


def delete(res: Resources, cfg: HeterographConfig, removed: DeleteResult) -> None:
    """Drop the vectors of removed nodes; repair the R, S, A and H nodes that lost sources."""
    gone = set(removed.node_ids)
    res.delete_vectors(NODE_COLLECTION, [n for n in gone if node_type(n) in ("S", "A", "H")])
    touched = res.store.get_nodes(removed.touched_node_ids)
    lost = set(removed.chunk_ids)
    repaired = []
    for node in touched.values():
        if node.kind == NodeKind.RELATIONSHIP:
            statements = {c: s for c, s in node.data.get("statements", {}).items() if c not in lost}
            texts = list(dict.fromkeys(t for c in sorted(statements) for t in statements[c]))
            node.data = {**node.data, "statements": statements, "weight": len(statements)}
            node.text = "; ".join(texts)
            repaired.append(node)
        elif node.kind == NodeKind.UNIT:
            node.data = {**node.data, "weight": len(node.sources)}
            repaired.append(node)
    res.store.upsert_nodes(repaired)
    stale = [n for n in touched.values() if n.kind in SOURCE_KINDS]
    if stale:
        rewrite(res, cfg, stale)


def _remaining_texts(res: Resources, node: Node) -> list[str]:
    """The texts an A or H can still be written from (its entity's or its own neighbours)."""
    if node.kind == NodeKind.ATTRIBUTE:
        entity = node.data.get("entity", "")
        near = [e.src if e.dst == entity else e.dst for e in res.store.edges_of(entity)]
    else:
        near = [
            e.dst if e.src == node.id else e.src
            for e in res.store.edges_of(node.id, EdgeKind.MEMBER)
        ]
    kinds = SOURCE_KINDS[NodeKind(node.kind)]
    return [
        n.text or ""
        for n in res.store.get_nodes(near).values()
        if n.kind in kinds and n.id != node.id
    ]


def rewrite(res: Resources, cfg: HeterographConfig, stale: Sequence[Node]) -> None:
    """Write stale A and H nodes again from the neighbours they still have, and embed them.

    A nodes go first and are stored before any H is planned: an H is written from its
    members, A nodes among them, so it reads their new text. Done the other way, a
    delete replayed after a kill between the two would give an H other text than an
    uninterrupted delete. A node with no neighbour text left keeps its text.
    """
    for kind, letter in ((NodeKind.ATTRIBUTE, "A"), (NodeKind.HIGH_LEVEL, "H")):
        group = [n for n in stale if n.kind == kind]
        plans = [(node, texts) for node in group if (texts := _remaining_texts(res, node))]
        if not plans:
            continue
        written = _write(res, cfg, kind, plans)
        for (node, _), (text, how) in zip(plans, written, strict=True):
            node.text = text
            node.data = {**node.data, "written_by": how}
        refreshed = [node for node, _ in plans]
        res.store.upsert_nodes(refreshed)
        embed_nodes(res, [n.id for n in refreshed], [n.text or "" for n in refreshed], letter)


def _write(
    res: Resources, cfg: HeterographConfig, kind: NodeKind, plans: list[tuple[Node, list[str]]]
) -> list[tuple[str, str]]:
    """``(text, written_by)`` per plan: by the LLM when configured, else extractively."""
    if res.llm is None:
        if kind == NodeKind.ATTRIBUTE:
            return [(offline_attribute(cfg, n.name or "", t, []), "extractive") for n, t in plans]
        return [(extractive_summary(t, cfg.extractive_words), "extractive") for _, t in plans]
    if kind == NodeKind.ATTRIBUTE:
        inputs = [
            (node.data.get("entity", ""), node.name or "", texts, [], set())
            for node, texts in plans
        ]
        return write_attributes(res, cfg, inputs)
    return _rewrite_elements(res, cfg, plans)


def _rewrite_elements(
    res: Resources, cfg: HeterographConfig, plans: list[tuple[Node, list[str]]]
) -> list[tuple[str, str]]:
    """Elements written again by the LLM from their remaining members: the new element
    with the same title, else the first; extractive if the call or its reply fails."""
    from hygraph.prompts.noderag import high_level_messages, parse_high_level_elements

    replies = res.complete_many(
        [high_level_messages(texts) for _, texts in plans], "noderag: rewrite elements"
    )
    out = []
    for (node, texts), reply in zip(plans, replies, strict=True):
        try:
            if isinstance(reply, BaseException):
                raise reply
            found = [(t, d) for t, d in parse_high_level_elements(reply) if d.strip()]
        except Exception as err:  # noqa: BLE001 - the element stays usable either way
            log.warning("noderag: element %s falls back to extractive (%s)", node.id, err)
            found = []
        if not found:
            out.append((extractive_summary(texts, cfg.extractive_words), "extractive"))
            continue
        title = (node.name or "").casefold()
        same = [d for t, d in found if t.strip().casefold() == title]
        out.append(((same or [found[0][1]])[0].strip(), "llm"))
    return out


def reset(res: Resources) -> None:
    """Remove the whole layer (nodes, ``nr_*`` edges, vectors, progress marks)."""
    nodes = [
        n.id
        for letter, kind in TYPE_KINDS.items()
        if letter != "N"  # entities belong to the shared graph
        for n in res.store.nodes_of_kind(kind)
    ]
    edges = [
        (e.src, e.dst, e.kind)
        for kind in (*HETEROGRAPH_STRUCTURAL, EdgeKind.SEMANTIC)
        for e in res.store.iter_edges(kind)
    ]
    with res.store.transaction():
        res.store.delete_nodes(nodes)
        res.store.delete_edges(edges)
        res.store.clear_progress(LAYER_TASK)
    res.delete_vectors(NODE_COLLECTION, [n for n in nodes if node_type(n) in "SAH"])
