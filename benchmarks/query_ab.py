"""Query latency of method variants side by side in one process, alternating per question.

A ``hygraph bench`` run times each method over all questions before the next, so a
change in the machine's speed between methods shows as a difference between them. Here
every question is asked of every variant in turn (the order reversed each round), on one
open index, so the variants share the machine's state; the query embedding cache stays
as the index has it, so what differs is each variant's own work.

    .venv/bin/python benchmarks/query_ab.py <index folder> \\
        --methods 'vanilla;hybrid-ppr:protect_dense=0;hybrid-ppr' --rounds 2

Prints p50 and p95 per variant in milliseconds (``--json`` for the numbers).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from hygraph.bench.data import load_dataset
from hygraph.index import GraphIndex


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", help="a built index folder")
    parser.add_argument("--data", default="../shared/data/musique", help="questions from here")
    parser.add_argument("--methods", required=True, help="variants separated by ';'")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    questions = [q.question for q in load_dataset(args.data).questions]
    methods = [m for m in args.methods.split(";") if m]
    seconds: dict[str, list[float]] = {m: [] for m in methods}
    with GraphIndex.open(args.index) as index:
        for method in methods:  # warm: model, kept matrices, each variant's first call
            index.retrieve(questions[0], method, top_k=args.top_k)
        for round_ in range(args.rounds):
            order = methods if round_ % 2 == 0 else methods[::-1]
            for question in questions:
                for method in order:
                    start = time.perf_counter()
                    index.retrieve(question, method, top_k=args.top_k)
                    seconds[method].append(time.perf_counter() - start)
    out = {
        m: {
            "p50_ms": 1000 * statistics.median(s),
            "p95_ms": 1000 * statistics.quantiles(s, n=20)[18],
            "queries": len(s),
        }
        for m, s in seconds.items()
    }
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print("| variant | p50 ms | p95 ms | queries |\n|---|---:|---:|---:|")
    for m, row in out.items():
        print(f"| {m} | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} | {row['queries']} |")


if __name__ == "__main__":
    main()
