"""The demo's "firm that built the ship Renna Osk commanded" question, with and without the
rule that a fact's span stays within one sentence.

Data: the bundled sample corpus (``hygraph demo``), indexed offline with the bundled
embedder, ``hybrid-ppr`` with its default ``fact_vector="passage"``, once as shipped and
once with spans allowed across sentences (``fact_spans._one_sentence`` patched to accept
any stretch, which is how the rule read before it). For question q04 it prints the five
facts linked to the question (text, min-max score) and the first four passages; then the
demo's recall@3 for ``hybrid-ppr``, ``vanilla`` and ``hybrid`` under each rule: what
``benchmarks/results/fact-passage.md`` quotes.

    PYTHONPATH=shared:. .venv/bin/python benchmarks/demo_facts.py
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import tempfile
from typing import Any

import hygraph.layers.fact_spans as fact_spans
from hygraph import GraphIndex
from hygraph.demo import run_demo, sample_documents, sample_questions
from hygraph.operators import registry
from hygraph.operators.ppr import fact_texts


def main() -> None:
    link = registry.get_operator("relationship.fact_link")
    shown: list[bool] = [False]

    def linked(res: Any, state: Any, **kw: Any) -> None:
        link.fn(res, state, **kw)
        if shown[0]:
            scores = [round(r.value, 3) for r in state.relationships]
            print(
                "    linked", list(zip(fact_texts(res, state.relationships), scores, strict=True))
            )

    registry._OPERATORS["relationship.fact_link"] = dataclasses.replace(link, fn=linked)
    question = next(q for q in sample_questions() if q["id"] == "q04")
    within = fact_spans._one_sentence
    for rule, check in (("within one sentence", within), ("across sentences", lambda *a: True)):
        fact_spans._one_sentence = check
        fact_spans.find_region.__globals__["_one_sentence"] = check
        print(f"spans {rule}: {question['question']} gold {question['supporting_ids']}")
        with (
            tempfile.TemporaryDirectory() as folder,
            GraphIndex(f"{folder}/index", progress=False) as index,
        ):
            index.insert(sample_documents(), methods=["hybrid-ppr"])
            shown[0] = True
            result = index.retrieve(question["question"], "hybrid-ppr", top_k=4)
            shown[0] = False
            print("    top 4", result.passages[:4])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            run_demo(as_json=True)
        print("    demo recall@3", json.loads(out.getvalue())["recall@3"])
    fact_spans._one_sentence = within


if __name__ == "__main__":
    main()
