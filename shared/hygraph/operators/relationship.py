"""Relationship operators: n-ary facts by vector, and the relationships of retrieved nodes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from hygraph.operators.registry import operator
from hygraph.operators.scoring import scored_vdb
from hygraph.retrieval.evidence import Evidence

if TYPE_CHECKING:
    from hygraph.graph.hypergraph import Hyperedge
    from hygraph.operators.state import Scored, State
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
    from hygraph.retrieval.budget import fit_budget, token_cost

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
    ordered = [facts[f] for f in retrieved if f in facts] + [facts[f] for f in by_entity]
    kept = fit_budget(ordered, budget, token_cost(lambda fact: fact.text))
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


# --------------------------------------------------------------------------- knowledge graph

RELATION_ORDERS = ("degree", "retrieval")
RELATIONS_PER_READ = 64  # relation edges read from the store at a time


def _pair(relation_id: str) -> tuple[str, str]:
    """The ``(source, target)`` entity ids of a relation id ``"source|target"``."""
    src, _, dst = relation_id.partition("|")
    return src, dst


def relation_degrees(res: Resources, state: State) -> dict[str, int]:
    """Each entity's number of distinct relation neighbours (once per graph version)."""
    from hygraph.graph.kinds import EdgeKind

    view = state.view(res)

    def make() -> dict[str, int]:
        links = view.links(EdgeKind.RELATION)
        ids = set(links.out) | set(links.into)
        return {n: len(set(links.out.get(n, [])) | set(links.into.get(n, []))) for n in ids}

    return view.memo(("relation_degrees",), make)


def ranked_relations(
    res: Resources,
    state: State,
    found: dict[tuple[str, str], float],
    *,
    order: str,
    budget: int,
    k: int = 0,
) -> list[Scored]:
    """Relation edges ``(src, dst) -> value`` as scored relationships, ordered and cut.

    ``order="degree"`` sorts by (edge degree, weight) descending, edge degree being the
    two endpoints' relation degrees summed (LightRAG's code; equal keys keep the given
    order); ``"retrieval"`` keeps the given order. ``k`` keeps the first ``k`` (0: all);
    ``budget`` keeps relationships while their texts' tokens fit (0: no cut), as
    :func:`hygraph.retrieval.budget.fit_budget` (LightRAG's ``truncate_list_by_token_size``,
    except that the first relationship is always kept). Each carries its shown text, degree,
    weight, keywords and source chunks in ``data``.
    """
    from hygraph.errors import ConfigError
    from hygraph.graph.kinds import EdgeKind
    from hygraph.layers.rich_kg import relation_record
    from hygraph.operators.state import Scored
    from hygraph.retrieval.budget import fit_budget, token_cost

    if order not in RELATION_ORDERS:
        raise ConfigError(f"relationship order must be one of {', '.join(RELATION_ORDERS)}")
    degree = relation_degrees(res, state)
    weight = state.view(res).memo(("relation_weights",), lambda: {
        (s, d): w for s, d, w in res.store.edge_rows([EdgeKind.RELATION])})  # fmt: skip
    keys = [pair for pair in found if pair in weight]
    if order == "degree":
        keys.sort(key=lambda p: (-(degree.get(p[0], 0) + degree.get(p[1], 0)), -weight[p]))
    keys = keys[:k] if k > 0 else keys

    def items() -> Iterator[Scored]:
        # Edges are read a batch at a time, so a budget met early reads few of them.
        for start in range(0, len(keys), RELATIONS_PER_READ):
            batch = keys[start : start + RELATIONS_PER_READ]
            edges = res.store.get_edges((s, d, EdgeKind.RELATION) for s, d in batch)
            names = {i: (n.name or i) for i, n in
                     res.store.get_nodes({m for pair in batch for m in pair}).items()}  # fmt: skip
            for src, dst in batch:
                edge = edges.get((src, dst, EdgeKind.RELATION))
                if edge is None:
                    continue
                record = relation_record(edge)
                text = f"{names.get(src, src)} {record['label']} {names.get(dst, dst)}"
                text += f": {record['description']}" if record["description"] else ""
                data = {"kind": EdgeKind.RELATION, "members": (src, dst), "text": text,
                        "degree": degree.get(src, 0) + degree.get(dst, 0), **record,
                        "sources": tuple(edge.data.get("entries", {}))}  # fmt: skip
                yield Scored(f"{src}|{dst}", found[(src, dst)], score=record["weight"], data=data)

    return fit_budget(items(), budget, token_cost(lambda item: item.data["text"]))


