"""How often a method's first entity cites none of a question's supporting paragraphs.

The LightRAG and GraphRAG-local rows rank the nearest entities' own chunks first, as the
unified framework's code does, so their R@2 is bounded by how often the entity nearest the
question cites a supporting paragraph. Prints that count for a built index.

    python benchmarks/nearest_entity.py --index /tmp/benchwork/musique-full-2905c53f \\
        --data ../shared/data/musique --method graphrag-local
"""

from __future__ import annotations

import argparse

from hygraph import GraphIndex
from hygraph.bench.data import load_dataset


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True, help="an index that has the method built")
    parser.add_argument("--data", required=True, help="the dataset folder (questions.jsonl)")
    parser.add_argument("--method", default="graphrag-local")
    args = parser.parse_args()
    questions = load_dataset(args.data).questions
    missed = 0
    with GraphIndex.open(args.index, progress=False) as index:
        for q in questions:
            result = index.query(q.question, args.method)
            entity = next((i for i in result.items if i.kind == "entity"), None)
            chunks = index.store.get_chunks(list(entity.source_ids)) if entity else {}
            if not {c.doc_id for c in chunks.values()} & set(q.supporting_ids):
                missed += 1
    print(
        f"{args.method}: on {missed} of {len(questions)} questions the first entity cites "
        "no supporting paragraph"
    )


if __name__ == "__main__":
    main()
