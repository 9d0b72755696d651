"""Group summaries (layers/summaries.py) and GMM clustering with BIC (graph/algorithms/gmm.py).

The LLM here is the scripted test double of ``doubles.py``: it returns replies written
into each test, well-formed and malformed.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from doubles import ScriptedLLM

from hygraph.errors import ModelError
from hygraph.graph.algorithms.gmm import best_k_by_bic, soft_gmm_clusters
from hygraph.layers.summaries import extractive_group_summary, summarize_groups
from hygraph.models.fanout import complete_many

GROUPS = [
    ["Harrowby is a port town. Its shipyard is Aldercott.", "Aldercott builds ferries."],
    ["The Lantern Tide Festival is held in Harrowby every October."],
    ["", "   "],
]


def _res(llm: ScriptedLLM | None) -> SimpleNamespace:
    def fan_out(prompts, desc, validate=None):
        return complete_many(llm, prompts, desc=desc, progress=False, validate=validate)

    return SimpleNamespace(llm=llm, complete_many=fan_out)


def _messages(texts):
    return [{"role": "user", "content": "Summarise: " + " | ".join(texts)}]


def test_offline_summaries_are_extractive_and_never_empty_for_text():
    out = summarize_groups(_res(None), GROUPS, messages=_messages, max_words=12, desc="t")
    assert [how for _, how in out] == ["extractive"] * 3
    assert out[0][0] and out[0][0] in " ".join(GROUPS[0]) or "Aldercott" in out[0][0]
    assert out[1][0] == GROUPS[1][0]
    assert out[2][0] == ""  # a group with no text at all
    assert extractive_group_summary(["no sentence end here but words"], 3).startswith(
        "no sentence end"
    )


def test_llm_summaries_fall_back_per_group_on_failures_and_empty_replies():
    llm = ScriptedLLM(
        routes={
            "Aldercott builds": "Summary: Harrowby's shipyard Aldercott builds ferries.",
            "Lantern": ModelError("HTTP 500 after retries"),
            "Summarise:  |": "<think>nothing to say</think>",
        }
    )
    out = summarize_groups(_res(llm), GROUPS, messages=_messages, max_words=12, desc="t")
    assert out[0] == ("Harrowby's shipyard Aldercott builds ferries.", "llm")
    assert out[1] == (GROUPS[1][0], "extractive")
    assert out[2] == ("", "extractive")
    assert len(llm.calls) == 3
    forced = summarize_groups(_res(llm), GROUPS[:1], messages=_messages, max_words=12,
                              desc="t", use_llm=False)  # fmt: skip
    assert forced[0][1] == "extractive" and len(llm.calls) == 3


def test_gmm_picks_the_number_of_blobs_by_bic_and_assigns_softly():
    rng = np.random.default_rng(0)
    centres = [(0, 0), (6, 0), (0, 6)]
    x = np.vstack([rng.normal(c, 0.2, (15, 2)) for c in centres])
    assert best_k_by_bic(x, max_clusters=6) == 3
    clusters = soft_gmm_clusters(x, max_clusters=6)
    assert sorted(len(c) for c in clusters) == [15, 15, 15]
    assert sorted(sorted(c) for c in clusters)[0] == list(range(15))
    # A point half-way between two mirrored blobs joins both (posterior ~0.5 in each).
    left = rng.normal((-3, 0), 1.0, (30, 2))
    mirrored = np.vstack([left, left * [-1, 1], [[0.0, 0.0]]])
    soft = soft_gmm_clusters(mirrored, k=2, threshold=0.1)
    assert sum(len(mirrored) - 1 in c for c in soft) == 2
    # Every point is somewhere even when no posterior passes the threshold.
    assert sorted(i for c in soft_gmm_clusters(x, k=3, threshold=1.0) for i in c) == list(
        range(len(x))
    )


def test_gmm_tiny_inputs():
    assert soft_gmm_clusters(np.zeros((0, 4))) == []
    assert soft_gmm_clusters(np.ones((1, 4))) == [[0]]
    assert best_k_by_bic(np.ones((1, 4))) == 1
    assert soft_gmm_clusters(np.eye(3), k=1) == [[0, 1, 2]]


def test_unusable_summary_replies_are_not_cached(tmp_path):
    """A reply the parser refuses is this group's failure and stays out of the LLM cache,
    so the next build asks again (and may get a usable summary)."""
    from hygraph.models.cache import DiskCache
    from hygraph.models.llm import CachedLLM

    inner = ScriptedLLM(["<think>only reasoning</think>", "Summary: Aldercott builds ferries."])
    cached = CachedLLM(inner, DiskCache(tmp_path / "llm.sqlite"))
    first = summarize_groups(_res(cached), GROUPS[:1], messages=_messages, max_words=12, desc="t")
    assert first[0][1] == "extractive" and len(cached.cache) == 0
    again = summarize_groups(_res(cached), GROUPS[:1], messages=_messages, max_words=12, desc="t")
    assert again[0] == ("Aldercott builds ferries.", "llm") and len(inner.calls) == 2
