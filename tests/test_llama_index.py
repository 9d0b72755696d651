"""HyGraphIndex and HyGraphRetriever with real LlamaIndex components, offline.

Indexes use the real bundled MiniLM, embedded Qdrant (or qdrant-client in memory through
``QdrantVectorStore``) and a few sample documents. LLMs are LlamaIndex's ``MockLLM`` or a
scripted stand-in, labelled as such.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from li_support import ScriptedLLM, li_documents  # noqa: E402
from llama_index.core import (  # noqa: E402
    Document,
    Settings,
    StorageContext,
    get_response_synthesizer,
    load_index_from_storage,
)
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.callbacks import (  # noqa: E402
    CallbackManager,
    CBEventType,
    EventPayload,
    LlamaDebugHandler,
)
from llama_index.core.instrumentation import get_dispatcher  # noqa: E402
from llama_index.core.instrumentation.event_handlers import BaseEventHandler  # noqa: E402
from llama_index.core.instrumentation.events.retrieval import RetrievalEndEvent  # noqa: E402
from llama_index.core.llms import (  # noqa: E402
    MockLLM,
)
from llama_index.core.postprocessor import (  # noqa: E402
    MetadataReplacementPostProcessor,
    SimilarityPostprocessor,
)
from llama_index.core.postprocessor.types import BaseNodePostprocessor  # noqa: E402
from llama_index.core.schema import (  # noqa: E402
    NodeRelationship,
    ObjectType,
    RelatedNodeInfo,
    TextNode,
)
from method_lists import offline_methods  # noqa: E402
from pydantic import Field, PrivateAttr  # noqa: E402

from hygraph.errors import ConfigError, IndexNotFoundError, UnknownMethodError  # noqa: E402
from hygraph.passages import retrieve_passages  # noqa: E402
from llama_index_hygraph import HyGraphEmbedding, HyGraphIndex, HyGraphRetriever  # noqa: E402

NAMES = ["ilse-marrow.md", "great-dunmere-flood.md", "dunmere.md", "colworth-university.md"]
QUESTION = "Who designed the Caddow Bridge?"
ANSWER = "Ilse Marrow designed the Caddow Bridge."


def documents(names: list[str] = NAMES) -> list[Document]:
    return li_documents(names)


class CountingEmbedding(BaseEmbedding):
    """Test double: the real bundled MiniLM under another model name, counting its calls."""

    calls: int = 0
    _inner: Any = PrivateAttr()

    def __init__(self, **kwargs: Any):
        super().__init__(model_name="counting-minilm", **kwargs)
        self._inner = HyGraphEmbedding()

    def _get_query_embedding(self, query: str) -> list[float]:
        self.calls += 1
        return self._inner.get_query_embedding(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embeddings([text])[0]

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return self._inner.get_text_embedding_batch(texts)


class KindFilter(BaseNodePostprocessor):
    """A user's postprocessor keeping the nodes of some kinds (it reads node metadata)."""

    kinds: list[str]

    def _postprocess_nodes(self, nodes, query_bundle=None):
        return [n for n in nodes if n.node.metadata["kind"] in self.kinds]


@pytest.fixture
def settings():
    """LlamaIndex's global Settings, restored afterwards (other tests must not see changes)."""
    saved = (Settings._llm, Settings._embed_model, Settings._callback_manager)
    yield Settings
    Settings._llm, Settings._embed_model, Settings._callback_manager = saved


@pytest.fixture(scope="module")
def index(tmp_path_factory, minilm):
    """A hypergraph index of four sample documents, shared read-mostly by this module."""
    path = tmp_path_factory.mktemp("llama") / "index"
    built = HyGraphIndex.from_documents(documents(), method="hypergraph", persist_dir=path)
    yield built
    built.close()


