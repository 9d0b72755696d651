"""``tree`` and ``tree-kmeans``: recursive summary trees over the chunks (RAPTOR, RAPTOR-K).

Level 0 is the chunks themselves (their vectors are the ``chunks`` collection). Each
higher level is built from the one below (spec 002 §2.2): its nodes are clustered
(RAPTOR: UMAP + Gaussian mixture, soft; RAPTOR-K: K-means with ``K = n // 10``, hard;
see :mod:`hygraph.graph.algorithms.raptor_clustering`), and every cluster with at least
``min_cluster_size`` members gets a parent whose text summarises its members'
texts. A summary is a ``tree_summary`` node (data: ``level``, ``tree``, ``members``,
``written_by``) with ``tree_child`` edges to its members; its provenance is the union
of its members' chunks, and its vector goes into the tree's own collection (payload
``level`` and ``tree``). Nodes of a level cluster into the next until a level has at
most ``reduction_dimension + 1`` nodes (the reference code's stop rule, for both
trees), no cluster is large enough for a parent, or ``num_layers`` levels exist.

**Summaries.** With an LLM, through the shared fan-out (cache, retries, usage per
level in the stage ``build:<layer>:level<n>``), with the prompt of
:mod:`hygraph.prompts.raptor`; a failed call or an unusable reply falls back to an
extractive summary for that cluster. Without an LLM (or ``summaries="extractive"``)
the summary is extractive: the member sentences most central to the cluster by
shared content words, in their original order, about ``summary_length`` tokens.

**Parents of small clusters.** The paper gives a parent only to clusters of more than
two members [M §4] (``min_cluster_size`` 3); its own worked example [A B.8] and both
reference implementations give every cluster a parent (``min_cluster_size=1``).
Members of a smaller cluster stay without a parent at that level; retrieval over the
collapsed tree still reaches them.

**Ids, reruns and resuming.** A summary's id hashes the tree, its level and its member
ids (themselves chunk content hashes or summary ids), so an id names exactly one
subtree: a rebuild reuses every summary whose subtree is unchanged (no LLM call, no
embedding) and never duplicates one. The clustering is seeded, so a build killed
half-way computes the same clusters again; levels already finished are recorded (the
ids of each finished level, under the fingerprint they belong to) and are not
clustered again, and the summaries already written in an unfinished level are kept.
The layer counts as built only when every level is done.

**Freshness.** The tree is a property of the whole chunk set: a fingerprint of the
chunk ids and the build options is kept in the store's meta table, and an insert or a
delete that changes it updates the tree before the layer counts as built again.
``update="local"`` (ours, the default) changes only what the change touches: new
chunks join the first-level cluster whose summary is nearest, deleted chunks leave
theirs, and each changed cluster is summarised again (split if it grew past the token
cap, dropped if it fell under ``min_cluster_size``), and so its parent, up to the top;
the levels above grow or shrink by the same stop rule. Once the chunks changed since
the last full build exceed ``rebuild_fraction`` (0.5) of the corpus, the tree is
re-clustered as a fresh build would (``update="rebuild"`` does that on every change),
still reusing every summary whose subtree is unchanged. Summaries that left the tree
are removed with their vectors, and a deleted document's summaries lose their vectors
as the store drops them. A summary is written once per subtree: one that fell back to
an extractive text is rewritten by ``hygraph rebuild`` (``GraphIndex.rebuild``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from hygraph.errors import ConfigError
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import Edge, Node
from hygraph.layers.base import Layer, LayerConfig, register_layer
from hygraph.resources import CHUNK_COLLECTION

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.resources import Resources

SUMMARY_PREFIX = "tree:"
SUMMARY_BATCH = 64  # clusters summarised (and written) per batch: the unit of resuming
WORDS_PER_TOKEN = 0.75  # extractive summaries are sized in words


@dataclass
class SummaryTreeConfig(LayerConfig):
    """Options both trees share; defaults are RAPTOR's reference code (spec 002 §2.2)."""

    num_layers: int = 5  # levels above the chunks at most (RAPTOR code num_layers)
    reduction_dimension: int = 10  # UMAP dims; stop at <= dims + 1 nodes (RAPTOR code)
    max_cluster_tokens: int = 3500  # re-cluster longer clusters (RAPTOR max_length_in_cluster)
    summary_length: int = 100  # tokens per summary (RAPTOR code summarization_length)
    min_cluster_size: int = 3  # parents only for clusters of > 2 members (paper [M §4]); 1: code
    cluster_seed: int = 224  # RAPTOR code random_seed
    summaries: str = "auto"  # auto: LLM when configured, else extractive | extractive
    update: str = "local"  # ours: local (re-summarise changed clusters) | rebuild (re-cluster)
    rebuild_fraction: float = 0.5  # ours: local updates re-cluster once this share changed

    def __post_init__(self) -> None:
        if self.summaries not in ("auto", "extractive"):
            raise ConfigError("summaries must be auto or extractive")
        if self.update not in ("local", "rebuild"):
            raise ConfigError("update must be local or rebuild")
        if self.num_layers < 0 or self.reduction_dimension < 1 or self.min_cluster_size < 1:
            raise ConfigError(
                "num_layers must be >= 0, reduction_dimension and min_cluster_size >= 1"
            )


