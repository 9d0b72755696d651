"""The two-hop comparison question with facts embedded as triples and pooled from passages.

Data: the hand-made Wikipedia-style corpus of ``tests/top_rank_corpora.py`` (``two_hop``:
film pages naming their director, the directors' pages), indexed offline with the
bundled embedder once per ``fact_vector`` mode. For each "Which film came out first, A
or B?" question it prints ``hybrid-ppr``'s first four passages with their scores, with
the guard's clear-head rule and without it (``protect_gap=0``), and, for the question
naming "Kessel", the facts the walk keeps (fact id, min-max score, cosine), the seed
entities and the first stage's five best scores: what
``benchmarks/results/fact-passage.md`` quotes.

    PYTHONPATH=shared:.:tests .venv/bin/python benchmarks/two_hop_facts.py
"""

from __future__ import annotations

import dataclasses
import tempfile
from typing import Any

from top_rank_corpora import two_hop

from hygraph import GraphIndex
from hygraph.ingest import Document
from hygraph.models.embedders import bundled_minilm
from hygraph.operators import registry


def main() -> None:
    docs, questions = two_hop()
    embedder = bundled_minilm()
    registry.get_operator("node.fact_entities")  # loads the operators
    shipped = registry._OPERATORS["node.fact_entities"]
    shown: list[bool] = [False]

    def seeds(res: Any, state: Any, **kw: Any) -> None:
        shipped.fn(res, state, **kw)
        if shown[0]:
            print("    kept facts", [(r.id, round(r.value, 3), round(r.cosine, 3))
                                     for r in state.relationships])  # fmt: skip
            print("    seeds", {k: round(v, 4) for k, v in state.seeds.items()})

    registry._OPERATORS["node.fact_entities"] = dataclasses.replace(shipped, fn=seeds)
    guard = registry.get_operator("merge.protect")

    def first_stage(res: Any, state: Any, **kw: Any) -> None:
        if shown[0]:
            scores = state.ranking_scores.get("first") or []
            print("    first stage's best scores", [round(x, 3) for x in scores[:5]])
        guard.fn(res, state, **kw)

    registry._OPERATORS["merge.protect"] = dataclasses.replace(guard, fn=first_stage)
    for mode in ("triple", "passage"):
        with (
            tempfile.TemporaryDirectory() as folder,
            GraphIndex(f"{folder}/index", embedder=embedder, progress=False) as index,
        ):
            index.insert([Document(text=t, id=i, title=title) for i, title, t in docs],
                         methods=[f"hybrid-ppr:fact_vector={mode}"])  # fmt: skip
            for question, gold in questions:
                if not question.startswith("Which film"):
                    continue
                print(mode, question, "gold", gold)
                for spec in ("hybrid-ppr", "hybrid-ppr:protect_gap=0"):
                    shown[0] = "Kessel" in question and spec == "hybrid-ppr"
                    result = index.retrieve(question, spec, top_k=4)
                    scores = [round(i.score, 3) for i in result.items[:4]]
                    print(f"    {spec}: top 4", result.passages[:4], scores)


if __name__ == "__main__":
    main()
