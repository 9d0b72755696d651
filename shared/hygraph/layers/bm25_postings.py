"""Term counts of every chunk, scored as BM25 when a question comes, so that adding a chunk
costs only that chunk.

Why not a ``bm25s`` index: ``bm25s`` stores each (term, chunk) pair's finished BM25
weight, and those weights hold every term's idf and the corpus's mean length, so one new
chunk changes them all and the whole index is built again: 7 s per insert at 25,000
chunks, growing with the corpus. Here the stored values are raw counts (a sparse chunks ×
terms matrix, column-major so a question reads only its terms' columns), and the weights
are worked out for those columns alone at search time with ``bm25s``'s own formulas
(its default Lucene variant: ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``, ``tf / (tf +
k1 (1 - b + b |d| / avgdl))``), so the scores are the ones a ``bm25s`` index of the same
chunks gives (``tests/test_bm25_postings.py`` compares them). Tokens still come from
``bm25s.tokenize``.

A :class:`Postings` is never changed in place (a query thread may hold it while a build
makes the next one): :meth:`Postings.add` and :meth:`Postings.remove` return a new one.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from hygraph.private import tighten

#: Version of the files :meth:`Postings.save` writes (1 was a ``bm25s`` index; 2 kept the
#: chunk ids in ``hygraph.json``, which every freshness check reads).
LAYOUT = 3


@dataclass(frozen=True)
class Postings:
    """Chunks (rows, in the order added) × terms (columns) of token counts."""

    chunk_ids: tuple[str, ...] = ()
    terms: tuple[str, ...] = ()
    counts: sp.csc_matrix = field(default_factory=lambda: sp.csc_matrix((0, 0), dtype=np.float32))
    #: term → column; derived from ``terms``.
    columns: dict[str, int] = field(default_factory=dict, compare=False)

    def _derived(self) -> tuple[np.ndarray, np.ndarray]:
        """(tokens per chunk — BM25's |d| —, document frequency per term), computed once
        per object."""
        cached = self.__dict__.get("_cache")
        if cached is None:
            lengths = np.asarray(self.counts.sum(axis=1), dtype=np.float64).ravel()
            df = np.diff(self.counts.indptr).astype(np.float64)
            cached = (lengths, df)
            object.__setattr__(self, "_cache", cached)
        return cached

    def add(self, chunk_ids: Sequence[str], tokens: Sequence[Sequence[str]]) -> Postings:
        """These postings and ``chunk_ids`` (new ids, one token list each) after them."""
        terms, columns = list(self.terms), dict(self.columns)
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        for row, toks in enumerate(tokens):
            for term, n in Counter(toks).items():
                col = columns.get(term)
                if col is None:
                    col = columns[term] = len(terms)
                    terms.append(term)
                rows.append(row)
                cols.append(col)
                vals.append(float(n))
        shape = (len(chunk_ids), len(terms))
        new = sp.csc_matrix((np.asarray(vals, np.float32), (rows, cols)), shape=shape)
        old = self.counts.copy()
        old.resize((len(self.chunk_ids), len(terms)))  # new terms: empty columns
        counts = sp.vstack([old, new], format="csc", dtype=np.float32)
        return Postings((*self.chunk_ids, *chunk_ids), tuple(terms), counts, columns)

    def remove(self, chunk_ids: set[str]) -> Postings:
        """These postings without ``chunk_ids`` (terms stay, with fewer chunks)."""
        keep = [i for i, c in enumerate(self.chunk_ids) if c not in chunk_ids]
        if len(keep) == len(self.chunk_ids):
            return self
        counts = sp.csc_matrix(self.counts.tocsr()[keep], dtype=np.float32)
        ids = tuple(self.chunk_ids[i] for i in keep)
        return Postings(ids, self.terms, counts, self.columns)  # never changed in place

    def search(
        self, tokens: Sequence[str], k: int, *, k1: float, b: float
    ) -> list[tuple[str, float]]:
        """``(chunk id, BM25 score)`` of the ``k`` best chunks with a positive score; a
        token asked twice counts twice, as in ``bm25s``; ties keep the order added."""
        n = len(self.chunk_ids)
        wanted = [self.columns[t] for t in tokens if t in self.columns]
        if not n or not wanted or k <= 0:
            return []
        lengths, df = self._derived()
        norm = k1 * ((1 - b) + b * lengths / lengths.mean())
        indptr, indices, data = self.counts.indptr, self.counts.indices, self.counts.data
        scores = np.zeros(n, dtype=np.float64)
        for col in wanted:
            lo, hi = indptr[col], indptr[col + 1]
            if lo == hi:
                continue
            rows, tf = indices[lo:hi], data[lo:hi].astype(np.float64)
            idf = np.log(1.0 + (n - df[col] + 0.5) / (df[col] + 0.5))
            np.add.at(scores, rows, idf * tf / (tf + norm[rows]))
        hits = np.flatnonzero(scores > 0)
        if len(hits) > k:
            hits = hits[np.argpartition(-scores[hits], k - 1)[:k]]
        order = hits[np.lexsort((hits, -scores[hits]))]
        return [(self.chunk_ids[i], float(scores[i])) for i in order]

    def save(self, folder: Path, meta: dict[str, Any]) -> None:
        """Write to ``folder`` (replacing it whole: a reader sees the old or the new)."""
        tmp = folder.with_name(folder.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        sp.save_npz(tmp / "counts.npz", self.counts, compressed=False)
        (tmp / "terms.json").write_text(json.dumps(self.terms))
        (tmp / "chunk_ids.json").write_text(json.dumps(self.chunk_ids))
        (tmp / "hygraph.json").write_text(json.dumps({**meta, "layout": LAYOUT}))
        tighten(tmp)  # the owner's alone before the folder is seen under its name
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)

    @classmethod
    def load(cls, folder: Path) -> Postings:
        """What :meth:`save` wrote to ``folder``."""
        counts = sp.csc_matrix(sp.load_npz(folder / "counts.npz"), dtype=np.float32)
        terms = tuple(json.loads((folder / "terms.json").read_text()))
        chunk_ids = tuple(json.loads((folder / "chunk_ids.json").read_text()))
        return cls(chunk_ids, terms, counts, {t: i for i, t in enumerate(terms)})
