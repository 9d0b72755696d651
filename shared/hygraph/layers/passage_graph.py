"""``passage-graph``: KGP's passage graph, one node per chunk (spec 002 §2.2 "PG").

Two chunks are joined by an undirected ``pg_shared`` edge when they mention at least
``pg_min_shared`` (τ) common entities. The paper builds it with an entity-linking tool
and compares the entity sets of all chunk pairs; here the entities are the shared
entity graph's (its ``mentions`` edges, so the layer costs no LLM call), and the pairs
are found through the entity → chunk index (:mod:`hygraph.graph.algorithms.shared_entities`),
which touches only pairs that share an entity. The paper gives no default for τ; its
worked example uses τ = 2 [spec §2.2, appendix B.8], which is the default here. An edge
is stored once, from the smaller chunk id to the larger, weighted by the shared count.

Option ``pg_similar_k`` (ours, off by default: the spec names only shared entities; the
KGP paper also builds passage graphs from passage similarity): each chunk is also joined
by a ``pg_similar`` edge to its ``k`` most similar other chunks by vector cosine, weighted
by the cosine. A chunk finds its ``k`` nearest when it joins the layer (and again after a
delete removed one of them); an older chunk keeps its links and gains those of newer
chunks that pick it.

Insert links the new chunks to every chunk already in the layer and to each other, a
batch at a time, each batch marked done with its edges (a killed build resumes, and
rewriting an edge is an idempotent upsert). Delete needs nothing for shared-entity
edges: the store drops every edge touching a deleted chunk, and two surviving chunks
keep the entities they mention.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hygraph.errors import ConfigError
from hygraph.graph.kinds import EdgeKind
from hygraph.graph.store import Edge
from hygraph.layers.base import Layer, LayerConfig, in_batches, register_layer

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.resources import Resources

BUILD_BATCH = 512
PASSAGE_EDGES = (EdgeKind.PASSAGE_SHARED, EdgeKind.PASSAGE_SIMILAR)


@dataclass
class PassageGraphConfig(LayerConfig):
    pg_min_shared: int = 2  # τ, shared entities for an edge: the paper's example (spec §2.2)
    pg_similar_k: int = 0  # ours: also link each chunk to its k most similar chunks (0: off)

    def __post_init__(self) -> None:
        if self.pg_min_shared < 1:
            raise ConfigError("pg_min_shared must be at least 1")
        if self.pg_similar_k < 0:
            raise ConfigError("pg_similar_k must not be negative")


def mention_index(res: Resources) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """``(chunk -> entities, entity -> chunks)`` from the entity graph's mention edges."""
    known = set(res.store.chunk_ids())
    by_chunk: dict[str, set[str]] = defaultdict(set)
    by_entity: dict[str, set[str]] = defaultdict(set)
    for chunk, entity, _ in res.store.edge_rows([EdgeKind.MENTION]):
        if chunk in known:
            by_chunk[chunk].add(entity)
            by_entity[entity].add(chunk)
    return by_chunk, by_entity


@register_layer
class PassageGraph(Layer):
    name = "passage-graph"
    description = "KGP's passage graph: chunks joined when they share >= tau entities"
    requires = ("entity-graph",)
    after_extraction = True
    task = "layer:passage-graph"
    Config = PassageGraphConfig

    config: PassageGraphConfig

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> None:
        from hygraph.graph.algorithms.shared_entities import shared_entity_pairs

        by_chunk, by_entity = mention_index(res)
        done = set(res.store.done_items(self.task or ""))
        for batch in in_batches(res, chunk_ids, BUILD_BATCH, "passage graph"):
            pairs = shared_entity_pairs(by_chunk, by_entity, batch, among=done,
                                        min_shared=self.config.pg_min_shared)  # fmt: skip
            edges = [Edge(a, b, EdgeKind.PASSAGE_SHARED, float(n), sources=(a, b))
                     for (a, b), n in pairs.items()]  # fmt: skip
            edges += self._similar_edges(res, batch)
            with res.store.transaction():
                res.store.upsert_edges(edges)
                res.store.mark_done(self.task or "", batch)
            done.update(batch)

    def _similar_edges(self, res: Resources, chunk_ids: Sequence[str]) -> list[Edge]:
        """``pg_similar`` edges from each chunk to its ``pg_similar_k`` nearest chunks."""
        k = self.config.pg_similar_k
        if k <= 0:
            return []
        from hygraph.resources import CHUNK_COLLECTION

        vectors = res.stored_vectors(CHUNK_COLLECTION, list(chunk_ids))
        found: dict[tuple[str, str], float] = {}
        for chunk in chunk_ids:
            vector = vectors.get(chunk)
            if vector is None:
                continue
            hits = [h for h in res.search_vectors(CHUNK_COLLECTION, vector, k + 1)
                    if h.id != chunk][:k]  # fmt: skip
            for hit in hits:
                found[(chunk, hit.id) if chunk < hit.id else (hit.id, chunk)] = float(hit.score)
        return [Edge(a, b, EdgeKind.PASSAGE_SIMILAR, max(s, 0.0), sources=(a, b))
                for (a, b), s in sorted(found.items())]  # fmt: skip

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        """Shared-entity edges need nothing; chunks short of similar links are relinked."""
        k = self.config.pg_similar_k
        if k <= 0 or not removed.chunk_ids:
            return
        degree: dict[str, int] = defaultdict(int)
        for src, dst, _ in res.store.edge_rows([EdgeKind.PASSAGE_SIMILAR]):
            degree[src] += 1
            degree[dst] += 1
        done = res.store.done_items(self.task or "")
        chunks = [c for c in res.store.chunk_ids() if c in done]
        short = [c for c in chunks if degree.get(c, 0) < min(k, len(chunks) - 1)]
        for batch in in_batches(res, short, BUILD_BATCH):
            res.store.upsert_edges(self._similar_edges(res, batch))

    def reset(self, res: Resources) -> None:
        for kind in PASSAGE_EDGES:
            keys = [(s, d, kind) for s, d, _ in res.store.edge_rows([kind])]
            res.store.delete_edges(keys)
        super().reset(res)
