"""Query latency at several corpus sizes measured side by side: every index open in one
process, each question asked of each (index, method) in turn, round after round.

Separate ``hygraph bench`` runs measure each size at another moment, and on a shared
machine their p50s drift by several milliseconds between runs, which is most of what a
growth exponent over two sizes reads. Interleaving the sizes gives each the same
machine state.

    python benchmarks/scale_interleaved.py --questions Q.jsonl INDEX_2K INDEX_20K [...]

Query embeddings are computed per query (cache off), as in ``hygraph bench``; three
questions warm each index first; 60 questions are timed. Prints p50 and p95 per index
and method, and the growth exponent b of p50 over the chunk counts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

METHODS = ("vanilla", "hybrid-ppr")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("indexes", nargs="+")
    p.add_argument("--questions", type=Path, required=True)
    p.add_argument("--n", type=int, default=60)
    args = p.parse_args()
    from hygraph import GraphIndex
    from hygraph.bench.metrics import growth_exponent

    questions = [json.loads(x)["question"] for x in args.questions.read_text().splitlines()]
    opened = [GraphIndex.open(path, progress=False) for path in args.indexes]
    for index in opened:
        index.embedder.cache_queries = False
        for q in questions[:3]:
            for method in METHODS:
                index.retrieve(q, method, top_k=10)
    times: dict[tuple[int, str], list[float]] = {(i, m): [] for i in range(len(opened))
                                                 for m in METHODS}  # fmt: skip
    for q in questions[3 : 3 + args.n]:
        for i, index in enumerate(opened):
            for method in METHODS:
                start = time.perf_counter()
                index.retrieve(q, method, top_k=10)
                times[(i, method)].append((time.perf_counter() - start) * 1000)
    chunks = [len(index.store.chunk_ids()) for index in opened]
    print("| index | chunks | method | p50 ms | p95 ms |\n|---|---:|---|---:|---:|")
    for (i, method), values in times.items():
        values.sort()
        p95 = values[int(0.95 * len(values))]
        name = Path(args.indexes[i]).name
        print(f"| {name} | {chunks[i]} | {method} | {statistics.median(values):.1f} | {p95:.1f} |")
    for method in METHODS:
        p50 = [statistics.median(times[(i, method)]) for i in range(len(opened))]
        print(f"\nb(p50) {method}: {growth_exponent(chunks, p50):.3f}", end="")
    print()
    for index in opened:
        index.close()


if __name__ == "__main__":
    main()
