"""Where a ``hybrid-ppr`` query process's memory goes beyond ``vanilla``'s, part by part.

Opens an index, asks one question with ``vanilla`` (the baseline's footprint), then loads
what ``hybrid-ppr`` reads one part at a time and prints the resident set size after
each: BM25 (a ``bm25`` query), the facts' unit matrix that exact fact scoring reads whole,
the passage walk graph, then one and 20 ``hybrid-ppr`` queries (the walk matrix's probed
pages, the query's own arrays and memos).

    python benchmarks/query_memory_parts.py --index INDEX --questions Q.jsonl

Resident set size from ``/proc/self/statm`` (Linux), so memory-mapped pages count once
read, as they do in a peak-RSS measurement.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path


def rss_mb() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--index", required=True)
    p.add_argument("--questions", type=Path, required=True)
    args = p.parse_args()
    from hygraph import GraphIndex
    from hygraph.graph.ppr_views import passage_walk
    from hygraph.graph.view import graph_view
    from hygraph.kept_matrices import MATRIX_DIR
    from hygraph.operators.ppr import collection_matrix

    questions = [json.loads(x)["question"] for x in args.questions.read_text().splitlines()]
    rows = []
    with GraphIndex.open(args.index, progress=False) as index:
        rows.append(("index open", rss_mb()))
        index.retrieve(questions[0], "vanilla", top_k=10)
        rows.append(("after one vanilla query", rss_mb()))
        index.retrieve(questions[0], "bm25", top_k=10)
        rows.append(("+ BM25 loaded (a bm25 query)", rss_mb()))
        res = index.resources
        view = graph_view(res.store)
        _, matrix = collection_matrix(res, view, "facts")
        float(matrix.sum())  # read whole, as exact fact scoring does
        rows.append(("+ the facts' unit matrix read", rss_mb()))
        passage_walk(view, synonyms=True, pair_factor=2.0, keep=res.path / MATRIX_DIR)
        rows.append(("+ the passage walk graph", rss_mb()))
        index.retrieve(questions[0], "hybrid-ppr", top_k=10)
        rows.append(("after one hybrid-ppr query", rss_mb()))
        for q in questions[1:20]:
            index.retrieve(q, "hybrid-ppr", top_k=10)
        rows.append(("after 20 hybrid-ppr queries", rss_mb()))
    print("| point | RSS MB | + MB |\n|---|---:|---:|")
    before = rows[0][1]
    for name, mb in rows:
        print(f"| {name} | {mb:.0f} | {mb - before:+.0f} |")
        before = mb


if __name__ == "__main__":
    main()
