"""Does the default chunk size matter for documents longer than the embedder's window?

MuSiQue's paragraphs are short (median 90 tokens), so they barely test chunking. Here
every 6 consecutive corpus paragraphs are joined into one document (about 600 tokens,
like a web page or report section), and dense retrieval (``vanilla``) is asked the 100
questions; a question's gold documents are those holding its supporting paragraphs.
Recall@k is measured for two chunkings side by side, and split by where the supporting
paragraph sits in its document (first paragraph or later), because the bundled MiniLM
reads only 256 word pieces of a chunk:

* ``1200/100``: the papers' chunks (a whole document is one chunk, its end unread);
* ``240/20``: the new default, chunks that fit the embedder's window with their title.

    python benchmarks/chunk_window.py --data ../shared/data/musique
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

GROUP = 6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--ks", default="2,5,10")
    args = parser.parse_args()
    from hygraph.index import GraphIndex
    from hygraph.ingest.documents import Document

    root = Path(args.data)
    corpus = [json.loads(x) for x in (root / "corpus.jsonl").read_text().splitlines()]
    questions = [json.loads(x) for x in (root / "questions.jsonl").read_text().splitlines()]
    docs, where = [], {}
    for start in range(0, len(corpus), GROUP):
        group = corpus[start : start + GROUP]
        doc_id = f"d{start // GROUP}"
        text = "\n\n".join(f"{r['title']}\n{r['text']}" for r in group)
        docs.append(Document(id=doc_id, text=text))
        where.update({r["id"]: (doc_id, n) for n, r in enumerate(group)})
    ks = [int(k) for k in args.ks.split(",")]
    print(f"{len(docs)} documents of {GROUP} paragraphs, {len(questions)} questions\n")
    print("| chunking | chunks | " + " | ".join(f"R@{k}" for k in ks)
          + " | R@5 gold paragraph first | R@5 gold paragraph later |")  # fmt: skip
    print("|---|---:|" + "---:|" * (len(ks) + 2))
    for size, overlap in ((1200, 100), (240, 20)):
        with (
            tempfile.TemporaryDirectory() as tmp,
            GraphIndex(
                Path(tmp) / "i", chunk_size=size, chunk_overlap=overlap, progress=False
            ) as ix,
        ):
            ix.insert(docs, methods=["vanilla"])
            hits: dict[int, list[float]] = {k: [] for k in ks}
            first, later = [], []
            for q in questions:
                ranked = ix.retrieve(q["question"], "vanilla", top_k=40).passages
                for k in ks:
                    gold = {where[s][0] for s in q["supporting_ids"]}
                    hits[k].append(len(set(ranked[:k]) & gold) / len(gold))
                for s in q["supporting_ids"]:
                    doc_id, pos = where[s]
                    (first if pos == 0 else later).append(float(doc_id in ranked[:5]))
            n_chunks = ix.store.counts()["chunks"]
            cells = [f"{100 * sum(v) / len(v):.1f}" for v in hits.values()]
            print(f"| {size}/{overlap} | {n_chunks} | " + " | ".join(cells)
                  + f" | {100 * sum(first) / len(first):.1f} (n={len(first)})"
                  + f" | {100 * sum(later) / len(later):.1f} (n={len(later)}) |")  # fmt: skip


if __name__ == "__main__":
    main()
