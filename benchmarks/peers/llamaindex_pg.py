"""``llamaindex-pg``: LlamaIndex's PropertyGraphIndex with its stock VectorContextRetriever.

The property graph is loaded with hygraph's chunks and extracted entity graph instead of
running LlamaIndex's LLM extractors, so both systems see the same extraction:

- a ``SimplePropertyGraphStore`` holding one ``ChunkNode`` per chunk (id = hygraph chunk id,
  text = the chunk with its title line, properties as ``upsert_llama_nodes`` writes them),
  one ``EntityNode`` per entity (name = display name, label = type, properties: the
  description when there is one, and ``triplet_source_id``), a ``Relation`` per relation edge
  (label = relation label) and, with ``mentions=True``, a ``MENTIONS`` relation from each
  chunk to each entity it mentions;
- ``triplet_source_id``: LlamaIndex's ``_insert_nodes`` stamps every extracted node and
  relation with the id of the chunk it came from, and ``BasePGRetriever`` reads it from the
  *first* node of each retrieved triplet to fetch the source text (``include_text=True``).
  Entities get the first chunk that mentioned them (the store keeps one value per node, as
  LlamaIndex's does), relations the first chunk they were extracted from, and chunk nodes
  their own id, so a ``chunk -MENTIONS-> entity`` triplet brings back that chunk's text;
- entity vectors in a ``SimpleVectorStore`` (the store LlamaIndex falls back to when the graph
  store has no vector queries), embedded from ``str(EntityNode)``, exactly the text
  ``PropertyGraphIndex._insert_nodes`` embeds, by hygraph's embedder wrapped as a LlamaIndex
  ``BaseEmbedding`` (disk-cached). Chunk texts are not embedded: ``_insert_nodes`` would
  store their vectors on the chunk nodes, but ``VectorContextRetriever`` never reads them.

``PropertyGraphIndex.from_existing`` wraps the store (no node is inserted, so no extractor or
LLM runs; ``Settings.llm`` is set to ``MockLLM`` if unset, to be sure). Retrieval is
``index.as_retriever(sub_retrievers=[VectorContextRetriever(include_text=True,
path_depth=1, similarity_top_k=...)])``: the ``similarity_top_k`` entities nearest the
question, their triplets one hop out (at most ``limit``, LlamaIndex's default 30, cut
*before* sorting, in the store's set order), sorted by the better of the two end
entities' similarity, each replaced by its source chunk (preamble, the chunk's retrieved
triplets, then its text) and deduplicated. Chunk ids are the returned nodes' ids in
order of first appearance; the context is the nodes' texts joined by blank lines.

``similarity_top_k``: with LlamaIndex's default of 4 entities, 43% of the MuSiQue questions
got fewer than 5 distinct chunks (an entity is mentioned by 1.5 chunks on average, and the
entities nearest a question often come from the same chunk). The adapter asks for
``max(4, top_k + 3)`` entities (``similarity_top_k="auto"``, the default): the smallest
margin that returned ``top_k`` chunks for all MuSiQue questions at ``top_k=5`` (8 entities;
6 left 5% short) and for 96% at ``top_k=10`` (13 entities). More entities rank worse: the
30-triplet ``limit`` is applied before sorting, so extra entities crowd out the best ones'
triplets (R@5 on MuSiQue: 0.44 with 8 entities, 0.43 with 10, 0.37 with 20). Pass an int
to fix it, or ``None`` for LlamaIndex's default.

Ordering caveat (stock behaviour): ``SimplePropertyGraphStore`` keeps triplets in a Python
``set``, so which triplets survive ``limit`` and the order among equal scores depend on
``PYTHONHASHSEED``; set it for run-to-run reproducible rankings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from llama_index.core import PropertyGraphIndex, Settings
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import (
    TRIPLET_SOURCE_KEY,
    VECTOR_SOURCE_KEY,
    ChunkNode,
    EntityNode,
    Relation,
)
from llama_index.core.indices.property_graph import VectorContextRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.schema import TextNode
from llama_index.core.vector_stores import SimpleVectorStore
from llama_index.core.vector_stores.utils import node_to_metadata_dict

from llama_index_hygraph.models import HyGraphEmbedding

from .base import PeerResult, build_accounting, iter_chunk_texts

if TYPE_CHECKING:
    from hygraph.index import GraphIndex

NAME = "llamaindex-pg"
MENTIONS_LABEL = "MENTIONS"
LLAMAINDEX_SIMILARITY_TOP_K = 4  # VectorContextRetriever's default
LLAMAINDEX_LIMIT = 30  # VectorContextRetriever's default cap on triplets
AUTO_MARGIN = 3  # similarity_top_k="auto": top_k + 3 entities (see the module docstring)
EMBED_BATCH = 256


class LlamaIndexPropertyGraphPeer:
    """See the module docstring.

    Args:
        similarity_top_k: entities fetched by vector search; ``"auto"`` = ``max(4, top_k + 3)``,
            ``None`` = LlamaIndex's default (4), or a fixed int.
        path_depth: hops from the matched entities (LlamaIndex's default, 1).
        limit: cap on triplets per query (LlamaIndex's default, 30).
        include_text: replace triplets with their source chunks (True, as the brief asks;
            with False no chunk comes back except through ``ref_doc_id``).
        mentions: add ``chunk -MENTIONS-> entity`` relations.
        use_async: PGRetriever's async path (LlamaIndex's default) or the sync one (same
            results; the default here, no event loop per query).
    """

    name = NAME

    def __init__(
        self,
        similarity_top_k: int | Literal["auto"] | None = "auto",
        path_depth: int = 1,
        limit: int = LLAMAINDEX_LIMIT,
        include_text: bool = True,
        mentions: bool = True,
        use_async: bool = False,
    ):
        if similarity_top_k not in ("auto", None) and (
            not isinstance(similarity_top_k, int) or similarity_top_k < 1
        ):
            raise ValueError(f"similarity_top_k must be 'auto', None or >= 1: {similarity_top_k}")
        self.similarity_top_k = similarity_top_k
        self.path_depth = path_depth
        self.limit = limit
        self.include_text = include_text
        self.mentions = mentions
        self.use_async = use_async
        self.pg_index: PropertyGraphIndex | None = None
        self.embed_model: HyGraphEmbedding | None = None
        self._chunk_ids: set[str] = set()
        self._retrievers: dict[int, Any] = {}

    # -- build ------------------------------------------------------------------------

    def build(self, index: GraphIndex) -> dict[str, float]:
        if getattr(Settings, "_llm", None) is None:
            Settings.llm = MockLLM()  # nothing below should call an LLM; make sure none is real
        with build_accounting(index, self.name) as stats:
            graph_store = SimplePropertyGraphStore()
            chunk_nodes = []
            for chunk, text in iter_chunk_texts(index):
                # What PropertyGraphStore.upsert_llama_nodes makes of a TextNode, plus the
                # source key pointing at itself (see the module docstring).
                properties = node_to_metadata_dict(TextNode(id_=chunk.id, text=text), True)
                properties[TRIPLET_SOURCE_KEY] = chunk.id
                chunk_nodes.append(ChunkNode(text=text, id_=chunk.id, properties=properties))
            self._chunk_ids = {n.id for n in chunk_nodes}
            graph_store.upsert_nodes(chunk_nodes)

            entities, ids = self._entity_nodes(index)
            graph_store.upsert_nodes(entities)

            relations = self._relations(index, ids)
            graph_store.upsert_relations(relations)

            self.embed_model = HyGraphEmbedding(index.embedder, embed_batch_size=EMBED_BATCH)
            texts = [str(e) for e in entities]  # what PropertyGraphIndex._insert_nodes embeds
            vectors = self.embed_model.get_text_embedding_batch(texts)
            vector_store = SimpleVectorStore()
            vector_store.add(
                [
                    # As PropertyGraphIndex._insert_nodes_to_vector_index stores kg nodes.
                    TextNode(
                        id_=e.id,
                        text=text,
                        metadata={VECTOR_SOURCE_KEY: e.id, **e.properties},
                        embedding=vector,
                    )
                    for e, text, vector in zip(entities, texts, vectors, strict=True)
                ]
            )
            self.pg_index = PropertyGraphIndex.from_existing(
                property_graph_store=graph_store,
                vector_store=vector_store,
                llm=MockLLM(),
                embed_model=self.embed_model,
                embed_kg_nodes=True,
                use_async=self.use_async,
            )
            self._retrievers = {}
            n_mentions = sum(1 for r in relations if r.label == MENTIONS_LABEL)
            stats.update(
                embeddings=len(texts),
                chunk_nodes=len(chunk_nodes),
                entity_nodes=len(entities),
                relations=len(relations) - n_mentions,
                mentions=n_mentions,
            )
        return stats

    def _entity_nodes(self, index: GraphIndex) -> tuple[list[EntityNode], dict[str, str]]:
        """EntityNodes, and hygraph entity node id -> LlamaIndex node id."""
        nodes: dict[str, EntityNode] = {}
        ids: dict[str, str] = {}
        for node in index.store.nodes_of_kind("entity"):
            name = (node.name or node.id.removeprefix("ent:")).strip() or node.id
            entity = EntityNode(name=name, label=str(node.data.get("type") or "entity"))
            if entity.id in self._chunk_ids:  # a name that equals a chunk id: keep them apart
                entity = EntityNode(name=f"{name} (entity)", label=entity.label)
            if entity.id in nodes:  # two keys with the same display name: LlamaIndex merges
                ids[node.id] = entity.id
                continue
            if node.text and node.text.strip():
                entity.properties["description"] = node.text.strip()
            first = node.data.get("tally", {}).get("first") or [None, None]
            sources = [c for c in [first[1], *node.sources] if c in self._chunk_ids]
            if sources:
                entity.properties[TRIPLET_SOURCE_KEY] = sources[0]
            nodes[entity.id] = entity
            ids[node.id] = entity.id
        return list(nodes.values()), ids

    def _relations(self, index: GraphIndex, ids: dict[str, str]) -> list[Relation]:
        relations: list[Relation] = []
        for edge in index.store.iter_edges("relation"):
            src, dst = ids.get(edge.src), ids.get(edge.dst)
            if src is None or dst is None:
                continue
            relation = Relation(
                label=str(edge.data.get("label") or "related to"), source_id=src, target_id=dst
            )
            sources = [c for c in edge.data.get("entries", {}) if c in self._chunk_ids]
            if sources:
                relation.properties[TRIPLET_SOURCE_KEY] = sources[0]
            relations.append(relation)
        if self.mentions:
            for edge in index.store.iter_edges("mentions"):
                dst = ids.get(edge.dst)
                if edge.src in self._chunk_ids and dst is not None:
                    relations.append(
                        Relation(
                            label=MENTIONS_LABEL,
                            source_id=edge.src,
                            target_id=dst,
                            properties={TRIPLET_SOURCE_KEY: edge.src},
                        )
                    )
        return relations

    # -- retrieve ---------------------------------------------------------------------

    def entities_for(self, top_k: int) -> int:
        """The ``similarity_top_k`` used for a request of ``top_k`` chunks."""
        if self.similarity_top_k is None:
            return LLAMAINDEX_SIMILARITY_TOP_K
        if self.similarity_top_k == "auto":
            return max(LLAMAINDEX_SIMILARITY_TOP_K, top_k + AUTO_MARGIN)
        return int(self.similarity_top_k)

    def retriever(self, top_k: int) -> Any:
        """The LlamaIndex retriever used for ``top_k`` (built once per distinct size)."""
        if self.pg_index is None:
            raise RuntimeError("build() the peer before retrieving")
        size = self.entities_for(top_k)
        if size not in self._retrievers:
            sub = VectorContextRetriever(
                self.pg_index.property_graph_store,
                include_text=self.include_text,
                embed_model=self.embed_model,
                vector_store=self.pg_index.vector_store,
                similarity_top_k=size,
                path_depth=self.path_depth,
                limit=self.limit,
            )
            self._retrievers[size] = self.pg_index.as_retriever(sub_retrievers=[sub])
        return self._retrievers[size]

    def retrieve(self, question: str, top_k: int) -> PeerResult:
        nodes = self.retriever(top_k).retrieve(question)
        # PGRetriever already merged the triplets of one source chunk into one node; keep
        # the nodes (and any bare triplet among them) until top_k chunks are in.
        chunk_ids: list[str] = []
        parts: list[str] = []
        for scored in nodes:
            chunk_id = self._chunk_of(scored.node)
            if chunk_id is not None and chunk_id not in chunk_ids:
                if len(chunk_ids) == top_k:
                    break
                chunk_ids.append(chunk_id)
            parts.append(scored.node.get_content())
        return PeerResult(chunk_ids=chunk_ids, context="\n\n".join(parts))

    def _chunk_of(self, node: Any) -> str | None:
        """The chunk a returned node stands for: itself (source text) or its source."""
        if node.node_id in self._chunk_ids:
            return node.node_id
        ref = node.ref_doc_id
        return ref if ref in self._chunk_ids else None


def make_peer(**options: Any) -> LlamaIndexPropertyGraphPeer:
    return LlamaIndexPropertyGraphPeer(**options)