def test_evidence_items_keep_kinds_and_provenance(index):
    assert index.methods == ["hypergraph"] and index.method == "hypergraph"
    # items="evidence": the method's raw evidence, every kind, as before passages.
    nodes = index.as_retriever(similarity_top_k=2, items="evidence").retrieve(QUESTION)
    kinds = [n.node.metadata["kind"] for n in nodes]
    assert {"chunk", "fact", "entity"} <= set(kinds)
    chunks = [n for n in nodes if n.node.metadata["kind"] == "chunk"]
    assert len(chunks) <= 2  # here similarity_top_k is the method's top_k
    for n in nodes:
        meta = n.node.metadata
        assert meta["method"] == "hypergraph" and meta["score"] == n.score
        assert meta["source_ids"] and set(meta["doc_ids"]) <= set(NAMES)
        # The first source document: its metadata, and the SOURCE relationship citations use.
        assert n.node.ref_doc_id == meta["doc_ids"][0] == meta["file_name"]
        assert n.node.relationships[NodeRelationship.SOURCE].node_type == ObjectType.DOCUMENT
        # Only the kind reaches the LLM; provenance is bookkeeping.
        llm_text = n.node.get_content(metadata_mode="llm")
        assert llm_text.startswith(f"kind: {meta['kind']}") and "source_ids" not in llm_text
        assert n.node.get_content(metadata_mode="embed") == n.node.text
    # Chunk nodes carry the chunk ids that ref_doc_info lists for their documents.
    info = index.ref_doc_info
    for n in chunks:
        assert n.node.node_id in info[n.node.ref_doc_id].node_ids
    assert "Ilse Marrow" in chunks[0].node.text or "Ilse Marrow" in chunks[1].node.text


def test_query_engine_and_chat_engines(index):
    engine = index.as_query_engine(llm=MockLLM(max_tokens=5), similarity_top_k=2)
    response = engine.query(QUESTION)
    assert str(response).strip() and len(response.source_nodes) == 2
    assert {n.node.metadata["kind"] for n in response.source_nodes} == {"chunk"}
    engine = index.as_query_engine(llm=MockLLM(max_tokens=5), items="evidence")
    kinds = {n.node.metadata["kind"] for n in engine.query(QUESTION).source_nodes}
    assert kinds >= {"chunk", "fact"}

    llm = ScriptedLLM()
    chat = index.as_chat_engine(chat_mode="context", llm=llm)
    reply = chat.chat(QUESTION)
    assert str(reply) == ANSWER and reply.source_nodes
    assert "Caddow Bridge" in llm.prompts[-1]  # the retrieved context reached the LLM
    reply = index.as_chat_engine(llm=ScriptedLLM()).chat(QUESTION)  # condense-plus-context
    assert str(reply) == ANSWER and reply.source_nodes


def test_postprocessors_and_synthesizer_use_node_metadata(index):
    nodes = index.as_retriever(items="evidence").retrieve(QUESTION)
    facts = KindFilter(kinds=["fact"]).postprocess_nodes(nodes)
    assert facts and all(n.node.metadata["kind"] == "fact" for n in facts)
    # Scores are the method's: the chunks' cosines fall under a cutoff that facts pass.
    kept = SimilarityPostprocessor(similarity_cutoff=1.0).postprocess_nodes(list(nodes))
    assert kept and "chunk" not in {n.node.metadata["kind"] for n in kept}
    entities = [n for n in nodes if n.node.metadata["kind"] == "entity"]
    renamed = MetadataReplacementPostProcessor(target_metadata_key="name").postprocess_nodes(
        [entities[0]]
    )
    assert renamed[0].node.text == entities[0].node.metadata["name"]

    llm = ScriptedLLM()
    response = get_response_synthesizer(llm=llm).synthesize(QUESTION, nodes=facts)
    assert str(response) == ANSWER and response.source_nodes == facts
    assert "kind: fact" in llm.prompts[-1] and "doc_ids" not in llm.prompts[-1]

    engine = index.as_query_engine(
        llm=ScriptedLLM(), node_postprocessors=[KindFilter(kinds=["chunk"])]
    )
    response = engine.query(QUESTION)
    assert {n.node.metadata["kind"] for n in response.source_nodes} == {"chunk"}


