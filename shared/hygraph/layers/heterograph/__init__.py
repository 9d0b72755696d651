"""``heterograph``: NodeRAG's heterograph (Xu et al., 2025), seven node types over the chunks.

Built over the chunks new since the last build (the *delta*; the first build's delta
is the whole corpus, so one code path serves both), in the steps of spec 004 §3:

1. **decomposition**: each chunk's extraction becomes semantic units (S), the shared
   entities (N) and relationship nodes (R) linked to their two ends
   (:mod:`hygraph.graph.heterograph`); S are embedded;
2. **attributes** (:mod:`.attributes`): the delta graph's important entities get an
   attribute node (A), linked to the entity and embedded;
3. **communities and high-level elements** (:mod:`.elements`): Leiden on G2 = G1 + A;
   per community, high-level elements (H, embedded) with their titles (O), each H
   linked to the S/A of its community it is semantically close to;
4. **semantic edges** (:mod:`.semantic`): the chunks (T) link to their units, and
   every embedded node (T, S, A, H) to its ``semantic_k`` nearest neighbours.

Deletes and resets are in :mod:`.maintain`. The layer is shared by ``noderag`` and
``noderag-fused``; its collection (``noderag``) and progress task (``layer:noderag``)
keep the names of the indexes built before layers existed.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from hygraph.layers.base import Layer, register_layer
from hygraph.layers.heterograph import maintain
from hygraph.layers.heterograph.attributes import build_attributes
from hygraph.layers.heterograph.config import LAYER_TASK, NODE_COLLECTION, HeterographConfig
from hygraph.layers.heterograph.elements import build_elements, detect_communities, link_elements
from hygraph.layers.heterograph.semantic import delta_semantic_edges, embed_nodes

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.resources import Resources

__all__ = ["LAYER_TASK", "NODE_COLLECTION", "HeterographConfig", "HeterographLayer"]

log = logging.getLogger("hygraph")


def delta_tag(chunk_ids: Sequence[str]) -> str:
    """A short digest of the delta: marks the A/H nodes one build wrote, for its resume."""
    return hashlib.sha256("\n".join(sorted(chunk_ids)).encode()).hexdigest()[:12]


@register_layer
class HeterographLayer(Layer):
    name = "heterograph"
    description = "NodeRAG heterograph: units, relationships, attributes, insights, kNN edges"
    requires = ("entity-graph", "chunks")
    collections = (NODE_COLLECTION,)
    task = LAYER_TASK
    after_extraction = True
    Config = HeterographConfig

    config: HeterographConfig

    def __init__(self, config: Any = None):
        super().__init__(config)
        self.build_seconds: dict[str, float] = {}
        """Seconds per step of the last build (logged when it ends)."""

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> None:
        from hygraph.graph.heterograph import HeterographBuilder

        done = res.store.done_items(LAYER_TASK)
        delta = [c for c in chunk_ids if c not in done]
        if not delta:
            return
        self.build_seconds = {}
        cfg, tag = self.config, delta_tag(delta)
        builder = HeterographBuilder(
            res.store, link_relationships_to_units=cfg.link_relationships_to_units
        )
        with self._step("decomposition"):
            dec = builder.decompose(list(res.store.get_extractions(delta).values()))
            builder.write(dec.update)
        with self._step("embed units"):
            units = list(dec.units)
            unit_vectors = embed_nodes(res, units, [dec.units[i] for i in units], "S")
        with self._step("attributes"):
            attrs, attr_edges = build_attributes(res, cfg, dec, tag)
            builder.write_nodes_edges(attrs, attr_edges)
            attr_ids = [n.id for n in attrs]
            attr_vectors = embed_nodes(res, attr_ids, [n.text or "" for n in attrs], "A")
        with self._step("communities"):
            communities = detect_communities(cfg, dec, attr_edges)
        with self._step("high-level elements"):
            elements = build_elements(res, cfg, dec, communities, attrs, tag)
            builder.write_nodes_edges([*elements.high, *elements.titles], elements.edges)
            high_ids = [n.id for n in elements.high]
            texts = [n.text or "" for n in elements.high]
            high_vectors = embed_nodes(res, high_ids, texts, "H")
        embedded = [(units, unit_vectors), (attr_ids, attr_vectors), (high_ids, high_vectors)]
        with self._step("semantic matching"):
            members = link_elements(cfg, dec, communities, elements, embedded, attrs)
            builder.write_nodes_edges([], members)
        with self._step("semantic edges"):
            exact = not done and cfg.knn == "exact"
            edges = delta_semantic_edges(res, cfg, delta, embedded, exact=exact)
            builder.write_nodes_edges([], edges)
        res.store.mark_done(LAYER_TASK, delta)
        log.info(
            "noderag: %d units, %d relationships, %d attributes, %d high-level elements; %s",
            len(dec.units), len(dec.relationships), len(attrs), len(elements.high),
            ", ".join(f"{k} {v:.1f}s" for k, v in self.build_seconds.items()),
        )  # fmt: skip

    @contextmanager
    def _step(self, name: str) -> Iterator[None]:
        """Time one build step into :attr:`build_seconds` (logged when the build ends)."""
        start = time.perf_counter()
        try:
            yield
        finally:
            took = time.perf_counter() - start
            self.build_seconds[name] = self.build_seconds.get(name, 0.0) + took

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        """Drop what only the deleted chunks supported; rewrite A/H nodes that lost support."""
        maintain.delete(res, self.config, removed)

    def reset(self, res: Resources) -> None:
        """Remove the whole layer (nodes, ``nr_*`` edges, vectors, progress marks)."""
        maintain.reset(res)
