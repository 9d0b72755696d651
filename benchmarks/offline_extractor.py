"""Benchmark the offline extractor on MuSiQue: throughput, and entities against an LLM's.

Run from the repository root::

    .venv/bin/python benchmarks/offline_extractor.py [--data ../shared/data/musique]

Each corpus paragraph becomes one chunk whose text is ``title + "\\n" + text`` (as
the index builds chunks). Throughput is the median of 3 single-process runs over
all chunks (wall clock). Quality compares, per paragraph, the set of entity keys
(:func:`hygraph.extract.keys.entity_key`) found by the extractor with the keys of
the entities that gpt-3.5-turbo extracted with HippoRAG's NER prompt
(``extraction.jsonl``): micro precision/recall/F1 over all paragraphs, macro
(mean per paragraph; a paragraph with no gold entities is skipped for recall, one
with no predictions for precision), and split by kind: "dates/numbers" (the key
starts with a digit or currency sign, or is a month followed by a number) and
"names" (everything else). The table is printed and written to
``benchmarks/results/offline_extractor.md``.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import re
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO / ".." / "shared" / "data" / "musique"
sys.path.insert(0, str(REPO / "shared"))

from hygraph.extract.keys import entity_key  # noqa: E402
from hygraph.extract.offline import OfflineExtractor  # noqa: E402
from hygraph.extract.schema import ChunkInput  # noqa: E402

_MONTH_NUM = re.compile(
    r"(?:january|february|march|april|may|june|july|august|september|october|november|"
    r"december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec) \d"
)
KINDS = ("names", "dates/numbers")


def kind(key: str, raw: str = "") -> str:
    """Which kind an entity key belongs to (see the module docstring)."""
    head = raw.strip()[:1]
    if key[:1].isdigit() or (head and head in "$€£¥") or _MONTH_NUM.match(key):
        return "dates/numbers"
    return "names"


def load(data: Path) -> tuple[list[ChunkInput], dict[str, list[str]]]:
    chunks = []
    with open(data / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            chunks.append(
                ChunkInput(
                    id=row["id"],
                    doc_id=row["id"],
                    text=f"{row['title']}\n{row['text']}",
                    title=row["title"],
                )
            )
    gold = {}
    with open(data / "extraction.jsonl", encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            gold[row["id"]] = row["entities"]
    return chunks, gold


def prf(tp: int, n_pred: int, n_gold: int) -> tuple[float, float, float]:
    p = tp / n_pred if n_pred else 0.0
    r = tp / n_gold if n_gold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def score(predicted: dict[str, dict[str, str]], gold: dict[str, list[str]]) -> dict:
    """Micro and macro P/R/F1 of entity keys, overall and per kind."""
    out: dict = {}
    for which in ("all", *KINDS):
        tp = n_pred = n_gold = 0
        precisions, recalls = [], []
        for cid, names in gold.items():
            g = {entity_key(n): kind(entity_key(n), n) for n in names}
            g = {k: v for k, v in g.items() if k and (which == "all" or v == which)}
            pr = {k: v for k, v in predicted.get(cid, {}).items()}
            pr = {k: v for k, v in pr.items() if which == "all" or v == which}
            hit = len(set(g) & set(pr))
            tp += hit
            n_pred += len(pr)
            n_gold += len(g)
            if pr:
                precisions.append(hit / len(pr))
            if g:
                recalls.append(hit / len(g))
        mp = statistics.fmean(precisions) if precisions else 0.0
        mr = statistics.fmean(recalls) if recalls else 0.0
        out[which] = {
            "micro": prf(tp, n_pred, n_gold),
            "macro": (mp, mr, 2 * mp * mr / (mp + mr) if mp + mr else 0.0),
            "pred": n_pred,
            "gold": n_gold,
        }
    return out


def machine() -> str:
    mem = ""
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
                    break
    except OSError:
        pass
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        nproc = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        nproc = os.cpu_count() or 0
    return (
        f"nproc {nproc}, memory {mem}, CPU {cpu}, "
        f"Python {platform.python_version()} on {platform.system()} {platform.release()}"
    )


def quality_rows(result: dict) -> list[str]:
    rows = []
    for which in ("all", *KINDS):
        row = result[which]
        mi, ma = row["micro"], row["macro"]
        rows.append(
            f"| {which} | {row['pred']} | {row['gold']} | "
            + " | ".join(f"{100 * v:.1f}" for v in (*mi, *ma))
            + " |"
        )
    return rows


def predicted_keys(extractions) -> dict[str, dict[str, str]]:
    return {ex.chunk_id: {e.key: kind(e.key, e.name) for e in ex.entities} for ex in extractions}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--runs", type=int, default=3, help="timed runs (median reported)")
    parser.add_argument("--errors", type=int, default=0, help="print the N commonest misses")
    parser.add_argument("--no-write", action="store_true", help="do not write the results file")
    args = parser.parse_args(argv)

    chunks, gold = load(args.data.resolve())
    runs = max(1, args.runs)
    timings = []
    extractions = []
    extractor = OfflineExtractor()
    for _ in range(runs):
        extractor = OfflineExtractor()
        t0 = time.perf_counter()
        extractions = extractor.extract(chunks)
        timings.append(time.perf_counter() - t0)
    median = statistics.median(timings)
    rate = len(chunks) / median
    # The share of the schema's normalisation: one more normalise pass over the outputs.
    t0 = time.perf_counter()
    for ex in extractions:
        ex.normalised()
    normalise_s = time.perf_counter() - t0
    result = score(predicted_keys(extractions), gold)
    stats = extractor.stats

    command = ".venv/bin/python benchmarks/offline_extractor.py"
    if args.data != DEFAULT_DATA:
        command += f" --data {args.data}"
    if runs != 3:
        command += f" --runs {runs}"
    header = (
        "| kind | predicted | gold | micro P | micro R | micro F1 | macro P | macro R | macro F1 |"
    )
    lines = [
        "# Offline extractor on MuSiQue",
        "",
        f"- command: `{command}`",
        f"- date: {_dt.date.today().isoformat()}",
        f"- machine: {machine()}",
        f'- data: {len(chunks)} paragraphs (`title + "\\n" + text`), gold = gpt-3.5-turbo '
        "entities (HippoRAG NER prompt) in `extraction.jsonl`, compared as sets of "
        "`entity_key` per paragraph",
        "",
        "## Throughput (single process, `OfflineExtractor().extract` over all chunks)",
        "",
        f"| chunks | median of {runs} (s) | chunks/s | runs (s) |",
        "|---:|---:|---:|---|",
        f"| {len(chunks)} | {median:.3f} | {rate:,.0f} | "
        + ", ".join(f"{t:.3f}" for t in timings)
        + " |",
        "",
        f"Output per run: {stats.entities} entities, {stats.relations} relations, "
        f"{stats.facts} facts, {stats.units} units (after `Extraction.normalised()`, "
        "which is part of the timed work: one more `normalised()` pass over these outputs "
        f"takes {normalise_s:.3f} s, about {100 * normalise_s / median:.0f}% of a run).",
        "",
        "## Entities against the LLM (default settings)",
        "",
        header,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *quality_rows(result),
        "",
        "Kinds: *dates/numbers* = the key starts with a digit or a currency sign, or is a "
        "month followed by a number; *names* = everything else. Micro = pooled over all "
        "passages; macro = mean over passages (precision over passages with a prediction, "
        "recall over passages with a gold entity). About 2.8% of the gold entities are "
        'lower-case common nouns ("mathematician", "real analysis") that the rules do not '
        "try to find.",
        "",
        "### Precision by predicted type (default settings)",
        "",
        "| type | predicted | in the LLM's set | precision |",
        "|---|---:|---:|---:|",
    ]
    gold_keys = {cid: {entity_key(n) for n in names} for cid, names in gold.items()}
    by_type: Counter[str] = Counter()
    hits: Counter[str] = Counter()
    for ex in extractions:
        g = gold_keys.get(ex.chunk_id, set())
        for e in ex.entities:
            by_type[e.type] += 1
            hits[e.type] += e.key in g
    for etype, n in by_type.most_common():
        lines.append(f"| {etype} | {n} | {hits[etype]} | {100 * hits[etype] / n:.1f} |")

    lines += [
        "",
        "## Variants (quality only)",
        "",
        "Numbers with units are on by default (quantities are often answers), although the"
        " LLM lists few of them:",
        "",
        "| settings " + header,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    variants = {
        "default (numbers=True: money, units)": {},
        "numbers=False (names and dates only)": {"numbers": False},
        "counts=True (+ counts, %)": {"counts": True},
    }
    for label, settings in variants.items():
        out = extractions if not settings else OfflineExtractor(**settings).extract(chunks)
        for row in quality_rows(score(predicted_keys(out), gold)):
            if row.startswith(("| all ", "| dates/numbers ")):
                lines.append(f"| {label} {row}")

    table = "\n".join(lines) + "\n"
    print(table)

    if args.errors:
        fp: Counter[str] = Counter()
        fn: Counter[str] = Counter()
        for ex in extractions:
            g = gold_keys.get(ex.chunk_id, set())
            p = {e.key for e in ex.entities}
            fp.update(p - g)
            fn.update(g - p)
        print("false positives:", fp.most_common(args.errors))
        print("false negatives:", fn.most_common(args.errors))

    if not args.no_write:
        out_path = REPO / "benchmarks" / "results" / "offline_extractor.md"
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(table, encoding="utf-8")
        print(f"wrote {out_path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