def test_callbacks_and_instrumentation_see_the_retrieval(index):
    debug = LlamaDebugHandler()
    retriever = index.as_retriever(callback_manager=CallbackManager([debug]))
    nodes = retriever.retrieve(QUESTION)
    (start, end), *_ = debug.get_event_pairs(CBEventType.RETRIEVE)
    assert start.payload[EventPayload.QUERY_STR] == QUESTION
    assert end.payload[EventPayload.NODES] == nodes

    class Collect(BaseEventHandler):
        events: list = Field(default_factory=list)

        def handle(self, event, **kwargs):
            self.events.append(event)

    dispatcher = get_dispatcher()  # the root: sees every span and event
    handler = Collect()
    dispatcher.add_event_handler(handler)
    try:
        index.as_retriever().retrieve(QUESTION)
    finally:
        dispatcher.event_handlers.remove(handler)
    ends = [e for e in handler.events if isinstance(e, RetrievalEndEvent)]
    assert ends and ends[-1].nodes


def test_method_specs_and_methods_built_on_demand(index):
    spec = "hypergraph:chunk_retrieval=false"
    nodes = index.as_retriever(method=spec, items="evidence").retrieve(QUESTION)
    assert nodes and "chunk" not in {n.node.metadata["kind"] for n in nodes}
    assert nodes[0].node.metadata["method"] == "hypergraph:chunk_retrieval=false"
    bm25 = index.as_retriever(method="bm25", top_k=1).retrieve("Caddow Bridge steel arch")
    assert "bm25" in index.methods
    assert [n.node.metadata["kind"] for n in bm25] == ["chunk"]
    # A budget keeps what the method's rendered context holds, in the method's order.
    full = index.as_retriever(items="evidence").retrieve(QUESTION)
    tight = index.as_retriever(budget=120, items="evidence").retrieve(QUESTION)
    ids = [n.node.node_id for n in full]
    assert 0 < len(tight) < len(full)
    assert [n.node.node_id for n in tight] == [
        i for i in ids if i in {n.node.node_id for n in tight}
    ]


def test_async_retrieve(index):
    retriever = index.as_retriever(similarity_top_k=2)
    sync = [(n.node.node_id, n.score) for n in retriever.retrieve(QUESTION)]
    got = asyncio.run(retriever.aretrieve(QUESTION))
    assert [(n.node.node_id, n.score) for n in got] == sync


@pytest.mark.parametrize("method", offline_methods())
def test_every_registered_method(tmp_path, minilm, method):
    docs = documents(NAMES[:3])
    with HyGraphIndex.from_documents(docs, method=method, persist_dir=tmp_path / "i") as index:
        retriever = index.as_retriever(similarity_top_k=2)
        assert isinstance(retriever, HyGraphRetriever) and retriever.method == method
        nodes = retriever.retrieve(QUESTION)
        core = retrieve_passages(index.graph_index, QUESTION, method, 2).passages
    assert len(nodes) == 2  # every method gives exactly the passages asked for
    assert [n.node.node_id for n in nodes] == [p.id for p in core]  # in the method's order
    for n in nodes:
        assert n.node.metadata["method"] == method and n.node.metadata["kind"] == "chunk"
        assert isinstance(n.score, float) and set(n.node.metadata["doc_ids"]) <= set(NAMES)
    assert nodes[0].score >= nodes[1].score


def test_persist_and_reload(tmp_path, minilm):
    path = tmp_path / "index"
    index = HyGraphIndex.from_documents(
        documents(NAMES[:3]), method="hypergraph-bridge", persist_dir=path
    )
    before = [(n.node.node_id, n.score) for n in index.as_retriever(top_k=2).retrieve(QUESTION)]
    # LlamaIndex's idiom gives the index back too (tests/test_llama_index_storage.py).
    index.storage_context.persist(persist_dir=str(tmp_path / "storage"))
    index.close()
    context = StorageContext.from_defaults(persist_dir=str(tmp_path / "storage"))
    with load_index_from_storage(context) as loaded:
        assert isinstance(loaded, HyGraphIndex) and loaded.method == "hypergraph-bridge"

    with HyGraphIndex.from_persist_dir(path) as reopened:
        assert reopened.method == "hypergraph-bridge" and reopened.persist_dir == path
        after = [
            (n.node.node_id, n.score) for n in reopened.as_retriever(top_k=2).retrieve(QUESTION)
        ]
        assert [i for i, _ in after] == [i for i, _ in before]
        assert [s for _, s in after] == pytest.approx([s for _, s in before])
        assert set(reopened.ref_doc_info) == set(NAMES[:3])
    with pytest.raises(IndexNotFoundError):
        HyGraphIndex.load(tmp_path / "nothing")


