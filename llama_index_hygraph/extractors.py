"""hygraph's extractors as LlamaIndex ``kg_extractors``.

:class:`HyGraphExtractor` runs any core extractor (the offline rules by default, or the
LLM prompts with a LlamaIndex LLM) over LlamaIndex nodes and leaves what it found where
``PropertyGraphIndex`` looks for it, exactly as LlamaIndex's own extractors do: a list of
``EntityNode``\\s under ``node.metadata[KG_NODES_KEY]`` and of ``Relation``\\s under
``node.metadata[KG_RELATIONS_KEY]``, appended to what earlier extractors left there.

What each part of the core's extraction schema becomes:

- an entity: ``EntityNode(name, label=its type)`` with ``score`` (importance, 0–100) and
  its ``description`` (when it has one) among the properties;
- a binary relation: ``Relation(label, source, target)`` with ``weight`` and
  ``description``; its ends are the entities' nodes (same display names);
- an n-ary fact (a HyperGraphRAG hyperedge): ``EntityNode(name=the statement,
  label="fact", score=completeness 0–10)`` and a ``HAS_MEMBER`` relation to each member
  entity (``weight`` = the member's importance under the fact). This is how
  :class:`~llama_index_hygraph.graph_store.HyGraphPropertyGraphStore` shows facts, so a
  graph built either way looks the same. ``facts=False`` leaves them out;
- units (NodeRAG's statements) are left out: no stock LlamaIndex component reads them.

Like LlamaIndex's extractors, every node and relation also carries the chunk's metadata
as properties.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from llama_index.core.bridge.pydantic import Field, PrivateAttr
from llama_index.core.graph_stores.types import (
    KG_NODES_KEY,
    KG_RELATIONS_KEY,
    EntityNode,
    Relation,
)
from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent

from hygraph.extract import ChunkInput, Extraction, entity_key, resolve_extractor
from hygraph.extract.schema import DEFAULT_ENTITY_SCORE, DEFAULT_TYPE

FACT_LABEL = "fact"
HAS_MEMBER_LABEL = "HAS_MEMBER"
DEFAULT_RELATION_LABEL = "related to"
EXTRACT_BATCH = 64  # chunks per extractor call (as the core's builds)


def _core_llm(llm: Any) -> Any:
    """A core LLM for a LlamaIndex LLM, ``Settings.llm`` (when set), or a model name."""
    from llama_index_hygraph.models import resolve_llm

    resolved = resolve_llm(llm)
    if isinstance(resolved, str):
        from hygraph.models.llm import OpenAILLM

        return OpenAILLM(resolved)
    return resolved


class HyGraphExtractor(TransformComponent):
    """A core extractor as a ``TransformComponent`` for ``PropertyGraphIndex(kg_extractors=)``.

    Args:
        extractor: an extractor spec (``"offline"``, ``"offline:counts=true"``, ``"llm"``,
            ``"llm-twostep"``, ``"llm-nary"``, ``"precomputed:FILE"``; see
            :mod:`hygraph.extract`) or a core extractor object.
        llm: for the LLM specs: a LlamaIndex ``LLM`` (default ``Settings.llm`` when it was
            set), a core LLM, or a model name for an OpenAI-compatible endpoint.
        facts: also emit n-ary facts as ``fact`` nodes with ``HAS_MEMBER`` relations.
        batch_size: chunks per extractor call (LLM extractors run a batch concurrently).
    """

    extractor: Any = Field(default="offline", description="Core extractor spec or object.")
    llm: Any = Field(default=None, description="LLM for the LLM extractor specs.")
    facts: bool = Field(default=True, description="Emit n-ary facts as fact nodes.")
    batch_size: int = Field(default=EXTRACT_BATCH, gt=0, description="Chunks per call.")
    _core: Any = PrivateAttr(default=None)

    def __init__(
        self,
        extractor: str | Any = "offline",
        llm: Any = None,
        *,
        facts: bool = True,
        batch_size: int = EXTRACT_BATCH,
        **kwargs: Any,
    ):
        super().__init__(extractor=extractor, llm=llm, facts=facts, batch_size=batch_size, **kwargs)
        needs_llm = isinstance(extractor, str) and extractor.startswith("llm")
        # Resolve now: a bad spec or a missing LLM fails here, not half-way through a build.
        self._core = resolve_extractor(extractor, _core_llm(llm) if needs_llm else None)
        if self._core is None:
            raise ValueError("extractor 'none' extracts nothing; leave HyGraphExtractor out")

    @classmethod
    def class_name(cls) -> str:
        return "HyGraphExtractor"

    @property
    def core_extractor(self) -> Any:
        """The wrapped core extractor (its ``stats`` count what it did)."""
        return self._core

    def __call__(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> Sequence[BaseNode]:
        """Extract from each node and append the results to its KG metadata lists."""
        nodes = list(nodes)
        found: dict[str, Extraction] = {}
        for start in range(0, len(nodes), self.batch_size):
            batch = nodes[start : start + self.batch_size]
            inputs = [
                ChunkInput(
                    node.node_id,
                    node.ref_doc_id or node.node_id,
                    node.get_content(metadata_mode=MetadataMode.NONE),
                    node.metadata.get("title"),
                )
                for node in batch
            ]
            found.update((e.chunk_id, e) for e in self._core.extract(inputs))
        for node in nodes:
            kg_nodes = node.metadata.pop(KG_NODES_KEY, [])
            kg_relations = node.metadata.pop(KG_RELATIONS_KEY, [])
            extraction = found.get(node.node_id)
            if extraction is not None:  # left out: the extractor could not process it
                more_nodes, more_relations = self.to_graph(extraction, node.metadata.copy())
                kg_nodes.extend(more_nodes)
                kg_relations.extend(more_relations)
            node.metadata[KG_NODES_KEY] = kg_nodes
            node.metadata[KG_RELATIONS_KEY] = kg_relations
        return nodes

    async def acall(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> Sequence[BaseNode]:
        # Core extractors are synchronous (LLM ones batch their calls concurrently
        # themselves); a worker thread keeps the caller's event loop free.
        return await asyncio.to_thread(self.__call__, nodes, show_progress, **kwargs)

    def to_graph(
        self, extraction: Extraction, metadata: dict[str, Any] | None = None
    ) -> tuple[list[EntityNode], list[Relation]]:
        """The ``EntityNode``\\s and ``Relation``\\s for one chunk's extraction."""
        metadata = dict(metadata or {})
        entities: dict[str, EntityNode] = {}
        importance: dict[str, float] = {}
        for e in extraction.entities:
            key = entity_key(e.name)
            if not key or key in entities:
                continue
            props = {**metadata, "score": float(e.score)}
            if e.description:
                props["description"] = e.description
            entities[key] = EntityNode(name=e.name, label=e.type or DEFAULT_TYPE, properties=props)
            importance[key] = float(e.score)
        relations: list[Relation] = []

        def node_of(name: str) -> EntityNode | None:
            key = entity_key(name)
            if key and key not in entities:  # normalised extractions never need this
                entities[key] = EntityNode(name=name, properties=dict(metadata))
            return entities.get(key)

        for r in extraction.relations:
            source, target = node_of(r.source), node_of(r.target)
            if source is None or target is None:
                continue
            props = {**metadata, "weight": float(r.weight)}
            if r.description:
                props["description"] = r.description
            relations.append(
                Relation(
                    label=r.label or DEFAULT_RELATION_LABEL,
                    source_id=source.id,
                    target_id=target.id,
                    properties=props,
                )
            )
        fact_nodes: list[EntityNode] = []
        if self.facts:
            for fact in extraction.facts:
                fact_node = EntityNode(
                    name=fact.text,
                    label=FACT_LABEL,
                    properties={**metadata, "score": float(fact.score)},
                )
                fact_nodes.append(fact_node)
                for member in fact.entities:
                    target = node_of(member)
                    if target is None:
                        continue
                    weight = fact.member_scores.get(
                        member, importance.get(entity_key(member), DEFAULT_ENTITY_SCORE)
                    )
                    props = {**metadata, "weight": float(weight)}
                    if fact.member_descriptions.get(member):
                        props["description"] = fact.member_descriptions[member]
                    relations.append(
                        Relation(
                            label=HAS_MEMBER_LABEL,
                            source_id=fact_node.id,
                            target_id=target.id,
                            properties=props,
                        )
                    )
        return [*entities.values(), *fact_nodes], relations
