"""Readers during a build: queries from other processes while ``hygraph index`` writes.

Run from the repository root::

    .venv/bin/python benchmarks/reliability/readers.py [--musique 300] [--readers 2]

Setup: an index of the bundled sample (12 documents, ``vanilla``) is built first. Then
``hygraph index`` adds the first ``--musique`` paragraphs of
``../shared/data/musique/corpus.jsonl`` with ``vanilla`` and ``hypergraph`` (offline
extractor), twice from copies of that index: once alone (the baseline build time), once
while ``--readers`` reader processes each keep one ``GraphIndex`` open and query the
sample questions in a loop until the build ends, and a ``hygraph query`` CLI process
starts every few seconds. Embedded Qdrant (Edge) locks a shard to one process; the
processes hand the shards over between operations (``hygraph/vectors/edge.py``).

Reported: queries answered and failed (readers and CLI), reader latency (median, p95,
max) during the build and after it on the finished index, and the build time with
readers against alone. Written to ``benchmarks/results/reliability-readers.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MUSIQUE = ROOT.parent / "shared" / "data" / "musique" / "corpus.jsonl"
SAMPLE = ROOT / "shared" / "hygraph" / "sample"
CLI = str(Path(sys.executable).parent / "hygraph")

READER = r"""
import json, sys, time
from pathlib import Path
from hygraph import GraphIndex

path, stop, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
questions = [json.loads(l)["question"] for l in open(sys.argv[4]) if l.strip()]
rows = []
with GraphIndex.open(path, progress=False) as index:
    index.retrieve(questions[0], "vanilla")  # warm the embedder
    i = 0
    while not stop.exists():
        q = questions[i % len(questions)]
        start = time.perf_counter()
        try:
            result = index.retrieve(q, "vanilla")
            rows.append({"s": time.perf_counter() - start, "ok": bool(result.chunks)})
        except Exception as err:
            rows.append({"s": time.perf_counter() - start, "ok": False, "error": str(err)})
        i += 1
    after = []
    for q in questions:
        start = time.perf_counter()
        index.retrieve(q, "vanilla")
        after.append(time.perf_counter() - start)
out.write_text(json.dumps({"during": rows, "after": after}))
"""


def _corpus(folder: Path, n: int) -> Path:
    path = folder / "musique.jsonl"
    with open(MUSIQUE) as src, open(path, "w") as dst:
        for i, line in enumerate(src):
            if i >= n:
                break
            row = json.loads(line)
            dst.write(json.dumps({"id": row["id"], "title": row["title"], "text": row["text"]}))
            dst.write("\n")
    return path


def _index(path: Path, docs: Path, methods: str) -> float:
    start = time.perf_counter()
    run = [CLI, "index", str(docs), "--index", str(path), "--no-progress"]
    for m in methods.split(","):
        run += ["--method", m]
    subprocess.run(run, check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--musique", type=int, default=300)
    parser.add_argument("--readers", type=int, default=2)
    parser.add_argument("--cli-every", type=float, default=5.0)
    parser.add_argument("--out", default=str(ROOT / "benchmarks/results/reliability-readers.md"))
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="hygraph-readers-"))
    docs = _corpus(work, args.musique)
    base = work / "base"
    _index(base, SAMPLE, "vanilla")
    alone, shared = work / "alone", work / "shared"
    shutil.copytree(base, alone)
    shutil.copytree(base, shared)
    alone_s = _index(alone, docs, "vanilla,hypergraph")

    stop = work / "stop"
    script = work / "reader.py"
    script.write_text(READER)
    questions = SAMPLE / "questions.jsonl"
    readers = [
        subprocess.Popen(
            [
                sys.executable,
                str(script),
                str(shared),
                str(stop),
                str(work / f"reader{i}.json"),
                str(questions),
            ],
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for i in range(args.readers)
    ]
    time.sleep(8)  # readers open the index and load the embedder first
    start = time.perf_counter()
    build = subprocess.Popen(
        [CLI, "index", str(docs), "--index", str(shared), "--no-progress",
         "--method", "vanilla", "--method", "hypergraph"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    cli_ok = cli_failed = 0
    cli_errors: list[str] = []
    while build.poll() is None:
        q = subprocess.run(
            [CLI, "query", "--index", str(shared), "--json", "Where is Aldercott shipyard?"],
            capture_output=True, text=True,
        )  # fmt: skip
        if q.returncode == 0 and json.loads(q.stdout)["passages"]:
            cli_ok += 1
        else:
            cli_failed += 1
            cli_errors.append((q.stderr or q.stdout).strip().splitlines()[-1:][0] if q.stderr
                              or q.stdout else "no output")  # fmt: skip
        time.sleep(args.cli_every)
    shared_s = time.perf_counter() - start
    build_err = build.stderr.read() if build.returncode else ""
    stop.touch()
    for r in readers:
        r.wait(600)
    during, after, errors = [], [], []
    for i in range(args.readers):
        data = json.loads((work / f"reader{i}.json").read_text())
        during += data["during"]
        after += data["after"]
        errors += [row["error"] for row in data["during"] if "error" in row]
    ok = [r["s"] for r in during if r["ok"]]
    failed = len(during) - len(ok)
    lines = [
        "# Readers during a build (Qdrant Edge, embedded)",
        "",
        f"Command: `.venv/bin/python benchmarks/reliability/readers.py --musique {args.musique}"
        f" --readers {args.readers}`",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores. "
        f"Build: `hygraph index` of {args.musique} MuSiQue paragraphs into an index of the "
        "sample corpus, methods vanilla + hypergraph, offline extractor.",
        "",
        "| | value |",
        "|---|---|",
        f"| build alone (s) | {alone_s:.1f} |",
        f"| build with {args.readers} readers + CLI queries (s) | {shared_s:.1f} "
        f"({shared_s / alone_s:.2f}×) |",
        f"| build exit code | {build.returncode} |",
        f"| reader queries answered / failed during the build | {len(ok)} / {failed} |",
        f"| `hygraph query` CLI runs answered / failed during the build | {cli_ok} / "
        f"{cli_failed} |",
        f"| reader latency during the build: median / p95 / max (ms) | "
        f"{statistics.median(ok) * 1000:.0f} / {_pct(ok, 0.95) * 1000:.0f} / "
        f"{max(ok) * 1000:.0f} |",
        f"| reader latency after the build: median / p95 / max (ms) | "
        f"{statistics.median(after) * 1000:.0f} / {_pct(after, 0.95) * 1000:.0f} / "
        f"{max(after) * 1000:.0f} |",
        "",
    ]
    if errors or cli_errors or build_err:
        lines += ["Errors:", ""] + [f"- {e}" for e in {*errors, *cli_errors}]
        if build_err:
            lines.append(f"- build: {build_err.strip().splitlines()[-1]}")
        lines.append("")
    text = "\n".join(lines)
    Path(args.out).write_text(text)
    print(text)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
