"""Communities → high-level elements (H) with titles (O), and their semantic matching.

Single-level Leiden (graspologic's) runs on G2, the delta graph G1 plus its new
attribute nodes (spec 004 §3.3). Each community with S or A members yields
high-level elements: the LLM's ``(title, description)`` pairs over the members'
texts, or one extractive element titled by the community's most connected entities
(offline, or when the reply fails). An H is keyed by its text and an O by its
case-folded title, so equal insights from two communities are one node.

Each H is then linked to the S/A of its community that share its K-means cluster
(Algorithm 2, :func:`~hygraph.graph.algorithms.clustering.link_high_level`), not to
the whole community, so the walk from an insight reaches the members it is about.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from hygraph.graph.heterograph import high_level_id, overview_id
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import Edge, Node
from hygraph.layers.heterograph.budget import fit_budget

if TYPE_CHECKING:
    from hygraph.graph.heterograph import Decomposition
    from hygraph.layers.heterograph.config import HeterographConfig
    from hygraph.resources import Resources

log = logging.getLogger("hygraph")

#: One community to summarise: its id, S/A members by weight, their texts, their sources.
Group = tuple[int, list[str], list[str], set[str]]


@dataclass
class Elements:
    """What the communities produced: H and O nodes, H–O edges, each H's community."""

    high: list[Node] = field(default_factory=list)
    titles: list[Node] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    community: dict[str, int] = field(default_factory=dict)


def detect_communities(
    cfg: HeterographConfig, dec: Decomposition, attr_edges: Sequence[Edge]
) -> dict[str, int]:
    """Single-level Leiden on G2 = the delta graph plus its new attribute nodes."""
    from hygraph.graph.algorithms.leiden import leiden_communities

    g1 = dec.g1
    nodes = [*g1.nodes, *(e.dst for e in attr_edges)]
    edges = [(u, v, float(d.get("weight", 1.0))) for u, v, d in g1.edges(data=True)]
    edges += [(e.src, e.dst, 1.0) for e in attr_edges]
    return leiden_communities(
        nodes,
        edges,
        resolution=cfg.leiden_resolution,
        seed=cfg.seed,
        weighted=cfg.leiden_weighted,
    )


def build_elements(
    res: Resources,
    cfg: HeterographConfig,
    dec: Decomposition,
    communities: dict[str, int],
    attr_nodes: Sequence[Node],
    tag: str,
) -> Elements:
    """H and O nodes per community with S or A members (spec §3.3, §8 #13)."""
    groups = _groups(cfg, dec, communities, attr_nodes)
    written = write_elements(res, cfg, dec, communities, groups)
    high: dict[str, Node] = {}
    titles: dict[str, Node] = {}
    out = Elements()
    for (cid, _ordered, _texts, sources), found in zip(groups, written, strict=True):
        src = tuple(sorted(sources))
        for title, description in found:
            hid = high_level_id(description)
            oid = overview_id(title)
            data = {"community": f"{tag}:{cid}", "title": title}
            high[hid] = Node(hid, NodeKind.HIGH_LEVEL, title, description, data, src)
            out.community[hid] = cid
            titles.setdefault(oid, Node(oid, NodeKind.OVERVIEW, title, title, {}, src))
            out.edges.append(Edge(hid, oid, EdgeKind.TITLE, 1.0, {}, src))
    out.high, out.titles = list(high.values()), list(titles.values())
    return out


def _groups(
    cfg: HeterographConfig,
    dec: Decomposition,
    communities: dict[str, int],
    attr_nodes: Sequence[Node],
) -> list[Group]:
    """The communities with S or A members, each member list heaviest first."""
    attr_text = {n.id: n.text or "" for n in attr_nodes}
    attr_sources = {n.id: n.sources for n in attr_nodes}
    members: dict[int, list[str]] = {}
    for node_id, cid in communities.items():
        if node_id in dec.units or node_id in attr_text:
            members.setdefault(cid, []).append(node_id)
    g1 = dec.g1

    def weight(n: str) -> float:
        return float(g1.nodes[n].get("weight", 1)) if n in g1 else 1.0

    groups: list[Group] = []
    for cid in sorted(members):
        ordered = sorted(members[cid], key=lambda n: (-weight(n), n))
        texts = [dec.units.get(n) or attr_text.get(n, "") for n in ordered]
        texts, _ = fit_budget(cfg, texts, [])
        sources = {s for n in ordered for s in (dec.unit_chunks.get(n) or attr_sources.get(n, ()))}
        groups.append((cid, ordered, texts, sources))
    return groups


