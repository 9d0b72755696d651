"""Passage results through LangChain's own API: exactly ``k``, scores, evidence, conventions.

One index of the twelve bundled sample documents (LangChain ``Document``s with metadata
for filters) is built once with the real bundled MiniLM and embedded Qdrant. Everything
is exercised the way an app would: ``invoke``, LCEL with the usual ``format_docs``,
``search_type``/``search_kwargs``, LangChain's dict filters and ``qdrant_client`` filters,
and, when ``langchain-classic`` is installed, ``EnsembleRetriever`` and
``ContextualCompressionRetriever`` with stock compressors.
"""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.output_parsers import StrOutputParser  # noqa: E402
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.runnables import RunnablePassthrough  # noqa: E402
from qdrant_client import models  # noqa: E402

from hygraph.demo import sample_dir, sample_documents, sample_questions  # noqa: E402
from hygraph.errors import ConfigError  # noqa: E402
from hygraph.index import GraphIndex  # noqa: E402
from hygraph.ingest.documents import Document as CoreDocument  # noqa: E402
from hygraph.passages import retrieve_passages  # noqa: E402
from langchain_hygraph import HyGraphEmbeddings, HyGraphRetriever  # noqa: E402
from langchain_hygraph.filters import qdrant_to_core  # noqa: E402

CATEGORY = {
    "ilse-marrow.md": "person",
    "renna-osk.md": "person",
    "tobiah-quell.md": "person",
    "dunmere.md": "place",
    "harrowby.md": "place",
    "selmar-coast.md": "place",
    "aldercott-shipyard.md": "organisation",
    "colworth-university.md": "organisation",
    "harrowby-tide-orchestra.md": "organisation",
    "great-dunmere-flood.md": "event",
    "lantern-tide-festival.md": "event",
    "northern-shelf-expedition.md": "event",
}
PEOPLE = {name for name, category in CATEGORY.items() if category == "person"}
QUESTION = (
    "In what year was the institution where the designer of the Caddow Bridge studied set up?"
)
METHODS = ["vanilla", "bm25", "hypergraph-bridge", "noderag"]


def documents() -> list[Document]:
    """The sample corpus as an app loads it: one Document per file, with metadata."""
    return [
        Document(
            page_content=path.read_text(),
            metadata={"source": path.name, "category": CATEGORY[path.name], "n": i},
        )
        for i, path in enumerate(sample_documents())
    ]


def format_docs(docs: list[Document]) -> str:
    """The ``format_docs`` of LangChain's RAG tutorials, unchanged."""
    return "\n\n".join(d.page_content for d in docs)


def top_sources(docs: list[Document], n: int = 5) -> list[str]:
    """The "top sources" helper apps write: distinct sources, best first."""
    return list(dict.fromkeys(d.metadata["source"] for d in docs))[:n]


@pytest.fixture(scope="module")
def retriever(tmp_path_factory, minilm) -> HyGraphRetriever:
    """hypergraph-bridge over the twelve sample documents (vanilla, bm25, noderag built).

    One chunk per document (the papers' 1200-token chunks), so "distinct sources" and
    per-document filters can be checked passage by passage.
    """
    built = HyGraphRetriever.from_documents(
        documents(),
        HyGraphEmbeddings(minilm),  # positional, as in VectorStore.from_documents
        method="hypergraph-bridge",
        methods=METHODS,
        persist_dir=tmp_path_factory.mktemp("passages") / "index",
        k=5,
        progress=False,
        chunk_size=1200,
        chunk_overlap=100,
    )
    yield built
    built.close()


def _ids(docs: list[Document]) -> list[str]:
    return [d.id for d in docs]


