"""The graph for LlamaIndex's ``PropertyGraphIndex``: store, extractor and sub-retriever.

Everything runs through LlamaIndex's real classes (``PropertyGraphIndex``,
``VectorContextRetriever``, ``LLMSynonymRetriever``, ``SimplePropertyGraphStore``) over a
small core index of four sample documents, built once, with the bundled MiniLM.
"""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("llama_index.core")

from llama_index.core import Document, PropertyGraphIndex  # noqa: E402
from llama_index.core.graph_stores import SimplePropertyGraphStore  # noqa: E402
from llama_index.core.graph_stores.types import (  # noqa: E402
    KG_NODES_KEY,
    KG_RELATIONS_KEY,
    TRIPLET_SOURCE_KEY,
    ChunkNode,
    EntityNode,
    Relation,
)
from llama_index.core.indices.property_graph import (  # noqa: E402
    LLMSynonymRetriever,
    VectorContextRetriever,
)
from llama_index.core.llms import (  # noqa: E402
    CompletionResponse,
    CustomLLM,
    LLMMetadata,
    MockLLM,
)
from llama_index.core.llms.callbacks import llm_completion_callback  # noqa: E402
from llama_index.core.node_parser import SentenceSplitter  # noqa: E402
from llama_index.core.schema import TextNode  # noqa: E402
from llama_index.core.vector_stores.types import VectorStoreQuery  # noqa: E402
from method_lists import offline_methods  # noqa: E402

from hygraph.demo import sample_dir  # noqa: E402
from hygraph.errors import UnknownMethodError  # noqa: E402
from hygraph.extract import resolve_extractor  # noqa: E402
from hygraph.extract.schema import ChunkInput  # noqa: E402
from hygraph.index import GraphIndex  # noqa: E402
from llama_index_hygraph.extractors import HyGraphExtractor  # noqa: E402
from llama_index_hygraph.graph_store import HyGraphPropertyGraphStore  # noqa: E402
from llama_index_hygraph.models import HyGraphEmbedding  # noqa: E402
from llama_index_hygraph.sub_retriever import HyGraphSubRetriever  # noqa: E402

SAMPLES = ["aldercott-shipyard", "great-dunmere-flood", "harrowby", "ilse-marrow"]
QUESTION = "Who founded Aldercott Shipyard?"


class ScriptedLLM(CustomLLM):
    """Scripted stand-in for a LlamaIndex LLM: answers every prompt with ``reply``.

    ``LLMSynonymRetriever`` asks an LLM for '^'-separated keywords and the core's LLM
    extractor for JSON; the scripted reply lets a test control exactly what comes back.
    """

    reply: str = ""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="keywords")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs) -> CompletionResponse:
        return CompletionResponse(text=self.reply)

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs):
        yield self.complete(prompt)


def _documents(names: list[str]) -> list[Document]:
    """Sample Markdown files as LlamaIndex documents (stable ids, title in metadata)."""
    out = []
    for name in names:
        text = (sample_dir() / f"{name}.md").read_text()
        title = text.splitlines()[0].lstrip("# ").strip()
        out.append(Document(text=text, id_=f"doc-{name}", metadata={"title": title}))
    return out


@pytest.fixture(scope="module")
def graph_index(tmp_path_factory, minilm):
    """A core index over four sample documents with every registered method (read-only)."""
    path = tmp_path_factory.mktemp("li-graph") / "index"
    index = GraphIndex(path, progress=False)
    index.insert([sample_dir() / f"{n}.md" for n in SAMPLES], methods=offline_methods())
    yield index
    index.close()


@pytest.fixture(scope="module")
def store(graph_index):
    return HyGraphPropertyGraphStore(graph_index)


@pytest.fixture(scope="module")
def embedding(minilm):
    return HyGraphEmbedding(minilm)


@pytest.fixture
def empty_store(tmp_path, minilm):
    """A store over a new, empty core index (for writes)."""
    index = GraphIndex(tmp_path / "written", progress=False)
    yield HyGraphPropertyGraphStore(index)
    index.close()


def _texts(nodes) -> str:
    return "\n".join(n.node.get_content() for n in nodes)


