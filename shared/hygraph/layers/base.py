"""The layer contract, the lazy name → module registry, and dependency ordering."""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar

from hygraph.errors import ConfigError

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.resources import Resources

#: Built-in layers by name → the module that defines them (imported on first use).
LAYER_MODULES: dict[str, str] = {
    "chunks": "hygraph.layers.chunks",
    "entity-graph": "hygraph.layers.entity_graph",
    "bm25": "hygraph.layers.bm25",
    "entity-vectors": "hygraph.layers.entity_vectors",
    "relation-vectors": "hygraph.layers.relation_vectors",
    "fact-vectors": "hygraph.layers.fact_vectors",
    "hypergraph": "hygraph.layers.hypergraph",
    "heterograph": "hygraph.layers.heterograph",
    "communities": "hygraph.layers.communities",
    "tree": "hygraph.layers.tree",
    "tree-kmeans": "hygraph.layers.tree",
    "hirag": "hygraph.layers.hirag",
    "synonyms": "hygraph.layers.synonyms",
    "relation-keywords": "hygraph.layers.rich_kg",
    "rich-relation-vectors": "hygraph.layers.rich_kg",
    "tfidf": "hygraph.layers.tfidf",
    "hygrag": "hygraph.layers.hygrag",
    "passage-graph": "hygraph.layers.passage_graph",
}
#: Layers every index has: the extraction into the shared entity graph, and chunk vectors.
BASE_LAYERS = ("entity-graph", "chunks")

_REGISTRY: dict[str, type[Layer]] = {}


@dataclass
class LayerConfig:
    """Build options of a layer; a method's config carries the same field names."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Layer:
    """One graph or index type built over the chunks.

    Subclasses set ``name``, ``requires``, ``collections``, ``task`` (the progress
    task that records which chunks are in the layer; None when the layer tracks its
    freshness itself) and ``Config``, and implement :meth:`insert`.
    """

    name: ClassVar[str]
    description: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    collections: ClassVar[tuple[str, ...]] = ()
    task: ClassVar[str | None] = None
    #: Whether the layer reads chunks' extractions: then it takes only extracted chunks,
    #: and chunks extracted by a later build (an LLM that failed on them) reach it then.
    after_extraction: ClassVar[bool] = False
    stage: ClassVar[str | None] = None  # usage stage of a build (default ``build:<name>``)
    Config: ClassVar[type[LayerConfig]] = LayerConfig

    def __init__(self, config: LayerConfig | dict[str, Any] | None = None):
        if config is None or isinstance(config, dict):
            config = self.Config(**(config or {}))
        self.config = config

    @classmethod
    def config_from(cls, options: Any) -> LayerConfig:
        """This layer's config, taking the fields ``options`` (a method config) also has."""
        names = [f.name for f in fields(cls.Config)]
        return cls.Config(**{n: getattr(options, n) for n in names if hasattr(options, n)})

    def pending(self, res: Resources) -> list[str]:
        """Chunks not yet in the layer (all chunks for layers without a task).

        A layer that reads extractions waits for a chunk's extraction: a chunk whose
        extraction failed stays pending here too, and is taken in once a later build
        has extracted it.
        """
        if self.task is None:
            return res.store.chunk_ids()
        pending = res.store.chunks_not_done(self.task)
        if self.after_extraction and pending and extracts(res):
            extracted = res.store.done_among("extract", pending)
            pending = [c for c in pending if c in extracted]
        return pending

    def update(self, res: Resources) -> int:
        """Bring the layer up to date with the store; returns how many chunks it took in.

        A layer marks its chunks done as it goes (per batch or at the end), so a build
        killed half-way resumes where it stopped.
        """
        pending = self.pending(res)
        if not pending:
            return 0
        with res.tracker.stage(self.stage or f"build:{self.name}"):
            taken = self.insert(res, pending)
        return len(pending) if taken is None else taken

    def insert(self, res: Resources, chunk_ids: Sequence[str]) -> int | None:
        """Add ``chunk_ids`` (new to the layer) and mark them done. The first build too.

        Returns how many chunks it took in when some can stay pending (None: all).
        """
        raise NotImplementedError

    def planned_texts(self, res: Resources, chunk_ids: Sequence[str]) -> list[str]:
        """The texts :meth:`insert` would embed for ``chunk_ids`` (none known by default).

        A small build embeds them ahead in one call (:mod:`hygraph.layers.ahead`); a text
        named here and not embedded after costs a wasted vector, one embedded and not
        named here is embedded by the layer as usual.
        """
        return []

    def delete(self, res: Resources, removed: DeleteResult) -> None:
        """Forget what a deleted document contributed. Default: nothing to forget."""

    def reset(self, res: Resources) -> None:
        """Remove the layer so the next update rebuilds it over every chunk."""
        if self.task is not None:
            res.store.clear_progress(self.task)


def chunk_set_fingerprint(chunk_ids: Sequence[str]) -> str:
    """A short digest of a list of chunk ids: layers over the whole chunk set rebuild when it
    changes."""
    import hashlib

    return hashlib.sha256("\n".join(chunk_ids).encode()).hexdigest()[:16]


def extracts(res: Resources) -> bool:
    """Whether the index has an extractor (``none``: it extracts nothing)."""
    return not (res.extractor_name == "none" and res.extractor_override is None)


def in_batches(
    res: Resources, items: Sequence[str], size: int, desc: str | None = None
) -> Iterator[list[str]]:
    """``items`` in consecutive lists of at most ``size``, with a progress bar if ``desc``.

    Layers build batch by batch and mark each one done, so a killed build resumes.
    """
    starts: Iterable[int] = range(0, len(items), size)
    if desc is not None:
        starts = res.bar(starts, total=len(range(0, len(items), size)), desc=desc, unit="batch")
    for start in starts:
        yield list(items[start : start + size])


def register_layer(cls: type[Layer]) -> type[Layer]:
    """Class decorator: make a layer available by its ``name``."""
    _REGISTRY[cls.name] = cls
    return cls


def get_layer(name: str) -> type[Layer]:
    """The layer class named ``name`` (its module is imported on first use)."""
    if name not in _REGISTRY:
        module = LAYER_MODULES.get(name)
        if module is None:
            known = ", ".join(available_layers())
            raise ConfigError(f"unknown layer {name!r}; known: {known}")
        importlib.import_module(module)
    return _REGISTRY[name]


def available_layers() -> list[str]:
    return sorted({*LAYER_MODULES, *_REGISTRY})


def layer_order(names: Iterable[str]) -> list[str]:
    """``names`` with everything they require, each after its requirements (base first)."""
    ordered: list[str] = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        if name in ordered:
            return
        if name in path:
            raise ConfigError(f"layers require each other: {' -> '.join((*path, name))}")
        for dep in get_layer(name).requires:
            visit(dep, (*path, name))
        ordered.append(name)

    for name in [*BASE_LAYERS, *names]:
        visit(name, ())
    return ordered
