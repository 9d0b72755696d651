"""Run a benchmark: build the shared index once, then each method and peer in its own process.

Indexes live under a work directory keyed by dataset, extractor and chunking, so a
second run reuses them (and reports the cost of the build that made them). Each
scaling point gets its own index and its own cold embedding cache, so build times
are comparable across sizes.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hygraph import __version__
from hygraph.bench.data import Dataset, load_dataset, subset, synthetic
from hygraph.bench.metrics import (
    evidence_recall_at_k,
    growth_exponent,
    mean,
    percentile,
    question_positions,
    recall_at_k,
    wins_ties_losses,
)
from hygraph.errors import HygraphError
from hygraph.methods.base import RECIPE_SUFFIXES, available_methods, build_options, split_spec
from hygraph.models.onnx_runtime import requested_runtime


@dataclass
class BenchConfig:
    data: Path
    methods: list[str]
    extractor: str = "offline"
    ks: list[int] = field(default_factory=lambda: [2, 5, 10])
    budget: int = 2000
    work: Path = Path(".hygraph-bench")
    chunk_size: int | None = None  # None: what a new index would use (fits the embedder)
    chunk_overlap: int | None = None
    chunk_mode: str = "sentences"  # hygraph.ingest.chunker.MODES, as a new index's default
    scale: list[float] = field(default_factory=list)
    synthetic: int = 0
    peers_path: Path | None = None
    quiet: bool = False
    questions: str | None = None  # 1-based selection such as "1-50" (None: all)
    baseline: str = "vanilla"  # per-question wins/ties/losses are counted against it
    compare_k: int = 5  # ... at this depth
    max_depth: int | None = None  # deepest top_k asked for recall (None: the chunk count)
    #: A PostgreSQL server for the graph stores (each point's index gets its own schema);
    #: None: each index's own SQLite file.
    store: str | None = None
    #: Rounds of the latency pass with every method in one process, taking turns question
    #: by question (:mod:`hygraph.bench.turns`); 0: none.
    turns: int = 1

    def __post_init__(self) -> None:
        if self.chunk_size is None:
            from hygraph.ingest.chunker import default_chunking
            from hygraph.models.embedders import bundled_minilm

            size, overlap = default_chunking(bundled_minilm().max_tokens)
            self.chunk_size = size
            self.chunk_overlap = overlap if self.chunk_overlap is None else self.chunk_overlap
        elif self.chunk_overlap is None:
            self.chunk_overlap = self.chunk_size // 12  # as --chunk-overlap's help says


#: A list item that continues the previous spec's options: ``key=value`` (a key is a
#: Python identifier; no method, peer or recipe name looks like that).
_OPTION_ITEM = re.compile(r"[A-Za-z_]\w*=")


def split_method_specs(groups: Sequence[str]) -> list[str]:
    """The method specs in ``--methods`` values, in order, each once.

    Each value (the flag may be repeated) is split on ``;``, then on ``,``. A
    comma-separated item that looks like ``key=value`` is another option of the spec
    before it, so ``"vanilla,hybrid:rrf_k=30,candidates=20"`` is two specs; a recipe
    file's path (``my.yaml``, ``my.yaml:top_k=3``) is a spec of its own.

    Raises:
        HygraphError: an option item with no spec before it, or after a spec that has
            no options (``vanilla,top_k=3``: write ``vanilla:top_k=3``).
    """
    specs: list[str] = []
    for group in groups:
        for part in group.split(";"):
            current: list[str] = []
            for item in (i.strip() for i in part.split(",")):
                if not item:
                    continue
                if _OPTION_ITEM.match(item):
                    if not current or ":" not in current[-1]:
                        before = f" after {current[-1]!r}" if current else ""
                        raise HygraphError(
                            f"--methods: option {item!r}{before} belongs to no method; "
                            "write it after the method's name and a colon (name:key=value)"
                        )
                    current[-1] += f",{item}"
                else:
                    current.append(item)
            specs.extend(current)
    return list(dict.fromkeys(specs))


def is_method_spec(spec: str) -> bool:
    """Whether ``spec`` names one of hygraph's methods or a recipe file (else: a peer)."""
    name = split_spec(spec)[0]
    return name in available_methods() or name.endswith(RECIPE_SUFFIXES) or Path(name).is_file()


def _changes_layers(spec: str) -> bool:
    """Whether a method spec's options change how its layers are built (a recipe file's
    are its own: it builds under its name; a spec that does not parse is left to its
    query task, which reports it as that method's failure)."""
    name = split_spec(spec)[0]
    if name not in available_methods():
        return False
    try:
        return bool(build_options(spec))
    except HygraphError:
        return False


