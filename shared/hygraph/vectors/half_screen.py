"""The best ``k`` cosines of a query to a whole unit matrix, and its least and greatest,
read at half precision and rescored exactly.

Scoring every row of a float32 matrix reads all of it: 51 MB for 33,000 facts of 384
dimensions, 5.5 ms a query on this kind of machine, where the time is the memory read,
not the arithmetic. A float16 copy is half the bytes, and PyTorch's half-precision
matrix-vector product (float32 accumulation) reads it in 1.8 ms. Its scores are not
the float32 ones, so they only choose *candidates*, whose float32 scores are then
computed from their own rows (a few dozen rows of the float32 matrix):

* every row and the query are unit vectors, so each half-precision score is within
  :data:`ERROR` of the float32 score: rounding each of the two factors to float16
  (relative ``2⁻¹¹`` each, ``|r|·|q| = 1``), summing 384 products in float32, and
  rounding the result to float16 add up to about 1.6e-3;
* so every row whose float32 score is among the best ``k`` has a half score at least
  the ``k``-th best half score minus ``2 · ERROR``, and the row with the least float32
  score has a half score at most the least half score plus ``2 · ERROR``.

Rescoring every row inside those two windows gives exactly the top ``k`` (ties by
position, as :func:`numpy.argsort` with a stable sort gives them), the greatest and
the least score that the float32 product over every row gives. Where a rescored
candidate's half score is further than :data:`ERROR` from its float32 score (a
PyTorch build that summed in float16 would do that), the whole float32 product is
used instead.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

#: Bound on |half-precision score - float32 score| for unit vectors (see above), with room.
ERROR = 2e-3
#: Below this many rows the float32 product is read whole (too short to pay).
SCREEN_FROM = 4_096


@dataclass(frozen=True)
class TopScores:
    """The best ``k`` rows (best first), their float32 scores, and the least and
    greatest float32 score over every row."""

    rows: np.ndarray
    scores: np.ndarray
    low: float
    high: float


def half_rows(matrix: np.ndarray, block: int = 65_536) -> np.ndarray:
    """``matrix`` as float16, converted a block of rows at a time (PyTorch's conversion:
    the same values as numpy's, about 4 times faster; 13 against 49 ms at 33,000 rows)."""
    import torch

    out = np.empty(matrix.shape, dtype=np.float16)
    for start in range(0, len(matrix), block):
        rows = np.ascontiguousarray(matrix[start : start + block], dtype=np.float32)
        if not rows.flags.writeable:  # a read-only map: torch wants memory it may write
            rows = rows.copy()
        out[start : start + block] = torch.from_numpy(rows).to(torch.float16).numpy()
    return out


def exact_scores(matrix: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each row of ``matrix`` times ``query``, float32, on one thread."""
    # einsum, not ``@``: BLAS would run this on every core and leave its threads spinning
    # afterwards, which slowed the next query's embedding by a third on 2 cores.
    return np.einsum("ij,j->i", matrix, query)


def _rows(matrix: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``matrix[rows]``, read from the file with positioned reads where ``matrix`` maps one.

    Through the map, each scattered row brings its page into this process's resident
    memory, and over many queries the whole float32 file would be resident (42 of 51 MB
    after 100 queries at 33,000 facts): the memory the half copy is there to save. A
    read goes through the page cache, which is not the process's. Where the file is gone
    (a newer matrix replaced it; the map still holds the old one), the map is read.
    """
    import mmap
    import os

    if not isinstance(matrix, np.memmap) or not isinstance(matrix.base, mmap.mmap):
        return np.asarray(matrix[rows])
    out = np.empty((len(rows), matrix.shape[1]), dtype=matrix.dtype)
    width = matrix.shape[1] * matrix.itemsize
    try:
        fd = os.open(matrix.filename, os.O_RDONLY)
    except (OSError, TypeError):
        return np.asarray(matrix[rows])
    try:
        for i, row in enumerate(rows.tolist()):
            if os.preadv(fd, [memoryview(out[i]).cast("B")], matrix.offset + row * width) != width:
                return np.asarray(matrix[rows])
    finally:
        os.close(fd)
    return out


def _best(scores: np.ndarray, positions: np.ndarray, k: int) -> np.ndarray:
    """Indices into ``scores`` of the ``k`` best, best first, ties by ``positions``."""
    order = np.lexsort((positions, -scores))
    return order[:k] if k > 0 else order


def _half_product(half: np.ndarray, query: np.ndarray) -> np.ndarray | None:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch comes with the bundled embedder
        return None
    with warnings.catch_warnings():  # a read-only mapped file: read here, never written
        warnings.simplefilter("ignore", UserWarning)
        rows = torch.from_numpy(half)
    out = torch.mv(rows, torch.from_numpy(query.astype(np.float16)))
    return out.numpy().astype(np.float32)


def top_scores(matrix: np.ndarray, half: np.ndarray | None, query: np.ndarray, k: int) -> TopScores:
    """The best ``k`` rows of ``matrix`` (unit rows, float32) by their product with the
    unit ``query``, with their scores and the least and greatest score, exactly as the
    float32 product over every row gives them; ``half`` (``matrix`` as float16, or None)
    is read to choose the rows to rescore (see the module docstring)."""
    n = len(matrix)
    q = np.asarray(query, dtype=np.float32).ravel()
    screen = half is not None and n >= SCREEN_FROM and 0 < k < n
    approx = _half_product(half, q) if screen and half is not None else None
    if approx is not None:
        kth = float(np.partition(approx, n - k)[n - k])
        floor = float(approx.min())
        top = np.flatnonzero(approx >= kth - 2 * ERROR)
        bottom = np.flatnonzero(approx <= floor + 2 * ERROR)
        exact_top = exact_scores(_rows(matrix, top), q)
        exact_bottom = exact_scores(_rows(matrix, bottom), q)
        if (
            np.abs(approx[top] - exact_top).max() <= ERROR
            and np.abs(approx[bottom] - exact_bottom).max() <= ERROR
        ):
            best = _best(exact_top, top, k)
            return TopScores(
                rows=top[best], scores=exact_top[best],
                low=float(exact_bottom.min()), high=float(exact_top.max()),
            )  # fmt: skip
    scores = exact_scores(matrix, q)
    if n == 0:
        return TopScores(np.zeros(0, dtype=np.int64), scores, 0.0, 0.0)
    best = top_positions(scores, k)
    return TopScores(best, scores[best], float(scores.min()), float(scores.max()))


def top_positions(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` best scores, best first (ties: earlier position first)."""
    if 0 < k < len(scores):
        part = np.argpartition(-scores, k - 1)[:k]
        return part[np.lexsort((part, -scores[part]))]
    return np.argsort(-scores, kind="stable")