# -- exactly k passages, scores, evidence, context --------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_k_passages_in_the_methods_order(retriever, method):
    core = retrieve_passages(retriever.index, QUESTION, method, 5)
    for settings in ({"k": 5}, {"top_k": 5}, {"search_kwargs": {"k": 5}}):
        docs = HyGraphRetriever(index=retriever.index, method=method, **settings).invoke(QUESTION)
        assert len(docs) == 5 and {d.metadata["kind"] for d in docs} == {"chunk"}
        assert _ids(docs) == [p.id for p in core.passages]  # the method's own passage order
        scores = [d.metadata["score"] for d in docs]
        assert scores == sorted(scores, reverse=True) and all(-1 <= s <= 1 for s in scores)
        assert [d.metadata["rank"] for d in docs] == [1, 2, 3, 4, 5]
        assert all(isinstance(d.metadata["graph_evidence"], list) for d in docs)
    # Other ks are honoured exactly, per retriever and per call.
    assert len(HyGraphRetriever(index=retriever.index, method=method, k=2).invoke(QUESTION)) == 2
    assert len(retriever.invoke(QUESTION, k=7)) == 7


def test_passages_carry_the_graph_evidence_that_led_to_them(retriever):
    docs, context = retriever.retrieve_with_context(QUESTION)
    evidence = [e for d in docs for e in d.metadata["graph_evidence"]]
    assert evidence and {e.split(":", 1)[0] for e in evidence} >= {"fact", "entity"}
    for doc in docs:
        assert len(doc.metadata["graph_evidence"]) == len(doc.metadata["graph_evidence_ids"])
    # The method's full rendered context: graph sections and the passages.
    assert context.startswith("## ") and "Caddow Bridge" in context
    assert docs[0].page_content.strip()[:60] in context
    evidence_docs = HyGraphRetriever(
        index=retriever.index, method="hypergraph-bridge", results="evidence"
    ).invoke(QUESTION)
    assert {"chunk", "entity", "fact"} <= {d.metadata["kind"] for d in evidence_docs}


def test_stock_lcel_chain_gets_only_passage_texts(retriever):
    seen: list[str] = []

    def capture(value):
        seen.append(value.to_string())
        return value

    prompt = ChatPromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    stand_in = GenericFakeChatModel(messages=iter(["1874"]))  # a scripted chat model (double)
    chain = (
        {"context": retriever | format_docs, "question": RunnablePassthrough()}
        | prompt
        | capture
        | stand_in
        | StrOutputParser()
    )
    assert chain.invoke(QUESTION) == "1874"
    docs = retriever.invoke(QUESTION)
    expected = "\n\n".join(d.page_content for d in docs)
    assert f"Context:\n{expected}\n\nQuestion: {QUESTION}" in seen[0]
    assert "fact:" not in seen[0] and "## " not in seen[0]  # no graph sections, only passages


def test_top_five_sources_are_distinct_documents(retriever):
    sources = top_sources(retriever.invoke(QUESTION))
    assert len(sources) == 5 and set(sources) <= set(CATEGORY)
    assert sources[0] == "ilse-marrow.md"  # the bridge's designer


# -- noderag keeps its passage ranking ------------------------------------------------------


def test_noderag_recall_through_langchain_equals_the_core(retriever, tmp_path, minilm):
    """Passage recall@5 of noderag through the retriever equals the core's, per question."""
    core_docs = [
        CoreDocument(id=p.name, text=p.read_text(), source=p.name) for p in sample_documents()
    ]
    with GraphIndex(
        tmp_path / "core", embedder=minilm, progress=False, chunk_size=1200, chunk_overlap=100
    ) as core:
        core.insert(core_docs, methods=["noderag"])
        noderag = HyGraphRetriever(index=retriever.index, method="noderag", k=5)
        for question in sample_questions():
            gold = set(question["supporting_ids"])
            through_langchain = [
                d.metadata["doc_ids"][0] for d in noderag.invoke(question["question"])
            ]
            passages = retrieve_passages(core, question["question"], "noderag", 5).passages
            in_core = [p.metadata["doc_id"] for p in passages]
            assert len(gold & set(through_langchain)) == len(gold & set(in_core)), question["id"]
            # On the same index the retriever returns exactly the core's passages.
            same = retrieve_passages(retriever.index, question["question"], "noderag", 5)
            assert _ids(noderag.invoke(question["question"])) == [p.id for p in same.passages]


# -- LangChain's conventions ------------------------------------------------------------------


