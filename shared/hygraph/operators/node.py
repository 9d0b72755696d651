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
