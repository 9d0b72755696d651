"""Recall@k of every built-in method through the core, LlamaIndex and LangChain, side by side.

One index is built (offline, embedded defaults) over a MuSiQue subset: the supporting
paragraphs of the first N questions plus distractors up to ``--docs`` paragraphs. Each
method is then asked every question three ways, with ``k`` passages each:

* core: :func:`hygraph.passages.retrieve_passages`;
* LlamaIndex: ``llama_index_hygraph.HyGraphRetriever(index, method, top_k=k)``;
* LangChain: ``langchain_hygraph.HyGraphRetriever(index=index, method=method, k=k)``.

Recall@k is the share of a question's supporting paragraphs among the documents of the k
passages, averaged over questions (HippoRAG's definition). The three must agree: the
integrations return the core's passages. Prints a Markdown table.

    python benchmarks/framework_recall.py --data ../shared/data/musique --questions 40 --docs 300
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

METHODS = "vanilla,bm25,hybrid,hypergraph,hypergraph-bridge,noderag,noderag-fused"


def subset(data: Path, n_questions: int, n_docs: int) -> tuple[list[dict], list[dict]]:
    """The first ``n_questions`` questions and a corpus of their paragraphs plus distractors."""
    questions = [json.loads(x) for x in (data / "questions.jsonl").read_text().splitlines()]
    corpus = [json.loads(x) for x in (data / "corpus.jsonl").read_text().splitlines()]
    questions = questions[:n_questions]
    needed = {s for q in questions for s in q["supporting_ids"]}
    kept = [r for r in corpus if r["id"] in needed]
    kept += [r for r in corpus if r["id"] not in needed][: max(0, n_docs - len(kept))]
    return questions, kept


def recall(doc_ids: list[str], gold: list[str], k: int) -> float:
    top = list(dict.fromkeys(doc_ids))[:k]
    return len(set(top) & set(gold)) / len(gold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--questions", type=int, default=40)
    parser.add_argument("--docs", type=int, default=300)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--methods", default=METHODS)
    args = parser.parse_args()

    from hygraph.index import GraphIndex
    from hygraph.ingest.documents import Document
    from hygraph.passages import retrieve_passages
    from langchain_hygraph import HyGraphRetriever as LangChainRetriever
    from llama_index_hygraph import HyGraphRetriever as LlamaIndexRetriever

    questions, corpus = subset(Path(args.data), args.questions, args.docs)
    methods = args.methods.split(",")
    docs = [Document(id=r["id"], text=r["text"], title=r["title"]) for r in corpus]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, GraphIndex(Path(tmp) / "i", progress=False) as ix:
        start = time.perf_counter()
        ix.insert(docs, methods=methods)
        build = time.perf_counter() - start
        for method in methods:
            li = LlamaIndexRetriever(ix, method, top_k=args.k)
            lc = LangChainRetriever(index=ix, method=method, k=args.k)
            scores = {"core": [], "llama-index": [], "langchain": []}
            for q in questions:
                gold = q["supporting_ids"]
                core = retrieve_passages(ix, q["question"], method, args.k).passages
                scores["core"].append(recall([p.metadata["doc_id"] for p in core], gold, args.k))
                nodes = li.retrieve(q["question"])
                ids = [n.node.metadata["doc_id"] for n in nodes]
                scores["llama-index"].append(recall(ids, gold, args.k))
                found = lc.invoke(q["question"])
                ids = [d.metadata["doc_id"] for d in found]
                scores["langchain"].append(recall(ids, gold, args.k))
            means = {k: 100 * sum(v) / len(v) for k, v in scores.items()}
            rows.append((method, means))
    k = args.k
    print(f"{len(questions)} questions, {len(corpus)} paragraphs, k={k}, build {build:.0f} s\n")
    print(f"| method | core R@{k} | LlamaIndex R@{k} | LangChain R@{k} | agree |")
    print("|---|---:|---:|---:|---|")
    for method, m in rows:
        agree = "yes" if len({round(v, 6) for v in m.values()}) == 1 else "NO"
        print(
            f"| {method} | {m['core']:.1f} | {m['llama-index']:.1f} | {m['langchain']:.1f} "
            f"| {agree} |"
        )


if __name__ == "__main__":
    main()
