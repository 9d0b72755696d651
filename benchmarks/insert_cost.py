"""What inserting documents into an existing index costs per document, against a bulk build.

Data: the first ``--n`` (200) paragraphs of MuSiQue's ``corpus.jsonl`` (see
``/work/shared/data/README.md``), each a document with its title; offline extractor,
bundled MiniLM embedder, the default methods (``hybrid-ppr``, ``vanilla``, ``bm25``:
the layers ``entity-graph``, ``chunks``, ``bm25``, ``hybrid-ppr``'s vectors and
``synonyms``).

Cases, each in a fresh index directory with its own (cold) embedding cache
(``HYGRAPH_CACHE_DIR`` is unset, so the cache is ``<index>/cache``):

* **bulk**: all ``n`` documents in one ``GraphIndex.insert`` call → bulk s/doc;
* **base**: the other ``n - m`` documents in one call (the index the inserts go into;
  copied, closed, for each insert case below, so they all start from the same state);
* **insert**: ``m`` (20) documents into a copy of base, one ``GraphIndex.insert``
  call per document, each timed → insert s/doc (median and mean). With ``--pick
  spread`` (the default) they are every ``n/m``-th document from ``--offset``, a sample
  of the whole corpus as the bulk build's mean is; ``--pick last`` takes the last ``m``
  (what runs before this option measured: on MuSiQue's first 200 those 20 are larger
  than the average document, about 16 facts each against 13, so the ratio compared
  unlike documents). Both samples' words per document are reported beside the bulk's;
* **llama-index** / **langchain**: the same ``m`` documents through the adapters' own
  insert paths, one document per call (``HyGraphIndex.insert(Document)``,
  ``HyGraphRetriever.add_documents([Document])``), each over its own copy of base.

The model is loaded once before any timing (neither case pays it). Per-stage seconds
come from each insert's usage report (``InsertReport.usage``; an adapter's from the
index's last recorded build): ``ingest``, ``extract``, ``embed`` (chunk vectors) and
one ``build:<layer>`` per layer (``build:bm25`` too, since BM25 builds are timed as a
stage); ``unstaged`` is the rest of the wall time (manifest, locks, journal, and BM25 in
versions that did not time it). The script also checks that bulk and insert hold the
same counts of documents, chunks, nodes, edges and vectors.

    nice .venv/bin/python benchmarks/insert_cost.py --data /work/shared/data/musique \\
        --work /tmp/insert-cost --out /tmp/insert-cost.json

Prints a Markdown table; ``--out`` writes the numbers as JSON.

``--small-batch-threads K`` runs every embedding call of fewer than
``--small-batch`` (32) texts with ``K`` torch threads (others keep torch's default):
it emulates a change to ``SentenceTransformerEmbedder.embed`` proposed with this
benchmark, for comparison; without it the embedder runs as shipped.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

from hygraph.index import GraphIndex
from hygraph.ingest.documents import Document

ADAPTERS = ("llama-index", "langchain")


def limit_small_batches(threads: int, below: int) -> None:
    """Run the bundled embedder's calls of fewer than ``below`` texts on ``threads``
    torch threads (the emulation ``--small-batch-threads`` asks for)."""
    import torch

    from hygraph.models.embedders import SentenceTransformerEmbedder

    shipped = SentenceTransformerEmbedder.embed

    def embed(self: Any, texts: Any) -> Any:
        if len(texts) >= below:
            return shipped(self, texts)
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            return shipped(self, texts)
        finally:
            torch.set_num_threads(before)

    SentenceTransformerEmbedder.embed = embed  # type: ignore[method-assign]


def skip_kept_writes() -> None:
    """Write nothing beside the index in ``vector-matrices/`` (the emulation
    ``--skip-kept-writes`` asks for, in every case of the run): what the inserts cost
    without rewriting the kept query matrices each time. Not a product setting: a new
    process would then read every vector back instead of mapping the matrices."""
    import hygraph.graph.kept as kept

    kept.write_kept = lambda *args, **kwargs: None


def load_documents(data: Path, n: int) -> list[Document]:
    """The first ``n`` corpus paragraphs as documents (id, title, text)."""
    docs = []
    with (data / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = json.loads(line)
            docs.append(Document(id=str(rec["id"]), text=rec["text"], title=rec.get("title")))
            if len(docs) == n:
                break
    return docs


def pick_inserted(n: int, m: int, pick: str, offset: int = 0) -> list[int]:
    """Positions of the ``m`` of ``n`` documents inserted one per call (see the module
    docstring): ``last``, or ``spread`` (every ``n/m``-th from ``offset``)."""
    if pick == "last":
        return list(range(n - m, n))
    step = n / m
    return sorted({(int(j * step) + offset) % n for j in range(m)})


def words_per_doc(docs: list[Document]) -> float:
    return statistics.fmean(len(d.text.split()) + len((d.title or "").split()) for d in docs)


def stage_seconds(usage: dict[str, Any]) -> dict[str, float]:
    return {name: float(s["seconds"]) for name, s in usage.get("stages", {}).items()}


def stage_embeddings(usage: dict[str, Any]) -> dict[str, int]:
    return {name: int(s["embeddings"]) for name, s in usage.get("stages", {}).items()}


def holdings(index: GraphIndex) -> dict[str, Any]:
    info = index.info()
    return {"counts": info["counts"], "vectors": info["vectors"]}


def bulk(path: Path, docs: list[Document]) -> dict[str, Any]:
    index = GraphIndex(path, progress=False)
    try:
        start = time.perf_counter()
        report = index.insert(docs)
        seconds = time.perf_counter() - start
        held = holdings(index)
    finally:
        index.close()
    stages = stage_seconds(report.usage)
    stages["unstaged"] = seconds - sum(stages.values())
    return {
        "documents": len(docs),
        "seconds": seconds,
        "s_per_doc": seconds / len(docs),
        "stages_per_doc": {k: v / len(docs) for k, v in stages.items()},
        "embeddings_per_doc": {k: v / len(docs) for k, v in stage_embeddings(report.usage).items()},
        "holds": held,
    }


def _per_doc(samples: list[dict[str, Any]]) -> dict[str, Any]:
    seconds = [s["seconds"] for s in samples]
    names = sorted({k for s in samples for k in s["stages"]})
    stages = {k: statistics.fmean(s["stages"].get(k, 0.0) for s in samples) for k in names}
    enames = sorted({k for s in samples for k in s["embeddings"]})
    return {
        "documents": len(samples),
        "seconds": seconds,
        "median_s_per_doc": statistics.median(seconds),
        "mean_s_per_doc": statistics.fmean(seconds),
        "first_s": seconds[0],
        "stages_per_doc": stages,
        "embeddings_per_doc": {
            k: statistics.fmean(s["embeddings"].get(k, 0) for s in samples) for k in enames
        },
    }


def _sample(seconds: float, usage: dict[str, Any]) -> dict[str, Any]:
    stages = stage_seconds(usage)
    stages["unstaged"] = seconds - sum(stages.values())
    return {"seconds": seconds, "stages": stages, "embeddings": stage_embeddings(usage)}


def insert_core(path: Path, docs: list[Document]) -> dict[str, Any]:
    """The inserts one per call, and the index's close after them (timed apart: a small
    insert's kept matrices are written when inserts pause or at close, so the close
    carries the burst's last write; ``with_close_s_per_doc`` spreads it over the
    inserts)."""
    index = GraphIndex.open(path, progress=False)
    samples = []
    try:
        for doc in docs:
            start = time.perf_counter()
            report = index.insert([doc])
            samples.append(_sample(time.perf_counter() - start, report.usage))
        held = holdings(index)
    finally:
        start = time.perf_counter()
        index.close()
        closing = time.perf_counter() - start
    per_doc = _per_doc(samples)
    with_close = (sum(per_doc["seconds"]) + closing) / len(samples)
    return {**per_doc, "close_s": closing, "with_close_s_per_doc": with_close, "holds": held}


def _last_usage(index: GraphIndex) -> dict[str, Any]:
    return index.manifest.builds[-1]["usage"] if index.manifest.builds else {}


def insert_llama(path: Path, docs: list[Document]) -> dict[str, Any]:
    from llama_index.core import Document as LlamaDocument

    from llama_index_hygraph import HyGraphIndex

    index = HyGraphIndex.from_persist_dir(path)
    samples = []
    try:
        for doc in docs:
            node = LlamaDocument(text=doc.text, id_=doc.id, metadata={"title": doc.title})
            start = time.perf_counter()
            index.insert(node)
            seconds = time.perf_counter() - start
            samples.append(_sample(seconds, _last_usage(index.graph_index)))
    finally:
        index.close()
    return _per_doc(samples)


def insert_langchain(path: Path, docs: list[Document]) -> dict[str, Any]:
    from langchain_core.documents import Document as LCDocument

    from langchain_hygraph import HyGraphRetriever

    retriever = HyGraphRetriever.from_persist_dir(path)
    samples = []
    try:
        for doc in docs:
            lc = LCDocument(page_content=doc.text, metadata={"title": doc.title}, id=doc.id)
            start = time.perf_counter()
            retriever.add_documents([lc])
            seconds = time.perf_counter() - start
            samples.append(_sample(seconds, _last_usage(retriever.index)))
    finally:
        retriever.close()
    return _per_doc(samples)


def fmt(x: float) -> str:
    return f"{x:.3f}"


def _inserted_line(result: dict[str, Any]) -> list[str]:
    ins = result.get("inserted")
    if not ins:
        return []
    return [
        f"Inserted one per call: {ins['pick']} ({ins['positions'][:3]}…), "
        f"{ins['words_per_doc']} words a document against {ins['bulk_words_per_doc']} "
        "over all the bulk build's",
        "",
    ]


def markdown(result: dict[str, Any]) -> str:
    b = result["cases"]["bulk"]
    bulk_s = b["s_per_doc"]
    lines = [
        (f"**{result['label']}**: " if result.get("label") else "")
        + f"N = {result['n']} documents, M = {result['m']} inserted one per call; "
        f"torch threads {result['env']['torch_threads']}"
        + (
            f" ({result['env']['small_batch_threads']} for calls of fewer than "
            f"{result['env']['small_batch']} texts, emulated)"
            if result["env"]["small_batch_threads"] is not None
            else ""
        )
        + f", embedder runtime {result['env'].get('embedder_runtime', 'torch')}"
        + f", {result['env']['cpus']} CPUs, "
        f"load average before {result['env']['loadavg_before']}",
        "",
        *_inserted_line(result),
        "| case | documents | s/doc (median) | s/doc (mean) | median / bulk | mean / bulk |",
        "|---|---|---|---|---|---|",
        f"| bulk (one insert call) | {b['documents']} | {fmt(bulk_s)} | {fmt(bulk_s)} "
        "| 1.00 | 1.00 |",
    ]
    for name in ("insert", *ADAPTERS):
        c = result["cases"].get(name)
        if c is None:
            continue
        med, mean = c["median_s_per_doc"], c["mean_s_per_doc"]
        label = {"insert": "GraphIndex.insert, one doc per call"}.get(name, f"{name} adapter")
        lines.append(
            f"| {label} | {c['documents']} | {fmt(med)} | {fmt(mean)} | "
            f"{med / bulk_s:.2f} | {mean / bulk_s:.2f} |"
        )
    lines += ["", "Per-stage seconds per document (mean; embeddings computed per document):", ""]
    cases = [n for n in ("bulk", "insert", *ADAPTERS) if n in result["cases"]]
    stages = sorted({k for n in cases for k in result["cases"][n]["stages_per_doc"]})
    lines.append("| stage | " + " | ".join(cases) + " |")
    lines.append("|---|" + "---|" * len(cases))
    for stage in stages:
        cells = []
        for n in cases:
            c = result["cases"][n]
            sec = c["stages_per_doc"].get(stage)
            emb = c["embeddings_per_doc"].get(stage)
            cell = "" if sec is None else fmt(sec)
            if emb:
                cell += f" ({emb:.1f} emb)"
            cells.append(cell)
        lines.append(f"| {stage} | " + " | ".join(cells) + " |")
    closing = result["cases"].get("insert", {}).get("close_s")
    if closing is not None:
        spread = result["cases"]["insert"]["with_close_s_per_doc"]
        lines += [
            "",
            f"GraphIndex.close after the inserts: {fmt(closing)} s; the inserts' mean "
            f"with it spread over them: {fmt(spread)} s/doc ({spread / bulk_s:.2f}× bulk)",
        ]
    same = result.get("same_holdings")
    if same is not None:
        lines += ["", f"bulk and insert hold the same counts and vectors: {same}"]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/musique"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/insert-cost"))
    parser.add_argument("--n", type=int, default=200, help="documents in all (default 200)")
    parser.add_argument("--m", type=int, default=20, help="documents inserted one per call")
    parser.add_argument(
        "--adapters", nargs="*", default=list(ADAPTERS), choices=ADAPTERS,
        help="adapters to time as well (default both; none: --adapters)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, help="write the numbers as JSON here")
    parser.add_argument(
        "--small-batch-threads", type=int, default=None,
        help="torch threads for embedding calls of fewer than --small-batch texts "
        "(emulates a proposed embedder change; default: as shipped)",
    )  # fmt: skip
    parser.add_argument("--small-batch", type=int, default=32)
    parser.add_argument(
        "--pick", choices=("spread", "last"), default="spread",
        help="which documents are inserted one per call (default spread: every n/m-th)",
    )  # fmt: skip
    parser.add_argument("--offset", type=int, default=0, help="first spread document")
    parser.add_argument("--label", default="", help="a name for this run, kept in the JSON")
    parser.add_argument(
        "--skip-kept-writes", action="store_true",
        help="emulate inserts that do not rewrite the kept query matrices (see skip_kept_writes)",
    )  # fmt: skip
    args = parser.parse_args()
    if not 0 < args.m < args.n:
        parser.error("need 0 < m < n")

    os.environ.pop("HYGRAPH_CACHE_DIR", None)  # each index keeps its own, cold, cache
    import torch

    from hygraph.models.embedders import bundled_minilm

    if args.small_batch_threads is not None:
        limit_small_batches(args.small_batch_threads, args.small_batch)
    if args.skip_kept_writes:
        skip_kept_writes()
    bundled_minilm().embed(["load the model before any timing"])
    docs = load_documents(args.data, args.n)
    if len(docs) < args.n:
        parser.error(f"{args.data} has only {len(docs)} documents")
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    result: dict[str, Any] = {
        "label": args.label,
        "n": args.n,
        "m": args.m,
        "data": str(args.data),
        "env": {
            "torch_threads": torch.get_num_threads(),
            # $HYGRAPH_EMBEDDER_RUNTIME: torch (as shipped) or onnx.
            "embedder_runtime": bundled_minilm().runtime,
            "small_batch_threads": args.small_batch_threads,
            "small_batch": args.small_batch,
            "skip_kept_writes": args.skip_kept_writes,
            "cpus": os.cpu_count(),
            "loadavg_before": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
        },
        "cases": {},
    }
    cases = result["cases"]
    cases["bulk"] = bulk(args.work / "bulk", docs)
    base = args.work / "base"
    picked = pick_inserted(args.n, args.m, args.pick, args.offset)
    new = [docs[i] for i in picked]
    cases["base"] = bulk(base, [d for i, d in enumerate(docs) if i not in set(picked)])
    result["inserted"] = {
        "pick": args.pick,
        "positions": picked,
        "words_per_doc": round(words_per_doc(new), 1),
        "bulk_words_per_doc": round(words_per_doc(docs), 1),
    }
    shutil.copytree(base, args.work / "insert")
    cases["insert"] = insert_core(args.work / "insert", new)
    for name in args.adapters:
        shutil.copytree(base, args.work / name)
        run = insert_llama if name == "llama-index" else insert_langchain
        cases[name] = run(args.work / name, new)
    result["same_holdings"] = cases["bulk"]["holds"] == cases["insert"]["holds"]
    result["env"]["loadavg_after"] = [round(x, 2) for x in os.getloadavg()]
    print(markdown(result))
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
