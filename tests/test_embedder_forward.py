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


def _tiny_bert(folder):  # type: ignore[no-untyped-def]
    """A small random BERT saved as a sentence-transformers model (mean pooling, normalised),
    with a word-piece vocabulary of its own: no file from outside the test."""
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    words = "paris liege the belgian revolution who founded company x 1830 , : ? ##s".split()
    hf = folder / "hf"
    hf.mkdir()
    (hf / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]))
    tokenizer = BertTokenizerFast(vocab_file=str(hf / "vocab.txt"))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    BertModel(config).save_pretrained(hf)
    tokenizer.save_pretrained(hf)
    word = models.Transformer(str(hf), max_seq_length=64)
    pooling = models.Pooling(word.get_word_embedding_dimension(), pooling_mode="mean")
    SentenceTransformer(modules=[word, pooling, models.Normalize()], device="cpu").save(
        str(folder / "st")
    )
    return str(folder / "st")


def test_the_forward_pass_on_a_gpu_agrees_with_encode_and_the_cpu(tmp_path):
    """Runs where PyTorch sees a CUDA device (skipped elsewhere, as in CI)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    torch.manual_seed(0)
    path = _tiny_bert(tmp_path)
    texts = ["Paris", "Liège, 1830: the Belgian revolution", "x " * 300, "", "Who founded it?"] * 7
    gpu = SentenceTransformerEmbedder(path, device="cuda", batch_size=4, runtime="torch")
    cpu = SentenceTransformerEmbedder(path, device="cpu", batch_size=4, runtime="torch")
    assert next(gpu._load().parameters()).is_cuda
    ours = gpu.embed(texts)
    np.testing.assert_allclose(ours, _encode(gpu, texts), atol=1e-5)
    np.testing.assert_allclose(ours, cpu.embed(texts), atol=1e-4)
    np.testing.assert_allclose(gpu.embed_query(texts[1]), ours[1], atol=1e-5)


def test_packed_rows_give_the_padded_batches_vectors(small_batches, monkeypatch):
    """Several texts to a row (block-diagonal attention, positions restarting per text):
    the vectors of padded batches, over many rows and several forward passes."""
    from hygraph.models import mean_pooled

    model = small_batches._load()
    bert = supported_bert(model)
    texts = [*TEXTS, *(f"{t} {n}" for n, t in enumerate(TEXTS[:4] * 3))]
    forward = mean_pooled.torch_forward(bert)
    padded = mean_pooled.encode_batches(model, texts, 3, 384, forward)
    monkeypatch.setattr(mean_pooled, "PACK_TOKENS", 40)  # a few texts a row
    monkeypatch.setattr(mean_pooled, "PACK_ROWS", 2)  # several passes
    monkeypatch.setattr(mean_pooled, "PACK_TOKENIZE", 5)
    packed = mean_pooled.encode_packed(model, texts, 384, bert)
    np.testing.assert_allclose(packed, padded, atol=1e-5)
    unit = packed / np.linalg.norm(packed, axis=1, keepdims=True)
    ref = padded / np.linalg.norm(padded, axis=1, keepdims=True)
    assert (unit * ref).sum(1).min() > 0.999999
    np.testing.assert_allclose(small_batches.embed(texts), _encode(small_batches, texts), atol=1e-6)


def test_rows_are_packed_as_even_as_the_budget_allows():
    """An insert's passage and its short facts and names: as few rows as hold them, filled
    evenly (a pass computes every row to the widest), each text once; a text longer than
    the budget gets a row of its own length."""
    from hygraph.models.mean_pooled import pack_rows

    lengths = [102, 22, 20, 19, 17, 15, 14, 14, 13, 12, 11, 11, 10, 9, 8, 8, 7, 7, 6, 5]
    rows = pack_rows(lengths, 256)
    assert sorted(i for row in rows for i in row) == list(range(len(lengths)))
    fills = [sum(lengths[i] for i in row) for row in rows]
    assert len(rows) == 2 and max(fills) <= 256
    assert max(fills) - min(fills) <= max(lengths[1:])  # the passage's row is topped up last
    assert max(fills) < 200  # next fit would make one row of ~256 and one of ~94
    rows = pack_rows([300, 20, 20], 256)
    assert [0] in rows and max(sum([300, 20, 20][i] for i in r) for r in rows) == 300
    assert pack_rows([], 256) == []
    assert pack_rows([5], 256) == [[0]]


def test_one_text_and_an_eager_attention_run_padded(small_batches, monkeypatch):
    """A question (one text) is not packed, nor are texts where the attention would not
    take a block mask as it is."""
    from hygraph.models import mean_pooled

    def refuse(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("packed")

    monkeypatch.setattr(mean_pooled, "encode_packed", refuse)
    expected = _encode(small_batches, TEXTS)
    np.testing.assert_allclose(small_batches.embed_query(TEXTS[2]), expected[2], atol=1e-6)
    bert = supported_bert(small_batches._load())
    monkeypatch.setattr(bert.config, "_attn_implementation", "eager")
    np.testing.assert_allclose(small_batches.embed(TEXTS), expected, atol=1e-6)
