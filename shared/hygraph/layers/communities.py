"""``communities``: the Leiden hierarchy of the entity graph, with a report per community.

Hierarchical Leiden (graspologic's native core, :func:`~hygraph.graph.algorithms.leiden.
hierarchical_communities`) runs over the relation edges, weighted by relation strength;
every cluster larger than ``max_cluster_size`` is split again one level down (GraphRAG's
hierarchy, 10 its default). Each community is a ``community`` node (id: a hash of its
level and members) with ``in_community`` edges from its entities and ``subcommunity``
edges from its parent. Each community gets a report (title, summary, rating, findings:
:mod:`hygraph.layers.community_reports`), stored on the node (``text`` the shown report,
``data["report"]`` its fields) and embedded in the ``community_reports``
collection, so GraphRAG-style methods can reach reports by membership or by vector.

Communities are a property of the whole graph, so the layer is recomputed whenever the
graph changed (a fingerprint of the relation edges, the member texts and the options
is kept in the store's meta table), after inserts and deletes alike; an unchanged graph
costs nothing. A recompute keeps what did not change: a community whose id (level and
members) and report input are the same keeps its report and vector; only new or changed
communities get a report, and the nodes and vectors of vanished ones are deleted.

The machinery is general: :class:`CommunityScheme` names where one set of communities
lives (node and edge kinds, the graph's edge kinds, the report collection), and
:func:`compute_communities` runs detection, reports and vectors for any scheme. HiRAG's
layer runs it over its multi-layer graph with a scheme of its own.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import Edge, Node
from hygraph.layers.base import Layer, LayerConfig, register_layer

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.resources import Resources

MEMBERS_SHOWN = 12  # names in a community's text when it has no report (ours)


@dataclass(frozen=True)
class CommunityScheme:
    """Where one set of communities lives, so several layers can share the machinery.

    Attributes:
        layer: the owning layer's name (meta keys and usage stages are named after it).
        node_kind: kind of the community nodes.
        member_edge: kind of the member → community edges.
        parent_edge: kind of the parent → child community edges.
        edge_kinds: the edges of the graph Leiden partitions.
        collection: the vector collection of the reports.
        id_prefix: prefix of community ids (``comm`` → ``comm:<hash>``).
    """

    layer: str
    node_kind: str
    member_edge: str
    parent_edge: str
    edge_kinds: tuple[str, ...]
    collection: str
    id_prefix: str

    @property
    def fingerprint_key(self) -> str:
        return f"layer:{self.layer}:fingerprint"


COMMUNITIES = CommunityScheme(
    layer="communities",
    node_kind=NodeKind.COMMUNITY,
    member_edge=EdgeKind.IN_COMMUNITY,
    parent_edge=EdgeKind.SUBCOMMUNITY,
    edge_kinds=(EdgeKind.RELATION,),
    collection="community_reports",
    id_prefix="comm",
)


@dataclass
class CommunityOptions:
    """How communities are detected and reported (a layer's config carries the same names)."""

    max_cluster_size: int = 10  # code: largest Leiden cluster (GraphRAG's max_cluster_size)
    leiden_resolution: float = 1.0  # code: modularity at resolution 1 (GraphRAG's default)
    seed: int = 0  # ours: a rebuild gives the same hierarchy
    largest_component: bool = False  # ours: every component (HiRAG's code: the largest only)
    community_reports: bool = True  # paper: a report per community (GraphRAG, HiRAG)
    report_words: int = 120  # ours: length of an extractive report's summary
    report_context_tokens: int = 32768  # code: the report prompt's data budget (HiRAG's code)
    report_llm: bool = True  # ours: LLM reports when an LLM is configured (else extractive)


@dataclass
class Community:
    """One detected community: id, level, members (most connected first), parent id."""

    id: str
    level: int
    cluster: int
    members: list[str]
    parent: str | None = None
    children: list[str] = field(default_factory=list)


def community_id(level: int, members: Sequence[str], prefix: str = "comm") -> str:
    digest = hashlib.sha256("\n".join([str(level), *sorted(members)]).encode()).hexdigest()
    return f"{prefix}:{digest[:16]}"


def largest_component(rows: Sequence[tuple[str, str, float]]) -> list[tuple[str, str, float]]:
    """The rows of the largest connected component (ties: the one with the smallest node id)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for u, v, _ in rows:
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[max(ru, rv)] = min(ru, rv)
    sizes: dict[str, int] = {}
    for node in list(parent):
        root = find(node)
        sizes[root] = sizes.get(root, 0) + 1
    if not sizes:
        return []
    best = min(sizes, key=lambda r: (-sizes[r], r))
    return [row for row in rows if find(row[0]) == best]


def weighted_degrees(rows: Iterable[tuple[str, str, float]]) -> dict[str, float]:
    degree: dict[str, float] = {}
    for src, dst, weight in rows:
        degree[src] = degree.get(src, 0.0) + weight
        degree[dst] = degree.get(dst, 0.0) + weight
    return degree


def detect_communities(
    rows: Sequence[tuple[str, str, float]], options: CommunityOptions, prefix: str = "comm"
) -> list[Community]:
    """The Leiden hierarchy of ``rows`` as communities, level by level (coarsest first)."""
    from hygraph.graph.algorithms.leiden import hierarchical_communities

    if options.largest_component:
        rows = largest_component(rows)
    found = hierarchical_communities(
        rows, max_cluster_size=options.max_cluster_size,
        resolution=options.leiden_resolution, seed=options.seed,
    )  # fmt: skip
    members: dict[tuple[int, int], list[str]] = {}
    parents: dict[tuple[int, int], int | None] = {}
    for node, level, cluster, parent in found:
        members.setdefault((level, cluster), []).append(node)
        parents[(level, cluster)] = parent
    degree = weighted_degrees(rows)
    ids = {key: community_id(key[0], group, prefix) for key, group in members.items()}
    out: dict[str, Community] = {}
    for (level, cluster), group in sorted(members.items()):
        ranked = sorted(group, key=lambda n: (-degree.get(n, 0.0), n))
        parent_key = (level - 1, parents[(level, cluster)])
        parent = ids.get(parent_key) if parents[(level, cluster)] is not None else None
        out[ids[(level, cluster)]] = Community(ids[(level, cluster)], level, cluster, ranked,
                                               parent)  # fmt: skip
    for community in out.values():
        if community.parent in out:
            out[community.parent].children.append(community.id)
    return list(out.values())


def graph_fingerprint(res: Resources, scheme: CommunityScheme, options: object) -> str:
    """A hash of the scheme's edges, its members' names and texts, and ``options``."""
    rows = sorted(res.store.edge_rows(list(scheme.edge_kinds)))
    ends = sorted({n for s, d, _ in rows for n in (s, d)})
    nodes = res.store.get_nodes(ends)
    texts = [(n, nodes[n].name, nodes[n].text) for n in ends if n in nodes]
    settings = options.to_dict() if hasattr(options, "to_dict") else repr(options)
    return hashlib.sha256(repr((rows, texts, settings)).encode()).hexdigest()[:16]


def compute_communities(
    res: Resources,
    scheme: CommunityScheme,
    options: CommunityOptions,
    rows: Sequence[tuple[str, str, float]] | None = None,
) -> list[Community]:
    """Detect the communities of the scheme's graph and bring the store up to date.

    Communities whose id is unchanged keep their report; vanished ones lose their node,
    edges and vector; reports are then written for the communities that lack a current
    one (:func:`~hygraph.layers.community_reports.write_reports`). ``rows`` overrides the
    graph's ``(src, dst, weight)`` edges (default: the scheme's edge kinds).
    """
    if rows is None:
        rows = res.store.edge_rows(list(scheme.edge_kinds))
    found = detect_communities(rows, options, scheme.id_prefix)
    nodes, edges = _records(res, scheme, found)
    old = {n.id: n for n in res.store.nodes_of_kind(scheme.node_kind)}
    vanished = [cid for cid in old if cid not in nodes]
    for cid, node in nodes.items():
        if cid in old:
            _keep_report(node, old[cid])
    with res.store.transaction():
        res.store.delete_nodes(vanished)
        _clear_edges(res, scheme)
        res.store.upsert_nodes(nodes.values())
        res.store.upsert_edges(edges)
    res.delete_vectors(scheme.collection, vanished)
    if options.community_reports:
        from hygraph.layers.community_reports import write_reports

        write_reports(res, scheme, found, rows, options)
    return found


REPORT_FIELDS = ("report", "report_of", "written_by", "title", "rating")


def _keep_report(new: Node, old: Node) -> None:
    """Carry a kept community's report over to its recomputed node."""
    if not old.data.get("report"):
        return
    from hygraph.layers.community_reports import report_text

    for key in REPORT_FIELDS:
        if key in old.data:
            new.data[key] = old.data[key]
    new.text = report_text(new.name or new.id, old.data["report"])


