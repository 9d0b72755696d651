"""KGP's agent: an LLM-guided walk over the passage graph from the TF-IDF seed passages.

KGP (Wang et al., AAAI 2024) answers multi-document questions by reading a graph of
passages: it seeds with the passages nearest to the question by TF-IDF, and an LLM
reasons, from the question and the passages read so far, about what to fetch next
among the passages linked to them (spec 002 §4.6, [M Exp.3]). The framework's
reference code takes one hop: one LLM call per seed asking what evidence is still
needed, then the ``k_nei`` = 3 linked passages nearest by TF-IDF to the question plus
that sentence.

:func:`walk` runs it in rounds, every round's calls through the shared LLM fan-out
(:meth:`~hygraph.resources.Resources.complete_many`: bounded concurrency, the LLM cache,
the cost report):

* round 1 asks, for each seed with an unread linked passage, the traversal prompt
  (:mod:`hygraph.prompts.kgp`); ``select="llm"`` lists the ``candidates`` linked passages
  nearest to the question (TF-IDF) and the model names up to ``k_nei`` of them;
  ``select="tfidf"`` (the reference code) asks only what is missing and takes the
  ``k_nei`` linked passages nearest to the question plus that sentence;
* each later round does the same from the passages the previous one picked, showing the
  model the path read so far, until ``depth`` rounds (1: the reference code's one hop).

Bounds: ``depth`` rounds, ``max_calls`` calls and ``max_tokens`` tokens per question
(a prompt is sent only while its estimated tokens still fit), and a passage is read once.
A reply that cannot be read (no JSON, an empty reply, a failed call) or that names only
labels that were not offered ends its branch, and the walk stops after that round, with
the passages found so far; unknown labels next to known ones are dropped. ``state.chunks``
becomes the passages in reading order: each seed (TF-IDF order), then what was read from
it, depth first. ``state.subgraph["kgp"]`` records calls, tokens, picks and why the walk
stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from hygraph.errors import ConfigError
from hygraph.graph.kinds import EdgeKind
from hygraph.operators.registry import operator

if TYPE_CHECKING:
    from hygraph.layers.tfidf import TfidfLayer, TfidfMatrix
    from hygraph.operators.state import State
    from hygraph.resources import Resources

log = logging.getLogger("hygraph")

SELECT_MODES = ("llm", "tfidf")
PASSAGE_EDGES = (EdgeKind.PASSAGE_SHARED, EdgeKind.PASSAGE_SIMILAR)
NO_LLM = (
    "kgp needs an LLM at query time (its retrieval is an LLM agent): pass llm=... (or --llm "
    "MODEL), or set OPENAI_MODEL (and OPENAI_BASE_URL for a local server)"
)


class _Scorer:
    """TF-IDF cosines of chunks to a text, over the ``tfidf`` layer's matrix."""

    def __init__(self, res: Resources) -> None:
        self.layer: TfidfLayer = res.layer("tfidf")
        self.found: TfidfMatrix = self.layer.ensure(res)
        self.rows = {c: n for n, c in enumerate(self.found.chunk_ids)}

    def rank(self, text: str, chunk_ids: Sequence[str]) -> list[str]:
        """``chunk_ids`` by cosine to ``text``, best first (ties: the given order)."""
        if not self.found.vocabulary or not chunk_ids:
            return list(chunk_ids)
        query = self.layer.query_vector(self.found, text)
        rows = [self.rows.get(c, -1) for c in chunk_ids]
        known = [r for r in rows if r >= 0]
        scores = np.zeros(len(rows))
        if known:
            found = np.asarray(self.found.matrix[known] @ query).ravel()
            scores[[n for n, r in enumerate(rows) if r >= 0]] = found
        order = sorted(range(len(rows)), key=lambda n: (-scores[n], n))
        return [chunk_ids[n] for n in order]


def _neighbours(res: Resources, state: State, chunk_id: str) -> list[str]:
    """Chunks joined to ``chunk_id`` in the passage graph (shared entities first)."""
    view = state.view(res)
    found: list[str] = []
    for kind in PASSAGE_EDGES:
        links = view.links(kind)
        found += links.out.get(chunk_id, []) + links.into.get(chunk_id, [])
    return list(dict.fromkeys(found))


