"""Fault campaign: LLM extraction against a loopback stub that fails 30% + 10% of requests.

Run from the repository root::

    .venv/bin/python benchmarks/reliability/fault.py [--extractors llm,llm-nary]
        [--seed 0] [--max-runs 10] [--timeout 1.0] [--max-retries 2]
        [--no-truncated] [--split-gleaning]

For each extractor an index of the bundled sample corpus (methods ``vanilla`` and
``hypergraph``, so the after-extraction layers ``entity-vectors`` and ``hypergraph``
run too) is built with ``OpenAILLM(base_url=<stub>, timeout=--timeout,
max_retries=--max-retries, backoff_base=0.05)`` against :mod:`stub_server`, whose
requests fail 10% with 429 (``Retry-After``), 10% with 500, 10% by hanging past the
client timeout and 10% with a malformed 200 (non-JSON body, JSON without ``choices``,
prose content, truncated content with ``finish_reason: length``). The build is repeated
(``insert()`` with no sources, each run in a fresh ``GraphIndex``) until no chunk is
pending or ``--max-runs`` runs. After each run it checks:

* ``extracted + pending == chunks`` (extracted: the store's ``extract`` progress marks);
* the report's ``chunks_extracted`` equals the chunks that left the pending set;
* the report's ``extraction.failed_chunks`` equals the chunks still pending;
* one stored extraction per extracted chunk;
* every after-extraction layer's progress set is the extracted set (a subset: never
  more; equal: nothing extracted was left out of the layer).

Then a fault-free build against the same stub (faults off) is compared with the final
faulted index: node and edge counts by kind, the sets of node ids, and the top-10 chunk
ranking of the first sample questions with ``hypergraph`` and ``vanilla``.
The table goes to ``benchmarks/results/reliability-fault.md``.
"""

from __future__ import annotations

import argparse
import logging
import sqlite3
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from stub_server import MALFORMED_KINDS, FaultPlan, StubServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESULT = ROOT / "benchmarks" / "results" / "reliability-fault.md"
METHODS = ("vanilla", "hypergraph")
QUESTIONS = 6


def make_llm(base_url: str, timeout: float, max_retries: int) -> Any:
    from hygraph.models.llm import OpenAILLM

    return OpenAILLM(
        "stub-model",
        base_url=base_url,
        api_key="x",
        timeout=timeout,
        max_retries=max_retries,
        max_concurrency=8,
        backoff_base=0.05,
        backoff_max=1.0,
    )


def _layer_tasks() -> list[str]:
    from hygraph.layers.base import get_layer
    from hygraph.methods.base import get_method

    names: list[str] = []
    for method in METHODS:
        names.extend(get_method(method).layers)
    tasks = []
    for name in dict.fromkeys(names):
        cls = get_layer(name)
        if cls.after_extraction and cls.task:
            tasks.append(cls.task)
    return tasks


def _state(path: Path) -> dict[str, Any]:
    """Chunks, extract marks, extraction rows and layer marks, read from the store."""
    conn = sqlite3.connect(path / "graph.sqlite")
    try:
        chunks = {r[0] for r in conn.execute("SELECT id FROM chunks")}
        marks: dict[str, set[str]] = {}
        for task, item in conn.execute("SELECT task, item FROM progress"):
            marks.setdefault(task, set()).add(item)
        extractions = {r[0] for r in conn.execute("SELECT chunk_id FROM extractions")}
        nodes = dict(conn.execute("SELECT kind, COUNT(*) FROM nodes GROUP BY kind"))
        edges = dict(conn.execute("SELECT kind, COUNT(*) FROM edges GROUP BY kind"))
        node_ids = {r[0] for r in conn.execute("SELECT id FROM nodes")}
    finally:
        conn.close()
    return {
        "chunks": chunks,
        "extracted": marks.get("extract", set()),
        "marks": marks,
        "extractions": extractions,
        "nodes": nodes,
        "edges": edges,
        "node_ids": node_ids,
    }