def _records(
    res: Resources, scheme: CommunityScheme, found: list[Community]
) -> tuple[dict[str, Node], list[Edge]]:
    """Community nodes (no report yet) and membership / hierarchy edges."""
    members = res.store.get_nodes({n for c in found for n in c.members})
    nodes: dict[str, Node] = {}
    edges: list[Edge] = []
    for c in found:
        names = [members[n].name or n for n in c.members if n in members][:MEMBERS_SHOWN]
        sources = sorted({s for n in c.members if n in members for s in members[n].sources})
        data = {"level": c.level, "size": len(c.members), "members": c.members}
        nodes[c.id] = Node(c.id, scheme.node_kind, f"community {c.level}.{c.cluster}",
                           ", ".join(names), data, tuple(sources))  # fmt: skip
        edges += [Edge(n, c.id, scheme.member_edge, 1.0) for n in c.members]
        if c.parent is not None:
            edges.append(Edge(c.parent, c.id, scheme.parent_edge, 1.0))
    return nodes, edges


def _clear_edges(res: Resources, scheme: CommunityScheme) -> None:
    keys = [(e.src, e.dst, e.kind) for kind in (scheme.member_edge, scheme.parent_edge)
            for e in res.store.iter_edges(kind)]  # fmt: skip
    res.store.delete_edges(keys)


