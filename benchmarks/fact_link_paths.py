"""HippoRAG 2's fact linking two ways on one index: every fact scored (the half-precision
screen, below :data:`~hygraph.layers.fact_vectors.SEARCH_FACTS_FROM` facts) against
Qdrant's HNSW search with the negated query for the least cosine (from there on).

Builds the facts collection's HNSW graph first, so **run it on a copy of the index**
(the graph stays in the copy's Qdrant folder). Then, in one process, each question's
``relationship.fact_link`` runs both ways taking turns over ``--rounds`` rounds (query
vectors embedded once beforehand): median milliseconds of each, and how often the two
give the same facts in the same order, and the largest difference of their normalised
scores. With ``--memory``, also two fresh processes that each retrieve the questions
with ``hybrid-ppr`` one way only, and ``vanilla`` in a third: each one's peak resident
memory.

    python benchmarks/fact_link_paths.py --index COPY --questions Q.jsonl [--n 60] [--memory]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _peak(index: str, questions: Path, n: int, path: str, method: str) -> float:
    """Peak resident MB of a fresh process retrieving ``n`` questions one way."""
    code = (
        "import json, resource, sys\n"
        "import hygraph.layers.fact_vectors as fv\n"
        "from hygraph import GraphIndex\n"
        "index, questions, n, path, method = sys.argv[1:6]\n"
        "if path == 'hnsw':\n    fv.SEARCH_FACTS_FROM = 0\n"
        "qs = [json.loads(x)['question'] for x in open(questions)][: int(n)]\n"
        "with GraphIndex.open(index, progress=False) as g:\n"
        "    for q in qs:\n        g.retrieve(q, method=method, top_k=10)\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)\n"
    )
    args = [sys.executable, "-c", code, index, str(questions), str(n), path, method]
    out = subprocess.run(args, check=True, capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--index", required=True)
    p.add_argument("--questions", type=Path, required=True)
    p.add_argument("--n", type=int, default=60)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--memory", action="store_true")
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    import hygraph.layers.fact_vectors as fv
    from hygraph import GraphIndex
    from hygraph.operators import registry
    from hygraph.operators.state import State

    lines = args.questions.read_text().splitlines()
    questions = [json.loads(x)["question"] for x in lines][: args.n]
    scanned_below = fv.SEARCH_FACTS_FROM
    link = registry.get_operator("relationship.fact_link").fn
    times: dict[str, list[float]] = {"scan": [], "hnsw": []}
    found: dict[str, dict[str, list[tuple[str, float]]]] = {"scan": {}, "hnsw": {}}
    try:
        with GraphIndex.open(args.index, progress=False) as index:
            res = index.resources
            fv.SEARCH_FACTS_FROM = 0  # the build below makes the facts' HNSW graph too
            start = time.perf_counter()
            res.build_search_index()
            built = time.perf_counter() - start
            facts = res.vectors.count(fv.FACT_COLLECTION)
            vectors = {q: res.embed_query(q) for q in questions}
            for r in range(args.rounds):
                for i, q in enumerate(questions):
                    for way in ("scan", "hnsw") if (i + r) % 2 == 0 else ("hnsw", "scan"):
                        fv.SEARCH_FACTS_FROM = scanned_below if way == "scan" else 0
                        state = State(q, top_k=10)
                        state.query = vectors[q]
                        # The operator keeps its choice per graph version: choose again.
                        state.view(res).forget(("facts-searched",))
                        start = time.perf_counter()
                        link(res, state, k=5)
                        times[way].append(1000 * (time.perf_counter() - start))
                        found[way][q] = [(s.id, s.value) for s in state.relationships]
    finally:
        fv.SEARCH_FACTS_FROM = scanned_below
    same = sum(
        [i for i, _ in found["scan"][q]] == [i for i, _ in found["hnsw"][q]] for q in questions
    )
    gap = max(
        (abs(a[1] - b[1]) for q in questions
         for a, b in zip(found["scan"][q], found["hnsw"][q], strict=False)),
        default=0.0,
    )  # fmt: skip
    out = [
        f"# Fact linking, every fact scored against HNSW search: {args.index}",
        "",
        f"- command: `python benchmarks/fact_link_paths.py --index {args.index} --questions "
        f"{args.questions} --n {args.n} --rounds {args.rounds}"
        + (" --memory" if args.memory else "")
        + "`",
        f"- date: {time.strftime('%Y-%m-%d')}; {facts} facts; the facts' HNSW graph built "
        f"in {built:.1f} s",
        "",
        "| way | median ms |",
        "|---|---:|",
        f"| every fact scored (half screen) | {statistics.median(times['scan']):.2f} |",
        f"| HNSW search + negated search | {statistics.median(times['hnsw']):.2f} |",
        "",
        f"Same facts in the same order on {same} of {len(questions)} questions; largest "
        f"difference of a normalised score {gap:.4f}.",
    ]
    if args.memory:
        peaks = {
            (way, method): _peak(args.index, args.questions, args.n, way, method)
            for way, method in (("scan", "hybrid-ppr"), ("hnsw", "hybrid-ppr"), ("scan", "vanilla"))
        }
        base = peaks[("scan", "vanilla")]
        out += ["", "| process | peak MB | against `vanilla` |", "|---|---:|---:|"]
        out += [f"| {m}, {w} | {mb:.0f} | {mb / base:.2f}× |" for (w, m), mb in peaks.items()]
    text = "\n".join(out) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
