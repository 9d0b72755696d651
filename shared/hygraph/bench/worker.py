"""One benchmark task in its own process: build the shared index, or build and query one method.

Run as ``python -m hygraph.bench.worker SPEC.json RESULT.json``. A separate process
per method gives each its own peak-memory figure (``ru_maxrss``) and keeps one
method's caches from warming another's. The layers a method reads that the index
lacks are built first in a process of their own (:func:`build_method`), so the query
process's peak is what querying costs, on the run that builds them as on a later one;
the build's peak is reported in the method's build figures. A task that fails writes
``{"status": "failed", "error": "Type: message"}`` instead, so the runner can report
the failure and go on with the other methods.

Each question is asked once at ``top_k = max(ks)``, timed; that ask gives the latency,
the context figures and the chunk-level evidence ranks. Where its chunks hold fewer
than ``max(ks)`` distinct documents (long documents split into many chunks), the
question is asked again, untimed, with ``top_k`` doubled each time, until the ranking
holds ``max(ks)`` documents, ``top_k`` reaches the cap (``max_depth``), or an ask
returns no more chunks than the one before (see :func:`deepen`).
"""

from __future__ import annotations

import json
import resource
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hygraph.bench.metrics import answer_in_context, evidence_ranks
from hygraph.diskspace import used_bytes


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def build(spec: dict[str, Any]) -> dict[str, Any]:
    """Create or extend the shared index (chunks, extraction, vectors, cheap baselines)."""
    from hygraph.index import GraphIndex

    start = time.perf_counter()
    with GraphIndex(
        spec["index"],
        extractor=spec.get("extractor"),
        chunk_size=spec.get("chunk_size"),
        chunk_overlap=spec.get("chunk_overlap"),
        chunk_mode=spec.get("chunk_mode"),
        progress=False,
        store=spec.get("store"),
    ) as index:
        report = index.insert([spec["corpus"]], methods=spec.get("methods") or None)
        first = index.manifest.builds[0] if index.manifest.builds else {}
        counts = index.store.counts()
        store_bytes = index.store.size_bytes() if index.manifest.store else 0
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
        "index_bytes": used_bytes(Path(spec["index"])) + store_bytes,
        "store_bytes": store_bytes,
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


@dataclass
class Depth:
    """A question's document ranking after asking deep enough, and what that took."""

    documents: list[str]  # distinct documents in rank order
    top_k: int  # the top_k of the last ask
    asks: int  # how many asks (1: the first was enough)


def deepen(
    ask: Callable[[int], Sequence[str]],
    documents_of: Callable[[Sequence[str]], list[str]],
    first: Sequence[str],
    want: int,
    top_k: int,
    cap: int,
) -> Depth:
    """Ask again with a doubled ``top_k`` until the ranking holds ``want`` distinct documents.

    ``first`` is the chunk ranking the first ask (at ``top_k``) returned. The first
    ask's documents keep their places; a deeper ask only appends the documents it adds,
    in its own order, so recall at a depth the first ask already covered is unchanged.
    Stops at ``cap`` (``top_k`` never exceeds it), or when an ask returns no more
    distinct chunks than the previous one (the method has nothing further to give).
    """
    documents = documents_of(first)
    seen = len(set(first))
    depth, asks = top_k, 1
    while len(documents) < want and depth < cap:
        depth = min(depth * 2, cap)
        chunk_ids = ask(depth)
        asks += 1
        documents += [d for d in documents_of(chunk_ids) if d not in documents]
        if len(set(chunk_ids)) <= seen:
            break
        seen = len(set(chunk_ids))
    return Depth(documents, depth, asks)


#: One ask of a method or peer: ``(question, top_k) -> (chunk ids, context, context tokens)``.
Ask = Callable[[str, int], tuple[list[str], str, int]]


def _peer_runner(spec: dict[str, Any], index: Any, budget: int) -> tuple[Ask, dict[str, Any]]:
    """A peer's ask (its context cut to ``budget`` tokens) and its build figures."""
    from hygraph.ingest.tokenizer import default_tokenizer

    if spec.get("peers_path"):
        sys.path.insert(0, spec["peers_path"])
    from benchmarks.peers import load_peer

    peer = load_peer(spec["method"])
    start = time.perf_counter()
    build_stats = dict(peer.build(index))
    build_stats.setdefault("seconds", time.perf_counter() - start)
    tok = default_tokenizer()

    def run_one(text: str, k: int) -> tuple[list[str], str, int]:
        result = peer.retrieve(text, k)
        context = tok.truncate(result.context, budget)
        return result.chunk_ids, context, tok.count(context)

    return run_one, build_stats


