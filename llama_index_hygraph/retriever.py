"""``HyGraphRetriever``: any hygraph method as a LlamaIndex retriever.

By default it returns **passages** (``items="passages"``), the way an app expects a
LlamaIndex retriever to: ``similarity_top_k=5`` gives exactly five ``NodeWithScore``
whose nodes are ``TextNode``\\s of indexed chunks, in the method's own passage order,
with scores on one scale (the passage's cosine to the question, made non-increasing down
the list; see :mod:`hygraph.passages`). Stock postprocessors (``SimilarityPostprocessor``,
rerankers, ``LongContextReorder``, ``PrevNextNodePostprocessor``), response
synthesizers and citation engines then work unchanged.

What the graph contributed stays on each passage: ``graph_evidence`` in the node's
metadata lists the entities, facts, units ... that led the method to it (``"kind:
text"`` strings, in the method's order). It is shown to the LLM with the passage
(``MetadataMode.LLM``) and never embedded (``MetadataMode.EMBED`` is the bare text).
The method's full rendered context (every section, within ``budget`` tokens) of the
latest retrieval is :attr:`HyGraphRetriever.last_context`, and its full result is
:attr:`HyGraphRetriever.last_result`.

``items="evidence"`` returns the method's raw evidence instead, every kind mixed
(``chunk``, ``entity``, ``fact`` ...), each scored on its own kind's scale; there
``top_k`` is the method's ``top_k`` option.

Each node carries where it came from: ``kind``, ``method``, ``score``, ``source_ids``
(supporting chunk ids) and ``doc_ids`` (their documents) in its metadata, the method's
own simple metadata, and the first source document's metadata (``file_name``, ``title``
...). Its ``SOURCE`` relationship points at that document, so ``node.ref_doc_id`` and
citations work. A passage whose chunk is in the index's docstore also gets that node's
own metadata (a ``SentenceWindowNodeParser``'s ``window``, for example) and its
``PREVIOUS``/``NEXT`` relationships.

It names the method by its registered name or spec (``"hypergraph:top_k=3"``), so every
method the core registers, now or later, works here without new integration code.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.callbacks.base import CallbackManager
from llama_index.core.schema import (
    BaseNode,
    NodeRelationship,
    NodeWithScore,
    ObjectType,
    QueryBundle,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores.types import MetadataFilters

from hygraph.index import DEFAULT_BUDGET
from hygraph.methods.base import RECOMMENDED_METHOD, parse_method_spec
from hygraph.passages import retrieve_passages
from hygraph.retrieval.evidence import Evidence
from hygraph.retrieval.records import EvidenceRecords
from llama_index_hygraph.filters import to_core_filters

if TYPE_CHECKING:
    from llama_index.core.storage.docstore.types import BaseDocumentStore

    from hygraph.index import GraphIndex, QueryResult

#: Metadata keys the LLM sees next to an evidence item's text (``items="evidence"``).
LLM_METADATA_KEYS = frozenset({"kind"})
#: Bookkeeping keys of a passage, hidden from the LLM (the document's own metadata and
#: ``graph_evidence`` are shown; ``title`` is already the text's header line).
PASSAGE_BOOKKEEPING = frozenset(
    {
        "kind",
        "score",
        "source_ids",
        "doc_ids",
        "doc_id",
        "method",
        "id",
        "rank",
        "via",
        "cosine",
        "graph_evidence_ids",
        "title",
    }
)
#: Passages returned when no ``top_k`` is given. LlamaIndex's vector index returns 2;
#: graph methods are for questions whose answer spans several passages.
DEFAULT_PASSAGES = 5
ITEMS = ("passages", "evidence")


def check_count(name: str, value: Any) -> int | None:
    """``value`` if it is None or a positive int, else a one-line error naming ``name``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be a positive int, not {value!r} ({type(value).__name__})")
    if value <= 0:
        raise ValueError(f"{name} must be a positive int, not {value}")
    return value