@dataclass
class TreeConfig(SummaryTreeConfig):
    """RAPTOR's tree: UMAP + Gaussian mixture chosen by BIC, soft assignment."""

    cluster_threshold: float = 0.1  # posterior needed to join a cluster (RAPTOR code)
    max_clusters: int = 50  # most mixture components tried (RAPTOR code)


@dataclass
class TreeKMeansConfig(SummaryTreeConfig):
    """RAPTOR-K's tree: K-means with K = n // cluster_size, hard assignment."""

    cluster_size: int = 10  # items per cluster (authors' code size_of_clusters)
    balanced: bool = True  # size-balanced K-means (authors' code); false: plain K-means
    max_size_percentage: float = 0.2  # balance slack (authors' code)
    kmeans_max_iter: int = 10  # (authors' code max_iter)
    kmeans_tol: float = 1e-4  # (authors' code tol)


def summary_id(tree: str, level: int, members: Sequence[str]) -> str:
    """The id of the summary of ``members`` at ``level`` of ``tree`` (order-free)."""
    text = "\n".join([tree, str(level), *sorted(members)])
    return SUMMARY_PREFIX + hashlib.sha256(text.encode()).hexdigest()[:20]


@dataclass
class _Level:
    """The nodes of one level: ids in order, texts, token counts, vectors, provenance."""

    ids: list[str]
    texts: list[str]
    tokens: list[int]
    vectors: np.ndarray
    sources: list[tuple[str, ...]]


