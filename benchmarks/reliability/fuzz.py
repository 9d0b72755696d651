"""Fuzz campaign: every reply parser and loader, 10,000 hypothesis examples each.

Run from the repository root::

    .venv/bin/python benchmarks/reliability/fuzz.py [--examples 10000] [--triggers 500]
        [--jobs N] [--out benchmarks/results/reliability-fuzz.md]

It runs the properties of ``tests/test_fuzz.py`` (``HYGRAPH_FUZZ_EXAMPLES`` set to
``--examples``) in collect mode (``HYGRAPH_FUZZ_COLLECT=1``): a crash (an exception
other than the target's documented one, or a wrong return type) is recorded with the
smallest input that caused it instead of stopping the run, so every example runs.
Then, for the parsers and loaders with known crashes, it draws ``--triggers`` examples
of :func:`test_fuzz.crash_triggers` (deep nesting, over-long integers) to confirm them.
Properties run in parallel worker processes (``--jobs``, one property per task).
Prints a Markdown table (target, examples run, distinct crashes) and the crashes.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"

PROPERTIES = (
    "test_fuzz_parse_json_payload",
    "test_fuzz_listed_items",
    "test_fuzz_text_helpers",
    "test_fuzz_parse_question_entities",
    "test_fuzz_extract_answer",
    "test_fuzz_parse_query_elements",
    "test_fuzz_parse_high_level_elements",
    "test_fuzz_clean_summary",
    "test_fuzz_said_yes",
    "test_fuzz_parse_nary_records",
    "test_fuzz_parse_unified",
    "test_fuzz_parse_ner",
    "test_fuzz_parse_triples",
    "test_fuzz_parse_decomposition",
    "test_fuzz_parse_repaired_relationship",
    "test_fuzz_load_documents",
    "test_fuzz_clean_document",
    "test_fuzz_load_dataset",
    "test_fuzz_match_filters",
    "test_fuzz_recipe_method",
)


def _module():
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))
    import logging

    logging.getLogger("hygraph").setLevel(logging.CRITICAL)  # skip warnings are expected
    import test_fuzz

    return test_fuzz


def _run_property(name: str) -> tuple[str, dict, dict, float]:
    tf = _module()
    tf.RUNS.clear()
    tf.CRASHES.clear()
    start = time.perf_counter()
    getattr(tf, name)()
    return name, dict(tf.RUNS), tf.CRASHES, time.perf_counter() - start


def _trigger_targets(tf):
    targets = {name: fn for name, fn in tf.REPLY_PARSERS.items()}
    targets["clean_summary"] = tf.clean_summary
    targets["load_documents (jsonl line)"] = lambda t: tf._load(
        ('{"text": "a", "x": ' + t + "}").encode(), ".jsonl", 10**6
    )
    targets["load_dataset (questions line)"] = lambda t: tf._dataset(t)
    return targets


def _run_triggers(name: str, examples: int) -> tuple[str, dict, dict, float]:
    from hypothesis import HealthCheck, given, settings

    tf = _module()
    fn = _trigger_targets(tf)[name]
    target = f"{name} [crash triggers]"

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(tf.crash_triggers())
    def prop(text: str) -> None:
        tf.check(target, lambda: fn(text), object, (tf.ParseError, tf.InputError), text)

    tf.RUNS.clear()
    tf.CRASHES.clear()
    start = time.perf_counter()
    prop()
    return target, dict(tf.RUNS), tf.CRASHES, time.perf_counter() - start


def _show(example: object, limit: int = 160) -> str:
    text = repr(example)
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text)} chars)"
    return "`" + text.replace("`", "\\`").replace("|", "\\|") + "`"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000)
    parser.add_argument("--triggers", type=int, default=500)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--only", help="comma-separated properties to run (default: all)")
    args = parser.parse_args(argv)
    chosen = args.only.split(",") if args.only else list(PROPERTIES)
    unknown = sorted(set(chosen) - set(PROPERTIES))
    if unknown:
        parser.error(f"unknown properties: {', '.join(unknown)}")

    os.environ["HYGRAPH_FUZZ_EXAMPLES"] = str(args.examples)
    os.environ["HYGRAPH_FUZZ_COLLECT"] = "1"
    tf = _module()
    trigger_names = list(_trigger_targets(tf))

    runs: Counter[str] = Counter()
    crashes: dict[str, dict] = {}
    seconds: dict[str, float] = {}
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(_run_property, name) for name in chosen]
        if args.triggers > 0:
            futures += [pool.submit(_run_triggers, n, args.triggers) for n in trigger_names]
        for future in futures:
            name, got_runs, got_crashes, took = future.result()
            runs.update(got_runs)
            for target, found in got_crashes.items():
                crashes.setdefault(target, {}).update(found)
            seconds[name] = took
            print(f"done {name} in {took:.1f}s", file=sys.stderr, flush=True)
    wall = time.perf_counter() - start

    lines = [
        f"Fuzz campaign: {args.examples:,} examples per property, "
        f"{args.triggers:,} per crash-trigger target; {args.jobs} worker processes; "
        f"wall time {wall:.0f} s; Python {platform.python_version()}, "
        f"{platform.machine()} ({os.cpu_count()} CPUs).",
        "",
        "| parser / loader | examples run | crashes found |",
        "|---|---:|---:|",
    ]
    for target in sorted(runs, key=lambda t: ("[crash triggers]" in t, t)):
        lines.append(f"| {target} | {runs[target]:,} | {len(crashes.get(target, {}))} |")
    total = sum(len(v) for v in crashes.values())
    lines += ["", f"Distinct crashes (target, signature): {total}.", ""]
    for target in sorted(crashes):
        for problem, example in sorted(crashes[target].items()):
            lines.append(f"- **{target}**: {problem}; smallest input {_show(example)}")
    lines += ["", "Seconds per task: " + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items())]
    report = "\n".join(lines)
    print(report)
    if args.out is not None:
        command = "$ .venv/bin/python benchmarks/reliability/fuzz.py " + " ".join(
            argv if argv is not None else sys.argv[1:]
        )
        args.out.write_text(
            "# Reliability: fuzz campaign of reply parsers and loaders\n\n"
            "Generated by `benchmarks/reliability/fuzz.py` (properties in "
            "`tests/test_fuzz.py`).\n\n```\n" + command.strip() + "\n```\n\n" + report + "\n",
            encoding="utf-8",
        )
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
