"""The default's local push replayed: scipy's operators against its kernels called directly,
and whole-matrix rounds from several shares of the graph.

Asks ``--n`` questions of ``hybrid-ppr`` on an index whose walk uses its build-time
matrix (5,000 passages or more; ``--min-chunks 0`` writes and uses one on a smaller
index), keeps what each query handed to
:func:`~hygraph.graph.algorithms.linear_ppr.push_ppr` (the sparse restart and its
threshold), then replays every captured push in each variant, the variants taking
turns over ``--rounds`` rounds: ``operators`` (rows gathered with ``A[rows].T @ x``,
as before :class:`~hygraph.graph.algorithms.linear_ppr.RowProducts`), then the kernels
with :data:`~hygraph.graph.algorithms.linear_ppr.WHOLE_SHARE` set to each of
``--shares`` (1: rows only). Prints each variant's median milliseconds a push and the
largest gap of its estimates to the ``operators`` push in units of the bound
(``threshold · deg``: whole-matrix rounds settle mass sooner, so the gap stays below 1;
rows only, the two agree to rounding). With ``--before FILE`` (an earlier
``linear_ppr.py``, for example from ``git show REV:shared/hygraph/graph/algorithms/linear_ppr.py``)
the variants are that file's push and the current one instead, and the whole
retrievals take turns between the two.

    .venv/bin/python benchmarks/push_rounds.py --index INDEX \\
        --questions ../shared/data/musique/questions.jsonl [--n 40] [--out push.md]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np


def capture(
    index_path: Path, questions: list[str], min_chunks: int | None, rounds: int, before=None
) -> tuple:  # type: ignore[no-untyped-def]
    """``(adjacency, degree, [(restart, threshold, damping), ...], retrievals)``: the
    pushes, and the milliseconds of every whole retrieval (query vectors cached after
    the first pass) with the push as before (``operators``) and as now (``kernels``),
    the two taking turns question by question over ``rounds`` rounds."""
    import hygraph.graph.algorithms.linear_ppr as linear
    import hygraph.operators.passage_prior as prior
    from hygraph import GraphIndex

    if min_chunks is not None:
        prior.MIN_CHUNKS = min_chunks
    calls: list[tuple[np.ndarray, float, float]] = []
    graph: dict[str, object] = {}
    original = linear.push_ppr

    def recording(adjacency, degree, restart, *, damping, threshold, **kw):  # type: ignore[no-untyped-def]
        calls.append((np.array(restart, dtype=np.float64), threshold, damping))
        graph.update(adjacency=adjacency, degree=degree)
        return original(adjacency, degree, restart, damping=damping, threshold=threshold, **kw)

    linear.push_ppr = recording
    try:
        with GraphIndex.open(index_path, progress=False) as index:
            index.insert(methods=["hybrid-ppr"])  # writes the walk matrix where it is missing
            for q in questions:
                index.retrieve(q, method="hybrid-ppr", top_k=10)
            linear.push_ppr = original
            retrievals = _retrievals(index, questions, rounds, before)
    finally:
        linear.push_ppr = original
    if not calls:
        raise SystemExit("no push: the index walks its whole graph (try --min-chunks 0)")
    return graph["adjacency"], graph["degree"], calls, retrievals


def _retrievals(index, questions: list[str], rounds: int, before=None) -> dict[str, list[float]]:  # type: ignore[no-untyped-def]
    """Whole-retrieval milliseconds per variant (see :func:`capture`); with ``before``
    (an earlier ``push_ppr``), that push as ``operators`` and the current one as
    ``kernels``."""
    import hygraph.graph.algorithms.linear_ppr as linear

    kept_share, kept_kernels, kept_push = linear.WHOLE_SHARE, linear._kernels, linear.push_ppr
    times: dict[str, list[float]] = {"operators": [], "kernels": []}
    try:
        for r in range(rounds):
            for i, q in enumerate(questions):
                order = ["operators", "kernels"] if (i + r) % 2 == 0 else ["kernels", "operators"]
                for name in order:
                    plain = name == "operators"
                    if before is not None:
                        linear.push_ppr = before if plain else kept_push
                    else:
                        linear.WHOLE_SHARE = 1.0 if plain else kept_share
                        linear._kernels = (lambda _a: None) if plain else kept_kernels
                    t = time.perf_counter()
                    index.retrieve(q, method="hybrid-ppr", top_k=10)
                    times[name].append(1000 * (time.perf_counter() - t))
    finally:
        linear.WHOLE_SHARE, linear._kernels, linear.push_ppr = kept_share, kept_kernels, kept_push
    return times


def _load(path: Path):  # type: ignore[no-untyped-def]
    """The module in the file ``path`` (an earlier ``linear_ppr.py``)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("linear_ppr_before", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True)
    parser.add_argument("--n", type=int, default=40)
    parser.add_argument("--shares", default="1,0.5,0.2,0.1,0.05")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--min-chunks", type=int, default=None)
    parser.add_argument("--before", type=Path, help="an earlier linear_ppr.py to compare with")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    import hygraph.graph.algorithms.linear_ppr as linear

    questions = [json.loads(x)["question"] for x in args.questions.open()][: args.n]
    before = None if args.before is None else _load(args.before).push_ppr
    adjacency, degree, calls, retrievals = capture(
        args.index, questions, args.min_chunks, args.rounds, before
    )
    shares = [float(x) for x in args.shares.split(",")]
    variants = [("operators", None), *((f"kernels, whole share {x:g}", x) for x in shares)]
    if before is not None:
        variants = [("before", None), ("now", -1.0)]
    times: dict[str, list[float]] = {name: [] for name, _ in variants}
    results: dict[str, list[np.ndarray]] = {}
    kept_share, kept_kernels = linear.WHOLE_SHARE, linear._kernels
    try:
        for r in range(args.rounds):
            for name, share in variants if r % 2 == 0 else variants[::-1]:
                push = linear.push_ppr
                if before is not None:  # the earlier file's push, then the current one
                    push = before if share is None else linear.push_ppr
                else:
                    linear.WHOLE_SHARE = 1.0 if share is None else share
                    linear._kernels = (lambda _a: None) if share is None else kept_kernels
                out = []
                for restart, threshold, damping in calls:
                    t = time.perf_counter()
                    est, _ = push(adjacency, degree, restart, damping=damping,
                                  threshold=threshold)  # fmt: skip
                    times[name].append(time.perf_counter() - t)
                    out.append(est)
                results[name] = out
    finally:
        linear.WHOLE_SHARE, linear._kernels = kept_share, kept_kernels
    plain = results[variants[0][0]]
    base = statistics.median(times[variants[0][0]])
    lines = [
        f"# Push rounds: {args.index}",
        "",
        f"- command: `python benchmarks/push_rounds.py --index {args.index} --questions "
        f"{args.questions} --n {args.n} --shares {args.shares} --rounds {args.rounds}"
        + (f" --min-chunks {args.min_chunks}" if args.min_chunks is not None else "")
        + (f" --before {args.before}" if args.before is not None else "")
        + "`",
        f"- date: {time.strftime('%Y-%m-%d')}; graph: {adjacency.shape[0]} nodes, "
        f"{adjacency.nnz} entries; {len(calls)} pushes replayed {args.rounds} times each",
        "",
        f"| variant | median ms | against {variants[0][0]} | largest gap / bound |",
        "|---|---:|---:|---:|",
    ]
    for name, _ in variants:
        gap = max(
            float(np.max(np.abs(a - b) / np.maximum(th * degree, 1e-300)))
            for a, b, (_, th, _) in zip(results[name], plain, calls, strict=True)
        )
        median = statistics.median(times[name])
        lines.append(f"| {name} | {1000 * median:.2f} | {median / base:.2f}× | {gap:.3f} |")
    first_name = "operators, rows only (before)" if args.before is None else "before"
    now_name = f"kernels, whole share {kept_share:g} (now)" if args.before is None else "now"
    then_ms, now_ms = (statistics.median(retrievals[k]) for k in ("operators", "kernels"))
    lines += [
        "",
        "Whole `hybrid-ppr` retrievals in the same process (query vectors cached), the push "
        "as before and as now taking turns question by question:",
        "",
        "| push | median ms | against before |",
        "|---|---:|---:|",
        f"| {first_name} | {then_ms:.2f} | 1.00× |",
        f"| {now_name} | {now_ms:.2f} | {now_ms / then_ms:.2f}× |",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
