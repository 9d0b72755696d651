"""A hygraph index on a Qdrant server looks like what the stock Qdrant integrations made.

The server is qdrant-client's local mode (``:memory:`` or a folder). The passage
collection gets the user's collection name and payloads the stock stores read:
``llama_index.vector_stores.qdrant.QdrantVectorStore`` (``_node_content``/``_node_type``,
flat metadata) and ``langchain_qdrant.QdrantVectorStore`` (``page_content``/``metadata``).
The graph's own collections are named from it, old indexes keep their names, and an
index in a temporary directory leaves nothing behind on the server.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from hygraph import GraphIndex
from hygraph.errors import ConfigError, IndexMismatchError
from hygraph.ingest import Document
from hygraph.integrations import open_for_framework

pytest.importorskip("llama_index.vector_stores.qdrant")
pytest.importorskip("langchain_qdrant")

# qdrant-client's local mode has no payload indexes; a server has.
pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect")

DOCS = [
    Document(
        "harbor",
        "Harrowby is a port town on the Ost estuary. Its shipyard is Aldercott.",
        title="Harrowby",
        metadata={"year": 1700, "region": "coast"},
    ),
    Document(
        "yard",
        "Aldercott Shipyard was founded in 1819 by Josiah Aldercott in Harrowby.",
        title="Aldercott Shipyard",
        metadata={"year": 1819, "region": "coast"},
    ),
    Document(
        "flood",
        "The Great Dunmere Flood of 1931 destroyed the Old Ost Bridge upstream.",
        metadata={"year": 1931, "region": "inland"},
    ),
]
QUESTION = "Who founded the shipyard?"


@pytest.fixture
def client():
    from qdrant_client import QdrantClient

    client = QdrantClient(":memory:")
    yield client
    client.close()


def _names(client) -> set[str]:
    return {c.name for c in client.get_collections().collections}


def _langchain_embeddings(embedder):
    """The test's embedder as LangChain ``Embeddings`` (what a stock store queries with)."""
    from langchain_core.embeddings import Embeddings

    class Wrapped(Embeddings):
        def embed_documents(self, texts):
            return embedder.embed(texts).tolist()

        def embed_query(self, text):
            return embedder.embed_query(text).tolist()

    return Wrapped()


def test_the_named_collection_is_the_passage_collection(tmp_path, client, minilm):
    from llama_index.core.vector_stores import (
        MetadataFilter,
        MetadataFilters,
        VectorStoreQuery,
    )
    from llama_index.vector_stores.qdrant import QdrantVectorStore as LlamaStore

    with GraphIndex.build(
        DOCS,
        tmp_path / "idx",
        methods=["vanilla", "hypergraph"],
        qdrant_client=client,
        qdrant_collection="app",
        progress=False,
    ) as index:
        spec = index.manifest.vectors
        assert spec["collections"] == {"chunks": "app"} and spec["prefix"] == "app_"
        assert {"app", "app_facts", "app_entities"} <= _names(client)
        assert not any(n.startswith("hygraph_") for n in _names(client))
        chunks = index.store.get_chunks(index.store.chunk_ids())
        assert client.count("app").count == len(chunks)
        assert index.retrieve(QUESTION, "vanilla", top_k=1).passages == ["yard"]

        # The stock LlamaIndex store, made after the collection exists, reads the chunks.
        store = LlamaStore(client=client, collection_name="app")
        query = minilm.embed_query(QUESTION).tolist()
        found = store.query(VectorStoreQuery(query_embedding=query, similarity_top_k=3))
        assert len(found.nodes) == 3
        top = found.nodes[0]
        assert top.ref_doc_id == "yard"
        assert top.get_content() == chunks[top.node_id].text
        assert top.metadata["title"] == "Aldercott Shipyard" and top.metadata["year"] == 1819
        # ... and filters on the documents' own metadata.
        inland = MetadataFilters(filters=[MetadataFilter(key="region", value="inland")])
        filtered = store.query(
            VectorStoreQuery(query_embedding=query, similarity_top_k=3, filters=inland)
        )
        assert [n.ref_doc_id for n in filtered.nodes] == ["flood"]

        # The stock LangChain store reads them too, with the metadata under "metadata".
        from langchain_qdrant import QdrantVectorStore as LangChainStore
        from qdrant_client import models

        lc = LangChainStore(
            client=client, collection_name="app", embedding=_langchain_embeddings(minilm)
        )
        docs = lc.similarity_search_by_vector(query, k=3)
        assert docs[0].page_content == chunks[docs[0].metadata["chunk_id"]].text
        assert docs[0].metadata["doc_id"] == "yard" and docs[0].metadata["region"] == "coast"
        year = models.Filter(
            must=[models.FieldCondition(key="metadata.year", range=models.Range(gte=1900))]
        )
        assert [d.metadata["doc_id"] for d in lc.similarity_search(QUESTION, k=3, filter=year)] == [
            "flood"
        ]


