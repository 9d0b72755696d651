"""Incremental insert and delete of HyGRAG's summary layers (spec 000 §6.1, the paper's way).

**Insert**, per new document (its chunks new to the layer):

1. its chunks are linked to the leaf graph (``hy_shared`` edges to old and new chunks;
   mentions and relations are the shared entity graph's already);
2. the new material (its chunks and the relations extracted from them) is summarised
   as one unit, ``t_new``, and embedded, ``s_new`` (one LLM call);
3. it is attached bottom-up: at the lowest layer l* whose most similar summary C* has
   cosine above ``attach_threshold`` (0.65). At l* = 1 the new leaves (its chunks and
   the entities nobody holds yet) become members of C*. At l* >= 2 a new layer-1
   summary holds them (text ``t_new``), with pass-through nodes reusing ``t_new`` up to
   layer l* - 1, the top one a member of C*. When no layer passes, the new layer-1
   summary stays without a parent (it is still retrieved: retrieval is flat);
4. only C* and its ancestors are summarised again (one call each), bottom-up; nothing
   else is recomputed (no Cleora, no LSH, no other summary). A summary pushed past
   S_max members is split by LSH over its members' text vectors (Cleora vectors are
   not kept), and the parts join its parent.

So an insert costs ``1 + (length of the path from C* to the root)`` LLM calls, against
one per summary node for a rebuild. Documents are processed in batches; within a batch
a summary on several documents' paths is written once, and a later document can
attach to the summary an earlier one created. The batch's decisions are recorded
before anything is written, vectors are written before the store, and the store's
write (nodes, edges, progress marks) is one transaction, so a killed insert resumes
with the same decisions and writes nothing twice.

**Delete**: the store has already dropped the document's chunks and every summary
whose whole subtree was in them (with their ``hy_member`` edges), and reports the
summaries that lost provenance (the ancestors of what went, and the layer-1 summaries
of surviving entities the document mentioned). Here their vectors go, emptied
summaries are dropped (with their vectors) up the tree, and every remaining touched
summary and its ancestors are summarised again bottom-up and re-embedded.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hygraph.graph.kinds import EdgeKind
from hygraph.layers.hygrag_graph import (
    HY_COLLECTION,
    LAYER_TASK,
    PLAN_KEY,
    ContentReader,
    is_entity,
    is_summary,
    leaf_vectors,
    level_kind,
    link_chunks,
    summary_id,
)
from hygraph.layers.hygrag_tree import (
    member_edges,
    summarise_children,
    summarise_leaves,
    summary_node,
    summary_payload,
)
from hygraph.layers.summaries import summarize_groups

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.layers.hygrag_config import HyGRAGLayerConfig
    from hygraph.resources import Resources

log = logging.getLogger("hygraph")

DOC_BATCH = 32  # documents whose insert is planned and written together
SEARCH_DEPTH = 3  # nearest summaries looked at per layer (a stale point is skipped)


class Tree:
    """The summary tree as it is being edited: members, parents, levels, texts, sources."""

    def __init__(self, res: Resources):
        self.res = res
        self.children: dict[str, list[str]] = defaultdict(list)
        self.parent: dict[str, str] = {}
        for src, dst, _ in res.store.edge_rows([EdgeKind.HY_MEMBER]):
            self.children[src].append(dst)
            self.parent[dst] = src
        self.records: dict[str, dict[str, Any]] = {}
        """Summary nodes read or made here: level, text, written_by, origin, sources."""
        self.new: set[str] = set()
        self.dirty: set[str] = set()

    def load(self, node_ids: Sequence[str]) -> None:
        """Read stored summary nodes not yet known here."""
        wanted = [n for n in node_ids if n not in self.records]
        for node_id, node in self.res.store.get_nodes(wanted).items():
            self.records[node_id] = {
                "level": int(node.data.get("level", 1)), "text": node.text or "",
                "written_by": node.data.get("written_by", ""),
                "origin": node.data.get("origin", "build"), "sources": set(node.sources),
            }  # fmt: skip

    def ancestors(self, node_id: str) -> list[str]:
        out: list[str] = []
        while node_id in self.parent and self.parent[node_id] not in out:
            node_id = self.parent[node_id]
            out.append(node_id)
        return out

    def add(self, node_id: str, level: int, text: str, how: str, members: list[str],
            sources: set[str]) -> None:  # fmt: skip
        """A new summary node with its members (their parent becomes it)."""
        self.records[node_id] = {"level": level, "text": text, "written_by": how,
                                 "origin": "insert", "sources": set(sources)}  # fmt: skip
        self.new.add(node_id)
        self.attach(node_id, members)

    def attach(self, node_id: str, members: list[str]) -> None:
        for member in members:
            if member not in self.children[node_id]:
                self.children[node_id].append(member)
            self.parent[member] = node_id


# --------------------------------------------------------------------------- insert


def insert(res: Resources, cfg: HyGRAGLayerConfig, chunk_ids: Sequence[str]) -> dict:
    """Attach new chunks document by document (see the module docstring); returns counts."""
    stats: dict[str, Any] = {"mode": "insert", "documents": 0, "attached": defaultdict(int),
                             "new_material_calls": 0, "resummarised": 0, "splits": 0}  # fmt: skip
    link_chunks(res, chunk_ids, min_shared=cfg.min_shared_entities,
                hub_chunks=cfg.hub_entity_chunks)  # fmt: skip
    chunks = res.store.get_chunks(chunk_ids)
    docs: dict[str, list[str]] = {}
    for chunk_id in chunk_ids:
        if chunk_id in chunks:
            docs.setdefault(chunks[chunk_id].doc_id, []).append(chunk_id)
    names = list(docs)
    for start in range(0, len(names), DOC_BATCH):
        batch = {d: docs[d] for d in names[start : start + DOC_BATCH]}
        plan = _saved_plan(res, batch) or _make_plan(res, cfg, batch, stats)
        _apply(res, cfg, plan, stats)
    stats["attached"] = dict(stats["attached"])
    return stats


def _saved_plan(res: Resources, batch: dict[str, list[str]]) -> dict | None:
    raw = res.store.get_meta(PLAN_KEY)
    if not raw:
        return None
    plan = json.loads(raw)
    return plan if plan.get("docs") == {d: sorted(c) for d, c in batch.items()} else None


def _make_plan(
    res: Resources, cfg: HyGRAGLayerConfig, batch: dict[str, list[str]], stats: dict
) -> dict:
    """New leaves, ``t_new`` and the attachment decision of each document, recorded."""
    from hygraph.prompts.hygrag import new_material_messages, parse_summary

    tree = Tree(res)
    reader = ContentReader(res)
    claimed: set[str] = set()
    leaves: dict[str, list[str]] = {}
    material: dict[str, tuple[list[str], list[str], list[str]]] = {}
    for doc, chunk_ids in batch.items():
        entities = sorted(
            n for n in res.store.nodes_from_sources(chunk_ids)
            if is_entity(n) and n not in tree.parent and n not in claimed
        )  # fmt: skip
        claimed.update(entities)
        leaves[doc] = [*chunk_ids, *entities]
        texts = res.chunk_texts(chunk_ids)
        lines, sentences = reader.chunk_relations(chunk_ids)
        material[doc] = ([texts[c] for c in chunk_ids if c in texts], lines, sentences)
    groups = [[*passages, *sentences] for passages, _, sentences in material.values()]
    by_group = {id(g): m for g, m in zip(groups, material.values(), strict=True)}

    def messages(group: Sequence[str]) -> list:
        passages, lines, _ = by_group[id(group)]
        return new_material_messages(passages, lines, max_words=cfg.summary_words)

    with res.tracker.stage("build:hygrag:insert"):
        summaries = summarize_groups(res, groups, messages=messages, desc="hygrag: new material",
                                     max_words=cfg.summary_words, parse=parse_summary)  # fmt: skip
    stats["new_material_calls"] += sum(1 for _, how in summaries if how == "llm")
    vectors = _unit(np.asarray(res.embedder.embed([t for t, _ in summaries]), dtype=np.float32))
    made: list[tuple[str, np.ndarray]] = []  # layer-1 summaries this batch creates
    decisions: dict[str, tuple[int, str | None]] = {}
    for (doc, _), vector in zip(batch.items(), vectors, strict=True):
        decision = _attach_point(res, cfg, vector, made)
        decisions[doc] = decision
        if decision[0] != 1:
            made.append((summary_id(1, leaves[doc]), vector))
    plan = {
        "docs": {d: sorted(c) for d, c in batch.items()},
        "order": list(batch),
        "chunks": batch,
        "leaves": leaves,
        "summaries": {d: list(s) for d, s in zip(batch, summaries, strict=True)},
        "decisions": {d: list(v) for d, v in decisions.items()},
    }
    res.store.set_meta(PLAN_KEY, json.dumps(plan, sort_keys=True))
    return plan


def _unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=-1, keepdims=True)
    return np.divide(rows, norms, out=np.zeros_like(rows), where=norms > 0)


def _attach_point(
    res: Resources, cfg: HyGRAGLayerConfig, vector: np.ndarray, made: list[tuple[str, np.ndarray]]
) -> tuple[int, str | None]:
    """``(l*, C*)``: the lowest layer whose nearest summary passes the threshold; (0, None)."""
    for level in range(1, cfg.max_levels + 1):
        hits = res.search_vectors(HY_COLLECTION, vector, SEARCH_DEPTH, kinds=[level_kind(level)])
        stored = res.store.get_nodes(h.id for h in hits)
        candidates = [(h.score, h.id) for h in hits if h.id in stored]
        if level == 1:
            candidates += [(float(v @ vector), node_id) for node_id, v in made]
        if not candidates:
            continue
        score, best = max(candidates, key=lambda c: (c[0], c[1]))
        if score > cfg.attach_threshold:
            return level, best
    return 0, None


def _apply(res: Resources, cfg: HyGRAGLayerConfig, plan: dict, stats: dict) -> None:
    """Carry out a batch's plan: new nodes, memberships, splits, path re-summaries, writes."""
    tree = Tree(res)
    entity_sources = _sources_of(res, [m for ls in plan["leaves"].values() for m in ls])
    for doc in plan["order"]:
        level, target = plan["decisions"][doc]
        leaves = plan["leaves"][doc]
        text, how = plan["summaries"][doc]
        sources = set().union(*(entity_sources.get(m, {m}) for m in leaves))
        stats["documents"] += 1
        stats["attached"][level] += 1
        if level:
            tree.load([target])
            if target not in tree.records:  # gone since the plan was made: no parent then
                level, target = 0, None
        if level == 1:
            tree.attach(target, leaves)
            top = target
        else:
            top = summary_id(1, leaves)
            tree.add(top, 1, text, how, leaves, sources)
            for lv in range(2, level):
                above = summary_id(lv, [top])
                tree.add(above, lv, text, how, [top], sources)
                top = above
            if level >= 2:
                tree.attach(target, [top])
                top = target
        path = [top, *tree.ancestors(top)] if level else tree.ancestors(top)
        tree.load(path)
        for node_id in path:
            tree.records[node_id]["sources"] |= sources
        if level:
            tree.dirty.update(path)
    split = _split_oversized(res, cfg, tree)
    stats["splits"] += len(split)
    _resummarise(res, cfg, tree, stats)
    _write(res, tree, rewritten=split, done=[c for cs in plan["chunks"].values() for c in cs])


