"""The main job on the bundled sample corpus: index it offline, then answer its questions.

``hygraph demo`` indexes the twelve sample documents (fictional people, places,
organisations and events with cross-document links) with the embedded defaults,
runs each sample question through each method, prints the retrieved context and
whether the gold supporting documents were found, and ends with passage recall.
No network is used.
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any


def sample_dir() -> Path:
    """The folder of the bundled sample corpus (Markdown files and questions.jsonl)."""
    return Path(str(resources.files("hygraph") / "sample"))


def sample_questions() -> list[dict[str, Any]]:
    path = sample_dir() / "questions.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def sample_documents() -> list[Path]:
    return sorted(sample_dir().glob("*.md"))


def _recall(passages: list[str], gold: list[str], k: int) -> float:
    return len(set(passages[:k]) & set(gold)) / len(gold)


def run_demo(
    index_dir: Path | None = None,
    methods: list[str] | None = None,
    top_k: int = 3,
    as_json: bool = False,
) -> int:
    from hygraph.index import GraphIndex
    from hygraph.methods.base import RECOMMENDED_METHOD

    # The recommended method first, beside the two baselines it must not lose to.
    methods = methods or [RECOMMENDED_METHOD, "vanilla", "hybrid"]
    tmp = None
    if index_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="hygraph-demo-")
        index_dir = Path(tmp.name) / "index"
    out = sys.stdout
    start = time.perf_counter()
    try:
        with GraphIndex(index_dir, progress=False if as_json else None) as index:
            report = index.insert(sample_documents(), methods=methods)
            build_seconds = time.perf_counter() - start
            if not as_json:
                counts = index.store.counts()
                print(
                    f"Indexed {counts['documents']} sample documents into {counts['chunks']} "
                    f"chunks at {index_dir} in {build_seconds:.1f}s "
                    f"(methods: {', '.join(index.methods)}).",
                    file=out,
                )
            questions = sample_questions()
            rows: list[dict[str, Any]] = []
            for q in questions:
                for method in methods:
                    result = index.query(q["question"], method, top_k=top_k, budget=600)
                    recall = _recall(result.passages, q["supporting_ids"], top_k)
                    rows.append(
                        {
                            "id": q["id"],
                            "type": q["type"],
                            "method": method,
                            "question": q["question"],
                            "answers": q["answers"],
                            "gold": q["supporting_ids"],
                            "passages": result.passages,
                            "recall": recall,
                            "context": result.context,
                            "latency_ms": result.usage["retrieve_seconds"] * 1000,
                        }
                    )
                    if not as_json:
                        _print_row(rows[-1], top_k)
            summary = {
                m: round(
                    100
                    * sum(r["recall"] for r in rows if r["method"] == m)
                    / max(1, len(questions)),
                    1,
                )
                for m in methods
            }
            total_seconds = time.perf_counter() - start
            peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            if as_json:
                json.dump(
                    {
                        "index": str(index_dir),
                        "build": report.to_dict(),
                        "results": rows,
                        f"recall@{top_k}": summary,
                        "seconds": round(total_seconds, 2),
                        "peak_rss_mb": round(peak_mb, 1),
                    },
                    out,
                    indent=2,
                )
                out.write("\n")
            else:
                print(
                    f"\nPassage recall@{top_k} over {len(questions)} questions: "
                    + ", ".join(f"{m} {v}" for m, v in summary.items()),
                    file=out,
                )
                print(
                    f"Done in {total_seconds:.1f}s (build {build_seconds:.1f}s), "
                    f"peak memory {peak_mb:.0f} MB.",
                    file=out,
                )
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


def _print_row(row: dict[str, Any], top_k: int) -> None:
    found = [p for p in row["passages"][:top_k] if p in row["gold"]]
    print(f"\n=== {row['id']} ({row['type']}) [{row['method']}] {row['question']}")
    print(f"gold answer: {row['answers'][0]} | gold passages: {', '.join(row['gold'])}")
    print(
        f"retrieved: {', '.join(row['passages'][:top_k])} -> {len(found)}/{len(row['gold'])} "
        f"gold found, {row['latency_ms']:.0f} ms"
    )
    for line in row["context"].splitlines():
        print(f"    {line[:160]}")
