"""The two-hop comparison question with facts embedded as triples and pooled from passages.

Data: the hand-made Wikipedia-style corpus of ``tests/top_rank_corpora.py`` (``two_hop``:
film pages naming their director, the directors' pages), indexed offline with the
bundled embedder once per ``fact_vector`` mode. For each "Which film came out first, A
or B?" question it prints ``hybrid-ppr``'s first four passages with their scores and,
for the question naming "Kessel", the facts the walk keeps (fact id, min-max score,
cosine) and the seed entities: what ``benchmarks/results/fact-passage.md`` ("Why not
the default") quotes.

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
                shown[0] = "Kessel" in question
                result = index.retrieve(question, "hybrid-ppr", top_k=4)
                print(mode, question, "gold", gold)
                scores = [round(i.score, 3) for i in result.items[:4]]
                print("    top 4", result.passages[:4], scores)


if __name__ == "__main__":
    main()