def _sources_of(res: Resources, node_ids: Sequence[str]) -> dict[str, set[str]]:
    """Chunk provenance of leaves: a chunk is its own, an entity its chunks."""
    entities = [n for n in node_ids if is_entity(n)]
    out = {n: set(node.sources) for n, node in res.store.get_nodes(entities).items()}
    out.update({n: {n} for n in node_ids if not is_entity(n) and not is_summary(n)})
    return out


def _split_oversized(res: Resources, cfg: HyGRAGLayerConfig, tree: Tree) -> set[str]:
    """Split dirty summaries with more than S_max members, lowest layer first; returns the
    split nodes (their provenance is rewritten exactly)."""
    from hygraph.graph.algorithms.lsh import lsh_buckets

    split: set[str] = set()
    for node_id in sorted(tree.dirty | tree.new, key=lambda n: (tree.records[n]["level"], n)):
        members = tree.children[node_id]
        if len(members) <= cfg.lsh_max_cluster_size:
            continue
        level = tree.records[node_id]["level"]
        groups = lsh_buckets(
            _member_vectors(res, tree, members), n_planes=cfg.lsh_hyperplanes,
            min_size=cfg.lsh_min_cluster_size, max_size=cfg.lsh_max_cluster_size,
            seed=cfg.seed + level, order=cfg.lsh_order, remainder="merge",
        )  # fmt: skip
        if len(groups) < 2:
            continue
        parts = [[members[i] for i in g] for g in groups]
        sources = _sources_of(res, [m for m in members if not is_summary(m)])
        tree.load([m for m in members if is_summary(m)])
        for m in members:
            if is_summary(m):
                sources[m] = tree.records[m]["sources"]
        parent = tree.parent.get(node_id)
        tree.children[node_id] = []
        tree.attach(node_id, parts[0])
        tree.records[node_id]["sources"] = set().union(*(sources[m] for m in parts[0]))
        tree.dirty.add(node_id)
        split.add(node_id)
        for part in parts[1:]:
            sibling = summary_id(level, part)
            record = tree.records[node_id]
            tree.add(sibling, level, record["text"], record["written_by"], part,
                     set().union(*(sources[m] for m in part)))  # fmt: skip
            tree.dirty.add(sibling)
            if parent is not None:
                tree.attach(parent, [sibling])
                tree.dirty.add(parent)
    return split


