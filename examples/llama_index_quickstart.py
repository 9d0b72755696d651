"""LlamaIndex quickstart: a hygraph index where a ``VectorStoreIndex`` was.

Runs offline on the bundled sample corpus (embedded Qdrant, the bundled MiniLM, the
rule-based extractor, and ``MockLLM`` standing in for a real LLM)::

    python examples/llama_index_quickstart.py [INDEX_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from llama_index.core import Document
from llama_index.core.llms import MockLLM

from hygraph.demo import sample_documents
from llama_index_hygraph import HyGraphIndex

QUESTION = (
    "In what year was the institution where the designer of the Caddow Bridge studied set up?"
)


def main(index_dir: str | None = None) -> dict[str, list[str]]:
    """Build, query, update and reload an index; return the documents found at each step."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(index_dir) if index_dir else Path(tmp) / "index"
        docs = [
            Document(text=p.read_text(), id_=p.name, metadata={"file_name": p.name})
            for p in sample_documents()
        ]
        index = HyGraphIndex.from_documents(docs, method="hypergraph-bridge", persist_dir=path)

        # Retrieve: the method's evidence (passages, n-ary facts, entities) as NodeWithScore.
        hits = index.as_retriever(similarity_top_k=3).retrieve(QUESTION)
        for hit in hits[:8]:
            meta = hit.node.metadata
            print(f"{meta['kind']:6} {hit.score:7.3f}  {meta['file_name']:26} {hit.text[:50]!r}")

        # Answer with a query engine. MockLLM is a stand-in so this runs offline: its
        # "answer" is filler text. Pass a real LlamaIndex LLM (or set Settings.llm).
        engine = index.as_query_engine(llm=MockLLM(max_tokens=8), similarity_top_k=3)
        response = engine.query(QUESTION)
        found = list(dict.fromkeys(n.node.ref_doc_id for n in response.source_nodes))
        print(f"\nanswer: {response}\nfrom: {found[:3]}")

        # Keep the index current: documents are inserted and deleted incrementally.
        note = Document(text="Ilse Marrow's papers are kept at Harrowby.", id_="note.md")
        index.insert(note)
        papers = index.as_retriever(similarity_top_k=1).retrieve("Where are Marrow's papers?")
        print(f"after insert: {papers[0].node.ref_doc_id}")
        index.delete_ref_doc("note.md")
        index.close()

        # The index directory is the persisted index: reopen it later.
        with HyGraphIndex.from_persist_dir(path) as reopened:
            again = reopened.as_retriever(similarity_top_k=3).retrieve(QUESTION)
            print(f"\nreopened with {reopened.methods}: {len(again)} nodes")
            return {
                "found": found,
                "inserted": [papers[0].node.ref_doc_id],
                "reopened": list(dict.fromkeys(n.node.ref_doc_id for n in again)),
            }


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
