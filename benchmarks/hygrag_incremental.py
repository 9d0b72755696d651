"""HyGRAG's incremental insert against a full build, on MuSiQue, offline.

The corpus is split in its file order (the paper's protocol, spec 000 §6.2): the
``hygrag`` layer is built on the first 80% and the last 20% is inserted, so those
documents are attached the paper's way (one summary of the new material, then the
path above the attachment point written again). A second index builds the layer on
the whole corpus at once: what a rebuild costs. Both report

* passage recall R@2/5/10 of the 100 questions (``hygrag`` at top_k 10, as
  ``hygraph bench`` queries), with dense retrieval for reference;
* LLM calls made for summaries, and the seconds spent in the layer (the
  ``build:hygrag`` stage: Cleora, LSH, summaries, vectors) and in the whole insert.

The LLM is a scripted counting test double (:class:`CountingSummaryLLM`): it answers
every summary prompt with an extractive summary of the prompt's own content, so the
run is offline and deterministic while every call goes through the real fan-out, cache
and accounting. Each index has its own LLM cache, so no call is saved by the other.

    .venv/bin/python benchmarks/hygrag_incremental.py --data /work/shared/data/musique \\
        --work /tmp/hygrag-incremental

Markdown goes to stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hygraph.bench.data import load_dataset
from hygraph.bench.metrics import recall_at_k
from hygraph.extract.extractive import extractive_summary
from hygraph.index import GraphIndex
from hygraph.models.base import LLMResponse, Message
from hygraph.prompts.hygrag import COMMUNITY_MARKER, NEW_MATERIAL_MARKER, UPPER_MARKER

KS = (2, 5, 10)
_ITEM = re.compile(r"^(?:(?:Passage|Summary) \d+: |- )")
TOP_K = 10  # what ``hygraph bench`` queries with (its largest recall cut-off)


class CountingSummaryLLM:
    """A scripted counting test double for the LLM protocol (no model, no network).

    Each HyGRAG summary prompt is answered with an extractive summary (300 words) of
    the lines it lists, so the summaries read like the offline ones; calls, prompt and
    reply characters are counted by prompt kind. Other prompts get a short reply.
    """

    name = "counting-summary-double"

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.prompt_chars = 0
        self.reply_chars = 0

    def reset(self) -> None:
        self.calls.clear()
        self.prompt_chars = self.reply_chars = 0

    @property
    def tokens(self) -> int:
        """Prompt and reply tokens of the summary calls (4 characters a token)."""
        return (self.prompt_chars + self.reply_chars) // 4

    @staticmethod
    def _kind(text: str) -> str:
        for marker, kind in ((COMMUNITY_MARKER, "layer 1"), (UPPER_MARKER, "upper"),
                             (NEW_MATERIAL_MARKER, "new material")):  # fmt: skip
            if marker in text:
                return kind
        return "other"

    async def acomplete(self, messages: Sequence[Message], **params: Any) -> LLMResponse:
        text = messages[-1]["content"] if messages else ""
        kind = self._kind(text)
        lines = [
            _ITEM.sub("", line)
            for line in text.splitlines()
            if line.strip() and not line.startswith("#") and line.strip() != "Summary:"
        ]
        reply = (extractive_summary(lines, 300) or "No content.") if kind != "other" else "None."
        self.calls[kind] += 1
        self.prompt_chars += sum(len(m["content"]) for m in messages)
        self.reply_chars += len(reply)
        return LLMResponse(
            text=reply, prompt_tokens=len(text) // 4, completion_tokens=len(reply) // 4
        )

    def complete(self, messages: Sequence[Message], **params: Any) -> LLMResponse:
        return asyncio.run(self.acomplete(messages, **params))


def split_corpus(corpus: Path, work: Path, share: float) -> tuple[Path, Path]:
    """The first ``1 - share`` and the last ``share`` of the corpus lines, as two files."""
    lines = [x for x in corpus.read_text(encoding="utf-8").splitlines() if x.strip()]
    cut = int(round(len(lines) * (1 - share)))
    head, tail = work / "initial.jsonl", work / "inserted.jsonl"
    head.write_text("\n".join(lines[:cut]) + "\n", encoding="utf-8")
    tail.write_text("\n".join(lines[cut:]) + "\n", encoding="utf-8")
    return head, tail


def layer_cost(report: Any) -> dict[str, float]:
    """Seconds of the whole insert and of the ``hygrag`` layer, LLM calls by the layer."""
    stages = report.usage.get("stages", {})
    layer = stages.get("build:hygrag", {})
    calls = sum(s.get("llm_calls", 0) for n, s in stages.items() if n.startswith("build:hygrag"))
    return {
        "insert_seconds": round(report.seconds, 1),
        "layer_seconds": round(float(layer.get("seconds", 0.0)), 1),
        "layer_llm_calls": calls,
    }


def recalls(index: GraphIndex, questions: list, method: str) -> dict[int, float]:
    out = {k: 0.0 for k in KS}
    for q in questions:
        result = index.retrieve(q.question, method, top_k=TOP_K)
        for k in KS:
            out[k] += recall_at_k(result.passages, q.supporting_ids, k)
    return {k: round(100 * v / len(questions), 1) for k, v in out.items()}


def tree_shape(index: GraphIndex) -> str:
    from hygraph.graph.kinds import NodeKind

    levels = Counter(n.data["level"] for n in index.store.nodes_of_kind(NodeKind.HY_COMMUNITY))
    return " / ".join(f"L{lv}: {levels[lv]}" for lv in sorted(levels))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="folder with corpus.jsonl, questions.jsonl")
    parser.add_argument("--work", default="/tmp/hygrag-incremental")
    parser.add_argument("--share", type=float, default=0.2, help="share inserted afterwards")
    parser.add_argument("--extractor", default="offline", help="offline or precomputed")
    parser.add_argument(
        "--embedding-cache",
        help="an embeddings.sqlite to start both indexes' embedding caches from (a previous "
        "run's); the LLM caches always start empty",
    )
    args = parser.parse_args()
    data = load_dataset(args.data)
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    extractor = "offline"
    if args.extractor == "precomputed":
        extractor = f"precomputed:{data.extraction_path}"
    head, tail = split_corpus(data.corpus_path, work, args.share)
    for name in ("full", "incr"):  # each index its own caches (no LLM reply is shared)
        (work / f"{name}.cache").mkdir()
        if args.embedding_cache:
            shutil.copy(args.embedding_cache, work / f"{name}.cache" / "embeddings.sqlite")
    rows: dict[str, dict[str, Any]] = {}

    full_llm = CountingSummaryLLM()
    os.environ["HYGRAPH_CACHE_DIR"] = str(work / "full.cache")
    with GraphIndex(work / "full", llm=full_llm, extractor=extractor, progress=False) as full:
        start = time.perf_counter()
        full.insert([head, tail], methods=["vanilla"])
        base_seconds = time.perf_counter() - start
        report = full.insert([], methods=["hygrag"])
        rows["full build (= rebuild)"] = {
            **layer_cost(report), "calls": dict(full_llm.calls), "tokens": full_llm.tokens,
            "recall": recalls(full, data.questions, "hygrag"), "shape": tree_shape(full),
        }  # fmt: skip
        rows["full build (= rebuild)"]["insert_seconds"] = round(base_seconds + report.seconds, 1)
        dense = recalls(full, data.questions, "vanilla")
        n_docs = len(full.store.document_ids())

    incr_llm = CountingSummaryLLM()
    os.environ["HYGRAPH_CACHE_DIR"] = str(work / "incr.cache")
    with GraphIndex(work / "incr", llm=incr_llm, extractor=extractor, progress=False) as incr:
        first = incr.insert([head], methods=["vanilla", "hygrag"])
        rows["initial build (80%)"] = {
            **layer_cost(first), "calls": dict(incr_llm.calls), "tokens": incr_llm.tokens,
            "shape": tree_shape(incr),
        }  # fmt: skip
        incr_llm.reset()
        second = incr.insert([tail])
        update = incr.layer("hygrag").last_update
        rows["incremental insert (20%)"] = {
            **layer_cost(second), "calls": dict(incr_llm.calls), "tokens": incr_llm.tokens,
            "shape": tree_shape(incr),
            "recall": recalls(incr, data.questions, "hygrag"), "update": update,
        }  # fmt: skip
    print(render(rows, dense, n_docs, args))
    (work / "result.json").write_text(json.dumps({"rows": rows, "dense": dense}, indent=2))


def _saved(part: float, whole: float) -> str:
    """``part`` against ``whole`` as "N% fewer" or "N% more"."""
    if not whole:
        return "n/a"
    change = 100 * (part / whole - 1)
    return f"{abs(change):.0f}% {'more' if change > 0 else 'fewer'}"


def render(rows: dict, dense: dict, n_docs: int, args: argparse.Namespace) -> str:
    full, insert = rows["full build (= rebuild)"], rows["incremental insert (20%)"]
    lines = [
        f"## HyGRAG incremental insert on {Path(args.data).name} ({n_docs} documents, "
        f"{args.extractor} extraction, summaries by a scripted counting LLM double"
        + (", embeddings cached beforehand)" if args.embedding_cache else ")"),
        "",
        "| build | R@2 | R@5 | R@10 | summary LLM calls | their tokens | layer s "
        "| whole insert s | layers |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        rec = row.get("recall")
        cells = [f"{rec[k]:.1f}" for k in KS] if rec else ["–"] * 3
        calls = sum(row["calls"].values()) - row["calls"].get("other", 0)
        lines.append(
            f"| {name} | {' | '.join(cells)} | {calls} | {row['tokens']:,} | "
            f"{row['layer_seconds']} | "
            f"{row['insert_seconds']} | {row['shape']} |"
        )
    lines.append(f"| dense (vanilla, reference) | {' | '.join(f'{dense[k]:.1f}' for k in KS)} "
                 "| – | – | – | – | – |")  # fmt: skip
    full_calls = sum(full["calls"].values()) - full["calls"].get("other", 0)
    ins_calls = sum(insert["calls"].values()) - insert["calls"].get("other", 0)
    update = insert["update"]
    lines += [
        "",
        f"Insert of the last {args.share:.0%}: {update['documents']} documents, attached at "
        f"layer {dict(sorted(update['attached'].items()))} (0: no layer passed 0.65, a new "
        f"parentless layer-1 summary), {update['resummarised']} path summaries written again, "
        f"{update['splits']} splits; calls by prompt: {insert['calls']}.",
        f"LLM calls: {ins_calls} for the insert against {full_calls} for a rebuild "
        f"({_saved(ins_calls, full_calls)}); their tokens {insert['tokens']:,} against "
        f"{full['tokens']:,} ({_saved(insert['tokens'], full['tokens'])}); layer time "
        f"{insert['layer_seconds']} s against {full['layer_seconds']} s "
        f"({_saved(insert['layer_seconds'], full['layer_seconds'])}; it includes the "
        "double's own answering, and a real LLM's time follows its tokens).",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
