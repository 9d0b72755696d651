"""The ``heterograph`` layer (NodeRAG's build side), built directly over hand-made resources:
node types, vectors, idempotent updates, delete repair, reset and rebuild."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from corpora import HARBOUR_DOCS

from hygraph.errors import ConfigError
from hygraph.graph.heterograph import node_type
from hygraph.graph.kinds import HETEROGRAPH_STRUCTURAL, EdgeKind, NodeKind
from hygraph.graph.store import GraphStore
from hygraph.ingest import Chunker, Document
from hygraph.layers.base import get_layer, layer_order
from hygraph.layers.heterograph import NODE_COLLECTION, HeterographConfig, HeterographLayer
from hygraph.manifest import Manifest
from hygraph.resources import Resources
from hygraph.usage import UsageTracker
from hygraph.vectors import open_vector_index

DOCS = HARBOUR_DOCS
LAYER_KINDS = (
    NodeKind.UNIT,
    NodeKind.RELATIONSHIP,
    NodeKind.ATTRIBUTE,
    NodeKind.HIGH_LEVEL,
    NodeKind.OVERVIEW,
)
EMBEDDED_KINDS = (NodeKind.UNIT, NodeKind.ATTRIBUTE, NodeKind.HIGH_LEVEL)


def _resources(path, embedder) -> Resources:
    path.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(
        embedder=embedder.name, dim=None, chunk_size=1200, chunk_overlap=100, tokenizer="x",
        vectors={"backend": "edge", "path": "qdrant"},
    )  # fmt: skip
    return Resources(
        path=path, store=GraphStore(path / "graph.sqlite"),
        vectors=open_vector_index(path / "qdrant"), manifest=manifest, embedder=embedder,
        llm=None, tracker=UsageTracker(), progress=False, cache_dir=path / "cache",
    )  # fmt: skip


def _add(res: Resources, *names: str) -> None:
    chunker = Chunker(1200, 100)
    for name in names:
        doc = Document(text=DOCS[name][1], id=name, title=DOCS[name][0])
        res.store.add_document(doc, chunker(doc))
    for base in ("entity-graph", "chunks"):
        get_layer(base)().update(res)


def _snapshot(res: Resources) -> tuple[dict[str, int], dict[str, int]]:
    nodes = {k: len(res.store.nodes_of_kind(k)) for k in LAYER_KINDS}
    kinds = [*HETEROGRAPH_STRUCTURAL, EdgeKind.SEMANTIC]
    edges = {k: len(res.store.edge_rows([k])) for k in kinds}
    return nodes, edges


def _embedded(res: Resources) -> list[str]:
    return [n.id for k in EMBEDDED_KINDS for n in res.store.nodes_of_kind(k)]


def _check_integrity(res: Resources) -> None:
    """Every layer edge joins stored nodes or chunks; every embedded node has a vector."""
    chunks = set(res.store.chunk_ids())
    rows = res.store.edge_rows([*HETEROGRAPH_STRUCTURAL, EdgeKind.SEMANTIC])
    ends = {x for s, d, _ in rows for x in (s, d)}
    nodes = res.store.get_nodes(ends - chunks)
    assert all(x in chunks or x in nodes for x in ends)
    embedded = _embedded(res)
    stored = res.stored_vectors(NODE_COLLECTION, embedded)
    assert set(stored) == set(embedded)
    assert res.vectors.count(NODE_COLLECTION) == len(embedded)


def test_layer_contract():
    layer = get_layer("heterograph")
    assert layer is HeterographLayer
    assert layer.requires == ("entity-graph", "chunks")
    assert layer.collections == (NODE_COLLECTION,) == ("noderag",)
    assert layer.task == "layer:noderag"
    assert layer_order(["heterograph"]) == ["entity-graph", "chunks", "heterograph"]
    # A method config hands over the build fields it shares with the layer.
    options = SimpleNamespace(semantic_k=3, knn="qdrant", top_k=99)
    config = layer.config_from(options)
    assert config.semantic_k == 3 and config.knn == "qdrant" and not hasattr(config, "top_k")
    for bad in ({"knn": "hnsw"}, {"kcore": "shell"}, {"kcore_rounding": "ceil"}):
        with pytest.raises(ConfigError):
            HeterographConfig(**bad)


def test_build_update_delete_reset(tmp_path, minilm):
    res = _resources(tmp_path, minilm)
    _add(res, *DOCS)
    layer = get_layer("heterograph")()
    assert layer.update(res) == len(res.store.chunk_ids())
    nodes, edges = _snapshot(res)
    assert all(nodes[k] > 0 for k in LAYER_KINDS), nodes
    for kind in (EdgeKind.UNIT_MENTION, EdgeKind.ATTRIBUTE_OF, EdgeKind.MEMBER, EdgeKind.TITLE,
                 EdgeKind.TEXT, EdgeKind.SEMANTIC):  # fmt: skip
        assert edges[kind] > 0, kind
    assert all(
        (n.text or "").strip()
        for k in (NodeKind.ATTRIBUTE, NodeKind.HIGH_LEVEL, NodeKind.OVERVIEW)
        for n in res.store.nodes_of_kind(k)
    )
    assert set(layer.build_seconds) >= {"decomposition", "attributes", "semantic edges"}
    _check_integrity(res)

    # Nothing new: a second update takes in no chunk and writes nothing.
    version = res.store.version()
    assert layer.update(res) == 0
    assert res.store.version() == version and _snapshot(res) == (nodes, edges)

    # Deleting a document removes the units only it stated, and their vectors.
    festival = {c.id for c in res.store.chunks_of("festival")}
    own = [n.id for n in res.store.nodes_of_kind(NodeKind.UNIT) if set(n.sources) <= festival]
    assert own
    removed = res.store.delete_document("festival")
    for name in ("entity-graph", "chunks", "heterograph"):
        (layer if name == "heterograph" else get_layer(name)()).delete(res, removed)
    assert not res.store.get_nodes(own)
    assert not res.stored_vectors(NODE_COLLECTION, own)
    _check_integrity(res)
    kept, _ = _snapshot(res)

    # Reset removes the layer (the shared entities stay); a rebuild gives the same graph.
    entities = len(res.store.nodes_of_kind(NodeKind.ENTITY))
    layer.reset(res)
    assert _snapshot(res) == ({k: 0 for k in LAYER_KINDS}, {k: 0 for k in edges})
    assert res.vectors.count(NODE_COLLECTION) == 0
    assert len(res.store.nodes_of_kind(NodeKind.ENTITY)) == entities
    assert layer.pending(res) == res.store.chunk_ids()
    get_layer("heterograph")().update(res)
    _check_integrity(res)
    rebuilt_nodes, rebuilt_edges = _snapshot(res)
    assert rebuilt_nodes[NodeKind.UNIT] == kept[NodeKind.UNIT]
    assert rebuilt_nodes[NodeKind.RELATIONSHIP] == kept[NodeKind.RELATIONSHIP]

    # The same documents built from scratch give the same node and edge counts.
    fresh = _resources(tmp_path / "fresh", minilm)
    _add(fresh, "harbour", "expedition", "mayor")
    get_layer("heterograph")().update(fresh)
    assert _snapshot(fresh) == (rebuilt_nodes, rebuilt_edges)


def test_insert_links_new_nodes_to_earlier_ones(tmp_path, minilm):
    res = _resources(tmp_path, minilm)
    _add(res, "harbour", "expedition")
    layer = get_layer("heterograph")()
    layer.update(res)
    before = set(res.store.chunk_ids())
    _add(res, "mayor")
    assert layer.update(res) == len(res.store.chunk_ids()) - len(before)
    _check_integrity(res)
    new_units = {
        n.id for n in res.store.nodes_of_kind(NodeKind.UNIT) if not set(n.sources) <= before
    }
    # An insert takes its kNN neighbours from the vector index: new units reach old nodes.
    old = {n for n in _embedded(res) if n not in new_units} | before
    rows = res.store.edge_rows([EdgeKind.SEMANTIC])
    assert any((s in new_units and d in old) or (d in new_units and s in old) for s, d, _ in rows)
    assert {node_type(n) for n in new_units} == {"S"}
