"""Peer systems for ``hygraph bench``: other libraries' graph retrievers on hygraph's data.

The benchmark compares retrieval methods on the *same* chunks, embedder and extraction.
hygraph's own methods live in the package; the peers live here, so that hygraph does not
depend on them. Each adapter loads an existing :class:`hygraph.GraphIndex` (its chunks,
its embedder, and the entity graph its extractor built) into the other library's own
data structures, then answers questions with that library's stock retriever. No LLM is
called and no other model is loaded. The libraries come with the benchmark extra::

    pip install -e ".[bench]"

Use::

    from benchmarks.peers import load_peer

    peer = load_peer("langchain-graph")      # options: load_peer(name, start_k=2, ...)
    stats = peer.build(index)                # {"seconds", "embeddings", ...}
    result = peer.retrieve("question", top_k=5)
    result.chunk_ids, result.context

``build`` returns ``seconds`` (wall time), ``embeddings`` (texts the peer embedded),
``embeddings_computed`` / ``embeddings_cached`` (how many of those reached the model or
came from hygraph's embedding cache) and adapter-specific counts. ``retrieve`` returns at
most ``top_k`` distinct chunk ids in rank order and the context the peer would hand to an
LLM, in its own format, restricted to those chunks.

Adapters
--------

``llamaindex-pg`` (:mod:`.llamaindex_pg`, llama-index-core)
    LlamaIndex's ``PropertyGraphIndex`` over a ``SimplePropertyGraphStore`` filled with
    hygraph's chunks (``ChunkNode``), entities (``EntityNode``: display name, type as
    label, description) and relations (``Relation``), plus ``chunk -MENTIONS-> entity``
    relations; ``triplet_source_id`` is set as LlamaIndex's own ingestion sets it, so that
    ``include_text=True`` brings back source chunks. Entities are embedded from
    ``str(EntityNode)`` (what LlamaIndex embeds) into a ``SimpleVectorStore``. Retrieval is
    the stock ``VectorContextRetriever`` (``path_depth=1``, ``include_text=True``,
    ``limit=30``) with ``similarity_top_k = max(4, top_k + 3)`` entities (LlamaIndex's 4
    often yields fewer than ``top_k`` chunks; ``similarity_top_k=None`` restores it).
    Rankings depend on ``PYTHONHASHSEED`` (the store keeps triplets in a set).

``langchain-graph`` (:mod:`.langchain_graph`, langchain-core + langchain-graph-retriever)
    LangChain's ``GraphRetriever`` with the ``Eager`` (breadth-first) strategy over an
    ``InMemoryVectorStore`` of one ``Document`` per chunk whose ``entities`` metadata lists
    the entity ids it mentions; the edge ``("entities", "entities")`` links chunks sharing
    an entity. Library defaults (``start_k=4``, ``adjacent_k=10``, no depth limit) except
    ``select_k=top_k``.

Adding a peer: write ``<module>.py`` here with ``make_peer(**options) -> Peer`` and register
its name, module and required packages in :data:`.base.PEERS`.
"""

from .base import PEERS, Peer, PeerResult, available_peers, load_peer

__all__ = ["PEERS", "Peer", "PeerResult", "available_peers", "load_peer"]
