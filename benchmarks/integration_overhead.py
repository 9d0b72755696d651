"""What the framework layers cost: the same retrieval through the core, LlamaIndex and LangChain.

Builds the bundled sample corpus once with ``HyGraphIndex.from_documents`` and times
each sample question through :func:`hygraph.passages.retrieve_passages` (core, the
integrations' default path), the LlamaIndex ``HyGraphRetriever`` (events,
``NodeWithScore`` conversion) and the LangChain ``HyGraphRetriever`` (callbacks,
``Document`` conversion) over the same index, checking that all three return the same
passages. Prints a Markdown table.

    .venv/bin/python benchmarks/integration_overhead.py [--methods vanilla,hypergraph] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from llama_index.core import Document

from hygraph.demo import sample_documents, sample_questions
from hygraph.passages import retrieve_passages
from langchain_hygraph import HyGraphRetriever as LangChainRetriever
from llama_index_hygraph import HyGraphIndex


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", default="vanilla,hypergraph,hypergraph-bridge")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--top-k", type=int, default=5)
    args = parser.parse_args(argv)
    methods = args.methods.split(",")
    docs = [Document(text=p.read_text(), id_=p.name) for p in sample_documents()]
    questions = [q["question"] for q in sample_questions()]
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        index = HyGraphIndex.from_documents(docs, methods=methods, persist_dir=Path(tmp) / "i")
        build = time.perf_counter() - t0
        print(f"build ({', '.join(methods)}): {build:.1f} s, {len(docs)} documents\n")
        print("| method | core p50 ms | LlamaIndex p50 ms | LangChain p50 ms | same ranking |")
        print("|---|---:|---:|---:|---|")
        for method in methods:
            llama = index.as_retriever(method=method, top_k=args.top_k)
            chain = LangChainRetriever(index=index.graph_index, method=method, k=args.top_k)
            core_ms, li_ms, lc_ms, same = [], [], [], True
            for question in questions:
                llama.retrieve(question)  # warm (query embedding cache stays on for all)
                for _ in range(args.repeat):
                    t = time.perf_counter()
                    result = retrieve_passages(index.graph_index, question, method, args.top_k)
                    core_ms.append(1000 * (time.perf_counter() - t))
                    t = time.perf_counter()
                    nodes = llama.retrieve(question)
                    li_ms.append(1000 * (time.perf_counter() - t))
                    t = time.perf_counter()
                    docs = chain.invoke(question)
                    lc_ms.append(1000 * (time.perf_counter() - t))
                ids = [p.id for p in result.passages]
                same &= [n.node.metadata.get("chunk_id", n.node.id_) for n in nodes] == ids
                same &= [d.metadata.get("chunk_id", d.metadata.get("id")) for d in docs] == ids
            core, li, lc = (statistics.median(v) for v in (core_ms, li_ms, lc_ms))
            print(
                f"| {method} | {core:.2f} | {li:.2f} ({li - core:+.2f}) "
                f"| {lc:.2f} ({lc - core:+.2f}) | {same} |"
            )
        index.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
