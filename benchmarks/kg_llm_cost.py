"""LLM calls and tokens per query of the methods that call an LLM while retrieving or answering.

Answers the first ``--questions`` questions of a dataset with each method through
``GraphIndex.query(answer=True)``, with a counting test double in place of the LLM: it
counts the prompt tokens it is sent with the index's tokenizer and replies by the
prompt's fixed first line, as a cooperative model would:

* map-reduce (GraphRAG global, CheapRAG): a map reply with two scored points;
* question entities (HippoRAG's prompt, used by ToG and DALK): the question's
  capitalised phrases;
* the relation, entity and path agents (ToG, DALK): the first two candidates, scored
  0.6 and 0.4;
* the evidence check (ToG): "not enough", so the beam search runs to its full depth
  (the worst case);
* the KGP traversal: one missing fact and the first linked passage;
* anything else (the answer): one sentence.

No model is called. Prompt tokens and call counts are therefore those a real model
would be sent for these choices; completion tokens are the double's and only indicate
the scale (a real model writes what it writes). The LLM cache is a fresh temporary
folder, so every call counts.

The index must hold the methods already (``hygraph bench --work DIR`` leaves one, and
``hygraph index --index DIR --method kgp`` adds one); its extractor and embedder are
used as built. Prints a Markdown table.

    python benchmarks/kg_llm_cost.py --index /tmp/bench/musique-full-xxxx \\
        --data /work/shared/data/musique --questions 20 --methods tog,dalk,kgp,g-retriever
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

METHODS = "graphrag-global,cheaprag"


def reply_for(messages: Sequence[dict[str, str]]) -> str:
    """The double's reply, chosen by the first line of the system message."""
    from hygraph.prompts.agents import (
        ENOUGH_FIRST_LINE,
        ENTITY_FIRST_LINE,
        PATH_FIRST_LINE,
        RELATION_FIRST_LINE,
    )
    from hygraph.prompts.kgp import KGP_FIRST_LINE
    from hygraph.prompts.map_reduce import MAP_SYSTEM

    system = messages[0]["content"]
    first = system.strip().splitlines()[0] if system.strip() else ""
    if system == MAP_SYSTEM:
        return json.dumps({"points": [
            {"description": "The pieces name the person the question asks about and the "
                            "place and year that connect them [1].", "score": 60},
            {"description": "A second piece adds a related detail [2].", "score": 30},
        ]})  # fmt: skip
    if first.startswith("Read a question and list the named entities"):
        question = messages[-1]["content"]
        names = re.findall(r"[A-Z][\w'-]*(?:\s+(?:of\s+|the\s+)?[A-Z][\w'-]*)*", question)
        return json.dumps({"named_entities": [n for n in dict.fromkeys(names) if n != "What"]})
    if first in (RELATION_FIRST_LINE, ENTITY_FIRST_LINE, PATH_FIRST_LINE):
        return json.dumps({"choices": [{"id": 1, "score": 0.6}, {"id": 2, "score": 0.4}]})
    if first == ENOUGH_FIRST_LINE:
        return json.dumps({"enough": False})
    if first == KGP_FIRST_LINE:
        return json.dumps({"missing": "The fact that links the passage to the answer.",
                           "next": ["L1"]})  # fmt: skip
    return "The answer, combined from the evidence, in one sentence."


class CountingLLM:
    """A counting test double for the LLM protocol: canned replies, real prompt counts."""

    name = "counting-double"

    def __init__(self) -> None:
        from hygraph.ingest.tokenizer import default_tokenizer

        self.tokenizer = default_tokenizer()
        self.calls = 0

    async def acomplete(self, messages: Sequence[dict[str, str]], **params: Any) -> Any:
        from hygraph.models.base import LLMResponse

        self.calls += 1
        prompt = sum(self.tokenizer.count(m["content"]) for m in messages)
        text = reply_for(messages)
        await asyncio.sleep(0)
        return LLMResponse(text=text, prompt_tokens=prompt,
                           completion_tokens=self.tokenizer.count(text))  # fmt: skip

    def complete(self, messages: Sequence[dict[str, str]], **params: Any) -> Any:
        return asyncio.run(self.acomplete(messages, **params))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True, help="an index holding the methods")
    parser.add_argument("--data", required=True, help="folder with questions.jsonl")
    parser.add_argument("--methods", default=METHODS)
    parser.add_argument("--questions", type=int, default=20, help="the first N questions")
    parser.add_argument("--top-k", type=int, default=None, help="top_k (default: the method's)")
    args = parser.parse_args()

    lines = (Path(args.data) / "questions.jsonl").read_text().splitlines()
    questions = [json.loads(line)["question"] for line in lines[: args.questions]]
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        os.environ["HYGRAPH_CACHE_DIR"] = cache  # a fresh LLM cache: every call counts
        from hygraph.index import GraphIndex

        for method in args.methods.split(","):
            llm = CountingLLM()
            with GraphIndex(args.index, llm=llm, progress=False, create=False) as index:
                calls, prompt, completion, pieces, seconds = [], [], [], [], []
                for question in questions:
                    result = index.query(question, method, top_k=args.top_k, answer=True)
                    usage = result.usage
                    calls.append(usage["llm_calls"] + usage["llm_cached_calls"])
                    prompt.append(usage["prompt_tokens"])
                    completion.append(usage["completion_tokens"])
                    pieces.append(len(result.items))
                    seconds.append(usage["retrieve_seconds"] + usage["answer_seconds"])
            rows.append((method, statistics.mean(pieces), statistics.mean(calls),
                         statistics.mean(prompt), statistics.mean(completion),
                         statistics.median(seconds)))  # fmt: skip
    print(f"LLM cost per query, {len(questions)} questions, counting double "
          f"(prompt tokens exact, completions the double's)\n")  # fmt: skip
    print("| method | context items | LLM calls | prompt tokens | completion tokens "
          "| total tokens | p50 s (double) |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    for method, pieces_, calls_, prompt_, completion_, p50 in rows:
        print(f"| {method} | {pieces_:.1f} | {calls_:.1f} | {prompt_:,.0f} | {completion_:,.0f} "
              f"| {prompt_ + completion_:,.0f} | {p50:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
