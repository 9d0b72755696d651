"""A hand-made knowledge graph for the agent tests (ToG, DALK and their operators).

Five one-chunk documents, twelve entities and ten relation edges written straight into
a store (no ``GraphIndex``, no extractor):

===========  ================================  =======
edge         label(s) in its entries           chunks
===========  ================================  =======
Ada→Bell     founded                           d1
Bell→Cobb    located in (d1), based in (d2)    d1, d2
Dara→Bell    works at                          d2
Hal→Bell     works at                          d2
Eve→Dara     met                               d3
Dara→Cobb    visited                           d3
Finn→Gale    sailed on                         d4
Gale→Iris    moored at                         d5
Iris→Jon     owned by                          d5
Jon→Kai      born in                           d5
===========  ================================  =======

Undirected neighbours (sorted by id): Ada [Bell]; Bell [Ada, Cobb, Dara, Hal]; Cobb
[Bell, Dara]; Dara [Bell, Cobb, Eve]; Eve [Dara]; Hal [Bell]; Finn [Gale]; Gale
[Finn, Iris]; Iris [Gale, Jon]; Jon [Iris, Kai]; Kai [Jon]. Relation degrees: Bell 4,
Dara 3, Cobb, Gale, Iris and Jon 2, the others 1. ``vectors=True`` also embeds every
entity's name in the ``entities`` collection, so ``node.link`` finds an entity by its
name (bag-of-words vectors, :class:`~doubles.WordEmbedder`).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from worlds import store_of_texts, word_resources

from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import Edge, GraphStore, Node
from hygraph.operators.state import State
from hygraph.resources import Resources
from hygraph.vectors import open_vector_index

A, B, C, D, E, F, G, H, IRIS, J, K = (
    f"ent:{n}"
    for n in ("ada", "bell", "cobb", "dara", "eve", "finn", "gale", "hal", "iris", "jon", "kai")
)
NAMES = {A: "Ada", B: "Bell", C: "Cobb", D: "Dara", E: "Eve", F: "Finn", G: "Gale", H: "Hal",
         IRIS: "Iris", J: "Jon", K: "Kai"}  # fmt: skip
#: (source, target, {document: [labels]})
RELATIONS = [
    (A, B, {"d1": ["founded"]}),
    (B, C, {"d1": ["located in"], "d2": ["based in"]}),
    (D, B, {"d2": ["works at"]}),
    (H, B, {"d2": ["works at"]}),
    (E, D, {"d3": ["met"]}),
    (D, C, {"d3": ["visited"]}),
    (F, G, {"d4": ["sailed on"]}),
    (G, IRIS, {"d5": ["moored at"]}),
    (IRIS, J, {"d5": ["owned by"]}),
    (J, K, {"d5": ["born in"]}),
]
TEXTS = {
    "d1": "Ada founded Bell in Cobb.",
    "d2": "Bell is based in Cobb. Dara and Hal work at Bell.",
    "d3": "Eve met Dara, who visited Cobb.",
    "d4": "Finn sailed on the Gale.",
    "d5": "The Gale was moored at Iris, owned by Jon, who was born in Kai.",
}
QUESTION = "Where is the company that Dara works at?"


def make_resources(store: GraphStore, vectors: Any, path: Path, llm: Any = None) -> Resources:
    return word_resources(store, vectors, path, llm=llm)


def build_world(tmp_path: Path, *, vectors: bool = False) -> SimpleNamespace:
    """The world in a fresh store: ``res`` (no LLM), ``resources(llm, name)`` for more,
    ``store`` and the chunk id of each document (``d1`` ... ``d5``)."""
    store, chunk = store_of_texts(tmp_path / "kg.sqlite", TEXTS)
    store.upsert_nodes(Node(e, NodeKind.ENTITY, n, f"{n} is in the story.", {"type": "person"},
                            [chunk["d1"]]) for e, n in NAMES.items())  # fmt: skip
    edges = []
    for src, dst, entries in RELATIONS:
        data = {"label": next(iter(entries.values()))[0],
                "entries": {chunk[d]: [[label, f"{src} {label} {dst}", 1.0] for label in labels]
                            for d, labels in entries.items()}}  # fmt: skip
        edges.append(Edge(src, dst, EdgeKind.RELATION, 1.0, data, [chunk[d] for d in entries]))
    store.upsert_edges(edges)
    index = open_vector_index(tmp_path / "qdrant")

    def resources(llm: Any = None, name: str = "index") -> Resources:
        return make_resources(store, index, tmp_path / name, llm)

    res = resources()
    if vectors:
        res.upsert_vectors("entities", list(NAMES), list(NAMES.values()),
                           [{"kind": "entity"} for _ in NAMES])  # fmt: skip
    return SimpleNamespace(res=res, resources=resources, store=store, **chunk)


def state_with(question: str = QUESTION, **slots: Any) -> State:
    state = State(question, 4)
    for name, value in slots.items():
        setattr(state, name, value)
    return state