class SummaryTree(Layer):
    """The tree builder both layers share; subclasses choose the clustering."""

    requires = ("chunks",)
    Config: ClassVar[type[LayerConfig]] = SummaryTreeConfig

    config: SummaryTreeConfig

    # -- what differs between the trees -------------------------------------------------

    def cluster(self, vectors: np.ndarray, tokens: Sequence[int]) -> list[list[int]]:
        """Clusters of one level's rows (row indices; soft clusters may overlap)."""
        raise NotImplementedError

    # -- bookkeeping --------------------------------------------------------------------

    @property
    def collection(self) -> str:
        return self.collections[0]

    @property
    def _fingerprint_key(self) -> str:
        return f"layer:{self.name}:fingerprint"

    @property
    def _levels_key(self) -> str:
        return f"layer:{self.name}:levels"

    @property
    def _tree_key(self) -> str:
        return f"layer:{self.name}:tree"

    @property
    def _chunks_task(self) -> str:
        return f"layer:{self.name}:chunks"

    @property
    def _stale_key(self) -> str:
        return f"layer:{self.name}:stale"

    def _fingerprint(self, res: Resources) -> str:
        options = sorted(self.config.to_dict().items())
        text = repr((self.name, sorted(res.store.chunk_ids()), options))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def pending(self, res: Resources) -> list[str]:
        stale = res.store.get_meta(self._fingerprint_key) != self._fingerprint(res)
        return ["*"] if stale or res.store.get_meta(self._stale_key) else []

    def _finished_levels(self, res: Resources, fingerprint: str) -> list[list[str]]:
        """Ids of each level a killed build finished for ``fingerprint`` (none otherwise)."""
        raw = res.store.get_meta(self._levels_key) or ""
        try:
            saved = json.loads(raw) if raw else {}
        except ValueError:
            return []
        return list(saved.get("levels", [])) if saved.get("fingerprint") == fingerprint else []

    def tree_nodes(self, res: Resources) -> list[Node]:
        """Every summary node of this tree (all levels)."""
        return [
            n for n in res.store.nodes_of_kind(NodeKind.TREE_SUMMARY)
            if n.data.get("tree") == self.name
        ]  # fmt: skip

    # -- building -----------------------------------------------------------------------

    def _committed(self, res: Resources) -> dict:
        """The last complete tree: ``levels`` (ids per level), ``chunks``, ``drift``."""
        raw = res.store.get_meta(self._tree_key) or ""
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return {}

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> int:
        """Build (or bring up to date) the whole tree over every chunk of the index.

        With ``update="local"`` and a complete tree in place, only what changed is
        redone (:meth:`_update_local`) until the chunks changed since the last full
        build exceed ``rebuild_fraction`` of the corpus; otherwise the tree is built
        as from scratch (:meth:`_build_full`), reusing every unchanged subtree.
        """
        self._remove_stale(res)
        fingerprint = self._fingerprint(res)
        if res.store.get_meta(self._fingerprint_key) == fingerprint:
            return 0
        chunks = res.store.chunk_ids()
        committed = self._committed(res)
        done = res.store.done_items(self._chunks_task)
        new = [c for c in chunks if c not in done]
        removed = max(0, int(committed.get("chunks", 0)) - (len(chunks) - len(new)))
        drift = int(committed.get("drift", 0)) + len(new) + removed
        local = (
            self.config.update == "local"
            and committed.get("levels")
            and drift <= self.config.rebuild_fraction * max(1, len(chunks))
        )
        if local:
            levels = self._update_local(res, committed["levels"], chunks, set(new))
        else:
            levels, drift = self._build_full(res, fingerprint, chunks), 0
        keep = {i for level in levels for i in level}
        stale = [n.id for n in self.tree_nodes(res) if n.id not in keep]
        # The new tree and the list of what left it commit together; the removal follows
        # (a run killed in between finishes it first thing next time).
        with res.store.transaction():
            res.store.clear_progress(self._chunks_task)
            res.store.mark_done(self._chunks_task, chunks)
            tree = {"levels": levels, "chunks": len(chunks), "drift": drift}
            res.store.set_meta(self._tree_key, json.dumps(tree))
            res.store.set_meta(self._stale_key, json.dumps(stale) if stale else "")
            res.store.set_meta(self._fingerprint_key, fingerprint)
            res.store.set_meta(self._levels_key, "")
        self._remove_stale(res)
        return 0

    def _remove_stale(self, res: Resources) -> None:
        """Remove the summaries the last committed update left out of the tree."""
        raw = res.store.get_meta(self._stale_key) or ""
        if raw:
            self._remove(res, json.loads(raw))
            res.store.set_meta(self._stale_key, "")

    def _build_full(self, res: Resources, fingerprint: str, chunks: list[str]) -> list[list[str]]:
        """Cluster and summarise level by level from the chunks up (resuming a killed run)."""
        levels = self._finished_levels(res, fingerprint)
        current = chunks
        out: list[list[str]] = []
        for level in range(1, self.config.num_layers + 1):
            if level <= len(levels):
                parents = levels[level - 1]
            else:
                if len(current) <= self.config.reduction_dimension + 1:
                    break
                parents = self._build_level(res, level, current)
                if not parents:
                    break
                levels.append(parents)
                payload = {"fingerprint": fingerprint, "levels": levels}
                res.store.set_meta(self._levels_key, json.dumps(payload))
            out.append(parents)
            current = parents
        return out

    def _update_local(
        self, res: Resources, committed: list[list[str]], chunks: list[str], new: set[str]
    ) -> list[list[str]]:
        """Bring the committed tree up to date by changing only the clusters concerned.

        Level by level: a cluster drops members that are gone, takes the new version of
        a member that changed (or its pieces, if it was split), and, at the first level,
        takes each new chunk whose summary vector is nearest (hard assignment). A
        changed cluster is a new node (its id names its members): it is split again if
        its texts exceed ``max_cluster_tokens``, dropped if fewer than
        ``min_cluster_size`` members remain, and summarised; its parent changes in turn.
        Unchanged clusters keep their node. The stop rule applies as in a full build,
        and a top level that grew past it gets a level above.
        """
        old_nodes = res.store.get_nodes([i for level in committed for i in level])
        below = list(chunks)
        fresh = [c for c in chunks if c in new]
        renamed: dict[str, list[str]] = {}
        out: list[list[str]] = []
        for level in range(1, self.config.num_layers + 1):
            if len(below) <= self.config.reduction_dimension + 1:
                break
            old = [old_nodes[i] for i in (committed[level - 1] if level <= len(committed) else [])
                   if i in old_nodes]  # fmt: skip
            if not old:  # above the old top: a level of its own
                parents = self._build_level(res, level, below)
            else:
                parents, renamed = self._relink_level(res, level, old, below, fresh, renamed)
            if not parents:
                break
            out.append(parents)
            below, fresh = parents, []
        return out

    def _relink_level(
        self,
        res: Resources,
        level: int,
        old: list[Node],
        below: list[str],
        fresh: list[str],
        renamed: dict[str, list[str]],
    ) -> tuple[list[str], dict[str, list[str]]]:
        """One level of :meth:`_update_local`: the level's ids, and old id → new ids."""
        valid = set(below)
        clusters: dict[str, list[str]] = {}
        for node in old:
            members = [n for m in node.data.get("members", []) for n in renamed.get(m, [m])]
            clusters[node.id] = [m for m in dict.fromkeys(members) if m in valid]
        if fresh:
            adding = self._level_nodes(res, level - 1, fresh)
            centres = res.stored_vectors(self.collection, list(clusters))
            keys = [k for k in clusters if k in centres]
            if keys:
                matrix = np.vstack([np.asarray(centres[k], dtype=np.float32) for k in keys])
                for node_id, best in zip(adding.ids, (adding.vectors @ matrix.T).argmax(1),
                                         strict=True):  # fmt: skip
                    clusters[keys[int(best)]].append(node_id)
        plans: dict[str, list[int]] = {}
        moved: dict[str, list[str]] = {}
        changed = [
            (node.id, clusters[node.id]) for node in old
            if set(clusters[node.id]) != set(node.data.get("members", []))
        ]  # fmt: skip
        info = self._level_nodes(res, level - 1, sorted({m for _, ms in changed for m in ms}))
        row = {node_id: n for n, node_id in enumerate(info.ids)}
        for old_id, members in changed:
            rows = sorted(row[m] for m in members if m in row)
            groups = [rows]
            if len(rows) > 1 and sum(info.tokens[r] for r in rows) > self.config.max_cluster_tokens:
                sub = self.cluster(info.vectors[rows], [info.tokens[r] for r in rows])
                groups = [sorted(rows[i] for i in g) for g in sub]
            groups = [g for g in groups if len(g) >= self.config.min_cluster_size]
            moved[old_id] = []
            for g in groups:
                sid = summary_id(self.name, level, [info.ids[r] for r in g])
                plans.setdefault(sid, g)
                moved[old_id].append(sid)
        self._write_plans(res, level, info, plans)
        parents = []
        for node in old:
            parents.extend(moved.get(node.id, [node.id]))
        return list(dict.fromkeys(parents)), moved

    def _level_nodes(self, res: Resources, level: int, ids: list[str]) -> _Level:
        """Texts, token counts, vectors and provenance of the nodes of ``level``."""
        from hygraph.ingest.tokenizer import default_tokenizer

        if level == 0:
            found = res.chunk_texts(ids)
            ids = [i for i in ids if i in found]
            texts = [found[i] for i in ids]
            sources = [(i,) for i in ids]
            stored = res.stored_vectors(CHUNK_COLLECTION, ids)
        else:
            nodes = res.store.get_nodes(ids)
            ids = [i for i in ids if i in nodes]
            texts = [nodes[i].text or "" for i in ids]
            sources = [tuple(sorted(nodes[i].sources)) for i in ids]
            stored = res.stored_vectors(self.collection, ids)
        missing = [n for n, i in enumerate(ids) if i not in stored]
        if missing:  # not embedded yet (or lost): embed now (the embedding cache helps)
            fresh = res.embedder.embed([texts[n] for n in missing])
            stored.update({ids[n]: np.asarray(v) for n, v in zip(missing, fresh, strict=True)})
        dim = int(res.manifest.dim or res.embedder.dim)
        vectors = (
            np.vstack([np.asarray(stored[i], dtype=np.float32) for i in ids])
            if ids else np.zeros((0, dim), dtype=np.float32)
        )  # fmt: skip
        tokens = default_tokenizer().count_many(texts) if texts else []
        return _Level(ids, texts, list(tokens), vectors, sources)

    def _build_level(self, res: Resources, level: int, ids: list[str]) -> list[str]:
        """Cluster the nodes ``ids`` of ``level - 1`` and write the summaries of ``level``.

        Returns the ids of the new level (empty when no cluster gets a parent).
        """
        below = self._level_nodes(res, level - 1, ids)
        if len(below.ids) <= self.config.reduction_dimension + 1:
            return []
        groups = [
            g for g in self.cluster(below.vectors, below.tokens)
            if len(g) >= self.config.min_cluster_size
        ]  # fmt: skip
        plans: dict[str, list[int]] = {}
        for group in groups:
            rows = sorted(group)
            plans.setdefault(summary_id(self.name, level, [below.ids[r] for r in rows]), rows)
        if not plans:
            return []
        self._write_plans(res, level, below, plans)
        return list(plans)

    def _write_plans(
        self, res: Resources, level: int, below: _Level, plans: dict[str, list[int]]
    ) -> None:
        """Write the summaries of ``plans`` (id → rows of ``below``) not already stored."""
        if not plans:
            return
        existing = {
            n.id for n in res.store.get_nodes(list(plans)).values()
            if n.kind == NodeKind.TREE_SUMMARY
        }  # fmt: skip
        todo = [p for p in plans if p not in existing]
        with res.tracker.stage(f"build:{self.name}:level{level}"):
            for start in range(0, len(todo), SUMMARY_BATCH):
                batch = todo[start : start + SUMMARY_BATCH]
                self._write(res, level, below, [(p, plans[p]) for p in batch])
            self._embed_missing(res, [p for p in plans if p in existing])

    def _write(
        self, res: Resources, level: int, below: _Level, batch: list[tuple[str, list[int]]]
    ) -> None:
        """Summarise a batch of clusters and store their nodes, edges and vectors."""
        from hygraph.layers.summaries import summarize_groups
        from hygraph.prompts.raptor import parse_summary, summary_messages

        words = max(1, round(self.config.summary_length * WORDS_PER_TOKEN))
        summaries = summarize_groups(
            res,
            [[below.texts[r] for r in rows] for _, rows in batch],
            messages=lambda texts: summary_messages(texts, max_words=words),
            max_words=words,
            desc=f"{self.name} level {level}",
            parse=parse_summary,
            use_llm=self.config.summaries == "auto",
        )
        nodes, edges = [], []
        for (sid, rows), (text, written_by) in zip(batch, summaries, strict=True):
            members = [below.ids[r] for r in rows]
            sources = sorted({s for r in rows for s in below.sources[r]})
            data = {"level": level, "tree": self.name, "members": members,
                    "size": len(sources), "written_by": written_by}  # fmt: skip
            nodes.append(Node(sid, NodeKind.TREE_SUMMARY, f"{self.name} level {level}", text,
                              data, tuple(sources)))  # fmt: skip
            edges += [Edge(sid, m, EdgeKind.TREE_CHILD, 1.0) for m in members]
        with res.store.transaction():
            res.store.upsert_nodes(nodes)
            res.store.upsert_edges(edges)
        # Nodes first, vectors second: every vector has its node, so removing the nodes
        # that left the tree finds every vector to remove (a missing vector is re-made).
        self._embed(res, nodes)

    def _embed(self, res: Resources, nodes: list[Node]) -> None:
        res.upsert_vectors(
            self.collection,
            [n.id for n in nodes],
            [n.text or "" for n in nodes],
            [{"kind": NodeKind.TREE_SUMMARY.value, "level": n.data["level"], "tree": self.name}
             for n in nodes],
        )  # fmt: skip

    def _embed_missing(self, res: Resources, ids: list[str]) -> None:
        """Embed kept summaries whose vector a killed build did not write."""
        if not ids:
            return
        have = res.vectors.existing(self.collection, ids) if res.vectors.has_collection(
            self.collection) else set()  # fmt: skip
        lacking = [i for i in ids if i not in have]
        if lacking:
            nodes = res.store.get_nodes(lacking)
            self._embed(res, [nodes[i] for i in lacking if i in nodes])

    # -- removing -----------------------------------------------------------------------

    def _remove(self, res: Resources, ids: list[str]) -> None:
        """Drop summaries: vectors first, then nodes (a rerun finds what is left)."""
        if ids:
            res.delete_vectors(self.collection, ids)
            res.store.delete_nodes(ids)

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        """Drop the vectors of summaries the store removed, then rebuild what changed."""
        gone = [n for n in removed.node_ids if n.startswith(SUMMARY_PREFIX)]
        res.delete_vectors(self.collection, gone)
        self.update(res)

    def reset(self, res: Resources) -> None:
        self._remove(res, [n.id for n in self.tree_nodes(res)])
        with res.store.transaction():
            res.store.set_meta(self._fingerprint_key, "")
            res.store.set_meta(self._levels_key, "")
            res.store.set_meta(self._tree_key, "")
            res.store.set_meta(self._stale_key, "")
            res.store.clear_progress(self._chunks_task)


