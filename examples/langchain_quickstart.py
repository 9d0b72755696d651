"""hygraph as a LangChain retriever: exactly k passages, filters, MMR, LCEL, upkeep.

Builds a ``HyGraphRetriever`` over the bundled sample corpus with the multi-hop
``hypergraph-bridge`` method and uses it the way LangChain apps use any retriever:
``k`` passages with comparable scores (and the graph evidence behind each), the stock
``format_docs`` in an LCEL chain, "top sources" from metadata, ``search_kwargs`` filters
(LangChain dicts or Qdrant filters), ``search_type="mmr"``, incremental updates and
reopening. Runs offline: the chat model is a scripted stand-in.

    python examples/langchain_quickstart.py [INDEX_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.output_parsers import StrOutputParser
from langchain_core.prompts import ChatPromptTemplate
from langchain_core.runnables import RunnablePassthrough
from qdrant_client import models

from hygraph.demo import sample_documents
from langchain_hygraph import HyGraphEmbeddings, HyGraphRetriever

QUESTION = (
    "In what year was the institution where the designer of the Caddow Bridge studied set up?"
)


def format_docs(docs: list[Document]) -> str:
    return "\n\n".join(d.page_content for d in docs)


def top_sources(docs: list[Document]) -> list[str]:
    return list(dict.fromkeys(d.metadata["source"] for d in docs))


def main(index_dir: str | None = None) -> dict[str, list[str]]:
    """Build, query, update and reload a retriever; return the sources found at each step."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(index_dir) if index_dir else Path(tmp) / "index"
        docs = [
            Document(page_content=p.read_text(), metadata={"source": p.name})
            for p in sample_documents()
        ]
        # VectorStore.from_documents(documents, embedding, ...): the bundled MiniLM here.
        retriever = HyGraphRetriever.from_documents(
            docs, HyGraphEmbeddings(), method="hypergraph-bridge", persist_dir=path, k=5
        )

        # Exactly k=5 passages in the method's order, scores descending, each with the
        # graph evidence (n-ary facts, entities) that led the method to it.
        hits = retriever.invoke(QUESTION)
        for hit in hits:
            score, source = hit.metadata["score"], hit.metadata["source"]
            why = (hit.metadata["graph_evidence"] or ["(dense)"])[0]
            print(f"{score:5.3f}  {source:26} {why[:70]}")
        found = top_sources(hits)

        # The stock LCEL chain: format_docs puts the passage texts in the prompt. The chat
        # model is a SCRIPTED STAND-IN so this runs offline; use ChatOpenAI, ChatOllama ...
        stand_in_llm = GenericFakeChatModel(messages=iter(["(scripted stand-in answer)"]))
        prompt = ChatPromptTemplate.from_template(
            "Answer from the context.\n\nContext:\n{context}\n\nQuestion: {question}"
        )
        chain = (
            {"context": retriever | format_docs, "question": RunnablePassthrough()}
            | prompt
            | stand_in_llm
            | StrOutputParser()
        )
        print(f"\nanswer: {chain.invoke(QUESTION)}\ntop sources: {found[:3]}")

        # The method's full rendered context (facts, entities, passages) for a prompt.
        _, context = retriever.retrieve_with_context(QUESTION)
        print(f"context: {len(context)} characters, starting {context[:40]!r}")

        # Filters on document metadata, per call or in search_kwargs: LangChain's dict
        # spelling, or a Qdrant filter as written for langchain_qdrant.
        people = {"source": {"$in": ["ilse-marrow.md", "renna-osk.md", "tobiah-quell.md"]}}
        print(f"people only: {top_sources(retriever.invoke(QUESTION, k=2, filter=people))}")
        qdrant_filter = models.Filter(
            must_not=[
                models.FieldCondition(
                    key="metadata.source", match=models.MatchValue(value="ilse-marrow.md")
                )
            ]
        )
        without = retriever.invoke(QUESTION, k=2, filter=qdrant_filter)
        print(f"without ilse-marrow.md: {top_sources(without)}")

        # Maximal marginal relevance over the method's 10 best passages.
        diverse = HyGraphRetriever(
            index=retriever.index,
            method="hypergraph-bridge",
            search_type="mmr",
            search_kwargs={"k": 3, "fetch_k": 10, "lambda_mult": 0.5},
        )
        print(f"mmr: {top_sources(diverse.invoke(QUESTION))}")

        # Batch several questions (they run concurrently).
        batch = retriever.batch(["Who designed the Caddow Bridge?", "What is Harrowby?"])
        print(f"batch: {[len(b) for b in batch]} passages")

        # Keep the index current: documents are inserted and deleted incrementally.
        note = Document(page_content="Ilse Marrow's papers are kept at Harrowby.", id="note.md")
        retriever.add_documents([note])
        papers = retriever.invoke("Where are Marrow's papers?")
        inserted = papers[0].metadata["doc_ids"]
        print(f"after insert: {inserted}")
        retriever.delete(["note.md"])
        retriever.close()

        # The index directory is the persisted index: reopen it later.
        with HyGraphRetriever.from_persist_dir(path, k=5) as reopened:
            again = reopened.invoke(QUESTION)
            print(f"\nreopened with {reopened.method}: {len(again)} passages")
            return {"found": found, "inserted": inserted, "reopened": top_sources(again)}


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
