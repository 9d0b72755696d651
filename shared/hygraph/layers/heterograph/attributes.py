"""Important entities → attribute nodes (A): NodeRAG's entity portraits (spec 004 §3.2).

The important entities of the delta graph G1 are its k-core members and its
high-betweenness entities (:func:`~hygraph.graph.algorithms.importance.important_entities`)
mentioned at least ``min_entity_mentions`` times. Each one without an A yet gets a
portrait written from its neighbouring semantic units and relationship statements,
most important neighbour first: by the LLM when one is configured, else (or when a
reply fails) extractively, as the entity's name followed by its most representative
sentences. An A is keyed by its entity, so an entity keeps the portrait of the build
that first found it important (spec §5); one written for this very delta by a build
that was killed later is reused as it is (its ``delta`` tag matches).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from hygraph.graph.heterograph import attribute_id
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import Edge, Node
from hygraph.layers.heterograph.budget import fit_budget

if TYPE_CHECKING:
    from hygraph.graph.heterograph import Decomposition
    from hygraph.layers.heterograph.config import HeterographConfig
    from hygraph.resources import Resources

log = logging.getLogger("hygraph")

#: What an attribute is written from: entity id, name, unit texts, statements, sources.
AttributeInput = tuple[str, str, list[str], list[str], set[str]]


def build_attributes(
    res: Resources, cfg: HeterographConfig, dec: Decomposition, tag: str
) -> tuple[list[Node], list[Edge]]:
    """A nodes and their N–A edges for the delta's important entities that have none yet."""
    from hygraph.graph.algorithms.importance import important_entities

    importance = important_entities(
        dec.g1,
        samples=cfg.betweenness_samples,
        seed=cfg.seed,
        kcore=cfg.kcore,
        rounding=cfg.kcore_rounding,
        min_mentions=cfg.min_entity_mentions,
    )
    chosen = sorted(importance.entities)
    existing = res.store.get_nodes(attribute_id(e) for e in chosen)
    resumed = [n for n in existing.values() if n.data.get("delta") == tag]
    nodes: list[Node] = list(resumed)
    edges = [
        Edge(n.data["entity"], n.id, EdgeKind.ATTRIBUTE_OF, 1.0, {}, tuple(n.sources))
        for n in resumed
    ]
    todo = [e for e in chosen if attribute_id(e) not in existing]
    if not todo:
        return nodes, edges
    inputs = _inputs(res, cfg, dec, todo)
    texts = write_attributes(res, cfg, inputs)
    for (eid, name, _units, _rels, sources), (text, how) in zip(inputs, texts, strict=True):
        aid = attribute_id(eid)
        data = {"entity": eid, "written_by": how, "delta": tag}
        nodes.append(Node(aid, NodeKind.ATTRIBUTE, name, text, data, tuple(sorted(sources))))
        edges.append(Edge(eid, aid, EdgeKind.ATTRIBUTE_OF, 1.0, {}, tuple(sorted(sources))))
    return nodes, edges


def _inputs(
    res: Resources, cfg: HeterographConfig, dec: Decomposition, todo: list[str]
) -> list[AttributeInput]:
    """Each entity's name, its neighbouring S and R texts (within budget) and their sources."""
    g1 = dec.g1
    names = res.store.get_nodes(todo)
    neighbour_nodes = res.store.get_nodes({n for e in todo for n in g1.neighbors(e)})
    inputs: list[AttributeInput] = []
    for eid in todo:
        name = names[eid].name if eid in names else dec.entity_names.get(eid, eid[4:])
        ranked = sorted(
            g1.neighbors(eid),
            key=lambda n: (-sum(g1.nodes[m].get("weight", 1) for m in g1.neighbors(n)), n),
        )  # the authors' importance: the weight of the neighbour's own neighbours
        units = [dec.units[n] for n in ranked if n in dec.units]
        rels = [
            part
            for n in ranked
            if n in dec.relationships
            for part in dec.relationships[n].split("; ")
        ]
        units, rels = fit_budget(cfg, units, rels)
        sources = {s for n in ranked if n in neighbour_nodes for s in neighbour_nodes[n].sources}
        inputs.append((eid, name or eid, units, rels, sources))
    return inputs


def offline_attribute(cfg: HeterographConfig, name: str, units: list[str], rels: list[str]) -> str:
    """The extractive portrait: the name, then the most representative neighbour sentences."""
    from hygraph.extract.extractive import extractive_summary

    body = extractive_summary([*units, *rels], cfg.extractive_words)
    return f"{name}: {body}" if body else name


def write_attributes(
    res: Resources, cfg: HeterographConfig, inputs: list[AttributeInput]
) -> list[tuple[str, str]]:
    """``(text, written_by)`` per input: the LLM's portrait, or an extractive one.

    Without an LLM every portrait is extractive; with one, a failed call or an empty
    reply falls back to extractive for that entity only.
    """
    if res.llm is None:
        return [(offline_attribute(cfg, n, u, r), "extractive") for _, n, u, r, _ in inputs]
    from hygraph.prompts.noderag import attribute_messages, clean_summary

    prompts = [
        attribute_messages(n, u, r, max_words=cfg.attribute_max_words) for _, n, u, r, _ in inputs
    ]
    replies = res.complete_many(prompts, "noderag: attributes")
    out = []
    for (_, name, units, rels, _), reply in zip(inputs, replies, strict=True):
        try:
            if isinstance(reply, BaseException):
                raise reply
            out.append((clean_summary(reply), "llm"))
        except Exception as err:  # noqa: BLE001 - one bad reply must not lose the build
            log.warning("noderag: attribute of %s falls back to extractive (%s)", name, err)
            out.append((offline_attribute(cfg, name, units, rels), "extractive"))
    return out
