"""The state a query carries through a recipe, and the trace of every step.

A recipe is a list of operator calls; each reads and extends one :class:`State`.
Slots follow the elements of a graph: the question's ``keywords`` (entities and
terms), ``seeds`` for walks, scored ``nodes`` and ``relationships``, ranked ``chunks``,
``communities`` and a ``subgraph``; named ``rankings`` (chunk id lists to fuse) and
named ``evidence`` lists (what the context shows) let steps hand results to later
ones. ``trace`` records each step's name, parameters, time, LLM use and what it
added, so a query can say where its time and tokens went.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hygraph.retrieval.context import Context
from hygraph.retrieval.evidence import Evidence


@dataclass
class Scored:
    """A retrieved node or relationship: its id, ranking value, cosine and raw score.

    ``value`` orders items (cosine × the extractor's score for HyperGraphRAG, PageRank
    mass for a walk); ``data`` carries what later steps need (members, kind ...).
    """

    id: str
    value: float
    cosine: float = 0.0
    score: float = 0.0
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class TraceStep:
    """What one step did: parameters, seconds, LLM calls and tokens, and slot growth."""

    name: str
    params: dict[str, Any]
    seconds: float = 0.0
    llm_calls: int = 0
    tokens: int = 0
    added: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "params": self.params,
            "seconds": round(self.seconds, 4),
            "llm_calls": self.llm_calls,
            "tokens": self.tokens,
            "added": self.added,
        }


@dataclass
class State:
    """Everything a query knows so far (see the module docstring)."""

    question: str
    top_k: int
    query: np.ndarray | None = None
    keywords: list[str] = field(default_factory=list)
    seeds: dict[str, float] = field(default_factory=dict)
    nodes: list[Scored] = field(default_factory=list)
    relationships: list[Scored] = field(default_factory=list)
    chunks: list[tuple[str, float]] = field(default_factory=list)
    communities: list[Scored] = field(default_factory=list)
    subgraph: dict[str, Any] = field(default_factory=dict)
    rankings: dict[str, list[str]] = field(default_factory=dict)
    #: The scores of a named ranking, where the step that made it had them (score fusion).
    ranking_scores: dict[str, list[float]] = field(default_factory=dict)
    evidence: dict[str, list[Evidence]] = field(default_factory=dict)
    #: Per collection, the greatest cosine of ``query`` to its points, where a step's
    #: unfiltered search found it (a later step needing it searches no more).
    greatest: dict[str, float] = field(default_factory=dict)
    context: Context = field(default_factory=Context)
    trace: list[TraceStep] = field(default_factory=list)
    _view: Any = field(default=None, repr=False)

    def query_vector(self, res: Any) -> np.ndarray:
        """The question's vector, embedded on first use (``question.embed`` does it early)."""
        if self.query is None:
            self.query = res.embed_query(self.question)
        return self.query

    def view(self, res: Any) -> Any:
        """The store's :class:`~hygraph.graph.view.GraphView`, looked up once per query.

        (The lookup checks the store's version, a few SQL counts; every step of one query
        reads the same version.)
        """
        if self._view is None:
            from hygraph.graph.view import graph_view

            self._view = graph_view(res.store)
        return self._view

    def sizes(self) -> dict[str, int]:
        """How many items each slot holds (the trace reports the growth per step)."""
        out = {
            "keywords": len(self.keywords),
            "seeds": len(self.seeds),
            "nodes": len(self.nodes),
            "relationships": len(self.relationships),
            "chunks": len(self.chunks),
            "communities": len(self.communities),
            "subgraph": len(self.subgraph),
        }
        out.update({f"rankings.{k}": len(v) for k, v in self.rankings.items()})
        out.update({f"evidence.{k}": len(v) for k, v in self.evidence.items()})
        out["context"] = len(self.context.items)
        return out
