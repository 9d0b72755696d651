"""``hypergraph``: every extracted n-ary fact as a hyperedge, with fact vectors.

Facts become ``fact`` nodes joined to their member entities by ``incidence`` edges
(:mod:`hygraph.graph.hypergraph`) and are embedded into the ``facts`` collection
(the fact text; ``<hyperedge>`` prefixed in the authors' ``reference`` style). The
layer is built in batches, each marked done, so a killed build resumes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hygraph.layers.base import Layer, LayerConfig, in_batches, register_layer

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult, Node
    from hygraph.resources import Resources

FACT_COLLECTION = "facts"
BUILD_BATCH = 256


@dataclass
class HypergraphLayerConfig(LayerConfig):
    embed_style: str = "paper"  # paper: the fact text | reference: "<hyperedge>" + text


def fact_embedding_text(text: str, style: str) -> str:
    return f"<hyperedge>{text}" if style == "reference" else text


@register_layer
class HypergraphLayer(Layer):
    name = "hypergraph"
    description = "n-ary facts as hyperedges (fact nodes + incidence edges) and fact vectors"
    requires = ("entity-graph", "entity-vectors")
    collections = (FACT_COLLECTION,)
    after_extraction = True
    task = "layer:hypergraph"
    Config = HypergraphLayerConfig

    config: HypergraphLayerConfig

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> None:
        from hygraph.graph.hypergraph import HypergraphBuilder

        builder = HypergraphBuilder(res.store)
        for batch in in_batches(res, chunk_ids, BUILD_BATCH, "hypergraph"):
            update = builder.plan(list(res.store.get_extractions(batch).values()))
            builder.write(update)
            self._embed(res, update.nodes)
            res.store.mark_done(self.task or "", batch)  # a killed build resumes here

    def _embed(self, res: Resources, nodes: Sequence[Node]) -> None:
        style = self.config.embed_style
        res.upsert_vectors(
            FACT_COLLECTION,
            [n.id for n in nodes],
            [fact_embedding_text(n.text or "", style) for n in nodes],
            [{"kind": "fact"} for _ in nodes],
        )

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        from hygraph.graph.hypergraph import HypergraphBuilder

        HypergraphBuilder(res.store).repair(removed)
        res.delete_vectors(FACT_COLLECTION, [n for n in removed.node_ids if n.startswith("fact:")])

    def reset(self, res: Resources) -> None:
        from hygraph.graph.kinds import EdgeKind, NodeKind

        facts = [n.id for n in res.store.nodes_of_kind(NodeKind.FACT)]
        edges = [(e.src, e.dst, e.kind) for e in res.store.iter_edges(EdgeKind.INCIDENCE)]
        with res.store.transaction():
            res.store.delete_nodes(facts)
            res.store.delete_edges(edges)
            res.store.clear_progress(self.task or "")
        res.delete_vectors(FACT_COLLECTION, facts)