def build_run(
    path: Path,
    llm: Any,
    extractor: str,
    embedder: Any,
    docs: list[Path] | tuple[()],
) -> tuple[Any, float]:
    """One build (a fresh GraphIndex, like a new process would open); its report and seconds."""
    from hygraph.index import GraphIndex

    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with GraphIndex(
            path, llm=llm, extractor=extractor, embedder=embedder, progress=False
        ) as index:
            report = index.insert(docs, methods=list(METHODS))
    return report, time.perf_counter() - start


def check_run(
    before: dict[str, Any], after: dict[str, Any], report: Any, layer_tasks: list[str]
) -> list[str]:
    """Every inconsistency between the store and the report after one run ([] if none)."""
    problems: list[str] = []
    total = len(after["chunks"])
    extracted = after["extracted"] & after["chunks"]
    pending = after["chunks"] - after["extracted"]
    if after["extracted"] - after["chunks"]:
        problems.append(f"{len(after['extracted'] - after['chunks'])} extract marks of no chunk")
    if len(extracted) + len(pending) != total:
        problems.append(f"extracted {len(extracted)} + pending {len(pending)} != {total}")
    pending_before = after["chunks"] - before.get("extracted", set())
    newly = len(pending_before) - len(pending)
    if report.chunks_extracted != newly:
        problems.append(f"report.chunks_extracted {report.chunks_extracted} != {newly} newly")
    failed = int((report.extraction or {}).get("failed_chunks", 0))
    if failed != len(pending):
        problems.append(f"report failed_chunks {failed} != pending {len(pending)}")
    if after["extractions"] != extracted:
        problems.append(
            f"extraction rows {len(after['extractions'])} != extracted {len(extracted)}"
        )
    for task in layer_tasks:
        done = after["marks"].get(task, set())
        if done - extracted:
            problems.append(f"{task}: {len(done - extracted)} chunks not extracted")
        if extracted - done:
            problems.append(f"{task}: {len(extracted - done)} extracted chunks left out")
    return problems


def rankings(path: Path, embedder: Any, questions: list[str]) -> dict[tuple[str, str], list]:
    from hygraph.index import GraphIndex

    out: dict[tuple[str, str], list] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with GraphIndex(path, embedder=embedder, progress=False) as index:
            for method in METHODS:
                for q in questions:
                    out[(method, q)] = index.retrieve(q, method, top_k=10).chunks
    return out


