"""The embedder's own forward pass of a mean-pooled BERT model gives ``encode``'s vectors."""

from __future__ import annotations

import numpy as np
import pytest

from hygraph.models.embedders import DEFAULT_EMBEDDER, SentenceTransformerEmbedder
from hygraph.models.mean_pooled import UnsupportedModel, supported_bert

TEXTS = [
    "Paris",
    "Who founded the company that made the first commercially available 3-D printer?",
    "Liège, 1830: the Belgian Revolution begins in Brussels.",
    "Kizir River related to Кизир",
    " ".join(["The dry dock at Saint-Nazaire was used by a boat repair cooperative."] * 40),
    "1,110 mm of precipitation a year, with 43.8 inches",
    "",
]


@pytest.fixture
def small_batches(minilm):
    """The bundled model in batches of 3, so texts of several lengths share a batch."""
    return SentenceTransformerEmbedder(
        minilm.model_path, name=DEFAULT_EMBEDDER, batch_size=3, runtime="torch"
    )


def _encode(embedder: SentenceTransformerEmbedder, texts: list[str]) -> np.ndarray:
    model = embedder._load()
    return model.encode(texts, batch_size=embedder.batch_size, normalize_embeddings=True,
                        convert_to_numpy=True, show_progress_bar=False)  # fmt: skip


def test_vectors_are_encodes_and_encode_is_not_called(small_batches, monkeypatch):
    expected = _encode(small_batches, TEXTS)
    model = small_batches._load()

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("encode ran: the model's own forward pass was expected")

    monkeypatch.setattr(model, "encode", refuse)
    ours = small_batches.embed(TEXTS)
    assert ours.shape == (len(TEXTS), 384) and ours.dtype == np.float32
    np.testing.assert_allclose(ours, expected, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(small_batches.embed_query(TEXTS[1]), expected[1], atol=1e-6)


def test_a_model_of_another_shape_runs_through_encode(small_batches, monkeypatch):
    model = small_batches._load()
    monkeypatch.setattr(model[1], "pooling_mode", "cls")
    with pytest.raises(UnsupportedModel, match="mean pooling"):
        supported_bert(model)
    calls: list[int] = []
    encode = model.encode

    def spy(texts, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(len(texts))
        return encode(texts, *args, **kwargs)

    monkeypatch.setattr(model, "encode", spy)
    vectors = small_batches.embed(TEXTS[:3])
    assert calls == [3]
    np.testing.assert_allclose(vectors, _encode(small_batches, TEXTS[:3]), atol=1e-6)
