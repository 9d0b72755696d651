"""The bundled embedder on PyTorch and on ONNX Runtime, side by side: cost per call and
throughput on the texts an index embeds, and how far the vectors agree.

Data: MuSiQue (``/work/shared/data/README.md``): the first ``--chunks`` (256) corpus
paragraphs as passages (title line + text, as the index embeds them), and the fact
triples ``"source label target"`` and entity names of the offline extraction of the
same paragraphs (``hygraph.extract`` rule-based extractor, as the default builds them).

Measured in one process, each runtime warmed up first (model loaded, ONNX export made):

* ``floor``: one call of one two-word text, median of 30;
* ``1 passage`` / ``8 names`` / ``16 facts``: one call each, the sizes of a one-document
  insert (median of 10 calls over different texts);
* ``passages/s``, ``facts/s``, ``names/s``: all of them through ``embed`` in batches of
  256 (the index's embedding batch);
* agreement: the least and mean cosine between the two runtimes' vectors of every text.

    .venv/bin/python benchmarks/embedder_runtime.py --data /work/shared/data/musique \\
        --out /tmp/embedder-runtime.json

Prints a Markdown table; ``--out`` writes the numbers as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from hygraph.models.embedders import DEFAULT_EMBEDDER, SentenceTransformerEmbedder, bundled_minilm

BATCH = 256


def load_texts(data: Path, n: int) -> dict[str, list[str]]:
    """Passages, fact triples and entity names of the first ``n`` paragraphs."""
    from hygraph.extract import resolve_extractor
    from hygraph.extract.schema import ChunkInput
    from hygraph.layers.fact_vectors import fact_text

    passages, chunks = [], []
    with (data / "corpus.jsonl").open(encoding="utf-8") as fh:
        for line, _ in zip(fh, range(n), strict=False):
            rec = json.loads(line)
            text = f"{rec['title']}\n{rec['text']}" if rec.get("title") else rec["text"]
            passages.append(text)
            chunks.append(ChunkInput(id=str(rec["id"]), doc_id=str(rec["id"]), text=text,
                                     title=rec.get("title")))  # fmt: skip
    extractor = resolve_extractor("offline")
    facts: dict[str, None] = {}
    names: dict[str, None] = {}
    for ex in extractor.extract(chunks):
        for e in ex.entities:
            names[e.name] = None
        for r in ex.relations:
            facts[fact_text(r.source, r.label, r.target)] = None
    return {"passages": passages, "facts": list(facts), "names": list(names)}


def timed(fn: Any, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def measure(embedder: SentenceTransformerEmbedder, texts: dict[str, list[str]]) -> dict[str, Any]:
    embedder.embed(["warm up"])
    embedder.embed(texts["facts"][:64])
    out: dict[str, Any] = {
        "floor_ms": 1000 * timed(lambda: embedder.embed(["hello world"]), 30),
    }
    for key, kind, size in (("1 passage", "passages", 1), ("8 names", "names", 8),
                            ("16 facts", "facts", 16)):  # fmt: skip
        calls = iter(range(10))
        pool = texts[kind]

        def one(pool: list[str] = pool, size: int = size, calls: Any = calls) -> None:
            i = next(calls) * size
            embedder.embed(pool[i : i + size])

        out[f"{key} ms"] = 1000 * timed(one, 10)
    vectors = {}
    for kind, items in texts.items():
        start = time.perf_counter()
        vectors[kind] = np.vstack([embedder.embed(items[i : i + BATCH])
                                   for i in range(0, len(items), BATCH)])  # fmt: skip
        out[f"{kind}/s"] = len(items) / (time.perf_counter() - start)
    return {"figures": out, "vectors": vectors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--chunks", type=int, default=256)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    texts = load_texts(args.data, args.chunks)
    path = bundled_minilm().model_path
    torch_run = measure(SentenceTransformerEmbedder(path, runtime="torch"), texts)
    with tempfile.TemporaryDirectory() as onnx_dir:
        os.environ.setdefault("HYGRAPH_ONNX_DIR", onnx_dir)  # a fresh export, unless set
        onnx = SentenceTransformerEmbedder(path, name=DEFAULT_EMBEDDER, runtime="onnx")
        start = time.perf_counter()
        onnx.embed(["export"])
        export_s = time.perf_counter() - start
        assert onnx._onnx, "the ONNX runtime could not be used"
        onnx_run = measure(onnx, texts)
    cosines = {k: (torch_run["vectors"][k] * onnx_run["vectors"][k]).sum(1) for k in texts}
    agreement = {k: {"min": float(c.min()), "mean": float(c.mean())} for k, c in cosines.items()}
    result = {
        "counts": {k: len(v) for k, v in texts.items()},
        "torch": torch_run["figures"],
        "onnx": onnx_run["figures"],
        "first_use_s": export_s,
        "agreement": agreement,
        "env": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }
    rows = list(result["torch"])
    print(f"texts: {result['counts']}; ONNX export and check on first use: {export_s:.1f} s\n")
    print("| figure | PyTorch | ONNX Runtime | PyTorch / ONNX |")
    print("|---|---:|---:|---:|")
    for key in rows:
        a, b = result["torch"][key], result["onnx"][key]
        ratio = a / b if key.endswith("ms") else b / a
        print(f"| {key} | {a:.1f} | {b:.1f} | {ratio:.2f}× |")
    print("\n| texts | least cosine | mean cosine |\n|---|---:|---:|")
    for kind, agree in agreement.items():
        print(f"| {kind} | {agree['min']:.7f} | {agree['mean']:.7f} |")
    if args.out:
        args.out.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