def campaign(
    extractor: str,
    workdir: Path,
    *,
    plan: FaultPlan,
    seed: int | list[int] = 0,
    max_runs: int = 10,
    timeout: float = 1.0,
    max_retries: int = 2,
    split_gleaning: bool = False,
    docs: list[Path] | None = None,
    questions: list[str] | None = None,
    embedder: Any = None,
    compare: bool = True,
) -> dict[str, Any]:
    """Faulted builds until nothing is pending (or ``max_runs``), then the fault-free one."""
    from hygraph.demo import sample_documents, sample_questions
    from hygraph.models.embedders import bundled_minilm

    docs = docs if docs is not None else sample_documents()
    if questions is None:
        questions = [q["question"] for q in sample_questions()[:QUESTIONS]]
    embedder = embedder or bundled_minilm()
    layer_tasks = _layer_tasks()
    clean = workdir / f"{extractor}-clean"
    rows: list[dict[str, Any]] = []
    seeds = [seed] if isinstance(seed, int) else list(seed)
    faulted_paths: list[Path] = []
    result: dict[str, Any] = {"extractor": extractor, "rows": rows, "stub": Counter()}
    for one_seed in seeds:
        faulted = workdir / f"{extractor}-faulted-{one_seed}"
        faulted_paths.append(faulted)
        with StubServer(plan, seed=one_seed, split_gleaning=split_gleaning) as stub:
            llm = make_llm(stub.base_url, timeout, max_retries)
            before: dict[str, Any] = {}
            for run in range(1, max_runs + 1):
                seen = Counter(stub.outcomes)
                requests = stub.requests
                report, seconds = build_run(
                    faulted, llm, extractor, embedder, docs if run == 1 else ()
                )
                after = _state(faulted)
                problems = check_run(before, after, report, layer_tasks)
                outcomes = Counter(stub.outcomes)
                outcomes.subtract(seen)
                pending = len(after["chunks"] - after["extracted"])
                rows.append(
                    {
                        "seed": one_seed,
                        "run": run,
                        "seconds": seconds,
                        "requests": stub.requests - requests,
                        "outcomes": {k: v for k, v in outcomes.items() if v},
                        "chunks": len(after["chunks"]),
                        "chunks_extracted": report.chunks_extracted,
                        "failed_chunks": int((report.extraction or {}).get("failed_chunks", 0)),
                        "extracted_total": len(after["extracted"] & after["chunks"]),
                        "pending": pending,
                        "problems": problems,
                    }
                )
                before = after
                if pending == 0:
                    break
            result["stub"].update(stub.outcomes)
    if compare:
        with StubServer(FaultPlan.none(), split_gleaning=split_gleaning) as stub:
            llm = make_llm(stub.base_url, timeout, max_retries)
            report, seconds = build_run(clean, llm, extractor, embedder, docs)
        result["clean_seconds"] = seconds
        result["clean_failed"] = int((report.extraction or {}).get("failed_chunks", 0))
        b = _state(clean)
        rb = rankings(clean, embedder, questions)
        result["clean_counts"] = {"nodes": b["nodes"], "edges": b["edges"]}
        result["compare"] = []
        for one_seed, faulted in zip(seeds, faulted_paths, strict=True):
            a = _state(faulted)
            ra = rankings(faulted, embedder, questions)
            counts = {"nodes": a["nodes"], "edges": a["edges"]}
            result["compare"].append(
                {
                    "seed": one_seed,
                    "counts": counts,
                    "counts_equal": counts == result["clean_counts"],
                    "missing_nodes": sorted(b["node_ids"] - a["node_ids"]),
                    "extra_nodes": sorted(a["node_ids"] - b["node_ids"]),
                    "rankings_equal": sum(1 for k in rb if ra.get(k) == rb[k]),
                    "rankings_total": len(rb),
                }
            )
    return result


def _fmt_outcomes(outcomes: dict[str, int]) -> str:
    order = ["ok", "429", "500", "timeout", *(f"malformed:{k}" for k in MALFORMED_KINDS)]
    return ", ".join(
        f"{k.replace('malformed:', 'mal:')} {outcomes[k]}" for k in order if outcomes.get(k)
    )


