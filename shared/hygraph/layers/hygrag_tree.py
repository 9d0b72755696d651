"""Building HyGRAG's summary layers over the hybrid graph (spec 000 §3.4–3.7).

1. chunk pairs sharing enough entities are linked (``hy_shared``);
2. every leaf (chunk and entity) starts from its text vector and is propagated twice
   over the hybrid graph (:func:`~hygraph.graph.algorithms.cleora.cleora_embeddings`);
3. layer 1 buckets those Cleora vectors with hyperplane LSH (seed 42 + 1); every
   bucket becomes a summary node written from its passages, entities and the
   relations among them; layer l + 1 buckets the *summary* vectors of layer l (seed
   42 + l + 1), up to L = 4 layers, stopping early when a layer has S_min nodes or
   fewer (a layer of one node is the root). With S_min leaves or fewer (and at least
   two) layer 1 is one node holding them all (the authors' tiny-corpus rule).

Each summary node (kind ``hy_community``, id from its layer and members) links to its
members with ``hy_member`` edges, carries the chunks of its subtree as provenance
(so a deleted document reports exactly the summaries above what it removed), and is
embedded into the ``hygrag`` collection with payload kind ``hy_level<l>``.

Resumable: a layer is written batch by batch (vectors first, then nodes and edges in
one transaction); a rerun recomputes the deterministic Cleora vectors and buckets and
skips summary nodes already stored. The chunk set of a build in progress is recorded,
so a rerun over a different set starts again from scratch.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import Edge, Node
from hygraph.layers.base import in_batches
from hygraph.layers.hygrag_graph import (
    HY_COLLECTION,
    LAYER_TASK,
    STATE_KEY,
    ContentReader,
    GroupContent,
    fit,
    fit_texts,
    hybrid_edges,
    leaf_vectors,
    leaves_of,
    level_kind,
    link_chunks,
    summary_id,
)
from hygraph.layers.summaries import Summary, summarize_groups

if TYPE_CHECKING:
    from hygraph.layers.hygrag_config import HyGRAGLayerConfig
    from hygraph.resources import Resources

log = logging.getLogger("hygraph")

LEVEL_BATCH = 64  # summary nodes written per batch (a killed build loses at most one)


# --------------------------------------------------------------------------- summaries


def summarise_leaves(
    res: Resources, cfg: HyGRAGLayerConfig, contents: Sequence[GroupContent], *, stage: str
) -> list[Summary]:
    """Summaries of groups of leaves (LLM when configured, else extractive)."""
    from hygraph.prompts.hygrag import community_messages, parse_summary

    groups = [c.texts() for c in contents]
    by_group = {id(g): c for g, c in zip(groups, contents, strict=True)}

    def messages(group: Sequence[str]) -> list:
        cut = fit(by_group[id(group)], cfg.summary_input_tokens)
        return community_messages(
            cut.passages, cut.entities, cut.relations, max_words=cfg.summary_words
        )

    with res.tracker.stage(stage):
        return summarize_groups(res, groups, messages=messages, max_words=cfg.summary_words,
                                desc=f"hygrag: {stage.rsplit(':', 1)[-1]}",
                                parse=parse_summary)  # fmt: skip


def summarise_children(
    res: Resources, cfg: HyGRAGLayerConfig, groups: Sequence[Sequence[str]], *, stage: str
) -> list[Summary]:
    """Summaries of groups of child summaries (layers 2 and above)."""
    from hygraph.prompts.hygrag import parse_summary, upper_community_messages

    def messages(group: Sequence[str]) -> list:
        texts = fit_texts(group, cfg.summary_input_tokens)
        return upper_community_messages(texts, max_words=cfg.summary_words)

    with res.tracker.stage(stage):
        return summarize_groups(res, groups, messages=messages, max_words=cfg.summary_words,
                                desc=f"hygrag: {stage.rsplit(':', 1)[-1]}",
                                parse=parse_summary)  # fmt: skip


def summary_node(
    node_id: str, level: int, text: str, written_by: str, size: int, sources: Sequence[str],
    origin: str = "build",
) -> Node:  # fmt: skip
    """The stored record of a summary node."""
    data = {"level": level, "size": size, "written_by": written_by, "origin": origin}
    return Node(node_id, NodeKind.HY_COMMUNITY, f"layer {level} community", text, data,
                tuple(sorted(sources)))  # fmt: skip


def member_edges(node_id: str, members: Sequence[str]) -> list[Edge]:
    return [Edge(node_id, m, EdgeKind.HY_MEMBER, 1.0) for m in members]


def summary_payload(level: int) -> dict:
    return {"kind": level_kind(level), "level": level}


# --------------------------------------------------------------------------- full build


def fingerprint(chunk_ids: Sequence[str], cfg: HyGRAGLayerConfig) -> str:
    text = json.dumps([sorted(chunk_ids), cfg.to_dict()], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def build(res: Resources, cfg: HyGRAGLayerConfig, chunk_ids: Sequence[str]) -> dict:
    """Build every layer over ``chunk_ids`` (resuming a killed build over the same chunks).

    Returns counts: leaves, summary nodes per layer, and how many summaries an LLM wrote.
    """
    from hygraph.graph.algorithms.cleora import cleora_embeddings, undirected_adjacency

    stats: dict = {"mode": "build", "levels": [], "llm_summaries": 0, "extractive": 0}
    with res.tracker.stage("build:hygrag:graph"):
        link_chunks(res, chunk_ids, min_shared=cfg.min_shared_entities,
                    hub_chunks=cfg.hub_entity_chunks)  # fmt: skip
        leaves = leaves_of(res, chunk_ids)
        ids = leaves.ids
        stats["leaves"] = len(ids)
        initial = leaf_vectors(res, leaves.chunks, leaves.entities)
        adjacency = undirected_adjacency(
            len(ids), hybrid_edges(res, ids), weighted=cfg.cleora_weighted
        )
        vectors = cleora_embeddings(initial, adjacency, iterations=cfg.cleora_iterations)
    sources: dict[str, set[str]] = {c: {c} for c in leaves.chunks}
    sources.update({e: set(cs) for e, cs in leaves.entity_chunks.items()})
    reader = ContentReader(res, preload_relations=True)
    level = 1
    while level <= cfg.max_levels and len(ids) >= 2:
        if level > 1 and len(ids) <= cfg.lsh_min_cluster_size:
            break
        groups = _groups(cfg, level, vectors)
        if not groups:
            break
        members = [[ids[i] for i in g] for g in groups]
        node_ids = [summary_id(level, m) for m in members]
        for node_id, group in zip(node_ids, members, strict=True):
            sources[node_id] = set().union(*(sources[m] for m in group))
        made = _write_level(res, cfg, level, node_ids, members, sources, reader)
        stats["llm_summaries"] += made.count("llm")
        stats["extractive"] += made.count("extractive")
        stats["levels"].append(len(node_ids))
        stored = res.stored_vectors(HY_COLLECTION, node_ids)
        vectors = np.vstack([stored[n] for n in node_ids])
        ids = node_ids
        level += 1
    log.info("hygrag: %d leaves, summary layers %s", stats["leaves"], stats["levels"])
    return stats


def _groups(cfg: HyGRAGLayerConfig, level: int, vectors: np.ndarray) -> list[list[int]]:
    """Row groups of one layer: LSH buckets, or one group for a tiny first layer."""
    from hygraph.graph.algorithms.lsh import lsh_buckets

    n = len(vectors)
    if level == 1 and n <= cfg.lsh_min_cluster_size:
        return [list(range(n))]
    return lsh_buckets(
        vectors, n_planes=cfg.lsh_hyperplanes, min_size=cfg.lsh_min_cluster_size,
        max_size=cfg.lsh_max_cluster_size, seed=cfg.seed + level, order=cfg.lsh_order,
        remainder=cfg.lsh_remainder,
    )  # fmt: skip


def _write_level(
    res: Resources,
    cfg: HyGRAGLayerConfig,
    level: int,
    node_ids: list[str],
    members: list[list[str]],
    sources: dict[str, set[str]],
    reader: ContentReader,
) -> list[str]:
    """Summarise and store one layer's nodes, batch by batch; returns who wrote each new one."""
    written: list[str] = []
    order = list(range(len(node_ids)))
    for batch in in_batches(res, [str(i) for i in order], LEVEL_BATCH, f"hygrag layer {level}"):
        rows = [int(i) for i in batch]
        existing = res.store.get_nodes(node_ids[i] for i in rows)
        todo = [i for i in rows if node_ids[i] not in existing]
        if not todo:
            continue
        stage = f"build:hygrag:level{level}"
        # Members in id order (chunks, entities, summaries): the order a later rewrite
        # reads them in, so a summary whose members come back gets the same prompt.
        if level == 1:
            summaries = summarise_leaves(
                res, cfg, reader.contents([sorted(members[i]) for i in todo]), stage=stage
            )
        else:
            children = res.store.get_nodes(m for i in todo for m in members[i])
            groups = [[children[m].text or "" for m in sorted(members[i]) if m in children]
                      for i in todo]  # fmt: skip
            summaries = summarise_children(res, cfg, groups, stage=stage)
        ids = [node_ids[i] for i in todo]
        res.upsert_vectors(HY_COLLECTION, ids, [t for t, _ in summaries],
                           [summary_payload(level) for _ in ids])  # fmt: skip
        nodes = [
            summary_node(node_ids[i], level, text, how, len(members[i]), sources[node_ids[i]])
            for i, (text, how) in zip(todo, summaries, strict=True)
        ]
        edges = [e for i in todo for e in member_edges(node_ids[i], members[i])]
        with res.store.transaction():
            res.store.upsert_nodes(nodes)
            res.store.upsert_edges(edges)
        written += [how for _, how in summaries]
    return written


