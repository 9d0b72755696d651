"""LlamaIndex quickstart: a hygraph index where a ``VectorStoreIndex`` was.

Runs offline on the bundled sample corpus (embedded Qdrant, the bundled MiniLM, the
rule-based extractor, and ``MockLLM`` standing in for a real LLM)::

    python examples/llama_index_quickstart.py [INDEX_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from llama_index.core import Document, Settings, StorageContext, load_index_from_storage
from llama_index.core.llms import MockLLM
from llama_index.core.vector_stores import FilterOperator, MetadataFilter, MetadataFilters

from hygraph.demo import sample_documents
from llama_index_hygraph import HyGraphIndex

QUESTION = (
    "In what year was the institution where the designer of the Caddow Bridge studied set up?"
)


def main(index_dir: str | None = None) -> dict[str, list[str]]:
    """Build, query, filter, update, persist and reload; return the documents found."""
    # Answers come from Settings.llm. MockLLM is an offline stand-in (its "answer" is
    # filler text): set a real LlamaIndex LLM here. Retrieval never calls it; a graph
    # index asks the LLM while retrieving only when opened with llm_in_retrieval=True.
    Settings.llm = MockLLM(max_tokens=8)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(index_dir) if index_dir else Path(tmp) / "index"
        docs = [
            Document(text=p.read_text(), id_=p.name, metadata={"file_name": p.name})
            for p in sample_documents()
        ]
        index = HyGraphIndex.from_documents(docs, method="hypergraph-bridge", persist_dir=path)

        # Retrieve: exactly 3 passages in the method's order, scores on one scale, each
        # with the graph evidence (facts, entities) that led to it. The LLM sees that
        # evidence next to the passage; embeddings never do.
        retriever = index.as_retriever(similarity_top_k=3)
        for hit in retriever.retrieve(QUESTION):
            meta = hit.node.metadata
            print(f"{hit.score:.3f}  {meta['file_name']:26} {hit.text[:40]!r}")
            for evidence in meta["graph_evidence"][:2]:
                print(f"       {evidence[:70]}")
        print(f"(the method's whole context: {len(retriever.last_context)} characters)")

        # Filter on document metadata with LlamaIndex's own MetadataFilters.
        skip = MetadataFilter(
            key="file_name", value=["ilse-marrow.md"], operator=FilterOperator.NIN
        )
        rest = index.as_retriever(similarity_top_k=2, filters=MetadataFilters(filters=[skip]))
        print(f"\nwithout ilse-marrow.md: {[n.node.ref_doc_id for n in rest.retrieve(QUESTION)]}")

        # Answer with a query engine (Settings.llm); its sources are the passages.
        response = index.as_query_engine(similarity_top_k=3).query(QUESTION)
        found = list(dict.fromkeys(n.node.ref_doc_id for n in response.source_nodes))
        print(f"\nanswer: {response}\nfrom: {found}")

        # Keep the index current: documents are inserted and deleted incrementally.
        note = Document(text="Ilse Marrow's papers are kept at Harrowby.", id_="note.md")
        index.insert(note)
        papers = index.as_retriever(similarity_top_k=1).retrieve("Where are Marrow's papers?")
        print(f"after insert: {papers[0].node.ref_doc_id}")
        index.delete_ref_doc("note.md")

        # Persist as any LlamaIndex index; the copy under storage/ is self-contained.
        storage = path.with_name(f"{path.name}-storage")
        index.storage_context.persist(persist_dir=str(storage))
        index.close()
        context = StorageContext.from_defaults(persist_dir=str(storage))
        with load_index_from_storage(context) as reopened:
            again = reopened.as_retriever(similarity_top_k=3).retrieve(QUESTION)
            print(f"\nreopened with {reopened.methods}: {len(again)} passages")
            return {
                "found": found,
                "inserted": [papers[0].node.ref_doc_id],
                "reopened": list(dict.fromkeys(n.node.ref_doc_id for n in again)),
            }


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