# -- reading the core graph ---------------------------------------------------------------


def test_entities_round_trip_by_name_in_any_spelling(store):
    [node] = store.get(ids=["Aldercott Shipyard", "aldercott shipyard", "ALDERCOTT SHIPYARD!"])
    assert isinstance(node, EntityNode)
    assert node.name == "Aldercott Shipyard" and node.label == "organisation"
    assert node.properties["id"] == "ent:aldercott shipyard"
    assert node.properties["kind"] == "entity" and node.properties["score"] > 0
    # By its LlamaIndex id, its core id, and not at all for an unknown name.
    assert [n.id for n in store.get(ids=[node.id])] == [node.id]
    assert [n.id for n in store.get(ids=["ent:aldercott shipyard"])] == [node.id]
    assert store.get(ids=["no such shipyard"]) == []
    # Its source chunk is a real chunk whose text LlamaIndex can read.
    [source] = store.get_llama_nodes([node.properties[TRIPLET_SOURCE_KEY]])
    assert "Aldercott Shipyard" in source.get_content()


def test_chunks_are_chunk_nodes_with_text(store, graph_index):
    chunk_ids = graph_index.store.chunk_ids()
    chunks = store.get(ids=chunk_ids)
    assert len(chunks) == len(chunk_ids) and all(isinstance(c, ChunkNode) for c in chunks)
    texts = graph_index.chunk_texts(chunk_ids)
    for chunk in chunks:
        assert chunk.text == texts[chunk.id] and chunk.properties["kind"] == "chunk"
        assert (
            chunk.properties["doc_id"] == graph_index.store.get_chunks([chunk.id])[chunk.id].doc_id
        )
    assert {c.id for c in store.get(properties={"kind": "chunk"})} == set(chunk_ids)
    llama = store.get_llama_nodes(chunk_ids[:2])
    assert [n.node_id for n in llama] == chunk_ids[:2]
    assert llama[0].get_content() == texts[chunk_ids[0]]
    # What a chunk supports is found by its id as triplet source.
    supported = store.get(properties={TRIPLET_SOURCE_KEY: chunk_ids[0]})
    assert any(n.label == "fact" for n in supported) and any(n.label != "fact" for n in supported)


def test_triplets_carry_the_core_labels(store, graph_index):
    triplets = store.get_triplets(entity_names=["aldercott shipyard"])
    labels = {r.label for _, r, _ in triplets}
    core_labels = {
        e.data["label"] for e in graph_index.store.edges_of("ent:aldercott shipyard", "relation")
    }
    assert core_labels and core_labels <= labels
    assert {"MENTIONS", "HAS_MEMBER"} <= labels
    for subject, relation, obj in triplets:
        assert "Aldercott Shipyard" in (subject.id, obj.id)
        assert relation.source_id == subject.id and relation.target_id == obj.id
        if relation.label == "MENTIONS":
            assert isinstance(subject, ChunkNode) and subject.text
        if relation.label == "HAS_MEMBER":
            assert subject.label == "fact" and subject.name == subject.id
            assert subject.properties["id"].startswith("fact:")
            # A fact round-trips by its statement.
            assert store.get(ids=[subject.id])[0].properties["id"] == subject.properties["id"]
        # The subject names the chunk the relation itself came from.
        assert subject.properties[TRIPLET_SOURCE_KEY] == relation.properties[TRIPLET_SOURCE_KEY]
    members = store.get_triplets(relation_names=["has_member"])
    assert members and all(r.label == "HAS_MEMBER" for _, r, _ in members)
    assert len(members) == graph_index.store.counts()["edges"]["incidence"]
    both = store.get_triplets(entity_names=["Aldercott Shipyard"], relation_names=["HAS_MEMBER"])
    assert both and all(r.label == "HAS_MEMBER" for _, r, _ in both)
    assert store.get_triplets() == []