# --------------------------------------------------------------------------- state, reset


def get_state(res: Resources) -> dict:
    """The layer's recorded state: ``{}`` (nothing), building (with a fingerprint), built."""
    raw = res.store.get_meta(STATE_KEY)
    return json.loads(raw) if raw else {}


def set_state(res: Resources, state: dict) -> None:
    res.store.set_meta(STATE_KEY, json.dumps(state, sort_keys=True) if state else "")


def clear_tree(res: Resources) -> None:
    """Remove every summary node, ``hy_*`` edge, summary vector, progress mark and state."""
    from hygraph.layers.hygrag_graph import PLAN_KEY

    nodes = [n.id for n in res.store.nodes_of_kind(NodeKind.HY_COMMUNITY)]
    keys = [(e.src, e.dst, e.kind) for kind in (EdgeKind.HY_MEMBER, EdgeKind.HY_SHARED)
            for e in res.store.iter_edges(kind)]  # fmt: skip
    res.delete_vectors(HY_COLLECTION, nodes)
    with res.store.transaction():
        res.store.delete_nodes(nodes)
        res.store.delete_edges(keys)
        res.store.clear_progress(LAYER_TASK)
        res.store.set_meta(STATE_KEY, "")
        res.store.set_meta(PLAN_KEY, "")
