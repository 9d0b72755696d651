"""``tfidf``: a TF-IDF matrix over the chunks (the 002 framework's TF-IDF node index, KGP).

Term weights come from scikit-learn's ``TfidfVectorizer`` (its defaults: lower case,
words of two or more letters, smoothed idf, l2-normalised rows; English stop words
removed by default). A question is scored by the cosine of its TF-IDF vector with
each chunk's row.

Like ``bm25``, the matrix is a property of the whole chunk set (an insert changes every
idf), so it is rebuilt whenever the set of chunks has changed, after inserts and
deletes alike, and kept under ``<index>/tfidf/`` without pickle: the vocabulary and
chunk ids as JSON, the idf as ``.npy`` and the matrix as a SciPy ``.npz``. A build is
written to a temporary folder and renamed into place, so a build killed half-way
leaves the previous matrix (which no longer matches the chunks, so the next use
rebuilds).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from hygraph.layers.base import Layer, LayerConfig, chunk_set_fingerprint, register_layer

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.resources import Resources

FOLDER = "tfidf"


@dataclass
class TfidfLayerConfig(LayerConfig):
    tfidf_stop_words: str = "english"  # ours: scikit-learn's English list ("none": keep all)
    tfidf_sublinear_tf: bool = False  # scikit-learn default (1 + log tf when true)
    tfidf_max_ngram: int = 1  # scikit-learn default: single words


@dataclass
class TfidfMatrix:
    """A fitted TF-IDF index: vocabulary, idf, the chunk × term matrix and its chunk ids."""

    vocabulary: dict[str, int]
    idf: np.ndarray
    matrix: Any  # scipy.sparse.csr_matrix, l2-normalised rows
    chunk_ids: list[str]


@register_layer
class TfidfLayer(Layer):
    name = "tfidf"
    description = "TF-IDF matrix over the chunks (scikit-learn), saved under <index>/tfidf"
    Config = TfidfLayerConfig

    config: TfidfLayerConfig

    def __init__(self, config: Any = None):
        super().__init__(config)
        self._loaded: tuple[str, TfidfMatrix] | None = None
        self._analyzer: Any = None

    def pending(self, res: Resources) -> list[str]:
        return []  # freshness is checked against the chunk set on every use

    def update(self, res: Resources) -> int:
        self.ensure(res)
        return 0

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        self.ensure(res)

    def reset(self, res: Resources) -> None:
        shutil.rmtree(res.path / FOLDER, ignore_errors=True)
        self._loaded = None

    def _vectorizer(self, vocabulary: dict[str, int] | None = None) -> Any:
        from sklearn.feature_extraction.text import TfidfVectorizer

        stop = None if self.config.tfidf_stop_words == "none" else self.config.tfidf_stop_words
        return TfidfVectorizer(
            stop_words=stop,
            sublinear_tf=self.config.tfidf_sublinear_tf,
            ngram_range=(1, self.config.tfidf_max_ngram),
            vocabulary=vocabulary,
            dtype=np.float32,
        )

    def ensure(self, res: Resources) -> TfidfMatrix:
        """The matrix over the current chunks (loaded from disk or built)."""
        all_ids = res.store.chunk_ids()
        fingerprint = chunk_set_fingerprint(all_ids)
        if self._loaded is not None and self._loaded[0] == fingerprint:
            return self._loaded[1]
        folder = res.path / FOLDER
        meta_path = folder / "meta.json"
        found = None
        if meta_path.exists():
            meta = json.loads(meta_path.read_text())
            same = meta.get("config") == self.config.to_dict()
            if meta.get("fingerprint") == fingerprint and same:
                found = self._load(folder, meta)
        if found is None:
            found = self._build(res, all_ids, fingerprint)
        self._loaded = (fingerprint, found)
        return found

    def _load(self, folder: Any, meta: dict[str, Any]) -> TfidfMatrix:
        from scipy import sparse

        idf = np.load(folder / "idf.npy", allow_pickle=False)
        matrix = sparse.load_npz(folder / "matrix.npz").tocsr()
        return TfidfMatrix(meta["vocabulary"], idf, matrix, meta["chunk_ids"])

    def _build(self, res: Resources, all_ids: list[str], fingerprint: str) -> TfidfMatrix:
        from scipy import sparse

        texts = res.chunk_texts(all_ids)
        corpus = [texts[c] for c in all_ids]
        vocabulary: dict[str, int] = {}
        idf = np.zeros(0, dtype=np.float32)
        matrix = sparse.csr_matrix((len(corpus), 0), dtype=np.float32)
        if corpus:
            vectorizer = self._vectorizer()
            try:
                matrix = vectorizer.fit_transform(corpus).tocsr()
                vocabulary = {str(t): int(i) for t, i in vectorizer.vocabulary_.items()}
                idf = np.asarray(vectorizer.idf_, dtype=np.float32)
            except ValueError:  # no term at all (every chunk only stop words)
                pass
        folder = res.path / FOLDER
        tmp = folder.with_name(f"{FOLDER}.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        np.save(tmp / "idf.npy", idf, allow_pickle=False)
        sparse.save_npz(tmp / "matrix.npz", matrix)
        meta = {"fingerprint": fingerprint, "chunk_ids": all_ids, "vocabulary": vocabulary,
                "config": self.config.to_dict()}  # fmt: skip
        (tmp / "meta.json").write_text(json.dumps(meta))
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
        return TfidfMatrix(vocabulary, idf, matrix, all_ids)

    def query_vector(self, found: TfidfMatrix, text: str) -> np.ndarray:
        """The l2-normalised TF-IDF vector of ``text`` over the fitted vocabulary."""
        if self._analyzer is None:
            self._analyzer = self._vectorizer().build_analyzer()
        vector = np.zeros(len(found.vocabulary), dtype=np.float32)
        for term in self._analyzer(text):
            position = found.vocabulary.get(term)
            if position is not None:
                vector[position] += 1.0
        if self.config.tfidf_sublinear_tf:
            vector[vector > 0] = 1.0 + np.log(vector[vector > 0])
        vector *= found.idf
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm > 0 else vector

    def search(self, res: Resources, text: str, k: int) -> list[tuple[str, float]]:
        """``(chunk id, cosine)`` of the top ``k`` chunks with a positive TF-IDF score."""
        found = self.ensure(res)
        if k <= 0 or not found.vocabulary:
            return []
        scores = np.asarray(found.matrix @ self.query_vector(found, text)).ravel()
        positive = np.flatnonzero(scores > 0)
        order = positive[np.lexsort((positive, -scores[positive]))][:k]
        return [(found.chunk_ids[int(i)], float(scores[i])) for i in order]
