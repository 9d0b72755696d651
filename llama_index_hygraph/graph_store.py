"""A hygraph index's graph as a LlamaIndex ``PropertyGraphStore``.

:class:`HyGraphPropertyGraphStore` reads and writes the core graph store of a
:class:`~hygraph.index.GraphIndex`, so a stock ``PropertyGraphIndex`` and its stock
retrievers (``VectorContextRetriever``, ``LLMSynonymRetriever``) work over a hygraph index,
and a ``PropertyGraphIndex`` can write its extractions into one.

How the typed core graph looks to LlamaIndex:

=====================================  ==================================================
core                                    LlamaIndex
=====================================  ==================================================
entity node ``ent:<key>``               ``EntityNode(name=display name, label=entity type)``
fact node ``fact:<hash>`` (n-ary)       ``EntityNode(name=fact text, label="fact")``
other typed nodes (future methods)      ``EntityNode(name=name or text, label=kind)``
chunk (in a document)                   ``ChunkNode(id_=chunk id, text=title + chunk text)``
``li_chunk`` node (written by LI)       ``ChunkNode`` with the LlamaIndex node's id, text
                                        and metadata, so ``get_llama_nodes`` rebuilds it
``relation`` edge                       ``Relation(label=its label)``, entity to entity
``mentions`` edge, chunk to entity      ``Relation(label="MENTIONS")``
``incidence`` edge, fact to entity      ``Relation(label="HAS_MEMBER")``
``li:<label>`` edge (written by LI)     ``Relation(label=<label>)``, any nodes
a method's own layer edges (NodeRAG's   not shown: they index the graph for one method
``nr_*``: units, attributes, kNN ...)   and would flood triplets and rel maps
=====================================  ==================================================

Facts are ``EntityNode``s, not ``ChunkNode``s, because a retriever writes a triplet as
``subject.id -> label -> object.id``: a fact then reads as its statement
(``"<fact text> -> HAS_MEMBER -> Dunmere"``), where a ``ChunkNode`` would show its hash id.

**Identity.** LlamaIndex identifies an ``EntityNode`` by its name; the core by
``ent:<entity_key(name)>``. Every lookup by id (``get``, ``get_triplets``, ``delete``)
therefore accepts, in this order: a core node id (``ent:...``, ``fact:...``), a chunk id,
a fact's text, or an entity name in any spelling that has the same
:func:`~hygraph.extract.keys.entity_key` (``"aldercott shipyard"``, the capitalised
keywords ``LLMSynonymRetriever`` produces). Nodes this store returns carry their core id
in ``properties["id"]``, which ``get_rel_map`` prefers, so what ``vector_query`` returns
always round-trips.

**Source text.** Every returned node and relation carries ``triplet_source_id`` (a chunk
that supports it); in a triplet the subject carries the relation's own source, so a
retriever's ``include_text`` adds the chunk that states the relation. ``get_llama_nodes``
turns chunk ids into ``TextNode``s.

**Rel maps** follow relations and fact memberships in both directions, strongest first.
``MENTIONS`` edges are followed out of chunks only: an entity's chunks reach a retriever
as source text, and a frequent entity would otherwise fill the map with its chunks.

**Writes** (``upsert_nodes``, ``upsert_relations``) keep the core's conventions, so the
entity graph's derivations and deletes keep working: an ``EntityNode`` becomes a mention
of entity ``ent:<key>`` by its ``triplet_source_id`` chunk (type from the label,
``description`` and ``score`` from its properties, other properties kept); an
``EntityNode`` labelled ``fact`` becomes a fact node; a relation between two entities
becomes a ``relation`` edge (the core keeps one edge per ordered entity pair, labelled
with its most frequent label, and only ``description`` and ``weight`` of a relation's
properties), ``HAS_MEMBER`` from a fact an ``incidence`` edge, ``MENTIONS`` from a chunk
a ``mentions`` edge, and any other relation an ``li:<label>`` edge with its properties.
A relation to a node that does not exist creates an entity of that name, as LlamaIndex's
own ``SimplePropertyGraphStore`` does. ``ChunkNode``\\s with the id of one of the index's
chunks are already stored; others become ``li_chunk`` nodes. The properties ``id`` and
``kind`` are this store's own and are not stored. Given embeddings of entities and facts
are stored in the index's ``entities`` and ``facts`` vector collections (those of chunks
are not: the index's chunk collection holds its own chunks only); they must come from the
index's embedder (:class:`~llama_index_hygraph.models.HyGraphEmbedding` over it), which is
checked by dimension only. Writes without a ``triplet_source_id`` are recorded under the
source ``"llama-index"``.

**Deletes.** Deleting a chunk written through LlamaIndex (``delete(ids=[node id])``,
``delete_llama_nodes``) withdraws it as provenance, exactly as deleting a document does
in the core: what only it supported goes, shared entities keep the rest. Chunks of the
index's own documents are deleted with ``GraphIndex.delete(doc_id)``, not here.

The graph is persisted by SQLite as it is written, so ``persist`` does nothing; Cypher
(``structured_query``) is not supported.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from llama_index.core.graph_stores.types import (
    TRIPLET_SOURCE_KEY,
    ChunkNode,
    EntityNode,
    LabelledNode,
    PropertyGraphStore,
    Relation,
    Triplet,
)
from llama_index.core.schema import BaseNode, NodeRelationship, RelatedNodeInfo, TextNode
from llama_index.core.vector_stores.types import VectorStoreQuery
from llama_index.core.vector_stores.utils import metadata_dict_to_node

from hygraph.errors import IndexMismatchError
from hygraph.extract.keys import display_name, entity_key
from hygraph.extract.schema import (
    DEFAULT_ENTITY_SCORE,
    DEFAULT_FACT_SCORE,
    DEFAULT_TYPE,
    Entity,
    Extraction,
    Fact,
)
from hygraph.extract.schema import Relation as CoreRelation
from hygraph.graph.entity_graph import EntityGraphBuilder, GraphUpdate, entity_node_id
from hygraph.graph.hypergraph import HypergraphBuilder, fact_node_id
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import Edge, Node

if TYPE_CHECKING:
    from hygraph.graph.store import GraphStore
    from hygraph.index import GraphIndex

log = logging.getLogger("hygraph")

FACT_LABEL = "fact"
CHUNK_KIND = "chunk"  # the ``kind`` property of the index's own chunks (they are no nodes)
LI_CHUNK_KIND = "li_chunk"
LI_EDGE_PREFIX = "li:"
MENTIONS_LABEL = "MENTIONS"
HAS_MEMBER_LABEL = "HAS_MEMBER"
DEFAULT_RELATION_LABEL = "related to"  # what the core calls an unlabelled relation
MANUAL_SOURCE = "llama-index"  # provenance of writes that name no triplet_source_id
ENTITY_COLLECTION = "entities"  # the hypergraph methods' collections (same payloads)
FACT_COLLECTION = "facts"
CHUNK_COLLECTION = "chunks"
_KIND_LABELS = {EdgeKind.MENTION: MENTIONS_LABEL, EdgeKind.INCIDENCE: HAS_MEMBER_LABEL}
_KIND_ORDER = {EdgeKind.RELATION: 0, EdgeKind.INCIDENCE: 2, EdgeKind.MENTION: 3}
# Properties this store derives on read: never stored as a node's own properties.
_DERIVED = frozenset({"id", "kind", "description", "score", TRIPLET_SOURCE_KEY})


def kind_label(kind: str) -> str:
    """The relation label LlamaIndex sees for an edge kind (relation edges have their own)."""
    if kind in _KIND_LABELS:
        return _KIND_LABELS[kind]
    if kind.startswith(LI_EDGE_PREFIX):
        return kind[len(LI_EDGE_PREFIX) :]
    return kind.upper()


def shown_kind(kind: str) -> bool:
    """Whether edges of ``kind`` belong to the graph LlamaIndex sees (see the table)."""
    return kind in (EdgeKind.RELATION, EdgeKind.INCIDENCE, EdgeKind.MENTION) or kind.startswith(
        LI_EDGE_PREFIX
    )


def edge_label(edge: Edge) -> str:
    """The relation label LlamaIndex sees for a core edge."""
    if edge.kind == EdgeKind.RELATION:
        return str(edge.data.get("label") or DEFAULT_RELATION_LABEL)
    return kind_label(edge.kind)


def _edge_sources(edge: Edge) -> list[str]:
    """The chunks an edge came from, as far as its payload records them."""
    if edge.kind in (EdgeKind.RELATION, EdgeKind.INCIDENCE):
        return list(edge.data.get("entries", {}))
    if edge.kind == EdgeKind.MENTION:
        return [edge.src]
    source = edge.data.get("source")
    return [source] if source else []


def _number(value: Any, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def _any_match(props: dict[str, Any], wanted: dict[str, Any]) -> bool:
    """LlamaIndex's property filter: any one ``key == value`` pair matches."""
    return any(k in props and props[k] == v for k, v in wanted.items())


