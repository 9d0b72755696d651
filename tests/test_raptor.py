"""RAPTOR and RAPTOR-K: tree clustering, the summary-tree layers, retrieval, and both frameworks.

Clustering is checked on hand-made points (UMAP replaced by a projection where the
test is about the Gaussian-mixture stages; one test runs the real UMAP). Trees are
built offline over a small hand-made corpus with the hashed bag-of-words embedder of
``doubles.py``; the LLM is the scripted test double of ``doubles.py``, whose replies
(well-formed and malformed) are written into each test.
"""

from __future__ import annotations

import numpy as np
import pytest
from doubles import ScriptedLLM, WordEmbedder
from operator_coverage import covers

import hygraph.graph.algorithms.raptor_clustering as rc
from hygraph import GraphIndex
from hygraph.cli import main
from hygraph.errors import ConfigError, ModelError
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.ingest import Document
from hygraph.layers.tree import KMeansTree, SummaryTree, summary_id
from hygraph.methods.base import get_method
from hygraph.prompts.raptor import SUMMARY_MARKER, parse_summary, summary_messages
from hygraph.prompts.replies import ParseError

# --------------------------------------------------------------------------- clustering


def _project(vectors, dims, n_neighbors, **kwargs):
    """Stand-in for UMAP: the points as made, in 2-D (whatever ``dims`` asks)."""
    return np.asarray(vectors, dtype=np.float64)[:, :2]


def _pca(vectors, dims, n_neighbors, **kwargs):
    """Stand-in for UMAP in index tests (nothing to compile): a PCA projection."""
    x = np.asarray(vectors, dtype=np.float64)
    x = x - x.mean(0)
    return x @ np.linalg.svd(x, full_matrices=False)[2][:dims].T


@pytest.fixture
def quick_umap(monkeypatch):
    """RAPTOR's tree in index tests without compiling UMAP (the real one: the heavy test)."""
    monkeypatch.setattr(rc, "umap_reduce", _pca)


def _two_blobs_and_a_midpoint() -> np.ndarray:
    rng = np.random.default_rng(0)
    left = rng.normal((-2.0, 0.0), 1.0, (20, 2))
    return np.vstack([left, left * [-1, 1], [[0.0, 0.0]]])


def test_two_stage_clustering_assigns_softly(monkeypatch):
    monkeypatch.setattr(rc, "umap_reduce", _project)
    x = _two_blobs_and_a_midpoint()
    # dims=25: the global clusters (21 points) are too small for a local stage.
    groups = rc.umap_gmm_clusters(x, dims=25, max_clusters=6)
    assert set().union(*map(set, groups)) == set(range(len(x)))
    # The midpoint is as likely in either blob, so it joins a cluster on each side.
    holding = [g for g in groups if 40 in g]
    assert len(holding) == 2
    assert {min(g) < 20 for g in holding} == {True, False}
    # Clusters never mix the two blobs (besides the shared midpoint).
    for g in groups:
        sides = {i < 20 for i in g if i != 40}
        assert len(sides) == 1


