"""``bm25``: a lexical index over the chunks (``bm25s``'s tokenizer and scoring, English
stopwords, no stemming).

The index holds each chunk's term counts (:mod:`hygraph.layers.bm25_postings`), saved
under ``<index>/bm25/``, and scores a question's terms when it is asked. When the set of
chunks changes, only the chunks added are tokenized and appended (and those deleted
dropped); the scores are those of an index built from scratch over the same chunks, since
idf and the mean length are worked out at search time.
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hygraph.layers.base import Layer, LayerConfig, chunk_set_fingerprint, register_layer
from hygraph.layers.bm25_postings import LAYOUT, Postings

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.resources import Resources

#: Seconds without a deferred write after which the postings are saved (as the matrices).
SAVE_DELAY = 1.0
SAVE_TASK = "BM25 postings"  # its name among the index's deferred writes


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

    # bm25s sets its own logger to DEBUG on import; keep its chatter out of user output
    # (once: ``setLevel`` clears every logger's cache, half a millisecond a query).
    quiet = logging.getLogger("bm25s")
    if quiet.level != logging.WARNING:
        quiet.setLevel(logging.WARNING)
    return bm25s


@register_layer
class BM25Layer(Layer):
    name = "bm25"
    description = "lexical BM25 index over the chunks (term counts), saved under <index>/bm25"
    Config = BM25LayerConfig

    config: BM25LayerConfig

    def __init__(self, config: Any = None):
        super().__init__(config)
        #: The chunks' fingerprint and their postings, as last built or loaded.
        self._loaded: tuple[str, Postings] | None = None
        #: The store's settled key when the chunks' fingerprint was last taken, and it.
        self._fingerprint: tuple[tuple[int, int], str] | None = None

    def pending(self, res: Resources) -> list[str]:
        return []  # freshness is checked against the chunk set on every use

    def update(self, res: Resources) -> int:
        """Bring the postings up to the chunks (searches load the fresh ones)."""
        all_ids = res.store.chunk_ids()
        fingerprint = chunk_set_fingerprint(all_ids)
        if self._loaded is not None and self._loaded[0] == fingerprint:
            return 0
        meta = self._saved_meta(res)
        if meta is None or meta.get("fingerprint") != fingerprint:
            with res.tracker.stage(self.stage or f"build:{self.name}"):
                self.ensure(res, all_ids)
        return 0

    def _saved_meta(self, res: Resources) -> dict[str, Any] | None:
        """The saved postings' description, when written in this layout and configuration."""
        meta_path = res.path / "bm25" / "hygraph.json"
        if not meta_path.exists():
            return None
        meta = json.loads(meta_path.read_text())
        if meta.get("layout") != LAYOUT or not self._same_config(meta.get("config")):
            return None
        return meta

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        self.ensure(res)

    def reset(self, res: Resources) -> None:
        later = getattr(res, "later", None)
        if later is not None:
            later.drop(SAVE_TASK)  # what it would write is gone with the layer
        shutil.rmtree(res.path / "bm25", ignore_errors=True)
        self._loaded = None
        self._fingerprint = None

    def ensure(self, res: Resources, all_ids: list[str] | None = None) -> Postings:
        """The postings of the current chunks (loaded, or brought up to date and saved);
        ``all_ids``: the store's chunk ids, where the caller has just read them."""
        key = res.store.settled_key()
        known, loaded = self._fingerprint, self._loaded
        if known is not None and known[0] == key and loaded is not None:
            if loaded[0] == known[1]:  # nothing written since: no read, no digest
                return loaded[1]
        all_ids = res.store.chunk_ids() if all_ids is None else all_ids
        fingerprint = chunk_set_fingerprint(all_ids)
        self._fingerprint = (key, fingerprint) if key is not None else None
        if loaded is not None and loaded[0] == fingerprint:
            return loaded[1]
        folder = res.path / "bm25"
        meta = self._saved_meta(res)
        if meta is not None and meta.get("fingerprint") == fingerprint:
            postings = Postings.load(folder)  # another process brought them up
        else:
            # The postings held here are the base when there are some (an insert in this
            # process), else the saved ones; either is brought up to the chunks.
            base = loaded[1] if loaded is not None else None
            if base is None and meta is not None:
                base = Postings.load(folder)
            postings = self._brought_up(res, base or Postings(), all_ids)
            if not res.read_only:
                meta = {"fingerprint": fingerprint, "config": self.config.to_dict()}
                self._save_later(res, postings, meta)
        self._loaded = (fingerprint, postings)
        return postings

    def _save_later(self, res: Resources, postings: Postings, meta: dict[str, Any]) -> None:
        """Write ``postings`` once writes pause (:mod:`hygraph.idle`), not at every insert.

        The saved postings only spare another process tokenizing the chunks: it checks
        their fingerprint against the store's chunks and brings them up itself when they
        are behind. Rewriting them whole cost a one-document insert 3.7 ms at 200
        documents and 14–15 ms at 5,897 chunks (``benchmarks/results/insert-cost.md``
        and ``insert-at-scale-20k.md``, last sections); a burst writes the last ones once
        (or, without an index to wait with, now)."""
        folder = res.path / "bm25"

        def save() -> None:
            from hygraph.private import tighten

            postings.save(folder, meta)
            tighten(folder)

        later = getattr(res, "later", None)
        if later is None:
            save()
        else:
            later.later(SAVE_TASK, save, SAVE_DELAY)

    def _brought_up(self, res: Resources, base: Postings, all_ids: list[str]) -> Postings:
        """``base`` without the chunks gone and with the new ones tokenized and appended
        (from nothing when the chunks kept are not in the store's order)."""
        current = set(all_ids)
        base = base.remove(set(base.chunk_ids) - current)
        if list(base.chunk_ids) != all_ids[: len(base.chunk_ids)]:
            base = Postings()
        new = all_ids[len(base.chunk_ids) :]
        if not new:
            return base
        texts = res.chunk_texts(new)
        split = bm25s_module().tokenize(
            [texts[c] for c in new],
            stopwords=self.config.stopwords,
            return_ids=False,
            show_progress=False,
        )
        return base.add(new, split)

    def _same_config(self, saved: dict[str, Any] | None) -> bool:
        mine = self.config.to_dict()
        return saved is not None and all(saved.get(k) == v for k, v in mine.items())

    def search(self, res: Resources, question: str, k: int) -> list[tuple[str, float]]:
        """``(chunk id, BM25 score)`` of the top ``k`` chunks with a positive score."""
        postings = self.ensure(res)
        query = bm25s_module().tokenize(
            [question], stopwords=self.config.stopwords, return_ids=False, show_progress=False
        )
        return postings.search(query[0], k, k1=self.config.k1, b=self.config.b)