def test_vector_query_and_rel_map_round_trip(store, embedding):
    query = VectorStoreQuery(
        query_embedding=embedding.get_query_embedding("the shipbuilding company"),
        similarity_top_k=3,
    )
    nodes, scores = store.vector_query(query)
    assert nodes[0].name == "Aldercott Shipyard" and len(nodes) == len(scores) == 3
    assert scores == sorted(scores, reverse=True)
    seeds = {n.id for n in nodes}
    near = store.get_rel_map(nodes, depth=1, limit=100)
    assert near and all(s.id in seeds or o.id in seeds for s, _, o in near)
    assert all(r.label != "MENTIONS" for _, r, _ in near)  # entities' chunks come as text
    farther = store.get_rel_map(nodes, depth=2, limit=1000)
    assert len(farther) > len(near)
    assert len(store.get_rel_map(nodes, depth=2, limit=5)) == 5
    no_facts = store.get_rel_map(nodes, depth=1, limit=100, ignore_rels=["HAS_MEMBER"])
    assert no_facts and all(r.label != "HAS_MEMBER" for _, r, _ in no_facts)
    # Nodes found by name (as LLMSynonymRetriever does) give the same map.
    by_name = store.get(ids=[n.name.upper() for n in nodes])
    assert store.get_rel_map(by_name, depth=1, limit=100) == near
    # Without an entity collection, the nearest chunks and the entities they mention.
    chunks_only = HyGraphPropertyGraphStore(store, vector_collection="no-such-collection")
    nodes, _ = chunks_only.vector_query(query)
    assert nodes and all(isinstance(n, ChunkNode) for n in nodes)
    mentions = chunks_only.get_rel_map(nodes, depth=1, limit=100)
    assert mentions and all(r.label == "MENTIONS" for _, r, _ in mentions)


def test_schema_names_labels(store):
    schema = store.get_schema()
    assert {"organisation", "fact", "text_chunk"} <= set(schema["node_labels"])
    assert {"MENTIONS", "HAS_MEMBER"} <= set(schema["relation_labels"])
    text = store.get_schema_str()
    assert "organisation" in text and "HAS_MEMBER" in text
    assert store.supports_vector_queries and not store.supports_structured_queries
    with pytest.raises(NotImplementedError):
        store.structured_query("MATCH (n) RETURN n")


# -- stock LlamaIndex retrievers over the store ------------------------------------------


@pytest.mark.parametrize("use_async", [False, True])
def test_stock_retrievers_over_a_hygraph_index(store, embedding, use_async):
    index = PropertyGraphIndex(
        nodes=[],
        property_graph_store=store,
        embed_model=embedding,
        llm=MockLLM(),
        embed_kg_nodes=False,
    )
    vector = VectorContextRetriever(
        store, embed_model=embedding, similarity_top_k=2, include_text=False
    )
    found = index.as_retriever(sub_retrievers=[vector], use_async=use_async).retrieve(QUESTION)
    assert found and "Aldercott Shipyard ->" in _texts(found)
    synonyms = LLMSynonymRetriever(
        store,
        llm=ScriptedLLM(reply="aldercott shipyard^HARROWBY^no such place"),
        include_text=False,
    )
    found = index.as_retriever(sub_retrievers=[synonyms], use_async=use_async).retrieve(QUESTION)
    text = _texts(found)
    assert "Aldercott Shipyard" in text and "Harrowby" in text
    # With source text, each triplet arrives inside the chunk that states it.
    with_text = VectorContextRetriever(store, embed_model=embedding, similarity_top_k=1)
    found = index.as_retriever(sub_retrievers=[with_text], use_async=use_async).retrieve(QUESTION)
    assert "Josiah Aldercott" in _texts(found)


# -- the extractor in a stock PropertyGraphIndex --------------------------------------------