def test_insert_delete_update_refresh(tmp_path, minilm, caplog):
    index = HyGraphIndex.from_documents(documents(NAMES[:2]), persist_dir=tmp_path / "index")
    retriever = index.as_retriever(similarity_top_k=2)
    question = "When was Colworth University founded?"

    def documents_found() -> set[str]:
        return {d for n in retriever.retrieve(question) for d in n.node.metadata["doc_ids"]}

    assert set(index.ref_doc_info) == set(NAMES[:2])
    index.insert(documents(["colworth-university.md"])[0])
    assert index.ref_doc_info["colworth-university.md"].node_ids
    assert index.ref_doc_info["colworth-university.md"].metadata["file_name"]
    assert "colworth-university.md" in documents_found()

    index.delete_ref_doc("colworth-university.md")
    assert "colworth-university.md" not in index.ref_doc_info
    assert "colworth-university.md" not in documents_found()
    with caplog.at_level(logging.WARNING):
        index.delete_ref_doc("colworth-university.md")  # missing: logged, like LlamaIndex
    assert "not found" in caplog.text

    # A changed document replaces its old version.
    index.update_ref_doc(Document(text="The Caddow Bridge was repainted in 1990.", id_=NAMES[0]))
    assert index.ref_doc_info[NAMES[0]].metadata == {}
    top = retriever.retrieve("When was the Caddow Bridge repainted?")
    assert any("repainted" in n.node.text for n in top)

    # Nodes are joined back into their source document.
    source = RelatedNodeInfo(node_id="notes", node_type=ObjectType.DOCUMENT)
    parts = [
        TextNode(text=t, relationships={NodeRelationship.SOURCE: source})
        for t in ("Marta Quell keeps the harbour log.", "She moved to Kessick in 1950.")
    ]
    index.insert_nodes(parts)
    assert list(index.ref_doc_info)[-1] == "notes"
    assert index.graph_index.store.get_document("notes").text.startswith("Marta Quell")

    new = Document(text="The Ost ferry ran until 1936.", id_="ferry")
    unchanged = documents([NAMES[1]])[0]
    assert index.refresh_ref_docs([unchanged, new]) == [False, True]
    assert "ferry" in index.ref_doc_info

    asyncio.run(index.adelete_ref_doc("ferry"))
    asyncio.run(index.ainsert(Document(text="The Ost ferry ran until 1937.", id_="ferry2")))
    assert "ferry" not in index.ref_doc_info and "ferry2" in index.ref_doc_info
    index.close()


def test_settings_embed_model_and_llm_are_honoured(tmp_path, minilm, settings):
    settings.embed_model = CountingEmbedding()
    settings.llm = ScriptedLLM()
    path = tmp_path / "index"
    index = HyGraphIndex.from_documents(documents(NAMES[:2]), method="vanilla", persist_dir=path)
    assert index.graph_index.manifest.embedder == "llama-index:counting-minilm"
    assert settings.embed_model.calls > 0
    nodes = index.as_retriever(similarity_top_k=1).retrieve(QUESTION)
    assert nodes[0].node.ref_doc_id == "ilse-marrow.md"
    # Settings.llm serves the core (adapted to its protocol) and the query engine.
    assert index.graph_index.llm.name == "llama-index:scripted"
    assert index.graph_index.query(QUESTION, "vanilla", answer=True).answer == ANSWER
    assert str(index.as_query_engine().query(QUESTION)) == ANSWER
    assert "Ilse Marrow" in settings.llm.prompts[-1]
    index.close()

    # Reopening needs the same embedding: Settings still has it here ...
    with HyGraphIndex.from_persist_dir(path) as reopened:
        assert reopened.as_retriever(similarity_top_k=1).retrieve(QUESTION)[0].node.ref_doc_id
    # ... and without it the error says what to pass.
    settings._embed_model = None
    with pytest.raises(ConfigError, match="embed_model="):
        HyGraphIndex.from_persist_dir(path)


