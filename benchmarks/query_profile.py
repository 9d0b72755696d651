"""Where one method's query time and memory go: per-step times and the process's peak.

Opens a built index (``--index``, e.g. a ``hygraph bench`` work folder's index), asks
the questions of ``--data`` once as a warm-up round (which also builds every cache a
query reads: graph views, vector matrices), then times them with the query-embedding
cache off, as the bench worker does. Prints JSON: per step of the recipe, the median
and 95th-percentile milliseconds (from the query trace), the query's median and p95,
and the process's peak resident memory (``ru_maxrss``) after opening the index, after
loading the embedding model, after the first query (which builds the method's caches)
and at the end. ``--tracemalloc`` also reports the Python heap's peak during the first
query and which lines hold most of what it kept (it slows the run; use it for memory,
not for time). For native memory too (Qdrant's, numpy's), run the script under
``memray run`` and read ``memray summary``.

Each method should run in its own process (as ``hygraph bench`` does), so its peak is
its own:

    python benchmarks/query_profile.py --index /tmp/qperf/musique/musique-full-xxxx \\
        --data ../shared/data/musique --method hybrid-ppr --questions 50
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
import tracemalloc
from pathlib import Path


def _rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


def _current_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024.0, 1)
    return 0.0


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))], 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--data", required=True, help="folder with questions.jsonl")
    parser.add_argument("--method", default="hybrid-ppr")
    parser.add_argument("--questions", type=int, default=50)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--tracemalloc", action="store_true")
    args = parser.parse_args()

    from hygraph.index import GraphIndex

    lines = (Path(args.data) / "questions.jsonl").read_text().splitlines()
    questions = [json.loads(x)["question"] for x in lines if x.strip()][: args.questions]
    out: dict = {"method": args.method, "rss_start_mb": _rss_mb()}
    index = GraphIndex.open(args.index, progress=False)
    index.method(args.method, config={})
    out["rss_open_mb"] = _rss_mb()
    index.embedder.embed_query("the model loaded before the first query")
    out["rss_model_mb"] = _rss_mb()
    if args.tracemalloc:
        tracemalloc.start(3)
    t0 = time.perf_counter()
    first = index.query(questions[0], args.method, top_k=args.top_k)
    out["first_query_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    out["first_query_steps_ms"] = {
        s["name"]: round(s["seconds"] * 1000, 1) for s in first.trace if s["seconds"] > 0.001
    }
    if args.tracemalloc:
        snapshot = tracemalloc.take_snapshot()
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out["first_query_python_heap_mb"] = {
            "kept": round(current / 2**20, 1),
            "peak": round(peak / 2**20, 1),
        }
        out["first_query_kept_by_line"] = [
            f"{stat.size / 2**20:.1f} MB {stat.traceback[0]}"
            for stat in snapshot.statistics("lineno")[:12]
        ]
    out["rss_after_first_mb"] = _rss_mb()
    out["rss_now_after_first_mb"] = _current_rss_mb()
    for q in questions:  # warm-up round
        index.query(q, args.method, top_k=args.top_k)
    embedder = index.embedder
    if hasattr(embedder, "cache"):
        embedder.cache = None
    totals: list[float] = []
    steps: dict[str, list[float]] = {}
    for q in questions:
        t0 = time.perf_counter()
        result = index.query(q, args.method, top_k=args.top_k)
        totals.append((time.perf_counter() - t0) * 1000)
        for s in result.trace:
            steps.setdefault(s["name"], []).append(s["seconds"] * 1000)
    out["query_ms"] = {"p50": _p(totals, 50), "p95": _p(totals, 95)}
    out["steps_ms"] = {
        name: {"p50": _p(v, 50), "p95": _p(v, 95), "mean": round(statistics.mean(v), 3)}
        for name, v in steps.items()
    }
    out["rss_end_mb"] = _rss_mb()
    out["rss_now_end_mb"] = _current_rss_mb()
    index.close()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