def to_markdown(results: list[dict[str, Any]], command: str, settings: str) -> str:
    lines = [
        "# Reliability: fault campaign against a loopback stub",
        "",
        f"Command: `{command}`",
        "",
        settings,
        "",
    ]
    for res in results:
        lines += [
            f"## Extractor `{res['extractor']}`",
            "",
            "| seed | run | s | requests | stub outcomes | chunks_extracted | failed_chunks "
            "| extracted / chunks | pending | consistent |",
            "|---:|---:|---:|---:|---|---:|---:|---:|---:|---|",
        ]
        for r in res["rows"]:
            ok = "yes" if not r["problems"] else "NO: " + "; ".join(r["problems"])
            lines.append(
                f"| {r['seed']} | {r['run']} | {r['seconds']:.1f} | {r['requests']} | "
                f"{_fmt_outcomes(r['outcomes'])} | {r['chunks_extracted']} | "
                f"{r['failed_chunks']} | {r['extracted_total']} / {r['chunks']} | "
                f"{r['pending']} | {ok} |"
            )
        last_runs: dict[int, dict[str, Any]] = {r["seed"]: r for r in res["rows"]}
        done = sum(1 for r in last_runs.values() if r["pending"] == 0)
        consistent = sum(1 for r in res["rows"] if not r["problems"])
        lines += [
            "",
            f"Seeds completed (nothing pending): {done} / {len(last_runs)}; runs consistent: "
            f"{consistent} / {len(res['rows'])}; stub outcomes over all runs: "
            f"{_fmt_outcomes(dict(res['stub']))}.",
        ]
        if "compare" in res:
            lines += [
                "",
                f"Fault-free build: {res['clean_seconds']:.1f} s, failed chunks "
                f"{res['clean_failed']}, counts {res['clean_counts']}.",
                "",
                "| seed | node/edge counts equal | node ids missing / extra "
                "| top-10 rankings equal | differing counts |",
                "|---:|---|---:|---:|---|",
            ]
            for c in res["compare"]:
                diff = {
                    f"{part}:{kind}": f"{c['counts'][part].get(kind, 0)} vs "
                    f"{res['clean_counts'][part].get(kind, 0)}"
                    for part in ("nodes", "edges")
                    for kind in set(c["counts"][part]) | set(res["clean_counts"][part])
                    if c["counts"][part].get(kind, 0) != res["clean_counts"][part].get(kind, 0)
                }
                lines.append(
                    f"| {c['seed']} | {'yes' if c['counts_equal'] else 'NO'} | "
                    f"{len(c['missing_nodes'])} / {len(c['extra_nodes'])} | "
                    f"{c['rankings_equal']} / {c['rankings_total']} | "
                    f"{', '.join(f'{k} {v}' for k, v in sorted(diff.items())) or '-'} |"
                )
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--extractors", default="llm,llm-nary")
    parser.add_argument("--seeds", default="0,1,2,3,4", help="comma-separated stub seeds")
    parser.add_argument("--max-runs", type=int, default=10)
    parser.add_argument("--timeout", type=float, default=1.0)
    parser.add_argument("--max-retries", type=int, default=2)
    parser.add_argument("--no-truncated", action="store_true",
                        help="leave truncated replies out of the malformed kinds")  # fmt: skip
    parser.add_argument("--split-gleaning", action="store_true",
                        help="the stub's n-ary first pass gives half the segments")  # fmt: skip
    parser.add_argument("--output", type=Path, default=RESULT)
    parser.add_argument("--append", action="store_true", help="append to --output")
    args = parser.parse_args(argv)
    logging.getLogger("hygraph").setLevel(logging.ERROR)
    seeds = [int(x) for x in args.seeds.split(",") if x.strip()]
    kinds = tuple(k for k in MALFORMED_KINDS if not (args.no_truncated and k == "truncated"))
    plan = FaultPlan(malformed_kinds=kinds, hang=args.timeout + 0.5)
    settings = (
        f"Stub: seeds {args.seeds}; per request 10% 429 (Retry-After {plan.retry_after:g} s), "
        f"10% 500, 10% hang {plan.hang:g} s, 10% malformed ({', '.join(kinds)}); "
        f"split gleaning: {args.split_gleaning}. Client: OpenAILLM timeout {args.timeout:g} s, "
        f"max_retries {args.max_retries}, backoff_base 0.05 s, max_concurrency 8. "
        f"Corpus: the bundled sample; methods {', '.join(METHODS)}; at most "
        f"{args.max_runs} runs."
    )
    results = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hygraph-fault-") as tmp:
        for extractor in [e.strip() for e in args.extractors.split(",") if e.strip()]:
            res = campaign(
                extractor,
                Path(tmp),
                plan=plan,
                seed=seeds,
                max_runs=args.max_runs,
                timeout=args.timeout,
                max_retries=args.max_retries,
                split_gleaning=args.split_gleaning,
            )
            results.append(res)
    command = ".venv/bin/python benchmarks/reliability/fault.py " + " ".join(
        argv if argv is not None else sys.argv[1:]
    )
    text = to_markdown(results, command.strip(), settings)
    text += f"\nTotal wall time: {time.perf_counter() - start:.0f} s.\n"
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    if args.append and args.output.exists():
        text = args.output.read_text(encoding="utf-8").rstrip("\n") + "\n\n---\n\n" + text
    args.output.write_text(text, encoding="utf-8")
    inconsistent = any(r["problems"] for res in results for r in res["rows"])
    unfinished = any(r["pending"] for res in results for r in _last_runs(res["rows"]))
    differs = any(
        not (c["counts_equal"] and not c["missing_nodes"] and not c["extra_nodes"])
        or c["rankings_equal"] != c["rankings_total"]
        for res in results
        for c in res.get("compare", [])
    )
    return 1 if inconsistent or unfinished or differs else 0


def _last_runs(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last run of each seed."""
    return list({r["seed"]: r for r in rows}.values())


if __name__ == "__main__":
    sys.exit(main())
