"""The scale table: `hygraph bench --synthetic N` runs (SQLite and PostgreSQL stores)
side by side, with each method's growth exponent of query p50 per store.

    python benchmarks/scale_table.py --run sqlite=sqlite-2k.json --run sqlite=sqlite-20k.json \\
        --run postgresql=pg-2k.json ... --out benchmarks/results/scale.md

Each run's synthetic point is one row per method: build seconds by stage (the shared
index: ingest, extract, embed, vanilla + bm25, with the stage's CPU seconds beside where
the build recorded them; then the method's own layers), query p50
and p95, peak memory of the query process and of the build (``--query-only``: the query
columns alone, for runs over indexes built earlier or copied, whose build history is
another run's). The exponent b fits
p50 ∝ chunks^b over a store's rows; the issue's bound is b(default) ≤ b(vanilla) + 0.05.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from hygraph.bench.metrics import growth_exponent

STAGES = ("ingest", "extract", "embed", "build:bm25")


def latest_stages(index: Path) -> dict[str, float]:
    """Seconds of the stages a later build may have run over an existing index (the HNSW
    graphs, the walk matrix), from the latest build in its history that ran each."""
    try:
        builds = json.loads((index / "manifest.json").read_text()).get("builds", [])
    except (OSError, ValueError):
        return {}
    out: dict[str, float] = {}
    for build in builds:
        for name, usage in build.get("usage", {}).get("stages", {}).items():
            if name in ("vector-index", "walk-matrix"):
                out[name] = round(float(usage.get("seconds", 0.0)), 1)
    return out


def rows_of(store: str, path: Path) -> list[dict]:
    run = json.loads(path.read_text())
    out = []
    for point in run["points"]:
        if not point["label"].startswith("syn"):
            continue
        base = point["base_build"]
        stages = base["first_build"].get("usage", {}).get("stages", {})
        later = latest_stages(Path(point["index"]))
        for method, m in point["methods"].items():
            if m.get("status") == "failed":
                continue
            own = m.get("build") or {}
            out.append({
                "store": store,
                "documents": point["documents"],
                "chunks": point["chunks"],
                "method": method,
                "stages": {s: round(stages.get(s, {}).get("seconds", 0.0), 1) for s in STAGES},
                # CPU seconds where the build recorded them (a build sharing its machine
                # or paused has wall seconds longer than its work).
                "stages_cpu": {s: round(stages[s]["cpu_seconds"], 1) for s in STAGES
                               if "cpu_seconds" in stages.get(s, {})},
                "own_build_s": round(float(own.get("seconds") or 0.0), 1),
                "vector_index_s": later.get("vector-index"),
                "walk_matrix_s": later.get("walk-matrix"),
                "own_layers": own.get("built_layers", []),
                "p50_ms": round(m["latency_ms"]["p50"], 1),
                "p95_ms": round(m["latency_ms"]["p95"], 1),
                "query_peak_mb": m.get("peak_rss_mb"),
                "build_peak_mb": max(base.get("peak_rss_mb") or 0, own.get("peak_rss_mb") or 0),
                "index_mb": round(base.get("index_bytes", 0) / 1e6, 1),
                "store_mb": round(base.get("store_bytes", 0) / 1e6, 1),
                "command": run.get("command"),
            })  # fmt: skip
    return out


def build_table(rows: list[dict]) -> list[str]:
    """The whole table: build seconds by stage, query figures, peaks, index size."""
    lines = [
        "| store | documents | chunks | method | ingest s | extract s | embed s | bm25 s "
        "| own layers s | HNSW s | walk matrix s | p50 ms | p95 ms | query peak MB "
        "| build peak MB | index MB |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        cpu = r.get("stages_cpu", {})
        s = {k: f"{v} ({cpu[k]} CPU)" if cpu.get(k) else str(v) for k, v in r["stages"].items()}
        lines.append(
            f"| {r['store']} | {r['documents']} | {r['chunks']} | {r['method']} | "
            f"{s['ingest']} | {s['extract']} | {s['embed']} | {s['build:bm25']} | "
            f"{r['own_build_s']} | {r['vector_index_s'] or '–'} | {r['walk_matrix_s'] or '–'} | "
            f"{r['p50_ms']} | {r['p95_ms']} | {r['query_peak_mb']} | "
            f"{r['build_peak_mb']} | {r['index_mb']} |"
        )
    return lines


def query_table(rows: list[dict]) -> list[str]:
    """The query columns alone: p50, p95, query peak."""
    return [
        "| store | documents | chunks | method | p50 ms | p95 ms | query peak MB |",
        "|---|---:|---:|---|---:|---:|---:|",
        *(
            f"| {r['store']} | {r['documents']} | {r['chunks']} | {r['method']} | "
            f"{r['p50_ms']} | {r['p95_ms']} | {r['query_peak_mb']} |"
            for r in rows
        ),
    ]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--run", action="append", required=True, help="STORE=bench.json")
    p.add_argument("--out")
    p.add_argument("--query-only", action="store_true", help="p50, p95 and query peak only")
    args = p.parse_args()
    rows = []
    for item in args.run:
        store, _, path = item.partition("=")
        rows.extend(rows_of(store, Path(path)))
    rows.sort(key=lambda r: (r["store"], r["method"], r["chunks"]))
    lines = query_table(rows) if args.query_only else build_table(rows)
    lines += ["", "| store | method | sizes | b(p50) |", "|---|---|---|---:|"]
    for store in sorted({r["store"] for r in rows}):
        for method in sorted({r["method"] for r in rows if r["store"] == store}):
            mine = [r for r in rows if r["store"] == store and r["method"] == method]
            b = growth_exponent([r["chunks"] for r in mine], [r["p50_ms"] for r in mine])
            sizes = ", ".join(str(r["documents"]) for r in mine)
            lines.append(f"| {store} | {method} | {sizes} | {b:.2f} |")
    lines += ["", "Commands:", ""]
    lines += sorted({f"- `{r['command']}`" for r in rows if r["command"]})
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
        Path(args.out).with_suffix(".json").write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