def test_extractor_fills_a_stock_property_graph_index(embedding):
    docs = _documents(["aldercott-shipyard", "great-dunmere-flood"])
    index = PropertyGraphIndex.from_documents(
        docs,
        kg_extractors=[HyGraphExtractor()],
        embed_model=embedding,
        llm=MockLLM(),
        property_graph_store=SimplePropertyGraphStore(),
    )
    graph = index.property_graph_store
    [shipyard] = graph.get(ids=["Aldercott Shipyard"])
    assert shipyard.label == "organisation" and shipyard.properties["score"] > 0
    assert shipyard.properties["title"] in ("Aldercott Shipyard", "Great Dunmere Flood")
    triplets = graph.get_triplets(entity_names=["Aldercott Shipyard"])
    labels = {r.label for _, r, _ in triplets}
    assert "HAS_MEMBER" in labels and labels - {"HAS_MEMBER"}
    facts = [s for s, r, _ in triplets if r.label == "HAS_MEMBER"]
    assert facts and all(f.label == "fact" and f.properties["score"] > 0 for f in facts)
    # The same entities the core extractor finds in the same text.
    core = resolve_extractor("offline").extract([ChunkInput("x", "d", docs[0].text)])[0]
    names = {n.name for n in graph.get() if isinstance(n, EntityNode) and n.label != "fact"}
    assert {e.name for e in core.entities} <= names
    retriever = index.as_retriever(
        sub_retrievers=[
            VectorContextRetriever(
                graph, vector_store=index.vector_store, embed_model=embedding, include_text=False
            )
        ]
    )
    assert "Aldercott Shipyard" in _texts(retriever.retrieve(QUESTION))


def test_extractor_keeps_earlier_results_and_runs_async():
    earlier = EntityNode(name="Earlier")
    node = TextNode(
        text="Aldercott Shipyard was founded in 1819 by Josiah Aldercott in Harrowby.",
        metadata={KG_NODES_KEY: [earlier], KG_RELATIONS_KEY: [], "title": "Shipyard"},
    )
    extractor = HyGraphExtractor(facts=False)
    [out] = asyncio.run(extractor.acall([node]))
    kg_nodes, kg_relations = out.metadata[KG_NODES_KEY], out.metadata[KG_RELATIONS_KEY]
    assert kg_nodes[0] is earlier
    names = {n.name for n in kg_nodes}
    assert {"Aldercott Shipyard", "Josiah Aldercott", "Harrowby"} <= names
    assert all(n.label != "fact" for n in kg_nodes)
    assert all(n.properties["title"] == "Shipyard" for n in kg_nodes[1:])
    ids = {n.id for n in kg_nodes}
    assert kg_relations and all(r.source_id in ids and r.target_id in ids for r in kg_relations)
    with pytest.raises(Exception, match="needs an LLM"):
        HyGraphExtractor("llm")


def test_extractor_with_a_llama_index_llm():
    reply = json.dumps(
        {
            "entities": [
                {"name": "Ada Lovelace", "type": "person", "description": "A mathematician.",
                 "importance": 90},
                {"name": "Analytical Engine", "type": "machine", "importance": 80},
            ],
            "relations": [
                {"source": "Ada Lovelace", "target": "Analytical Engine",
                 "label": "wrote notes on", "description": "She annotated it.", "strength": 9},
            ],
            "facts": [
                {"statement": "Ada Lovelace wrote notes on the Analytical Engine.",
                 "entities": ["Ada Lovelace", "Analytical Engine"], "completeness": 9},
            ],
            "units": [],
        }
    )  # fmt: skip
    extractor = HyGraphExtractor("llm", llm=ScriptedLLM(reply=reply))
    [node] = extractor([TextNode(text="Ada Lovelace wrote notes on the Analytical Engine.")])
    by_name = {n.name: n for n in node.metadata[KG_NODES_KEY]}
    ada = by_name["Ada Lovelace"]
    assert ada.label == "person" and ada.properties["description"] == "A mathematician."
    assert ada.properties["score"] == 90
    fact = by_name["Ada Lovelace wrote notes on the Analytical Engine."]
    assert fact.label == "fact" and fact.properties["score"] == 9
    relations = {(r.source_id, r.label, r.target_id) for r in node.metadata[KG_RELATIONS_KEY]}
    assert relations == {
        ("Ada Lovelace", "wrote notes on", "Analytical Engine"),
        (fact.id, "HAS_MEMBER", "Ada Lovelace"),
        (fact.id, "HAS_MEMBER", "Analytical Engine"),
    }


# -- a stock PropertyGraphIndex writing into the store ------------------------------------