def write_elements(
    res: Resources,
    cfg: HeterographConfig,
    dec: Decomposition,
    communities: dict[str, int],
    groups: list[Group],
) -> list[list[tuple[str, str]]]:
    """(title, description) pairs per community: the LLM's, or one extractive element."""
    entities = _community_entities(dec, communities)
    if res.llm is None:
        return [_offline(cfg, dec, entities, cid, texts) for cid, _, texts, _ in groups]
    from hygraph.prompts.noderag import high_level_messages

    prompts = [high_level_messages(texts) for _, _, texts, _ in groups]
    replies = res.complete_many(prompts, "noderag: high-level elements")
    out: list[list[tuple[str, str]]] = []
    for (cid, _, texts, _), reply in zip(groups, replies, strict=True):
        try:
            if isinstance(reply, BaseException):
                raise reply
            out.append(_parse(reply))
        except Exception as err:  # noqa: BLE001 - one bad reply must not lose the build
            log.warning("noderag: community %s falls back to extractive (%s)", cid, err)
            out.append(_offline(cfg, dec, entities, cid, texts))
    return out


def _parse(reply: str) -> list[tuple[str, str]]:
    """The reply's elements, stripped, untitled ones titled by their first words."""
    from hygraph.prompts.noderag import parse_high_level_elements

    found = [(t.strip(), d.strip()) for t, d in parse_high_level_elements(reply)]
    found = [(t or " ".join(d.split()[:4]), d) for t, d in found if d]
    if not found:
        raise ValueError("no elements in the reply")
    return found


def _community_entities(dec: Decomposition, communities: dict[str, int]) -> dict[int, list[str]]:
    """The entities (N) of each community."""
    g1 = dec.g1
    out: dict[int, list[str]] = {}
    for node_id, cid in communities.items():
        if node_id in g1 and g1.nodes[node_id].get("type") == "N":
            out.setdefault(cid, []).append(node_id)
    return out


def _offline(
    cfg: HeterographConfig,
    dec: Decomposition,
    entities: dict[int, list[str]],
    cid: int,
    texts: list[str],
) -> list[tuple[str, str]]:
    """One extractive element, titled by the community's three most connected entities."""
    from hygraph.extract.extractive import extractive_summary

    body = extractive_summary(texts, cfg.extractive_words)
    if not body:
        return []
    g1 = dec.g1
    top = sorted(entities.get(cid, []), key=lambda n: (-g1.degree(n), n))[:3]
    names = [dec.entity_names.get(e, e[4:]) for e in top]
    title = " / ".join(n for n in names if n) or " ".join(body.split()[:4])
    return [(title, body)]


def link_elements(
    cfg: HeterographConfig,
    dec: Decomposition,
    communities: dict[str, int],
    elements: Elements,
    embedded: Sequence[tuple[Sequence[str], np.ndarray]],
    attr_nodes: Sequence[Node],
) -> list[Edge]:
    """H–S/A edges by semantic matching within community (Algorithm 2).

    ``embedded`` holds the ids and vectors of the delta's S, A and H nodes, in that
    order (rows of one type each).
    """
    from hygraph.graph.algorithms.clustering import link_high_level

    if not elements.high:
        return []
    ids = [i for group, _ in embedded for i in group]
    types = [letter for (group, _), letter in zip(embedded, "SAH", strict=True) for _ in group]
    vectors = np.vstack([v for _, v in embedded if len(v)])
    membership = {**communities, **elements.community}
    pairs = link_high_level(
        ids, types, vectors, membership, seed=cfg.seed, cluster_size=cfg.cluster_size
    )
    sources = {n.id: n.sources for n in attr_nodes}
    sources.update({u: tuple(c) for u, c in dec.unit_chunks.items()})
    return [Edge(h, m, EdgeKind.MEMBER, 1.0, {}, tuple(sources.get(m, ()))) for h, m in pairs]
