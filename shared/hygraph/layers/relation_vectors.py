"""``relation-vectors``: one vector per relation edge of the entity graph (``relations``).

A relation is embedded as ``"source label target: descriptions"`` (the textual-KG
relationship of LightRAG and GraphRAG local search), under the id ``"source|target"``
of its two entity ids. Relations named by new chunks are embedded again (their label
and descriptions may have grown; the embedding cache makes unchanged ones free). The
ids of embedded relations are kept as the progress items of ``relation-vectors:ids``,
so a delete can drop the vectors of relations that left the graph.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from hygraph.graph.kinds import EdgeKind
from hygraph.layers.base import Layer, in_batches, register_layer

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult, Edge
    from hygraph.resources import Resources

RELATION_COLLECTION = "relations"
IDS_TASK = "relation-vectors:ids"
BUILD_BATCH = 256


def relation_id(src: str, dst: str) -> str:
    return f"{src}|{dst}"


def relation_ids(pairs: Iterable[tuple[str, str]]) -> list[str]:
    """:func:`relation_id` of each ``(src, dst)`` pair, joined in C (a build reads every
    relation's id after each insert)."""
    return list(map("|".join, pairs))


def relation_text(src_name: str, label: str, dst_name: str, descriptions: Iterable[str]) -> str:
    """What a relation is embedded as (and shown as)."""
    head = f"{src_name} {label or 'related to'} {dst_name}"
    body = "; ".join(dict.fromkeys(d.strip() for d in descriptions if d and d.strip()))
    return f"{head}: {body}" if body else head


def named_relations(
    res: Resources, chunk_ids: Sequence[str], extractions: dict[str, Any] | None = None
) -> list[tuple[str, str, str]]:
    """Keys of the relation edges that the extractions of ``chunk_ids`` name
    (``extractions``: those extractions, where the caller read them)."""
    from hygraph.graph.entity_graph import entity_node_id

    if extractions is None:
        extractions = res.store.get_extractions(chunk_ids)
    keys = {
        (entity_node_id(r.source_key), entity_node_id(r.target_key), EdgeKind.RELATION)
        for ex in extractions.values()
        for r in ex.relations
        if r.source_key and r.target_key
    }
    return sorted(keys)


@register_layer
class RelationVectors(Layer):
    name = "relation-vectors"
    description = "relation vectors ('source label target: descriptions') in 'relations'"
    requires = ("entity-graph",)
    collections = (RELATION_COLLECTION,)
    after_extraction = True
    task = "layer:relation-vectors"
    #: The collection written and the progress task keeping its ids (a subclass sets its own).
    collection: ClassVar[str] = RELATION_COLLECTION
    ids_task: ClassVar[str] = IDS_TASK
    #: Whether :meth:`text` reads the per-chunk entries (a pair stated in many chunks has
    #: many: a layer that embeds the label alone does not read them).
    reads_entries: ClassVar[bool] = True

    def text(self, edge: Edge, src_name: str, dst_name: str) -> str:
        """What one relation edge is embedded as (a subclass may add to it)."""
        entries = edge.data.get("entries", {})
        described = [item[1] for items in entries.values() for item in items if len(item) > 1]
        label = str(edge.data.get("label", ""))
        return relation_text(src_name, label, dst_name, described)

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> None:
        for batch in in_batches(res, chunk_ids, BUILD_BATCH, "relation vectors"):
            self.embed(res, self.keys(res, batch))
            res.store.mark_done(self.task or "", batch)

    def keys(self, res: Resources, chunk_ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """The relation edges the extractions of ``chunk_ids`` state."""
        return named_relations(res, chunk_ids)

    def planned_texts(self, res: Resources, chunk_ids: Sequence[str]) -> list[str]:
        return list(self.todo(res, self.texts(res, self.keys(res, chunk_ids))).values())

    def todo(self, res: Resources, texts: dict[str, str]) -> dict[str, str]:
        """Of ``texts`` (relation id → text), those to embed (a subclass may skip some)."""
        return texts

    def embed(self, res: Resources, keys: Sequence[tuple[str, str, str]]) -> None:
        """Embed the relation edges ``keys`` as they are now (missing ones are skipped)."""
        self.store_texts(res, self.texts(res, keys))

    def texts(self, res: Resources, keys: Sequence[tuple[str, str, str]]) -> dict[str, str]:
        """Relation id → what it is embedded as, for the edges ``keys`` that exist."""
        return {rid: self.text(edge, *names) for rid, edge, names in self.named_edges(res, keys)}

    def named_edges(
        self, res: Resources, keys: Sequence[tuple[str, str, str]]
    ) -> list[tuple[str, Edge, tuple[str, str]]]:
        """The edges ``keys`` that exist, in order: relation id, edge, display names."""
        edges = res.store.get_edges(keys, entries=self.reads_entries)
        names = {n.id: n.name or n.id for n in res.store.get_nodes(
            {e for k in edges for e in k[:2]}, sources=False).values()}  # fmt: skip
        return [
            (relation_id(src, dst), edge, (names.get(src, src), names.get(dst, dst)))
            for (src, dst, _), edge in sorted(edges.items())
        ]

    def store_texts(self, res: Resources, texts: dict[str, str]) -> None:
        """Embed ``texts`` (relation id → text) and record the ids (a subclass may skip some)."""
        ids = list(texts)
        payloads = [{"kind": "relation"} for _ in ids]
        res.upsert_vectors(self.collection, ids, list(texts.values()), payloads)
        res.store.mark_done(self.ids_task, ids)

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        current = {relation_id(s, d) for s, d, _ in res.store.edge_rows([EdgeKind.RELATION])}
        embedded = res.store.done_items(self.ids_task)
        res.delete_vectors(self.collection, sorted(embedded - current))
        with res.store.transaction():
            res.store.clear_progress(self.ids_task)
            res.store.mark_done(self.ids_task, sorted(embedded & current))
        touched = set(removed.touched_node_ids)
        keys = [(s, d, EdgeKind.RELATION) for s, d, _ in res.store.edge_rows([EdgeKind.RELATION])
                if s in touched or d in touched]  # fmt: skip
        self.embed(res, keys)

    def reset(self, res: Resources) -> None:
        res.delete_vectors(self.collection, sorted(res.store.done_items(self.ids_task)))
        res.store.clear_progress(self.ids_task)
        super().reset(res)
