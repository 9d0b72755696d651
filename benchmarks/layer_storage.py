"""Disk taken by one method's layer in a built index: its vectors and its SQLite rows.

The index is copied to a scratch folder; there the graph file is compacted (VACUUM),
measured, the method's layer removed with its own ``reset`` (the same call as
``GraphIndex.rebuild`` makes), compacted and measured again. The vectors are the
method's own Qdrant collections, measured on disk.

    .venv/bin/python benchmarks/layer_storage.py --index /tmp/bench-work/musique-full-<hash> \\
        --method noderag
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import tempfile
from pathlib import Path

from hygraph.index import GraphIndex


def _compacted_size(path: Path) -> int:
    with sqlite3.connect(path) as conn:
        conn.execute("VACUUM")
    return path.stat().st_size


def _folder_size(path: Path) -> int:
    """Bytes allocated on disk (Qdrant preallocates sparse files: not their apparent size)."""
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--method", required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "index"
        shutil.copytree(args.index, copy)
        graph = copy / "graph.sqlite"
        with GraphIndex.open(copy, progress=False) as index:
            method = index.method(args.method)
            # Measured in the original: a copy fills in the shards' sparse files.
            source = Path(args.index) / "qdrant"
            vectors = sum(_folder_size(source / c) for c in method.collections)
        before = _compacted_size(graph)
        with GraphIndex.open(copy, progress=False) as index:
            index.reset_layers(args.method)
        after = _compacted_size(graph)
    print(
        json.dumps(
            {
                "method": args.method,
                "vectors_mb": round(vectors / 1e6, 1),
                "graph_mb_with_layer": round(before / 1e6, 1),
                "graph_mb_without_layer": round(after / 1e6, 1),
                "layer_graph_mb": round((before - after) / 1e6, 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
