"""The facts step's scoring: the float32 product over every fact against the half-precision
screen with exact rescoring (``hygraph.vectors.half_screen``), on a built index.

    python benchmarks/fact_screen.py --index INDEX --questions Q.jsonl [--n 100] [--k 5] \\
        [--out results.md]

For each question (embedded once, untimed) both ways run in turn on the index's kept
matrices (the float32 unit matrix and its half copy, as a query maps them); the table
gives the median milliseconds of each, the rows rescored per question, and whether the
best ``k`` facts, their scores and the least and greatest score agree exactly.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--index", required=True)
    p.add_argument("--questions", required=True)
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--out")
    args = p.parse_args()
    from hygraph import GraphIndex
    from hygraph.graph.view import graph_view
    from hygraph.layers.fact_vectors import FACT_COLLECTION
    from hygraph.operators.ppr import _top, collection_half, collection_matrix, unit_query
    from hygraph.vectors import half_screen

    lines = Path(args.questions).read_text().splitlines()
    questions = [json.loads(x)["question"] for x in lines][: args.n]
    whole, screened, rescored, same = [], [], [], 0
    with GraphIndex.open(args.index, progress=False) as index:
        res = index.resources
        view = graph_view(index.store)
        _, matrix = collection_matrix(res, view, FACT_COLLECTION)
        half = collection_half(res, view, FACT_COLLECTION)
        counted = half_screen._rows

        def counting(m: np.ndarray, rows: np.ndarray) -> np.ndarray:
            rescored[-1] += len(rows)
            return counted(m, rows)

        half_screen._rows = counting  # type: ignore[assignment]
        for question in questions:
            q = unit_query(index.embedder.embed_query(question))
            start = time.perf_counter()
            scores = half_screen.exact_scores(matrix, q)
            best = _top(scores, args.k)
            plain = (best.tolist(), scores[best].tolist(), float(scores.min()), float(scores.max()))
            whole.append((time.perf_counter() - start) * 1000)
            rescored.append(0)
            start = time.perf_counter()
            got = half_screen.top_scores(matrix, half, q, args.k)
            screened.append((time.perf_counter() - start) * 1000)
            same += plain == (got.rows.tolist(), got.scores.tolist(), got.low, got.high)
    out = [
        f"# Facts scored whole against screened at half precision: {args.index}",
        "",
        f"- command: `python benchmarks/fact_screen.py --index {args.index} --questions "
        f"{args.questions} --n {args.n} --k {args.k}`",
        f"- date: {time.strftime('%Y-%m-%d')}; facts: {len(matrix)} × {matrix.shape[1]}",
        "",
        "| way | median ms | rows rescored (median) | same top, scores and extremes |",
        "|---|---:|---:|---:|",
        f"| float32 product over every fact | {statistics.median(whole):.2f} | - | - |",
        f"| half-precision screen + exact rescoring | {statistics.median(screened):.2f} | "
        f"{statistics.median(rescored):.0f} | {same} of {len(questions)} |",
    ]
    report = "\n".join(out) + "\n"
    if args.out:
        Path(args.out).write_text(report)
    print(report)


if __name__ == "__main__":
    main()