def clear_communities(res: Resources, scheme: CommunityScheme) -> None:
    """Remove every community of the scheme: nodes, edges, report vectors, fingerprint."""
    old = [n.id for n in res.store.nodes_of_kind(scheme.node_kind)]
    with res.store.transaction():
        res.store.delete_nodes(old)
        _clear_edges(res, scheme)
        res.store.set_meta(scheme.fingerprint_key, "")
    res.delete_vectors(scheme.collection, old)


def forget_removed(res: Resources, scheme: CommunityScheme, removed: DeleteResult) -> None:
    """Drop the report vectors of communities the store deleted with a document.

    (A community whose every source chunk went is deleted by the store itself, before
    the layer recomputes; its id is only known from the delete's result.)
    """
    prefix = f"{scheme.id_prefix}:"
    res.delete_vectors(scheme.collection, [n for n in removed.node_ids if n.startswith(prefix)])


@dataclass
class CommunitiesConfig(CommunityOptions, LayerConfig):
    """The ``communities`` layer's options (see :class:`CommunityOptions`)."""


@register_layer
class Communities(Layer):
    name = "communities"
    description = "hierarchical Leiden communities of the entity graph, with reports"
    requires = ("entity-graph",)
    collections = (COMMUNITIES.collection,)
    Config = CommunitiesConfig

    config: CommunitiesConfig
    scheme = COMMUNITIES

    def pending(self, res: Resources) -> list[str]:
        stale = res.store.get_meta(self.scheme.fingerprint_key) != graph_fingerprint(
            res, self.scheme, self.config
        )
        return ["*"] if stale else []

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> int:
        compute_communities(res, self.scheme, self.config)
        res.store.set_meta(
            self.scheme.fingerprint_key, graph_fingerprint(res, self.scheme, self.config)
        )
        return 0

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        forget_removed(res, self.scheme, removed)
        self.update(res)

    def reset(self, res: Resources) -> None:
        clear_communities(res, self.scheme)
