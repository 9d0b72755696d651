"""Where a one-document insert's time goes: each part timed by wrapping it.

Data: the first ``--n`` (200) MuSiQue paragraphs, as ``benchmarks/insert_cost.py`` loads
them. A base index of the other documents is built once (``--work``/base, reused when it
is there); then ``--m`` documents (``insert_cost.pick_inserted``: every ``n/m``-th from
``--offset``) are inserted one per call into a copy of it, in a fresh process that has
opened the copy. The first insert (what a one-file ``hygraph index`` run pays) and the
rest (steady state) are reported apart: seconds per insert of each wrapped part (the
encoder's pass, the kept query matrices, each layer's update, the folder's permissions,
the manifest) and the word pieces the encoder took in. ``--bulk`` also builds all ``n``
in one call and reports its encoder seconds and word pieces per document.

Parts nest (the encoder's pass is inside ``embed_ahead``, the kept matrices inside
``_update_layers``); wrapping adds microseconds a call. Run it with another checkout on
``PYTHONPATH`` to compare versions:

    PYTHONPATH=shared:. python benchmarks/insert_parts.py --work /tmp/insert-parts \\
        --out insert-parts.json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.insert_cost import load_documents, pick_inserted
from hygraph.index import GraphIndex

SECONDS: dict[str, float] = defaultdict(float)
PIECES: dict[str, int] = defaultdict(int)


def _timed(owner: Any, name: str, label: str) -> None:
    inner: Callable[..., Any] = getattr(owner, name)

    def timed(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            SECONDS[label] += time.perf_counter() - start

    setattr(owner, name, timed)


def wrap_parts() -> None:
    """Time the parts of a build (module functions and methods, replaced in place)."""
    from hygraph import manifest
    from hygraph.layers import ahead, base
    from hygraph.layers.bm25 import BM25Layer
    from hygraph.models import mean_pooled
    from hygraph.operators import ppr

    shipped_pass = mean_pooled._packed_pass

    def counted(bert: Any, batch: list[list[int]], pieces: list[Any], *rest: Any) -> Any:
        PIECES["encoder"] += sum(len(pieces[i][0]) for row in batch for i in row)
        return shipped_pass(bert, batch, pieces, *rest)

    mean_pooled._packed_pass = counted  # type: ignore[assignment]
    _timed(mean_pooled, "_packed_pass", "encoder pass")
    _timed(mean_pooled, "encode_packed", "encode (tokenize, pack, pass)")
    _timed(ahead, "embed_ahead", "embed_ahead")
    _timed(ppr, "keep_query_matrices", "kept query matrices")
    _timed(GraphIndex, "_tighten", "folder permissions")
    _timed(GraphIndex, "_update_layers", "_update_layers")
    _timed(manifest.Manifest, "save", "manifest")
    _timed(BM25Layer, "update", "layer bm25")  # its own update, not Layer.update
    shipped_update = base.Layer.update

    def update(self: Any, res: Any) -> int:
        start = time.perf_counter()
        try:
            return shipped_update(self, res)
        finally:
            SECONDS[f"layer {self.name}"] += time.perf_counter() - start

    base.Layer.update = update  # type: ignore[method-assign]


def _snapshot(count: int) -> dict[str, Any]:
    out = {
        "seconds": {
            k: round(v / count, 4) for k, v in sorted(SECONDS.items(), key=lambda x: -x[1])
        },
        "encoder_pieces": round(PIECES["encoder"] / count, 1),
    }
    SECONDS.clear()
    PIECES.clear()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/musique"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/insert-parts"))
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--m", type=int, default=20)
    parser.add_argument("--offset", type=int, default=0)
    parser.add_argument("--bulk", action="store_true", help="also time a bulk build of all n")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    os.environ.pop("HYGRAPH_CACHE_DIR", None)  # each index keeps its own cache
    from hygraph.models.embedders import bundled_minilm

    bundled_minilm().embed(["load the model before any timing"])
    docs = load_documents(args.data, args.n)
    picked = pick_inserted(args.n, args.m, "spread", args.offset)
    base = args.work / f"base-{args.n}-{args.m}-{args.offset}"
    if not base.exists():
        with GraphIndex(base, progress=False) as index:
            index.insert([d for i, d in enumerate(docs) if i not in set(picked)])
    result: dict[str, Any] = {"n": args.n, "m": args.m, "offset": args.offset}
    wrap_parts()
    if args.bulk:
        shutil.rmtree(args.work / "bulk", ignore_errors=True)
        with GraphIndex(args.work / "bulk", progress=False) as index:
            start = time.perf_counter()
            index.insert(docs)
            seconds = time.perf_counter() - start
        result["bulk"] = {"s_per_doc": round(seconds / len(docs), 4), **_snapshot(len(docs))}
    copy = args.work / "insert"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(base, copy)
    times = []
    with GraphIndex.open(copy, progress=False) as index:
        for k, i in enumerate(picked):
            start = time.perf_counter()
            index.insert([docs[i]])
            times.append(time.perf_counter() - start)
            if k == 0:
                result["first"] = {"s": round(times[0], 4), **_snapshot(1)}
    rest = times[1:]
    result["steady"] = {
        "inserts": len(rest),
        "median_s": round(statistics.median(rest), 4),
        "mean_s": round(statistics.fmean(rest), 4),
        **_snapshot(len(rest)),
    }
    print(json.dumps(result, indent=1))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
