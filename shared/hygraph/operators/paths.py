"""Path operators over the entity graph: search starts, k-hop paths, and path evidence.

Graph-structure methods of the unified framework (ToG, DALK; spec 002 §4.6) retrieve
*paths*: chains of relation edges between entities. A :class:`Path` keeps its
entities in order and one ``(source, label, target)`` hop per step, each hop in its
edge's stored direction, so a path reads as it was extracted:
``Ada -[founded]-> Bell <-[works at]- Dara``. Paths live in ``state.subgraph["paths"]``.

* ``node.seeds``: the linked question entities (``state.seeds``) become the
  retrieved nodes, each a path of length 0 — where a search starts.
* ``subgraph.khop_path`` (S1, KhopPath): paths of at most ``max_hops`` between the
  linked entities, found one after another and merged
  (:mod:`hygraph.graph.algorithms.khop`).
* ``subgraph.path_evidence``: the paths (or the edges joining kept neighbours to the
  seeds) as evidence, citing the chunks their edges were extracted from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from hygraph.errors import ConfigError
from hygraph.graph.kinds import EdgeKind
from hygraph.operators.registry import operator
from hygraph.retrieval.evidence import Evidence

if TYPE_CHECKING:
    from hygraph.graph.store import Edge
    from hygraph.operators.state import State
    from hygraph.resources import Resources

PATHS = "paths"  # the state.subgraph slot holding the retrieved paths
Hop = tuple[str, str, str]  # (source id, relation label, target id), as the edge is stored


@dataclass(frozen=True)
class Path:
    """Entities in walking order, one hop per step, and the path's score."""

    nodes: tuple[str, ...]
    hops: tuple[Hop, ...] = ()
    score: float = 0.0

    @property
    def end(self) -> str:
        return self.nodes[-1]

    def extend(self, hop: Hop, score: float) -> Path:
        """This path one hop further (to whichever end of ``hop`` is new)."""
        src, _, dst = hop
        nxt = dst if src == self.end else src
        return Path((*self.nodes, nxt), (*self.hops, hop), score)


def undirected(res: Resources, state: State) -> dict[str, list[str]]:
    """Relation neighbours of every entity, either direction, sorted (once per version)."""
    view = state.view(res)

    def make() -> dict[str, list[str]]:
        links = view.links(EdgeKind.RELATION)
        out: dict[str, set[str]] = {}
        for src, targets in links.out.items():
            for dst in targets:
                if src != dst:
                    out.setdefault(src, set()).add(dst)
                    out.setdefault(dst, set()).add(src)
        return {node: sorted(others) for node, others in out.items()}

    return view.memo(("undirected_relations",), make)


def edge_between(res: Resources, a: str, b: str) -> Edge | None:
    """The relation edge joining ``a`` and ``b`` in either direction (``a → b`` first)."""
    edges = res.store.get_edges([(a, b, EdgeKind.RELATION), (b, a, EdgeKind.RELATION)])
    return edges.get((a, b, EdgeKind.RELATION)) or edges.get((b, a, EdgeKind.RELATION))


def edge_label(edge: Edge) -> str:
    return str(edge.data.get("label") or "related to")


def hops_of(res: Resources, nodes: list[str]) -> tuple[Hop, ...] | None:
    """The hops along ``nodes`` with each edge's name (None when an edge is missing)."""
    hops: list[Hop] = []
    for a, b in zip(nodes, nodes[1:], strict=False):
        edge = edge_between(res, a, b)
        if edge is None:
            return None
        hops.append((edge.src, edge_label(edge), edge.dst))
    return tuple(hops)


def path_text(path: Path, names: dict[str, str]) -> str:
    """``Ada -[founded]-> Bell <-[works at]- Dara`` (names; ids where a name is missing)."""
    parts = [names.get(path.nodes[0], path.nodes[0])]
    for at, (src, label, dst) in zip(path.nodes, path.hops, strict=False):
        if src == at:
            parts.append(f"-[{label}]-> {names.get(dst, dst)}")
        else:
            parts.append(f"<-[{label}]- {names.get(src, src)}")
    return " ".join(parts)


def entity_names(res: Resources, ids: set[str] | list[str]) -> dict[str, str]:
    return {i: (n.name or i) for i, n in res.store.get_nodes(set(ids)).items()}


def hop_sources(edge: Edge | None, label: str) -> list[str]:
    """The chunks a hop was extracted from: those naming ``label`` first, then the rest."""
    if edge is None:
        return []
    entries = edge.data.get("entries", {}) or {}
    first = [c for c, items in entries.items() if any(i and str(i[0]) == label for i in items)]
    return list(dict.fromkeys([*first, *entries, *edge.sources]))


def path_sources(res: Resources, path: Path) -> tuple[str, ...]:
    """The chunks of every hop of ``path``, hop by hop."""
    keys = [(src, dst, EdgeKind.RELATION) for src, _, dst in path.hops]
    edges = res.store.get_edges(keys)
    cited = [c for (src, label, dst) in path.hops
             for c in hop_sources(edges.get((src, dst, EdgeKind.RELATION)), label)]  # fmt: skip
    return tuple(dict.fromkeys(cited))


