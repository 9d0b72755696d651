"""Relationship operators: n-ary facts by vector, and the relationships of retrieved nodes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hygraph.operators.registry import operator
from hygraph.operators.scoring import scored_vdb
from hygraph.retrieval.evidence import Evidence

if TYPE_CHECKING:
    from hygraph.graph.hypergraph import Hyperedge
    from hygraph.operators.state import State
    from hygraph.resources import Resources

FACT_COLLECTION = "facts"  # the hypergraph layer's collection


vdb = operator("relationship.vdb", needs=("hypergraph",))(
    scored_vdb(
        FACT_COLLECTION, "relationships", lambda res, state: state.query_vector(res),
        """Facts nearest to the question vector, scored like ``node.vdb`` (HyperGraphRAG R_H).""",
    )
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


RELATION_COLLECTION = "relations"  # the relation-vectors layer's collection


@operator("relationship.relation_vdb", needs=("relation-vectors",))
def relation_vdb(res: Resources, state: State, *, k: int = 20) -> None:
    """Relation edges nearest to the question vector (LightRAG's global keywords search)."""
    from hygraph.graph.kinds import EdgeKind
    from hygraph.operators.state import Scored

    hits = res.search_vectors(RELATION_COLLECTION, state.query_vector(res), k)
    state.relationships = [
        Scored(h.id, h.score, cosine=h.score,
               data={"kind": EdgeKind.RELATION, "members": tuple(h.id.split("|", 1))})
        for h in hits
    ]  # fmt: skip


@operator("relationship.of_nodes", needs=("entity-graph",))
def of_nodes(res: Resources, state: State, *, k: int = 30) -> None:
    """One-hop relationships of the retrieved nodes: relation edges and n-ary facts alike.

    Each relationship scores the summed value of the retrieved nodes it joins, so one
    joining two retrieved entities comes before one reaching out from a single entity.
    """
    from hygraph.operators.state import Scored

    view = state.view(res)
    found: dict[str, Scored] = {}
    for hit in state.nodes:
        for rel in view.relationships(hit.id):
            key = rel.id if rel.kind != "relation" else "|".join(sorted(rel.members))
            item = found.setdefault(key, Scored(rel.id, 0.0, data={
                "kind": str(rel.kind), "members": rel.members}))  # fmt: skip
            item.value += hit.value
    ranked = sorted(found.values(), key=lambda s: (-s.value, s.id))
    state.relationships = ranked[:k]


@operator("relationship.evidence", needs=("entity-graph",))
def relationship_evidence(res: Resources, state: State, *, into: str = "relationships") -> None:
    """Evidence for the relationships: relations as ``source label target``, facts as stated.

    A fact shows its members' names; each item cites the chunks it came from.
    """
    from hygraph.graph.kinds import EdgeKind

    ids = {m for r in state.relationships for m in r.data.get("members", ())}
    names = {i: (n.name or i) for i, n in res.store.get_nodes(ids).items()}
    keys = [(*r.data["members"], EdgeKind.RELATION) for r in state.relationships
            if r.data.get("kind") == EdgeKind.RELATION]  # fmt: skip
    edges = res.store.get_edges(keys)
    facts = res.store.get_nodes(
        r.id for r in state.relationships if r.data.get("kind") != "relation"
    )
    out = []
    for r in state.relationships:
        members = [names.get(m, m) for m in r.data.get("members", ())]
        if r.data.get("kind") == EdgeKind.RELATION:
            edge = edges.get((*r.data["members"], EdgeKind.RELATION))
            if edge is None:
                continue
            text = f"{members[0]} {edge.data.get('label') or 'related to'} {members[1]}"
            sources = tuple(edge.data.get("entries", {}))
        elif r.id in facts:
            text = f"{facts[r.id].text} [entities: {' | '.join(members)}]"
            sources = tuple(facts[r.id].sources)
        else:
            continue
        out.append(Evidence("relationship", text, r.value, sources, id=r.id,
                            metadata={"members": members, "kind": r.data.get("kind")}))  # fmt: skip
    state.evidence[into] = out