def test_collection_prefix_is_the_former_name_of_the_collection(tmp_path, client, minilm):
    with GraphIndex.build(
        DOCS[:1], tmp_path / "idx", qdrant_client=client, collection_prefix="app_", progress=False
    ):
        assert "app" in _names(client)


def test_a_framework_store_made_before_the_collection_can_read_it(tmp_path, client, minilm):
    """A LlamaIndex store made first queries its ``text-dense`` vector: that name is used."""
    from llama_index.core.vector_stores import VectorStoreQuery
    from llama_index.vector_stores.qdrant import QdrantVectorStore as LlamaStore

    store = LlamaStore(client=client, collection_name="lx")
    index = open_for_framework(
        tmp_path / "idx",
        framework="llama-index",
        label="LlamaIndex",
        embedding_hint="pass embed_model=",
        vector_store_qdrant=(client, store.collection_name, store.dense_vector_name),
        progress=False,
    )
    index.insert(DOCS, methods=["vanilla"])
    assert set(client.get_collection("lx").config.params.vectors) == {"text-dense"}
    query = minilm.embed_query(QUESTION).tolist()
    found = store.query(VectorStoreQuery(query_embedding=query, similarity_top_k=1))
    assert found.nodes[0].ref_doc_id == "yard"
    assert index.retrieve(QUESTION, top_k=1).passages == ["yard"]
    index.close()
    # Reopened with the same store it reads the same collection; another name is refused.
    with GraphIndex.open(tmp_path / "idx", qdrant_client=client, qdrant_collection="lx") as again:
        assert again.retrieve(QUESTION, top_k=1).passages == ["yard"]
    with pytest.raises(IndexMismatchError, match="passages in Qdrant collection 'lx', not 'ly'"):
        GraphIndex.open(tmp_path / "idx", qdrant_client=client, qdrant_collection="ly")


def test_a_users_collection_keeps_its_points(tmp_path, minilm):
    """Into a collection a stock store filled: hygraph reads only its own points."""
    from langchain_core.documents import Document as LCDocument
    from langchain_qdrant import QdrantVectorStore as LangChainStore

    lc = LangChainStore.from_documents(
        [LCDocument(page_content="The shipyard founder was a sailor.", metadata={"n": 1})],
        _langchain_embeddings(minilm),
        location=":memory:",
        collection_name="lc",
    )
    with GraphIndex.build(
        DOCS, tmp_path / "idx", qdrant_client=lc.client, qdrant_collection="lc", progress=False
    ) as index:
        result = index.retrieve(QUESTION, top_k=5)
        assert set(result.passages) == {"yard", "harbor", "flood"}
        assert index.info()["vectors"]["chunks"] == len(index.store.chunk_ids())
        index.delete("flood")
    texts = [d.page_content for d in lc.similarity_search(QUESTION, k=10)]
    assert "The shipyard founder was a sailor." in texts and len(texts) == 3


