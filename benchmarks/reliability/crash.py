"""Crash campaign: kill a build or a delete at many points, rerun it, compare with a clean run.

Run from the repository root::

    .venv/bin/python benchmarks/reliability/crash.py [--deterministic 20] [--random 20]
        [--deletes 12] [--seed 0] [--musique 30]

Corpus: the bundled sample (12 documents) plus the first ``--musique`` paragraphs of
``../shared/data/musique/corpus.jsonl``, built with the offline extractor and the methods
``vanilla, bm25, hypergraph, noderag`` (so every layer runs: entity-graph, chunks, bm25,
entity-vectors, hypergraph, heterograph with its communities and high-level summaries).
Batch sizes are made small (extraction 8 chunks, embedding 16 texts, hypergraph and
entity vectors 16 chunks) in every run, so kills land in the middle of a layer.

A *kill point* is ``(function, N, when)``: in a child process, the function is wrapped
so that its N-th call (counting only calls for one collection where a collection is
named: ``EdgeVectorIndex.upsert[chunks]``) ends the process with ``os._exit(9)``
``before`` the call, ``after`` it, or, for ``GraphStore.transaction``, inside the N-th
outer transaction just before its ``COMMIT`` (``commit``). No ``finally`` block or
context manager runs: it is a crash, not an exception. First an uninterrupted reference
build runs with every target counted, so each kill point's N is one that is reached.
Deterministic points cover every target (first, middle and last call); random points
draw a target and an N with ``--seed``. Build kills start from an empty directory;
delete kills start from a copy of the reference index (``shutil.copytree``) and delete
one document.

After the kill the same build (or delete: a repeat of it, where "no document" means the
cleanup already finished) runs to completion in a fresh process, and the index is
compared with the reference (for deletes: a copy where the delete ran through):

- store counts (documents, chunks, extractions, nodes per kind, edges per kind), the
  sets of node ids and edge keys, provenance rows and progress marks per task;
- vectors: per collection the points (scrolled), their graph ids against the reference
  (lost / extra), *duplicated* (two points for one graph id, or a point id that is not
  ``point_id`` of its graph id), *orphaned* (a graph id that is neither a chunk nor a
  node of the store), *missing* (chunks not in ``chunks``, entities not in ``entities``,
  facts not in ``facts``, S/A/H nodes not in ``noderag``);
- *dangling* edges (an end that is neither a node nor a chunk) and provenance rows of
  chunks that are gone; ``PRAGMA integrity_check`` and ``foreign_key_check``; no
  delete left in the journal and no creation marker;
- the top-10 chunk ranking of every sample question for every method.

The table and summary go to ``benchmarks/results/reliability-crash.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
METHODS = ["vanilla", "bm25", "hypergraph", "noderag"]
COLLECTIONS = ("chunks", "entities", "facts", "noderag")
TOP_K = 10
RESULT = ROOT / "benchmarks" / "results" / "reliability-crash.md"
COUNTS_FILE = "call-counts.json"

#: Build kill targets: (module, attribute path, collection filter or None).
BUILD_TARGETS = [
    ("hygraph.graph.store", "GraphStore.add_document", None),  # ingest
    ("hygraph.graph.store", "GraphStore.put_extractions", None),  # extraction batch
    ("hygraph.graph.entity_graph", "EntityGraphBuilder.write", None),  # entity graph
    ("hygraph.vectors.edge", "EdgeVectorIndex.upsert", "chunks"),  # chunk vectors
    ("hygraph.layers.bm25", "BM25Layer._build", None),  # bm25
    ("hygraph.vectors.edge", "EdgeVectorIndex.upsert", "entities"),  # entity vectors
    ("hygraph.graph.hypergraph", "HypergraphBuilder.write", None),  # hypergraph
    ("hygraph.vectors.edge", "EdgeVectorIndex.upsert", "facts"),  # fact vectors
    ("hygraph.graph.heterograph", "HeterographBuilder.write", None),  # S/N/R decomposition
    ("hygraph.layers.heterograph", "build_attributes", None),  # A
    ("hygraph.layers.heterograph", "detect_communities", None),  # communities
    ("hygraph.layers.heterograph", "build_elements", None),  # H/O summaries
    ("hygraph.layers.heterograph", "link_elements", None),
    ("hygraph.layers.heterograph", "delta_semantic_edges", None),
    ("hygraph.graph.heterograph", "HeterographBuilder.write_nodes_edges", None),
    ("hygraph.vectors.edge", "EdgeVectorIndex.upsert", "noderag"),  # S/A/H vectors
    ("hygraph.graph.store", "GraphStore.mark_done", None),
    ("hygraph.graph.store", "GraphStore.transaction", None),
    ("hygraph.manifest", "Manifest.save", None),
]
#: Delete kill targets.
DELETE_TARGETS = [
    ("hygraph.graph.store", "GraphStore.delete_document", None),
    ("hygraph.graph.store", "GraphStore.transaction", None),
    ("hygraph.graph.store", "GraphStore.set_meta", None),  # the journal
    ("hygraph.graph.entity_graph", "EntityGraphBuilder.repair", None),
    ("hygraph.layers.chunks", "ChunkVectors.delete", None),
    ("hygraph.layers.bm25", "BM25Layer.delete", None),
    ("hygraph.layers.entity_vectors", "EntityVectors.delete", None),
    ("hygraph.layers.hypergraph", "HypergraphLayer.delete", None),
    ("hygraph.layers.heterograph", "HeterographLayer.delete", None),
    ("hygraph.layers.heterograph.maintain", "rewrite", None),
    ("hygraph.vectors.edge", "EdgeVectorIndex.delete", "chunks"),
    ("hygraph.vectors.edge", "EdgeVectorIndex.delete", "entities"),
    ("hygraph.vectors.edge", "EdgeVectorIndex.delete", "facts"),
    ("hygraph.vectors.edge", "EdgeVectorIndex.delete", "noderag"),
    ("hygraph.vectors.edge", "EdgeVectorIndex.upsert", "entities"),  # re-embedded entities
    ("hygraph.vectors.edge", "EdgeVectorIndex.upsert", "noderag"),  # rewritten A/H
]


def target_name(target: tuple[str, str, str | None]) -> str:
    module, attr, coll = target
    return f"{module}:{attr}" + (f"[{coll}]" if coll else "")


def parse_target(name: str) -> tuple[str, str, str | None]:
    module, rest = name.split(":", 1)
    coll = None
    if rest.endswith("]"):
        rest, coll = rest[:-1].split("[", 1)
    return module, rest, coll


# -- the child: one build or delete, optionally killed ---------------------------------


def small_batches() -> None:
    """Small batches everywhere (reference and killed runs alike) so kills land mid-layer."""
    import hygraph.layers.chunks as chunks
    import hygraph.layers.entity_graph as entity_graph
    import hygraph.layers.entity_vectors as entity_vectors
    import hygraph.layers.hypergraph as hypergraph
    import hygraph.resources as resources

    entity_graph.EXTRACT_BATCH = 8
    chunks.EMBED_BATCH = 16
    resources.EMBED_BATCH = 16
    hypergraph.BUILD_BATCH = 16
    entity_vectors.BUILD_BATCH = 16


def _resolve(module: str, attr: str) -> tuple[Any, str, Any]:
    import importlib

    owner: Any = importlib.import_module(module)
    parts = attr.split(".")
    for part in parts[:-1]:
        owner = getattr(owner, part)
    return owner, parts[-1], getattr(owner, parts[-1])


def _collection_of(args: tuple, kwargs: dict) -> str | None:
    if "name" in kwargs:
        return kwargs["name"]
    return args[1] if len(args) > 1 and isinstance(args[1], str) else None


def install(targets: list[str], kill: tuple[str, int, str] | None, counts: Counter) -> None:
    """Wrap every target to count its calls; the killed one exits at its N-th call."""
    for name in targets:
        module, attr, coll = parse_target(name)
        owner, leaf, original = _resolve(module, attr)
        when = kill[2] if kill is not None and kill[0] == name else None
        at = kill[1] if when is not None else -1

        if leaf == "transaction":

            def wrapper(
                self: Any, _o: Any = original, _n: str = name, _at: int = at, _w: Any = when
            ) -> Any:
                @contextlib.contextmanager
                def block() -> Any:
                    outer = self._depth == 0
                    hit = False
                    if outer:
                        counts[_n] += 1
                        hit = counts[_n] == _at
                        if hit and _w == "before":
                            os._exit(9)
                    with _o(self) as conn:
                        yield conn
                        if hit and _w == "commit":
                            os._exit(9)  # inside the transaction: it never commits
                    if hit and _w == "after":
                        os._exit(9)

                return block()

        else:

            def wrapper(
                *args: Any,
                _o: Any = original,
                _n: str = name,
                _c: Any = coll,
                _at: int = at,
                _w: Any = when,
                **kwargs: Any,
            ) -> Any:
                if _c is not None and _collection_of(args, kwargs) != _c:
                    return _o(*args, **kwargs)
                counts[_n] += 1
                hit = counts[_n] == _at
                if hit and _w == "before":
                    os._exit(9)
                out = _o(*args, **kwargs)
                if hit and _w == "after":
                    os._exit(9)
                return out

        setattr(owner, leaf, wrapper)


def corpus(n_musique: int) -> list[Any]:
    from hygraph.demo import sample_documents
    from hygraph.ingest import Document

    docs: list[Any] = list(sample_documents())
    path = ROOT.parent / "shared" / "data" / "musique" / "corpus.jsonl"
    with path.open() as f:
        for line in f:
            if len(docs) >= 12 + n_musique:
                break
            row = json.loads(line)
            docs.append(Document(id=f"musique-{row['id']}", text=row["text"], title=row["title"]))
    return docs


def delete_victims() -> list[str]:
    """Documents deleted by the delete kills (sample documents: they carry the questions)."""
    return ["great-dunmere-flood.md", "aldercott-shipyard.md", "ilse-marrow.md"]


def child(args: argparse.Namespace) -> int:
    if args.child == "snapshot":
        from hygraph.demo import sample_questions

        questions = [q["question"] for q in sample_questions()]
        Path(args.counts).write_text(json.dumps(snapshot(Path(args.index), questions)))
        return 0
    small_batches()
    counts: Counter = Counter()
    kill = None
    if args.kill:
        name, n, when = args.kill.rsplit(":", 2)
        kill = (name, int(n), when)
    targets = [target_name(t) for t in (BUILD_TARGETS if args.child == "build" else DELETE_TARGETS)]
    install(targets, kill, counts)
    from hygraph import GraphIndex
    from hygraph.errors import InputError

    if args.child == "build":
        index = GraphIndex(args.index, extractor="offline", progress=False)
        index.insert(corpus(args.musique), methods=METHODS)
    else:
        index = GraphIndex.open(args.index, progress=False)
        try:
            index.delete(args.doc)
        except InputError as err:  # the killed run finished the cleanup already
            if "no document" not in str(err):
                raise
    index.close()
    if args.counts:
        Path(args.counts).write_text(json.dumps(counts))
    return 0


def run_child(kind: str, index: Path, musique: int, *, kill: str | None = None,
              doc: str | None = None, counts: Path | None = None) -> int:  # fmt: skip
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", kind, "--index", str(index),
           "--musique", str(musique)]  # fmt: skip
    if kill:
        cmd += ["--kill", kill]
    if doc:
        cmd += ["--doc", doc]
    if counts:
        cmd += ["--counts", str(counts)]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "shared")}
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 9):
        sys.stderr.write(proc.stderr[-3000:])
    return proc.returncode


def take_snapshot(path: Path, work: Path) -> dict[str, Any]:
    """:func:`snapshot` of ``path``, taken in a child process (its own Qdrant shards)."""
    out = work / f"{path.name}.snapshot.json"
    if run_child("snapshot", path, 0, counts=out) != 0:
        raise SystemExit(f"snapshot of {path} failed")
    snap = json.loads(out.read_text())
    out.unlink()
    snap["edges"] = [tuple(e) for e in snap["edges"]]
    snap["dangling"] = [tuple(e) for e in snap["dangling"]]
    return snap


# -- snapshots and comparison ----------------------------------------------------------


def _scroll(shard: Any) -> list[tuple[str, str]]:
    """``(point id, graph id)`` of every point of a Qdrant Edge shard."""
    from qdrant_edge import ScrollRequest

    out: list[tuple[str, str]] = []
    offset = None
    while True:
        kwargs: dict[str, Any] = {"limit": 1000, "with_payload": True, "with_vector": False}
        if offset is not None:
            kwargs["offset"] = offset
        page = shard.scroll(ScrollRequest(**kwargs))
        points, offset = page if isinstance(page, tuple) else (page, None)
        out.extend((str(p.id), str(p.payload.get("id"))) for p in points)
        if offset is None:
            return out


def snapshot(path: Path, questions: list[str]) -> dict[str, Any]:
    """Everything compared: store contents, vector points, checks, rankings."""
    from hygraph import GraphIndex
    from hygraph.graph.heterograph import node_type
    from hygraph.graph.journal import JOURNAL_KEY as PENDING_DELETES_KEY
    from hygraph.index import CREATING_MARKER
    from hygraph.vectors.base import point_id

    snap: dict[str, Any] = {}
    conn = sqlite3.connect(str(path / "graph.sqlite"))
    q = conn.execute
    snap["integrity"] = [r[0] for r in q("PRAGMA integrity_check")]
    snap["foreign_keys"] = len(q("PRAGMA foreign_key_check").fetchall())
    nodes = dict(q("SELECT id, kind FROM nodes").fetchall())
    chunks = {r[0] for r in q("SELECT id FROM chunks")}
    snap["documents"] = sorted(r[0] for r in q("SELECT id FROM documents"))
    snap["chunks"] = sorted(chunks)
    snap["extractions"] = q("SELECT COUNT(*) FROM extractions").fetchone()[0]
    snap["nodes"] = nodes
    snap["node_text"] = {r[0]: r[1] for r in q("SELECT id, COALESCE(text, '') FROM nodes")}
    snap["edges"] = sorted(
        (s, d, k, round(w, 6)) for s, d, k, w in q("SELECT src, dst, kind, weight FROM edges")
    )
    snap["node_sources"] = q("SELECT COUNT(*) FROM node_sources").fetchone()[0]
    snap["edge_sources"] = q("SELECT COUNT(*) FROM edge_sources").fetchone()[0]
    snap["progress"] = dict(q("SELECT task, COUNT(*) FROM progress GROUP BY task").fetchall())
    ends = set(nodes) | chunks
    snap["dangling"] = [(s, d, k) for s, d, k, _ in snap["edges"] if s not in ends or d not in ends]
    snap["stale_provenance"] = q(
        "SELECT (SELECT COUNT(*) FROM node_sources WHERE chunk_id NOT IN (SELECT id FROM chunks))"
        " + (SELECT COUNT(*) FROM edge_sources WHERE chunk_id NOT IN (SELECT id FROM chunks))"
    ).fetchone()[0]
    pending = q("SELECT value FROM meta WHERE key = ?", (PENDING_DELETES_KEY,)).fetchone()
    snap["pending_deletes"] = sorted(json.loads(pending[0] or "{}")) if pending else []
    conn.close()
    snap["creating_marker"] = (path / CREATING_MARKER).exists()
    with GraphIndex.open(path, progress=False) as index:
        points: dict[str, list[tuple[str, str]]] = {}
        for name in COLLECTIONS:
            if index.vectors.has_collection(name):
                with index.vectors._use(name) as shard:  # type: ignore[attr-defined]
                    points[name] = _scroll(shard)
            else:
                points[name] = []
        snap["vectors"] = {name: sorted(g for _, g in pts) for name, pts in points.items()}
        dup, orphan, missing = {}, {}, {}
        expected = {
            "chunks": chunks,
            "entities": {n for n, k in nodes.items() if k == "entity"},
            "facts": {n for n, k in nodes.items() if k == "fact"},
            "noderag": {n for n in nodes if node_type(n) in ("S", "A", "H")},
        }
        for name, pts in points.items():
            graph_ids = Counter(g for _, g in pts)
            dup[name] = sorted({g for g, c in graph_ids.items() if c > 1} | {
                g for p, g in pts if p != point_id(g)})  # fmt: skip
            orphan[name] = sorted(g for g in graph_ids if g not in ends)
            missing[name] = sorted(expected[name] - set(graph_ids))
        snap["duplicated"], snap["orphaned"], snap["missing"] = dup, orphan, missing
        rankings = {}
        for method in METHODS:
            for question in questions:
                result = index.retrieve(question, method, top_k=TOP_K)
                rankings[f"{method} | {question[:40]}"] = result.chunks[:TOP_K]
        snap["rankings"] = rankings
    return snap


def checks(snap: dict[str, Any]) -> dict[str, int]:
    """Defects visible in one index alone (no reference needed)."""
    return {
        "duplicated": sum(len(v) for v in snap["duplicated"].values()),
        "orphaned": sum(len(v) for v in snap["orphaned"].values()) + snap["stale_provenance"],
        "missing": sum(len(v) for v in snap["missing"].values()),
        "dangling": len(snap["dangling"]),
        "integrity": 0 if snap["integrity"] == ["ok"] and not snap["foreign_keys"] else 1,
        "journal": len(snap["pending_deletes"]) + int(snap["creating_marker"]),
    }


def compare(ref: dict[str, Any], got: dict[str, Any]) -> tuple[dict[str, int], list[str]]:
    """Figures (lost, extra, duplicated, orphaned, dangling, ranking) and what differs."""
    diffs: list[str] = []
    lost = extra = 0

    def sets(label: str, a: Any, b: Any) -> None:
        nonlocal lost, extra
        a, b = Counter(a), Counter(b)
        gone, more = a - b, b - a
        lost += sum(gone.values())
        extra += sum(more.values())
        if gone or more:
            show = ", ".join(str(x) for x in list(gone)[:2] + list(more)[:2])
            diffs.append(f"{label}: {sum(gone.values())} lost, {sum(more.values())} extra ({show})")

    sets("documents", ref["documents"], got["documents"])
    sets("chunks", ref["chunks"], got["chunks"])
    kinds = sorted(set(ref["nodes"].values()) | set(got["nodes"].values()))
    for kind in kinds:
        sets(f"nodes[{kind}]", [n for n, k in ref["nodes"].items() if k == kind],
             [n for n, k in got["nodes"].items() if k == kind])  # fmt: skip
    ekinds = sorted({e[2] for e in ref["edges"]} | {e[2] for e in got["edges"]})
    for kind in ekinds:
        sets(f"edges[{kind}]", [e[:3] for e in ref["edges"] if e[2] == kind],
             [e[:3] for e in got["edges"] if e[2] == kind])  # fmt: skip
    for name in COLLECTIONS:
        sets(f"vectors[{name}]", ref["vectors"][name], got["vectors"][name])
    changed = [n for n in ref["node_text"] if n in got["node_text"]
               and ref["node_text"][n] != got["node_text"][n]]  # fmt: skip
    if changed:
        diffs.append(f"node texts differ: {len(changed)} ({changed[0]})")
    weights = set(ref["edges"]) ^ set(got["edges"])
    if weights and not lost and not extra:
        diffs.append(f"edge weights differ: {len(weights) // 2}")
    for key in ("extractions", "node_sources", "edge_sources", "progress"):
        if ref[key] != got[key]:
            diffs.append(f"{key}: {ref[key]} vs {got[key]}")
    ranking = [k for k in ref["rankings"] if ref["rankings"][k] != got["rankings"].get(k)]
    if ranking:
        diffs.append(f"rankings differ: {len(ranking)} ({ranking[0]})")
    own = checks(got)
    for key, value in own.items():
        if value:
            diffs.append(f"{key}: {value}")
    figures = {"lost": lost, "extra": extra, **own, "ranking": len(ranking),
               "other": int(bool(changed) or any(ref[k] != got[k] for k in
                                                ("extractions", "node_sources",
                                                 "edge_sources", "progress")))}  # fmt: skip
    return figures, diffs


# -- the campaign ----------------------------------------------------------------------


def plan(counts: dict[str, int], targets: list, n_det: int, n_rand: int, rng: random.Random,
         whens: tuple[str, ...]) -> list[tuple[str, int, str, str]]:  # fmt: skip
    """Kill points ``(target, N, when, origin)``: first/middle/last calls, then random ones."""
    names = [target_name(t) for t in targets if counts.get(target_name(t), 0) > 0]
    det: list[tuple[str, int, str, str]] = []
    rounds = 0
    while len(det) < n_det and rounds < 6:
        for i, name in enumerate(names):
            total = counts[name]
            picks = [1, (total + 1) // 2, total]
            n = picks[rounds % 3]
            when = "commit" if name.endswith("transaction") else whens[(i + rounds) % len(whens)]
            point = (name, n, when, "deterministic")
            if point not in det:
                det.append(point)
            if len(det) >= n_det:
                break
        rounds += 1
    rand: list[tuple[str, int, str, str]] = []
    while len(rand) < n_rand:
        name = rng.choice(names)
        n = rng.randint(1, counts[name])
        pool = ("before", "after", "commit") if name.endswith("transaction") else whens
        point = (name, n, rng.choice(pool), "random")
        if point[:3] not in {p[:3] for p in det + rand}:
            rand.append(point)
    return det + rand


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deterministic", type=int, default=20, help="build kills at fixed points")
    parser.add_argument("--random", type=int, default=20, help="build kills at random points")
    parser.add_argument("--deletes", type=int, default=12, help="delete kills (half random)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--musique", type=int, default=30, help="MuSiQue paragraphs added")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument("--jobs", type=int, default=2, help="kill points run at once")
    parser.add_argument("--child", choices=["build", "delete", "snapshot"], help=argparse.SUPPRESS)
    parser.add_argument("--index", help=argparse.SUPPRESS)
    parser.add_argument("--kill", help=argparse.SUPPRESS)
    parser.add_argument("--doc", help=argparse.SUPPRESS)
    parser.add_argument("--counts", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)
    sys.path.insert(0, str(ROOT / "shared"))
    from hygraph.demo import sample_questions

    start = time.perf_counter()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="hygraph-crash-"))
    work.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HYGRAPH_CACHE_DIR", str(work / "cache"))  # shared embedding cache
    questions = [q["question"] for q in sample_questions()]
    rng = random.Random(args.seed)

    # The reference build, counting every target's calls.
    ref_path = work / "reference"
    shutil.rmtree(ref_path, ignore_errors=True)
    t0 = time.perf_counter()
    rc = run_child("build", ref_path, args.musique, counts=work / COUNTS_FILE)
    build_seconds = time.perf_counter() - t0
    if rc != 0:
        raise SystemExit(f"the reference build failed ({rc})")
    build_counts = json.loads((work / COUNTS_FILE).read_text())
    ref = take_snapshot(ref_path, work)
    rows: list[dict[str, Any]] = []
    rows.append(row_for("reference (uninterrupted)", "build", "-", ref, ref, 0))
    print(f"reference build {build_seconds:.1f}s; calls: {build_counts}", flush=True)

    # Delete references: one per victim, each from a copy of the reference.
    del_refs: dict[str, dict[str, Any]] = {}
    del_counts: dict[str, dict[str, int]] = {}
    for doc in delete_victims():
        path = work / f"deleted-{doc}"
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(ref_path, path)
        if run_child("delete", path, args.musique, doc=doc, counts=work / COUNTS_FILE) != 0:
            raise SystemExit(f"the reference delete of {doc} failed")
        del_counts[doc] = json.loads((work / COUNTS_FILE).read_text())
        del_refs[doc] = take_snapshot(path, work)
        shutil.rmtree(path)

    points = plan(build_counts, BUILD_TARGETS, args.deterministic, args.random, rng,
                  ("before", "after"))  # fmt: skip
    jobs: list[tuple[str, str, int, str, str, str | None]] = [
        ("build", name, n, when, origin, None) for name, n, when, origin in points
    ]
    victims = delete_victims()
    n_det = (args.deletes + 1) // 2
    for j in range(args.deletes):
        doc = victims[j % len(victims)]
        counts = del_counts[doc]
        names = [target_name(t) for t in DELETE_TARGETS if counts.get(target_name(t), 0)]
        if j < n_det:
            name = names[j % len(names)]
            n = 1 if (j // len(names)) % 2 == 0 else counts[name]
            when = "commit" if name.endswith("transaction") else ("before", "after")[j % 2]
            origin = "deterministic"
        else:
            name = rng.choice(names)
            n = rng.randint(1, counts[name])
            pool = ("before", "after", "commit") if name.endswith("transaction") else (
                "before", "after")  # fmt: skip
            when = rng.choice(pool)
            origin = "random"
        jobs.append(("delete", name, n, when, origin, doc))

    def run_job(i: int) -> dict[str, Any]:
        kind, name, n, when, origin, doc = jobs[i]
        path = work / f"{kind}-{i}"
        shutil.rmtree(path, ignore_errors=True)
        if kind == "delete":
            shutil.copytree(ref_path, path)
        killed = run_child(kind, path, args.musique, kill=f"{name}:{n}:{when}", doc=doc)
        rerun = run_child(kind, path, args.musique, doc=doc)
        outcome = ("killed" if killed == 9 else f"not killed (rc {killed})") + (
            "; rerun ok" if rerun == 0 else f"; rerun rc {rerun}")  # fmt: skip
        got = take_snapshot(path, work) if rerun == 0 else None
        reference = ref if kind == "build" else del_refs[doc or ""]
        label = f"build, {origin}" if kind == "build" else f"delete {doc}, {origin}"
        row = row_for(f"{short(name)} #{n} {when}", label, outcome, reference, got, killed)
        print(f"[{i + 1}/{len(jobs)}] {label} {row['point']}: {outcome}; {row['diffs']}",
              flush=True)  # fmt: skip
        shutil.rmtree(path, ignore_errors=True)
        return row

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool_:
        rows.extend(pool_.map(run_job, range(len(jobs))))

    seconds = time.perf_counter() - start
    write_report(args, rows, build_counts, build_seconds, seconds, questions)
    if not args.workdir:
        shutil.rmtree(work, ignore_errors=True)
    bad = sum(1 for r in rows if r["diffs"] != "none")
    return 1 if bad else 0


def short(name: str) -> str:
    return name.split(":", 1)[1]


def row_for(point: str, kind: str, outcome: str, ref: dict[str, Any], got: dict[str, Any] | None,
            killed: int) -> dict[str, Any]:  # fmt: skip
    if got is None:
        figures = dict.fromkeys(("extra", "duplicated", "orphaned", "missing", "dangling",
                                 "integrity", "journal", "ranking"), 0)  # fmt: skip
        figures.update(lost=1, other=1)
        diffs = "the rerun failed"
    else:
        figures, found = compare(ref, got)
        diffs = "; ".join(found) or "none"
    return {"point": point, "kind": kind, "outcome": outcome, "figures": figures,
            "diffs": diffs, "killed": killed == 9}  # fmt: skip


def write_report(args: argparse.Namespace, rows: list[dict[str, Any]], counts: dict[str, int],
                 build_seconds: float, seconds: float, questions: list[str]) -> None:  # fmt: skip
    kills = [r for r in rows[1:] if r["killed"]]
    total = Counter()
    for r in rows:
        total.update(r["figures"])
    cmd = (f".venv/bin/python benchmarks/reliability/crash.py --deterministic "
           f"{args.deterministic} --random {args.random} --deletes {args.deletes} "
           f"--seed {args.seed} --musique {args.musique}")  # fmt: skip
    builds = sum(1 for r in kills if r["kind"].startswith("build"))
    summary = (
        f"**{len(kills)} kills** ({builds} in builds, {len(kills) - builds} in deletes): "
        f"{total['lost']} lost, {total['extra']} extra, {total['duplicated']} duplicated, "
        f"{total['orphaned']} orphaned, {total['missing']} missing vectors, "
        f"{total['dangling']} dangling, {total['integrity']} integrity failures, "
        f"{total['journal']} unfinished journals, {total['ranking']} ranking differences, "
        f"{total['other']} other differences"
    )
    lines = [
        "# Crash campaign: kill a build or a delete, rerun, compare",
        "",
        f"Command: `{cmd}`",
        "",
        f"Machine: {platform.platform()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}. Campaign {seconds / 60:.1f} min; one uninterrupted "
        f"build {build_seconds:.1f} s (process start and model load included).",
        "",
        f"Corpus: the bundled sample (12 documents) + {args.musique} MuSiQue paragraphs, "
        f"offline extractor, methods {', '.join(METHODS)}; small batches (extraction 8 "
        f"chunks, embedding 16 texts, hypergraph/entity vectors 16 chunks). Rankings: top "
        f"{TOP_K} chunks of the {len(questions)} sample questions for each method.",
        "",
        summary,
        "",
        "Each kill ends the child process with `os._exit(9)` at the N-th call of the "
        "function (`before` the call, `after` it, or for `GraphStore.transaction` at "
        "`commit`: inside the N-th outer transaction before its COMMIT); the same build or "
        "delete is then run to completion in a fresh process and compared with an "
        "uninterrupted one (see the module docstring of `benchmarks/reliability/crash.py`).",
        "",
        "Calls per target in one build: "
        + ", ".join(f"`{short(k)}` {v}" for k, v in sorted(counts.items())),
        "",
        "| # | kill point | kind | outcome | differences |",
        "|---|---|---|---|---|",
    ]
    for i, r in enumerate(rows):
        lines.append(f"| {i} | `{r['point']}` | {r['kind']} | {r['outcome']} | {r['diffs']} |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print(summary)
    print(f"written to {args.out}")


if __name__ == "__main__":
    sys.exit(main())
