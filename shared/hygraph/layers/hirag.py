"""``hirag``: HiRAG's hierarchical knowledge graph (HiIndex, spec 001 §3) over the shared graph.

Layer 0 is the shared entity graph (extract once, build many): its entities and
relation edges. HiRAG's two-pass extraction (entities first, then relations among the
chunk's entities, spec §3.2-3.3) is the shared ``llm-twostep`` extractor's pipeline,
and a precomputed OpenIE file (named entities, then triples among them) is the output
of that same two-pass scheme; this layer reads whichever extraction the index has.
Those extractions (and the offline rules) give entities no descriptions, so an
entity's **profile**, the text it is clustered and summarised by, is its description
when the extractor wrote one, else the statements of its relations (relation
descriptions, most of them the source sentences), whole statements in edge order until
``profile_words`` words are reached (ours).

Then, layer by layer (:mod:`hygraph.layers.hirag_levels`): the previous layer's
entities are embedded (their profiles, spec §9 #5) and clustered by a BIC-selected
Gaussian mixture with soft assignment; the cluster sparsity is compared with the
previous layer's and the construction stops when it changed by at most ε = 5% (the
paper's rule, exactly; the authors' extra guards ``max_sparsity`` and
``min_layer_entities`` are options, off by default); otherwise each cluster gets
summary entities (LLM, or extractive offline) linked to its members by
``hi_summary_of`` edges, which form the next layer. Summary entities are embedded
(``"name: description"``) in the ``hirag_entities`` collection; base entities keep
their vectors in the shared ``entities`` collection, so retrieval searches both.

Last, hierarchical Leiden runs over the multi-layer graph (relation edges and
``hi_summary_of`` edges, the largest connected component as in the authors' code,
``max_cluster_size`` 10, seed 0xDEADBEEF) with a report per community, through the
same machinery as the ``communities`` layer
(:func:`~hygraph.layers.communities.compute_communities`) under a scheme of its own
(``hi_community`` nodes, ``hirag_reports`` collection).

**Freshness and resumability.** The layer is recomputed when a fingerprint of the
entity graph (chunks, entity names and texts, relation edges) and of the options
changed, after inserts and deletes alike (spec §9 #25: the hierarchy is rebuilt from
all layer-0 entities). Each summary layer records in the store's meta table the
fingerprint of its input and that it finished, after its nodes, edges and vectors are
written: a rerun reuses every finished layer whose input is unchanged, and a layer
that must be rebuilt costs no LLM tokens for clusters whose prompt is unchanged (LLM
cache). Ids are deterministic (``hsum:<layer>:<name key>``), so nothing is duplicated;
the nodes, edges and vectors of summary entities or layers that vanished are deleted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.layers.base import Layer, LayerConfig, register_layer
from hygraph.layers.communities import (
    CommunityOptions,
    CommunityScheme,
    clear_communities,
    compute_communities,
    forget_removed,
)

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.layers.hirag_levels import LayerItem
    from hygraph.resources import Resources

SUMMARY_COLLECTION = "hirag_entities"
ENTITY_COLLECTION = "entities"  # the entity-vectors layer's collection (base entities)
FINGERPRINT_KEY = "layer:hirag:fingerprint"
LEVELS_KEY = "layer:hirag:levels"
EMBED_BATCH = 256

HIRAG_COMMUNITIES = CommunityScheme(
    layer="hirag",
    node_kind=NodeKind.HI_COMMUNITY,
    member_edge=EdgeKind.HI_IN_COMMUNITY,
    parent_edge=EdgeKind.HI_SUBCOMMUNITY,
    edge_kinds=(EdgeKind.RELATION, EdgeKind.HI_SUMMARY_OF),
    collection="hirag_reports",
    id_prefix="hcomm",
)
#: The multi-layer graph G_k: intra-layer relations and inter-layer summary edges.
HIRAG_EDGES = HIRAG_COMMUNITIES.edge_kinds

DEFAULT_META_TYPES = (
    "organization+person+location+event+product+technology+industry+mathematics+social sciences"
)


@dataclass
class HiragBuildOptions(CommunityOptions):
    """How the hierarchy is built (spec 001 §3.10); a method config carries the same names."""

    max_clusters: int = 50  # code: BIC over 1..min(N, 50) - 1 components
    assignment: str = "soft"  # code: soft (p > threshold) | hard (the paper's partition)
    cluster_threshold: float = 0.1  # code: soft-assignment posterior threshold
    reduction: str = "auto"  # code: umap (needs umap-learn); auto: umap, else pca
    reduce_dim: int = 2  # code: UMAP to 2 dimensions
    cluster_seed: int = 0  # code: GMM random_state
    bic_tolerance: float = 1e-3  # code: BIC search stops at this relative change
    cluster_text: str = "profile"  # code: profile: description / relation statements
    #   (spec 001 §9 #5) | index
    profile_words: int = 60  # ours: an entity's profile when the extraction gave no description
    sparsity_epsilon: float = 0.05  # paper: ε = 5% on the change rate of cluster sparsity
    max_layers: int = 50  # code: most layers built
    max_sparsity: float = 1.0  # paper: its rule only, 1.0 = off (the code stops at CS >= 0.98)
    min_layer_entities: int = 0  # paper: off (the code: 2, stops after a layer of <= 2)
    meta_types: str = DEFAULT_META_TYPES  # code: the meta summary types X
    summary_words: int = 100  # ours: length of an extractive summary entity's description
    cluster_token_cap: int = 60000  # code: tokens per cluster prompt (downsampled)
    link_all_members: bool = True  # paper: members without an up-link get one (spec 001 §9 #9)
    summary_llm: bool = True  # ours: LLM summary entities when an LLM is configured
    seed: int = 0xDEADBEEF  # code: Leiden random seed
    largest_component: bool = True  # code: Leiden on the largest connected component

    @property
    def meta_type_list(self) -> list[str]:
        return [t.strip() for t in self.meta_types.replace(",", "+").split("+") if t.strip()]


@dataclass
class HiragConfig(HiragBuildOptions, LayerConfig):
    """The ``hirag`` layer's options (see :class:`HiragBuildOptions`)."""