# --------------------------------------------------------------------------- operators


@operator("node.seeds")
def seeds(res: Resources, state: State) -> None:
    """The linked question entities as the retrieved nodes, in link order (a search's start).

    Each node is ``state.seeds``' entity with its link similarity as value and, in
    ``data["path"]``, a path of length 0 that later steps extend.
    """
    from hygraph.operators.state import Scored

    state.nodes = [Scored(e, s, cosine=s, data={"path": Path((e,), (), s), "via": "link"})
                   for e, s in state.seeds.items()]  # fmt: skip


@operator("subgraph.khop_path", needs=("entity-graph",))
def khop_path(
    res: Resources, state: State, *, max_hops: int = 3, per_pair: int = 1, limit: int = 20
) -> None:
    """Paths of at most ``max_hops`` between the linked entities, found in turn (KhopPath).

    The entity set is ``state.seeds`` (else the retrieved nodes), in order: a path from
    the current start to the nearest entity of the set, then the path's entities leave
    the set, until it is empty; paths that extend one another are merged and the first
    ``limit`` kept (0: all) in ``state.subgraph["paths"]``. ``per_pair`` keeps that many
    shortest paths per step. Each path's score is the mean link similarity of the
    entities of the set it joins.
    """
    from hygraph.graph.algorithms.khop import khop_paths, merge_paths

    if max_hops < 1 or per_pair < 1:
        raise ConfigError("subgraph.khop_path needs max_hops >= 1 and per_pair >= 1")
    wanted = dict(state.seeds) or {n.id: n.value for n in state.nodes}
    found = khop_paths(undirected(res, state), list(wanted), max_hops=max_hops,
                       per_pair=per_pair)  # fmt: skip
    paths: list[Path] = []
    for nodes in merge_paths(found, limit=limit):
        hops = hops_of(res, nodes)
        if hops is None:
            continue
        joined = [wanted[n] for n in nodes if n in wanted]
        paths.append(Path(tuple(nodes), hops, sum(joined) / len(joined) if joined else 0.0))
    state.subgraph[PATHS] = paths


PATH_SOURCES = ("paths", "neighbours")
PATH_ORDERS = ("given", "deepest")


@operator("subgraph.path_evidence", needs=("entity-graph",))
def path_evidence(
    res: Resources,
    state: State,
    *,
    source: str = "paths",
    order: str = "given",
    into: str = "paths",
    k: int = 0,
) -> None:
    """Paths as evidence (``A -[label]-> B ...``), each citing its edges' chunks in hop order.

    ``source="paths"``: ``state.subgraph["paths"]`` without the paths lying inside
    another (or repeated), in the ``order`` given (``deepest``: most hops first, then
    best score); ``"neighbours"``: for each retrieved node that is not a linked
    entity, the relation edges joining it to the linked entities, one item per
    neighbour (the node's value as score). ``k`` keeps the first ``k`` items (0: all).
    """
    from hygraph.graph.algorithms.khop import merge_paths

    if source not in PATH_SOURCES:
        raise ConfigError(f"subgraph.path_evidence source must be one of {', '.join(PATH_SOURCES)}")
    if order not in PATH_ORDERS:
        raise ConfigError(f"subgraph.path_evidence order must be one of {', '.join(PATH_ORDERS)}")
    if source == "paths":
        paths: list[Path] = list(state.subgraph.get(PATHS, []))
        if order == "deepest":
            paths.sort(key=lambda p: (-len(p.hops), -p.score))
        kept = {tuple(n) for n in merge_paths([list(p.nodes) for p in paths], join=False)}
        groups, seen = [], set()
        for path in paths:
            if path.nodes in kept and path.nodes not in seen:
                seen.add(path.nodes)
                groups.append([path])
    else:
        groups = _neighbour_paths(res, state)
    names = entity_names(res, {n for group in groups for p in group for n in p.nodes})
    out = []
    for group in groups[: k if k > 0 else None]:
        text = "; ".join(path_text(p, names) for p in group)
        cited = tuple(dict.fromkeys(c for p in group for c in path_sources(res, p)))
        nodes = list(dict.fromkeys(n for p in group for n in p.nodes))
        meta = {"entities": [names.get(n, n) for n in nodes], "entity_ids": nodes,
                "hops": [list(h) for p in group for h in p.hops], "via": source}  # fmt: skip
        out.append(Evidence("path", text, group[0].score, cited, id="|".join(nodes),
                            metadata=meta))  # fmt: skip
    state.evidence[into] = out


def _neighbour_paths(res: Resources, state: State) -> list[list[Path]]:
    """One group per non-seed retrieved node: its one-hop paths from the seeds."""
    linked = [n.id for n in state.nodes if n.id in state.seeds]
    groups = []
    for node in state.nodes:
        if node.id in state.seeds:
            continue
        group = []
        for seed in linked:
            edge = edge_between(res, seed, node.id)
            if edge is not None:
                hop = (edge.src, edge_label(edge), edge.dst)
                group.append(Path((seed, node.id), (hop,), node.value))
        if group:
            groups.append(group)
    return groups
