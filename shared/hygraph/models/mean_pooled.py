"""The forward pass of a mean-pooled BERT sentence encoder, batched as sentence-transformers does.

sentence-transformers' ``encode`` spends about 5 ms of every call on its own upkeep
(setting every module to eval mode, finding the model's device by walking its
parameters) before the forward pass: a fifth of the time of embedding one question
with all-MiniLM-L6-v2 on a CPU, and a call per question is what a query makes. For a
model of the shape this module handles (a BERT ``Transformer``, mean ``Pooling``,
optionally ``Normalize``: the bundled one), the embedders here run the same steps
themselves: texts sorted longest first and cut into batches as ``encode`` does,
tokenized by the model's own ``preprocess``, the encoder's last hidden states
averaged over the attention mask. The vectors are ``encode``'s (same batches, same
operations; ``tests/test_embedder_forward.py``). Both runtimes use it: PyTorch
(:func:`torch_forward`) and ONNX Runtime (:mod:`hygraph.models.onnx_runtime`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from hygraph.errors import ModelError


class UnsupportedModel(ModelError):
    """The model is not a mean-pooled BERT encoder (it runs through ``encode``)."""


def supported_bert(model: Any) -> Any:
    """The BERT module of a sentence-transformers ``model`` of the handled shape, else
    :class:`UnsupportedModel`: ``Transformer`` + mean ``Pooling`` (+ ``Normalize``)."""
    modules = list(model)
    names = [type(m).__name__ for m in modules]
    if names[:2] != ["Transformer", "Pooling"] or any(n != "Normalize" for n in names[2:]):
        raise UnsupportedModel(f"handles Transformer + Pooling (+ Normalize), not {names}")
    if getattr(modules[1], "pooling_mode", None) != "mean":
        raise UnsupportedModel("handles mean pooling only")
    bert = modules[0].auto_model
    if getattr(bert.config, "model_type", None) != "bert":
        raise UnsupportedModel(f"handles BERT encoders, not {bert.config.model_type!r}")
    return bert


def encode_batches(
    model: Any,
    texts: Sequence[str],
    batch_size: int,
    dim: int,
    forward: Callable[[dict[str, Any]], np.ndarray],
) -> np.ndarray:
    """Mean-pooled (not normalised) vectors of ``texts``, in their order.

    Sorted longest first (by characters, as ``encode`` sorts) and run ``batch_size`` at
    a time: each batch's ``model.preprocess`` features go to ``forward``, which returns
    its pooled rows.
    """
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        out[rows] = forward(model.preprocess([texts[i] for i in rows]))
    return out


def torch_forward(bert: Any) -> Callable[[dict[str, Any]], np.ndarray]:
    """A ``forward`` for :func:`encode_batches` running ``bert`` on PyTorch (no autograd)."""
    import torch

    device = next(bert.parameters()).device

    def forward(features: dict[str, Any]) -> np.ndarray:
        inputs = {k: v.to(device) for k, v in features.items()
                  if k in ("input_ids", "attention_mask", "token_type_ids")}  # fmt: skip
        with torch.inference_mode():
            hidden = bert(**inputs)[0]
            mask = inputs["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return pooled.float().cpu().numpy()

    return forward
