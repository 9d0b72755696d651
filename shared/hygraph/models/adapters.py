"""The shared half of embedding adapters for framework model objects.

A LlamaIndex ``BaseEmbedding`` and a LangChain ``Embeddings`` differ only in the
names of their two calls. :class:`ForeignEmbedder` does the rest once: it probes the
dimension on first use, L2-normalises (the core's vectors are cosine-ready), checks
that a batch gives one vector per text, and turns the provider's errors into a
one-line :class:`~hygraph.errors.ModelError`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hygraph.errors import ModelError


def normalise(vectors: Any) -> np.ndarray:
    """Rows scaled to unit length, as float32 (a single vector becomes one row)."""
    array = np.asarray(vectors, dtype=np.float32)
    if array.ndim == 1:
        array = array[None, :]
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    return array / np.where(norms > 0, norms, 1.0)


def one_line(err: BaseException, limit: int = 300) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ForeignEmbedder:
    """A core :class:`~hygraph.models.base.Embedder` over another library's model.

    Subclasses set ``name`` and implement :meth:`_embed_texts` and :meth:`_embed_query`.
    """

    name: str

    def __init__(self) -> None:
        self._dim: int | None = None

    def _embed_texts(self, texts: list[str]) -> Any:
        raise NotImplementedError

    def _embed_query(self, text: str) -> Any:
        raise NotImplementedError

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed_query("dimension probe").shape[0])
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        try:
            vectors = self._embed_texts(list(texts))
        except Exception as err:  # the provider's own errors, as one line
            raise ModelError(f"{self.name}: embedding failed: {one_line(err)}") from err
        out = normalise(vectors)
        if out.shape[0] != len(texts):
            raise ModelError(f"{self.name}: {len(texts)} texts gave {out.shape[0]} vectors")
        return out

    def embed_query(self, text: str) -> np.ndarray:
        try:
            vector = self._embed_query(text)
        except Exception as err:
            raise ModelError(f"{self.name}: embedding failed: {one_line(err)}") from err
        return normalise(vector)[0]