def test_stock_index_writes_into_the_store(empty_store, embedding):
    store = empty_store
    shipyard_doc, flood_doc = _documents(["aldercott-shipyard", "great-dunmere-flood"])
    nodes = SentenceSplitter().get_nodes_from_documents([shipyard_doc, flood_doc])
    index = PropertyGraphIndex(
        nodes,
        kg_extractors=[HyGraphExtractor()],
        property_graph_store=store,
        embed_model=embedding,
        llm=MockLLM(),
    )
    [shipyard] = store.get(ids=["aldercott shipyard"])
    assert (
        shipyard.label == "organisation" and shipyard.properties["id"] == "ent:aldercott shipyard"
    )
    assert shipyard.properties["title"] in ("Aldercott Shipyard", "Great Dunmere Flood")
    # Its source is the LlamaIndex chunk, stored with its text and rebuilt on demand.
    [chunk] = store.get_llama_nodes([shipyard.properties[TRIPLET_SOURCE_KEY]])
    assert "Aldercott Shipyard" in chunk.get_content() and chunk.ref_doc_id in (
        shipyard_doc.doc_id,
        flood_doc.doc_id,
    )
    labels = {r.label for _, r, _ in store.get_triplets(entity_names=["Aldercott Shipyard"])}
    assert {"HAS_MEMBER", "MENTIONS"} <= labels and labels - {"HAS_MEMBER", "MENTIONS"}
    # The embeddings LlamaIndex computed are searchable.
    query = VectorStoreQuery(
        query_embedding=embedding.get_query_embedding("Aldercott Shipyard"), similarity_top_k=1
    )
    assert store.vector_query(query)[0][0].name == "Aldercott Shipyard"
    found = index.as_retriever(
        sub_retrievers=[VectorContextRetriever(store, embed_model=embedding, similarity_top_k=1)]
    ).retrieve(QUESTION)
    assert "Josiah Aldercott" in _texts(found)
    # Inserting the same nodes again changes nothing.
    before = store.store.version()
    index.insert_nodes(nodes)
    assert store.store.version() == before
    # Deleting a document withdraws its chunks: shared entities stay, its own go.
    assert store.get(ids=["Ilse Marrow"])  # only in the flood document
    index.delete_ref_doc(flood_doc.doc_id)
    assert store.get(ids=["Ilse Marrow"]) == []
    [shipyard] = store.get(ids=["Aldercott Shipyard"])
    [chunk] = store.get_llama_nodes([shipyard.properties[TRIPLET_SOURCE_KEY]])
    assert chunk.ref_doc_id == shipyard_doc.doc_id
    assert store.vector_query(
        VectorStoreQuery(
            query_embedding=embedding.get_query_embedding("Ilse Marrow"), similarity_top_k=50
        )
    )[0]
    names = {
        n.name
        for n in store.vector_query(
            VectorStoreQuery(
                query_embedding=embedding.get_query_embedding("Ilse Marrow"),
                similarity_top_k=100,
            )
        )[0]
    }
    assert "Ilse Marrow" not in names and "Aldercott Shipyard" in names
    entities = store.store.counts()["nodes"]["entity"]
    assert store.graph_index.vectors.count("entities") == entities  # deleted ones dropped
    store.delete_llama_nodes(ref_doc_ids=[shipyard_doc.doc_id])
    assert store.get(ids=["Aldercott Shipyard"]) == []
    counts = store.store.counts()
    assert counts["nodes"] == {} and counts["edges"] == {}
    assert store.graph_index.vectors.count("entities") == 0


