"""The bundled embedder on ONNX Runtime: the same vectors as PyTorch, exported once, and
PyTorch kept whenever the export cannot be used."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from hygraph.errors import ModelError
from hygraph.models import onnx_runtime
from hygraph.models.embedders import DEFAULT_EMBEDDER, SentenceTransformerEmbedder
from hygraph.models.mean_pooled import UnsupportedModel

pytest.importorskip("onnxruntime")

#: Texts of the kinds an index embeds: passages (one past the model's window), entity
#: names, fact triples, questions; with digits, accents, other scripts and blank space.
TEXTS = [
    "Cape Town\nThe No. 3 Dry Dock is now used by a boat repair cooperative. It was "
    "built in 1882 and lengthened in 1905, when the harbour was extended to the east.",
    " ".join(["Sofia is the capital and largest city of Bulgaria."] * 60),
    "Marie Curie",
    "Кизир",
    "Liège related to 1830",
    "Ruth died in 1992",
    "Who is the spouse of the performer of Let It Be?",
    "   padded   ",
    "x",
]


@pytest.fixture(scope="module")
def onnx_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("onnx")


@pytest.fixture()
def onnx_minilm(minilm, onnx_dir, monkeypatch):
    monkeypatch.setenv(onnx_runtime.ONNX_DIR_ENV, str(onnx_dir))
    return SentenceTransformerEmbedder(minilm.model_path, name=DEFAULT_EMBEDDER, runtime="onnx")


@pytest.fixture(scope="module")
def torch_minilm(minilm):
    """The bundled model on PyTorch (the reference the export must agree with)."""
    return SentenceTransformerEmbedder(minilm.model_path, name=DEFAULT_EMBEDDER, runtime="torch")


def test_vectors_agree_with_pytorch(torch_minilm, onnx_minilm):
    ours = onnx_minilm.embed(TEXTS)
    assert onnx_minilm._onnx, "the ONNX encoder was not used"
    theirs = torch_minilm.embed(TEXTS)
    assert ours.shape == theirs.shape == (len(TEXTS), 384)
    assert (ours * theirs).sum(axis=1).min() >= onnx_runtime.AGREEMENT
    # One text alone and in a batch padded to a longer one: the same vector.
    assert float(onnx_minilm.embed(["Marie Curie"])[0] @ ours[2]) >= 0.99999
    assert float(onnx_minilm.embed_query("Marie Curie") @ ours[2]) >= 0.99999


def test_the_export_is_made_once_and_reused(onnx_minilm, onnx_dir, monkeypatch):
    onnx_minilm.embed(["made once"])
    files = sorted(onnx_dir.glob("*.onnx"))
    assert len(files) == 1 and not list(onnx_dir.glob("tmp*")), "one file, no leftovers"

    def no_export(*args, **kwargs):
        raise AssertionError("exported again")

    monkeypatch.setattr(onnx_runtime, "_export", no_export)
    again = SentenceTransformerEmbedder(onnx_minilm.model_path, runtime="onnx")
    again.embed(["reused"])
    assert again._onnx and again._onnx.path == files[0]


def test_a_disagreeing_export_is_refused_and_pytorch_kept(
    minilm, torch_minilm, tmp_path, monkeypatch, caplog
):
    monkeypatch.setenv(onnx_runtime.ONNX_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(onnx_runtime, "AGREEMENT", 1.5)  # no export can reach it
    embedder = SentenceTransformerEmbedder(minilm.model_path, runtime="onnx")
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        vectors = embedder.embed(TEXTS[:3])
    assert embedder._onnx is False
    assert "stays on PyTorch" in caplog.text and "disagrees" in caplog.text
    assert not list(tmp_path.rglob("*.onnx")), "a refused export is not kept"
    np.testing.assert_allclose(vectors, torch_minilm.embed(TEXTS[:3]), atol=1e-6)


def test_a_model_the_export_cannot_handle_stays_on_pytorch(minilm, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv(onnx_runtime.ONNX_DIR_ENV, str(tmp_path))
    embedder = SentenceTransformerEmbedder(minilm.model_path, runtime="onnx")
    monkeypatch.setattr(embedder._load()[1], "pooling_mode", "cls")
    with pytest.raises(UnsupportedModel, match="mean pooling"):
        onnx_runtime.onnx_encoder(embedder._load(), minilm.model_path, 8, 384)
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        embedder.embed(["runs on PyTorch"])
    assert embedder._onnx is False and not list(tmp_path.rglob("*.onnx"))
    assert "stays on PyTorch" in caplog.text and "mean pooling" in caplog.text


def test_a_damaged_export_is_dropped_and_made_again(onnx_minilm, onnx_dir):
    onnx_minilm.embed(["first"])
    path = onnx_minilm._onnx.path
    path.write_bytes(b"not a model")
    broken = SentenceTransformerEmbedder(onnx_minilm.model_path, runtime="onnx")
    broken.embed(["falls back"])
    assert broken._onnx is False and not path.exists()
    fresh = SentenceTransformerEmbedder(onnx_minilm.model_path, runtime="onnx")
    fresh.embed(["exported again"])
    assert fresh._onnx and path.exists()


def test_the_runtime_is_chosen_by_argument_or_environment(minilm, monkeypatch):
    monkeypatch.delenv(onnx_runtime.RUNTIME_ENV, raising=False)
    assert SentenceTransformerEmbedder(minilm.model_path).runtime == "torch"
    monkeypatch.setenv(onnx_runtime.RUNTIME_ENV, "ONNX")
    assert SentenceTransformerEmbedder(minilm.model_path).runtime == "onnx"
    assert SentenceTransformerEmbedder(minilm.model_path, runtime="torch").runtime == "torch"
    monkeypatch.setenv(onnx_runtime.RUNTIME_ENV, "tensorrt")
    with pytest.raises(ModelError, match="runtime must be one of"):
        SentenceTransformerEmbedder(minilm.model_path)


def test_bf16_calls_stay_on_pytorch(onnx_minilm, monkeypatch):
    monkeypatch.setattr(onnx_minilm, "device", "cpu")
    used = []
    monkeypatch.setattr(onnx_minilm, "_onnx_encoder", lambda: used.append(1))
    onnx_minilm.embed(["in bfloat16"], precision="bf16")
    assert not used


def test_an_index_built_on_pytorch_answers_the_same_on_onnx(torch_minilm, onnx_minilm, tmp_path):
    from hygraph.index import GraphIndex
    from hygraph.ingest.documents import Document

    docs = [Document(id=f"d{i}", text=t) for i, t in enumerate(TEXTS[:2] + TEXTS[4:7])]
    GraphIndex.build(docs, tmp_path / "ix", methods=["vanilla"], embedder=torch_minilm).close()
    questions = ["Where is the dry dock?", "capital of Bulgaria", "When did Ruth die?"]
    with GraphIndex.open(tmp_path / "ix", embedder=torch_minilm) as index:
        before = [index.retrieve(q, method="vanilla", top_k=3).chunks for q in questions]
    with GraphIndex.open(tmp_path / "ix", embedder=onnx_minilm) as index:
        after = [index.retrieve(q, method="vanilla", top_k=3).chunks for q in questions]
    assert all(before) and after == before
