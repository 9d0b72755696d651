"""Node operators: entry nodes by vector or by name, and node evidence for the context."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hygraph.operators.registry import operator
from hygraph.operators.scoring import scored_vdb
from hygraph.retrieval.evidence import Evidence

if TYPE_CHECKING:
    from hygraph.operators.state import State
    from hygraph.resources import Resources

ENTITY_COLLECTION = "entities"  # the entity-vectors layer's collection


def _keywords(res: Resources, state: State) -> str:
    return ", ".join(state.keywords) if state.keywords else state.question


vdb = operator("node.vdb", needs=("entity-vectors",))(
    scored_vdb(
        ENTITY_COLLECTION, "nodes", _keywords,
        """Entities nearest to the question's keywords joined (or the question), scored.

        Each candidate's cosine is multiplied by its importance out of ``full`` (when
        ``use_scores`` says so) and kept above ``threshold``; ``pool`` × k candidates are
        re-ranked (HyperGraphRAG's entity retrieval R_V).
        """,
    )
)  # fmt: skip


@operator("node.evidence", needs=("entity-graph",))
def evidence(res: Resources, state: State, *, into: str = "entities") -> None:
    """Evidence for the retrieved entities and the members of the kept relationships.

    Retrieved entities come first (with their scores), then members in the order the
    relationships name them; each shows ``name (type): description``.
    """
    members = [m for item in state.evidence.get("facts", []) for m in item.metadata["member_ids"]]
    ids = list(dict.fromkeys([*(h.id for h in state.nodes), *members]))
    nodes = res.store.get_nodes(ids)
    scores = {h.id: h.value for h in state.nodes}
    out = []
    for eid in ids:
        node = nodes.get(eid)
        if node is None:
            continue
        etype = node.data.get("type", "")
        head = f"{node.name} ({etype})" if etype and etype != "entity" else str(node.name)
        text = f"{head}: {node.text}" if node.text else head
        meta = {"name": node.name, "type": etype, "retrieved": eid in scores}
        out.append(Evidence("entity", text, scores.get(eid, 0.0), tuple(node.sources), id=eid,
                            metadata=meta))  # fmt: skip
    state.evidence[into] = out


NODE_COLLECTION = "noderag"  # the heterograph layer's collection (S, A, H)


@operator("node.entries", needs=("heterograph",))
def entries(res: Resources, state: State, *, k: int = 10, types: str = "T+S+A+H") -> None:
    """The ``k`` embedded nodes of the given types nearest to the question (NodeRAG).

    T are chunks (their vectors); S/A/H come from the heterograph's collection,
    filtered by payload kind.
    """
    from hygraph.operators.state import Scored

    wanted = node_types(types, "TSAH")
    hits: list[tuple[str, float]] = []
    if "T" in wanted:
        hits += [(h.id, h.score) for h in res.search_chunks(state.query_vector(res), k)]
    kinds = sorted(set(wanted) - {"T"})
    if kinds:
        pool = res.search_vectors(NODE_COLLECTION, state.query_vector(res), k, kinds=kinds)
        hits += [(h.id, h.score) for h in pool]
    hits.sort(key=lambda h: (-h[1], h[0]))
    state.nodes = [Scored(i, s, cosine=s) for i, s in hits[:k]]


@operator("node.exact", needs=("heterograph",))
def exact(res: Resources, state: State, *, equal: bool = False) -> None:
    """Entity and title nodes whose names the question's keywords contain (whole words).

    ``equal`` asks for the whole name instead of containment. The matches go to
    ``state.subgraph["exact"]`` as extra walk entry points.
    """
    from hygraph.graph.algorithms.exact_match import ExactMatcher
    from hygraph.graph.kinds import NodeKind

    view = state.view(res)
    kinds = (NodeKind.ENTITY, NodeKind.OVERVIEW)
    matcher = view.memo(("matcher", kinds), lambda: ExactMatcher(view.names(kinds)))
    state.subgraph["exact"] = matcher.match(state.keywords, equal=equal)


def node_types(text: str, allowed: str) -> list[str]:
    """Type letters from ``"T+S+A+H"`` (an error names the unknown ones)."""
    from hygraph.errors import ConfigError

    parts = [p.strip().upper() for p in text.replace(",", "+").split("+") if p.strip()]
    bad = [p for p in parts if p not in allowed]
    if bad:
        raise ConfigError(f"unknown node type(s) {', '.join(bad)}; use letters of {allowed}")
    return parts


# --------------------------------------------------------------------------- knowledge graph


@operator("node.relnode", needs=("entity-graph",))
def relnode(res: Resources, state: State, *, k: int = 0) -> None:
    """The entities the retrieved relationships join, in relationship order (RelNode).

    Each entity takes the value of the first relationship naming it and keeps its
    relation degree in ``data["degree"]``; ``k`` keeps the first ``k`` (0: all). The
    order is current LightRAG's (v1.5.7 operate.py:6354-6384); the framework's
    ``from_relation`` gathers the names in a set and keeps only the last entity
    (JayLZhou/GraphRAG Core/Retriever/EntitiyRetriever.py:191-209), a slip not copied.
    """
    from hygraph.operators.relationship import relation_degrees
    from hygraph.operators.state import Scored

    degree = relation_degrees(res, state)
    found: dict[str, Scored] = {}
    for rel in state.relationships:
        for member in rel.data.get("members", ()):
            if member not in found:
                data = {"degree": degree.get(member, 0), "via": rel.id}
                found[member] = Scored(member, rel.value, data=data)
    nodes = list(found.values())
    state.nodes = nodes[:k] if k > 0 else nodes


@operator("node.onehop", needs=("entity-graph",))
def onehop(res: Resources, state: State, *, k: int = 0, keep_seeds: bool = True) -> None:
    """The one-hop neighbours of the retrieved entities over relation edges (Onehop).

    A neighbour scores the summed value of the retrieved entities joined to it (either
    direction); ties go to the higher relation degree, then the id. ``k`` keeps the best
    ``k`` neighbours (0: all); with ``keep_seeds`` the retrieved entities stay first.
    """
    from hygraph.graph.kinds import EdgeKind
    from hygraph.operators.relationship import relation_degrees
    from hygraph.operators.state import Scored

    links = state.view(res).links(EdgeKind.RELATION)
    seeds = {h.id for h in state.nodes}
    score: dict[str, float] = {}
    for hit in state.nodes:
        for other in dict.fromkeys([*links.out.get(hit.id, []), *links.into.get(hit.id, [])]):
            if other not in seeds:
                score[other] = score.get(other, 0.0) + hit.value
    degree = relation_degrees(res, state)
    ranked = sorted(score, key=lambda n: (-score[n], -degree.get(n, 0), n))
    ranked = ranked[:k] if k > 0 else ranked
    found = [
        Scored(n, score[n], data={"degree": degree.get(n, 0), "via": "onehop"}) for n in ranked
    ]
    state.nodes = [*state.nodes, *found] if keep_seeds else found


@operator("node.tfidf", needs=("tfidf",))
def tfidf(
    res: Resources, state: State, *, k: int = 5, into: str = "nodes", at_least_top_k: bool = False
) -> None:
    """The ``k`` chunks nearest to the question by TF-IDF cosine (the TF-IDF node index).

    The nodes are chunks (the passage graph's nodes, KGP): ``into="nodes"`` sets them as
    the retrieved nodes (``data["kind"] = "chunk"``), ``"chunks"`` as the ranked chunks,
    any other name as a named ranking. Only chunks sharing a term with the question count.
    ``at_least_top_k`` widens ``k`` to the query's top_k (never narrows it), as
    ``chunk.vdb``'s does.
    """
    from hygraph.operators.state import Scored

    depth = max(k, state.top_k) if at_least_top_k else k
    ranked = res.layer("tfidf").search(res, state.question, depth)
    if into == "nodes":
        state.nodes = [Scored(c, s, cosine=s, data={"kind": "chunk"}) for c, s in ranked]
    elif into == "chunks":
        state.chunks = ranked
    else:
        state.rankings[into] = [c for c, _ in ranked]