def _say(config: BenchConfig, message: str) -> None:
    if not config.quiet:
        # sys.stderr as it is now (bound at import, it could be a stream since closed)
        print(f"[bench] {message}", file=sys.stderr, flush=True)


def machine_facts() -> dict[str, Any]:
    mem_kb = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem_kb = int(line.split()[1])
    except OSError:
        pass
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "memory_gib": round(mem_kb / 1024 / 1024, 1),
        "cpu": cpu,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "hygraph": __version__,
    }


class TaskFailed(HygraphError):
    """A worker task failed; ``error`` is its one-line ``"Type: message"``."""

    def __init__(self, task: str, error: str) -> None:
        super().__init__(f"benchmark task {task} failed: {error}")
        self.error = error


def _run_task(spec: dict[str, Any], env: dict[str, str]) -> dict[str, Any]:
    """Run one worker task in its own process; its result, or :class:`TaskFailed`."""
    task = f"{spec['task']} {spec.get('method', '')}".strip()
    with tempfile.TemporaryDirectory(prefix="hygraph-bench-") as tmp:
        spec_path = Path(tmp) / "spec.json"
        out_path = Path(tmp) / "result.json"
        spec_path.write_text(json.dumps(spec))
        proc = subprocess.run(
            [sys.executable, "-m", "hygraph.bench.worker", str(spec_path), str(out_path)],
            env=env,
            capture_output=True,
            text=True,
        )
        try:
            result = json.loads(out_path.read_text()) if out_path.exists() else {}
        except ValueError:  # cut off mid-write
            result = {}
        if result.get("status") == "failed":
            raise TaskFailed(task, str(result.get("error")))
        if proc.returncode != 0 or not result:
            # Killed (out of memory, a signal) before it could say why: the last line it wrote.
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
            raise TaskFailed(task, f"exit status {proc.returncode}: {tail[0].strip()}")
        return result


def _index_dir(config: BenchConfig, dataset: Dataset, label: str) -> Path:
    settings = f"{config.extractor}|{config.chunk_size}|{config.chunk_overlap}|{config.chunk_mode}"
    tag = hashlib.sha256(settings.encode()).hexdigest()[:8]
    safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in label)
    store = "-postgresql" if config.store else ""
    return config.work / f"{dataset.name}-{safe}-{tag}{store}"


def _point_store(config: BenchConfig, index_dir: Path) -> str | None:
    """The store URL of one point's index: the server given, a schema of its own."""
    if not config.store:
        return None
    from hygraph.graph.postgres import split_url

    dsn, _ = split_url(config.store)
    schema = "bench_" + hashlib.sha256(str(index_dir.resolve()).encode()).hexdigest()[:12]
    return f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"


def _extractor_spec(config: BenchConfig, dataset: Dataset) -> str:
    if config.extractor == "precomputed":
        if dataset.extraction_path is None:
            raise HygraphError(f"--extractor precomputed needs {dataset.path}/extraction.jsonl")
        return f"precomputed:{dataset.extraction_path}"
    return config.extractor