def test_dict_filters_in_search_kwargs_and_per_call(retriever):
    people = HyGraphRetriever(
        index=retriever.index,
        method="hypergraph-bridge",
        search_kwargs={"k": 3, "filter": {"category": "person"}},
    )
    docs = people.invoke(QUESTION)
    assert len(docs) == 3 and {d.metadata["source"] for d in docs} == PEOPLE
    assert docs[0].metadata["source"] == "ilse-marrow.md"
    # Operators and $or, per call, as LangChain's vector stores take them.
    either = {"$or": [{"category": "place"}, {"n": {"$gte": 11}}]}
    docs = retriever.invoke(QUESTION, filter=either, k=4)
    assert len(docs) == 4
    assert all(d.metadata["category"] == "place" or d.metadata["n"] >= 11 for d in docs)
    assert retriever.invoke(QUESTION, filter={"category": "no such thing"}) == []


def test_qdrant_filters_are_translated(retriever):
    by_key = models.Filter(
        must=[
            models.FieldCondition(key="metadata.category", match=models.MatchValue(value="person"))
        ]
    )
    plain = retriever.invoke(QUESTION, k=3, filter={"category": "person"})
    assert _ids(retriever.invoke(QUESTION, k=3, filter=by_key)) == _ids(plain)
    mixed = models.Filter(
        should=[
            models.FieldCondition(key="category", match=models.MatchAny(any=["place", "event"]))
        ],
        must=[models.FieldCondition(key="metadata.n", range=models.Range(gte=3, lt=10))],
        must_not=[models.FieldCondition(key="source", match=models.MatchValue(value="dunmere.md"))],
    )
    assert qdrant_to_core(mixed) == {
        "$and": [
            {"n": {"$gte": 3, "$lt": 10}},
            {"category": {"$in": ["place", "event"]}},
            {"source": {"$ne": "dunmere.md"}},
        ]
    }
    docs = HyGraphRetriever(
        index=retriever.index, method="vanilla", search_kwargs={"k": 10, "filter": mixed}
    ).invoke(QUESTION)
    expected = {
        name
        for i, name in enumerate(sorted(CATEGORY))
        if 3 <= i < 10 and CATEGORY[name] in ("place", "event") and name != "dunmere.md"
    }
    assert docs and {d.metadata["source"] for d in docs} == expected


def test_untranslatable_qdrant_filters_fail_in_one_line(retriever):
    geo = models.Filter(
        must=[
            models.FieldCondition(
                key="metadata.where",
                geo_radius=models.GeoRadius(center=models.GeoPoint(lon=0.0, lat=0.0), radius=10.0),
            )
        ]
    )
    negated_range = models.Filter(
        must_not=[models.FieldCondition(key="n", range=models.Range(gte=2))]
    )
    text = models.Filter(
        must=[models.FieldCondition(key="source", match=models.MatchText(text="harrowby"))]
    )
    for bad, said in ((geo, "geo_radius"), (negated_range, "range"), (text, "MatchText")):
        with pytest.raises(ConfigError, match=said) as err:
            HyGraphRetriever(index=retriever.index, search_kwargs={"filter": bad})
        assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="filter must be a dict"):
        retriever.invoke(QUESTION, filter="category=person")


def test_similarity_score_threshold(retriever):
    all_docs = retriever.invoke(QUESTION, k=10)
    cut = all_docs[3].metadata["score"]
    kept = HyGraphRetriever(
        index=retriever.index,
        method="hypergraph-bridge",
        search_type="similarity_score_threshold",
        search_kwargs={"score_threshold": cut, "k": 10},
    ).invoke(QUESTION)
    assert kept == all_docs[: len(kept)] and len(kept) >= 4
    assert all(d.metadata["score"] >= cut for d in kept)
    with pytest.raises(ValueError, match="score_threshold"):
        HyGraphRetriever(index=retriever.index, search_type="similarity_score_threshold")


