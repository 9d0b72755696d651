"""``entity-vectors``: one vector per entity of the shared graph, in the ``entities`` collection.

An entity is embedded as ``"name: description"`` (HyperGraphRAG; ``embed_style=
"reference"`` concatenates them as the authors' code does). Entities are embedded for
each new chunk that names them, so an entity whose merged description changed is
embedded again (the embedding cache makes an unchanged one free). A delete removes
the vectors of entities that left the graph and re-embeds those that lost text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hygraph.graph.kinds import NodeKind
from hygraph.layers.base import Layer, LayerConfig, in_batches, register_layer

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.resources import Resources

ENTITY_COLLECTION = "entities"
BUILD_BATCH = 256
EMBED_STYLES = ("paper", "reference")


@dataclass
class EntityVectorsConfig(LayerConfig):
    embed_style: str = "paper"  # paper: "name: description" | reference (spec 003 §9 #2)


def entity_embedding_text(name: str, description: str, style: str) -> str:
    if style == "reference":
        return f"{name}{description}"
    return f"{name}: {description}" if description else name


def chunk_entities(res: Resources, chunk_ids: Sequence[str]) -> set[str]:
    """Entity ids that the extractions of ``chunk_ids`` name (as entities or fact members)."""
    from hygraph.extract.keys import entity_key
    from hygraph.graph.entity_graph import entity_node_id

    found: set[str] = set()
    for ex in res.store.get_extractions(chunk_ids).values():
        keys = [e.key for e in ex.entities]
        keys += [entity_key(member) for fact in ex.facts for member in fact.entities]
        found.update(entity_node_id(k) for k in keys if k)
    return found


@register_layer
class EntityVectors(Layer):
    name = "entity-vectors"
    description = "entity vectors ('name: description'), refreshed when descriptions change"
    requires = ("entity-graph",)
    collections = (ENTITY_COLLECTION,)
    after_extraction = True
    task = "layer:entity-vectors"
    Config = EntityVectorsConfig

    config: EntityVectorsConfig

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> None:
        for batch in in_batches(res, chunk_ids, BUILD_BATCH):
            self.embed(res, chunk_entities(res, batch))
            res.store.mark_done(self.task or "", batch)

    def embed(self, res: Resources, entity_ids: Iterable[str]) -> None:
        """Embed these entities as they are now (missing or non-entity ids are skipped)."""
        texts = self.texts(res, entity_ids)
        res.upsert_vectors(
            ENTITY_COLLECTION, list(texts), list(texts.values()), [{"kind": "entity"}] * len(texts)
        )

    def texts(self, res: Resources, entity_ids: Iterable[str]) -> dict[str, str]:
        """Entity id → what it is embedded as, for the entities among ``entity_ids``."""
        found = res.store.get_nodes(sorted(entity_ids), sources=False).values()
        style = self.config.embed_style
        return {
            n.id: entity_embedding_text(n.name or "", n.text or "", style)
            for n in found
            if n.kind == NodeKind.ENTITY
        }

    def planned_texts(self, res: Resources, chunk_ids: Sequence[str]) -> list[str]:
        return list(self.texts(res, chunk_entities(res, chunk_ids)).values())

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        res.delete_vectors(ENTITY_COLLECTION, [n for n in removed.node_ids if n.startswith("ent:")])
        self.embed(res, [n for n in removed.touched_node_ids if n.startswith("ent:")])

    def reset(self, res: Resources) -> None:
        super().reset(res)
        entities = [n.id for n in res.store.nodes_of_kind(NodeKind.ENTITY)]
        res.delete_vectors(ENTITY_COLLECTION, entities)
