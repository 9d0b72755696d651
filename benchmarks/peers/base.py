"""The peer interface, the registry of adapters, and helpers the adapters share."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from hygraph.graph.store import Chunk
    from hygraph.index import GraphIndex

INSTALL_HINT = 'pip install -e ".[bench]"'


@dataclass
class PeerResult:
    """What a peer retrieved for one question."""

    chunk_ids: list[str]  # retrieved chunks in rank order (each once)
    context: str  # the text the peer would hand to an LLM, in its own format


@runtime_checkable
class Peer(Protocol):
    """Another system's retriever, run over a hygraph index's chunks, embedder and graph."""

    name: str

    def build(self, index: GraphIndex) -> dict[str, float]:
        """Load the index into the peer; returns at least ``seconds`` and ``embeddings``."""
        ...

    def retrieve(self, question: str, top_k: int) -> PeerResult:
        """The peer's ranked chunks and context for ``question``."""
        ...


@dataclass(frozen=True)
class PeerSpec:
    """Where an adapter lives and which top-level modules it needs."""

    module: str
    requires: tuple[str, ...]
    summary: str


PEERS: dict[str, PeerSpec] = {
    "llamaindex-pg": PeerSpec(
        "llamaindex_pg",
        ("llama_index",),
        "LlamaIndex PropertyGraphIndex + VectorContextRetriever over the same entity graph",
    ),
    "langchain-graph": PeerSpec(
        "langchain_graph",
        ("langchain_core", "langchain_graph_retriever", "graph_retriever"),
        "LangChain GraphRetriever (Eager) over shared-entity metadata edges between chunks",
    ),
}


def _installed(spec: PeerSpec) -> bool:
    return all(importlib.util.find_spec(mod) is not None for mod in spec.requires)


def available_peers(installed: bool = False) -> list[str]:
    """Names of the peer adapters (with ``installed=True``: only those whose libraries import)."""
    return [name for name, spec in PEERS.items() if not installed or _installed(spec)]


def load_peer(name: str, **options: Any) -> Peer:
    """The adapter ``name`` (``llamaindex-pg``, ``langchain-graph``), built with ``options``.

    Raises ``KeyError`` for an unknown name and ``ImportError`` (with the install command)
    when the peer's library is not installed.
    """
    spec = PEERS.get(name)
    if spec is None:
        known = ", ".join(PEERS)
        raise KeyError(f"unknown peer {name!r}; known peers: {known}")
    package = __name__.rsplit(".", 1)[0]
    try:
        module = importlib.import_module(f"{package}.{spec.module}")
    except ModuleNotFoundError as exc:
        missing = (exc.name or "").split(".")[0]
        if missing in spec.requires:
            raise ImportError(
                f"peer {name!r} needs the {missing!r} package, which is not installed; "
                f"install the benchmark extra: {INSTALL_HINT}"
            ) from exc
        raise
    return module.make_peer(**options)


# -- helpers for adapters -----------------------------------------------------------------


def iter_chunk_texts(index: GraphIndex, batch_size: int = 1000) -> Iterator[tuple[Chunk, str]]:
    """Every chunk with its text as hygraph embeds and shows it (title line first)."""
    batch: list[Chunk] = []
    for chunk in index.store.iter_chunks(batch_size):
        batch.append(chunk)
        if len(batch) == batch_size:
            yield from _with_texts(index, batch)
            batch = []
    if batch:
        yield from _with_texts(index, batch)


def _with_texts(index: GraphIndex, batch: list[Chunk]) -> Iterator[tuple[Chunk, str]]:
    texts = index.chunk_texts(c.id for c in batch)
    for chunk in batch:
        yield chunk, texts[chunk.id]


def chunk_mentions(index: GraphIndex) -> dict[str, list[str]]:
    """Chunk id -> the entity node ids it mentions (``mentions`` edges)."""
    out: dict[str, list[str]] = defaultdict(list)
    for edge in index.store.iter_edges("mentions"):
        out[edge.src].append(edge.dst)
    return dict(out)


def ranked_unique(ids: Iterator[str | None] | list[str | None]) -> list[str]:
    """Ids in order of first appearance, without ``None`` and repeats."""
    return list(dict.fromkeys(i for i in ids if i))


@contextmanager
def build_accounting(index: GraphIndex, peer: str) -> Iterator[dict[str, float]]:
    """Time a build and count the embeddings it computed or took from hygraph's cache.

    The block fills in the adapter's own figures (``embeddings``: texts it embedded);
    on exit ``seconds``, ``embeddings_computed`` and ``embeddings_cached`` are added.
    """
    stage = f"peer:{peer}"
    tracker = getattr(index, "tracker", None)
    before = (
        dataclasses.replace(tracker.stages[stage]) if tracker and stage in tracker.stages else None
    )
    stats: dict[str, float] = {}
    start = time.perf_counter()
    if tracker is None:
        yield stats
    else:
        with tracker.stage(stage):
            yield stats
    stats["seconds"] = round(time.perf_counter() - start, 3)
    if tracker is not None and stage in tracker.stages:
        after = tracker.stages[stage]
        stats["embeddings_computed"] = after.embeddings - (before.embeddings if before else 0)
        stats["embeddings_cached"] = after.embeddings_cached - (
            before.embeddings_cached if before else 0
        )
