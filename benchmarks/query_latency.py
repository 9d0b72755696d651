"""Query latency of every built-in method on one corpus, for side-by-side runs.

Builds an index of a JSONL corpus offline (the embedded defaults) with the given methods,
then times ``GraphIndex.retrieve`` for every question and method (after one warm-up
round) and prints, per method, the median and 90th-percentile milliseconds as JSON.
Run it from two checkouts (``PYTHONPATH=<checkout>/shared``) on the same machine to
compare them; the index is built fresh in a temporary folder each time.

    python benchmarks/query_latency.py --data tests/data/musique_slice --repeat 3
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
    methods = args.methods.split(",")
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp, GraphIndex(Path(tmp) / "i", progress=False) as ix:
        start = time.perf_counter()
        ix.insert(docs, methods=methods)
        build = time.perf_counter() - start
        for method in methods:
            for q in questions:  # warm-up: models, caches, graph views
                ix.retrieve(q, method, top_k=10)
            times = []
            for _ in range(args.repeat):
                for q in questions:
                    t0 = time.perf_counter()
                    ix.retrieve(q, method, top_k=10)
                    times.append((time.perf_counter() - t0) * 1000)
            times.sort()
            out[method] = {
                "p50_ms": round(statistics.median(times), 2),
                "p90_ms": round(times[int(0.9 * (len(times) - 1))], 2),
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
