"""Passage-level results: exactly ``k`` passages in a method's own order, evidence attached.

Framework retrievers are expected to return the passages an app asked for (``top_k=5``
means five), with scores on one scale, best first, so stock postprocessors, rerankers,
``format_docs`` and "top sources" helpers work unchanged. A graph method's full result
mixes passages with entities, facts, units and summaries on scales of their own; this
module turns it into passages:

* the passages are the method's passage ranking (``QueryResult.chunks``), first ``k``;
  when a method ranks fewer, the dense ranking fills the rest (marked ``via="dense
  fill"``), so a user always gets ``k`` when the corpus has them;
* each passage's score is the cosine of its stored vector to the question, made
  non-increasing down the list (each score is at most the one above it), so scores are
  comparable across methods, descending, and on the scale a similarity cutoff expects;
* each passage carries the graph evidence that cites it (``graph_evidence``: the texts
  of the entities, facts, units ... whose sources include it, in the method's order),
  and the method's full rendered context stays on the result;
* ``filters`` keep only passages of documents whose metadata match (see
  :meth:`~hygraph.index.GraphIndex.documents_matching`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hygraph.retrieval.evidence import Evidence

if TYPE_CHECKING:
    from hygraph.index import GraphIndex, QueryResult

#: At most this many graph evidence texts are attached to one passage.
EVIDENCE_PER_PASSAGE = 5


@dataclass
class PassageResult:
    """The passages, and the method's full result they were taken from."""

    passages: list[Evidence]
    result: QueryResult
    filtered_out: int = 0
    notes: list[str] = field(default_factory=list)


def retrieve_passages(
    index: GraphIndex,
    question: str,
    method: str,
    k: int,
    *,
    budget: int = 2000,
    filters: dict[str, Any] | None = None,
    evidence: bool = False,
) -> PassageResult:
    """The ``k`` best passages for ``question`` by ``method`` (see the module docstring).

    ``evidence=True`` keeps the graph the method used on the result
    (``result.evidence``)."""
    result = index.retrieve(question, method, budget=budget, evidence=evidence)
    allowed = index.chunks_matching(filters) if filters else None
    ranked = [c for c in result.chunks if allowed is None or c in allowed]
    via = dict.fromkeys(ranked[:k], "method")
    if len(via) < k:
        query = index.resources.embed_query(question)
        hits = index.resources.search_vectors(
            "chunks", query, k + len(via), ids=sorted(allowed) if allowed is not None else None
        )
        for hit in hits:
            if len(via) >= k:
                break
            via.setdefault(hit.id, "dense fill")
    chosen = list(via)
    cosines = _cosines(index, question, chosen)
    items = index.chunk_evidence([(c, 0.0) for c in chosen])
    ceiling = 1.0
    for rank, item in enumerate(items, start=1):
        cosine = cosines.get(item.id or "", 0.0)
        ceiling = min(ceiling, cosine)
        item.score = round(ceiling, 6)
        item.metadata = {
            **item.metadata,
            "rank": rank,
            "via": via[item.id or ""],
            "cosine": round(cosine, 6),
            **_attached(result.items, item.id or ""),
        }
    return PassageResult(items, result, filtered_out=len(result.chunks) - len(ranked))


def _cosines(index: GraphIndex, question: str, chunk_ids: list[str]) -> dict[str, float]:
    """Cosine of each chunk's stored vector to the question (no re-embedding)."""
    if not chunk_ids:
        return {}
    hits = index.resources.search_vectors("chunks", question, len(chunk_ids), ids=chunk_ids)
    return {h.id: float(h.score) for h in hits}


def _attached(items: list[Evidence], chunk_id: str) -> dict[str, Any]:
    """The non-passage evidence citing ``chunk_id``: texts and kinds, in the method's order."""
    cited = [i for i in items if i.kind != "chunk" and chunk_id in i.source_ids]
    cited = cited[:EVIDENCE_PER_PASSAGE]
    return {
        "graph_evidence": [f"{i.kind}: {i.text}" for i in cited],
        "graph_evidence_ids": [i.id or "" for i in cited],
    }
