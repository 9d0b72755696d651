"""Rankings do not move: every built-in method's top-10 passages match the recorded ones.

See ``tests/rankings.py`` for the corpora and how the reference was recorded.
"""

from __future__ import annotations

import json

import pytest
from rankings import CORPORA, RECORDED, rankings


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_rankings_match_the_recorded_ones(corpus, tmp_path, minilm):
    expected = json.loads(RECORDED.read_text())[corpus]
    got = rankings(corpus, tmp_path)
    diffs = [
        (method, question)
        for method, by_question in expected.items()
        for question, passages in by_question.items()
        if got[method][question] != passages
    ]
    assert not diffs, f"{len(diffs)} rankings moved, first: {diffs[:3]}"