def test_upserts_and_deletes_round_trip(empty_store):
    store = empty_store
    store.upsert_llama_nodes([TextNode(id_="n1", text="The quay lantern lights the gate.")])
    store.upsert_nodes(
        [
            EntityNode(
                name="Quay Lantern",
                label="artifact",
                properties={"description": "A lamp.", "colour": "red", TRIPLET_SOURCE_KEY: "n1"},
            ),
            EntityNode(name="Lantern shining on the gate", label="fact"),
        ]
    )
    store.upsert_relations(
        [
            Relation(label="lights", source_id="quay lantern", target_id="Harbour Gate"),
            Relation(
                label="HAS_MEMBER",
                source_id="Lantern shining on the gate",
                target_id="Quay Lantern",
            ),
            Relation(label="NEXT", source_id="n1", target_id="Quay Lantern", properties={"x": 1}),
        ]
    )
    [lantern] = store.get(ids=["QUAY LANTERN"])
    assert lantern.label == "artifact" and lantern.properties["colour"] == "red"
    assert lantern.properties["description"] == "A lamp."
    assert lantern.properties[TRIPLET_SOURCE_KEY] == "n1"
    assert store.get(ids=["Harbour Gate"])  # created by the relation, as LlamaIndex does
    triplets = {
        (s.id, r.label, o.id): r for s, r, o in store.get_triplets(entity_names=["Quay Lantern"])
    }
    assert ("Quay Lantern", "lights", "Harbour Gate") in triplets
    assert ("Lantern shining on the gate", "HAS_MEMBER", "Quay Lantern") in triplets
    assert ("n1", "MENTIONS", "Quay Lantern") in triplets  # the entity's source chunk
    assert triplets[("n1", "NEXT", "Quay Lantern")].properties["x"] == 1
    assert store.get_schema()["node_labels"]["artifact"] == 1
    store.delete(relation_names=["lights"])
    assert not store.get_triplets(relation_names=["lights"])
    store.delete(entity_names=["Harbour Gate"], ids=["Lantern shining on the gate"])
    assert store.get(ids=["Harbour Gate", "Lantern shining on the gate"]) == []
    store.delete(properties={"colour": "red"})
    assert store.get(ids=["Quay Lantern"]) == []
    store.delete(ids=["n1"])
    assert store.get_llama_nodes(["n1"]) == []


# -- hygraph methods as sub-retrievers ------------------------------------------------------


@pytest.mark.parametrize("method", offline_methods())
def test_every_method_is_a_sub_retriever(store, graph_index, embedding, method):
    index = PropertyGraphIndex.from_existing(store, embed_model=embedding, llm=MockLLM())
    sub = HyGraphSubRetriever(graph_index, method=method, top_k=3)
    found = index.as_retriever(sub_retrievers=[sub]).retrieve(QUESTION)
    assert found and all(n.node.metadata["method"] == method for n in found)
    assert "Aldercott" in _texts(found)


@pytest.mark.parametrize("use_async", [False, True])
def test_sub_retriever_mixes_with_vector_context(store, embedding, use_async):
    index = PropertyGraphIndex.from_existing(store, embed_model=embedding, llm=MockLLM())
    retriever = index.as_retriever(
        sub_retrievers=[
            HyGraphSubRetriever(store, method="hypergraph:top_k=2"),  # anything with graph_index
            VectorContextRetriever(
                store, embed_model=embedding, similarity_top_k=2, include_text=False
            ),
        ],
        use_async=use_async,
    )
    found = retriever.retrieve(QUESTION)
    methods = {n.node.metadata.get("method") for n in found}
    assert "hypergraph:top_k=2" in methods
    assert any(" -> " in n.node.get_content() for n in found)  # the stock triplets
    with pytest.raises(UnknownMethodError):
        HyGraphSubRetriever(store, method="no-such-method")


def test_sub_retriever_source_text_leaves_evidence_whole(store, graph_index):
    plain = HyGraphSubRetriever(graph_index, method="hypergraph", top_k=2).retrieve(QUESTION)
    texts = HyGraphSubRetriever(graph_index, method="hypergraph", top_k=2, include_text=True)
    with_text = texts.retrieve(QUESTION)
    assert [n.node.get_content() for n in with_text] == [n.node.get_content() for n in plain]
    assert all(n.node.ref_doc_id in graph_index.store.document_ids() for n in plain)
    assert asyncio.run(texts.aretrieve(QUESTION))[0].node.get_content() == (
        plain[0].node.get_content()
    )


def test_sub_retriever_can_return_passages(store, graph_index, embedding):
    index = PropertyGraphIndex.from_existing(store, embed_model=embedding, llm=MockLLM())
    sub = HyGraphSubRetriever(graph_index, method="hypergraph", top_k=2, items="passages")
    found = index.as_retriever(sub_retrievers=[sub]).retrieve(QUESTION)
    assert len(found) == 2 and {n.node.metadata["kind"] for n in found} == {"chunk"}
    assert all("graph_evidence" in n.node.metadata for n in found)
