"""``communities``: the Leiden hierarchy of the entity graph, stored as community nodes.

Hierarchical Leiden (graspologic's native core, :func:`~hygraph.graph.algorithms.leiden.
hierarchical_communities`) runs over the relation edges, weighted by relation strength;
every cluster larger than ``max_cluster_size`` is split again one level down (GraphRAG's
hierarchy, 10 its default). Each community is a ``community`` node (id: a hash of its
level and members; text: its members' names, the most connected first) with
``in_community`` edges from its entities and ``subcommunity`` edges from its parent.
Community reports and their vectors are written over these nodes by the methods that
need them.

Communities are a property of the whole graph, so the layer is recomputed whenever the
relation edges changed (a fingerprint of them is kept in the store's meta table), after
inserts and deletes alike; an unchanged graph costs nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import Edge, Node
from hygraph.layers.base import Layer, LayerConfig, register_layer

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.resources import Resources

FINGERPRINT_KEY = "layer:communities:fingerprint"
MEMBERS_SHOWN = 12  # names in a community's text (ours)


@dataclass
class CommunitiesConfig(LayerConfig):
    max_cluster_size: int = 10  # GraphRAG's default max_cluster_size
    leiden_resolution: float = 1.0  # modularity, as GraphRAG
    seed: int = 0  # ours: a rebuild gives the same hierarchy


def community_id(level: int, members: Sequence[str]) -> str:
    digest = hashlib.sha256("\n".join([str(level), *sorted(members)]).encode()).hexdigest()
    return f"comm:{digest[:16]}"


@register_layer
class Communities(Layer):
    name = "communities"
    description = "hierarchical Leiden communities of the entity graph (graspologic native)"
    requires = ("entity-graph",)
    Config = CommunitiesConfig

    config: CommunitiesConfig

    def _fingerprint(self, res: Resources) -> str:
        rows = sorted(res.store.edge_rows([EdgeKind.RELATION]))
        text = repr((rows, self.config.to_dict()))
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def pending(self, res: Resources) -> list[str]:
        stale = res.store.get_meta(FINGERPRINT_KEY) != self._fingerprint(res)
        return ["*"] if stale else []

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> int:
        from hygraph.graph.algorithms.leiden import hierarchical_communities

        rows = res.store.edge_rows([EdgeKind.RELATION])
        found = hierarchical_communities(
            rows, max_cluster_size=self.config.max_cluster_size,
            resolution=self.config.leiden_resolution, seed=self.config.seed,
        )  # fmt: skip
        nodes, edges = self._records(res, found, rows)
        with res.store.transaction():
            self._clear(res)
            res.store.upsert_nodes(nodes)
            res.store.upsert_edges(edges)
            res.store.set_meta(FINGERPRINT_KEY, self._fingerprint(res))
        return 0

    def _records(
        self, res: Resources, found: list, rows: list[tuple[str, str, float]]
    ) -> tuple[list[Node], list[Edge]]:
        """Community nodes and membership / hierarchy edges for Leiden's output."""
        members: dict[tuple[int, int], list[str]] = {}
        parents: dict[tuple[int, int], int | None] = {}
        for node, level, cluster, parent in found:
            members.setdefault((level, cluster), []).append(node)
            parents[(level, cluster)] = parent
        degree: dict[str, float] = {}
        for src, dst, weight in rows:
            degree[src] = degree.get(src, 0.0) + weight
            degree[dst] = degree.get(dst, 0.0) + weight
        entities = res.store.get_nodes({n for group in members.values() for n in group})
        ids = {key: community_id(key[0], group) for key, group in members.items()}
        nodes, edges = [], []
        for (level, cluster), group in sorted(members.items()):
            cid = ids[(level, cluster)]
            ranked = sorted(group, key=lambda n: (-degree.get(n, 0.0), n))
            names = [entities[n].name or n for n in ranked if n in entities][:MEMBERS_SHOWN]
            sources = sorted({s for n in group if n in entities for s in entities[n].sources})
            data = {"level": level, "size": len(group), "members": ranked}
            nodes.append(Node(cid, NodeKind.COMMUNITY, f"community {level}.{cluster}",
                              ", ".join(names), data, tuple(sources)))  # fmt: skip
            edges += [Edge(n, cid, EdgeKind.IN_COMMUNITY, 1.0) for n in group]
            parent = parents[(level, cluster)]
            if parent is not None and (level - 1, parent) in ids:
                edges.append(Edge(ids[(level - 1, parent)], cid, EdgeKind.SUBCOMMUNITY, 1.0))
        return nodes, edges

    def _clear(self, res: Resources) -> None:
        old = [n.id for n in res.store.nodes_of_kind(NodeKind.COMMUNITY)]
        keys = [(e.src, e.dst, e.kind) for kind in (EdgeKind.IN_COMMUNITY, EdgeKind.SUBCOMMUNITY)
                for e in res.store.iter_edges(kind)]  # fmt: skip
        res.store.delete_nodes(old)
        res.store.delete_edges(keys)

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        self.update(res)

    def reset(self, res: Resources) -> None:
        with res.store.transaction():
            self._clear(res)
            res.store.set_meta(FINGERPRINT_KEY, "")
