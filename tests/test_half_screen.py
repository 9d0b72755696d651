"""The half-precision screen: the best rows and the extremes, exactly as float32 gives them.

Random unit matrices (with repeated rows, so that ties occur) against the float32 product
over every row; a half product that errs beyond the bound falls back to that product;
and ``relationship.fact_link`` through the screen on the hand-made graph of
``test_ppr_methods`` against the same step without it.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_ppr_methods import kg, op  # noqa: F401 - kg is a fixture

from hygraph.operators.state import State
from hygraph.vectors import half_screen
from hygraph.vectors.half_screen import exact_scores, half_rows, top_scores


def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def _matrix(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = _unit(rng.standard_normal((n, 48)))
    rows[n // 2 : n // 2 + 40] = rows[:40]  # repeated texts share a vector: ties
    return rows


def _expected(matrix: np.ndarray, query: np.ndarray, k: int):
    scores = exact_scores(matrix, query)
    order = np.lexsort((np.arange(len(scores)), -scores))[:k]
    return order, scores[order], float(scores.min()), float(scores.max())


@pytest.mark.parametrize("k", [1, 5, 50])
def test_the_screen_gives_the_float32_top_and_extremes(k):
    matrix = _matrix(6000, seed=k)
    half = half_rows(matrix, block=1000)  # several blocks
    rng = np.random.default_rng(100 + k)
    queries = [_unit(rng.standard_normal(48)) for _ in range(20)]
    queries.append(matrix[3].copy())  # a query equal to a repeated row: a tie at the top
    for q in queries:
        got = top_scores(matrix, half, q, k)
        rows, scores, low, high = _expected(matrix, q, k)
        assert got.rows.tolist() == rows.tolist()
        assert np.array_equal(got.scores, scores)  # the float32 scores, bit for bit
        assert (got.low, got.high) == (low, high)


def test_a_half_product_beyond_the_bound_falls_back_to_the_whole_product(monkeypatch):
    matrix = _matrix(5000, seed=7)
    q = _unit(np.random.default_rng(8).standard_normal(48))
    real = half_screen._half_product

    def drifting(half, query):  # as a kernel that summed in float16 might
        out = real(half, query)
        out[::7] += 0.01
        return out

    monkeypatch.setattr(half_screen, "_half_product", drifting)
    calls = []
    monkeypatch.setattr(half_screen, "exact_scores", lambda m, v: calls.append(len(m)) or
                        np.einsum("ij,j->i", m, v))  # fmt: skip
    got = top_scores(matrix, half_rows(matrix), q, 5)
    assert calls[-1] == len(matrix)  # the whole float32 product was read
    rows, scores, low, high = _expected(matrix, q, 5)
    assert got.rows.tolist() == rows.tolist() and (got.low, got.high) == (low, high)


@pytest.mark.parametrize("n, k, with_half", [(100, 5, True), (6000, 5, False), (6000, 7000, True),
                                             (6000, 0, True), (0, 5, True)])  # fmt: skip
def test_small_matrices_no_half_copy_and_deep_k_read_the_float32_product(n, k, with_half):
    matrix = _matrix(n, seed=1) if n else np.zeros((0, 48), dtype=np.float32)
    q = _unit(np.random.default_rng(2).standard_normal(48))
    got = top_scores(matrix, half_rows(matrix) if with_half else None, q, k)
    if n == 0:
        assert got.rows.size == 0
        return
    rows, scores, low, high = _expected(matrix, q, k if k > 0 else n)
    assert got.rows.tolist() == rows.tolist()
    assert (got.low, got.high) == (low, high)


def test_fact_link_through_the_screen_ranks_as_without_it(kg, monkeypatch):  # noqa: F811
    question = "Which river does Lake Corva feed?"
    plain = State(question, top_k=3)
    op("relationship.fact_link", kg.res, plain, k=2)
    monkeypatch.setattr(half_screen, "SCREEN_FROM", 0)
    read = []
    real = half_screen._half_product
    monkeypatch.setattr(
        half_screen, "_half_product", lambda h, q: read.append(h.dtype) or real(h, q)
    )
    screened = State(question, top_k=3)
    op("relationship.fact_link", kg.res, screened, k=2)
    assert [(r.id, r.value, r.cosine) for r in screened.relationships] == [
        (r.id, r.value, r.cosine) for r in plain.relationships
    ]
    assert read == [np.float16]


def test_rows_of_a_mapped_matrix_are_read_from_its_file(tmp_path, monkeypatch):
    """The rescored rows come from the file (its pages stay out of the process's memory),
    equal to the map's; a view of the map, or a file removed since, reads the map."""
    matrix = _matrix(500, seed=4)
    np.save(tmp_path / "m.npy", matrix)
    mapped = np.load(tmp_path / "m.npy", mmap_mode="r")
    rows = np.array([499, 0, 250, 7])
    assert np.array_equal(half_screen._rows(mapped, rows), matrix[rows])
    assert np.array_equal(half_screen._rows(mapped[100:], rows[2:]), matrix[100:][rows[2:]])
    (tmp_path / "m.npy").unlink()
    assert np.array_equal(half_screen._rows(mapped, rows), matrix[rows])
    monkeypatch.setattr(half_screen, "SCREEN_FROM", 0)
    np.save(tmp_path / "m.npy", matrix)
    mapped = np.load(tmp_path / "m.npy", mmap_mode="r")
    got = top_scores(mapped, half_rows(matrix), matrix[9], 3)
    assert got.rows.tolist() == _expected(matrix, matrix[9], 3)[0].tolist()
