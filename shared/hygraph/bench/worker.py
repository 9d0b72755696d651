"""One benchmark task in its own process: build the shared index, or build and query one method.

Run as ``python -m hygraph.bench.worker SPEC.json RESULT.json``. A separate process
per method gives each its own peak-memory figure (``ru_maxrss``) and keeps one
method's caches from warming another's.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

from hygraph.bench.metrics import answer_in_context


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _dir_bytes(path: Path) -> int:
    if not path.exists():
        return 0
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


def build(spec: dict[str, Any]) -> dict[str, Any]:
    """Create or extend the shared index (chunks, extraction, vectors, cheap baselines)."""
    from hygraph.index import GraphIndex

    start = time.perf_counter()
    with GraphIndex(
        spec["index"],
        extractor=spec.get("extractor"),
        chunk_size=spec.get("chunk_size"),
        chunk_overlap=spec.get("chunk_overlap"),
        progress=False,
    ) as index:
        report = index.insert([spec["corpus"]], methods=spec.get("methods") or None)
        first = index.manifest.builds[0] if index.manifest.builds else {}
        counts = index.store.counts()
    reused = not report.added and not report.replaced
    # The peak memory of the build that made the index is kept beside it, so a run
    # that reuses the index still reports the build's figure, not its own.
    sidecar = Path(str(spec["index"]) + ".bench.json")
    if not reused or not sidecar.exists():
        sidecar.write_text(
            json.dumps({"peak_rss_mb": round(_peak_rss_mb(), 1), "reused_when_measured": reused})
        )
    measured = json.loads(sidecar.read_text())
    return {
        "reused": reused,
        "seconds": round(time.perf_counter() - start, 3),
        "first_build": first,
        "this_build": report.to_dict(),
        "counts": counts,
        "peak_rss_mb": measured["peak_rss_mb"],
        "peak_rss_measured_on_reuse": measured["reused_when_measured"],
        "index_bytes": _dir_bytes(Path(spec["index"])),
    }


def _method_build_usage(index: Any, method: str, report: Any) -> dict[str, Any] | None:
    """The build cost of the layers ``method`` reads (beyond the base layers), summed.

    Each layer is built once, by whichever build first needed it: its stage is taken
    from this build's report or the latest earlier build that has it.
    """
    from hygraph.layers.base import BASE_LAYERS, layer_order

    builds = [report.usage, *(b.get("usage", {}) for b in reversed(index.manifest.builds))]
    total: dict[str, Any] | None = None
    for layer in layer_order(index.method(method).layers):
        stage = f"build:{layer}"
        found = next((u["stages"][stage] for u in builds if stage in u.get("stages", {})), None)
        if layer in BASE_LAYERS or found is None:
            continue
        total = (
            dict(found)
            if total is None
            else {
                k: (total.get(k, 0) + v if isinstance(v, int | float) else v)
                for k, v in found.items()
            }
        )
    return total


def query(spec: dict[str, Any]) -> dict[str, Any]:
    """Build (if needed) and query one method or peer; per-question rankings and timings."""
    from hygraph.index import GraphIndex
    from hygraph.ingest.tokenizer import default_tokenizer

    name = spec["method"]
    top_k = int(spec["top_k"])
    budget = int(spec["budget"])
    questions = spec["questions"]
    index = GraphIndex.open(spec["index"], progress=False)
    build_stats: dict[str, Any] = {}
    if spec.get("peer"):
        if spec.get("peers_path"):
            sys.path.insert(0, spec["peers_path"])
        from benchmarks.peers import load_peer

        peer = load_peer(name)
        start = time.perf_counter()
        build_stats = dict(peer.build(index))
        build_stats.setdefault("seconds", time.perf_counter() - start)
        tok = default_tokenizer()

        def run_one(text: str) -> tuple[list[str], str, int]:
            result = peer.retrieve(text, top_k)
            context = tok.truncate(result.context, budget)
            return result.chunk_ids, context, tok.count(context)
    else:
        start = time.perf_counter()
        report = index.insert(methods=[name])
        base = name.partition(":")[0]
        usage = _method_build_usage(index, base, report)
        build_stats = {
            "seconds": usage["seconds"] if usage else 0.0,
            "usage": usage,
            "built_now": usage is not None and f"build:{base}" in report.usage.get("stages", {}),
        }

        def run_one(text: str) -> tuple[list[str], str, int]:
            result = index.query(text, name, top_k=top_k, budget=budget)
            return result.chunks, result.context, result.context_tokens

    # Warm up (model load, file opening), then time each query with the query-embedding
    # cache off, so every query pays for its embedding as a new question would.
    run_one("warm up question")
    embedder = index.embedder
    if hasattr(embedder, "cache"):
        embedder.cache = None
    rows = []
    for q in questions:
        t0 = time.perf_counter()
        chunk_ids, context, tokens = run_one(q["question"])
        latency = time.perf_counter() - t0
        chunks = index.store.get_chunks(chunk_ids)
        passages = list(dict.fromkeys(chunks[c].doc_id for c in chunk_ids if c in chunks))
        rows.append(
            {
                "id": q["id"],
                "type": q.get("type", "all"),
                "passages": passages[: max(spec["ks"])],
                "answer_in_context": answer_in_context(context, q.get("answers", [])),
                "context_tokens": tokens,
                "latency_ms": round(latency * 1000, 3),
            }
        )
    method_bytes = _dir_bytes(Path(spec["index"]) / name.partition(":")[0])
    if not spec.get("peer"):
        for collection in index.method(name).collections:  # embedded Qdrant folders
            method_bytes += _dir_bytes(Path(spec["index"]) / "qdrant" / collection)
    result = {
        "method": name,
        "peer": bool(spec.get("peer")),
        "build": build_stats,
        "rows": rows,
        "peak_rss_mb": round(_peak_rss_mb(), 1),
        "method_bytes": method_bytes,
    }
    index.close()
    return result


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    spec = json.loads(Path(args[0]).read_text())
    result = build(spec) if spec["task"] == "build" else query(spec)
    Path(args[1]).write_text(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