@operator("chunk.kgp", needs=("tfidf", "passage-graph"))
def walk(
    res: Resources,
    state: State,
    *,
    k_nei: int = 3,
    depth: int = 1,
    max_calls: int = 30,
    max_tokens: int = 40000,
    select: str = "llm",
    candidates: int = 5,
    passage_words: int = 300,
    snippet_words: int = 60,
) -> None:
    """An LLM-guided walk over the passage graph from the ranked chunks (KGP's agent).

    See the module docstring: ``state.chunks`` are the seeds and become the passages in
    reading order. Needs an LLM (a one-line error without one).
    """
    from hygraph.ingest.tokenizer import default_tokenizer
    from hygraph.prompts.kgp import next_step_messages, parse_next_step

    if select not in SELECT_MODES:
        raise ConfigError(f"kgp select must be one of {', '.join(SELECT_MODES)}")
    llm = res.llm
    if llm is None:
        raise ConfigError(NO_LLM)
    seeds = list(dict.fromkeys(c for c, _ in state.chunks))
    record: dict[str, Any] = {"calls": 0, "tokens": 0, "picked": {}, "unknown_labels": 0,
                              "stopped": "no seeds" if not seeds else "done"}  # fmt: skip
    state.subgraph["kgp"] = record
    if not seeds:
        return
    scorer = _Scorer(res)
    tok = default_tokenizer()
    visited = set(seeds)
    paths: dict[str, list[str]] = {c: [c] for c in seeds}
    frontier = seeds
    for level in range(max(0, depth)):
        jobs = []  # (passage, candidates offered or ranked later)
        for chunk_id in frontier:
            unread = [n for n in _neighbours(res, state, chunk_id) if n not in visited]
            if unread:
                ranked = scorer.rank(state.question, unread)
                jobs.append((chunk_id, ranked[:candidates] if select == "llm" else ranked))
        if not jobs:
            record["stopped"] = "done"
            break
        texts = res.chunk_texts({c for p, cands in jobs for c in [*paths[p], *cands]})
        prompts, estimate = [], 0
        for chunk_id, cands in jobs:
            shown = [texts.get(c, "") for c in cands] if select == "llm" else []
            messages = next_step_messages(
                state.question, [texts.get(c, "") for c in paths[chunk_id]], shown, k=k_nei,
                passage_words=passage_words, snippet_words=snippet_words,
            )  # fmt: skip
            cost = sum(tok.count(m["content"]) for m in messages)
            if record["calls"] + len(prompts) >= max_calls:
                record["stopped"] = "max_calls"
                break
            if record["tokens"] + estimate + cost > max_tokens:
                record["stopped"] = "max_tokens"
                break
            prompts.append(messages)
            estimate += cost
        if not prompts:
            break
        before = res.tracker.llm_totals()[1]
        replies = res.complete_many(prompts, desc="kgp", validate=parse_next_step)
        spent = res.tracker.llm_totals()[1] - before
        record["calls"] += len(prompts)
        record["tokens"] += spent if spent > 0 else estimate
        next_frontier: list[str] = []
        unusable = 0
        for (chunk_id, cands), reply in zip(jobs, replies, strict=False):
            step = None if isinstance(reply, BaseException) else parse_next_step(reply)
            if step is None:
                unusable += 1
                continue
            if select == "llm":
                offered = {f"L{n}": c for n, c in enumerate(cands, start=1)}
                unknown = [label for label in step.next if label not in offered]
                record["unknown_labels"] += len(unknown)
                if step.next and len(unknown) == len(step.next):
                    unusable += 1
                    continue
                picked = [offered[label] for label in step.next if label in offered]
            elif step.missing:
                picked = scorer.rank(f"{state.question}\n{step.missing}", cands)
            else:
                picked = []
            picked = [c for c in picked if c not in visited][:k_nei]
            visited.update(picked)
            record["picked"][chunk_id] = picked
            for child in picked:
                paths[child] = [*paths[chunk_id], child]
            next_frontier += picked
        if unusable:
            record["stopped"] = "unusable reply"
            log.warning("kgp: %d traversal repl%s could not be used; the walk stops there",
                        unusable, "y" if unusable == 1 else "ies")  # fmt: skip
            break
        if record["stopped"] in ("max_calls", "max_tokens"):
            break
        frontier = next_frontier
        if not frontier:
            record["stopped"] = "done"
            break
        if level + 1 >= depth:
            record["stopped"] = "depth"
    state.chunks = _reading_order(state, seeds, record["picked"])


def _reading_order(
    state: State, seeds: list[str], picked: dict[str, list[str]]
) -> list[tuple[str, float]]:
    """Each seed, then what was read from it (depth first); scores 1, 1/2, 1/3 ..."""
    order: list[str] = []

    def visit(chunk_id: str) -> None:
        order.append(chunk_id)
        for child in picked.get(chunk_id, []):
            visit(child)

    for seed in seeds:
        visit(seed)
    return [(c, 1.0 / (n + 1)) for n, c in enumerate(dict.fromkeys(order))]
