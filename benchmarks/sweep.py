"""Compare method variants quickly on an index that ``hygraph bench`` already built.

Quality figures only (recall@k, answer-in-context, context tokens, recall@5 by question
type), with every variant queried in one process over one open index. Use it to tune
options; use ``hygraph bench`` for build cost, memory and latency.

    .venv/bin/python benchmarks/sweep.py --data ../shared/data/musique \\
        --index /tmp/bench-work/musique-full-<hash> \\
        "hypergraph" "hypergraph-bridge" "hypergraph-bridge:rrf_k=60"

A variant is a method spec (``name:key=value,...``); the method must be built in the index.
"""

from __future__ import annotations

import argparse
import json

from hygraph.bench.data import load_dataset
from hygraph.bench.metrics import answer_in_context, mean, recall_at_k
from hygraph.bench.runner import select_questions
from hygraph.index import GraphIndex

KS = (2, 5, 10)


def sweep(index: GraphIndex, questions: list, spec: str, budget: int) -> dict:
    recalls: dict[int, list[float]] = {k: [] for k in KS}
    by_type: dict[str, list[float]] = {}
    found: list[float] = []
    tokens: list[float] = []
    for q in questions:
        result = index.query(q.question, spec, top_k=max(KS), budget=budget)
        for k in KS:
            recalls[k].append(recall_at_k(result.passages, q.supporting_ids, k))
        by_type.setdefault(q.type, []).append(recall_at_k(result.passages, q.supporting_ids, 5))
        found.append(float(answer_in_context(result.context, q.answers)))
        tokens.append(result.context_tokens)
    return {
        "method": spec,
        **{f"R@{k}": round(100 * mean(v), 1) for k, v in recalls.items()},
        "answer_in_context": round(100 * mean(found), 1),
        "context_tokens": round(mean(tokens)),
        "R@5_by_type": {t: round(100 * mean(v), 1) for t, v in sorted(by_type.items())},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="benchmark folder (questions.jsonl)")
    parser.add_argument("--index", required=True, help="an index built over its corpus")
    parser.add_argument("--budget", type=int, default=2000, help="context budget in tokens")
    parser.add_argument("--out", help="also write the rows as JSON to this file")
    parser.add_argument(
        "--questions", help="only these questions, 1-based, e.g. 1-50 (as hygraph bench)"
    )
    parser.add_argument("specs", nargs="+", help="method specs to compare")
    args = parser.parse_args(argv)
    questions = select_questions(load_dataset(args.data), args.questions).questions
    with GraphIndex.open(args.index, progress=False) as index:
        print("| variant | R@2 | R@5 | R@10 | answer in context | context tokens |")
        print("|---|---:|---:|---:|---:|---:|")
        rows = []
        for spec in args.specs:
            row = sweep(index, questions, spec, args.budget)
            rows.append(row)
            print(
                f"| `{spec}` | {row['R@2']} | {row['R@5']} | {row['R@10']} | "
                f"{row['answer_in_context']} | {row['context_tokens']} |",
                flush=True,
            )
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
