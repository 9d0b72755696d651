"""The passage walk with its build-time matrix against the whole-graph walk, in one process.

On an index with ``hybrid-ppr`` built (5,000 passages or more, where the matrix is
used; ``--min-chunks 0`` for a smaller one), writes what queries read
(``GraphIndex.insert()`` with nothing new), then asks every question with the matrix (its
clusters probed, as queries do), with the matrix's every row multiplied, without it (the
whole-graph power iteration, with the exact least and greatest cosine), and with it
again, and prints the median query time of each pass and how many top-``k`` passage
lists are identical to the whole-graph walk's (and how many hold the same passages), with
the rank moves of the lists that differ.

    .venv/bin/python benchmarks/walk_matrix_check.py \\
        --index /tmp/w2/musique-syn20000-data-syn20000-524ec12c \\
        --questions ../shared/data/musique/questions.jsonl

Query embeddings come from the index's cache after the first pass, so the times compare
the walks, not the embedder.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True, help="JSONL with 'question'")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--min-chunks", type=int, default=None,
                        help="use the matrix from this many passages (default: the "
                             "index's own rule, 5,000), e.g. 0 to check it on MuSiQue")  # fmt: skip
    args = parser.parse_args()

    import hygraph.operators.passage_prior as prior
    from hygraph import GraphIndex

    if args.min_chunks is not None:
        prior.MIN_CHUNKS = args.min_chunks

    questions = [json.loads(line)["question"] for line in args.questions.open()]
    with GraphIndex.open(args.index, progress=False) as index:
        start = time.perf_counter()
        index.insert(methods=["hybrid-ppr"])
        print(f"refresh (writes what is missing): {time.perf_counter() - start:.1f} s")

        def run() -> tuple[list[list[str]], float]:
            lists, times = [], []
            for q in questions:
                t = time.perf_counter()
                lists.append(list(index.retrieve(q, method="hybrid-ppr", top_k=args.k).chunks))
                times.append(time.perf_counter() - t)
            return lists, 1000 * statistics.median(times)

        matrix, first = run()
        probe = prior.PROBE
        prior.PROBE = 1 << 30  # every cluster: the product with every row
        try:
            every, every_ms = run()
        finally:
            prior.PROBE = probe
        kept = prior.prior_matrix
        prior.prior_matrix = lambda *a, **kw: None  # the whole-graph walk
        try:
            whole, whole_ms = run()
        finally:
            prior.prior_matrix = kept
        _, again = run()
    print(f"p50 with the matrix {first:.1f} / {again:.1f} ms, every row {every_ms:.1f} ms, "
          f"whole graph {whole_ms:.1f} ms")  # fmt: skip
    for name, lists in (("probed clusters", matrix), ("every row", every)):
        same = sum(a == b for a, b in zip(lists, whole, strict=True))
        sets = sum(set(a) == set(b) for a, b in zip(lists, whole, strict=True))
        print(f"{name}: top-{args.k} lists identical to the whole-graph walk's "
              f"{same}/{len(questions)}, same passages {sets}")  # fmt: skip
    for a, b in zip(matrix, whole, strict=True):
        if a != b:
            print(
                "  whole-graph rank of each passage:", [b.index(x) if x in b else None for x in a]
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
