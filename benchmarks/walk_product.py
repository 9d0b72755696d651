"""The passage walk's cost as read against renumbered on PyTorch's threads, on a built index.

    python benchmarks/walk_product.py --index INDEX --questions Q.jsonl [--n 60] [--out R.md]

Opens the index, asks ``--n`` questions of ``hybrid-ppr`` and keeps each whole-graph walk's
restart vector (HippoRAG 2's passage walk: entities and passages). Then, in the same
process, walks every kept restart three ways, each timed (median over the questions):
scipy's kernel on the graph as read (the walk before renumbering), the renumbered graph
on PyTorch's threads (:mod:`hygraph.graph.algorithms.ordered`, as shipped), and one
sparse product of each alone. It also reports the largest difference between the two
walks' scores (relative to the largest score) and on how many questions their top 50
differ. Indexes of 5,000 passages or more walk the kept matrix instead (nothing to time
here).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np


def _median_ms(run: Callable[[], object], repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--index", required=True)
    p.add_argument("--questions", required=True)
    p.add_argument("--n", type=int, default=60)
    p.add_argument("--out")
    args = p.parse_args()
    import hygraph.graph.algorithms.ppr as ppr_module
    from hygraph import GraphIndex

    kept: list[tuple[np.ndarray, object, object]] = []
    walk = ppr_module.personalized_pagerank

    def keep(*a, **k):  # type: ignore[no-untyped-def]
        kept.append((np.array(a[1], dtype=np.float64), k["transposed"], k["dangling"]))
        return walk(*a, **k)

    ppr_module.personalized_pagerank = keep
    lines = Path(args.questions).read_text().splitlines()
    questions = [json.loads(x)["question"] for x in lines][: args.n]
    with GraphIndex.open(args.index, progress=False) as index:
        for q in questions:
            index.retrieve(q, "hybrid-ppr", top_k=10)
    ppr_module.personalized_pagerank = walk
    if not kept:
        raise SystemExit("no whole-graph walk was run (a kept walk matrix answers here)")
    from hygraph.graph.algorithms.ordered import ordered_transpose

    transposed, dangling = kept[0][1], kept[0][2]
    start = time.perf_counter()
    ordered = ordered_transpose(transposed)
    order_ms = (time.perf_counter() - start) * 1000
    plain_ms, ordered_ms, worst, differ = [], [], 0.0, 0

    def walked(reset: np.ndarray, renumbering: object) -> np.ndarray:
        return walk(None, reset, transposed=transposed, dangling=dangling, ordered=renumbering)

    for reset, _, _ in kept:
        plain_ms.append(_median_ms(lambda r=reset: walked(r, None)))
        ordered_ms.append(_median_ms(lambda r=reset: walked(r, ordered)))
        a, b = walked(reset, None), walked(reset, ordered)
        worst = max(worst, float(np.abs(a - b).max() / a.max()))
        top_a = np.argsort(-a, kind="stable")[:50]
        differ += int(not np.array_equal(top_a, np.argsort(-b, kind="stable")[:50]))
    x = np.random.default_rng(0).random(transposed.shape[0])
    out = np.empty_like(x)
    product = ppr_module._matvec_into(transposed)
    one_plain = _median_ms(lambda: [product(x, out) for _ in range(100)]) / 100
    one_ordered = (
        _median_ms(lambda: [ordered.matvec(x, out) for _ in range(100)]) / 100 if ordered else None
    )
    import torch

    renumbered = ordered is not None and not np.array_equal(ordered.order, np.arange(len(x)))
    text = "\n".join([
        f"# The passage walk as read and renumbered: {args.index}", "",
        f"- command: `python benchmarks/walk_product.py --index {args.index} --questions "
        f"{args.questions} --n {args.n}`",
        f"- date: {time.strftime('%Y-%m-%d')}; torch threads {torch.get_num_threads()}",
        f"- graph: {transposed.shape[0]} nodes, {transposed.nnz} entries; walks kept: {len(kept)}",
        f"- renumbering made in {order_ms:.0f} ms ({'renumbered' if renumbered else 'as read'})",
        "", "| | as read (scipy) | renumbered (PyTorch threads) | ratio |", "|---|---:|---:|---:|",
        f"| one walk, median ms | {statistics.median(plain_ms):.2f} | "
        f"{statistics.median(ordered_ms):.2f} | "
        f"{statistics.median(ordered_ms) / statistics.median(plain_ms):.2f} |",
        f"| one product, ms | {one_plain:.3f} | "
        f"{one_ordered if one_ordered is None else f'{one_ordered:.3f}'} | "
        f"{'' if one_ordered is None else f'{one_ordered / one_plain:.2f}'} |",
        "", f"Largest score difference / largest score: {worst:.1e}; questions whose top 50 "
        f"differ: {differ} of {len(kept)}.", "",
    ])  # fmt: skip
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
