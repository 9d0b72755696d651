"""One-document inserts into a large built index: seconds per insert and per stage.

Data: a copy of a built index (``--index``; for example the 20,000-document synthetic
index of ``hygraph bench --synthetic 20000``, 24,857 chunks) and MuSiQue paragraphs
not in it (the last ``--warm + --m`` of ``corpus.jsonl``, each with " (added)" appended
so their chunks are new). ``--warm`` inserts run first, left out of the median (the
model loads, a new layout of a layer is written); their seconds are kept as
``warm_seconds`` (the first: a new process's first insert, the model's loading included).
Then ``--m`` inserts, one document per call, each timed.
``unstaged`` is an insert's wall time outside every stage (the matrices kept for query
processes, the manifest, locks). The index's close after the inserts is timed apart
(``close_s``; it writes the kept matrices a burst of small inserts left to write). Run
the same command with another checkout on ``PYTHONPATH`` to compare versions on the
same index.

    python benchmarks/insert_at_scale.py \\
        --index /tmp/scale/w/musique-syn20000-data-syn20000-524ec12c \\
        --copy /tmp/insert-at-scale --out insert-at-scale.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import time
from pathlib import Path

from hygraph.index import GraphIndex
from hygraph.ingest.documents import Document


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--copy", type=Path, default=Path("/tmp/insert-at-scale"))
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/musique"))
    parser.add_argument("--warm", type=int, default=2)
    parser.add_argument("--m", type=int, default=8)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    shutil.rmtree(args.copy, ignore_errors=True)
    shutil.copytree(args.index, args.copy)
    lines = (args.data / "corpus.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in lines[-(args.warm + args.m) :]]
    docs = [Document(id=f"added-{r['id']}", text=r["text"] + " (added)", title=r.get("title"))
            for r in rows]  # fmt: skip
    samples = []
    index = GraphIndex.open(args.copy, progress=False)
    try:
        chunks = len(index.store.chunk_ids())
        warm = []
        for doc in docs[: args.warm]:
            start = time.perf_counter()
            index.insert([doc])
            warm.append(time.perf_counter() - start)
        for doc in docs[args.warm :]:
            start = time.perf_counter()
            report = index.insert([doc])
            seconds = time.perf_counter() - start
            stages = {k: v["seconds"] for k, v in report.usage["stages"].items()}
            stages["unstaged"] = seconds - sum(stages.values())
            samples.append({"seconds": seconds, "stages": stages})
    finally:
        start = time.perf_counter()
        index.close()  # writes the kept matrices the inserts left to write (if any)
        closing = time.perf_counter() - start
    names = sorted({k for s in samples for k in s["stages"]})
    out = {
        "index": str(args.index),
        "chunks": chunks,
        "inserts": args.m,
        "median_s": statistics.median(s["seconds"] for s in samples),
        "stage_median_s": {
            k: statistics.median(s["stages"].get(k, 0.0) for s in samples) for k in names
        },  # fmt: skip
        "seconds": [s["seconds"] for s in samples],
        # The untimed warm inserts' seconds: the first is what a process pays on its first
        # insert (a one-file ``hygraph index`` run).
        "warm_seconds": warm,
        # The close after them, and the timed inserts' mean with it spread over them.
        "close_s": closing,
        "with_close_s": (sum(s["seconds"] for s in samples) + closing) / len(samples),
    }
    text = json.dumps(out, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    shutil.rmtree(args.copy, ignore_errors=True)


if __name__ == "__main__":
    main()