class HyGraphPropertyGraphStore(PropertyGraphStore):
    """The graph of a core :class:`~hygraph.index.GraphIndex` as a ``PropertyGraphStore``.

    Args:
        index: the core index, or anything with a ``graph_index`` attribute (such as
            :class:`~llama_index_hygraph.HyGraphIndex`).
        vector_collection: the collection ``vector_query`` searches: ``"entities"``
            (default; the hypergraph methods build it, and writes with embeddings add to
            it) or ``"facts"`` (n-ary facts, whose rel maps are their members). When the
            index has no such collection, ``vector_query`` searches the chunks instead and
            returns ``ChunkNode``\\s, whose rel maps are the entities they mention.

    See the module documentation for the mapping, identities, and what writes do.
    """

    supports_structured_queries: bool = False
    supports_vector_queries: bool = True

    def __init__(self, index: GraphIndex | Any, *, vector_collection: str = ENTITY_COLLECTION):
        self.graph_index: GraphIndex = getattr(index, "graph_index", index)
        self.vector_collection = vector_collection
        self._schema: tuple[tuple[int, int, int], dict[str, Any]] | None = None

    @property
    def store(self) -> GraphStore:
        return self.graph_index.store

    @property
    def client(self) -> GraphIndex:
        """The core index itself."""
        return self.graph_index

    # -- identity -----------------------------------------------------------------------

    def _resolve(self, refs: Iterable[Any]) -> dict[str, str]:
        """``ref -> core id`` (node or chunk id) for each ref that names something stored.

        A ref is tried as a core node id, a chunk id, a fact's text, and an entity name
        (by its entity key), in that order.
        """
        refs = [r for r in dict.fromkeys(refs) if isinstance(r, str) and r]
        found = self.store.get_nodes(refs)
        out = {r: r for r in refs if r in found}
        rest = [r for r in refs if r not in out]
        chunks = self.store.get_chunks(rest)
        out.update((r, r) for r in rest if r in chunks)
        rest = [r for r in rest if r not in out]
        guesses = {r: (fact_node_id(r), entity_node_id(entity_key(r))) for r in rest}
        found = self.store.get_nodes(i for pair in guesses.values() for i in pair)
        for ref, (fact_id, ent_id) in guesses.items():
            if fact_id in found:
                out[ref] = fact_id
            elif ent_id in found and entity_key(ref):
                out[ref] = ent_id
        return out

    def _seed_ids(self, nodes: Sequence[LabelledNode]) -> list[str]:
        """Core ids of LlamaIndex nodes: their ``properties["id"]`` if it resolves, else id."""
        refs: list[tuple[Any, str]] = [(n.properties.get("id"), n.id) for n in nodes]
        resolved = self._resolve(r for pair in refs for r in pair)
        out: list[str] = []
        for own, node_id in refs:
            core = resolved.get(own) if isinstance(own, str) else None
            core = core or resolved.get(node_id)
            if core is not None:
                out.append(core)
        return list(dict.fromkeys(out))

    # -- reading: conversion --------------------------------------------------------------

    @staticmethod
    def _first_source(node: Node) -> str | None:
        """A chunk that supports the node: its first mention's chunk, else any source."""
        first = node.data.get("tally", {}).get("first") or [None, None]
        legacy = node.data.get("mentions", {})  # an index written before the records table
        for source in [first[1], *legacy, *node.sources]:
            if source is None:
                continue
            if source != MANUAL_SOURCE:
                return source
        return None

    def _labelled(self, node: Node) -> LabelledNode:
        """The LlamaIndex node for a core node (see the module's mapping table)."""
        if node.kind == LI_CHUNK_KIND:
            props = dict(node.data.get("properties", {}))
            props.update({"id": node.id, "kind": LI_CHUNK_KIND, TRIPLET_SOURCE_KEY: node.id})
            label = str(node.data.get("label") or "text_chunk")
            return ChunkNode(text=node.text or "", id_=node.id, label=label, properties=props)
        props = {k: v for k, v in node.data.get("properties", {}).items() if k not in _DERIVED}
        props.update({"id": node.id, "kind": node.kind})
        if node.kind == NodeKind.ENTITY:
            label = str(node.data.get("type") or DEFAULT_TYPE)
            name = node.name or node.id
            props["description"] = node.text or ""
            props["score"] = _number(node.data.get("score"), DEFAULT_ENTITY_SCORE)
        elif node.kind == NodeKind.FACT:
            label, name = FACT_LABEL, node.text or node.id
            props["score"] = _number(node.data.get("score"), DEFAULT_FACT_SCORE)
        else:
            label, name = node.kind, node.name or node.text or node.id
            if node.name and node.text:
                props["description"] = node.text
        source = self._first_source(node)
        if source is not None:
            props[TRIPLET_SOURCE_KEY] = source
        return EntityNode(name=name, label=label, properties=props)

    def _load(self, ids: Iterable[str]) -> dict[str, LabelledNode]:
        """LlamaIndex nodes for core ids (nodes and chunks); unknown ids are left out."""
        ids = list(dict.fromkeys(ids))
        nodes = self.store.get_nodes(ids)
        out: dict[str, LabelledNode] = {i: self._labelled(n) for i, n in nodes.items()}
        rest = [i for i in ids if i not in nodes]
        chunks = self.store.get_chunks(rest)
        if chunks:
            texts = self.graph_index.chunk_texts(chunks)
            titles = self.store.document_titles(c.doc_id for c in chunks.values())
            for cid, chunk in chunks.items():
                props: dict[str, Any] = {
                    "id": cid,
                    "kind": CHUNK_KIND,
                    "doc_id": chunk.doc_id,
                    TRIPLET_SOURCE_KEY: cid,
                }
                if titles.get(chunk.doc_id):
                    props["title"] = titles[chunk.doc_id]
                out[cid] = ChunkNode(text=texts[cid], id_=cid, properties=props)
        return out

    def _relation(self, edge: Edge, src: LabelledNode, dst: LabelledNode) -> Relation:
        props: dict[str, Any] = {}
        if edge.kind.startswith(LI_EDGE_PREFIX):
            props.update(edge.data.get("properties", {}))
        props.update({"kind": edge.kind, "weight": float(edge.weight)})
        entries = edge.data.get("entries", {})
        if edge.kind == EdgeKind.RELATION:
            texts = [str(e[1]).strip() for items in entries.values() for e in items]
        elif edge.kind == EdgeKind.INCIDENCE:
            texts = [str(e[1]).strip() for e in entries.values()]
        else:
            texts = []
        description = "\n".join(dict.fromkeys(t for t in texts if t))
        if description:
            props["description"] = description
        sources = [s for s in _edge_sources(edge) if s != MANUAL_SOURCE]
        if sources:
            props[TRIPLET_SOURCE_KEY] = sources[0]
        return Relation(
            label=edge_label(edge), source_id=src.id, target_id=dst.id, properties=props
        )

    def _triplets(self, edges: Sequence[Edge]) -> list[tuple[Edge, Triplet]]:
        """Each edge with its triplet; edges whose ends are not stored are left out.

        The subject carries the relation's own ``triplet_source_id``, so a retriever's
        source text is the chunk that states the relation.
        """
        edges = [e for e in edges if shown_kind(e.kind)]
        ends = self._load(i for e in edges for i in (e.src, e.dst))
        out: list[tuple[Edge, Triplet]] = []
        for edge in edges:
            src, dst = ends.get(edge.src), ends.get(edge.dst)
            if src is None or dst is None:
                continue
            relation = self._relation(edge, src, dst)
            source = relation.properties.get(TRIPLET_SOURCE_KEY)
            if source is not None and src.properties.get(TRIPLET_SOURCE_KEY) != source:
                src = src.model_copy(
                    update={"properties": {**src.properties, TRIPLET_SOURCE_KEY: source}}
                )
            out.append((edge, (src, relation, dst)))
        return out

    # -- reading: queries -----------------------------------------------------------------

    def get(
        self,
        properties: dict | None = None,
        ids: list[str] | None = None,
    ) -> list[LabelledNode]:
        """Nodes by id or name (see the module docs), by properties, or all of them.

        With both, nodes named by ``ids`` that match any one property are returned.
        ``triplet_source_id``, ``id`` and ``kind`` are looked up directly; other
        properties scan the graph.
        """
        if ids:
            resolved = self._resolve(ids)
            loaded = self._load(resolved.values())
            nodes = [loaded[c] for c in dict.fromkeys(resolved.values()) if c in loaded]
            if properties:
                nodes = [n for n in nodes if _any_match(n.properties, properties)]
            return nodes
        if properties:
            return self._matching_nodes(properties)
        return list(self._all_nodes())

    def _all_nodes(self) -> Iterable[LabelledNode]:
        for kind in self.store.counts()["nodes"]:
            yield from (self._labelled(n) for n in self.store.nodes_of_kind(kind))
        chunk_ids = self.store.chunk_ids()
        for start in range(0, len(chunk_ids), 500):
            yield from self._load(chunk_ids[start : start + 500]).values()

    def _matching_nodes(self, properties: dict[str, Any]) -> list[LabelledNode]:
        ids: list[str] = []
        scan: dict[str, Any] = {}
        for key, value in properties.items():
            if key == TRIPLET_SOURCE_KEY and isinstance(value, str):
                ids.append(value)  # the chunk itself, then what it supports
                ids.extend(self.store.nodes_from_sources([value]))
            elif key == "id" and isinstance(value, str):
                ids.append(value)
            elif key == "kind" and value == CHUNK_KIND:
                ids.extend(self.store.chunk_ids())
            elif key == "kind" and isinstance(value, str):
                ids.extend(n.id for n in self.store.nodes_of_kind(value))
            else:
                scan[key] = value
        loaded = self._load(ids)
        out = {i: loaded[i] for i in dict.fromkeys(ids) if i in loaded}
        if scan:
            for node in self._all_nodes():
                key = node.properties.get("id", node.id)
                if key not in out and _any_match(node.properties, scan):
                    out[key] = node
        return list(out.values())

    def _edges_labelled(self, labels: Iterable[str]) -> list[Edge]:
        """Every edge whose LlamaIndex label is one of ``labels`` (case-insensitive)."""
        wanted = {str(label).casefold() for label in labels}
        out: list[Edge] = []
        for kind in filter(shown_kind, self.store.counts()["edges"]):
            if kind == EdgeKind.RELATION:
                out.extend(
                    e for e in self.store.iter_edges(kind) if edge_label(e).casefold() in wanted
                )
            elif kind_label(kind).casefold() in wanted:
                out.extend(self.store.iter_edges(kind))
        return out

    def _match_edges(
        self,
        entity_names: list[str] | None,
        relation_names: list[str] | None,
        properties: dict | None,
        ids: list[str] | None,
    ) -> list[tuple[Edge, Triplet]]:
        edges: dict[tuple[str, str, str], Edge] = {}
        if entity_names or ids:
            named = set(self._resolve(entity_names or []).values()) if entity_names else None
            by_id = set(self._resolve(ids or []).values()) if ids else None
            for node_id in named if named is not None else by_id or ():
                for edge in self.store.edges_of(node_id):
                    edges.setdefault((edge.src, edge.dst, edge.kind), edge)
            if named is not None and by_id is not None:
                edges = {k: e for k, e in edges.items() if e.src in by_id or e.dst in by_id}
        elif relation_names:
            edges = {(e.src, e.dst, e.kind): e for e in self._edges_labelled(relation_names)}
        elif properties:
            source = properties.get(TRIPLET_SOURCE_KEY)
            if len(properties) == 1 and isinstance(source, str):
                keys = self.store.edges_from_sources([source])
                edges = dict(self.store.get_edges(keys))
                edges.update(((e.src, e.dst, e.kind), e) for e in self.store.edges_of(source))
            else:
                edges = {(e.src, e.dst, e.kind): e for e in self.store.iter_edges()}
        else:
            return []
        matched = list(edges.values())
        if relation_names:
            wanted = {str(n).casefold() for n in relation_names}
            matched = [e for e in matched if edge_label(e).casefold() in wanted]
        pairs = self._triplets(matched)
        if properties:
            pairs = [
                (e, t) for e, t in pairs if any(_any_match(x.properties, properties) for x in t)
            ]
        return pairs

    def get_triplets(
        self,
        entity_names: list[str] | None = None,
        relation_names: list[str] | None = None,
        properties: dict | None = None,
        ids: list[str] | None = None,
    ) -> list[Triplet]:
        """Triplets touching the named nodes, with the given labels, or matching properties.

        The filters combine as in ``SimplePropertyGraphStore``: every given filter must
        hold (a property filter matches when any one pair matches subject, relation or
        object); with no filter, nothing is returned.
        """
        return [t for _, t in self._match_edges(entity_names, relation_names, properties, ids)]

    def get_rel_map(
        self,
        graph_nodes: list[LabelledNode],
        depth: int = 2,
        limit: int = 30,
        ignore_rels: list[str] | None = None,
    ) -> list[Triplet]:
        """Triplets within ``depth`` hops of ``graph_nodes``, breadth first, at most ``limit``.

        Seeds come first in the order given, each one's edges strongest first
        (relations, then fact memberships); ``MENTIONS`` is followed out of chunks only.
        """
        ignore = {str(r).casefold() for r in ignore_rels or ()}
        frontier = self._seed_ids(graph_nodes)
        visited = set(frontier)
        chosen: dict[tuple[str, str, str], Edge] = {}
        for _ in range(max(0, depth)):
            if not frontier or len(chosen) >= limit:
                break
            stored = self.store.get_nodes(frontier)
            following: list[str] = []
            for node_id in frontier:
                node = stored.get(node_id)
                from_chunk = node is None or node.kind == LI_CHUNK_KIND
                edges = sorted(
                    self.store.edges_of(node_id),
                    key=lambda e: (_KIND_ORDER.get(e.kind, 1), -e.weight, e.src, e.dst),
                )
                for edge in edges:
                    key = (edge.src, edge.dst, edge.kind)
                    if not shown_kind(edge.kind):
                        continue
                    if key in chosen or (edge.kind == EdgeKind.MENTION and not from_chunk):
                        continue
                    if edge_label(edge).casefold() in ignore:
                        continue
                    chosen[key] = edge
                    other = edge.dst if edge.src == node_id else edge.src
                    if other not in visited:
                        visited.add(other)
                        following.append(other)
                    if len(chosen) >= limit:
                        break
                if len(chosen) >= limit:
                    break
            frontier = following
        return [t for _, t in self._triplets(list(chosen.values()))][:limit]

    def get_llama_nodes(self, node_ids: list[str]) -> list[BaseNode]:
        """``TextNode``\\s for chunk ids: the index's chunks and those LlamaIndex wrote."""
        ids = [i for i in dict.fromkeys(node_ids) if isinstance(i, str)]
        nodes = self.store.get_nodes(ids)
        chunks = self.store.get_chunks(i for i in ids if i not in nodes)
        texts = self.graph_index.chunk_texts(chunks)
        out: list[BaseNode] = []
        for node_id in ids:
            if node_id in chunks:
                doc_id = chunks[node_id].doc_id
                out.append(
                    TextNode(
                        id_=node_id,
                        text=texts[node_id],
                        metadata={"doc_id": doc_id},
                        excluded_llm_metadata_keys=["doc_id"],
                        excluded_embed_metadata_keys=["doc_id"],
                        relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc_id)},
                    )
                )
            elif node_id in nodes and nodes[node_id].kind == LI_CHUNK_KIND:
                try:
                    llama = metadata_dict_to_node(nodes[node_id].data.get("properties", {}))
                except Exception:  # written without LlamaIndex's node payload
                    llama = TextNode(id_=node_id)
                llama.set_content(nodes[node_id].text or "")
                out.append(llama)
        return out

    async def aget_llama_nodes(self, node_ids: list[str]) -> list[BaseNode]:
        return self.get_llama_nodes(node_ids)

    def vector_query(
        self, query: VectorStoreQuery, **kwargs: Any
    ) -> tuple[list[LabelledNode], list[float]]:
        """The stored nodes nearest to ``query.query_embedding``, with their cosines.

        Searches the ``vector_collection`` (entities), or the chunks when the index has
        no such collection. ``query.node_ids`` restricts the search to those nodes;
        metadata ``filters`` are not supported and ignored.
        """
        if query.query_embedding is None:
            return [], []
        vectors = self.graph_index.vectors
        collection = next(
            (c for c in (self.vector_collection, CHUNK_COLLECTION) if vectors.has_collection(c)),
            None,
        )
        if collection is None:
            return [], []
        vector = np.asarray(query.query_embedding, dtype=np.float32)
        self._check_dim(vector.shape[-1])
        restrict = list(self._resolve(query.node_ids).values()) if query.node_ids else None
        k = int(query.similarity_top_k or 4)
        hits = self.graph_index.search_vectors(collection, vector, k, ids=restrict)
        loaded = self._load(h.id for h in hits)
        pairs = [(loaded[h.id], float(h.score)) for h in hits if h.id in loaded]
        return [n for n, _ in pairs], [s for _, s in pairs]

    def _check_dim(self, dim: int) -> None:
        expected = self.graph_index.manifest.dim or int(self.graph_index.embedder.dim)
        if int(dim) != int(expected):
            raise IndexMismatchError(
                f"index {self.graph_index.path} holds {expected}-dimensional vectors, but "
                f"LlamaIndex gave {dim}-dimensional ones; use the index's embedder "
                "(llama_index_hygraph.HyGraphEmbedding) as the embed_model"
            )

    def get_schema(self, refresh: bool = False) -> dict[str, Any]:
        """Node labels (entity types and node kinds) and relation labels, with counts.

        Relation labels are the 50 most frequent; cached until the graph changes.
        """
        version = self.store.version()
        if self._schema is not None and self._schema[0] == version and not refresh:
            return self._schema[1]
        counts = self.store.counts()
        labels: Counter[str] = Counter(
            str(n.data.get("type") or DEFAULT_TYPE)
            for n in self.store.nodes_of_kind(NodeKind.ENTITY)
        )
        for kind, count in counts["nodes"].items():
            if kind == LI_CHUNK_KIND:
                labels["text_chunk"] += count
            elif kind != NodeKind.ENTITY:
                labels[FACT_LABEL if kind == NodeKind.FACT else kind] += count
        if counts["chunks"]:
            labels["text_chunk"] += counts["chunks"]
        relations: Counter[str] = Counter(
            edge_label(e) for e in self.store.iter_edges(EdgeKind.RELATION)
        )
        relation_labels = dict(relations.most_common(50))
        for kind, count in counts["edges"].items():
            if kind != EdgeKind.RELATION:
                relation_labels[kind_label(kind)] = relation_labels.get(kind_label(kind), 0) + count
        schema = {
            "node_labels": dict(labels.most_common()),
            "relation_labels": relation_labels,
            "counts": counts,
        }
        self._schema = (version, schema)
        return schema

    def get_schema_str(self, refresh: bool = False) -> str:
        schema = self.get_schema(refresh=refresh)
        nodes = ", ".join(f"{k} ({v})" for k, v in schema["node_labels"].items())
        rels = ", ".join(f"{k} ({v})" for k, v in schema["relation_labels"].items())
        return f"Node labels: {nodes or 'none'}\nRelation labels: {rels or 'none'}"

    def structured_query(self, query: str, param_map: dict[str, Any] | None = None) -> Any:
        raise NotImplementedError(
            "hygraph graphs have no query language; use get_triplets, get_rel_map or "
            "vector_query (or a hygraph method through HyGraphSubRetriever)"
        )

    def persist(self, persist_path: str, fs: Any = None) -> None:
        """Nothing to do: the graph is in the index's SQLite file as soon as it is written."""

    # -- writing --------------------------------------------------------------------------

    def upsert_nodes(self, nodes: Sequence[LabelledNode]) -> None:
        """Write LlamaIndex nodes with the core's conventions (see the module docs)."""
        chunks = [n for n in nodes if isinstance(n, ChunkNode)]
        facts = [n for n in nodes if isinstance(n, EntityNode) and n.label == FACT_LABEL]
        entities = [
            n
            if isinstance(n, EntityNode)
            else EntityNode(name=n.id, label=n.label, properties=n.properties)
            for n in nodes
            if not isinstance(n, ChunkNode)
            and not (isinstance(n, EntityNode) and n.label == FACT_LABEL)
        ]
        with self.store.transaction():
            self._write_chunks(chunks)
            entity_ids = self._write_entities(entities)
            fact_ids = self._write_facts(facts)
        self._write_vectors(ENTITY_COLLECTION, NodeKind.ENTITY, entities, entity_ids)
        self._write_vectors(FACT_COLLECTION, NodeKind.FACT, facts, fact_ids)

    def _write_chunks(self, chunks: Sequence[ChunkNode]) -> None:
        known = self.store.get_chunks(c.id for c in chunks)
        rows = [
            Node(
                c.id,
                LI_CHUNK_KIND,
                None,
                c.text,
                {"label": c.label, "properties": dict(c.properties)},
                (c.id,),  # its own provenance: forgetting it as a source removes it
            )
            for c in chunks
            if c.id not in known
        ]
        self.store.upsert_nodes(rows)

    def _chunkish(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` are chunks: the index's own, or written by LlamaIndex."""
        ids = list(dict.fromkeys(ids))
        nodes = self.store.get_nodes(ids)
        chunks = self.store.get_chunks(i for i in ids if i not in nodes)
        return set(chunks) | {i for i, n in nodes.items() if n.kind == LI_CHUNK_KIND}

    def _write_entity_update(self, builder: EntityGraphBuilder, update: GraphUpdate) -> None:
        """Write a planned update; mention edges only from sources that are chunks."""
        chunkish = self._chunkish(e.src for e in update.edges if e.kind == EdgeKind.MENTION)
        update.edges = [e for e in update.edges if e.kind != EdgeKind.MENTION or e.src in chunkish]
        builder.write(update)

    def _write_entities(self, entities: Sequence[EntityNode]) -> list[str | None]:
        """Record each entity node as a mention in its source chunk; returns core ids."""
        by_source: dict[str, list[Entity]] = {}
        extra: dict[str, dict[str, Any]] = {}
        ids: list[str | None] = []
        for node in entities:
            name = display_name(node.name)
            key = entity_key(name)
            if not key:
                ids.append(None)
                continue
            props = dict(node.properties)
            source = str(props.pop(TRIPLET_SOURCE_KEY, None) or MANUAL_SOURCE)
            description = str(props.pop("description", "") or "")
            score = _number(props.pop("score", DEFAULT_ENTITY_SCORE), DEFAULT_ENTITY_SCORE)
            label = node.label or DEFAULT_TYPE
            by_source.setdefault(source, []).append(Entity(name, label, description, score))
            extra.setdefault(key, {}).update({k: v for k, v in props.items() if k not in _DERIVED})
            ids.append(entity_node_id(key))
        if not by_source:
            return ids
        builder = EntityGraphBuilder(self.store)
        extractions = [
            Extraction(chunk_id=source, entities=items).normalised()
            for source, items in by_source.items()
        ]
        update = builder.plan(extractions)
        planned = {node.id for node in update.nodes}
        unchanged = [entity_node_id(k) for k, own in extra.items() if own]
        # An entity stated again as before is not in the plan; its properties may be new.
        update.nodes += self.store.get_nodes(
            (i for i in unchanged if i not in planned), sources=False
        ).values()
        for node in update.nodes:
            own = extra.get(node.id[len("ent:") :])
            if own:
                node.data["properties"] = {**node.data.get("properties", {}), **own}
        self._write_entity_update(builder, update)
        return ids

    def _write_facts(self, facts: Sequence[EntityNode]) -> list[str | None]:
        """Record each fact node as stated in its source chunk; returns core ids."""
        by_source: dict[str, list[Fact]] = {}
        ids: list[str | None] = []
        for node in facts:
            text = " ".join(node.name.split())
            if not text:
                ids.append(None)
                continue
            source = str(node.properties.get(TRIPLET_SOURCE_KEY) or MANUAL_SOURCE)
            score = _number(node.properties.get("score", DEFAULT_FACT_SCORE), DEFAULT_FACT_SCORE)
            by_source.setdefault(source, []).append(Fact(text, [], score))
            ids.append(fact_node_id(text))
        if by_source:
            builder = HypergraphBuilder(self.store)
            builder.write(
                builder.plan(
                    [
                        Extraction(chunk_id=s, facts=items).normalised()
                        for s, items in by_source.items()
                    ]
                )
            )
        return ids

    def _write_vectors(
        self,
        collection: str,
        kind: str,
        nodes: Sequence[LabelledNode],
        ids: Sequence[str | None],
    ) -> None:
        """Store the embeddings LlamaIndex computed for written nodes (last one wins)."""
        chosen = {i: n.embedding for n, i in zip(nodes, ids, strict=True) if i and n.embedding}
        if not chosen:
            return
        vectors = np.asarray(list(chosen.values()), dtype=np.float32)
        self._check_dim(vectors.shape[1])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = vectors / np.where(norms > 0, norms, 1.0)
        self.graph_index.vectors.ensure_collection(collection, int(vectors.shape[1]))
        self.graph_index.vectors.upsert(
            collection, list(chosen), vectors, [{"kind": kind} for _ in chosen]
        )

    def upsert_relations(self, relations: list[Relation]) -> None:
        """Write relations with the core's conventions (see the module docs)."""
        if not relations:
            return
        refs = {r for rel in relations for r in (rel.source_id, rel.target_id)}
        resolved = self._resolve(refs)
        stored = self.store.get_nodes(resolved.values())
        chunkish = self._chunkish(resolved.values())

        def kind_of(ref: str) -> str:
            core = resolved.get(ref)
            if core is None:
                return NodeKind.ENTITY  # created below, as LlamaIndex's own store does
            if core in chunkish:
                return CHUNK_KIND
            return stored[core].kind if core in stored else CHUNK_KIND

        def key_of(ref: str) -> str:
            core = resolved.get(ref)
            return core[len("ent:") :] if core else entity_key(ref)

        placeholders: dict[str, dict[str, Entity]] = {}
        pairs: dict[str, list[CoreRelation]] = {}
        members: dict[tuple[str, str], list[tuple[str, float, str]]] = {}
        edges: list[Edge] = []
        for rel in relations:
            props = dict(rel.properties)
            source = str(props.pop(TRIPLET_SOURCE_KEY, None) or MANUAL_SOURCE)
            s_kind, t_kind = kind_of(rel.source_id), kind_of(rel.target_id)
            label = rel.label.strip() or DEFAULT_RELATION_LABEL
            for ref in (rel.source_id, rel.target_id):
                if ref not in resolved and entity_key(ref):
                    name = display_name(ref)
                    placeholders.setdefault(source, {})[entity_key(name)] = Entity(name)
            if s_kind == NodeKind.ENTITY and t_kind == NodeKind.ENTITY:
                s_key, t_key = key_of(rel.source_id), key_of(rel.target_id)
                if not s_key or not t_key or s_key == t_key:
                    continue  # as the core's extraction schema: no self-relations
                pairs.setdefault(source, []).append(
                    CoreRelation(
                        s_key,
                        t_key,
                        label,
                        str(props.get("description", "") or ""),
                        max(0.0, _number(props.get("weight", 1.0), 1.0)),
                    )
                )
                continue
            s_id = resolved.get(rel.source_id) or entity_node_id(key_of(rel.source_id))
            t_id = resolved.get(rel.target_id) or entity_node_id(key_of(rel.target_id))
            if entity_node_id("") in (s_id, t_id):
                continue  # an end with no letters or digits names nothing
            if label.casefold() == HAS_MEMBER_LABEL.casefold() and (
                s_kind == NodeKind.FACT and t_kind == NodeKind.ENTITY
            ):
                members.setdefault((source, s_id), []).append(
                    (
                        t_id[len("ent:") :],
                        _number(props.get("weight", DEFAULT_ENTITY_SCORE), DEFAULT_ENTITY_SCORE),
                        str(props.get("description", "") or ""),
                    )
                )
            elif label.casefold() == MENTIONS_LABEL.casefold() and (
                s_kind == CHUNK_KIND and t_kind == NodeKind.ENTITY
            ):
                weight = _number(props.get("weight", 1.0), 1.0)
                edges.append(Edge(s_id, t_id, EdgeKind.MENTION, weight, sources=[s_id]))
            else:
                weight = _number(props.pop("weight", 1.0), 1.0)
                edges.append(
                    Edge(
                        s_id,
                        t_id,
                        LI_EDGE_PREFIX + label,
                        weight,
                        {"label": label, "properties": props, "source": source},
                        sources=[source],
                    )
                )
        with self.store.transaction():
            builder = EntityGraphBuilder(self.store)
            sources = list(dict.fromkeys([*placeholders, *pairs]))
            extractions = [
                Extraction(
                    chunk_id=s,
                    entities=list(placeholders.get(s, {}).values()),
                    relations=pairs.get(s, []),
                )
                for s in sources
            ]
            if extractions:
                self._write_entity_update(builder, builder.plan(extractions))
            if members:
                self._write_members(members)
            self.store.upsert_edges(edges)

    def _write_members(self, members: dict[tuple[str, str], list[tuple[str, float, str]]]) -> None:
        """Incidence edges: a fact's members as stated in a source chunk."""
        facts = self.store.get_nodes(fid for _, fid in members)
        extractions: dict[str, Extraction] = {}
        for (source, fid), items in members.items():
            node = facts[fid]
            mentions = node.data.get("mentions", {})
            score = _number(mentions.get(source, node.data.get("score")), DEFAULT_FACT_SCORE)
            fact = Fact(
                node.text or "",
                [key for key, _, _ in items],
                score,
                {key: weight for key, weight, _ in items},
                {key: text for key, _, text in items if text},
            )
            extractions.setdefault(source, Extraction(chunk_id=source)).facts.append(fact)
        builder = HypergraphBuilder(self.store)
        builder.write(builder.plan(list(extractions.values())))

    def delete(
        self,
        entity_names: list[str] | None = None,
        relation_names: list[str] | None = None,
        properties: dict | None = None,
        ids: list[str] | None = None,
    ) -> None:
        """Delete nodes by name or id (with their edges), relations by label, and whatever
        matches ``properties`` (nodes and triplets).

        A chunk written through LlamaIndex is withdrawn as provenance (see the module
        docs); the index's own chunks are left alone (delete their document with
        ``GraphIndex.delete``). Filters add up: each names more to delete.
        """
        refs = [*(entity_names or []), *(ids or [])]
        targets = list(self._resolve(refs).values())
        edge_keys: set[tuple[str, str, str]] = set()
        if relation_names:
            edge_keys.update((e.src, e.dst, e.kind) for e in self._edges_labelled(relation_names))
        if properties:
            targets.extend(
                str(n.properties.get("id", n.id)) for n in self.get(properties=properties)
            )
            for edge, _ in self._match_edges(None, None, properties, None):
                edge_keys.add((edge.src, edge.dst, edge.kind))
        stored = self.store.get_nodes(targets)
        forget = [
            i for i in dict.fromkeys(targets) if i in stored and stored[i].kind == LI_CHUNK_KIND
        ]
        gone = [i for i in dict.fromkeys(targets) if i in stored and i not in forget]
        own_chunks = [i for i in dict.fromkeys(targets) if i not in stored]
        if own_chunks:
            log.warning(
                "not deleting %d chunk(s) of the index's own documents; use GraphIndex.delete",
                len(own_chunks),
            )
        self._forget(forget)
        self.store.delete_nodes(gone)
        self.store.delete_edges(edge_keys)
        self._drop_vectors(gone)

    def delete_llama_nodes(
        self,
        node_ids: list[str] | None = None,
        ref_doc_ids: list[str] | None = None,
    ) -> None:
        """Withdraw chunks written through LlamaIndex, by node id or by their document id.

        Unlike the base class, which deletes every entity a chunk mentions, this keeps
        entities and relations that other chunks support (minus the withdrawn chunks).
        """
        ids = list(node_ids or [])
        if ref_doc_ids:
            docs = set(ref_doc_ids)
            for node in self.store.nodes_of_kind(LI_CHUNK_KIND):
                props = node.data.get("properties", {})
                if props.get("ref_doc_id") in docs or props.get("doc_id") in docs:
                    ids.append(node.id)
        stored = self.store.get_nodes(ids)
        self._forget([i for i, n in stored.items() if n.kind == LI_CHUNK_KIND])

    def _forget(self, chunk_ids: Sequence[str]) -> None:
        """Withdraw LlamaIndex chunks as provenance and re-derive what they touched."""
        if not chunk_ids:
            return
        removed = self.store.forget_sources(chunk_ids)
        EntityGraphBuilder(self.store).repair(removed)
        HypergraphBuilder(self.store).repair(removed)
        self.store.delete_nodes(chunk_ids)
        self._drop_vectors(removed.node_ids)

    def _drop_vectors(self, node_ids: Sequence[str]) -> None:
        self.graph_index.delete_vectors(
            ENTITY_COLLECTION, [n for n in node_ids if n.startswith("ent:")]
        )
        self.graph_index.delete_vectors(
            FACT_COLLECTION, [n for n in node_ids if n.startswith("fact:")]
        )
