"""Several processes serving one index at once: a shared PostgreSQL graph store against
one index folder whose embedded vector shards processes take turns on.

    python benchmarks/shared_store_processes.py --index INDEX --questions Q.jsonl \\
        --work /tmp/hosts [--netns] [--n 100] [--methods vanilla,hybrid-ppr]

INDEX is any built index (it is copied, never changed). The script starts its own
PostgreSQL server (scripts/postgres.sh, fsync on) and copies the index twice with
``hygraph copy``: once onto that server ("shared": each process opens its own folder
with the same PostgreSQL schema; the folders carry replicas of the embedded vectors,
standing where a Qdrant server would be, which could not be installed here), and once
as a plain folder ("folder": SQLite and embedded Qdrant Edge, every process opening the
same folder). Each scenario runs each method's questions in every process at the same
moment (a start barrier), after a warm-up, one query at a time per process, and reports
per-query latency (p50, p95 over all processes) and the queries per second they
answered together; questions are embedded per query (no query cache). ``--netns``
puts the two shared-store processes in two network namespaces (two hosts on one
machine, reaching PostgreSQL over veth links).

Numerical libraries get one thread per process (OMP/MKL/OpenBLAS), so two processes
on this 2-core machine each have a core: what is left is what they share.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PORT = 54377
NET = "10.77"  # host side 10.77.N.1, namespace side 10.77.N.2
ONE_THREAD = {k: "1" for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")}


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=check, capture_output=True, text=True)


def make_hosts(n: int) -> list[str]:
    """Network namespaces hy1..hyN, each linked to this host by a veth pair."""
    names = []
    for i in range(1, n + 1):
        ns, here, there = f"hy{i}", f"hyv{i}", f"hyv{i}ns"
        sh("ip", "netns", "del", ns, check=False)
        sh("ip", "link", "del", here, check=False)
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", here, "type", "veth", "peer", "name", there)
        sh("ip", "link", "set", there, "netns", ns)
        sh("ip", "addr", "add", f"{NET}.{i}.1/24", "dev", here)
        sh("ip", "link", "set", here, "up")
        sh("ip", "netns", "exec", ns, "ip", "addr", "add", f"{NET}.{i}.2/24", "dev", there)
        sh("ip", "netns", "exec", ns, "ip", "link", "set", there, "up")
        sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        names.append(ns)
    return names


def drop_hosts(names: list[str]) -> None:
    for i, ns in enumerate(names, 1):
        sh("ip", "netns", "del", ns, check=False)
        sh("ip", "link", "del", f"hyv{i}", check=False)


def start_postgres(work: Path, listen: list[str]) -> tuple[str, Path]:
    data = work / "pg"
    if data.exists():
        shutil.rmtree(data)
    data.mkdir(parents=True)
    os.chmod(work, 0o755)
    env = {**os.environ, "PGDATA_DIR": str(data), "PGPORT_TEST": str(PORT), "PG_FSYNC": "on",
           "PG_LISTEN": ",".join(listen), "PG_TRUST_NET": f"{NET}.0.0/16"}  # fmt: skip
    out = subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh")], env=env,
                         capture_output=True, text=True, check=True)  # fmt: skip
    url = next(line.split("=", 1)[1] for line in out.stdout.splitlines() if "POSTGRES=" in line)
    return url, data


def worker(args: argparse.Namespace) -> None:
    """One serving process: open, warm up, wait for the start, answer, write latencies."""
    from hygraph import GraphIndex

    questions = [json.loads(x)["question"] for x in Path(args.questions).read_text().splitlines()]
    questions = questions[: args.n]
    kwargs = {"store": args.store} if args.store else {}
    out: dict[str, list[float]] = {}
    with GraphIndex.open(args.folder, progress=False, **kwargs) as index:
        # Each question embedded per query, as `hygraph bench` does: a cache kept from
        # an earlier scenario (or method) would time a lookup instead.
        index.embedder.cache_queries = False
        for method in args.methods.split(","):
            for q in questions[:3]:
                index.retrieve(q, method, top_k=10)
        Path(args.ready).touch()
        while not Path(args.go).exists():
            time.sleep(0.005)
        for method in args.methods.split(","):
            times = []
            for q in questions:
                start = time.perf_counter()
                index.retrieve(q, method, top_k=10)
                times.append((time.perf_counter() - start) * 1000)
            out[method] = times
    Path(args.out).write_text(json.dumps(out))


def run_scenario(name: str, workers: list[tuple[list[str], str, str | None]], args, work: Path):
    """Start the workers (command prefix, folder, store URL), release them together."""
    scen = work / "runs" / name
    shutil.rmtree(scen, ignore_errors=True)
    scen.mkdir(parents=True)
    os.chmod(scen, 0o777)
    go = scen / "go"
    procs = []
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": f"{ROOT / 'shared'}:{ROOT}"}
    for i, (prefix, folder, store) in enumerate(workers):
        cmd = [*prefix, sys.executable, __file__, "--worker", "--folder", folder,
               "--questions", args.questions, "--n", str(args.n), "--methods", args.methods,
               "--ready", str(scen / f"ready{i}"), "--go", str(go),
               "--out", str(scen / f"out{i}.json")]  # fmt: skip
        if store:
            cmd += ["--store", store]
        procs.append(subprocess.Popen(cmd, env=env))
    deadline = time.time() + 600
    while not all((scen / f"ready{i}").exists() for i in range(len(workers))):
        if any(p.poll() not in (None, 0) for p in procs) or time.time() > deadline:
            raise SystemExit(f"{name}: a worker failed to start")
        time.sleep(0.05)
    started = time.perf_counter()
    go.touch()
    for p in procs:
        if p.wait() != 0:
            raise SystemExit(f"{name}: a worker failed")
    wall = time.perf_counter() - started
    results = [json.loads((scen / f"out{i}.json").read_text()) for i in range(len(workers))]
    rows = {}
    for method in args.methods.split(","):
        times = [t for r in results for t in r[method]]
        rows[method] = {
            "p50_ms": round(statistics.median(times), 1),
            "p95_ms": round(sorted(times)[int(0.95 * (len(times) - 1))], 1),
            "queries": len(times),
        }
    return {"scenario": name, "processes": len(workers), "wall_s": round(wall, 2),
            "qps": round(sum(r["queries"] for r in rows.values()) / wall, 1),
            "methods": rows}  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--index")
    p.add_argument("--questions", required=True)
    p.add_argument("--work", default="/tmp/hygraph-hosts")
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--methods", default="vanilla,hybrid-ppr")
    p.add_argument("--netns", action="store_true")
    p.add_argument("--worker", action="store_true")
    p.add_argument("--folder")
    p.add_argument("--store")
    p.add_argument("--ready")
    p.add_argument("--go")
    p.add_argument("--out")
    p.add_argument("--report")
    args = p.parse_args()
    if args.worker:
        worker(args)
        return
    from hygraph.copy import copy_index

    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    hosts = make_hosts(2) if args.netns else []
    listen = [f"{NET}.{i}.1" for i in range(1, len(hosts) + 1)]
    url, data = start_postgres(work, listen)
    try:
        store = f"{url}?schema=shared"
        copy_index(args.index, work / "host-1", store=store, progress=False)
        shutil.copytree(work / "host-1", work / "host-2")  # its own replica of the vectors
        copy_index(args.index, work / "folder", progress=False)
        for path in work.rglob("*"):
            os.chmod(path, 0o777 if path.is_dir() else 0o666)
        os.chmod(work, 0o777)

        def shared(i: int) -> tuple[list[str], str, str]:
            if hosts:
                there = f"postgresql://hygraph@{NET}.{i}.1:{PORT}/hygraph?schema=shared"
                return ["ip", "netns", "exec", hosts[i - 1]], str(work / f"host-{i}"), there
            return [], str(work / f"host-{i}"), store

        folder = ([], str(work / "folder"), None)
        results = [
            run_scenario("folder, 1 process", [folder], args, work),
            run_scenario("folder, 2 processes", [folder, folder], args, work),
            run_scenario("shared store, 1 process", [shared(1)], args, work),
            run_scenario("shared store, 2 processes", [shared(1), shared(2)], args, work),
        ]
    finally:
        subprocess.run(["bash", str(ROOT / "scripts" / "postgres.sh"), "--stop", str(data)],
                       capture_output=True, check=False)  # fmt: skip
        drop_hosts(hosts)
    lines = [
        "# Several processes serving one index",
        "",
        f"- command: `python benchmarks/shared_store_processes.py {' '.join(sys.argv[1:])}`",
        f"- date: {time.strftime('%Y-%m-%d')}; {os.cpu_count()} cores; one numerical thread "
        "per process; PostgreSQL 15 (Debian), fsync on, default settings",
        f"- hosts: {'two network namespaces over veth links' if hosts else 'loopback'}",
        "",
        "| scenario | processes | method | p50 ms | p95 ms | queries | all queries/s |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for r in results:
        for method, m in r["methods"].items():
            lines.append(f"| {r['scenario']} | {r['processes']} | {method} | {m['p50_ms']} | "
                         f"{m['p95_ms']} | {m['queries']} | {r['qps']} |")  # fmt: skip
    text = "\n".join(lines) + "\n"
    print(text)
    if args.report:
        Path(args.report).write_text(text)
        Path(args.report).with_suffix(".json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