def run_point(
    config: BenchConfig, dataset: Dataset, label: str, quality: bool = True
) -> dict[str, Any]:
    """Build the index for one dataset and run every method on it."""
    index_dir = _index_dir(config, dataset, label)
    index_dir.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env["HYGRAPH_CACHE_DIR"] = str(index_dir) + ".cache"
    # Some peers keep results in hash-ordered sets; a fixed seed makes runs repeatable.
    env.setdefault("PYTHONHASHSEED", "0")
    peers = [m for m in config.methods if not is_method_spec(m)]
    _say(config, f"{label}: building the shared index at {index_dir}")
    base = _run_task(
        {
            "task": "build",
            "index": str(index_dir),
            "corpus": str(dataset.corpus_path),
            "extractor": _extractor_spec(config, dataset),
            "chunk_size": config.chunk_size,
            "chunk_overlap": config.chunk_overlap,
            "chunk_mode": config.chunk_mode,
            "methods": ["vanilla", "bm25"],
            "store": _point_store(config, index_dir),
        },
        env,
    )
    own = {name: _own_index(config, dataset, label, index_dir, name, env)
           for name in config.methods if name not in peers and _changes_layers(name)}  # fmt: skip
    questions = [q.__dict__ for q in dataset.questions]
    # Recall reads max(k) distinct documents: deeper asks up to this top_k (none where
    # quality is not measured, e.g. the synthetic scaling point).
    chunks = base["counts"]["chunks"]
    cap = max(min(config.max_depth or chunks, chunks), max(config.ks)) if quality else 0
    methods: dict[str, Any] = {}
    for name in config.methods:
        _say(config, f"{label}: {name}")
        task = {
            "task": "query",
            "index": str(own.get(name, index_dir)),
            "method": name,
            "peer": name in peers,
            "peers_path": str(config.peers_path) if config.peers_path else None,
            "questions": questions,
            "top_k": max(config.ks),
            "max_depth": cap or max(config.ks),
            "budget": config.budget,
            "ks": config.ks,
        }
        try:
            own_env = {**env, "HYGRAPH_CACHE_DIR": f"{own[name]}.cache"} if name in own else env
            methods[name] = summarise(_run_task(task, own_env), dataset, config.ks, quality)
        except TaskFailed as failure:
            # One method's failure is its own row; the others' figures are still kept.
            _say(config, f"{label}: {name} failed: {failure.error}")
            methods[name] = {"status": "failed", "error": failure.error, "peer": name in peers}
    if quality:
        compare(methods, dataset, config.baseline, config.compare_k)
    turns = _take_turns(config, label, index_dir, methods, peers, questions, env, own)
    counts = base["counts"]
    return {
        "turns": turns,
        "label": label,
        "dataset": dataset.name,
        "documents": counts["documents"],
        "chunks": counts["chunks"],
        "index": str(index_dir),
        "max_depth": cap or None,
        "base_build": base,
        "methods": methods,
        "layer_builds": layer_builds(index_dir),
        "own_indexes": {name: str(path) for name, path in own.items()},
    }


def _own_index(
    config: BenchConfig,
    dataset: Dataset,
    label: str,
    index_dir: Path,
    name: str,
    env: dict[str, str],
) -> Path:
    """The index of a method variant whose options change how its layers are built
    (:func:`~hygraph.methods.base.build_options`): built beside the shared index with the
    variant in the same insert, as ``hygraph index --methods SPEC`` builds it (an index
    keeps one configuration per layer, and the shared one's are the defaults). Its
    embedding cache starts as a copy of the shared build's (the chunk vectors), so it
    pays for what its layers embed, as the shared index's methods do, and neither finds
    the other's names or facts cached."""
    import shutil

    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    path = index_dir.with_name(f"{index_dir.name}--{digest}")
    _say(config, f"{label}: {name}: building its own index at {path} (options change its layers)")
    cache, shared_cache = Path(f"{path}.cache"), Path(f"{index_dir}.cache")
    if not cache.exists() and shared_cache.exists():
        shutil.copytree(shared_cache, cache)
    env = {**env, "HYGRAPH_CACHE_DIR": str(cache)}
    _run_task(
        {
            "task": "build",
            "index": str(path),
            "corpus": str(dataset.corpus_path),
            "extractor": _extractor_spec(config, dataset),
            "chunk_size": config.chunk_size,
            "chunk_overlap": config.chunk_overlap,
            "chunk_mode": config.chunk_mode,
            "methods": ["vanilla", "bm25", name],
            "store": _point_store(config, path),
        },
        env,
    )
    return path


def _take_turns(
    config: BenchConfig,
    label: str,
    index_dir: Path,
    methods: dict[str, Any],
    peers: Sequence[str],
    questions: list[dict[str, Any]],
    env: dict[str, str],
    own: dict[str, Path] | None = None,
) -> dict[str, Any] | None:
    """The methods that ran (not the peers) timed again in one process, taking turns
    question by question (:mod:`hygraph.bench.turns`); None with fewer than two or
    ``config.turns`` 0."""
    names = [n for n, m in methods.items() if m.get("status") != "failed" and n not in peers]
    if config.turns < 1 or len(names) < 2:
        return None
    _say(config, f"{label}: latency with the methods taking turns")
    spec = {
        "task": "turns",
        "index": str(index_dir),
        "indexes": {name: str(path) for name, path in (own or {}).items() if name in names},
        "methods": names,
        "questions": questions,
        "top_k": max(config.ks),
        "budget": config.budget,
        "rounds": config.turns,
    }
    try:
        return _run_task(spec, env)
    except TaskFailed as failure:
        _say(config, f"{label}: taking turns failed: {failure.error}")
        return {"status": "failed", "error": failure.error}


