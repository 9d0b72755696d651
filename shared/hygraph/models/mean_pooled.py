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


#: Word pieces a packed row holds (several short texts side by side; a longer text alone).
PACK_TOKENS = 256
#: Packed rows per forward pass.
PACK_ROWS = 8
#: Texts tokenized at a time (their padded ids are held until packed).
PACK_TOKENIZE = 1024


def packs(bert: Any) -> bool:
    """Whether :func:`encode_packed` can run ``bert``: its attention takes a prepared
    block mask as it is (PyTorch's SDPA; the eager path wants an additive mask)."""
    return getattr(bert.config, "_attn_implementation", None) == "sdpa"


def encode_packed(
    model: Any,
    texts: Sequence[str],
    dim: int,
    bert: Any,
    spans: Sequence[Sequence[Sequence[tuple[int, int]]]] | None = None,
) -> Any:
    """Mean-pooled (not normalised) vectors of ``texts``, several texts to a row.

    A padded batch spends the encoder's work on padding: an insert's ~16 facts of 6–22
    word pieces padded to the longest, or a bulk batch of passages of mixed lengths.
    Here each text keeps its own word pieces (``model.preprocess``, unpadded), texts are
    laid side by side in rows of up to :data:`PACK_TOKENS` (:func:`pack_rows`),
    and each attends only to itself: a block-diagonal attention mask, positions
    restarting at 0 for each text, its pooled vector the mean over its own pieces. The
    vectors are the padded batches' to float rounding (least cosine 0.9999998 on MuSiQue
    passages, facts and names; ``tests/test_embedder_forward.py``); an insert's ~16 facts
    embed in 0.5–0.9 of the time, bulk passages and facts about 1.4× faster.

    With ``spans`` (per text, its regions: each a few ``(start, end)`` character ranges),
    it returns the pair ``(vectors, pooled)``: ``pooled[i]`` holds, row by row, the mean
    of text ``i``'s outputs over the word pieces each region covers, from the same pass
    (a region whose pieces were cut off by the model's window is a row of zeros).
    """
    import torch

    device = next(bert.parameters()).device
    pieces: list[tuple[Any, Any]] = []  # per text: its ids and token types (tensors)
    for start in range(0, len(texts), PACK_TOKENIZE):
        features = model.preprocess(list(texts[start : start + PACK_TOKENIZE]))
        ids, mask = features["input_ids"], features["attention_mask"].bool()
        types = features.get("token_type_ids", torch.zeros_like(ids))
        pieces += [(ids[i][mask[i]], types[i][mask[i]]) for i in range(len(ids))]
    ranges = _token_ranges(model, texts, spans, [len(p[0]) for p in pieces]) if spans else {}
    pooled = [np.zeros((len(s), dim), dtype=np.float32) for s in spans or ()]
    rows = pack_rows([len(p[0]) for p in pieces], PACK_TOKENS)
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for start in range(0, len(rows), PACK_ROWS):
        batch = rows[start : start + PACK_ROWS]
        vectors, parts = _packed_pass(bert, batch, pieces, device, ranges)
        out[[i for row in batch for i in row]] = vectors
        for (i, k), vector in parts.items():
            pooled[i][k] = vector
    return (out, pooled) if spans is not None else out


def _token_ranges(
    model: Any,
    texts: Sequence[str],
    spans: Sequence[Sequence[Sequence[tuple[int, int]]]],
    lengths: Sequence[int],
) -> dict[int, list[tuple[int, list[int]]]]:
    """Text number → ``(region number, its word pieces)`` of each region with pieces in
    the model's window, from the tokenizer's character offsets (the same word pieces as
    ``model.preprocess``: a text whose count differs gets none)."""
    wanted = [i for i, s in enumerate(spans) if s]
    if not wanted:
        return {}
    encoded = model.tokenizer(
        [texts[i] for i in wanted], return_offsets_mapping=True, truncation=True,
        max_length=model.max_seq_length,
    )  # fmt: skip
    out: dict[int, list[tuple[int, list[int]]]] = {}
    for i, offsets in zip(wanted, encoded["offset_mapping"], strict=True):
        if len(offsets) != lengths[i]:
            continue
        bounds = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
        first, last = bounds[:, 0], bounds[:, 1]
        real = last > first  # special tokens have empty offsets
        for k, region in enumerate(spans[i]):
            hit = np.zeros(len(bounds), dtype=bool)
            for start, end in region:
                hit |= (first < end) & (last > start)
            inside = np.flatnonzero(hit & real).tolist()
            if inside:
                out.setdefault(i, []).append((k, inside))
    return out


