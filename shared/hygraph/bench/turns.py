"""Latency with the methods taking turns: every method timed in one process, question by
question (the ``turns`` worker task).

Each method's own query process (:func:`hygraph.bench.worker.query`) gives it its own
peak memory, but the processes run one after another, so a change in the machine's speed
between them moves the ratio of two methods' p50: on a 2-core machine, three runs of the
same built MuSiQue index gave `hybrid-ppr` 1.72–2.30× `vanilla`'s p50 that way, and
1.48× with the methods taking turns. Here one process opens the index, asks every method
once to warm up, then asks each question of every method in turn (the order rotating
from question to question, so no method is always first after another's work), for
``rounds`` rounds, each query with the query-embedding cache off as in the method's own
process. What drifts slows all methods alike, so the ratios hold.
"""

from __future__ import annotations

import time
from typing import Any

from hygraph.bench.metrics import percentile


def turns(spec: dict[str, Any]) -> dict[str, Any]:
    """Time ``spec["methods"]`` over ``spec["questions"]`` taking turns: per method, the
    p50 and p95 in ms and the number of queries timed.

    The methods must be built in the index already (each method's query task built it);
    ``spec["indexes"]`` names the index of a method that has its own (a variant whose
    options change its layers), opened beside the shared one with the same embedder.
    """
    from contextlib import ExitStack

    from hygraph.index import GraphIndex

    names = list(spec["methods"])
    top_k, budget = int(spec["top_k"]), int(spec["budget"])
    rounds = max(1, int(spec.get("rounds", 1)))
    questions = [q["question"] for q in spec["questions"]]
    times: dict[str, list[float]] = {name: [] for name in names}
    own = spec.get("indexes") or {}
    with ExitStack() as stack:
        index = stack.enter_context(GraphIndex.open(spec["index"], progress=False))
        embedder = index.embedder
        opened = {spec["index"]: index}
        for path in dict.fromkeys(own.values()):
            opened[path] = stack.enter_context(
                GraphIndex.open(path, embedder=embedder, progress=False)
            )
        index_of = {name: opened[own.get(name, spec["index"])] for name in names}
        for name in names:
            index_of[name].method(name, config={})  # options apply at query time, as in query()
            index_of[name].query("warm up question", name, top_k=top_k, budget=budget)
        if hasattr(embedder, "cache"):
            embedder.cache = None
        for _ in range(rounds):
            for n, text in enumerate(questions):
                for name in names[n % len(names) :] + names[: n % len(names)]:
                    start = time.perf_counter()
                    index_of[name].query(text, name, top_k=top_k, budget=budget)
                    times[name].append((time.perf_counter() - start) * 1000)
    return {
        "rounds": rounds,
        "methods": {
            name: {"p50": percentile(ms, 50), "p95": percentile(ms, 95), "queries": len(ms)}
            for name, ms in times.items()
        },
    }
