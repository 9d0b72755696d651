"""Recall@k of every built-in method through the core, LlamaIndex and LangChain, side by side.

One index is built (offline, embedded defaults) over a MuSiQue subset: the supporting
paragraphs of the first N questions plus distractors up to ``--docs`` paragraphs. Each
method is then asked every question three ways, with ``k`` passages each:

* core: :func:`hygraph.passages.retrieve_passages`;
* LlamaIndex: ``llama_index_hygraph.HyGraphRetriever(index, method, top_k=k)``;
* LangChain: ``langchain_hygraph.HyGraphRetriever(index=index, method=method, k=k)``.

Recall@k is the share of a question's supporting paragraphs among the documents of the k
passages, averaged over questions (HippoRAG's definition), for each k asked for. The three
must agree: the integrations return the core's passages. Prints a Markdown table.

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
    parser.add_argument("--ks", default="2,5,10", help="passages asked for, one run each")
    parser.add_argument("--methods", default=METHODS)
    args = parser.parse_args()

    from hygraph.index import GraphIndex
    from hygraph.ingest.documents import Document

    questions, corpus = subset(Path(args.data), args.questions, args.docs)
    methods = args.methods.split(",")
    ks = [int(k) for k in args.ks.split(",")]
    docs = [Document(id=r["id"], text=r["text"], title=r["title"]) for r in corpus]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, GraphIndex(Path(tmp) / "i", progress=False) as ix:
        start = time.perf_counter()
        ix.insert(docs, methods=methods)
        build = time.perf_counter() - start
        for method in methods:
            means = {}
            for k in ks:
                for route, value in _recalls(ix, method, questions, k).items():
                    means[f"{route} R@{k}"] = value
            rows.append((method, means))
    print(f"{len(questions)} questions, {len(corpus)} paragraphs, build {build:.0f} s\n")
    cols = [f"{route} R@{k}" for k in ks for route in ROUTES]
    print("| method | " + " | ".join(cols) + " | agree |")
    print("|---|" + "---:|" * len(cols) + "---|")
    for method, m in rows:
        agree = all(len({round(m[f"{r} R@{k}"], 6) for r in ROUTES}) == 1 for k in ks)
        cells = " | ".join(f"{m[c]:.1f}" for c in cols)
        print(f"| {method} | {cells} | {'yes' if agree else 'NO'} |")


ROUTES = ("core", "LlamaIndex", "LangChain")


def _recalls(ix, method: str, questions: list[dict], k: int) -> dict[str, float]:
    """Mean recall@k of ``method`` through each route, asking for ``k`` passages."""
    from hygraph.passages import retrieve_passages
    from langchain_hygraph import HyGraphRetriever as LangChainRetriever
    from llama_index_hygraph import HyGraphRetriever as LlamaIndexRetriever

    li = LlamaIndexRetriever(ix, method, top_k=k)
    lc = LangChainRetriever(index=ix, method=method, k=k)
    scores: dict[str, list[float]] = {r: [] for r in ROUTES}
    for q in questions:
        gold, text = q["supporting_ids"], q["question"]
        core = retrieve_passages(ix, text, method, k).passages
        scores["core"].append(recall([p.metadata["doc_id"] for p in core], gold, k))
        nodes = li.retrieve(text)
        scores["LlamaIndex"].append(recall([n.node.metadata["doc_id"] for n in nodes], gold, k))
        docs = lc.invoke(text)
        scores["LangChain"].append(recall([d.metadata["doc_id"] for d in docs], gold, k))
    return {r: 100 * sum(v) / len(v) for r, v in scores.items()}


if __name__ == "__main__":
    main()