@register_layer
class RaptorTree(SummaryTree):
    name = "tree"
    description = "RAPTOR summary tree: UMAP + GMM (BIC) soft clusters, summarised level by level"
    collections = ("tree",)
    Config = TreeConfig

    config: TreeConfig

    def cluster(self, vectors: np.ndarray, tokens: Sequence[int]) -> list[list[int]]:
        from hygraph.graph.algorithms.raptor_clustering import raptor_clusters

        return raptor_clusters(
            vectors, tokens, dims=self.config.reduction_dimension,
            threshold=self.config.cluster_threshold, max_tokens=self.config.max_cluster_tokens,
            seed=self.config.cluster_seed, max_clusters=self.config.max_clusters,
        )  # fmt: skip


@register_layer
class KMeansTree(SummaryTree):
    name = "tree-kmeans"
    description = "RAPTOR-K summary tree: (balanced) K-means clusters, summarised level by level"
    collections = ("tree-kmeans",)
    Config = TreeKMeansConfig

    config: TreeKMeansConfig

    def cluster(self, vectors: np.ndarray, tokens: Sequence[int]) -> list[list[int]]:
        from hygraph.graph.algorithms.raptor_clustering import raptor_k_clusters

        return raptor_k_clusters(
            vectors, tokens, size=self.config.cluster_size, balanced=self.config.balanced,
            max_size_percentage=self.config.max_size_percentage,
            max_iter=self.config.kmeans_max_iter, tol=self.config.kmeans_tol,
            max_tokens=self.config.max_cluster_tokens, seed=self.config.cluster_seed,
        )  # fmt: skip
