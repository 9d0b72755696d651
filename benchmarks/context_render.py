"""What rendering a retrieved context within its token budget costs per query.

    python benchmarks/context_render.py --index INDEX --questions Q.jsonl [--n 60] \\
        [--method vanilla] [--top-k 10] [--budget 2000] [--rounds 5]

Asks ``--n`` questions of a built index with ``--method``, keeps each query's context
(the evidence before rendering), then renders every kept context ``--rounds`` times
with the same tokenizer and prints JSON: the median milliseconds per render over the
rounds, the mean tokens rendered, and a digest of every rendered text, so that two
versions of the code run on the same index can be compared for time and output.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import time
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--index", required=True)
    p.add_argument("--questions", required=True)
    p.add_argument("--n", type=int, default=60)
    p.add_argument("--method", default="vanilla")
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--budget", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    from hygraph import GraphIndex
    from hygraph.retrieval import context as context_module

    lines = Path(args.questions).read_text().splitlines()
    questions = [json.loads(x)["question"] for x in lines][: args.n]
    kept: list[object] = []
    render = context_module.Context.render

    def keep(self, budget=2000, tokenizer=None):  # type: ignore[no-untyped-def]
        kept.append(self)
        return render(self, budget, tokenizer)

    context_module.Context.render = keep  # type: ignore[method-assign]
    with GraphIndex.open(args.index, progress=False) as index:
        for q in questions:
            index.retrieve(q, method=args.method, top_k=args.top_k)
    context_module.Context.render = render  # type: ignore[method-assign]
    per_round, digest, tokens = [], hashlib.sha256(), []
    for r in range(args.rounds):
        start = time.perf_counter()
        out = [render(c, args.budget) for c in kept]  # type: ignore[arg-type]
        per_round.append((time.perf_counter() - start) / len(kept) * 1000)
        if r == 0:
            for o in out:
                digest.update(f"{o.tokens}\n{o.text}\n".encode())
                tokens.append(o.tokens)
    print(json.dumps({
        "method": args.method, "contexts": len(kept), "budget": args.budget,
        "ms_per_render_median": round(statistics.median(per_round), 3),
        "ms_per_render_rounds": [round(x, 3) for x in per_round],
        "tokens_mean": round(statistics.mean(tokens), 1), "texts_digest": digest.hexdigest()[:16],
    }, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
