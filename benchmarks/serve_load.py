"""What serving an index over HTTP costs: ``hygraph serve`` under load against in-process calls.

For each method (``vanilla`` and the recommended ``hybrid-ppr`` by default):

* **in-process**: ``GraphIndex.retrieve`` on each question, one after another, in this
  process (model loaded and index opened before timing) → p50 / p95 ms and calls/s;
  both cases embed every question anew (the query-embedding cache off; the server runs
  with ``--no-query-cache``), as new questions would be;
* **served**: ``hygraph serve`` started as its own process on loopback; this process sends
  ``POST /v1/retrieve`` (``evidence: false``, the same work as the in-process call) from
  ``C`` client threads at once (a bounded load: each thread sends its next request when
  the last one is answered), for each ``C`` in ``--concurrency`` → requests/s, p50 / p95
  ms per request, and the server's resident memory at rest (after its warm-up) and its
  peak under load (``VmHWM`` of the server process). ``--evidence`` also times requests
  that ask for the evidence graph.

    .venv/bin/python benchmarks/serve_load.py --index /tmp/w2/musique-full-524ec12c \\
        --questions /work/shared/data/musique/questions.jsonl --out /tmp/serve-load.json

The index is any built index holding the methods (the one above is what ``hygraph bench
--data ../shared/data/musique`` keeps in its work folder). Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def _memory(pid: int) -> dict[str, float]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(("VmRSS", "VmHWM")):
            out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def in_process(index_path: Path, questions: list[str], method: str) -> dict[str, float]:
    from hygraph import GraphIndex

    with GraphIndex.open(index_path, progress=False) as index:
        index.embedder.cache_queries = False  # each question embedded, as a new one would be
        index.retrieve(questions[0], method=method, top_k=10)  # loads what queries read
        times = []
        start = time.perf_counter()
        for q in questions:
            t = time.perf_counter()
            index.retrieve(q, method=method, top_k=10)
            times.append(time.perf_counter() - t)
        wall = time.perf_counter() - start
    return {"p50_ms": 1000 * statistics.median(times), "p95_ms": 1000 * _percentile(times, 0.95),
            "per_s": len(times) / wall}  # fmt: skip


def _post(url: str, body: dict) -> float:
    data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    t = time.perf_counter()
    with urllib.request.urlopen(request, timeout=120) as response:
        response.read()
        if response.status != 200:
            raise RuntimeError(f"status {response.status}")
    return time.perf_counter() - t


def served(url: str, pid: int, questions: list[str], method: str, clients: int,
           evidence: bool) -> dict[str, float]:  # fmt: skip
    bodies = [{"question": q, "method": method, "top_k": 10, "evidence": evidence}
              for q in questions]  # fmt: skip
    _post(f"{url}/v1/retrieve", bodies[0])
    times: list[float] = []
    lock = threading.Lock()
    todo = iter(bodies)

    def client() -> None:
        while True:
            with lock:
                body = next(todo, None)
            if body is None:
                return
            took = _post(f"{url}/v1/retrieve", body)
            with lock:
                times.append(took)

    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        for future in [pool.submit(client) for _ in range(clients)]:
            future.result()
    wall = time.perf_counter() - start
    return {"p50_ms": 1000 * statistics.median(times), "p95_ms": 1000 * _percentile(times, 0.95),
            "per_s": len(times) / wall, "server_peak_mb": _memory(pid)["VmHWM"]}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--questions", type=Path, required=True, help="JSONL with 'question'")
    parser.add_argument("--methods", default="vanilla,hybrid-ppr")
    parser.add_argument("--concurrency", default="1,2,4")
    parser.add_argument("--n", type=int, default=100, help="questions per measurement")
    parser.add_argument("--evidence", action="store_true", help="also time evidence requests")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    questions = [json.loads(line)["question"] for line in args.questions.open()][: args.n]
    methods = args.methods.split(",")
    levels = [int(c) for c in args.concurrency.split(",")]
    rows: list[dict] = []
    for method in methods:
        rows.append({"method": method, "case": "in-process", **in_process(args.index, questions,
                                                                           method)})  # fmt: skip
        print(json.dumps(rows[-1]), file=sys.stderr)
    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "hygraph.cli", "serve", "--index", str(args.index), "--port",
         str(port), "--max-top-k", "100", "--no-query-cache"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                with urllib.request.urlopen(f"{url}/v1/health", timeout=1):
                    break
            except OSError:
                time.sleep(0.2)
        rest = _memory(server.pid)["VmRSS"]
        for method in methods:
            for clients in levels:
                for evidence in [False, True] if args.evidence else [False]:
                    row = served(url, server.pid, questions, method, clients, evidence)
                    rows.append({"method": method, "case": f"served, {clients} client(s)"
                                 + (", evidence" if evidence else ""), **row})  # fmt: skip
                    print(json.dumps(rows[-1]), file=sys.stderr)
        under_load = _memory(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=60)
    print(f"index {args.index}; {len(questions)} questions; 2 cores; server memory at rest "
          f"{rest:.0f} MB, peak under load {under_load['VmHWM']:.0f} MB\n")  # fmt: skip
    print("| method | case | requests/s | p50 ms | p95 ms | server peak MB |")
    print("|---|---|---:|---:|---:|---:|")
    for r in rows:
        peak = f"{r['server_peak_mb']:.0f}" if "server_peak_mb" in r else "-"
        print(f"| {r['method']} | {r['case']} | {r['per_s']:.1f} | {r['p50_ms']:.1f} | "
              f"{r['p95_ms']:.1f} | {peak} |")  # fmt: skip
    if args.out:
        kept = {"rows": rows, "rest_mb": rest, "peak_mb": under_load["VmHWM"],
                "cpus": os.cpu_count()}  # fmt: skip
        args.out.write_text(json.dumps(kept, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
