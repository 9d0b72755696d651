"""BM25 scored from term counts at search time (``hygraph.layers.bm25_postings``).

The scores must be those of a ``bm25s`` index over the same chunks (its default Lucene
variant), whatever order the chunks were added and removed in; checked on a hand-made
corpus whose figures are worked out below, and against ``bm25s`` itself on MuSiQue
paragraphs.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from hygraph.layers.bm25 import bm25s_module
from hygraph.layers.bm25_postings import Postings

SLICE = Path(__file__).parent / "data" / "musique_slice"


def _tokens(texts: list[str]) -> list[list[str]]:
    return bm25s_module().tokenize(texts, stopwords="en", return_ids=False, show_progress=False)


def test_scores_of_a_hand_checked_corpus():
    postings = Postings().add(["a", "b", "c"], [["cat", "cat", "dog"], ["dog"], ["bird"]])
    # N = 3, lengths 3, 1, 1 (mean 5/3); df(cat) = 1, df(dog) = 2.
    k1, b = 1.5, 0.75
    idf_cat = math.log(1 + (3 - 1 + 0.5) / (1 + 0.5))
    idf_dog = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))

    def tfc(tf: float, length: float) -> float:
        return tf / (tf + k1 * (1 - b + b * length / (5 / 3)))

    hits = postings.search(["cat", "dog"], 3, k1=k1, b=b)
    assert [c for c, _ in hits] == ["a", "b"]  # "c" scores 0 and is left out
    assert hits[0][1] == pytest.approx(idf_cat * tfc(2, 3) + idf_dog * tfc(1, 3))
    assert hits[1][1] == pytest.approx(idf_dog * tfc(1, 1))
    # A token asked twice counts twice; unknown tokens are ignored; k limits.
    twice = postings.search(["dog", "dog", "zebra"], 1, k1=k1, b=b)
    assert twice == [("b", pytest.approx(2 * idf_dog * tfc(1, 1)))]
    assert postings.search(["zebra"], 3, k1=k1, b=b) == []
    assert Postings().search(["cat"], 3, k1=k1, b=b) == []


def test_ties_keep_the_order_added():
    postings = Postings().add(["x", "y", "z"], [["fox"], ["fox"], ["fox"]])
    assert [c for c, _ in postings.search(["fox"], 2, k1=1.5, b=0.75)] == ["x", "y"]


def test_scores_equal_a_bm25s_index_of_the_same_chunks():
    bm25s = bm25s_module()
    rows = [json.loads(line) for line in (SLICE / "corpus.jsonl").read_text().splitlines()]
    texts = [r["text"] for r in rows]
    ids = [f"c{i}" for i in range(len(texts))]
    tokens = _tokens(texts)
    # Added in three parts, one chunk removed and added again at the end.
    postings = Postings().add(ids[:10], tokens[:10]).add(ids[10:], tokens[10:])
    postings = postings.remove({ids[3]}).add([ids[3]], [tokens[3]])
    order = ids[:3] + ids[4:] + [ids[3]]
    corpus = [texts[int(c[1:])] for c in order]
    retriever = bm25s.BM25()
    retriever.index(
        bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False
    )
    questions = [r["title"] for r in rows[:8]] + ["When was the bridge over the river built?"]
    for question in questions:
        query = _tokens([question])
        docs, scores = retriever.retrieve(
            bm25s.tokenize([question], stopwords="en", show_progress=False),
            k=len(corpus),
            show_progress=False,
        )
        want = {order[int(d)]: float(s) for d, s in zip(docs[0], scores[0], strict=True) if s > 0}
        got = dict(postings.search(query[0], len(corpus), k1=1.5, b=0.75))
        assert got.keys() == want.keys()
        for chunk, score in want.items():
            assert got[chunk] == pytest.approx(score, rel=1e-5)


def test_saved_and_loaded_postings_are_equal(tmp_path):
    postings = Postings().add(["a", "b"], [["alpha", "beta"], ["beta", "beta"]])
    postings.save(tmp_path / "bm25", {"fingerprint": "f"})
    loaded = Postings.load(tmp_path / "bm25")
    assert loaded.chunk_ids == postings.chunk_ids and loaded.terms == postings.terms
    np.testing.assert_array_equal(loaded.counts.toarray(), postings.counts.toarray())
    assert loaded.search(["beta"], 2, k1=1.2, b=0.5) == postings.search(["beta"], 2, k1=1.2, b=0.5)
    assert not (tmp_path / "bm25.tmp").exists()


def test_removing_every_chunk_leaves_nothing_to_find():
    postings = Postings().add(["a"], [["alpha"]]).remove({"a"})
    assert postings.chunk_ids == () and postings.search(["alpha"], 3, k1=1.5, b=0.75) == []