def layer_builds(index_dir: Path) -> dict[str, dict[str, Any]]:
    """Cost of each layer's build stages (``build:<layer>[:<part>]``), from the index's history.

    Every layer is built once, by whichever run first needed it, so the figure is that
    build's (the latest build that ran the stage), whatever this run reused.
    """
    from hygraph.manifest import MANIFEST_NAME

    path = Path(index_dir) / MANIFEST_NAME
    if not path.exists():
        return {}
    builds = json.loads(path.read_text()).get("builds", [])
    out: dict[str, dict[str, Any]] = {}
    for build in builds:
        for stage, usage in build.get("usage", {}).get("stages", {}).items():
            if stage.startswith("build:"):
                out[stage] = usage
    return dict(sorted(out.items()))


def summarise(
    raw: dict[str, Any], dataset: Dataset, ks: Sequence[int], quality: bool
) -> dict[str, Any]:
    """Aggregate one method's per-question rows into the report's figures."""
    gold = {q.id: q.supporting_ids for q in dataset.questions}
    rows = raw["rows"]
    latencies = [r["latency_ms"] for r in rows]
    out: dict[str, Any] = {
        "status": "ok",
        "peer": raw["peer"],
        "latency_ms": {"p50": percentile(latencies, 50), "p95": percentile(latencies, 95)},
        "context_tokens_mean": mean([r["context_tokens"] for r in rows]),
        "build": raw["build"],
        "peak_rss_mb": raw["peak_rss_mb"],
        "method_bytes": raw["method_bytes"],
    }
    if quality:
        out["recall"] = {
            str(k): 100 * mean([recall_at_k(r["passages"], gold[r["id"]], k) for r in rows])
            for k in ks
        }
        by_type: dict[str, dict[str, float]] = {}
        for qtype in sorted({r["type"] for r in rows}):
            subset_rows = [r for r in rows if r["type"] == qtype]
            by_type[qtype] = {
                str(k): 100
                * mean([recall_at_k(r["passages"], gold[r["id"]], k) for r in subset_rows])
                for k in ks
            }
            by_type[qtype]["n"] = len(subset_rows)
        out["recall_by_type"] = by_type
        out["answer_in_context"] = 100 * mean([float(r["answer_in_context"]) for r in rows])
        out["depth"] = depth_summary(rows, max(ks))
        with_evidence = [r for r in rows if "evidence_ranks" in r]
        if with_evidence:
            out["evidence_recall"] = {
                str(k): 100
                * mean([evidence_recall_at_k(r["evidence_ranks"], k) for r in with_evidence])
                for k in ks
            }
            out["evidence_questions"] = len(with_evidence)
        out["rows"] = rows
    return out


def depth_summary(rows: Sequence[dict[str, Any]], want: int) -> dict[str, Any]:
    """How deep each question was asked so that recall@k reads ``want`` distinct documents.

    ``top_k_p50`` / ``top_k_max``: the top_k of the last ask; ``documents_mean``: the
    distinct documents ranked; ``short``: questions still ranking fewer than ``want``
    (the method ran out, or the cap was reached), whose recall@k is over fewer documents.
    """
    depths = [r.get("depth", want) for r in rows]
    counts = [r.get("documents", len(r["passages"])) for r in rows]
    return {
        "want": want,
        "top_k_p50": percentile(depths, 50),
        "top_k_max": max(depths, default=0),
        "documents_mean": mean(counts),
        "asked_again": sum(1 for r in rows if r.get("asks", 1) > 1),
        "short": sum(1 for c in counts if c < want),
    }


def compare(methods: dict[str, Any], dataset: Dataset, baseline: str, k: int) -> None:
    """Add each method's per-question wins/ties/losses at R@k against ``baseline``."""
    if baseline not in methods or "rows" not in methods[baseline]:
        return
    gold = {q.id: q.supporting_ids for q in dataset.questions}

    def scores(name: str) -> list[float]:
        return [recall_at_k(r["passages"], gold[r["id"]], k) for r in methods[name]["rows"]]

    theirs = scores(baseline)
    for name, summary in methods.items():  # a failed method has no rows: skipped
        if name != baseline and "rows" in summary:
            summary["vs_baseline"] = {
                "baseline": baseline,
                "k": k,
                **wins_ties_losses(scores(name), theirs),
            }


def select_questions(dataset: Dataset, spec: str | None) -> Dataset:
    """``dataset`` with only the questions ``spec`` names (1-based, e.g. ``"51-100"``)."""
    if not spec:
        return dataset
    try:
        positions = question_positions(spec, len(dataset.questions))
    except ValueError as err:
        raise HygraphError(f"--questions: {err}") from None
    if not positions:
        raise HygraphError(f"--questions {spec} selects none of {len(dataset.questions)}")
    dataset.questions = [dataset.questions[i] for i in positions]
    return dataset


