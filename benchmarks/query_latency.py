"""Query latency of every built-in method on one corpus, for side-by-side runs.

Builds an index of a JSONL corpus offline (the embedded defaults) with the given methods,
or opens one that is built already (``--index``), then times ``GraphIndex.retrieve`` for
every question and method after one warm-up round, with the query-embedding cache off so
every query embeds its question as a new one would. The methods take turns question by
question, so a machine whose load changes during the run slows them alike and the ratios
to the first method hold. Prints, per method, the median and 90th-percentile
milliseconds and the median's ratio to the first method's, as JSON. Run it from two
checkouts (``PYTHONPATH=<checkout>/shared``) on the same machine to compare them.

    python benchmarks/query_latency.py --data tests/data/musique_slice --repeat 3
    python benchmarks/query_latency.py --data ../shared/data/musique \\
        --index /tmp/bench/musique-full-xxxx --methods vanilla,hybrid,hybrid-ppr
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

METHODS = "vanilla,bm25,hybrid,hypergraph,hypergraph-bridge,noderag,noderag-fused"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder with corpus.jsonl, questions.jsonl")
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--repeat", type=int, default=3, help="timed rounds over the questions")
    parser.add_argument("--index", help="an index holding the methods (default: build one)")
    parser.add_argument("--questions", type=int, default=0, help="the first N questions only")
    args = parser.parse_args()

    import hygraph
    from hygraph.index import GraphIndex
    from hygraph.ingest.documents import Document

    root = Path(args.data)
    rows = [json.loads(line) for line in (root / "corpus.jsonl").read_text().splitlines()]
    docs = [Document(id=r["id"], text=r["text"], title=r.get("title")) for r in rows]
    questions = [
        json.loads(line)["question"] for line in (root / "questions.jsonl").read_text().splitlines()
    ]
    questions = questions[: args.questions or None]
    methods = args.methods.split(",")
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        build = 0.0
        if args.index:
            ix = GraphIndex.open(args.index, progress=False)
        else:
            ix = GraphIndex(Path(tmp) / "i", progress=False)
            start = time.perf_counter()
            ix.insert(docs, methods=methods)
            build = time.perf_counter() - start
        with ix:
            for method in methods:
                for q in questions:  # warm-up: models, caches, graph views
                    ix.retrieve(q, method, top_k=10)
            if hasattr(ix.embedder, "cache"):
                ix.embedder.cache = None  # every timed query embeds its question
            times: dict[str, list[float]] = {m: [] for m in methods}
            for _ in range(args.repeat):
                for q in questions:
                    for method in methods:  # turns: load changes hit every method alike
                        t0 = time.perf_counter()
                        ix.retrieve(q, method, top_k=10)
                        times[method].append((time.perf_counter() - t0) * 1000)
        first = statistics.median(times[methods[0]])
        for method in methods:
            ranked = sorted(times[method])
            out[method] = {
                "p50_ms": round(statistics.median(ranked), 2),
                "p90_ms": round(ranked[int(0.9 * (len(ranked) - 1))], 2),
                f"p50_vs_{methods[0]}": round(statistics.median(ranked) / first, 2),
            }
    print(
        json.dumps(
            {
                "source": hygraph.__file__,
                "build_seconds": round(build, 1),
                "queries": len(questions) * args.repeat,
                "methods": out,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