def pack_rows(lengths: Sequence[int], budget: int) -> list[list[int]]:
    """Text numbers in rows of at most ``budget`` pieces (or the longest text's), as even as
    can be.

    As few rows as hold the pieces, each text (longest first) put in the row least full
    so far; a row more when one overflows. A pass computes every row to its widest, so
    even rows waste least: an insert's ~350 pieces are two rows of ~175, not one of 256
    and one of ~100 padded to 256.
    """
    import heapq

    if not lengths:
        return []
    budget = max(budget, *lengths)
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    count = -(-sum(lengths) // budget)
    while True:
        rows: list[list[int]] = [[] for _ in range(count)]
        heap = [(0, r) for r in range(count)]  # (pieces so far, row)
        for i in order:
            used, r = heapq.heappop(heap)
            rows[r].append(i)
            heapq.heappush(heap, (used + lengths[i], r))
        if max(used for used, _ in heap) <= budget:
            return rows
        count += 1


def _packed_pass(
    bert: Any,
    batch: list[list[int]],
    pieces: list[Any],
    device: Any,
    ranges: dict[int, list[tuple[int, list[int]]]] | None = None,
) -> tuple[np.ndarray, dict[tuple[int, int], np.ndarray]]:
    """One forward pass over the packed ``batch`` (rows of text numbers): the pooled vector
    of each text, in the batch's order, and ``(text, region number) → vector`` for the
    texts' word pieces in ``ranges``."""
    import torch

    width = max(sum(len(pieces[i][0]) for i in row) for row in batch)
    ids = torch.zeros((len(batch), width), dtype=torch.long)
    types, positions = torch.zeros_like(ids), torch.zeros_like(ids)
    owner = torch.full((len(batch), width), -1, dtype=torch.long)  # the text of each piece
    text = 0
    starts: dict[int, tuple[int, int]] = {}  # text number → (row, its first piece's column)
    for r, row in enumerate(batch):
        at = 0
        for i in row:
            n = len(pieces[i][0])
            starts[i] = (r, at)
            ids[r, at : at + n] = pieces[i][0]
            types[r, at : at + n] = pieces[i][1]
            positions[r, at : at + n] = torch.arange(n)
            owner[r, at : at + n] = text
            text, at = text + 1, at + n
    block = (owner[:, :, None] == owner[:, None, :]) & (owner[:, :, None] >= 0)
    block |= torch.eye(width, dtype=torch.bool)[None]  # padding attends to itself, not to -inf
    with torch.inference_mode():
        hidden = bert(input_ids=ids.to(device), token_type_ids=types.to(device),
                      position_ids=positions.to(device),
                      attention_mask=block[:, None].to(device))[0]  # fmt: skip
        flat = owner.reshape(-1).to(device)
        real = flat >= 0
        sums = torch.zeros((text, hidden.shape[-1]), dtype=hidden.dtype, device=device)
        sums.index_add_(0, flat[real], hidden.reshape(-1, hidden.shape[-1])[real])
        counts = torch.bincount(flat[real], minlength=text).to(hidden.dtype)
        pooled = sums / counts[:, None]
        keys, means = _region_means(hidden, width, starts, ranges or {})
    return pooled.float().cpu().numpy(), dict(zip(keys, means, strict=True))


def _region_means(
    hidden: Any,
    width: int,
    starts: dict[int, tuple[int, int]],
    ranges: dict[int, list[tuple[int, list[int]]]],
) -> tuple[list[tuple[int, int]], np.ndarray]:
    """``(text, region number)`` of each region of the texts in ``starts`` and the mean of
    ``hidden``'s rows over its word pieces, all in one gather and one sum."""
    import torch

    keys: list[tuple[int, int]] = []
    slots: list[int] = []  # per (region, piece) pair: the region's slot
    at: list[int] = []  # ... and the piece's place in the flattened pass
    for i, (row, first) in starts.items():
        for k, pieces_of in ranges.get(i, ()):
            slots += [len(keys)] * len(pieces_of)
            at += [row * width + first + j for j in pieces_of]
            keys.append((i, k))
    if not keys:
        return keys, np.zeros((0, hidden.shape[-1]), np.float32)
    flat = hidden.reshape(-1, hidden.shape[-1])
    slot = torch.tensor(slots, device=flat.device)
    sums = torch.zeros((len(keys), flat.shape[-1]), dtype=flat.dtype, device=flat.device)
    sums.index_add_(0, slot, flat[torch.tensor(at, device=flat.device)])
    counts = torch.bincount(slot, minlength=len(keys)).to(flat.dtype)
    return keys, (sums / counts[:, None]).float().cpu().numpy()