def test_index_llm_is_the_engines_default(tmp_path, minilm):
    llm = ScriptedLLM()
    docs = documents(NAMES[:1])
    with HyGraphIndex.from_documents(
        docs, method="vanilla", llm=llm, persist_dir=tmp_path
    ) as index:
        assert str(index.as_query_engine().query(QUESTION)) == ANSWER
        assert str(index.as_chat_engine(chat_mode="context").chat(QUESTION)) == ANSWER


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect")
def test_qdrant_vector_store(tmp_path, minilm):
    from llama_index.vector_stores.qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient

    client = QdrantClient(":memory:")
    store = QdrantVectorStore(client=client, collection_name="sample")
    path = tmp_path / "index"
    index = HyGraphIndex.from_documents(
        documents(NAMES[:2]), method="hypergraph", vector_store=store, persist_dir=path
    )
    assert index.graph_index.manifest.vectors["backend"] == "server"
    names = {c.name for c in client.get_collections().collections}
    assert {"sample", "sample_facts", "sample_entities"} <= names
    chunks = index.graph_index.store.chunk_ids()
    assert client.count("sample").count == len(chunks)  # the store's collection: passages
    before = [n.node.node_id for n in index.as_retriever().retrieve(QUESTION)]
    assert before

    index.close()  # the user's client stays open

    # Reopened against the same store, it reads the same vectors.
    with HyGraphIndex.from_persist_dir(path, vector_store=store) as reopened:
        assert [n.node.node_id for n in reopened.as_retriever().retrieve(QUESTION)] == before

    # The usual LlamaIndex way of naming a vector store works too.
    context = StorageContext.from_defaults(
        vector_store=QdrantVectorStore(client=client, collection_name="other")
    )
    HyGraphIndex.from_documents(
        documents(NAMES[:1]), storage_context=context, method="vanilla", persist_dir=tmp_path / "o"
    )
    assert client.collection_exists("other")


def test_clear_errors(tmp_path, index):
    with pytest.raises(TypeError, match="transformations= takes LlamaIndex transformations"):
        HyGraphIndex.from_documents(documents(NAMES[:1]), transformations=[str.split])
    with pytest.raises(UnknownMethodError):
        HyGraphIndex(persist_dir=tmp_path / "a", method="nosuch")
    assert not (tmp_path / "a").exists()  # refused before anything was written
    with pytest.raises(UnknownMethodError):
        index.as_retriever(method="nosuch")
    with pytest.raises(TypeError, match="filters= takes LlamaIndex MetadataFilters"):
        index.as_retriever(filters=object())
    with pytest.raises(ValueError, match="node_ids"):
        index.as_retriever(node_ids=["x"])
    with pytest.raises(TypeError, match="QdrantVectorStore"):
        HyGraphIndex(persist_dir=tmp_path / "b", vector_store=object())
    with pytest.raises(NotImplementedError, match="delete_ref_doc"):
        index.delete_nodes(["some-node"])


def test_default_directory_and_wrapping_a_core_index(minilm, index, caplog):
    with caplog.at_level(logging.WARNING, logger="llama_index_hygraph"):
        scratch = HyGraphIndex.from_documents(documents(NAMES[:1]), method="vanilla")
    with scratch:
        assert scratch.persist_dir.is_dir()  # a temporary directory, removed at exit
        assert scratch.as_retriever().retrieve(QUESTION)
    # One line says the data goes at exit, and how to keep it.
    (warning,) = [r.getMessage() for r in caplog.records if "persist_dir" in r.getMessage()]
    assert "\n" not in warning and "deleted when the process exits" in warning
    assert str(scratch.persist_dir) in warning and "storage_context.persist" in warning
    wrapped = HyGraphIndex(graph_index=index.graph_index)  # shares the open core index
    assert wrapped.method == "hypergraph"
    assert wrapped.as_retriever().retrieve(QUESTION)[0].node.metadata["method"] == "hypergraph"
    direct = HyGraphRetriever(index, "hypergraph", top_k=1)  # over a HyGraphIndex or GraphIndex
    assert direct.graph_index is index.graph_index and direct.retrieve(QUESTION)
    with pytest.raises(ValueError, match="either graph_index"):
        HyGraphIndex(graph_index=index.graph_index, persist_dir="elsewhere")
