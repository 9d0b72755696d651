"""Where a query's time goes: the median milliseconds of each recipe step over questions.

    python benchmarks/query_stages.py --index INDEX --questions Q.jsonl [--n 50] \\
        [--methods vanilla,hybrid-ppr] [--out results.md]

The index is opened once and warmed up (three questions); each question is then
embedded per query (no query cache) and retrieved at top_k = 10, one at a time. The
table gives, for each method, each step's median and the median whole retrieval.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--index", required=True)
    p.add_argument("--questions", required=True)
    p.add_argument("--n", type=int, default=50)
    p.add_argument("--methods", default="vanilla,hybrid-ppr")
    p.add_argument("--out")
    args = p.parse_args()
    from hygraph import GraphIndex

    lines = Path(args.questions).read_text().splitlines()
    questions = [json.loads(x)["question"] for x in lines][: args.n]
    out = [f"# Query steps: {args.index}", "",
           f"- command: `python benchmarks/query_stages.py --index {args.index} --questions "
           f"{args.questions} --n {args.n} --methods {args.methods}`",
           f"- date: {time.strftime('%Y-%m-%d')}", ""]  # fmt: skip
    with GraphIndex.open(args.index, progress=False) as index:
        index.embedder.cache_queries = False
        out.append(f"- store: {index.manifest.store or 'SQLite'}; chunks: "
                   f"{index.store.counts()['chunks']}")  # fmt: skip
        out += ["", "| method | step | median ms |", "|---|---|---:|"]
        for method in args.methods.split(","):
            for q in questions[:3]:
                index.retrieve(q, method, top_k=10)
            steps: dict[str, list[float]] = {}
            total = []
            for q in questions:
                start = time.perf_counter()
                result = index.retrieve(q, method, top_k=10)
                total.append((time.perf_counter() - start) * 1000)
                for step in result.trace:
                    steps.setdefault(step["name"], []).append(float(step["seconds"]) * 1000)
            for name, times in steps.items():
                out.append(f"| {method} | {name} | {statistics.median(times):.1f} |")
            out.append(f"| {method} | **whole retrieval** | {statistics.median(total):.1f} |")
    text = "\n".join(out) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