def build_method(spec: dict[str, Any]) -> dict[str, Any]:
    """Build the layers a method reads that the index lacks (the ``build-method`` task).

    Run in a process of its own before the method's query process (:func:`query`), so
    that the query process's peak memory is what querying costs (a user's query process
    opens an index that ``hygraph index`` built; it does not build layers), whether or not
    this run built them. The build's own peak is reported beside it. Built under the
    method's plain name (see :func:`_method_runner`).
    """
    from hygraph.index import GraphIndex
    from hygraph.methods.base import parse_method_spec

    base, _ = parse_method_spec(spec["method"])
    with GraphIndex.open(spec["index"], progress=False) as index:
        report = index.insert(methods=[base])
    stages = report.usage.get("stages", {})
    return {
        "built_now": f"build:{base}" in stages,
        "built_layers": sorted(s for s in stages if s.startswith("build:")),
        "peak_rss_mb": round(_peak_rss_mb(), 1),
    }


def _in_own_process(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one worker task in a child process; its result, or a one-line error."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="hygraph-bench-") as tmp:
        spec_path, out_path = Path(tmp) / "spec.json", Path(tmp) / "result.json"
        spec_path.write_text(json.dumps(spec))
        proc = subprocess.run(
            [sys.executable, "-m", "hygraph.bench.worker", str(spec_path), str(out_path)],
            capture_output=True,
            text=True,
        )
        try:
            result = json.loads(out_path.read_text()) if out_path.exists() else {}
        except ValueError:
            result = {}
    if result.get("status") != "ok":
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ChildTaskError(result.get("error") or f"RuntimeError: {tail[0].strip()}")
    return result


class ChildTaskError(RuntimeError):
    """A task that failed in its own process, carrying that process's one-line error
    (``"Type: message"``), which :func:`one_line_error` reports as it is."""


def _method_runner(
    name: str, index: Any, budget: int, built: dict[str, Any] | None = None
) -> tuple[Ask, dict[str, Any]]:
    """A method's ask and its build figures (the method is built first if it is not yet).

    Built under its plain name, so options given here never become the index's saved
    configuration (a later ``name`` alone would otherwise inherit them); they apply at
    query time, over today's defaults, not over the options an index reused from an
    earlier version saved when it built the method. ``built``: what :func:`build_method`
    reported when it ran first in its own process (then nothing is left to build here);
    its peak memory is the build's ``peak_rss_mb`` (None when it built no layer).
    """
    from hygraph.methods.base import parse_method_spec

    base, _ = parse_method_spec(name)
    report = index.insert(methods=[base])
    index.method(name, config={})
    usage = _method_build_usage(index, base, report)
    build_stats = {
        "seconds": usage["seconds"] if usage else 0.0,
        "usage": usage,
        "built_now": usage is not None and f"build:{base}" in report.usage.get("stages", {}),
    }
    if built is not None:
        build_stats["built_now"] = usage is not None and bool(built["built_now"])
        build_stats["built_layers"] = built["built_layers"]
        build_stats["peak_rss_mb"] = built["peak_rss_mb"] if built["built_layers"] else None

    def run_one(text: str, k: int) -> tuple[list[str], str, int]:
        result = index.query(text, name, top_k=k, budget=budget)
        return result.chunks, result.context, result.context_tokens

    return run_one, build_stats


def _timed_rows(
    run_one: Ask, index: Any, questions: list[dict[str, Any]], top_k: int, want: int
) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """Each question asked once at ``top_k``, timed: its row, and the chunks it ranked.

    The first ask is a warm-up (model load, file opening); each timed query runs with
    the query-embedding cache off, so it pays for its embedding as a new question would.
    """
    run_one("warm up question", top_k)
    embedder = index.embedder
    if hasattr(embedder, "cache"):
        embedder.cache = None
    rows, firsts = [], []
    for q in questions:
        t0 = time.perf_counter()
        chunk_ids, context, tokens = run_one(q["question"], top_k)
        latency = time.perf_counter() - t0
        firsts.append(chunk_ids)
        row = {
            "id": q["id"],
            "type": q.get("type", "all"),
            "answer_in_context": answer_in_context(context, q.get("answers", [])),
            "context_tokens": tokens,
            "latency_ms": round(latency * 1000, 3),
        }
        if q.get("evidence"):
            chunks = index.store.get_chunks(chunk_ids)
            texts = [chunks[c].text for c in chunk_ids[:want] if c in chunks]
            row["evidence_ranks"] = evidence_ranks(texts, q["evidence"])
        rows.append(row)
    return rows, firsts


def _rank_documents(
    run_one: Ask,
    index: Any,
    questions: list[dict[str, Any]],
    rows: list[dict[str, Any]],
    firsts: list[list[str]],
    *,
    top_k: int,
    want: int,
    cap: int,
) -> None:
    """Each row's document ranking, asked deeper where needed (:func:`deepen`), untimed."""

    def documents_of(chunk_ids: Sequence[str]) -> list[str]:
        chunks = index.store.get_chunks(list(chunk_ids))
        return list(dict.fromkeys(chunks[c].doc_id for c in chunk_ids if c in chunks))

    for q, row, first in zip(questions, rows, firsts, strict=True):

        def ask(k: int, text: str = q["question"]) -> list[str]:
            return run_one(text, k)[0]

        depth = deepen(ask, documents_of, first, want, top_k, cap)
        row["passages"] = depth.documents[:want]
        row["documents"] = len(depth.documents)
        row["depth"] = depth.top_k
        row["asks"] = depth.asks


def query(spec: dict[str, Any]) -> dict[str, Any]:
    """Build (if needed) and query one method or peer; per-question rankings and timings."""
    from hygraph.index import GraphIndex
    from hygraph.methods.base import parse_method_spec

    name = spec["method"]
    top_k = int(spec["top_k"])
    want = max(spec["ks"])
    cap = max(top_k, int(spec.get("max_depth") or top_k))
    budget = int(spec["budget"])
    questions = spec["questions"]
    peer = bool(spec.get("peer"))
    # A method's missing layers are built first, in a process of their own: this
    # process's peak is then the query's alone (see build_method).
    built = (
        None
        if peer
        else _in_own_process({"task": "build-method", "index": spec["index"], "method": name})
    )
    index = GraphIndex.open(spec["index"], progress=False)
    if peer:
        run_one, build_stats = _peer_runner(spec, index, budget)
    else:
        run_one, build_stats = _method_runner(name, index, budget, built)
    rows, firsts = _timed_rows(run_one, index, questions, top_k, want)
    peak_rss = _peak_rss_mb()  # before the deeper asks, which are not the method's cost
    _rank_documents(run_one, index, questions, rows, firsts, top_k=top_k, want=want, cap=cap)
    # A method's own folder is named after its base name (a recipe's name, not the
    # file's path; never the options), a peer's after the peer.
    base = name if peer else parse_method_spec(name)[0]
    method_bytes = used_bytes(Path(spec["index"]) / base)
    if not peer:
        for collection in index.method(name).collections:  # embedded Qdrant folders
            method_bytes += used_bytes(Path(spec["index"]) / "qdrant" / collection)
    result = {
        "method": name,
        "peer": peer,
        "build": build_stats,
        "rows": rows,
        "peak_rss_mb": round(peak_rss, 1),
        "method_bytes": method_bytes,
    }
    index.close()
    return result


def one_line_error(exc: BaseException, limit: int = 400) -> str:
    """``"Type: message"`` on one line (the message's first line), at most ``limit`` chars."""
    lines = str(exc).strip().splitlines()
    if isinstance(exc, ChildTaskError):
        text = lines[0] if lines else "RuntimeError"
    else:
        text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    spec = json.loads(Path(args[0]).read_text())
    try:
        from hygraph.bench.turns import turns

        tasks = {"build": build, "build-method": build_method, "turns": turns}
        task = tasks.get(spec["task"], query)
        result = task(spec)
    except Exception as exc:  # noqa: BLE001 - any failure is reported, not raised
        traceback.print_exc()  # the full story on stderr; the one-line error in the result
        Path(args[1]).write_text(json.dumps({"status": "failed", "error": one_line_error(exc)}))
        return 1
    Path(args[1]).write_text(json.dumps({"status": "ok", **result}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