def test_old_server_indexes_keep_their_names(tmp_path, client, minilm):
    """An index made before (a prefix only) opens as it was, also by its collection name."""
    with GraphIndex.build(DOCS[:2], tmp_path / "idx", qdrant_client=client, progress=False):
        pass
    path = tmp_path / "idx"
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["vectors"] = {"backend": "server", "url": None, "prefix": "hygraph_idx_"}
    (path / "manifest.json").write_text(json.dumps(manifest))  # as written before
    assert "hygraph_idx_chunks" in _names(client)
    with GraphIndex.open(path, qdrant_client=client) as index:
        assert index.retrieve(QUESTION, top_k=1).passages == ["yard"]
    # A framework that now passes its collection name ("hygraph_idx" for prefix "hygraph_idx_").
    with GraphIndex.open(path, qdrant_client=client, qdrant_collection="hygraph_idx") as index:
        assert index.retrieve(QUESTION, top_k=1).passages == ["yard"]
        index.insert([Document("more", "Ilse Marrow designed the Caddow Bridge.")])
    assert "hygraph_idx_chunks" in _names(client) and "hygraph_idx" not in _names(client)


def test_reopening_a_server_index_without_its_client_says_what_to_pass(tmp_path, client, minilm):
    with GraphIndex.build(
        DOCS[:1], tmp_path / "idx", qdrant_client=client, qdrant_collection="app", progress=False
    ):
        pass
    with pytest.raises(ConfigError) as err:
        GraphIndex.open(tmp_path / "idx")
    message = str(err.value)
    assert "\n" not in message and "Qdrant server (collection 'app')" in message
    assert "qdrant_client=" in message and "qdrant_url=" in message
    with pytest.raises(ConfigError, match="pass qdrant_client= or qdrant_url= with it"):
        GraphIndex(tmp_path / "new", qdrant_collection="app")


_RUN = textwrap.dedent(
    """
    import sys

    import numpy as np
    from qdrant_client import QdrantClient

    from hygraph.ingest import Document
    from hygraph.integrations import open_for_framework


    class ToyEmbedder:
        name = "toy"
        dim = 8

        def embed(self, texts):
            rows = [np.frombuffer(t.encode().ljust(32)[:32], dtype=np.uint8)[:8] for t in texts]
            vectors = np.asarray(rows, dtype=np.float32) + 1.0
            return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

        def embed_query(self, text):
            return self.embed([text])[0]


    client = QdrantClient(path=sys.argv[1])
    name = sys.argv[2]
    found = client.count(name).count if client.collection_exists(name) else 0
    index = open_for_framework(
        sys.argv[3] if len(sys.argv) > 3 else None,
        framework="test",
        label="Test",
        embedding_hint="",
        embedder=ToyEmbedder(),
        vector_store_qdrant=(client, name),
        extractor="none",
        progress=False,
    )
    index.insert([Document("a", "Alpha text."), Document("b", "Beta text.")], methods=["vanilla"])
    print(found, client.count(name).count)
    """
)


def test_a_temporary_index_leaves_no_collections_behind(tmp_path):
    """Two runs with the same collection name: the second finds nothing of the first."""
    from qdrant_client import QdrantClient

    run = [sys.executable, "-c", _RUN, str(tmp_path / "qdrant")]
    # The control: an index in a directory of its own keeps its collection.
    out = subprocess.run([*run, "kept", str(tmp_path / "idx")], capture_output=True, text=True)
    assert out.stdout.split() == ["0", "2"], out.stderr[-2000:]
    for _ in range(2):
        out = subprocess.run([*run, "app"], capture_output=True, text=True, timeout=120)
        assert out.stdout.split() == ["0", "2"], out.stderr[-2000:]
    client = QdrantClient(path=str(tmp_path / "qdrant"))
    assert _names(client) == {"kept"} and client.count("kept").count == 2
    client.close()
