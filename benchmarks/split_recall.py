"""Recall of every method of a ``hygraph bench`` result on parts of its questions.

A bench result (``--out``) keeps each method's ranked passages per question, so the
figures on questions 1–50 and 51–100 (choose on one part, confirm on the other) come from
the very run that measured the whole set: the same index, the same rankings. Prints a
Markdown table, R@k per part.

    python benchmarks/split_recall.py benchmarks/results/musique-kg-catalogue.json \\
        --data ../shared/data/musique --parts 1-50,51-100
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hygraph.bench.data import load_dataset
from hygraph.bench.metrics import mean, question_positions, recall_at_k


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("result", help="the JSON a hygraph bench --out wrote")
    parser.add_argument("--data", required=True, help="the dataset folder it ran on")
    parser.add_argument("--parts", default="1-50,51-100", help="1-based question ranges")
    args = parser.parse_args()
    result = json.loads(Path(args.result).read_text())
    ks = result["config"]["ks"]
    questions = load_dataset(args.data).questions
    gold = {q.id: q.supporting_ids for q in questions}
    parts = args.parts.split(",")
    ids = {p: {questions[i].id for i in question_positions(p, len(questions))} for p in parts}
    header = " | ".join(f"q{p} R@{'/'.join(str(k) for k in ks)}" for p in parts)
    print(f"| method | {header} |")
    print("|---|" + "---|" * len(parts))
    for name, stats in result["main"]["methods"].items():
        cells = []
        for p in parts:
            rows = [r for r in stats["rows"] if r["id"] in ids[p]]
            cells.append(" / ".join(
                f"{100 * mean([recall_at_k(r['passages'], gold[r['id']], k) for r in rows]):.1f}"
                for k in ks
            ))  # fmt: skip
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