def test_tiny_inputs_are_one_cluster_without_reduction(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("too few points to reduce")

    monkeypatch.setattr(rc, "umap_reduce", refuse)
    x = np.random.default_rng(1).normal(size=(11, 16))
    assert rc.umap_gmm_clusters(x, dims=10) == [list(range(11))]  # n <= dims + 1
    assert rc.umap_gmm_clusters(np.zeros((0, 4))) == []
    assert rc.raptor_clusters(x[:1], [9999]) == [[0]]  # one long text stays whole
    assert rc.raptor_clusters(x[:5], [10] * 5) == [[0, 1, 2, 3, 4]]


def test_clusters_over_the_token_cap_are_split_recursively(monkeypatch):
    monkeypatch.setattr(rc, "umap_reduce", _project)
    x = _two_blobs_and_a_midpoint()[:40]
    tokens = [100] * 40
    whole = rc.raptor_clusters(x, tokens, dims=2, max_clusters=6, max_tokens=10_000)
    capped = rc.raptor_clusters(x, tokens, dims=2, max_clusters=6, max_tokens=700)
    assert max(len(g) for g in whole) > 7
    assert all(sum(tokens[i] for i in g) <= 700 for g in capped)
    assert set().union(*map(set, capped)) == set(range(40))
    # A group the clustering cannot split (too few points to reduce) is split by K-means.
    tiny = rc.raptor_clusters(x[:6], [500] * 6, max_tokens=1000)
    assert all(len(g) <= 2 for g in tiny) and sorted(i for g in tiny for i in g) == list(range(6))
    # Identical points still end (halves by position).
    same = rc.raptor_k_clusters(np.ones((4, 3)), [400] * 4, size=10, max_tokens=500)
    assert sorted(map(len, same)) == [1, 1, 1, 1]


def test_kmeans_k_rule_balance_and_hard_assignment():
    rng = np.random.default_rng(2)
    big = rng.normal((0.0, 0.0), 0.3, (30, 2))
    small = rng.normal((5.0, 5.0), 0.3, (10, 2))
    x = np.vstack([big, small])
    groups = rc.kmeans_clusters(x, size=10)  # K = 40 // 10 = 4
    assert len(groups) == 4
    assert sorted(i for g in groups for i in g) == list(range(40))  # hard: each point once
    assert max(map(len, groups)) <= 12  # n/K + 0.2 n/K
    plain = rc.kmeans_clusters(x, size=10, balanced=False)
    assert sorted(i for g in plain for i in g) == list(range(40))
    assert rc.kmeans_clusters(x[:9], size=10) == [list(range(9))]  # K = max(1, 9 // 10)
    assert rc.kmeans_clusters(x, size=10) == groups  # seeded: the same every time


@pytest.mark.heavy  # UMAP compiles its kernels on first use (tens of seconds)
def test_real_umap_keeps_separated_topics_apart():
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(3, 48))
    x = np.vstack([c + 0.3 * rng.normal(size=(25, 48)) for c in centres])
    groups = rc.raptor_clusters(x, [50] * len(x))
    assert set().union(*map(set, groups)) == set(range(len(x)))
    assert all(len({i // 25 for i in g}) == 1 for g in groups)
    assert rc.raptor_clusters(x, [50] * len(x)) == groups  # seeded


# --------------------------------------------------------------------------- prompts


def test_summary_prompt_and_parser():
    messages = summary_messages(["First  text\nwith lines.", "", "Second text."], max_words=40)
    assert "40 words" in messages[0]["content"]
    assert SUMMARY_MARKER in messages[-1]["content"]
    assert "First text with lines.\n\nSecond text." in messages[-1]["content"]
    assert parse_summary("<think>hmm</think>Summary: Ships were built.") == "Ships were built."
    assert parse_summary("```\nThe harbour.\n```") == "The harbour."
    for bad in ("", "   ", "<think>only reasoning"):
        with pytest.raises(ParseError):
            parse_summary(bad)


# --------------------------------------------------------------------------- operators


@pytest.fixture
def hand_tree(tmp_path):
    """A hand-made tree without building an index: four one-chunk documents (two about
    ships, two about apples), one level-1 summary over each pair, and a root over both."""
    from hygraph.graph.store import Edge, GraphStore, Node
    from hygraph.ingest import Chunker
    from hygraph.layers.tree import KMeansTree
    from hygraph.manifest import Manifest
    from hygraph.resources import Resources
    from hygraph.usage import UsageTracker
    from hygraph.vectors import open_vector_index

    store = GraphStore(tmp_path / "graph.sqlite")
    texts = {
        "s1": "The ship left the harbour at dawn.",
        "s2": "A ship crane stood on the quay of the harbour.",
        "a1": "Apple trees filled the orchard.",
        "a2": "The orchard pressed apple cider each autumn.",
    }
    chunk = {}
    for doc_id, text in texts.items():
        doc = Document(text=text, id=doc_id)
        (c,) = Chunker(1200, 100)(doc)
        store.add_document(doc, [c])
        chunk[doc_id] = c.id
    embedder = WordEmbedder()
    manifest = Manifest(embedder="words", dim=None, chunk_size=1200, chunk_overlap=100,
                        tokenizer="t", vectors={"backend": "edge", "path": "qdrant"},
                        extractor="none")  # fmt: skip
    res = Resources(path=tmp_path, store=store, vectors=open_vector_index(tmp_path / "qdrant"),
                    manifest=manifest, embedder=embedder, llm=None, tracker=UsageTracker(),
                    progress=False, cache_dir=tmp_path / "cache")  # fmt: skip
    res.upsert_vectors("chunks", list(chunk.values()), list(texts.values()), [{}] * 4)
    layer = KMeansTree()
    res.layers["tree-kmeans"] = layer
    summaries = {
        "tree:ships": (1, "Ships, a crane and the harbour quay.", [chunk["s1"], chunk["s2"]]),
        "tree:apples": (1, "An apple orchard and its cider.", [chunk["a1"], chunk["a2"]]),
        "tree:root": (2, "Harbour ships and orchard apples.", ["tree:ships", "tree:apples"]),
    }
    nodes, edges = [], []
    for sid, (level, text, members) in summaries.items():
        sources = [c for m in members for c in (summaries[m][2] if m in summaries else [m])]
        data = {"level": level, "tree": "tree-kmeans", "members": members}
        nodes.append(Node(sid, NodeKind.TREE_SUMMARY, None, text, data, tuple(sources)))
        edges += [Edge(sid, m, EdgeKind.TREE_CHILD) for m in members]
    store.upsert_nodes(nodes)
    store.upsert_edges(edges)
    layer._embed(res, nodes)
    return res, chunk


@covers("tree.collapsed")
def test_collapsed_tree_mixes_levels_and_orders_a_summarys_chunks(hand_tree):
    from hygraph.operators.registry import get_operator
    from hygraph.operators.state import State

    res, chunk = hand_tree
    collapsed = get_operator("tree.collapsed")
    state = State("ships crane harbour quay", top_k=3)
    collapsed.fn(res, state, tree="tree-kmeans", k=3, max_tokens=0)
    ids = [i.id for i in state.evidence["tree"]]
    assert ids[0] == "tree:ships" and chunk["s2"] in ids and len(ids) == 3
    scores = [i.score for i in state.evidence["tree"]]
    assert scores == sorted(scores, reverse=True)
    ships = state.evidence["tree"][0]
    assert ships.kind == "tree_summary" and ships.metadata["level"] == 1
    assert ships.source_ids == (chunk["s2"], chunk["s1"])  # the crane chunk is nearer
    assert [n.data["level"] for n in state.nodes][:1] == [1]
    # The budget keeps leading nodes while they fit, and stops at the first that does not.
    capped = State("ships crane harbour quay", top_k=3)
    collapsed.fn(res, capped, tree="tree-kmeans", k=3, max_tokens=12)
    assert [i.id for i in capped.evidence["tree"]] == ["tree:ships"]


@covers("tree.traverse")
def test_traversal_goes_from_the_root_down(hand_tree):
    from hygraph.operators.registry import get_operator
    from hygraph.operators.state import State

    res, chunk = hand_tree
    state = State("apple cider orchard", top_k=1)
    get_operator("tree.traverse").fn(res, state, tree="tree-kmeans", k=1, max_tokens=0)
    assert [i.id for i in state.evidence["tree"]] == ["tree:root", "tree:apples", chunk["a2"]]
    assert [i.metadata["level"] for i in state.evidence["tree"]] == [2, 1, 0]


# --------------------------------------------------------------------------- the tree layer

TOPICS = {
    "harbour": "harbour ship dock pier crane quay vessel sailor tide anchor",
    "orchard": "orchard apple pear blossom harvest cider tree farmer grafting bee",
    "observatory": "telescope star comet lens dome astronomer orbit planet night sky",
    "railway": "railway train station track locomotive signal platform carriage steam line",
}
#: Small trees: the stop rule is "at most reduction_dimension + 1 nodes" (10 in the paper's
#: code); 2 lets a 24-chunk corpus grow two levels. K-means clusters of 3.
SMALL_K = "raptor-k:reduction_dimension=2,cluster_size=3"


def _doc(topic: str, n: int) -> Document:
    words = TOPICS[topic].split()
    picked = [words[(n + j) % len(words)] for j in range(5)]
    text = (
        f"Note {n} on the {topic}: the {picked[0]} and the {picked[1]} were recorded. "
        f"Later the {picked[2]}, the {picked[3]} and the {picked[4]} were added."
    )
    return Document(text=text, id=f"{topic}-{n}", title=f"{topic.title()} {n}")


def corpus(per_topic: int = 6, topics=tuple(TOPICS)) -> list[Document]:
    return [_doc(t, n) for t in topics for n in range(per_topic)]


def _index(path, **kwargs) -> GraphIndex:
    return GraphIndex(path, embedder=WordEmbedder(), extractor="none", progress=False, **kwargs)


def _summaries(index: GraphIndex, tree: str = "tree-kmeans") -> dict:
    nodes = index.store.nodes_of_kind(NodeKind.TREE_SUMMARY)
    return {n.id: n for n in nodes if n.data["tree"] == tree}


def _check_fresh(index: GraphIndex, tree: str = "tree-kmeans") -> dict:
    """Every summary is consistent with the store now, and has exactly one vector."""
    nodes = _summaries(index, tree)
    chunks = set(index.store.chunk_ids())
    for node in nodes.values():
        members = node.data["members"]
        assert node.id == summary_id(tree, node.data["level"], members)
        assert node.text and node.data["written_by"] in ("llm", "extractive")
        below = [m for m in members if m in nodes] or [m for m in members if m in chunks]
        assert len(below) == len(members)  # no member is gone
        expected = set()
        for m in members:
            expected |= set(nodes[m].sources) if m in nodes else {m}
        assert set(node.sources) == expected and expected <= chunks
        children = {e.dst for e in index.store.edges_of(node.id, EdgeKind.TREE_CHILD)
                    if e.src == node.id}  # fmt: skip
        assert children == set(members)
    collection = index.layer(tree).collection
    if nodes:
        assert index.resources.vectors.count(collection) == len(nodes)
        assert index.resources.vectors.existing(collection, list(nodes)) == set(nodes)
    assert index.layer(tree).pending(index.resources) == []
    return nodes


def test_tree_build_levels_links_sources_and_extractive_summaries(tmp_path):
    with _index(tmp_path / "i") as index:
        report = index.insert(corpus(), methods=[SMALL_K])
        nodes = _check_fresh(index)
        levels = sorted({n.data["level"] for n in nodes.values()})
        assert levels == [1, 2]
        first = [n for n in nodes.values() if n.data["level"] == 1]
        assert len(first) == 8  # K = 24 // 3
        assert all(n.data["written_by"] == "extractive" for n in nodes.values())
        # Level-1 clusters keep to one topic (bag-of-words vectors separate them).
        for node in first:
            assert len({index.store.get_chunks([c])[c].doc_id.split("-")[0]
                        for c in node.sources}) == 1  # fmt: skip
        # Each level-2 summary covers the chunks of its level-1 members.
        assert all(len(n.sources) > 3 for n in nodes.values() if n.data["level"] == 2)
        stages = report.usage["stages"]
        assert "build:tree-kmeans:level1" in stages and "build:tree-kmeans:level2" in stages
        assert report.usage["total"]["llm_calls"] == 0
        # Retrieval over the collapsed tree mixes levels; passages follow provenance.
        result = index.retrieve("telescope comet astronomer", SMALL_K, top_k=4)
        kinds = [i.kind for i in result.items]
        assert kinds and set(kinds) <= {"chunk", "tree_summary"}
        assert all(index.store.get_chunks([c])[c].doc_id.startswith("observatory")
                   for c in result.chunks[:3])  # fmt: skip
        cited = [c for i in result.items for c in i.source_ids]
        assert result.chunks == list(dict.fromkeys(cited))
        levels_seen = {i.metadata["level"] for i in result.items}
        assert levels_seen <= {0, 1, 2}


def test_summary_sources_are_ordered_by_cosine_to_the_question(tmp_path):
    with _index(tmp_path / "i") as index:
        index.insert(corpus(), methods=[SMALL_K])
        question = "orchard cider grafting"
        result = index.retrieve(question, SMALL_K, top_k=6)
        query = index.resources.embed_query(question)
        for item in result.items:
            if item.kind != "tree_summary":
                continue
            vectors = index.resources.stored_vectors("chunks", list(item.source_ids))
            cos = [float(vectors[c] @ query) for c in item.source_ids]
            assert cos == sorted(cos, reverse=True)


def test_stop_rules(tmp_path):
    with _index(tmp_path / "a") as index:
        # The paper's code stops at a level of <= reduction_dimension + 1 (11) nodes.
        index.insert(corpus(per_topic=2), methods=["raptor-k"])
        assert _summaries(index) == {}
        result = index.retrieve("railway locomotive", "raptor-k")
        assert result.items and all(i.kind == "chunk" for i in result.items)
    with _index(tmp_path / "b") as index:
        index.insert(corpus(), methods=[SMALL_K + ",num_layers=1"])
        assert {n.data["level"] for n in _summaries(index).values()} == {1}
    with _index(tmp_path / "c") as index:
        # Clusters of fewer than min_cluster_size members get no parent.
        index.insert(corpus(), methods=[SMALL_K + ",min_cluster_size=5"])
        assert _summaries(index) == {}


def test_rerun_is_a_no_op_and_both_trees_coexist(tmp_path, quick_umap):
    with _index(tmp_path / "i") as index:
        index.insert(corpus(), methods=[SMALL_K])
        before = {i: (n.text, n.data) for i, n in _summaries(index).items()}
        again = index.insert([], methods=[SMALL_K])
        assert again.usage["total"]["embeddings"] == 0
        assert {i: (n.text, n.data) for i, n in _summaries(index).items()} == before
        # The same documents again change nothing either.
        index.insert(corpus(), methods=[SMALL_K])
        assert set(_summaries(index)) == set(before)
        # RAPTOR's tree beside RAPTOR-K's: its own ids, kinds data and collection.
        index.insert([], methods=["raptor:reduction_dimension=2,min_cluster_size=2"])
        raptor = _check_fresh(index, "tree")
        assert raptor and not set(raptor) & set(before)
        assert set(_summaries(index)) == set(before)
        _check_fresh(index)
        assert index.retrieve("harbour crane", "raptor").items


def test_insert_and_delete_keep_the_tree_fresh(tmp_path):
    with _index(tmp_path / "i") as index:
        index.insert(corpus(topics=("harbour", "orchard", "observatory")), methods=[SMALL_K])
        first = set(_check_fresh(index))
        index.insert(corpus(topics=("railway",)))
        second = _check_fresh(index)
        railway = set(index.store.chunk_ids_of([f"railway-{n}" for n in range(6)]))
        assert any(set(n.sources) & railway for n in second.values())
        assert first & set(second)  # summaries of unchanged subtrees were kept
        # Delete: no summary cites a deleted chunk, no vector is left behind.
        gone = set(index.store.chunk_ids_of(["harbour-0"]))
        index.delete("harbour-0")
        third = _check_fresh(index)
        assert not any(set(n.sources) & gone for n in third.values())
        removed = (set(first) | set(second)) - set(third)
        collection = index.layer("tree-kmeans").collection
        assert removed and not index.resources.vectors.existing(collection, list(removed))
        for doc in [f"orchard-{n}" for n in range(6)]:
            index.delete(doc)
        _check_fresh(index)
        result = index.retrieve("apple cider harvest", SMALL_K)
        assert not any(c in result.chunks for c in gone)


def test_rebuild_mode_and_drift_give_the_tree_of_a_fresh_build(tmp_path):
    docs = corpus()
    with _index(tmp_path / "fresh") as index:
        index.insert(docs, methods=[SMALL_K])
        fresh = set(_summaries(index))
    for option in (",update=rebuild", ",rebuild_fraction=0"):
        with _index(tmp_path / option.strip(",=0")) as index:
            index.insert(docs[:18], methods=[SMALL_K + option])
            index.insert(docs[18:])
            assert set(_check_fresh(index)) == fresh


def test_a_killed_build_resumes_without_duplicates(tmp_path, monkeypatch):
    docs = corpus()
    with _index(tmp_path / "clean") as index:
        index.insert(docs, methods=[SMALL_K])
        clean = {i: n.text for i, n in _summaries(index).items()}
    real_write = SummaryTree._write
    calls = []

    def dies_at_level_two(self, res, level, below, batch):
        if level == 2:
            raise KeyboardInterrupt("killed")
        calls.append(level)
        real_write(self, res, level, below, batch)

    monkeypatch.setattr(SummaryTree, "_write", dies_at_level_two)
    clustered = []
    real_cluster = KMeansTree.cluster

    def counting(self, vectors, tokens):
        clustered.append(len(vectors))
        return real_cluster(self, vectors, tokens)

    with _index(tmp_path / "killed") as index:
        with pytest.raises(KeyboardInterrupt):
            index.insert(docs, methods=[SMALL_K])
        layer = index.layer("tree-kmeans")
        assert layer.pending(index.resources) == ["*"]  # not complete
        assert {n.data["level"] for n in _summaries(index).values()} == {1}
        monkeypatch.setattr(SummaryTree, "_write", real_write)
        monkeypatch.setattr(KMeansTree, "cluster", counting)
        index.insert([], methods=[SMALL_K])
        assert clustered == [8]  # level 1 was finished: only level 2 is clustered again
        resumed = {i: n.text for i, n in _summaries(index).items()}
        _check_fresh(index)
    assert resumed == clean


def test_a_run_killed_before_removing_old_summaries_removes_them_next(tmp_path, monkeypatch):
    with _index(tmp_path / "i") as index:
        index.insert(corpus(topics=("harbour", "orchard", "observatory")), methods=[SMALL_K])
        real_remove = SummaryTree._remove

        def killed(self, res, ids):
            if ids:
                raise KeyboardInterrupt("killed")

        monkeypatch.setattr(SummaryTree, "_remove", killed)
        with pytest.raises(KeyboardInterrupt):
            index.insert(corpus(topics=("railway",)))
        monkeypatch.setattr(SummaryTree, "_remove", real_remove)
        assert index.layer("tree-kmeans").pending(index.resources) == ["*"]
        index.insert([])
        _check_fresh(index)


# --------------------------------------------------------------------------- with an LLM


class SummaryLLM(ScriptedLLM):
    """Scripted double for summary prompts: a good summary, except for clusters about the
    orchard (a reply that is all reasoning) and the observatory (a failed call)."""

    def __init__(self):
        super().__init__(responder=self.reply)

    def reply(self, messages, params):
        user = messages[-1]["content"]
        assert SUMMARY_MARKER in user, user[:80]
        if "orchard" in user.lower() and "harbour" not in user.lower():
            return "<think>I am not sure what to write"
        if "telescope" in user and "orchard" not in user.lower():
            return ModelError("HTTP 500 after retries")
        return "Summary: a cluster of notes about " + " ".join(sorted(set(user.split()))[:5])


def test_llm_summaries_with_fallbacks_for_malformed_replies(tmp_path):
    llm = SummaryLLM()
    with _index(tmp_path / "i", llm=llm) as index:
        report = index.insert(corpus(), methods=[SMALL_K + ",num_layers=1"])
        nodes = _check_fresh(index)
        assert len(llm.calls) == len(nodes) == 8
        by = {n.data["written_by"] for n in nodes.values()}
        assert by == {"llm", "extractive"}
        for node in nodes.values():
            if node.data["written_by"] == "llm":
                assert node.text.startswith("a cluster of notes about")
            else:
                assert node.text and "Note" in node.text  # extractive: sentences of members
        level1 = report.usage["stages"]["build:tree-kmeans:level1"]
        assert level1["llm_calls"] >= 7  # charged to the level (the failed call may not be)
        # A rerun asks nothing; an unchanged subtree is never summarised twice.
        index.insert([], methods=[SMALL_K])
        assert len(llm.calls) == 8
    with _index(tmp_path / "x", llm=llm) as index:
        index.insert(corpus(), methods=[SMALL_K + ",summaries=extractive"])
        assert len(llm.calls) == 8
        assert {n.data["written_by"] for n in _summaries(index).values()} == {"extractive"}


# --------------------------------------------------------------------------- methods


def test_methods_are_registered_with_paper_defaults():
    raptor, raptor_k = get_method("raptor"), get_method("raptor-k")
    assert raptor.layers == ("chunks", "tree") and raptor_k.layers == ("chunks", "tree-kmeans")
    config = raptor.Config()
    assert (config.top_k, config.reduction_dimension, config.cluster_threshold) == (4, 10, 0.1)
    assert (config.max_cluster_tokens, config.num_layers, config.cluster_seed) == (3500, 5, 224)
    assert raptor_k.Config().cluster_size == 10 and raptor_k.Config().balanced
    raptor.check()
    raptor_k.check()
    with pytest.raises(ConfigError):
        raptor.Config(retrieval="sideways")
    with pytest.raises(ConfigError):
        raptor_k.Config(summaries="sometimes")


def test_describe_in_the_cli(capsys):
    assert main(["methods", "--describe", "raptor-k"]) == 0
    out = capsys.readouterr().out
    assert "tree.collapsed" in out and "cluster_size" in out and "tree-kmeans" in out


def test_tree_traversal(tmp_path):
    with _index(tmp_path / "i") as index:
        index.insert(corpus(), methods=[SMALL_K])
        result = index.retrieve("railway locomotive", SMALL_K + ",retrieval=traversal", top_k=2)
        levels = [i.metadata["level"] for i in result.items]
        assert levels == sorted(levels, reverse=True) and levels[-1] == 0  # roots first
        assert len(result.items) <= 2 * 3  # k per level, three levels
        assert index.store.get_chunks(result.chunks[:1])[result.chunks[0]].doc_id.startswith(
            "railway"
        )


# --------------------------------------------------------------------------- frameworks


def test_raptor_through_llama_index(tmp_path, minilm, quick_umap):
    pytest.importorskip("llama_index.core")
    from li_support import li_documents

    from llama_index_hygraph import HyGraphIndex

    names = ["ilse-marrow.md", "great-dunmere-flood.md", "dunmere.md", "colworth-university.md"]
    method = "raptor:reduction_dimension=2,min_cluster_size=2"
    with HyGraphIndex.from_documents(
        li_documents(names),
        method=method,
        persist_dir=tmp_path / "i",
        chunk_size=64,
        chunk_overlap=0,
    ) as index:
        assert _summaries(index.graph_index, "tree")
        nodes = index.as_retriever(similarity_top_k=3).retrieve("Who designed the Caddow Bridge?")
    assert len(nodes) == 3 and all(n.node.metadata["method"] == method for n in nodes)
    assert any("ilse-marrow.md" in n.node.metadata["doc_ids"] for n in nodes)


def test_raptor_k_through_langchain(tmp_path, minilm):
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document as LCDocument

    from hygraph.demo import sample_dir
    from langchain_hygraph import HyGraphRetriever

    names = ["ilse-marrow.md", "great-dunmere-flood.md", "dunmere.md", "colworth-university.md"]
    docs = [LCDocument(page_content=(sample_dir() / n).read_text(), metadata={"source": n})
            for n in names]  # fmt: skip
    method = "raptor-k:reduction_dimension=2,cluster_size=3"
    with HyGraphRetriever.from_documents(
        docs,
        method=method,
        persist_dir=tmp_path / "i",
        chunk_size=64,
        chunk_overlap=0,
        results="evidence",
    ) as retriever:
        assert _summaries(retriever.index)
        found = retriever.invoke("Who designed the Caddow Bridge?")
    kinds = {d.metadata["kind"] for d in found}
    assert kinds <= {"chunk", "tree_summary"} and found
    assert all(d.metadata["source_ids"] for d in found)