def _member_vectors(res: Resources, tree: Tree, members: list[str]) -> np.ndarray:
    """Text vectors of a summary's members (leaves: their collections; summaries: ours)."""
    leaves = [m for m in members if not is_summary(m)]
    chunks = [m for m in leaves if not is_entity(m)]
    entities = [m for m in leaves if is_entity(m)]
    found = dict(zip([*chunks, *entities], leaf_vectors(res, chunks, entities), strict=True))
    summaries = [m for m in members if is_summary(m)]
    found.update(res.stored_vectors(HY_COLLECTION, summaries))
    missing = [m for m in summaries if m not in found]
    if missing:
        texts = [tree.records.get(m, {}).get("text", "") for m in missing]
        found.update(zip(missing, np.asarray(res.embedder.embed(texts)), strict=True))
    return np.vstack([found[m] for m in members])


def _resummarise(res: Resources, cfg: HyGRAGLayerConfig, tree: Tree, stats: dict) -> None:
    """Write the dirty summaries again from their members, lowest layer first."""
    reader = ContentReader(res)
    by_level: dict[int, list[str]] = defaultdict(list)
    for node_id in sorted(tree.dirty):
        by_level[tree.records[node_id]["level"]].append(node_id)
    for level in sorted(by_level):
        todo = by_level[level]
        stage = f"build:hygrag:level{level}"
        if level == 1:
            contents = reader.contents([sorted(tree.children[n]) for n in todo])
            written = summarise_leaves(res, cfg, contents, stage=stage)
        else:
            tree.load([m for n in todo for m in tree.children[n]])
            groups = [
                [tree.records[m]["text"] for m in sorted(tree.children[n]) if m in tree.records]
                for n in todo
            ]
            written = summarise_children(res, cfg, groups, stage=stage)
        for node_id, (text, how) in zip(todo, written, strict=True):
            tree.records[node_id]["text"] = text
            tree.records[node_id]["written_by"] = how
        stats["resummarised"] = stats.get("resummarised", 0) + len(todo)