def _digest(value: Any) -> str:
    return hashlib.sha256(repr(value).encode()).hexdigest()[:16]


def _level_key(level: int) -> str:
    return f"layer:hirag:level:{level}"


def entity_profiles(res: Resources, max_words: int) -> dict[str, LayerItem]:
    """Layer 0: every base entity with its profile (see the module docstring), by id."""
    from hygraph.layers.community_reports import edge_text
    from hygraph.layers.hirag_levels import LayerItem

    entities = res.store.nodes_of_kind(NodeKind.ENTITY)
    names = {n.id: n.name or n.id for n in entities}
    statements: dict[str, list[str]] = {}
    if any(not (n.text or "").strip() for n in entities):
        for edge in res.store.iter_edges(EdgeKind.RELATION):
            label, description = edge_text(edge)
            text = description or (
                f"{names.get(edge.src, edge.src)} {label or 'related to'} "
                f"{names.get(edge.dst, edge.dst)}"
            )
            for end in (edge.src, edge.dst):
                got = statements.setdefault(end, [])
                if text not in got and sum(len(t.split()) for t in got) < max_words:
                    got.append(text)
    out = {}
    for n in sorted(entities, key=lambda n: n.id):
        text = (n.text or "").strip()
        if not text:
            text = " ".join(statements.get(n.id, []))
        out[n.id] = LayerItem(n.id, n.name or n.id, str(n.data.get("type") or ""), text)
    return out


