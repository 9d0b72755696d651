"""Peer-system adapters (benchmarks/peers): LlamaIndex PropertyGraphIndex, LangChain GraphRetriever.

Skipped where the benchmark extra (``pip install -e ".[bench]"``) is not installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("llama_index.core")
pytest.importorskip("langchain_graph_retriever")

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks.peers import PeerResult, available_peers, load_peer  # noqa: E402
from hygraph.index import GraphIndex  # noqa: E402
from hygraph.ingest.documents import Document  # noqa: E402

# A bridge: "varga" mentions Ansel Varga and the Brightwater Conservatory; "brightwater"
# mentions the conservatory and who directed it. "reiner" is about violin teaching, so it
# is nearer a question about Varga's teacher than "brightwater" is, but shares no entity.
DOCS = [
    Document(
        "varga",
        "Ansel Varga is a Hungarian violinist. As a young man he studied at the "
        "Brightwater Conservatory in Vienna.",
        title="Ansel Varga",
    ),
    Document(
        "brightwater",
        "The Brightwater Conservatory was directed by Elena Marsh from 1950 until 1971. "
        "The school moved to a new building near the Danube in 1963.",
        title="Brightwater Conservatory",
    ),
    Document(
        "reiner",
        "Tomas Reiner was a violinist and a famous violin teacher. Many young violinists "
        "studied with him and learned his bowing technique.",
        title="Tomas Reiner",
    ),
    Document(
        "kallisto",
        "Mount Kallisto is a volcano on the island of Serafin. Its summit is 4,210 metres "
        "above sea level, and its last eruption was in 1888.",
        title="Mount Kallisto",
    ),
    Document(
        "ostra",
        "The Ostra is a river that flows through the town of Pellam. Its water powers the "
        "old mills of the Pellam valley.",
        title="Ostra",
    ),
]
BRIDGE_QUESTION = "Who taught the violinist Ansel Varga?"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory, minilm):
    index = GraphIndex.build(DOCS, tmp_path_factory.mktemp("peers") / "idx", progress=False)
    yield index
    index.close()


@pytest.fixture(scope="module")
def doc_of(tiny):
    return {c.id: c.doc_id for c in tiny.store.iter_chunks()}


@pytest.fixture(scope="module")
def built(tiny):
    """Each peer with its default options, built once, with its build stats."""
    out = {}
    for name in ("llamaindex-pg", "langchain-graph"):
        peer = load_peer(name)
        out[name] = (peer, peer.build(tiny))
    return out


def test_registry():
    assert available_peers() == ["llamaindex-pg", "langchain-graph"]
    assert available_peers(installed=True) == ["llamaindex-pg", "langchain-graph"]
    with pytest.raises(KeyError, match="unknown peer"):
        load_peer("nope")


def test_missing_library_names_the_extra(monkeypatch):
    monkeypatch.delitem(sys.modules, "benchmarks.peers.llamaindex_pg", raising=False)
    for module in ("llama_index", "llama_index.core"):  # as if never installed
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ImportError, match=r'pip install -e "\.\[bench\]"'):
        load_peer("llamaindex-pg")


@pytest.mark.parametrize("name", ["llamaindex-pg", "langchain-graph"])
def test_build_stats(built, tiny, name):
    peer, stats = built[name]
    assert peer.name == name
    assert stats["seconds"] >= 0
    assert stats["embeddings"] > 0
    n_entities = len(tiny.store.nodes_of_kind("entity"))
    expected = n_entities if name == "llamaindex-pg" else len(DOCS)
    assert stats["embeddings"] == expected
    assert stats["embeddings_computed"] + stats["embeddings_cached"] == expected


@pytest.mark.parametrize("name", ["llamaindex-pg", "langchain-graph"])
@pytest.mark.parametrize(
    ("question", "doc"),
    [("How high is Mount Kallisto?", "kallisto"), ("What powers the mills in Pellam?", "ostra")],
)
def test_distinctive_fact_comes_first(built, doc_of, name, question, doc):
    peer, _ = built[name]
    result = peer.retrieve(question, 3)
    assert isinstance(result, PeerResult)
    assert doc_of[result.chunk_ids[0]] == doc
    text = next(d.text for d in DOCS if d.id == doc)
    assert text in result.context


@pytest.mark.parametrize("name", ["llamaindex-pg", "langchain-graph"])
@pytest.mark.parametrize("top_k", [1, 2, 5])
def test_chunk_ids_valid_unique_and_bounded(built, tiny, name, top_k):
    peer, _ = built[name]
    valid = set(tiny.store.chunk_ids())
    for question in (BRIDGE_QUESTION, "mills on a river", "volcano eruption 1888"):
        ids = peer.retrieve(question, top_k).chunk_ids
        assert ids, question
        assert len(ids) == len(set(ids)) <= top_k
        assert set(ids) <= valid


def test_langchain_graph_bridges_through_a_shared_entity(tiny, doc_of):
    # Plain vector search ranks the violin-teacher distractor second ...
    vector = [doc_of[h.id] for h in tiny.search_chunks(BRIDGE_QUESTION, 2)]
    assert vector == ["varga", "reiner"]
    # ... the traversal starts from the nearest chunk only and follows the conservatory.
    peer = load_peer("langchain-graph", start_k=1)
    peer.build(tiny)
    result = peer.retrieve(BRIDGE_QUESTION, 2)
    assert [doc_of[c] for c in result.chunk_ids] == ["varga", "brightwater"]
    assert "Elena Marsh" in result.context


def test_langchain_graph_defaults_are_the_library_s(built):
    peer, _ = built["langchain-graph"]
    strategy = peer.strategy(7)
    assert (strategy.select_k, strategy.start_k, strategy.adjacent_k) == (7, 4, 10)
    assert strategy.max_depth is None


def test_llamaindex_graph_holds_the_same_extraction(built, tiny):
    peer, stats = built["llamaindex-pg"]
    store = peer.pg_index.property_graph_store
    n_mentions = sum(1 for _ in tiny.store.iter_edges("mentions"))
    n_relations = sum(1 for _ in tiny.store.iter_edges("relation"))
    assert stats["mentions"] == n_mentions and stats["relations"] == n_relations
    kallisto = store.get(ids=["Mount Kallisto"])[0]
    assert kallisto.label == "place"
    source = kallisto.properties["triplet_source_id"]
    assert store.get_llama_nodes([source])[0].get_content().startswith("Mount Kallisto\n")
    # The retriever sizes: LlamaIndex's default on request, else top_k + 3 (at least 4).
    assert peer.entities_for(5) == 8 and peer.entities_for(1) == 4
    assert load_peer("llamaindex-pg", similarity_top_k=None).entities_for(5) == 4
