"""Any hygraph method as a sub-retriever of LlamaIndex's ``PropertyGraphIndex``.

``PropertyGraphIndex.as_retriever(sub_retrievers=[...])`` runs a list of
``BasePGRetriever``\\s and merges their nodes. :class:`HyGraphSubRetriever` is one: it
runs a registered hygraph method (by name or spec, ``"hypergraph"``,
``"hypergraph:chunk_retrieval=false"``) over the core index behind the graph store and
returns the method's ranked evidence as the same ``NodeWithScore``\\s
:class:`~llama_index_hygraph.HyGraphRetriever` gives (text, ``kind``, ``method``,
``score``, ``source_ids``, ``doc_ids``; the ``SOURCE`` relationship names the
document). Every method the core registers works without new integration code, and it
mixes with stock sub-retrievers such as ``VectorContextRetriever``::

    store = HyGraphPropertyGraphStore(graph_index)
    index = PropertyGraphIndex.from_existing(store, embed_model=HyGraphEmbedding())
    retriever = index.as_retriever(
        sub_retrievers=[
            HyGraphSubRetriever(graph_index, method="hypergraph"),
            VectorContextRetriever(store, embed_model=HyGraphEmbedding()),
        ]
    )

``include_text`` defaults to False: a method's evidence is already text, chunks
included. Set to True, LlamaIndex's own rule applies (nodes whose source resolves to a
chunk are replaced by that chunk's text with the node texts as a preamble); hygraph's
nodes name their document as source, so they are returned unchanged.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from llama_index.core.graph_stores.types import PropertyGraphStore
from llama_index.core.indices.property_graph.sub_retrievers.base import BasePGRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from hygraph.methods.base import RECOMMENDED_METHOD
from llama_index_hygraph.retriever import HyGraphRetriever

if TYPE_CHECKING:
    from hygraph.index import GraphIndex


class HyGraphSubRetriever(BasePGRetriever):
    """Retrieve with one hygraph method inside a ``PropertyGraphIndex`` retriever.

    Args:
        index: the core :class:`~hygraph.index.GraphIndex`, or anything with a
            ``graph_index`` attribute (:class:`~llama_index_hygraph.HyGraphIndex`,
            :class:`~llama_index_hygraph.graph_store.HyGraphPropertyGraphStore`).
        method: a registered method name or spec; it must be built in the index (an
            unknown name or option fails here).
        top_k: the method's ``top_k`` (None: the method's default).
        budget: None returns every item the method ranked; a number of tokens keeps the
            items its rendered context holds within that budget.
        items: ``"evidence"`` (default here: a property-graph retriever merges graph
            nodes of every kind) or ``"passages"`` (``top_k`` chunk nodes with their
            graph evidence, as :class:`~llama_index_hygraph.HyGraphRetriever` gives).
        graph_store: the store ``include_text`` reads source text from (default: ``index``
            when it is a property graph store, else a
            :class:`~llama_index_hygraph.graph_store.HyGraphPropertyGraphStore` over it).
        include_text, include_text_preamble, include_properties: as for every
            ``BasePGRetriever`` (``include_text`` defaults to False here, see above).
    """

    def __init__(
        self,
        index: GraphIndex | Any,
        method: str = RECOMMENDED_METHOD,
        top_k: int | None = None,
        budget: int | None = None,
        *,
        items: str = "evidence",
        graph_store: PropertyGraphStore | None = None,
        include_text: bool = False,
        **kwargs: Any,
    ) -> None:
        graph_index = getattr(index, "graph_index", index)
        self._retriever = HyGraphRetriever(
            graph_index, method, top_k=top_k, budget=budget, items=items
        )
        if graph_store is None and isinstance(index, PropertyGraphStore):
            graph_store = index
        if graph_store is None:
            from llama_index_hygraph.graph_store import HyGraphPropertyGraphStore

            graph_store = HyGraphPropertyGraphStore(graph_index)
        super().__init__(graph_store=graph_store, include_text=include_text, **kwargs)

    @property
    def graph_index(self) -> GraphIndex:
        """The core index this sub-retriever reads."""
        return self._retriever.graph_index

    @property
    def method(self) -> str:
        """The method spec it runs."""
        return self._retriever.method

    def retrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        """The method's evidence for the query, in its order, as scored text nodes."""
        return self._retriever.retrieve(query_bundle)

    async def aretrieve_from_graph(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # The core is synchronous; a worker thread lets sibling sub-retrievers run meanwhile.
        return await asyncio.to_thread(self.retrieve_from_graph, query_bundle)
