"""``HyGraphRetriever``: any hygraph method as a LlamaIndex retriever.

The retriever asks the core for a method's ranked evidence and hands each item to
LlamaIndex as a ``NodeWithScore``, so query engines, chat engines, node postprocessors
and response synthesizers work unchanged. It names the method by its registered name or
spec (``"hypergraph:top_k=3"``), so every method the core registers, now or later, works
here without new integration code.

Each node carries where it came from: ``kind`` (``chunk``, ``entity``, ``fact`` ...),
``method``, ``score``, ``source_ids`` (supporting chunk ids) and ``doc_ids`` (their
documents) in its metadata, the method's own simple metadata, and the first source
document's metadata (``file_name``, ``title`` ...). Its ``SOURCE`` relationship points at
that document, so ``node.ref_doc_id`` and citations work. Only ``kind`` reaches the LLM
(the rest is bookkeeping) and no metadata is embedded.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import (
    NodeRelationship,
    NodeWithScore,
    ObjectType,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)

from hygraph.methods.base import parse_method_spec
from hygraph.retrieval.evidence import Evidence
from hygraph.retrieval.records import EvidenceRecords

if TYPE_CHECKING:
    from hygraph.index import GraphIndex

#: Metadata keys the LLM sees next to a node's text; everything else is bookkeeping.
LLM_METADATA_KEYS = frozenset({"kind"})


class HyGraphRetriever(BaseRetriever):
    """Retrieve with one hygraph method over a core :class:`~hygraph.index.GraphIndex`.

    Args:
        index: the core index, or a :class:`~llama_index_hygraph.HyGraphIndex`.
        method: a registered method name or spec (``"hypergraph-bridge"``,
            ``"hypergraph:chunk_retrieval=false"``); it must be built in the index
            (``HyGraphIndex.as_retriever`` builds it when it is not).
        top_k: the method's ``top_k`` (None: the method's default).
        budget: None returns every item the method ranked. A number of tokens keeps only
            the items that the method's rendered context (its sections, their order and
            their own caps) holds whole within that budget, in the method's order.
        callback_manager, verbose, object_map: as for any LlamaIndex retriever; the
            retrieve event and instrumentation spans come from ``BaseRetriever``.
    """

    def __init__(
        self,
        index: GraphIndex | Any,
        method: str = "hypergraph",
        top_k: int | None = None,
        budget: int | None = None,
        *,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        object_map: dict | None = None,
    ):
        graph_index = getattr(index, "graph_index", index)
        parse_method_spec(method)  # an unknown method or option fails here, not at query time
        if top_k is not None and top_k <= 0:
            raise ValueError(f"top_k must be positive, not {top_k}")
        if budget is not None and budget <= 0:
            raise ValueError(f"budget must be a positive number of tokens, not {budget}")
        self._index = graph_index
        self._method = method
        self._top_k = top_k
        self._budget = budget
        self._records = EvidenceRecords(graph_index.store)
        super().__init__(callback_manager=callback_manager, verbose=verbose, object_map=object_map)

    @property
    def graph_index(self) -> GraphIndex:
        """The core index this retriever reads."""
        return self._index

    @property
    def method(self) -> str:
        """The method spec this retriever runs."""
        return self._method

    @property
    def top_k(self) -> int | None:
        return self._top_k

    def _evidence(self, question: str) -> list[Evidence]:
        if self._budget is None:
            return self._index.retrieve(question, self._method, top_k=self._top_k).items
        result = self._index.retrieve(
            question, self._method, top_k=self._top_k, budget=self._budget
        )
        return result.shown  # the items the budgeted context shows in full

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return self.to_nodes(self._evidence(query_bundle.query_str))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # The core is synchronous (SQLite, Qdrant, local models); a worker thread keeps the
        # event loop free. The core's store and vector index are thread-safe.
        return await asyncio.to_thread(self._retrieve, query_bundle)

    # -- mapping ------------------------------------------------------------------------

    def to_nodes(self, items: list[Evidence]) -> list[NodeWithScore]:
        """Evidence in the method's order as scored ``TextNode``s with provenance metadata."""
        nodes = []
        for record in self._records.records(items, self._method):
            hidden = [k for k in record.metadata if k not in LLM_METADATA_KEYS]
            node = TextNode(
                id_=record.id,
                text=record.text,
                metadata=record.metadata,
                excluded_llm_metadata_keys=hidden,
                excluded_embed_metadata_keys=list(record.metadata),
            )
            if record.doc_ids:
                node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(
                    node_id=record.doc_ids[0], node_type=ObjectType.DOCUMENT
                )
            nodes.append(NodeWithScore(node=node, score=record.score))
        return nodes
