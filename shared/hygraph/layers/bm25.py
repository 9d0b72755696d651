"""``bm25``: a lexical index over the chunks with ``bm25s`` (English stopwords, no stemming).

The index is rebuilt from the store whenever the set of chunks has changed (well
under a second per thousand chunks) and saved under ``<index>/bm25/``, so queries
against a built index load it from disk. BM25 scores hold every chunk's idf, so a new
chunk changes them all and the index is built again in full; what is kept between
builds is each chunk text's tokens (the tokenizer is most of a build's time), so an
insert tokenizes only its new chunks. The ids and vocabulary are made as
``bm25s.tokenize`` makes them over the whole corpus (tokens numbered in order of first
appearance), so the index is the one a build from scratch makes.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hygraph.layers.base import Layer, LayerConfig, chunk_set_fingerprint, register_layer

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.resources import Resources


@dataclass
class BM25LayerConfig(LayerConfig):
    k1: float = 1.5  # library: term-frequency saturation (bm25s's default k1)
    b: float = 0.75  # library: document-length normalisation (bm25s's default b)
    stopwords: str = "en"  # ours: English stop words, as the benchmark data's BM25 figures


def bm25s_module() -> Any:
    """``bm25s``, imported without numba unless numba is loaded already.

    bm25s tries ``import numba`` when it is imported, for an optional backend that this
    layer does not use (it builds and loads its indexes with the numpy backend, the
    default); where numba is installed (other packages bring it) that import alone
    costs 60 MB of a query process's memory and a third of a second. It is hidden
    during bm25s's own import, so bm25s takes its fallback; a later ``import numba``
    anywhere loads it as usual.
    """
    if "bm25s" not in sys.modules and "numba" not in sys.modules:
        sys.modules["numba"] = None  # type: ignore[assignment]  # ImportError inside bm25s
        try:
            import bm25s  # noqa: F401 - imported here without numba
        finally:
            del sys.modules["numba"]
    import bm25s

    # bm25s sets its own logger to DEBUG on import; keep its chatter out of user output.
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


@register_layer
class BM25Layer(Layer):
    name = "bm25"
    description = "lexical BM25 index over the chunks (bm25s), saved under <index>/bm25"
    Config = BM25LayerConfig

    config: BM25LayerConfig

    def __init__(self, config: Any = None):
        super().__init__(config)
        self._loaded: tuple[str, Any, list[str]] | None = None
        #: The store's settled key when the chunks' fingerprint was last taken, and it.
        self._fingerprint: tuple[tuple[int, int], str] | None = None
        self._tokens: dict[str, list[str]] = {}  # chunk text → its tokens (last build's)
        #: The last build's corpus (texts in chunk order), token ids and vocabulary.
        self._numbered: tuple[list[str], list[list[int]], dict[str, int]] | None = None

    def pending(self, res: Resources) -> list[str]:
        return []  # freshness is checked against the chunk set on every use

    def update(self, res: Resources) -> int:
        """Build the index again when the chunks changed (searches load a fresh one)."""
        fingerprint = chunk_set_fingerprint(res.store.chunk_ids())
        if self._loaded is not None and self._loaded[0] == fingerprint:
            return 0
        meta = self._saved_meta(res)
        if meta is None or meta.get("fingerprint") != fingerprint:
            with res.tracker.stage(self.stage or f"build:{self.name}"):
                self.ensure(res)
        return 0

    def _saved_meta(self, res: Resources) -> dict[str, Any] | None:
        """The saved index's description, when it was built with this configuration."""
        meta_path = res.path / "bm25" / "hygraph.json"
        if not meta_path.exists():
            return None
        meta = json.loads(meta_path.read_text())
        return meta if self._same_config(meta.get("config")) else None

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        self.ensure(res)

    def reset(self, res: Resources) -> None:
        shutil.rmtree(res.path / "bm25", ignore_errors=True)
        self._loaded = None
        self._fingerprint = None
        self._tokens, self._numbered = {}, None

    def ensure(self, res: Resources) -> tuple[Any, list[str]]:
        """The retriever over the current chunks and its chunk ids (built or loaded)."""
        key = res.store.settled_key()
        known = self._fingerprint
        if known is not None and known[0] == key and self._loaded is not None:
            if self._loaded[0] == known[1]:  # nothing written since: no read, no digest
                return self._loaded[1], self._loaded[2]
        all_ids = res.store.chunk_ids()
        fingerprint = chunk_set_fingerprint(all_ids)
        self._fingerprint = (key, fingerprint) if key is not None else None
        if self._loaded is not None and self._loaded[0] == fingerprint:
            return self._loaded[1], self._loaded[2]
        folder = res.path / "bm25"
        meta = self._saved_meta(res)
        if meta is not None and meta.get("fingerprint") == fingerprint:
            retriever = (
                bm25s_module().BM25.load(str(folder), show_progress=False)
                if meta.get("indexed", bool(meta["chunk_ids"]))
                else None
            )
            self._loaded = (fingerprint, retriever, meta["chunk_ids"])
            return retriever, meta["chunk_ids"]
        retriever = self._build(res, all_ids, fingerprint)
        self._loaded = (fingerprint, retriever, all_ids)
        return retriever, all_ids

    def _same_config(self, saved: dict[str, Any] | None) -> bool:
        mine = self.config.to_dict()
        return saved is not None and all(saved.get(k) == v for k, v in mine.items())

    def _build(self, res: Resources, all_ids: list[str], fingerprint: str) -> Any:
        bm25s = bm25s_module()
        texts = res.chunk_texts(all_ids)
        corpus = [texts[c] for c in all_ids]
        tokenized = self._tokenize(bm25s, corpus) if corpus else None
        # No chunk holds an indexable word ("a b c": stopwords and single letters): there
        # is nothing to score, so no retriever (bm25s cannot index an empty vocabulary).
        indexed = tokenized is not None and any(tokenized.ids)
        retriever = bm25s.BM25(k1=self.config.k1, b=self.config.b) if indexed else None
        if retriever is not None:
            retriever.index(tokenized, show_progress=False)
        folder = res.path / "bm25"
        tmp = folder.with_name("bm25.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        if retriever is not None:
            retriever.save(str(tmp), show_progress=False)
        else:
            tmp.mkdir(parents=True)
        meta = {"fingerprint": fingerprint, "chunk_ids": all_ids, "config": self.config.to_dict(),
                "indexed": indexed}  # fmt: skip
        (tmp / "hygraph.json").write_text(json.dumps(meta))
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
        return retriever

    def _tokenize(self, bm25s: Any, corpus: list[str]) -> Any:
        """``bm25s.tokenize(corpus)``'s ids and vocabulary, tokenizing only texts new since
        the last build; when the corpus only grew at its end (an insert), the last build's
        ids and vocabulary are extended rather than made again."""
        known, last = self._tokens, self._numbered  # read once: a query thread may build too
        new = [t for t in dict.fromkeys(corpus) if t not in known]
        split = (
            bm25s.tokenize(
                new, stopwords=self.config.stopwords, return_ids=False, show_progress=False
            )
            if new
            else []
        )
        fresh = dict(zip(new, split, strict=True))
        tokens = {t: known[t] if t in known else fresh[t] for t in corpus}
        if last is not None and len(last[0]) <= len(corpus) and corpus[: len(last[0])] == last[0]:
            ids, vocab = list(last[1]), dict(last[2])
        else:
            ids, vocab = [], {}
        for text in corpus[len(ids) :]:
            ids.append([vocab.setdefault(tok, len(vocab)) for tok in tokens[text]])
        self._tokens, self._numbered = tokens, (list(corpus), ids, vocab)  # the current chunks'
        # bm25s adds its empty token to the vocabulary it is given: hand it a copy.
        return bm25s.tokenization.Tokenized(ids=list(ids), vocab=dict(vocab))

    def search(self, res: Resources, question: str, k: int) -> list[tuple[str, float]]:
        """``(chunk id, BM25 score)`` of the top ``k`` chunks with a positive score."""
        retriever, chunk_ids = self.ensure(res)
        query = bm25s_module().tokenize(
            [question], stopwords=self.config.stopwords, return_ids=False, show_progress=False
        )
        if retriever is None or not chunk_ids or not query[0]:
            return []
        docs, scores = retriever.retrieve(query, k=min(k, len(chunk_ids)), show_progress=False)
        return [
            (chunk_ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0
        ]