def _write(res: Resources, tree: Tree, *, rewritten: set[str], done: Sequence[str] | None) -> None:
    """Vectors of new and dirty summaries, then nodes, edges and progress in one transaction."""
    changed = sorted(tree.new | tree.dirty)
    records = [tree.records[n] for n in changed]
    res.upsert_vectors(HY_COLLECTION, changed, [r["text"] for r in records],
                       [summary_payload(r["level"]) for r in records])  # fmt: skip
    nodes = [
        summary_node(n, r["level"], r["text"], r["written_by"], len(tree.children[n]),
                     sorted(r["sources"]), r["origin"])
        for n, r in zip(changed, records, strict=True)
    ]  # fmt: skip
    edges = [e for n in changed for e in member_edges(n, tree.children[n])]
    # A split node's provenance shrinks, so it is removed and written whole again (with
    # the edge from its parent, which the removal takes with it).
    parents = [(tree.parent[n], n) for n in rewritten if n in tree.parent]
    with res.store.transaction():
        res.store.delete_nodes(sorted(rewritten))
        res.store.upsert_nodes(nodes)
        res.store.upsert_edges(edges)
        res.store.upsert_edges([member_edges(p, [n])[0] for p, n in parents])
        if done is not None:  # an insert batch: its chunks are in, its plan is spent
            res.store.mark_done(LAYER_TASK, done)
            res.store.set_meta(PLAN_KEY, "")


# --------------------------------------------------------------------------- delete


def delete(res: Resources, cfg: HyGRAGLayerConfig, removed: DeleteResult) -> dict:
    """Repair the summaries above a deleted document (see the module docstring)."""
    gone = [n for n in removed.node_ids if is_summary(n)]
    res.delete_vectors(HY_COLLECTION, gone)
    tree = Tree(res)
    touched = [n for n in removed.touched_node_ids if is_summary(n)]
    tree.load(touched)
    dirty = {n for n in touched if n in tree.records}
    for node_id in list(dirty):
        dirty.update(tree.ancestors(node_id))
    tree.load(sorted(dirty))
    dropped: list[str] = []
    for node_id in sorted(dirty, key=lambda n: (tree.records[n]["level"], n)):
        if tree.children.get(node_id):
            continue
        dropped.append(node_id)  # emptied: every member went
        parent = tree.parent.pop(node_id, None)
        if parent is not None and node_id in tree.children[parent]:
            tree.children[parent].remove(node_id)
    tree.dirty = dirty - set(dropped)
    stats: dict[str, Any] = {"mode": "delete", "dropped": len(dropped) + len(gone)}
    res.delete_vectors(HY_COLLECTION, dropped)
    with res.store.transaction():
        res.store.delete_nodes(dropped)
    _resummarise(res, cfg, tree, stats)
    _write(res, tree, rewritten=set(), done=None)
    return stats
