"""``langchain-graph``: LangChain's GraphRetriever traversing shared-entity edges between chunks.

``langchain-graph-retriever`` links documents through metadata: with the edge spec
``("entities", "entities")`` two chunks are adjacent when their ``entities`` lists share a
value. Here the values are hygraph's entity node ids, from the index's ``mentions`` edges,
so the traversal runs over the same extraction as hygraph's graph methods.

- one LangChain ``Document`` per chunk: ``id`` = chunk id, ``page_content`` = the chunk with
  its title line (the text hygraph embedded, so the vectors come from hygraph's embedding
  cache), ``metadata = {"chunk_id", "doc_id", "entities": [entity node ids]}``;
- the documents live in langchain-core's ``InMemoryVectorStore`` (list-valued metadata works
  as is there, no shredding needed), behind the library's ``InMemoryAdapter``, embedded by
  hygraph's embedder wrapped as a LangChain ``Embeddings``;
- retrieval is ``GraphRetriever(store=adapter, edges=[("entities", "entities")],
  strategy=Eager(select_k=top_k))``: the ``start_k`` chunks nearest the question, then
  breadth-first over shared entities, each hop taking the ``adjacent_k`` chunks nearest the
  question among those sharing an entity with the frontier, until ``select_k`` chunks are
  selected (in discovery order: start chunks by similarity, then each hop by similarity).

Strategy options are the library's defaults (``start_k=4``, ``adjacent_k=10``,
``max_depth=None``, ``max_traverse=None``) except ``select_k=top_k`` (``k`` in older
releases, deprecated in 0.8); each can be overridden through ``make_peer(start_k=...)``.
With the defaults and ``top_k=5`` that is the 4 nearest chunks plus the best chunk one
shared entity away; the traversal contributes only when ``top_k > start_k``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from graph_retriever.strategies import Eager
from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import InMemoryVectorStore
from langchain_graph_retriever import GraphRetriever
from langchain_graph_retriever.adapters.in_memory import InMemoryAdapter

from .base import PeerResult, build_accounting, chunk_mentions, iter_chunk_texts, ranked_unique

if TYPE_CHECKING:
    from hygraph.index import GraphIndex

NAME = "langchain-graph"
EDGES = [("entities", "entities")]
ADD_BATCH = 256


class HygraphEmbeddings(Embeddings):
    """A LangChain ``Embeddings`` backed by a hygraph embedder (same vectors, same cache)."""

    def __init__(self, embedder: Any):
        self.embedder = embedder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embedder.embed(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.embedder.embed_query(text).tolist()


class LangChainGraphPeer:
    """See the module docstring.

    Args:
        start_k, adjacent_k, max_depth, max_traverse: ``Eager`` options; ``None`` keeps the
            library's default.
    """

    name = NAME

    def __init__(
        self,
        start_k: int | None = None,
        adjacent_k: int | None = None,
        max_depth: int | None = None,
        max_traverse: int | None = None,
    ):
        options = {
            "start_k": start_k,
            "adjacent_k": adjacent_k,
            "max_depth": max_depth,
            "max_traverse": max_traverse,
        }
        self.strategy_options = {k: v for k, v in options.items() if v is not None}
        self.vector_store: InMemoryVectorStore | None = None
        self.retriever: GraphRetriever | None = None

    def strategy(self, top_k: int) -> Eager:
        """The traversal strategy for ``top_k`` chunks (a fresh one per call)."""
        return Eager(select_k=top_k, **self.strategy_options)

    def build(self, index: GraphIndex) -> dict[str, float]:
        with build_accounting(index, self.name) as stats:
            mentions = chunk_mentions(index)
            store = InMemoryVectorStore(embedding=HygraphEmbeddings(index.embedder))
            batch: list[Document] = []
            n_docs = 0
            for chunk, text in iter_chunk_texts(index):
                metadata = {
                    "chunk_id": chunk.id,
                    "doc_id": chunk.doc_id,
                    "entities": list(mentions.get(chunk.id, ())),
                }
                batch.append(Document(id=chunk.id, page_content=text, metadata=metadata))
                if len(batch) == ADD_BATCH:
                    n_docs += len(store.add_documents(batch))
                    batch = []
            if batch:
                n_docs += len(store.add_documents(batch))
            self.vector_store = store
            self.retriever = GraphRetriever(
                store=InMemoryAdapter(store), edges=EDGES, strategy=self.strategy(5)
            )
            stats.update(
                embeddings=n_docs,
                documents=n_docs,
                entity_links=sum(len(v) for v in mentions.values()),
            )
        return stats

    def retrieve(self, question: str, top_k: int) -> PeerResult:
        if self.retriever is None:
            raise RuntimeError("build() the peer before retrieving")
        docs = self.retriever.invoke(question, strategy=self.strategy(top_k))
        chunk_ids = ranked_unique(d.metadata.get("chunk_id") or d.id for d in docs)[:top_k]
        keep = set(chunk_ids)
        seen: set[str] = set()
        parts = []
        for d in docs:
            cid = d.metadata.get("chunk_id") or d.id
            if cid in keep and cid not in seen:
                seen.add(cid)
                parts.append(d.page_content)
        return PeerResult(chunk_ids=chunk_ids, context="\n\n".join(parts))


def make_peer(**options: Any) -> LangChainGraphPeer:
    return LangChainGraphPeer(**options)
