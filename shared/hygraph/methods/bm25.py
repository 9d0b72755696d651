"""``bm25``: lexical top-k over chunks with ``bm25s`` (English stopwords, no stemming).

The BM25 index is rebuilt from the graph store whenever the set of chunks has
changed (it takes well under a second per thousand chunks) and saved under
``<index>/bm25/``, so queries against a built index load it from disk.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hygraph.methods.base import Method, MethodConfig, register
from hygraph.retrieval.context import Context

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.index import GraphIndex


@dataclass
class BM25Config(MethodConfig):
    top_k: int = 5
    k1: float = 1.5  # bm25s default
    b: float = 0.75  # bm25s default
    stopwords: str = "en"  # as in the reference BM25 figures of the benchmark data


def _bm25s() -> Any:
    import bm25s

    # bm25s sets its own logger to DEBUG on import; keep its chatter out of user output.
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s


def _fingerprint(chunk_ids: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(chunk_ids).encode()).hexdigest()[:16]


@register
class BM25(Method):
    name = "bm25"
    Config = BM25Config
    description = "lexical BM25 over chunks (bm25s)"

    def __init__(self, config: Any = None):
        super().__init__(config)
        self._loaded: tuple[str, Any, list[str]] | None = None

    def _dir(self, index: GraphIndex):
        return index.path / "bm25"

    def build(self, index: GraphIndex, chunk_ids: Sequence[str]) -> None:
        self._ensure(index)

    def delete(self, index: GraphIndex, removed: DeleteResult) -> None:
        self._ensure(index)

    def _ensure(self, index: GraphIndex) -> tuple[Any, list[str]]:
        bm25s = _bm25s()

        all_ids = index.store.chunk_ids()
        fingerprint = _fingerprint(all_ids)
        if self._loaded is not None and self._loaded[0] == fingerprint:
            return self._loaded[1], self._loaded[2]
        folder = self._dir(index)
        meta_path = folder / "hygraph.json"
        if meta_path.exists():
            meta = json.loads(meta_path.read_text())
            if (
                meta.get("fingerprint") == fingerprint
                and meta.get("config") == self.config.to_dict()
            ):
                retriever = bm25s.BM25.load(str(folder), show_progress=False)
                self._loaded = (fingerprint, retriever, meta["chunk_ids"])
                return retriever, meta["chunk_ids"]
        texts = index.chunk_texts(all_ids)
        corpus = [texts[c] for c in all_ids]
        retriever = bm25s.BM25(k1=self.config.k1, b=self.config.b)
        if corpus:
            tokens = bm25s.tokenize(corpus, stopwords=self.config.stopwords, show_progress=False)
            retriever.index(tokens, show_progress=False)
        tmp = folder.with_name("bm25.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        if corpus:
            retriever.save(str(tmp), show_progress=False)
        else:
            tmp.mkdir(parents=True)
        (tmp / "hygraph.json").write_text(
            json.dumps(
                {"fingerprint": fingerprint, "chunk_ids": all_ids, "config": self.config.to_dict()}
            )
        )
        shutil.rmtree(folder, ignore_errors=True)
        tmp.rename(folder)
        self._loaded = (fingerprint, retriever, all_ids)
        return retriever, all_ids

    def retrieve(self, index: GraphIndex, question: str, top_k: int | None = None) -> Context:
        bm25s = _bm25s()

        k = top_k or self.config.top_k
        retriever, chunk_ids = self._ensure(index)
        context = Context()
        query = bm25s.tokenize(
            [question], stopwords=self.config.stopwords, return_ids=False, show_progress=False
        )
        if not chunk_ids or not query[0]:
            context.add("Passages", [])
            return context
        docs, scores = retriever.retrieve(query, k=min(k, len(chunk_ids)), show_progress=False)
        ranked = [
            (chunk_ids[int(d)], float(s)) for d, s in zip(docs[0], scores[0], strict=True) if s > 0
        ]
        items = index.chunk_evidence(ranked)
        context.add("Passages", items)
        return context
