"""``hygrag``: HyGRAG's hybrid chunk + entity graph with LSH summary layers (spec 000).

HyGRAG (Zhong et al., WWW '26) puts chunks and entities in one graph, embeds every
node with text-initialised Cleora, buckets chunks and entities *together* with
hyperplane LSH into size-bounded communities, and summarises each community (up to
four layers). New documents are attached to the most similar community at the
lowest layer that passes a threshold, and only the path to the root is summarised
again. The pieces:

* :mod:`.hygrag_graph`: the hybrid graph (the shared entity graph's mentions and
  relations, plus this layer's chunk–chunk ``hy_shared`` edges), leaves, Cleora
  input, and what a summary is written from;
* :mod:`.hygrag_tree`: the full build (Cleora, LSH per layer, summaries), resumable;
* :mod:`.hygrag_update`: incremental insert (the paper's attachment) and delete.

Without an LLM, summaries are extractive: the sentences of the group's passages,
relations (written as sentences) and entity descriptions that share the most
vocabulary with the rest of the group (:func:`~hygraph.layers.summaries.
summarize_groups`); with one, an LLM reply that fails or cannot be read falls back
to that extractive summary for that group only.

The layer's first build (and a rebuild, or an insert that brings more than
``rebuild_fraction`` of the chunks) builds every layer; later inserts attach.
:attr:`HyGRAGLayer.last_update` reports what the last insert or delete did,
including how many summaries it wrote (the LLM calls it made).

Choices where the spec leaves room (its §10 items):

* entities are the shared entity graph's (extract once, build many); their text
  vectors, Cleora's starting point for them and what entity retrieval searches, are
  the shared ``entity-vectors`` layer's (``"name: description"``, the name alone
  without a description; A5, A8);
* chunk pairs are linked at ``>= 3`` shared entities (A1); Cleora runs on the
  unweighted undirected projection (A6, A7); LSH visits buckets in code order and
  merges remainders into the nearest cluster, so every leaf has a summary (A9);
  hyperplanes are seeded 42 + layer and reproducible, so none are stored;
* a summary's provenance is every chunk below it (its chunk leaves and the chunks
  its entities were named in when it was written), so deleting a document reports
  exactly the summaries above what it removed; a later document naming an entity
  that already has a summary leaves that summary alone, as the paper updates only
  the attachment path (§6.1);
* an inserted document whose summary passes no layer gets a new layer-1 summary
  with no parent (§6.1's first resolution); it is retrieved like any other, since
  retrieval is flat.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hygraph.layers.base import Layer, register_layer
from hygraph.layers.hygrag_config import HyGRAGLayerConfig
from hygraph.layers.hygrag_graph import HY_COLLECTION, LAYER_TASK
from hygraph.layers.hygrag_tree import build, clear_tree, fingerprint, get_state, set_state

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.resources import Resources

__all__ = ["HY_COLLECTION", "HyGRAGLayer", "HyGRAGLayerConfig"]


@register_layer
class HyGRAGLayer(Layer):
    name = "hygrag"
    description = "HyGRAG: Cleora + LSH summary layers over chunks and entities, attach on insert"
    requires = ("entity-graph", "chunks", "entity-vectors")
    collections = (HY_COLLECTION,)
    task = LAYER_TASK
    after_extraction = True
    Config = HyGRAGLayerConfig

    config: HyGRAGLayerConfig

    def __init__(self, config: Any = None):
        super().__init__(config)
        self.last_update: dict[str, Any] = {}
        """What the last build, insert or delete did (mode, counts, summaries written)."""

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> None:
        from hygraph.layers import hygrag_update

        cfg = self.config
        state = get_state(res)
        if state.get("state") == "built":
            known = len(res.store.done_items(LAYER_TASK))
            if len(chunk_ids) <= cfg.rebuild_fraction * (known + len(chunk_ids)):
                self.last_update = hygrag_update.insert(res, cfg, chunk_ids)
                return
            clear_tree(res)  # mostly new: a rebuild over every chunk costs less
            chunk_ids = self.pending(res)
            state = {}
        key = fingerprint(chunk_ids, cfg)
        if state.get("fingerprint") != key:
            clear_tree(res)  # nothing, or a killed build over other chunks: start afresh
            set_state(res, {"state": "building", "fingerprint": key})
        self.last_update = build(res, cfg, chunk_ids)
        with res.store.transaction():
            res.store.mark_done(LAYER_TASK, chunk_ids)
            set_state(res, {"state": "built"})

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        from hygraph.layers import hygrag_update

        if get_state(res).get("state") == "built":
            self.last_update = hygrag_update.delete(res, self.config, removed)
        # A build in progress restarts over the remaining chunks (its fingerprint changed).

    def reset(self, res: Resources) -> None:
        clear_tree(res)