@register_layer
class Hirag(Layer):
    name = "hirag"
    description = "HiRAG hierarchy: GMM summary-entity layers + Leiden communities with reports"
    requires = ("entity-graph",)
    collections = (SUMMARY_COLLECTION, HIRAG_COMMUNITIES.collection)
    Config = HiragConfig

    config: HiragConfig

    # -- freshness ----------------------------------------------------------------------

    def _fingerprint(self, res: Resources) -> str:
        rows = sorted(res.store.edge_rows([EdgeKind.RELATION]))
        entities = sorted((n.id, n.name, n.text) for n in res.store.nodes_of_kind(NodeKind.ENTITY))
        chunks = sorted(res.store.chunk_ids())
        return _digest((chunks, entities, rows, self.config.to_dict()))

    def pending(self, res: Resources) -> list[str]:
        stale = res.store.get_meta(FINGERPRINT_KEY) != self._fingerprint(res)
        return ["*"] if stale else []

    # -- build --------------------------------------------------------------------------

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> int:
        cfg = self.config
        fingerprint = self._fingerprint(res)
        base = entity_profiles(res, cfg.profile_words)
        items = list(base.values())
        vectors = self._base_vectors(res, items)
        previous: float | None = None
        built = tried = 0
        for level in range(1, cfg.max_layers + 1):
            record, items, vectors = self._level(res, level, items, vectors, previous, base)
            tried = level
            if record["stopped"]:
                break
            built, previous = level, record["cs"]
            if cfg.min_layer_entities and len(items) <= cfg.min_layer_entities:
                break
        self._drop_levels(res, above=built)
        _clear_records(res, above=tried)
        rows = res.store.edge_rows(list(HIRAG_EDGES))
        with res.tracker.stage("build:hirag:communities"):
            compute_communities(res, HIRAG_COMMUNITIES, cfg, rows)
        res.store.set_meta(LEVELS_KEY, str(built))
        res.store.set_meta(FINGERPRINT_KEY, fingerprint)
        return 0

    def _embed(self, res: Resources, texts: list[str], desc: str | None = None) -> np.ndarray:
        dim = int(res.embedder.dim)
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        starts = range(0, len(texts), EMBED_BATCH)
        if desc is not None and len(starts) > 1:
            starts = res.bar(starts, total=len(starts), desc=desc, unit="batch")
        parts = [np.asarray(res.embedder.embed(texts[s : s + EMBED_BATCH])) for s in starts]
        return np.vstack(parts).astype(np.float64)

    def _base_vectors(self, res: Resources, items: list[LayerItem]) -> np.ndarray:
        """Layer-0 clustering vectors: the profiles embedded, or the stored entity vectors."""
        if self.config.cluster_text == "index":
            stored = res.stored_vectors(ENTITY_COLLECTION, [i.id for i in items])
            missing = [i for i in items if i.id not in stored]
            if missing:
                found = self._embed(res, [i.name for i in missing])
                stored.update({i.id: v for i, v in zip(missing, found, strict=True)})
            return np.array([stored[i.id] for i in items], dtype=np.float64).reshape(len(items), -1)
        return self._embed(res, [i.text or i.name for i in items], "hirag: embedding entities")

    def _level(
        self,
        res: Resources,
        level: int,
        items: list[LayerItem],
        vectors: np.ndarray,
        previous: float | None,
        base: dict[str, LayerItem],
    ) -> tuple[dict[str, Any], list[LayerItem], np.ndarray]:
        """Build (or reuse) summary layer ``level`` from ``items``; its record and output."""
        from hygraph.layers.hirag_levels import cluster_layer, cluster_sparsity, stops

        cfg = self.config
        settings = {k: v for k, v in cfg.to_dict().items()
                    if k not in CommunityOptions.__dataclass_fields__}  # fmt: skip
        key = _digest((level, [(i.id, i.text) for i in items], previous, settings))
        saved = json.loads(res.store.get_meta(_level_key(level)) or "{}")
        if saved.get("input") == key and saved.get("done"):
            if saved["stopped"]:
                return saved, items, vectors
            nxt, nxt_vectors = self._reuse(res, level, saved["members"], items, vectors)
            return saved, nxt, nxt_vectors
        record: dict[str, Any] = {"input": key, "done": True, "stopped": True, "cs": None}
        if len(items) < 2:
            record["reason"] = "fewer than two entities"
        else:
            clusters = cluster_layer(
                vectors, assignment=cfg.assignment, max_clusters=cfg.max_clusters,
                threshold=cfg.cluster_threshold, reduction=cfg.reduction,
                reduce_dim=cfg.reduce_dim, seed=cfg.cluster_seed, bic_tolerance=cfg.bic_tolerance,
            )  # fmt: skip
            cs = cluster_sparsity(clusters, len(items))
            record.update(cs=cs, clusters=len(clusters), entities=len(items))
            if stops(cs, previous, cfg.sparsity_epsilon):
                record["reason"] = "sparsity change rate within epsilon"
            elif cfg.max_sparsity < 1.0 and cs >= cfg.max_sparsity:
                record["reason"] = "sparsity cap"
            else:
                record["stopped"] = False
                return self._write_level(res, level, items, vectors, clusters, record, base)
        res.store.set_meta(_level_key(level), json.dumps(record))
        return record, items, vectors

    def _write_level(
        self,
        res: Resources,
        level: int,
        items: list[LayerItem],
        vectors: np.ndarray,
        clusters: list[list[int]],
        record: dict[str, Any],
        base: dict[str, LayerItem],
    ) -> tuple[dict[str, Any], list[LayerItem], np.ndarray]:
        from hygraph.layers.hirag_levels import LayerItem, summarise_clusters

        cfg = self.config
        base_keys = frozenset(i.split(":", 1)[1] for i in base)
        with res.tracker.stage(f"build:hirag:level{level}"):
            result = summarise_clusters(
                res, items, vectors, clusters, level, meta_types=cfg.meta_type_list,
                max_words=cfg.summary_words, token_cap=cfg.cluster_token_cap,
                link_all=cfg.link_all_members, use_llm=cfg.summary_llm, base_keys=base_keys,
            )  # fmt: skip
        new_ids = {n.id for n in result.nodes}
        old_ids = [n.id for n in self._level_nodes(res, level)]
        vanished = [i for i in old_ids if i not in new_ids]
        res.delete_vectors(SUMMARY_COLLECTION, vanished)
        old_edges = self._level_edges(res, level)
        with res.store.transaction():
            res.store.delete_nodes(vanished)
            res.store.delete_edges(old_edges)
            res.store.upsert_nodes(result.nodes)
            res.store.upsert_edges(result.edges)
        self._embed_summaries(res, result.nodes)
        record["members"] = [n.id for n in result.nodes] + result.carried
        record["written_by"] = dict(result.written)
        res.store.set_meta(_level_key(level), json.dumps(record))
        position = {it.id: i for i, it in enumerate(items)}
        nxt = [LayerItem(n.id, n.name or n.id, str(n.data.get("type", "")), n.text or "")
               for n in result.nodes]  # fmt: skip
        nxt += [items[position[c]] for c in result.carried]
        rows = [result.vectors[n.id] for n in result.nodes]
        rows += [vectors[position[c]] for c in result.carried]
        return record, nxt, np.array(rows, dtype=np.float64).reshape(len(nxt), -1)

    def _reuse(
        self,
        res: Resources,
        level: int,
        members: list[str],
        items: list[LayerItem],
        vectors: np.ndarray,
    ) -> tuple[list[LayerItem], np.ndarray]:
        """The output of a finished layer, read back (its vectors completed if missing)."""
        from hygraph.layers.hirag_levels import LayerItem

        position = {it.id: i for i, it in enumerate(items)}
        nodes = res.store.get_nodes(m for m in members if m not in position)
        summaries = [nodes[m] for m in members if m in nodes]
        self._embed_summaries(res, summaries, only_missing=True)
        found = self._embed(res, [n.text or n.name or "" for n in summaries])
        by_id = {
            n.id: (LayerItem(n.id, n.name or n.id, str(n.data.get("type", "")), n.text or ""), v)
            for n, v in zip(summaries, found, strict=True)
        }
        for m in members:
            if m in position:
                by_id[m] = (items[position[m]], vectors[position[m]])
        kept = [by_id[m] for m in members if m in by_id]
        matrix = np.array([v for _, v in kept], dtype=np.float64).reshape(len(kept), -1)
        return [i for i, _ in kept], matrix

    def _embed_summaries(self, res: Resources, nodes: list, only_missing: bool = False) -> None:
        """Summary entities into ``hirag_entities`` as ``"name: description"``."""
        if only_missing and nodes and res.vectors.has_collection(SUMMARY_COLLECTION):
            have = res.vectors.existing(SUMMARY_COLLECTION, [n.id for n in nodes])
            nodes = [n for n in nodes if n.id not in have]
        res.upsert_vectors(
            SUMMARY_COLLECTION,
            [n.id for n in nodes],
            [f"{n.name}: {n.text}" if n.text else str(n.name) for n in nodes],
            [{"kind": str(NodeKind.HI_SUMMARY), "level": int(n.data.get("level", 0))}
             for n in nodes],
        )  # fmt: skip

    def _level_nodes(self, res: Resources, level: int | None = None, above: int = 0) -> list:
        nodes = res.store.nodes_of_kind(NodeKind.HI_SUMMARY)
        if level is not None:
            return [n for n in nodes if int(n.data.get("level", 0)) == level]
        return [n for n in nodes if int(n.data.get("level", 0)) > above]

    def _level_edges(self, res: Resources, level: int) -> list[tuple[str, str, str]]:
        return [(e.src, e.dst, e.kind) for e in res.store.iter_edges(EdgeKind.HI_SUMMARY_OF)
                if int(e.data.get("level", 0)) == level]  # fmt: skip

    def _drop_levels(self, res: Resources, above: int) -> None:
        """Remove the summary layers above ``above`` (nodes, edges, vectors, records)."""
        gone = [n.id for n in self._level_nodes(res, above=above)]
        res.delete_vectors(SUMMARY_COLLECTION, gone)
        edges = [(e.src, e.dst, e.kind) for e in res.store.iter_edges(EdgeKind.HI_SUMMARY_OF)
                 if int(e.data.get("level", 0)) > above]  # fmt: skip
        with res.store.transaction():
            res.store.delete_nodes(gone)
            res.store.delete_edges(edges)

    # -- delete and reset -----------------------------------------------------------------

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        forget_removed(res, HIRAG_COMMUNITIES, removed)
        self.update(res)

    def reset(self, res: Resources) -> None:
        clear_communities(res, HIRAG_COMMUNITIES)
        self._drop_levels(res, above=0)
        with res.store.transaction():
            _clear_records(res, above=0)
            res.store.set_meta(LEVELS_KEY, "")
            res.store.set_meta(FINGERPRINT_KEY, "")


def _clear_records(res: Resources, above: int) -> None:
    """Forget the build records of the layers above ``above`` (records run from layer 1 up)."""
    level = above + 1
    while res.store.get_meta(_level_key(level)):
        res.store.set_meta(_level_key(level), "")
        level += 1


def summary_layers(res: Resources) -> int:
    """How many summary layers the index's hierarchy has (0 before a build)."""
    return int(res.store.get_meta(LEVELS_KEY) or 0)


def level_records(res: Resources) -> list[dict[str, Any]]:
    """The build record of each summary layer tried: sparsity, clusters, why it stopped."""
    out = []
    level = 1
    while raw := res.store.get_meta(_level_key(level)):
        out.append({"level": level, **json.loads(raw)})
        level += 1
    return out
