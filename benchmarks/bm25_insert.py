"""What BM25 costs an insert and a query: the term-count postings against a ``bm25s`` index.

Data: the chunks of a built index (``--index``, for example the 20,000-document synthetic
index of ``hygraph bench --synthetic 20000``) and MuSiQue's 100 questions. Measured in
one process, one after the other:

* **bm25s, whole build** (what every insert cost before the postings): tokenize every
  chunk, ``BM25.index``, ``save`` (a long-lived process kept the tokens, so its insert
  paid index + save only: reported apart);
* **postings, from scratch**: tokenize every chunk, :meth:`Postings.add`, save;
* **postings, one chunk added**: add the index's last chunk to postings of the others and
  save (the median of ``--repeat`` tries) — what an insert pays now;
* **search**: median and p95 ms of the top ``--k`` (50, the default's depth) for every
  question, both ways; whether they return the same scores at every rank (the same
  ranking up to the order of tied chunks) and the same chunks in the same order.

    python benchmarks/bm25_insert.py --index /tmp/scale/w/musique-syn20000-data-syn20000-524ec12c \\
        --data /work/shared/data/musique --out bm25-insert.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from hygraph.index import GraphIndex
from hygraph.layers.bm25 import bm25s_module
from hygraph.layers.bm25_postings import Postings


def _ms(xs: list[float]) -> dict[str, float]:
    xs = sorted(xs)
    return {"p50": 1000 * statistics.median(xs), "p95": 1000 * xs[int(0.95 * (len(xs) - 1))]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/musique"))
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    bm25s = bm25s_module()
    with GraphIndex.open(args.index, progress=False) as index:
        ids = index.store.chunk_ids()
        texts = index.resources.chunk_texts(ids)
    corpus = [texts[c] for c in ids]
    questions = [json.loads(x)["question"] for x in (args.data / "questions.jsonl").open()]
    out: dict[str, Any] = {"index": str(args.index), "chunks": len(ids), "k": args.k}
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        tokenized = bm25s.tokenize(corpus, stopwords="en", show_progress=False)
        t1 = time.perf_counter()
        retriever = bm25s.BM25()
        retriever.index(tokenized, show_progress=False)
        retriever.save(str(Path(tmp) / "bm25s"), show_progress=False)
        t2 = time.perf_counter()
        out["bm25s_build_s"] = {"tokenize": t1 - t0, "index_and_save": t2 - t1}

        t0 = time.perf_counter()
        split = bm25s.tokenize(corpus, stopwords="en", return_ids=False, show_progress=False)
        full = Postings().add(ids, split)
        full.save(Path(tmp) / "postings", {})
        out["postings_build_s"] = time.perf_counter() - t0
        head = Postings().add(ids[:-1], split[:-1])
        adds = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            grown = head.add(ids[-1:], split[-1:])
            grown.save(Path(tmp) / "postings", {})
            adds.append(time.perf_counter() - t0)
        out["postings_add_one_s"] = statistics.median(adds)

        a, b, same, scored = [], [], 0, 0
        for q in questions:
            ids_q = bm25s.tokenize([q], stopwords="en", show_progress=False)
            words = bm25s.tokenize([q], stopwords="en", return_ids=False, show_progress=False)
            t0 = time.perf_counter()
            docs, scores = retriever.retrieve(ids_q, k=args.k, show_progress=False)
            t1 = time.perf_counter()
            hits = full.search(words[0], args.k, k1=1.5, b=0.75)
            t2 = time.perf_counter()
            a.append(t1 - t0)
            b.append(t2 - t1)
            theirs = [(ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0], strict=True)]
            theirs = [(c, s) for c, s in theirs if s > 0]
            same += [c for c, _ in hits] == [c for c, _ in theirs]
            scored += len(hits) == len(theirs) and all(
                abs(x - y) <= 1e-5 * max(abs(y), 1.0)
                for (_, x), (_, y) in zip(hits, theirs, strict=True)
            )
        out["search_ms"] = {"bm25s": _ms(a), "postings": _ms(b)}
        out["same_order"] = f"{same}/{len(questions)}"
        # Equal scores at every rank: the same ranking up to the order of tied chunks
        # (the synthetic corpus repeats paragraphs, so ties are many there).
        out["same_scores_at_every_rank"] = f"{scored}/{len(questions)}"
    text = json.dumps(out, indent=1)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