class HyGraphRetriever(BaseRetriever):
    """Retrieve with one hygraph method over a core :class:`~hygraph.index.GraphIndex`.

    Args:
        index: the core index, or a :class:`~llama_index_hygraph.HyGraphIndex` (then its
            docstore lends passages their stored metadata and neighbours).
        method: a registered method name or spec (``"hypergraph-bridge"``,
            ``"hypergraph:chunk_retrieval=false"``); it must be built in the index
            (``HyGraphIndex.as_retriever`` builds it when it is not).
        top_k: with ``items="passages"``, how many passages (default
            :data:`DEFAULT_PASSAGES`); with ``items="evidence"``, the method's ``top_k``
            (None: the method's default).
        budget: the token budget of the method's rendered context (:attr:`last_context`;
            default the core's 2000). With ``items="evidence"``, None returns every item
            the method ranked, and a number keeps only the items that context holds whole,
            in the method's order.
        items: ``"passages"`` (default) or ``"evidence"`` (see the module docstring).
        filters: LlamaIndex ``MetadataFilters`` (or a core filter dict) on document
            metadata; ``doc_ids`` keeps only those documents. With ``items="evidence"``
            an item is kept when one of its sources is in a matching document.
        docstore: the docstore holding the index's chunk nodes (default: the
            ``HyGraphIndex``'s, if ``index`` is one).
        callback_manager, verbose, object_map: as for any LlamaIndex retriever; the
            retrieve event and instrumentation spans come from ``BaseRetriever``.
    """

    def __init__(
        self,
        index: GraphIndex | Any,
        method: str = RECOMMENDED_METHOD,
        top_k: int | None = None,
        budget: int | None = None,
        *,
        items: str = "passages",
        filters: MetadataFilters | Mapping[str, Any] | None = None,
        doc_ids: Sequence[str] | None = None,
        docstore: BaseDocumentStore | None = None,
        callback_manager: CallbackManager | None = None,
        verbose: bool = False,
        object_map: dict | None = None,
    ):
        graph_index = getattr(index, "graph_index", index)
        parse_method_spec(method)  # an unknown method or option fails here, not at query time
        check_count("top_k", top_k)
        check_count("budget", budget)
        if items not in ITEMS:
            raise ValueError(f"items must be one of {', '.join(ITEMS)}, not {items!r}")
        self._index = graph_index
        self._method = method
        self._top_k = top_k
        self._budget = budget
        self._items = items
        self._filters = to_core_filters(filters, doc_ids)
        self._docstore = docstore if docstore is not None else getattr(index, "_docstore", None)
        self._records = EvidenceRecords(graph_index.store)
        self._last: QueryResult | None = None
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

    @property
    def items(self) -> str:
        """``"passages"`` or ``"evidence"``: what a retrieval returns."""
        return self._items

    @property
    def filters(self) -> dict[str, Any] | None:
        """The document filter, in the core's vocabulary (see :mod:`hygraph.filters`)."""
        return self._filters

    @property
    def last_result(self) -> QueryResult | None:
        """The method's full result for the latest retrieval (every kind, the context).

        With concurrent retrievals on one retriever, it is the one that finished last.
        """
        return self._last

    @property
    def last_context(self) -> str | None:
        """The method's rendered context (all its sections) for the latest retrieval."""
        return self._last.context if self._last is not None else None

    # -- retrieving ---------------------------------------------------------------------

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        question = query_bundle.query_str
        if self._items == "passages":
            found = retrieve_passages(
                self._index,
                question,
                self._method,
                self._top_k or DEFAULT_PASSAGES,
                budget=self._budget or DEFAULT_BUDGET,
                filters=self._filters,
            )
            self._last = found.result
            return self.to_passage_nodes(found.passages)
        return self.to_nodes(self._evidence(question))

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        # The core is synchronous (SQLite, Qdrant, local models); a worker thread keeps the
        # event loop free. The core's store and vector index are thread-safe.
        return await asyncio.to_thread(self._retrieve, query_bundle)

    def _evidence(self, question: str) -> list[Evidence]:
        if self._budget is None:
            result = self._index.retrieve(question, self._method, top_k=self._top_k)
            items = result.items
        else:
            result = self._index.retrieve(
                question, self._method, top_k=self._top_k, budget=self._budget
            )
            items = result.shown  # the items the budgeted context shows in full
        self._last = result
        if self._filters is not None:
            allowed = self._index.chunks_matching(self._filters)
            items = [i for i in items if allowed.intersection(i.source_ids)]
        return items

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

    def to_passage_nodes(self, passages: list[Evidence]) -> list[NodeWithScore]:
        """Passages (chunk evidence from :func:`~hygraph.passages.retrieve_passages`) as nodes.

        The node id is the chunk id (the id the index's docstore and ``ref_doc_info``
        use). The metadata is the stored node's own (when the docstore has it), the
        document's, then the passage's bookkeeping and ``graph_evidence``.
        """
        nodes = []
        for record in self._records.records(passages, self._method):
            stored = self._stored(record.id)
            own = dict(stored.metadata) if stored is not None else {}
            metadata = {**own, **record.metadata}
            hidden = set(PASSAGE_BOOKKEEPING)
            if stored is not None:
                hidden.update(stored.excluded_llm_metadata_keys)
            if not metadata.get("graph_evidence"):
                hidden.add("graph_evidence")
            node = TextNode(
                id_=record.id,
                text=record.text,
                metadata=metadata,
                excluded_llm_metadata_keys=[k for k in metadata if k in hidden],
                excluded_embed_metadata_keys=list(metadata),
            )
            if stored is not None:
                for kind in (NodeRelationship.PREVIOUS, NodeRelationship.NEXT):
                    if kind in stored.relationships:
                        node.relationships[kind] = stored.relationships[kind]
            if record.doc_ids:
                node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(
                    node_id=record.doc_ids[0], node_type=ObjectType.DOCUMENT
                )
            nodes.append(NodeWithScore(node=node, score=record.score))
        return nodes

    def _stored(self, node_id: str) -> BaseNode | None:
        if self._docstore is None:
            return None
        return self._docstore.get_node(node_id, raise_error=False)
