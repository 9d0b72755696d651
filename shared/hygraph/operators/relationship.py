"""Relationship operators: n-ary facts by vector, and the relationships of retrieved nodes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hygraph.operators.registry import operator
from hygraph.operators.scoring import scored_search
from hygraph.retrieval.evidence import Evidence

if TYPE_CHECKING:
    from hygraph.graph.hypergraph import Hyperedge
    from hygraph.operators.state import State
    from hygraph.resources import Resources

FACT_COLLECTION = "facts"  # the hypergraph layer's collection


@operator("relationship.vdb", needs=("hypergraph",))
def vdb(
    res: Resources,
    state: State,
    *,
    k: int = 60,
    threshold: float = 0.0,
    full: float = 1.0,
    pool: int = 1,
    threshold_on: str = "product",
    use_scores: str = "false",
) -> None:
    """Facts nearest to the question vector, scored like ``node.vdb`` (HyperGraphRAG's R_H)."""
    query = state.query if state.query is not None else state.question
    state.relationships = scored_search(
        res, FACT_COLLECTION, query, k=k, pool=pool, threshold=threshold, full=full,
        threshold_on=threshold_on, use_scores=use_scores,
    )  # fmt: skip


@operator("relationship.onehop", needs=("hypergraph",))
def onehop(
    res: Resources, state: State, *, budget: int = 4000, min_arity: int = 0, into: str = "facts"
) -> None:
    """The retrieved facts, then every fact of the retrieved entities, as evidence.

    Order (spec 003 §5.1): retrieved facts by score; then facts reached through an
    entity, by (best reaching entity, completeness, arity). Facts with fewer than
    ``min_arity`` members are skipped; the list stops once ``budget`` tokens are used.
    """
    from hygraph.graph.hypergraph import Bipartite
    from hygraph.ingest.tokenizer import default_tokenizer

    graph = Bipartite(res.store)
    retrieved = {h.id: h.value for h in state.relationships}
    reached: dict[str, float] = {}
    for hit in state.nodes:
        for fid in graph.hyperedges_of(hit.id):
            if fid not in retrieved and fid not in reached:
                reached[fid] = hit.value
    facts = graph.hyperedges([*retrieved, *reached])
    facts = {f: h for f, h in facts.items() if len(h.members) >= min_arity}
    by_entity = sorted(
        (f for f in reached if f in facts),
        key=lambda f: (-reached[f], -facts[f].score, -len(facts[f].members), f),
    )
    kept: list[Hyperedge] = []
    used = 0
    tok = default_tokenizer()
    for fid in [f for f in retrieved if f in facts] + by_entity:
        if used >= budget:
            break
        kept.append(facts[fid])
        used += tok.count(facts[fid].text)
    state.evidence[into] = _fact_evidence(res, kept, retrieved, reached)


def _fact_evidence(
    res: Resources, kept: list[Hyperedge], retrieved: dict[str, float], reached: dict[str, float]
) -> list[Evidence]:
    """Fact evidence: the statement with its members' names."""
    ids = list(dict.fromkeys(m for f in kept for m in f.members))
    names = {i: (n.name or i) for i, n in res.store.get_nodes(ids).items()}
    return [
        Evidence(
            "fact",
            f"{f.text} [entities: {' | '.join(names.get(m, m) for m in f.members)}]",
            retrieved.get(f.id, reached.get(f.id, 0.0)),
            f.sources,
            id=f.id,
            metadata={
                "statement": f.text,
                "members": [names.get(m, m) for m in f.members],
                "member_ids": list(f.members),
                "completeness": f.score,
                "via": "fact" if f.id in retrieved else "entity",
            },
        )
        for f in kept
    ]
