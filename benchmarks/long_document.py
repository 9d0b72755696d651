"""How a build's time grows with the length of one document: linear, or worse.

Data: one document made of MuSiQue paragraphs (``corpus.jsonl``, see
``/work/shared/data/README.md``), drawn in random pairs (seed 0) and joined with blank
lines until it holds ``--kb`` thousand characters; every chunk is new text, and the
entities recur as they do in a long report or a book. Each size is built into a fresh
index with the default methods and the offline extractor, 240-token chunks; the
per-stage seconds come from the build's usage report.

If a stage is linear, its seconds per MB stay flat from size to size; a stage that
rereads or rewrites what earlier batches wrote grows with the size.

    .venv/bin/python benchmarks/long_document.py --kb 500 1000 2000 \\
        --work /tmp/long-document --out benchmarks/results/long-document.json

``--embedder words`` uses the hashed bag-of-words test double (``tests/doubles.py``)
instead of the bundled model: the graph stages are what is measured, and the model's
time is linear in the text (it can be measured alone with ``--embedder`` left out).
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from hygraph.index import GraphIndex
from hygraph.ingest.documents import Document

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "data" / "musique" / "corpus.jsonl"


def long_document(kb: int, corpus: Path = CORPUS, seed: int = 0) -> Document:
    """One document of about ``kb`` thousand characters of paragraph pairs."""
    records = [json.loads(line) for line in corpus.read_text(encoding="utf-8").splitlines()]
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    while size < kb * 1000:
        a, b = rng.sample(records, 2)
        parts.append(f"{a['text']} {b['text']}")
        size += len(parts[-1]) + 2
    return Document(id=f"long-{kb}", text="\n\n".join(parts))


def measure(kb: int, work: Path, embedder: Any) -> dict[str, Any]:
    doc = long_document(kb)
    path = work / f"kb{kb}"
    shutil.rmtree(path, ignore_errors=True)
    index = GraphIndex(path, embedder=embedder, chunk_size=240, progress=False)
    try:
        start = time.perf_counter()
        report = index.insert([doc])
        wall = time.perf_counter() - start
        stages = {k: round(float(v.get("seconds", 0.0)), 2)
                  for k, v in report.usage["stages"].items()}  # fmt: skip
        chunks = index.store.counts()["chunks"]
    finally:
        index.close()
    return {"kb": kb, "mb": len(doc.text) / 1e6, "chunks": chunks, "wall_s": round(wall, 2),
            "stages": stages}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kb", type=int, nargs="+", default=[500, 1000, 2000])
    parser.add_argument("--work", type=Path, default=Path("/tmp/long-document"))
    parser.add_argument("--embedder", choices=["bundled", "words"], default="bundled")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    embedder: Any = None
    if args.embedder == "words":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        from doubles import WordEmbedder

        embedder = WordEmbedder()
    rows = [measure(kb, args.work, embedder) for kb in args.kb]
    names = list(dict.fromkeys(k for r in rows for k in r["stages"]))
    print(f"{platform.processor() or platform.machine()}, Python {platform.python_version()};"
          f" embedder {args.embedder}; seconds per MB of text (total seconds)")  # fmt: skip
    print("| MB | chunks | wall | " + " | ".join(names) + " |")
    print("|---:|---:|---:|" + "---:|" * len(names))

    def cell(seconds: float, mb: float) -> str:
        return f"{seconds / mb:.1f} ({seconds:.1f})"

    for r in rows:
        cells = [cell(r["wall_s"], r["mb"]), *(cell(r["stages"].get(n, 0), r["mb"]) for n in names)]
        print(f"| {r['mb']:.2f} | {r['chunks']} | " + " | ".join(cells) + " |")
    if args.out:
        args.out.write_text(json.dumps({"embedder": args.embedder, "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
