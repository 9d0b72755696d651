"""Quickstart: index the bundled sample corpus, retrieve with the recommended method and baselines.

Runs offline on the embedded defaults (Qdrant Edge, the bundled MiniLM, the rule-based
extractor)::

    python examples/quickstart.py [INDEX_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from hygraph import GraphIndex
from hygraph.demo import sample_documents

QUESTION = (
    "In what year was the institution where the designer of the Caddow Bridge studied set up?"
)


def main(index_dir: str | None = None) -> dict[str, list[str]]:
    """Index the sample corpus, ask one multi-hop question, return each method's passages."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(index_dir) if index_dir else Path(tmp) / "index"
        # The default methods: hybrid-ppr (the recommended one), vanilla and bm25.
        with GraphIndex.build(sample_documents(), path) as index:
            print(index.info()["counts"])
            passages = {}
            for method in index.methods:
                result = index.retrieve(QUESTION, method=method, top_k=3)
                passages[method] = result.passages
                print(f"\n[{method}] {result.passages}")
                for item in result.items:
                    print(f"  {item.score:.3f}  {item.text.splitlines()[0]}")
            return passages


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
