"""``noderag``: NodeRAG (Xu et al., 2025), a heterograph of seven node types.

Build (spec 004 §3), over the chunks new since the last build (the *delta*; the
first build's delta is the whole corpus, so one code path serves both):

1. **decomposition**: each chunk's extraction becomes semantic units (S), the shared
   entities (N) and relationship nodes (R) linked to their two ends
   (:mod:`hygraph.graph.heterograph`); S are embedded;
2. **important entities**: k-core (``k = floor(ln|V| · sqrt(mean degree))``) and
   sampled betweenness (``b > mean(b) · floor(log10|V|)``) on the delta graph G1, kept
   if mentioned at least ``min_entity_mentions`` times; each gets an attribute node (A)
   written from its neighbouring S and R texts, linked to it and embedded. Entities
   that already have one are skipped (spec §5);
3. **communities**: single-level Leiden (graspologic's native Leiden) on G2 = G1 + A;
   per community with S or A members, high-level elements (H, embedded) with their
   titles (O); each H is linked to the S/A of its community that share its K-means
   cluster (``K = ceil(sqrt(|S|+|A|+|H|))``), or to the whole community when the
   average cluster holds 39 nodes or fewer (the authors' small-graph fallback);
4. **enrichment**: the chunks (T) link to their units; semantic edges join every
   embedded node (T, S, A, H) to its ``semantic_k`` nearest neighbours by cosine.

Without an LLM, A and H texts are extractive (:mod:`hygraph.extract.extractive`):
an A is the entity's name followed by the sentences of its units and relationship
statements that share the most vocabulary with the rest of them; an H is the same
selection over its community's S and A texts, and its title O names the
community's most connected entities. Neither is ever empty.

Search (spec §4): dual entry points (vector top-k over T/S/A/H; whole-word phrase
match of the question's entities on N and O names), a shallow personalized
PageRank (α = 0.5 restart, 2 iterations) over the whole heterograph as a sparse
matrix, per-type cross-node quotas (N → their A, O → their H, R, and T/S/A/H
together), N and O filtered out, and the context grouped by type.

Semantic edges: the paper merges an HNSW index's base layer into the graph. We use
an exact cosine kNN graph (deterministic; 1.0 s for 9,935 nodes on MuSiQue); ``knn="qdrant"``
takes the neighbours from the vector index's own HNSW search instead, and an insert
always does (new nodes query the index, as the authors' code adds to its HNSW).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hygraph.errors import ConfigError
from hygraph.graph.entity_graph import ENTITY_KIND
from hygraph.graph.heterograph import (
    ATTRIBUTE_EDGE,
    ATTRIBUTE_KIND,
    HIGH_LEVEL_KIND,
    MEMBER_EDGE,
    MENTION_EDGE,
    OVERVIEW_KIND,
    SEMANTIC_EDGE,
    STRUCTURAL_EDGES,
    TITLE_EDGE,
    Decomposition,
    HeterographBuilder,
    attribute_id,
    high_level_id,
    node_type,
    overview_id,
)
from hygraph.graph.store import Edge, Node
from hygraph.methods.base import Method, MethodConfig, register
from hygraph.retrieval.context import Context, Section
from hygraph.retrieval.evidence import Evidence
from hygraph.retrieval.fusion import reciprocal_rank_fusion

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.index import GraphIndex
    from hygraph.models.base import Message

log = logging.getLogger("hygraph")

NODE_COLLECTION = "noderag"
LAYER_TASK = "layer:noderag"
LLM_CONCURRENCY = 8
TYPE_TITLES = {
    "H": "High-level elements",
    "A": "Entity attributes",
    "S": "Semantic units",
    "R": "Relationships",
    "T": "Source passages",
}
EVIDENCE_KINDS = {
    "H": "high_level",
    "A": "attribute",
    "S": "unit",
    "R": "relationship",
    "T": "chunk",
}


def _types(text: str, allowed: str) -> list[str]:
    parts = [p.strip().upper() for p in re.split(r"[+,]", text) if p.strip()]
    bad = [p for p in parts if p not in allowed]
    if bad:
        raise ConfigError(f"unknown node type(s) {', '.join(bad)}; use letters of {allowed}")
    return parts


@dataclass
class NodeRAGConfig(MethodConfig):
    # -- search (spec §4.6)
    top_k: int = 10  # vector entry points (reference code HNSW_results)
    entry_types: str = "T+S+A+H"  # vector entry types (spec §8 #5: T included)
    exact_entries: bool = True  # ablation "w/o dual search" when false
    exact_match: str = "contains"  # whole-word phrase containment (code) | equal
    query_entities: str = "auto"  # auto (LLM if configured, else offline) | llm | offline
    semantic_edges: bool = True  # ablation "w/o HNSW" when false
    ppr: bool = True  # ablation "w/o cross node" (plain vector top-k) when false
    ppr_alpha: float = 0.5  # teleport probability (paper)
    ppr_iterations: int = 2  # shallow: t = 2 (paper)
    ppr_mode: str = "restart"  # restart (paper) | lazy (reference code, spec §8 #1)
    cap_edge_weights: bool = False  # reference code's unbalance_adjust (spec §8 #2)
    vector_entry_weight: float = 1.0  # personalization weights (spec §8 #3)
    exact_entry_weight: float = 1.0
    entity_quota: int = 10  # N cross nodes, each expanded to its A (code Enode)
    relationship_quota: int = 30  # R cross nodes (shipped config Rnode)
    overview_quota: int = 10  # O cross nodes, each expanded to its H (code Hnode)
    content_quota: int = 10  # T/S/A/H cross nodes together (code cross_node)
    expand_cross: bool = True  # N -> A and O -> H (spec §8 #7)
    type_order: str = "H+A+S+R+T"  # context groups (spec §8 #23)
    passage_rank: str = "context"  # context (retrieval order) | ppr | fused (ours, see docs)
    rrf_k: int = 10  # fused: reciprocal-rank constant
    fused_depth: int = 50  # fused: depth of the dense and walk rankings that are fused
    passage_items: int = 0  # > 0: the passages shown are the best of the passage ranking
    bridge_units: int = 0  # fused: > 0 adds the chunks of units one bridge entity away
    bridge_pool: int = 30  # fused: nearest embedded nodes searched for the top units
    bridge_weight: float = 0.5  # fused: weight of the bridge list in the fusion
    bridge_fanout: int = 100  # fused: skip bridge entities mentioned by more units (hubs)
    # -- build (spec §3.5)
    kcore: str = "core"  # true k-core (spec §8 #9) | degree (paper's literal test)
    kcore_rounding: str = "floor"  # floor (paper) | round (reference code)
    betweenness_samples: int = 10  # sampled sources (paper)
    min_entity_mentions: int = 2  # reference code keeps weight > 1 (spec §8 #10)
    attribute_max_words: int = 2000  # attribute prompt cap (paper, Appendix E)
    prompt_budget: int = 128_000  # tokens of neighbour text per prompt (reference code)
    extractive_words: int = 120  # offline A/H length (our choice)
    leiden_resolution: float = 1.0  # modularity, single level (spec §8 #12)
    leiden_weighted: bool = False  # reference code: unweighted
    cluster_size: int = 39  # small-graph fallback threshold (reference code Hcluster_size)
    semantic_k: int = 10  # neighbours per embedded node (ours; HNSW L0 in the paper)
    knn: str = "exact"  # exact | qdrant (the vector index's HNSW search)
    link_relationships_to_units: bool = False  # R–S edges (spec §8 #16)
    seed: int = 0

    def __post_init__(self) -> None:
        if self.ppr_mode not in ("restart", "lazy"):
            raise ConfigError("ppr_mode must be restart or lazy")
        if self.exact_match not in ("contains", "equal"):
            raise ConfigError("exact_match must be contains or equal")
        if self.query_entities not in ("auto", "llm", "offline"):
            raise ConfigError("query_entities must be auto, llm or offline")
        if self.kcore not in ("core", "degree"):
            raise ConfigError("kcore must be core or degree")
        if self.kcore_rounding not in ("floor", "round"):
            raise ConfigError("kcore_rounding must be floor or round")
        if self.passage_rank not in ("context", "ppr", "fused"):
            raise ConfigError("passage_rank must be context, ppr or fused")
        if self.knn not in ("exact", "qdrant"):
            raise ConfigError("knn must be exact or qdrant")
        if not 0.0 <= self.ppr_alpha <= 1.0:
            raise ConfigError("ppr_alpha must be between 0 and 1")
        _types(self.entry_types, "TSAH")
        _types(self.type_order, "HASRT")


@dataclass
class _View:
    """The heterograph as arrays for one store version (what every query reads)."""

    ids: list[str]
    position: dict[str, int]
    types: np.ndarray  # type letter per position
    adjacency: Any  # weighted, symmetric (sparse)
    transposed: Any  # P^T (sparse)
    attributes: dict[str, list[str]]  # N id -> its A ids
    elements: dict[str, list[str]]  # O id -> its H ids
    matcher: Any  # ExactMatcher over N and O names
    unit_chunks: dict[str, list[str]]  # S id -> the chunks it was decomposed from
    mentions: dict[str, list[str]]  # S id -> the entities it mentions
    mentioned_in: dict[str, list[str]]  # N id -> the units that mention it


@register
class NodeRAG(Method):
    name = "noderag"
    Config = NodeRAGConfig
    description = "NodeRAG: heterograph of units, entities, attributes and insights; shallow PPR"
    collections = (NODE_COLLECTION,)

    config: NodeRAGConfig

    def __init__(self, config: Any = None):
        super().__init__(config)
        self._views: dict[tuple, _View] = {}
        self._delta_tag = ""
        self.build_seconds: dict[str, float] = {}

    # -- build ------------------------------------------------------------------------

    def build(self, index: GraphIndex, chunk_ids: Sequence[str]) -> None:
        done = index.store.done_items(LAYER_TASK)
        first = not done
        delta = [c for c in chunk_ids if c not in done]
        if not delta:
            return
        self.build_seconds = {}
        self._delta_tag = hashlib.sha256("\n".join(sorted(delta)).encode()).hexdigest()[:12]
        cfg = self.config
        builder = HeterographBuilder(
            index.store, link_relationships_to_units=cfg.link_relationships_to_units
        )
        with self._step("decomposition"):
            extractions = list(index.store.get_extractions(delta).values())
            dec = builder.decompose(extractions)
            builder.write(dec.update)
        with self._step("embed units"):
            unit_ids = list(dec.units)
            unit_vectors = self._embed(index, unit_ids, [dec.units[i] for i in unit_ids], "S")
        with self._step("attributes"):
            attr_nodes, attr_edges = self._attributes(index, dec)
            builder.write_nodes_edges(attr_nodes, attr_edges)
            attr_vectors = self._embed(
                index, [n.id for n in attr_nodes], [n.text or "" for n in attr_nodes], "A"
            )
        with self._step("communities"):
            communities = self._communities(dec, attr_edges)
        with self._step("high-level elements"):
            high_nodes, title_nodes, title_edges, high_community = self._high_level(
                index, dec, communities, attr_nodes
            )
            builder.write_nodes_edges([*high_nodes, *title_nodes], title_edges)
            high_vectors = self._embed(
                index, [n.id for n in high_nodes], [n.text or "" for n in high_nodes], "H"
            )
        with self._step("semantic matching"):
            member_edges = self._link_high_level(
                dec, communities, high_community, unit_ids, unit_vectors, attr_nodes,
                attr_vectors, high_nodes, high_vectors,
            )  # fmt: skip
            builder.write_nodes_edges([], member_edges)
        with self._step("semantic edges"):
            ids = [*delta, *unit_ids, *(n.id for n in attr_nodes), *(n.id for n in high_nodes)]
            chunk_vectors = self._chunk_vectors(index, delta)
            vectors = np.vstack(
                [v for v in (chunk_vectors, unit_vectors, attr_vectors, high_vectors) if len(v)]
            ) if ids else np.zeros((0, 0), dtype=np.float32)  # fmt: skip
            edges = self._semantic_edges(index, ids, vectors, exact=first and cfg.knn == "exact")
            builder.write_nodes_edges([], edges)
        index.store.mark_done(LAYER_TASK, delta)
        log.info(
            "noderag: %d units, %d relationships, %d attributes, %d high-level elements; %s",
            len(dec.units), len(dec.relationships), len(attr_nodes), len(high_nodes),
            ", ".join(f"{k} {v:.1f}s" for k, v in self.build_seconds.items()),
        )  # fmt: skip

    @contextmanager
    def _step(self, name: str) -> Iterator[None]:
        """Time one build step into :attr:`build_seconds` (logged when the build ends)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            took = time.perf_counter() - start
            self.build_seconds[name] = self.build_seconds.get(name, 0.0) + took

    def _embed(
        self, index: GraphIndex, ids: Sequence[str], texts: Sequence[str], kind: str
    ) -> np.ndarray:
        """Embed and store node texts in the NodeRAG collection; returns their vectors."""
        from hygraph.index import EMBED_BATCH, _progress

        dim = int(index.manifest.dim or 0)
        if not ids:
            return np.zeros((0, dim), dtype=np.float32)
        index.vectors.ensure_collection(NODE_COLLECTION, dim)
        out = []
        starts = range(0, len(ids), EMBED_BATCH)
        bar = _progress(
            starts, total=len(starts), desc=f"noderag: embed {kind}", enabled=index.progress,
            unit="batch",
        )  # fmt: skip
        for start in bar:
            batch_ids = list(ids[start : start + EMBED_BATCH])
            vectors = index.embedder.embed(list(texts[start : start + EMBED_BATCH]))
            index.vectors.upsert(
                NODE_COLLECTION, batch_ids, vectors, [{"kind": kind} for _ in batch_ids]
            )
            out.append(np.asarray(vectors, dtype=np.float32))
        return np.vstack(out)

    def _chunk_vectors(self, index: GraphIndex, chunk_ids: Sequence[str]) -> np.ndarray:
        """The chunks' stored vectors (embedded again only if the store lacks some)."""
        from hygraph.index import CHUNK_COLLECTION

        dim = int(index.manifest.dim or 0)
        if not chunk_ids:
            return np.zeros((0, dim), dtype=np.float32)
        stored = index.vectors.vectors(CHUNK_COLLECTION, chunk_ids)
        missing = [c for c in chunk_ids if c not in stored]
        if missing:
            texts = index.chunk_texts(missing)
            vectors = index.embedder.embed([texts[c] for c in missing])
            stored.update(zip(missing, np.asarray(vectors, dtype=np.float32), strict=True))
        return np.vstack([stored[c] for c in chunk_ids]).astype(np.float32)

    # -- augmentation: attributes -------------------------------------------------------

    def _attributes(self, index: GraphIndex, dec: Decomposition) -> tuple[list[Node], list[Edge]]:
        """A nodes for the delta's important entities that have none yet (spec §3.2)."""
        from hygraph.graph.importance import important_entities

        cfg = self.config
        importance = important_entities(
            dec.g1,
            samples=cfg.betweenness_samples,
            seed=cfg.seed,
            kcore=cfg.kcore,
            rounding=cfg.kcore_rounding,
            min_mentions=cfg.min_entity_mentions,
        )
        chosen = sorted(importance.entities)
        existing = index.store.get_nodes(attribute_id(e) for e in chosen)
        # Entities with an attribute from an earlier build keep it (spec §5); one written
        # for this very delta by a build that was killed later is reused as it is.
        resumed = [n for n in existing.values() if n.data.get("delta") == self._delta_tag]
        todo = [e for e in chosen if attribute_id(e) not in existing]
        resumed_edges = [
            Edge(n.data["entity"], n.id, ATTRIBUTE_EDGE, 1.0, {}, tuple(n.sources)) for n in resumed
        ]
        if not todo:
            return resumed, resumed_edges
        names = index.store.get_nodes(todo)
        g1 = dec.g1
        inputs: list[tuple[str, str, list[str], list[str], set[str]]] = []
        neighbour_nodes = index.store.get_nodes({n for e in todo for n in g1.neighbors(e)})
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
            units, rels = self._fit_budget(units, rels)
            sources = {
                s for n in ranked if n in neighbour_nodes for s in neighbour_nodes[n].sources
            }
            inputs.append((eid, name or eid, units, rels, sources))
        texts = self._write_attributes(index, inputs)
        nodes: list[Node] = list(resumed)
        edges: list[Edge] = list(resumed_edges)
        for (eid, name, _units, _rels, sources), (text, how) in zip(inputs, texts, strict=True):
            aid = attribute_id(eid)
            data = {"entity": eid, "written_by": how, "delta": self._delta_tag}
            nodes.append(Node(aid, ATTRIBUTE_KIND, name, text, data, tuple(sorted(sources))))
            edges.append(Edge(eid, aid, ATTRIBUTE_EDGE, 1.0, {}, tuple(sorted(sources))))
        return nodes, edges

    def _fit_budget(self, units: list[str], rels: list[str]) -> tuple[list[str], list[str]]:
        """Keep neighbours in order of importance until the prompt budget is reached."""
        from hygraph.ingest.tokenizer import default_tokenizer

        left = self.config.prompt_budget
        if sum(len(t) for t in units) + sum(len(t) for t in rels) <= left:
            return units, rels  # a token is at least one character: everything fits
        tok = default_tokenizer()
        kept_u: list[str] = []
        kept_r: list[str] = []
        for text, into in [*((u, kept_u) for u in units), *((r, kept_r) for r in rels)]:
            cost = tok.count(text)
            if cost > left:
                break
            into.append(text)
            left -= cost
        return kept_u, kept_r

    def _write_attributes(
        self, index: GraphIndex, inputs: list[tuple[str, str, list[str], list[str], set[str]]]
    ) -> list[tuple[str, str]]:
        """Attribute texts: the LLM's portrait, or an extractive one (offline or on failure)."""
        from hygraph.extract.extractive import extractive_summary

        def offline(name: str, units: list[str], rels: list[str]) -> str:
            body = extractive_summary([*units, *rels], self.config.extractive_words)
            return f"{name}: {body}" if body else name

        if index.llm is None:
            return [(offline(n, u, r), "extractive") for _, n, u, r, _ in inputs]
        from hygraph.extract.noderag import clean_summary
        from hygraph.prompts.noderag import attribute_messages

        prompts = [
            attribute_messages(n, u, r, max_words=self.config.attribute_max_words)
            for _, n, u, r, _ in inputs
        ]
        replies = self._complete_all(index, prompts, "attributes")
        out = []
        for (_, name, units, rels, _), reply in zip(inputs, replies, strict=True):
            try:
                if isinstance(reply, BaseException):
                    raise reply
                out.append((clean_summary(reply), "llm"))
            except Exception as err:  # noqa: BLE001 - one bad reply must not lose the build
                log.warning("noderag: attribute of %s falls back to extractive (%s)", name, err)
                out.append((offline(name, units, rels), "extractive"))
        return out

    def _complete_all(
        self, index: GraphIndex, prompts: list[list[Message]], what: str
    ) -> list[str | BaseException]:
        """Run the prompts concurrently (bounded), with a progress bar; failures are returned."""
        from hygraph.index import _progress
        from hygraph.models.llm import run_sync

        llm = index.llm
        assert llm is not None
        bar = _progress(
            None, total=len(prompts), desc=f"noderag: {what}", enabled=index.progress, unit="call"
        )

        async def one(messages: list[Message], gate: asyncio.Semaphore) -> str:
            async with gate:
                try:
                    reply = await llm.acomplete(messages, temperature=0)
                finally:
                    if hasattr(bar, "update"):
                        bar.update(1)
                return reply.text

        async def run() -> list[Any]:
            gate = asyncio.Semaphore(LLM_CONCURRENCY)
            return await asyncio.gather(*(one(p, gate) for p in prompts), return_exceptions=True)

        try:
            return list(run_sync(run))
        finally:
            if hasattr(bar, "close"):
                bar.close()

    # -- augmentation: communities and high-level elements -------------------------------

    def _communities(self, dec: Decomposition, attr_edges: Sequence[Edge]) -> dict[str, int]:
        """Single-level Leiden on G2 = the delta graph plus its new attribute nodes."""
        from hygraph.graph.communities import leiden_communities

        g1 = dec.g1
        nodes = [*g1.nodes, *(e.dst for e in attr_edges)]
        edges = [(u, v, float(d.get("weight", 1.0))) for u, v, d in g1.edges(data=True)]
        edges += [(e.src, e.dst, 1.0) for e in attr_edges]
        return leiden_communities(
            nodes,
            edges,
            resolution=self.config.leiden_resolution,
            seed=self.config.seed,
            weighted=self.config.leiden_weighted,
        )

    def _high_level(
        self,
        index: GraphIndex,
        dec: Decomposition,
        communities: dict[str, int],
        attr_nodes: Sequence[Node],
    ) -> tuple[list[Node], list[Node], list[Edge], dict[str, int]]:
        """H and O nodes per community with S or A members (spec §3.3, §8 #13)."""
        attr_text = {n.id: n.text or "" for n in attr_nodes}
        attr_sources = {n.id: n.sources for n in attr_nodes}
        members: dict[int, list[str]] = {}
        for node_id, cid in communities.items():
            if node_id in dec.units or node_id in attr_text:
                members.setdefault(cid, []).append(node_id)
        g1 = dec.g1

        def weight(n: str) -> float:
            return float(g1.nodes[n].get("weight", 1)) if n in g1 else 1.0

        groups = []
        for cid in sorted(members):
            ordered = sorted(members[cid], key=lambda n: (-weight(n), n))
            texts = [dec.units.get(n) or attr_text.get(n, "") for n in ordered]
            texts, _ = self._fit_budget(texts, [])
            sources = {
                s for n in ordered for s in (dec.unit_chunks.get(n) or attr_sources.get(n, ()))
            }
            groups.append((cid, ordered, texts, sources))
        elements = self._write_elements(index, dec, communities, groups)
        tag = self._delta_tag
        high_nodes: dict[str, Node] = {}
        title_nodes: dict[str, Node] = {}
        edges: list[Edge] = []
        high_community: dict[str, int] = {}
        for (cid, _ordered, _texts, sources), found in zip(groups, elements, strict=True):
            for title, description in found:
                hid = high_level_id(description)
                oid = overview_id(title)
                src = tuple(sorted(sources))
                high_nodes[hid] = Node(
                    hid, HIGH_LEVEL_KIND, title, description,
                    {"community": f"{tag}:{cid}", "title": title}, src,
                )  # fmt: skip
                high_community[hid] = cid
                title_nodes.setdefault(oid, Node(oid, OVERVIEW_KIND, title, title, {}, src))
                edges.append(Edge(hid, oid, TITLE_EDGE, 1.0, {}, src))
        return list(high_nodes.values()), list(title_nodes.values()), edges, high_community

    def _write_elements(
        self,
        index: GraphIndex,
        dec: Decomposition,
        communities: dict[str, int],
        groups: list[tuple[int, list[str], list[str], set[str]]],
    ) -> list[list[tuple[str, str]]]:
        """(title, description) pairs per community: the LLM's, or one extractive element."""
        from hygraph.extract.extractive import extractive_summary

        g1 = dec.g1
        by_community: dict[int, list[str]] = {}
        for node_id, cid in communities.items():
            if node_id in g1 and g1.nodes[node_id].get("type") == "N":
                by_community.setdefault(cid, []).append(node_id)

        def offline(cid: int, texts: list[str]) -> list[tuple[str, str]]:
            body = extractive_summary(texts, self.config.extractive_words)
            if not body:
                return []
            entities = sorted(by_community.get(cid, []), key=lambda n: (-g1.degree(n), n))[:3]
            names = [dec.entity_names.get(e, e[4:]) for e in entities]
            title = " / ".join(n for n in names if n) or " ".join(body.split()[:4])
            return [(title, body)]

        if index.llm is None:
            return [offline(cid, texts) for cid, _, texts, _ in groups]
        from hygraph.extract.noderag import parse_high_level_elements
        from hygraph.prompts.noderag import high_level_messages

        replies = self._complete_all(
            index, [high_level_messages(texts) for _, _, texts, _ in groups], "high-level elements"
        )
        out: list[list[tuple[str, str]]] = []
        for (cid, _, texts, _), reply in zip(groups, replies, strict=True):
            try:
                if isinstance(reply, BaseException):
                    raise reply
                found = [(t.strip(), d.strip()) for t, d in parse_high_level_elements(reply)]
                found = [(t or " ".join(d.split()[:4]), d) for t, d in found if d]
                if not found:
                    raise ValueError("no elements in the reply")
                out.append(found)
            except Exception as err:  # noqa: BLE001 - one bad reply must not lose the build
                log.warning("noderag: community %s falls back to extractive (%s)", cid, err)
                out.append(offline(cid, texts))
        return out

    def _link_high_level(
        self,
        dec: Decomposition,
        communities: dict[str, int],
        high_community: dict[str, int],
        unit_ids: Sequence[str],
        unit_vectors: np.ndarray,
        attr_nodes: Sequence[Node],
        attr_vectors: np.ndarray,
        high_nodes: Sequence[Node],
        high_vectors: np.ndarray,
    ) -> list[Edge]:
        """H–S/A edges by semantic matching within community (Algorithm 2)."""
        from hygraph.graph.semantic_match import link_high_level

        if not high_nodes:
            return []
        ids = [*unit_ids, *(n.id for n in attr_nodes), *(n.id for n in high_nodes)]
        types = ["S"] * len(unit_ids) + ["A"] * len(attr_nodes) + ["H"] * len(high_nodes)
        vectors = np.vstack([v for v in (unit_vectors, attr_vectors, high_vectors) if len(v)])
        membership = {**communities, **high_community}
        pairs = link_high_level(
            ids, types, vectors, membership, seed=self.config.seed,
            cluster_size=self.config.cluster_size,
        )  # fmt: skip
        sources = {n.id: n.sources for n in attr_nodes}
        sources.update({u: tuple(c) for u, c in dec.unit_chunks.items()})
        return [Edge(h, m, MEMBER_EDGE, 1.0, {}, tuple(sources.get(m, ()))) for h, m in pairs]

    # -- enrichment: semantic edges ------------------------------------------------------

    def _semantic_edges(
        self, index: GraphIndex, ids: Sequence[str], vectors: np.ndarray, *, exact: bool
    ) -> list[Edge]:
        """kNN edges among embedded nodes: exact over the delta, or the vector index's HNSW."""
        from hygraph.retrieval.knn import knn_edges

        k = self.config.semantic_k
        if not ids or k <= 0:
            return []
        if exact:
            pairs = knn_edges(vectors, k)
            return [
                Edge(ids[i], ids[j], SEMANTIC_EDGE, 1.0, {"cosine": round(s, 4)})
                for i, j, s in pairs
            ]
        edges: dict[tuple[str, str], float] = {}
        for node_id, vector in zip(ids, vectors, strict=True):
            for other, score in self._nearest(index, vector, k + 1):
                if other != node_id:
                    key = (node_id, other) if node_id < other else (other, node_id)
                    edges[key] = max(edges.get(key, -1.0), score)
        return [
            Edge(a, b, SEMANTIC_EDGE, 1.0, {"cosine": round(s, 4)}) for (a, b), s in edges.items()
        ]

    def _nearest(self, index: GraphIndex, vector: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The k embedded nodes (T, S, A, H) nearest to ``vector``, via the vector index."""
        from hygraph.index import CHUNK_COLLECTION

        hits = [*index.search_vectors(CHUNK_COLLECTION, vector, k),
                *index.search_vectors(NODE_COLLECTION, vector, k)]  # fmt: skip
        hits.sort(key=lambda h: -h.score)
        return [(h.id, float(h.score)) for h in hits[:k]]

    def reset(self, index: GraphIndex) -> None:
        """Remove the whole layer (nodes, ``nr_*`` edges, vectors, progress marks)."""
        from hygraph.graph.heterograph import TYPE_KINDS

        nodes = [
            n.id
            for letter, kind in TYPE_KINDS.items()
            if letter != "N"  # entities belong to the shared graph
            for n in index.store.nodes_of_kind(kind)
        ]
        edges = [
            (e.src, e.dst, e.kind)
            for kind in (*STRUCTURAL_EDGES, SEMANTIC_EDGE)
            for e in index.store.iter_edges(kind)
        ]
        with index.store.transaction():
            index.store.delete_nodes(nodes)
            index.store.delete_edges(edges)
            index.store.clear_progress(LAYER_TASK)
        index.delete_vectors(NODE_COLLECTION, [n for n in nodes if node_type(n) in "SAH"])
        self._views = {}

    # -- delete -----------------------------------------------------------------------

    def delete(self, index: GraphIndex, removed: DeleteResult) -> None:
        """Drop what only the deleted chunks supported; rewrite A/H nodes that lost support.

        S and R nodes, their edges, and A/H nodes whose every source is gone leave with
        the store's provenance. An A or H that survives but lost sources summarised
        deleted text: it is written again from its remaining neighbours (one LLM call
        each when an LLM is configured). R statements of deleted chunks are removed.
        """
        if self.name != NodeRAG.name and NodeRAG.name in index.manifest.methods:
            return  # the shared layer is repaired once, by noderag itself
        gone = set(removed.node_ids)
        index.delete_vectors(NODE_COLLECTION, [n for n in gone if node_type(n) in ("S", "A", "H")])
        touched = index.store.get_nodes(removed.touched_node_ids)
        lost = set(removed.chunk_ids)
        relationships = []
        for node in touched.values():
            if node.kind == "relationship":
                statements = {
                    c: s for c, s in node.data.get("statements", {}).items() if c not in lost
                }
                texts = list(dict.fromkeys(t for c in sorted(statements) for t in statements[c]))
                node.data = {**node.data, "statements": statements, "weight": len(statements)}
                node.text = "; ".join(texts)
                relationships.append(node)
            elif node.kind == "unit":
                node.data = {**node.data, "weight": len(node.sources)}
                relationships.append(node)
        index.store.upsert_nodes(relationships)
        stale = [n for n in touched.values() if n.kind in (ATTRIBUTE_KIND, HIGH_LEVEL_KIND)]
        if stale:
            self._rewrite(index, stale)

    def _rewrite(self, index: GraphIndex, stale: Sequence[Node]) -> None:
        """Write stale A and H nodes again from the neighbours they still have."""
        from hygraph.extract.extractive import extractive_summary

        refreshed: list[Node] = []
        for node in stale:
            if node.kind == ATTRIBUTE_KIND:
                entity = node.data.get("entity", "")
                near = [e.src if e.dst == entity else e.dst for e in index.store.edges_of(entity)]
            else:
                near = [
                    e.dst if e.src == node.id else e.src
                    for e in index.store.edges_of(node.id, MEMBER_EDGE)
                ]
            # An attribute reads its units and statements; an element its units and attributes.
            kinds = (
                ("unit", "relationship")
                if node.kind == ATTRIBUTE_KIND
                else ("unit", ATTRIBUTE_KIND)
            )
            texts = [
                n.text or ""
                for n in index.store.get_nodes(near).values()
                if n.kind in kinds and n.id != node.id
            ]
            if not texts:
                continue
            if index.llm is not None and node.kind == ATTRIBUTE_KIND:
                [(text, how)] = self._write_attributes(
                    index, [(node.data.get("entity", ""), node.name or "", texts, [], set())]
                )
            elif index.llm is not None:
                text, how = self._rewrite_element(index, node, texts)
            else:
                body = extractive_summary(texts, self.config.extractive_words)
                text = f"{node.name}: {body}" if node.kind == ATTRIBUTE_KIND else body
                how = "extractive"
            node.text = text
            node.data = {**node.data, "written_by": how}
            refreshed.append(node)
        index.store.upsert_nodes(refreshed)
        for kind in ("A", "H"):
            chosen = [n for n in refreshed if node_type(n.id) == kind]
            self._embed(index, [n.id for n in chosen], [n.text or "" for n in chosen], kind)

    def _rewrite_element(self, index: GraphIndex, node: Node, texts: list[str]) -> tuple[str, str]:
        """An element written again by the LLM from its remaining members: the new element
        with the same title, else the first; extractive if the call or its reply fails."""
        from hygraph.extract.extractive import extractive_summary
        from hygraph.extract.noderag import parse_high_level_elements
        from hygraph.prompts.noderag import high_level_messages

        assert index.llm is not None
        try:
            reply = index.llm.complete(high_level_messages(texts), temperature=0)
            found = [(t, d) for t, d in parse_high_level_elements(reply.text) if d.strip()]
        except Exception as err:  # noqa: BLE001 - the element stays usable either way
            log.warning("noderag: element %s falls back to extractive (%s)", node.id, err)
            found = []
        if not found:
            return extractive_summary(texts, self.config.extractive_words), "extractive"
        title = (node.name or "").casefold()
        same = [d for t, d in found if t.strip().casefold() == title]
        return (same or [found[0][1]])[0].strip(), "llm"

    # -- search -----------------------------------------------------------------------

    def _view(self, index: GraphIndex) -> _View:
        """The heterograph's transition matrix and lookups, cached per store version."""
        from hygraph.retrieval.exact_match import ExactMatcher
        from hygraph.retrieval.shallow_ppr import (
            cap_edge_weights,
            symmetric_adjacency,
            transition_transpose,
        )

        cfg = self.config
        key = (str(index.path), index.store.version(), cfg.semantic_edges, cfg.cap_edge_weights)
        if key in self._views:
            return self._views[key]
        kinds = [*STRUCTURAL_EDGES, *([SEMANTIC_EDGE] if cfg.semantic_edges else [])]
        rows = index.store.edge_rows(kinds)
        position: dict[str, int] = {}
        for src, dst, _ in rows:
            position.setdefault(src, len(position))
            position.setdefault(dst, len(position))
        names = {
            n.id: n.name or n.text or ""
            for kind in (ENTITY_KIND, OVERVIEW_KIND)
            for n in index.store.nodes_of_kind(kind)
        }
        for node_id in names:
            position.setdefault(node_id, len(position))
        ids = list(position)
        # Structural and semantic edges on the same pair add up (spec §3.4: +1 on overlap).
        adjacency = symmetric_adjacency(
            len(ids), ((position[s], position[d], w) for s, d, w in rows)
        )
        if cfg.cap_edge_weights:
            adjacency = cap_edge_weights(adjacency)
        attributes: dict[str, list[str]] = {}
        for src, dst, _ in index.store.edge_rows([ATTRIBUTE_EDGE]):
            attributes.setdefault(src, []).append(dst)
        elements: dict[str, list[str]] = {}
        for src, dst, _ in index.store.edge_rows([TITLE_EDGE]):
            elements.setdefault(dst, []).append(src)
        mentions: dict[str, list[str]] = {}
        mentioned_in: dict[str, list[str]] = {}
        for unit, entity, _ in index.store.edge_rows([MENTION_EDGE]):
            mentions.setdefault(unit, []).append(entity)
            mentioned_in.setdefault(entity, []).append(unit)
        unit_chunks: dict[str, list[str]] = {}
        for unit, chunk in index.store.provenance_of_kind("unit"):
            unit_chunks.setdefault(unit, []).append(chunk)
        view = _View(
            ids=ids,
            position=position,
            types=np.array([node_type(i) for i in ids]),
            adjacency=adjacency,
            transposed=transition_transpose(adjacency),
            attributes=attributes,
            elements=elements,
            matcher=ExactMatcher(names),
            unit_chunks=unit_chunks,
            mentions=mentions,
            mentioned_in=mentioned_in,
        )
        self._views = {key: view}
        return view

    def question_entities(self, index: GraphIndex, question: str) -> list[str]:
        """The question's entities and key terms (spec §4.1): the LLM's, or the offline rules'.

        If the LLM fails, there are no exact entry points (the vector ones still work).
        """
        from hygraph.extract.noderag import parse_query_elements
        from hygraph.prompts.noderag import query_elements_messages
        from hygraph.retrieval.question import question_entities

        found = question_entities(
            index, question, self.config.query_entities,
            messages=query_elements_messages, parse=parse_query_elements, label="noderag",
            fallback="vector entry points only",
        )  # fmt: skip
        return found or []

    def _vector_entries(
        self, index: GraphIndex, query: np.ndarray, k: int
    ) -> list[tuple[str, float]]:
        """The k embedded nodes of the entry types nearest to the question."""
        types = set(_types(self.config.entry_types, "TSAH"))
        hits: list[tuple[str, float]] = []
        if "T" in types:
            hits += [(h.id, h.score) for h in index.search_chunks(query, k)]
        kinds = sorted(types - {"T"})
        if kinds:
            pool = index.search_vectors(NODE_COLLECTION, query, k, kinds=kinds)
            hits += [(h.id, h.score) for h in pool]
        hits.sort(key=lambda h: (-h[1], h[0]))
        return hits[:k]

    def retrieve(self, index: GraphIndex, question: str, top_k: int | None = None) -> Context:
        cfg = self.config
        k = top_k or cfg.top_k
        query = index.embedder.embed_query(question)
        entries = self._vector_entries(index, query, k)
        entry_ids = [i for i, _ in entries]
        scores_by_id = dict(entries)
        picked: list[str] = list(entry_ids)
        ppr_score: dict[str, float] = {}
        exact: list[str] = []
        mass: dict[str, float] = {}
        if cfg.ppr:
            picked, ppr_score, exact, mass = self._walk(index, question, entries)
        context = self._context(index, picked, scores_by_id, ppr_score, set(entry_ids), exact)
        if cfg.passage_rank != "context" and mass:
            walk = sorted(mass, key=lambda c: (-mass[c], c))
            if cfg.passage_rank == "ppr":
                context.ranking = walk + (context.ranking or [])
            else:
                dense = [h.id for h in index.search_chunks(query, cfg.fused_depth)]
                rankings = [dense, walk[: cfg.fused_depth]]
                weights = [1.0, 1.0]
                if cfg.bridge_units > 0:
                    rankings.append(self._bridge_chunks(index, question, query))
                    weights.append(cfg.bridge_weight)
                fused = reciprocal_rank_fusion(rankings, cfg.rrf_k, weights)
                context.ranking = [c for c, _ in fused]
        if cfg.passage_items > 0:
            best = context.chunk_ranking()[: cfg.passage_items]
            items = index.chunk_evidence([(c, 1.0 / (n + 1)) for n, c in enumerate(best)])
            for item in items:
                item.metadata = {**item.metadata, "type": "T", "via": "ranking"}
            sections = {s.title: s for s in context.sections}
            sections[TYPE_TITLES["T"]] = Section(TYPE_TITLES["T"], items)
            order = [TYPE_TITLES[t] for t in _types(cfg.type_order, "HASRT")]
            context.sections = [sections[t] for t in order if t in sections and sections[t].items]
        return context

    def _bridge_chunks(self, index: GraphIndex, question: str, query: np.ndarray) -> list[str]:
        """Chunks of the units one bridge entity away from the best units (ours).

        The entities of the ``bridge_units`` units nearest to the question that the
        question does not name are bridges; their other units rank by cosine to the
        question (:func:`~hygraph.retrieval.bridge.bridge_items`).
        """
        from hygraph.retrieval.bridge import bridge_items

        cfg = self.config
        view = self._view(index)
        hits = index.search_vectors(NODE_COLLECTION, query, cfg.bridge_pool)
        units = [h.id for h in hits if node_type(h.id) == "S"]
        ranked = bridge_items(
            index, NODE_COLLECTION, query, units[: cfg.bridge_units],
            members_of=lambda u: view.mentions.get(u, ()),
            items_of=lambda e: view.mentioned_in.get(e, []),
            asked=question.casefold(), fanout=cfg.bridge_fanout, seen=set(units), used=set(),
        )  # fmt: skip
        return list(dict.fromkeys(c for u in ranked for c in view.unit_chunks.get(u, ())))

    def _walk(
        self, index: GraphIndex, question: str, entries: list[tuple[str, float]]
    ) -> tuple[list[str], dict[str, float], list[str], dict[str, float]]:
        """Entry points → shallow PPR → per-type cross nodes (spec §4.2–4.3).

        Returns the picked node ids, the PPR scores of the cross nodes, the exact entry
        points, and each chunk's walk mass (its own plus its units').
        """
        from hygraph.retrieval.shallow_ppr import shallow_ppr

        cfg = self.config
        view = self._view(index)
        exact: list[str] = []
        if cfg.exact_entries:
            terms = self.question_entities(index, question)
            exact = view.matcher.match(terms, equal=cfg.exact_match == "equal")
        personalization: dict[int, float] = {}
        for node_id, _ in entries:
            if node_id in view.position:
                personalization[view.position[node_id]] = cfg.vector_entry_weight
        for node_id in exact:
            pos = view.position[node_id]
            personalization[pos] = personalization.get(pos, 0.0) + cfg.exact_entry_weight
        picked = [i for i, _ in entries]
        if not personalization:
            return picked, {}, exact, {}
        scores = shallow_ppr(
            view.adjacency, personalization, alpha=cfg.ppr_alpha, iterations=cfg.ppr_iterations,
            mode=cfg.ppr_mode, transposed=view.transposed,
        )  # fmt: skip
        order = np.argsort(-scores, kind="stable")
        quotas = {
            "N": cfg.entity_quota,
            "R": cfg.relationship_quota,
            "O": cfg.overview_quota,
            "C": cfg.content_quota,
        }
        entry_set = set(picked)
        ppr_score: dict[str, float] = {}
        cross: list[str] = []
        expanded_a: list[str] = []
        expanded_h: list[str] = []
        relations: list[str] = []
        for pos in order:
            if scores[pos] <= 0 or not any(quotas.values()):
                break
            node_id = view.ids[pos]
            if node_id in entry_set:
                continue
            kind = str(view.types[pos])
            group = "C" if kind in ("T", "S", "A", "H") else kind
            if quotas[group] <= 0:
                continue
            quotas[group] -= 1
            ppr_score[node_id] = float(scores[pos])
            if group == "C":
                cross.append(node_id)
            elif kind == "R":
                relations.append(node_id)
            elif kind == "N" and cfg.expand_cross:
                for aid in view.attributes.get(node_id, []):
                    expanded_a.append(aid)
                    ppr_score.setdefault(aid, float(scores[pos]))
            elif kind == "O" and cfg.expand_cross:
                for hid in view.elements.get(node_id, []):
                    expanded_h.append(hid)
                    ppr_score.setdefault(hid, float(scores[pos]))
        # The authors' order: entries, cross content, attributes, elements, relationships.
        picked = list(dict.fromkeys([*picked, *cross, *expanded_a, *expanded_h, *relations]))
        mass: dict[str, float] = {}
        if cfg.passage_rank != "context":
            for pos in np.flatnonzero(scores):
                kind = view.types[pos]
                if kind == "T":
                    mass[view.ids[pos]] = mass.get(view.ids[pos], 0.0) + float(scores[pos])
                elif kind == "S":
                    for chunk in view.unit_chunks.get(view.ids[pos], ()):
                        mass[chunk] = mass.get(chunk, 0.0) + float(scores[pos])
        return picked, ppr_score, exact, mass

    def _context(
        self,
        index: GraphIndex,
        picked: list[str],
        entry_scores: dict[str, float],
        ppr_score: dict[str, float],
        entries: set[str],
        exact: list[str],
    ) -> Context:
        """Evidence grouped by type, entries before cross nodes within a type (spec §8 #23)."""
        chunk_ids = [i for i in picked if node_type(i) == "T"]
        nodes = index.store.get_nodes(i for i in picked if node_type(i) != "T")
        chunk_items = {e.id: e for e in index.chunk_evidence([(c, 0.0) for c in chunk_ids])}
        groups: dict[str, list[Evidence]] = {t: [] for t in TYPE_TITLES}
        ranking: list[str] = []
        for rank, node_id in enumerate(picked):
            kind = node_type(node_id)
            if kind not in groups:
                continue  # N and O never reach the context
            score = entry_scores.get(node_id, ppr_score.get(node_id, 0.0))
            via = "vector" if node_id in entries else "ppr"
            if kind == "T":
                item = chunk_items.get(node_id)
                if item is None:
                    continue
                item.score = score
                item.metadata = {**item.metadata, "type": "T", "via": via, "rank": rank}
            else:
                node = nodes.get(node_id)
                if node is None or not node.text:
                    continue
                sources = tuple(node.sources)
                meta: dict[str, Any] = {"type": kind, "via": via, "rank": rank}
                if node.name:
                    meta["name"] = node.name
                item = Evidence(EVIDENCE_KINDS[kind], node.text, score, sources, id=node_id,
                                metadata=meta)  # fmt: skip
            groups[kind].append(item)
            if kind in ("T", "S", "R"):  # A and H summarise many chunks: not passage ranks
                ranking.extend(item.source_ids)
        context = Context()
        for kind in _types(self.config.type_order, "HASRT"):
            if groups[kind]:
                context.add(TYPE_TITLES[kind], groups[kind])
        context.ranking = ranking
        return context

    # -- answer -----------------------------------------------------------------------

    def answer_messages(self, question: str, context: str) -> list[Message]:
        from hygraph.prompts.noderag import answer_messages

        return answer_messages(question, context)


@dataclass
class NodeRAGFusedConfig(NodeRAGConfig):
    passage_rank: str = "fused"  # ours: dense ranking fused with the walk's passage mass
    semantic_edges: bool = False  # ours: the walk follows shared entities, not similarity
    ppr_iterations: int = 3  # ours: one more step reaches a second passage's units
    type_order: str = "T+S+H+A+R"  # ours: passages first, so a tight budget keeps them
    passage_items: int = 5  # ours: the passages shown are the best of the fused ranking
    bridge_units: int = 3  # ours: also fuse the chunks of units one bridge entity away


@register
class NodeRAGFused(NodeRAG):
    """NodeRAG's graph and search with our passage ranking for multi-hop questions.

    Same layer as ``noderag`` (built once for both) and the same entry points, walk and
    quotas. Passages rank by fusing dense retrieval, the PageRank mass each chunk and
    its units receive, and (at half weight) the chunks of units one bridge entity away
    from the three best units; the walk ignores the kNN edges and takes three steps,
    and the context opens with the best five passages. Any option of ``noderag``
    applies.
    """

    name = "noderag-fused"
    Config = NodeRAGFusedConfig
    description = "noderag + fused passage ranking (our improvement for multi-hop)"