def test_mmr_over_the_passage_vectors(tmp_path, minilm):
    """A near-copy of the best passage is skipped by MMR, kept by plain similarity."""
    docs = [
        Document(page_content=(sample_dir() / name).read_text(), metadata={"source": name})
        for name in ("ilse-marrow.md", "colworth-university.md", "dunmere.md", "harrowby.md")
    ]
    # One word changed: the copy stays one chunk (a 240-token window), as the original is.
    copy = docs[0].page_content.replace("civil engineer", "civil designer")
    docs.append(Document(page_content=copy, metadata={"source": "ilse-marrow-copy.md"}))
    with HyGraphRetriever.from_documents(
        docs,
        HyGraphEmbeddings(minilm),
        method="vanilla",
        persist_dir=tmp_path / "i",
        chunk_mode="tokens",
    ) as similar:
        question = "Who designed the Caddow Bridge?"
        plain = top_sources(similar.invoke(question, k=2))
        assert set(plain) == {"ilse-marrow.md", "ilse-marrow-copy.md"}
        mmr = HyGraphRetriever(
            index=similar.index,
            method="vanilla",
            search_type="mmr",
            search_kwargs={"k": 2, "fetch_k": 5, "lambda_mult": 0.5},
        )
        diverse = mmr.invoke(question)
        assert len(diverse) == 2 and diverse[0].id == similar.invoke(question)[0].id
        # One of the two copies, then another document.
        assert len({"ilse-marrow.md", "ilse-marrow-copy.md"} & set(top_sources(diverse))) == 1
        # lambda_mult=1 is pure relevance: the method's own order.
        assert _ids(mmr.invoke(question, lambda_mult=1.0)) == _ids(similar.invoke(question, k=2))
        # The vectors are read back from the index, not embedded again.
        before = similar.index.tracker.stages.get("query")
        embedded = before.embeddings if before else 0
        mmr.invoke("A question embedded once")
        assert similar.index.tracker.stages["query"].embeddings - embedded <= 1


def test_from_documents_signature_and_method_slip(tmp_path, minilm):
    with pytest.raises(TypeError, match="method='vanilla'"):
        HyGraphRetriever.from_documents(documents()[:1], "vanilla", persist_dir=tmp_path / "a")
    assert not (tmp_path / "a").exists()  # nothing was built


# -- stock LangChain retrievers on top (langchain-classic) -----------------------------------


def test_ensemble_retriever(retriever, minilm):
    classic = pytest.importorskip("langchain_classic.retrievers")
    from langchain_qdrant import QdrantVectorStore

    store = QdrantVectorStore.from_documents(
        documents(), HyGraphEmbeddings(minilm), location=":memory:", collection_name="plain"
    )
    ensemble = classic.EnsembleRetriever(
        retrievers=[retriever, store.as_retriever(search_kwargs={"k": 5})], weights=[0.6, 0.4]
    )
    fused = ensemble.invoke(QUESTION)
    assert 5 <= len(fused) <= 10 and len({d.page_content for d in fused}) == len(fused)
    assert fused[0].page_content == retriever.invoke(QUESTION)[0].page_content
    assert "ilse-marrow.md" in top_sources(fused)


def test_contextual_compression_with_a_stock_compressor(retriever):
    pytest.importorskip("langchain_classic.retrievers")
    from langchain_classic.retrievers import ContextualCompressionRetriever
    from langchain_classic.retrievers.document_compressors import LLMChainFilter

    # LLMChainFilter asks a chat model about each document; this scripted double answers
    # YES, NO, YES, NO, YES. (EmbeddingsFilter would need langchain-community.)
    judge = GenericFakeChatModel(messages=iter(["YES", "NO", "YES", "NO", "YES"]))
    compressed = ContextualCompressionRetriever(
        base_compressor=LLMChainFilter.from_llm(judge), base_retriever=retriever
    )
    kept = compressed.invoke(QUESTION)
    base = retriever.invoke(QUESTION)
    assert _ids(kept) == [base[0].id, base[2].id, base[4].id]
    assert all(
        d.metadata["graph_evidence"] == b.metadata["graph_evidence"]
        for d, b in zip(kept, base[::2], strict=True)
    )