@operator("relationship.kg_vdb", needs=("rich-relation-vectors",))
def kg_vdb(
    res: Resources,
    state: State,
    *,
    k: int = 60,
    query: str = "high",
    order: str = "degree",
    budget: int = 4000,
) -> None:
    """Relation edges nearest to the high-level keywords, by degree, within a budget (R-VDB).

    ``query`` is the search text: ``high`` or ``low`` (that level of ``question.keywords``,
    joined), ``keywords`` (``state.keywords``) or ``question``; an empty one falls back
    to the question. The ``k`` nearest rich relation vectors (keywords, endpoints and
    descriptions, LightRAG's relationship index) are ordered by ``order`` (``degree``:
    (edge degree, weight) descending, as the framework and original LightRAG re-sort
    them, JayLZhou/GraphRAG Core/Retriever/BaseRetriever.py:39-41 and LightRAG 0.0.9
    operate.py:759-761; ``retrieval``: by similarity, as current LightRAG keeps them,
    v1.5.7 operate.py:6339) and cut at ``budget`` tokens (0: no cut). A relationship's
    cosine is kept as ``cosine``.
    """
    from hygraph.errors import ConfigError
    from hygraph.layers.rich_kg import RICH_RELATION_COLLECTION

    if query in ("high", "low"):
        words = state.subgraph.get("keywords", {}).get(query, [])
    elif query == "keywords":
        words = state.keywords
    elif query == "question":
        words = []
    else:
        raise ConfigError("relationship query must be high, low, keywords or question")
    text = ", ".join(words) if words else state.question
    hits = res.search_vectors(RICH_RELATION_COLLECTION, text, k)
    found = {_pair(h.id): h.score for h in hits if "|" in h.id}
    ranked = ranked_relations(res, state, found, order=order, budget=budget)
    for item in ranked:
        item.cosine = item.value
    state.relationships = ranked


@operator("relationship.kg_onehop", needs=("entity-graph",))
def kg_onehop(
    res: Resources, state: State, *, k: int = 0, order: str = "degree", budget: int = 4000
) -> None:
    """Every relation edge at the retrieved entities, by degree, within a budget (R-Onehop).

    Each edge once (either direction), valued by the summed value of the retrieved
    entities it joins; ordered by ``order`` (``degree``: (edge degree, weight)
    descending, as every reference code does: JayLZhou/GraphRAG
    Core/Retriever/RelationshipRetriever.py:70-72, LightRAG v1.5.7 operate.py:6129;
    ``retrieval``: by value, then in the order the entities reach them), cut to ``k``
    (0: all) and at ``budget`` tokens (0: no cut).
    """
    from hygraph.graph.kinds import EdgeKind

    links = state.view(res).links(EdgeKind.RELATION)
    found: dict[tuple[str, str], float] = {}
    for hit in state.nodes:
        pairs = [(hit.id, o) for o in links.out.get(hit.id, [])]
        pairs += [(o, hit.id) for o in links.into.get(hit.id, [])]
        for pair in pairs:
            found[pair] = found.get(pair, 0.0) + hit.value
    if order == "retrieval":
        found = dict(sorted(found.items(), key=lambda kv: -kv[1]))
    state.relationships = ranked_relations(res, state, found, order=order, budget=budget, k=k)


@operator("relationship.kg_evidence", needs=("entity-graph",))
def kg_evidence(res: Resources, state: State, *, into: str = "relationships") -> None:
    """Evidence for relation edges: name, descriptions, keywords and weight (TKG / RKG).

    Shows ``source label target: descriptions (keywords: ...)``, citing the chunks the
    relation was extracted from; relationships other than relation edges are skipped.
    """
    from hygraph.graph.kinds import EdgeKind

    rels = [r for r in state.relationships if r.data.get("kind") == EdgeKind.RELATION]
    bare = {_pair(r.id): r.value for r in rels if "text" not in r.data}
    filled = {r.id: r for r in ranked_relations(res, state, bare, order="retrieval", budget=0)}
    out = []
    for r in rels:
        item = r if "text" in r.data else filled.get(r.id)
        if item is None:
            continue
        keywords = item.data.get("keywords", [])
        text = item.data["text"] + (f" (keywords: {', '.join(keywords)})" if keywords else "")
        meta = {k: item.data.get(k) for k in ("members", "label", "keywords", "weight", "degree")}
        out.append(Evidence("relationship", text, r.value, tuple(item.data.get("sources", ())),
                            id=r.id, metadata={**meta, "kind": EdgeKind.RELATION}))  # fmt: skip
    state.evidence[into] = out
