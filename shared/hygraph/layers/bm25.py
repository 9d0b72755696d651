"""``bm25``: a lexical index over the chunks with ``bm25s`` (English stopwords, no stemming).

The index is rebuilt from the store whenever the set of chunks has changed (well
under a second per thousand chunks) and saved under ``<index>/bm25/``, so queries
against a built index load it from disk.
"""

from __future__ import annotations

import json
import logging
import shutil
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

    def pending(self, res: Resources) -> list[str]:
        return []  # freshness is checked against the chunk set on every use

    def update(self, res: Resources) -> int:
        self.ensure(res)
        return 0

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        self.ensure(res)

    def reset(self, res: Resources) -> None:
        shutil.rmtree(res.path / "bm25", ignore_errors=True)
        self._loaded = None

    def ensure(self, res: Resources) -> tuple[Any, list[str]]:
        """The retriever over the current chunks and its chunk ids (built or loaded)."""
        all_ids = res.store.chunk_ids()
        fingerprint = chunk_set_fingerprint(all_ids)
        if self._loaded is not None and self._loaded[0] == fingerprint:
            return self._loaded[1], self._loaded[2]
        folder = res.path / "bm25"
        meta_path = folder / "hygraph.json"
        if meta_path.exists():
            meta = json.loads(meta_path.read_text())
            if meta.get("fingerprint") == fingerprint and self._same_config(meta.get("config")):
                retriever = bm25s_module().BM25.load(str(folder), show_progress=False)
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
        retriever = bm25s.BM25(k1=self.config.k1, b=self.config.b)
        if corpus:
            tokens = bm25s.tokenize(corpus, stopwords=self.config.stopwords, show_progress=False)
            retriever.index(tokens, show_progress=False)
        folder = res.path / "bm25"
        tmp = folder.with_name("bm25.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        if corpus:
            retriever.save(str(tmp), show_progress=False)
        else:
            tmp.mkdir(parents=True)
        meta = {"fingerprint": fingerprint, "chunk_ids": all_ids, "config": self.config.to_dict()}
        (tmp / "hygraph.json").write_text(json.dumps(meta))
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
        return retriever

    def search(self, res: Resources, question: str, k: int) -> list[tuple[str, float]]:
        """``(chunk id, BM25 score)`` of the top ``k`` chunks with a positive score."""
        retriever, chunk_ids = self.ensure(res)
        query = bm25s_module().tokenize(
            [question], stopwords=self.config.stopwords, return_ids=False, show_progress=False
        )
        if not chunk_ids or not query[0]:
            return []
        docs, scores = retriever.retrieve(query, k=min(k, len(chunk_ids)), show_progress=False)
        return [
            (chunk_ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0
        ]
