"""The top-10 passages of every built-in method on two small corpora, through the public API.

The method layer is rebuilt over shared layers and operators; rankings must not move
while it is. ``tests/data/rankings.json`` holds the rankings recorded before the
rebuild (``python tests/rankings.py --write``), and ``test_rankings.py`` compares a
fresh build against it. The corpora are the bundled sample and a 140-paragraph slice
of MuSiQue (``tests/data/musique_slice``: the supporting paragraphs of 12 questions
and 110 others), both indexed offline with the embedded defaults.

Re-recorded once since, for a reason outside the methods: when searches began to order
points of equal score by id, also at the k-th place (``hygraph.vectors.base.
by_score_then_id``), two ``noderag-fused`` rankings on the sample moved (a NodeRAG
high-level node and its unit share a text, and so a vector).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

METHODS = (
    "vanilla",
    "bm25",
    "hybrid",
    "hypergraph",
    "hypergraph-bridge",
    "noderag",
    "noderag-fused",
)
DATA = Path(__file__).parent / "data"
RECORDED = DATA / "rankings.json"
DEPTH = 10


def _musique() -> tuple[list, list[str]]:
    from hygraph.ingest.documents import Document

    root = DATA / "musique_slice"
    docs = [
        Document(id=r["id"], text=r["text"], title=r["title"])
        for r in map(json.loads, (root / "corpus.jsonl").read_text().splitlines())
    ]
    questions = [
        json.loads(line)["question"] for line in (root / "questions.jsonl").read_text().splitlines()
    ]
    return docs, questions


def _sample() -> tuple[list, list[str]]:
    from hygraph.demo import sample_documents, sample_questions

    return sample_documents(), [q["question"] for q in sample_questions()]


CORPORA = {"sample": _sample, "musique": _musique}


def rankings(corpus: str, workdir: Path) -> dict[str, dict[str, list[str]]]:
    """``{method: {question: top-10 passage ids}}`` for one corpus, built in ``workdir``."""
    from hygraph.index import GraphIndex

    docs, questions = CORPORA[corpus]()
    out: dict[str, dict[str, list[str]]] = {}
    with GraphIndex(workdir / corpus, progress=False) as index:
        index.insert(docs, methods=list(METHODS))
        for method in METHODS:
            out[method] = {
                q: index.retrieve(q, method, top_k=DEPTH).passages[:DEPTH] for q in questions
            }
    return out


def main() -> None:
    import tempfile

    if "--write" not in sys.argv:
        raise SystemExit("usage: python tests/rankings.py --write")
    with tempfile.TemporaryDirectory() as tmp:
        recorded = {name: rankings(name, Path(tmp)) for name in CORPORA}
    RECORDED.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    print(f"wrote {RECORDED}")


if __name__ == "__main__":
    main()