def run_bench(config: BenchConfig) -> dict[str, Any]:
    """The whole benchmark: the main run, then optional scaling runs."""
    config.work.mkdir(parents=True, exist_ok=True)
    dataset = select_questions(load_dataset(config.data), config.questions)
    started = time.time()
    main = run_point(config, dataset, "full")
    points = [main]
    for fraction in config.scale:
        if fraction >= 1.0:
            continue  # the main run is the 100% point
        label = f"{int(round(fraction * 100))}pct"
        part = subset(dataset, fraction, config.work / f"{dataset.name}-{label}-data")
        points.append(run_point(config, part, label))
    if config.synthetic:
        syn = synthetic(
            dataset, config.synthetic, config.work / f"{dataset.name}-syn{config.synthetic}-data"
        )
        points.append(run_point(config, syn, f"syn{config.synthetic}", quality=False))
    result = {
        "command": shlex.join(["hygraph", "bench", *sys.argv[2:]])
        if sys.argv[1:2] == ["bench"]
        else None,
        "date": time.strftime("%Y-%m-%d", time.gmtime(started)),
        "seconds": round(time.time() - started, 1),
        "machine": machine_facts(),
        "config": {
            "data": str(config.data),
            "methods": config.methods,
            "extractor": config.extractor,
            "ks": config.ks,
            "budget": config.budget,
            "questions": config.questions or "all",
            "chunk_size": config.chunk_size,
            "chunk_overlap": config.chunk_overlap,
            "chunk_mode": config.chunk_mode,
            "max_depth": config.max_depth,
            "query_cache": "query embeddings computed per query (cache off, embedder "
            f"runtime {requested_runtime()}); model loaded and index opened before timing",
            "timing": f"the first ask of each question, at top_k = {max(config.ks)}",
            "depth_policy": f"recall@k reads the first k distinct documents; a question whose "
            f"first ask ranks fewer than {max(config.ks)} documents is asked again (untimed) "
            "with top_k doubled, up to "
            + (f"top_k {config.max_depth}" if config.max_depth else "the corpus's chunk count")
            + ", until it does or the method returns no more chunks",
        },
        "main": main,
        "scaling": scaling(points) if len(points) > 1 else None,
        "points": [
            {k: v for k, v in p.items() if k != "methods"}
            | {
                "methods": {
                    m: {k: v for k, v in s.items() if k != "rows"} for m, s in p["methods"].items()
                }
            }
            for p in points[1:]
        ],
    }
    return result


def _build_seconds(point: dict[str, Any], method: str) -> float:
    """Base build (shared stages) plus the method's own build, from the build that made it."""
    first = point["base_build"]["first_build"]
    base = first.get("seconds", 0.0)
    stages = first.get("usage", {}).get("stages", {})
    own = point["methods"][method]["build"].get("seconds") or 0.0
    if f"build:{method}" in stages:
        own = 0.0  # already counted in the first build
    return float(base) + float(own)


def scaling(points: list[dict[str, Any]]) -> dict[str, Any]:
    """Build time, peak memory and latency against corpus size, with growth exponents."""
    ordered = sorted(points, key=lambda p: p["chunks"])
    sizes = [p["chunks"] for p in ordered]
    out: dict[str, Any] = {"chunks": sizes, "labels": [p["label"] for p in ordered], "methods": {}}
    for method in ordered[0]["methods"]:
        if any(p["methods"].get(method, {}).get("status") == "failed" for p in ordered):
            continue  # no curve from a method that failed at some size
        build = [_build_seconds(p, method) for p in ordered]
        p50 = [p["methods"][method]["latency_ms"]["p50"] for p in ordered]
        rss = [p["methods"][method]["peak_rss_mb"] for p in ordered]
        out["methods"][method] = {
            "build_seconds": build,
            "latency_p50_ms": p50,
            "peak_rss_mb": rss,
            "exponent": {
                "build_seconds": growth_exponent(sizes, build),
                "latency_p50_ms": growth_exponent(sizes, p50),
                "peak_rss_mb": growth_exponent(sizes, rss),
            },
        }
        # The p50 of the pass taking turns at every size, where each point has one.
        turns = [((p.get("turns") or {}).get("methods") or {}).get(method) for p in ordered]
        if all(t is not None for t in turns):
            taken = [t["p50"] for t in turns]  # type: ignore[index]
            out["methods"][method]["turns_p50_ms"] = taken
            out["methods"][method]["exponent"]["turns_p50_ms"] = growth_exponent(sizes, taken)
    return out
