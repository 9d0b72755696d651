"""LangChain quickstart: a hygraph method as the retriever of an LCEL chain.

Runs offline on the bundled sample corpus (embedded Qdrant, the bundled MiniLM, the
rule-based extractor, and a scripted chat model standing in for a real LLM)::

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

from hygraph.demo import sample_documents
from langchain_hygraph import HyGraphRetriever

QUESTION = (
    "In what year was the institution where the designer of the Caddow Bridge studied set up?"
)


def format_docs(docs: list[Document]) -> str:
    return "\n\n".join(f"[{d.metadata['kind']}] {d.page_content}" for d in docs)


def main(index_dir: str | None = None) -> dict[str, list[str]]:
    """Build, query, update and reload a retriever; return the documents found at each step."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(index_dir) if index_dir else Path(tmp) / "index"
        docs = [
            Document(page_content=p.read_text(), metadata={"source": p.name})
            for p in sample_documents()
        ]
        retriever = HyGraphRetriever.from_documents(
            docs, method="hypergraph-bridge", persist_dir=path, top_k=3
        )

        # Retrieve: the method's evidence (passages, n-ary facts, entities) as Documents.
        hits = retriever.invoke(QUESTION)
        for hit in hits[:8]:
            kind, score, source = (hit.metadata[k] for k in ("kind", "score", "source"))
            print(f"{kind:6} {score:7.3f}  {source:26} {hit.page_content[:50]!r}")
        found = list(dict.fromkeys(d.metadata["source"] for d in hits))

        # Answer with an LCEL chain. The chat model is a SCRIPTED STAND-IN so this runs
        # offline: it replies with the text below whatever it is asked. Use a real chat
        # model (ChatOpenAI, ChatOllama ...) in its place.
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
        print(f"\nanswer: {chain.invoke(QUESTION)}\nfrom: {found[:3]}")

        # Batch several questions (they run concurrently).
        batch = retriever.batch(["Who designed the Caddow Bridge?", "What is Harrowby?"])
        print(f"batch: {[len(b) for b in batch]} documents")

        # Keep the index current: documents are inserted and deleted incrementally.
        note = Document(page_content="Ilse Marrow's papers are kept at Harrowby.", id="note.md")
        retriever.add_documents([note])
        papers = retriever.invoke("Where are Marrow's papers?")
        inserted = papers[0].metadata["doc_ids"]
        print(f"after insert: {inserted}")
        retriever.delete(["note.md"])
        retriever.close()

        # The index directory is the persisted index: reopen it later.
        with HyGraphRetriever.from_persist_dir(path, top_k=3) as reopened:
            again = reopened.invoke(QUESTION)
            print(f"\nreopened with {reopened.method}: {len(again)} documents")
            return {
                "found": found,
                "inserted": inserted,
                "reopened": list(dict.fromkeys(d.metadata["source"] for d in again)),
            }


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
