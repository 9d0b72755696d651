"""HyGRAG (``hygrag``): Cleora and LSH checked by hand, the summary layers built offline and
with an LLM, the paper's incremental insert (attachment layer, path re-summaries, LLM calls
against a rebuild), delete repairs, resumable builds, and the method through GraphIndex,
the LlamaIndex retriever and the LangChain retriever.

The LLM is :class:`doubles.ScriptedLLM`, a scripted test double: its replies are written
here (well-formed ones, and malformed ones that must fall back to extractive summaries).
The embedder is mostly :class:`doubles.WordEmbedder`, a deterministic bag-of-words test
double, so a cosine follows the words two texts share.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest
from corpora import HARBOUR_DOCS
from doubles import ScriptedLLM, WordEmbedder
from operator_coverage import covers

from hygraph import GraphIndex
from hygraph.errors import ConfigError, ModelError
from hygraph.graph.algorithms.cleora import cleora_embeddings, undirected_adjacency
from hygraph.graph.algorithms.lsh import (
    from_gray,
    lsh_buckets,
    merge_remainders,
    pack_buckets,
    signatures,
    split_even,
)
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.ingest import Document
from hygraph.layers import hygrag_tree
from hygraph.layers.hygrag_graph import HY_COLLECTION, GroupContent, fit
from hygraph.methods.base import parse_method_spec
from hygraph.prompts.hygrag import (
    COMMUNITY_MARKER,
    NEW_MATERIAL_MARKER,
    UPPER_MARKER,
    parse_summary,
)
from hygraph.prompts.replies import ParseError

# --------------------------------------------------------------------------- Cleora


def test_cleora_matches_a_hand_computation_on_a_path():
    # Path 0 - 1 - 2; nodes 0 and 2 start on the x axis, node 1 on the y axis.
    adjacency = undirected_adjacency(3, [(0, 1, 1.0), (1, 2, 1.0), (2, 1, 5.0)])
    assert adjacency.toarray().tolist() == [[0, 1, 0], [1, 0, 1], [0, 1, 0]]
    start = np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # rows are normalised first
    one = cleora_embeddings(start, adjacency, iterations=1)
    r2, r5 = 1 / np.sqrt(2), 1 / np.sqrt(5)
    # z0 = (x0 + x1) / 2 -> (1, 1)/sqrt2; z1 = (x0 + x1 + x2) / 3 -> (2, 1)/sqrt5.
    assert np.allclose(one, [[r2, r2], [2 * r5, r5], [r2, r2]], atol=1e-6)
    two = cleora_embeddings(start, adjacency)  # T = 2, the paper's default
    a0 = np.array([r2 + 2 * r5, r2 + r5])  # (z0 + z1) / 2, direction only
    a1 = np.array([2 * r2 + 2 * r5, 2 * r2 + r5])  # (z0 + z1 + z2) / 3
    assert np.allclose(two[0], a0 / np.linalg.norm(a0), atol=1e-6)
    assert np.allclose(two[1], a1 / np.linalg.norm(a1), atol=1e-6)
    assert np.allclose(two[0], [0.81125, 0.58471], atol=1e-4)  # written out by hand
    assert np.allclose(cleora_embeddings(start, adjacency, iterations=0), start / [[2], [1], [1]])


def test_cleora_isolated_nodes_weights_and_shape_checks():
    start = np.array([[3.0, 4.0], [1.0, 0.0], [0.0, 1.0]])
    adjacency = undirected_adjacency(3, [(1, 2, 3.0)], weighted=True)
    z = cleora_embeddings(start, adjacency, iterations=2)
    assert np.allclose(z[0], [0.6, 0.8])  # isolated: keeps its (normalised) text vector
    # Weighted: z1 = (x1 + 3 x2) / 4 -> (1, 3)/sqrt10 after one step.
    one = cleora_embeddings(start, adjacency, iterations=1)
    assert np.allclose(one[1], np.array([1.0, 3.0]) / np.sqrt(10))
    assert np.allclose(np.linalg.norm(z, axis=1), 1.0)
    with pytest.raises(ValueError, match="adjacency"):
        cleora_embeddings(start, undirected_adjacency(2, []))


# --------------------------------------------------------------------------- LSH


def test_lsh_codes_gray_order_and_packing_by_hand():
    planes = np.array([[1.0, 0.0], [0.0, 1.0]])
    vectors = np.array([[1, 1], [-1, 1], [1, -1], [-1, -1]], dtype=float)
    assert signatures(vectors, planes).tolist() == [3, 1, 2, 0]  # bit of plane 0 first
    assert [from_gray(g) for g in (0, 1, 3, 2, 6, 7, 5, 4)] == list(range(8))
    # Buckets in code order: 3 + 2 merge, a 60-bucket splits at 50 and its rest of 10
    # joins the open pack, then 1 and 4 more: one cluster of 50 and one of 20.
    big = list(range(5, 65))
    clusters, rest = pack_buckets(
        [[0, 1, 2], [3, 4], big, [65], [66, 67, 68, 69]], min_size=5, max_size=50
    )
    assert clusters == [big[:50], [0, 1, 2, 3, 4, *big[50:], 65, 66, 67, 68, 69]]
    assert rest == []
    # A pack closed below S_min is a remainder.
    clusters, rest = pack_buckets([[0, 1, 2, 3], [4, 5, 6], [7]], min_size=5, max_size=6)
    assert clusters == [] and rest == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert split_even(list(range(7)), 3) == [[0, 1], [2, 3, 4], [5, 6]]


def test_lsh_remainders_merge_into_the_nearest_cluster_and_split_when_full():
    z = np.array([[1, 0], [1, 0.1], [0, 1], [0.1, 1], [0.05, 1]], dtype=float)
    assert merge_remainders(z, [[0, 1], [2, 3]], [[4]], max_size=3) == [[0, 1], [2, 3, 4]]
    # Past S_max the grown cluster splits into equal consecutive halves.
    assert merge_remainders(z, [[0, 1], [2, 3]], [[4]], max_size=2) == [[0, 1], [2, 3], [4]]
    # No cluster at all: the remainders form one (the tiny-corpus rule), if two rows.
    assert merge_remainders(z, [], [[0], [1, 2]], max_size=5) == [[0, 1, 2]]
    assert merge_remainders(z, [], [[0]], max_size=5) == []


def test_lsh_buckets_bound_sizes_cover_every_row_and_are_seeded():
    x = np.random.default_rng(0).standard_normal((237, 24))
    clusters = lsh_buckets(x)  # k = 16, S_min = 5, S_max = 50, seed 42
    assert all(5 <= len(c) <= 50 for c in clusters)
    assert sorted(i for c in clusters for i in c) == list(range(237))
    assert lsh_buckets(x) == clusters and lsh_buckets(x, seed=43) != clusters
    gray = lsh_buckets(x, order="gray")
    assert sorted(i for c in gray for i in c) == list(range(237))
    small = lsh_buckets(x[:40], min_size=8, max_size=9, remainder="drop")
    assert all(8 <= len(c) <= 9 for c in small)
    assert sorted(*lsh_buckets(x[:4])) == [0, 1, 2, 3] and lsh_buckets(x[:1]) == []
    with pytest.raises(ValueError):
        lsh_buckets(x, order="random")


# --------------------------------------------------------------------------- prompts


def test_summary_parser_and_input_budget():
    assert parse_summary("<think>hm</think>\nSummary: Harrowby builds ships.") == (
        "Harrowby builds ships."
    )
    assert parse_summary('```json\n{"summary": "A port town."}\n```') == "A port town."
    for bad in ("", "<think>only thinking", '{"summary": ""}', "   "):
        with pytest.raises(ParseError):
            parse_summary(bad)
    content = GroupContent(["p" * 9000, "q" * 100], ["e" * 50] * 3, ["r" * 40] * 200)
    cut = fit(content, budget_tokens=1000)  # ~4000 characters
    assert sum(map(len, cut.relations)) <= 4000 // 3
    assert len(cut.passages[0]) <= 4000  # cut to what is left, never dropped entirely
    assert cut.relations and cut.entities


# --------------------------------------------------------------------------- helpers

SMALL = "lsh_min_cluster_size=2,lsh_max_cluster_size=8"
NEW_DOCS = {
    "lighthouse": (
        "Quillon Lighthouse",
        "Quillon Lighthouse stands on Varne Point. Quillon Lighthouse was lit in 1902 by "
        "Maud Ferrier. Maud Ferrier kept the Quillon Lighthouse lamp for thirty years.",
    ),
    "orchard": (
        "Brisk Orchards",
        "Brisk Orchards grow cider apples near Tollan Vale. Brisk Orchards were planted in "
        "1877 by Edda Brisk. Edda Brisk sold the cider at Tollan Vale market.",
    ),
    "ferry": (
        "Saltmarsh Ferry",
        "The Saltmarsh Ferry crossed the Wend Estuary. The Saltmarsh Ferry was run by Col "
        "Amberly from 1890. Col Amberly built the Wend Estuary landing stage.",
    ),
}


def documents(table: dict) -> list[Document]:
    return [Document(id=key, text=text, title=title) for key, (title, text) in table.items()]


class Summariser:
    """The responder of the scripted LLM double: a reply per HyGRAG prompt kind.

    A layer-1 summary names the entities of its prompt, a higher one is ``panorama``
    with a serial number, new material gets :attr:`new_material` (set by the test);
    every reply ends with a serial, so no two prompts share a cached reply. Replies in
    :attr:`malformed` (by serial) are broken on purpose.
    """

    def __init__(self) -> None:
        self.serial = 0
        self.calls: Counter[str] = Counter()
        self.new_material = "nothing new"
        self.malformed: dict[int, object] = {}

    def __call__(self, messages, params):
        text = messages[-1]["content"]
        self.serial += 1
        if self.serial in self.malformed:
            self.calls["malformed"] += 1
            return self.malformed[self.serial]
        if NEW_MATERIAL_MARKER in text:
            self.calls["new"] += 1
            return self.new_material
        if UPPER_MARKER in text:
            self.calls["upper"] += 1
            return f"Summary: panorama u{self.serial}"
        if COMMUNITY_MARKER in text:
            self.calls["community"] += 1
            block = text.split("### Entities", 1)[1].split("###", 1)[0]
            names = re.findall(r"^- ([^(:\n]+)", block, flags=re.M)
            return " ".join(n.strip() for n in names) + f" k{self.serial}"
        raise AssertionError(f"unexpected prompt: {text[:80]!r}")


def summaries(index) -> dict:
    return {n.id: n for n in index.store.nodes_of_kind(NodeKind.HY_COMMUNITY)}


def tree(index) -> tuple[dict[str, list[str]], dict[str, str]]:
    children: dict[str, list[str]] = {}
    parent: dict[str, str] = {}
    for e in index.store.iter_edges(EdgeKind.HY_MEMBER):
        children.setdefault(e.src, []).append(e.dst)
        parent[e.dst] = e.src
    return children, parent


def path_up(parent: dict[str, str], node: str) -> list[str]:
    out = [node]
    while out[-1] in parent:
        out.append(parent[out[-1]])
    return out


def subtree_chunks(
    index, node: str, children: dict[str, list[str]], *, via_entities: bool = True
) -> set[str]:
    """Chunks below ``node``: chunk leaves, and (``via_entities``) its entities' chunks."""
    chunks = set(index.store.chunk_ids())
    out: set[str] = set()
    for m in children.get(node, []):
        if m.startswith("hy:"):
            out |= subtree_chunks(index, m, children, via_entities=via_entities)
        elif m.startswith("ent:"):
            out |= set(index.store.get_nodes([m])[m].sources) if via_entities else set()
        elif m in chunks:
            out.add(m)
    return out


def check_consistent(index) -> None:
    """Every summary: stored members, a vector, and as provenance its chunk leaves and
    chunks its entities were named in (when it was written: a later document naming an
    entity does not change a summary the paper leaves alone)."""
    nodes = summaries(index)
    children, parent = tree(index)
    stored = index.resources.stored_vectors(HY_COLLECTION, list(nodes))
    assert set(stored) == set(nodes)
    assert index.vectors.count(HY_COLLECTION) == len(nodes)
    chunks = set(index.store.chunk_ids())
    entities = {n.id for n in index.store.nodes_of_kind(NodeKind.ENTITY)}
    for node_id, node in nodes.items():
        members = children.get(node_id, [])
        assert members, node_id
        assert node.data["size"] == len(members)
        for m in members:
            assert m in nodes or m in chunks or m in entities, m
            if m in nodes:
                assert nodes[m].data["level"] < node.data["level"]
        sources = set(node.sources)
        assert sources <= subtree_chunks(index, node_id, children), node_id
        assert subtree_chunks(index, node_id, children, via_entities=False) <= sources
    assert all(p in nodes for p in parent.values())


# --------------------------------------------------------------------------- build


@pytest.fixture
def offline_index(tmp_path):
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(512), progress=False) as index:
        index.insert(documents(HARBOUR_DOCS), methods=[f"hygrag:{SMALL}"])
        yield index


def test_offline_build_puts_every_leaf_under_one_summary(offline_index):
    index = offline_index
    nodes = summaries(index)
    children, parent = tree(index)
    chunks = index.store.chunk_ids()
    entities = [n.id for n in index.store.nodes_of_kind(NodeKind.ENTITY)]
    # Layer 1 holds chunks and entities together; every leaf has exactly one summary.
    assert all(parent.get(leaf, "").startswith("hy:1:") for leaf in [*chunks, *entities])
    assert any(
        any(m in chunks for m in children[n]) and any(m.startswith("ent:") for m in children[n])
        for n in nodes
        if nodes[n].data["level"] == 1
    )
    levels = Counter(n.data["level"] for n in nodes.values())
    assert set(levels) == {1, 2} and levels[2] == 1  # a single node: the root
    assert all(2 <= n.data["size"] <= 8 for n in nodes.values())  # S_min..S_max
    assert {n.data["written_by"] for n in nodes.values()} == {"extractive"}
    assert all(n.text for n in nodes.values())
    # hy_shared: chunk pairs with >= 3 common entities (none in this small corpus at 3,
    # so the edges counted at threshold 1 are the pairs sharing any entity).
    shared = list(index.store.iter_edges(EdgeKind.HY_SHARED))
    assert all(e.weight >= 3 for e in shared)
    check_consistent(index)
    # Deterministic: a rebuild gives the same ids and texts.
    before = {i: n.text for i, n in nodes.items()}
    index.rebuild(["hygrag"])
    assert {i: n.text for i, n in summaries(index).items()} == before


def test_layer_one_of_a_tiny_corpus_and_the_config_checks(tmp_path):
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(512), progress=False) as index:
        one = {"harbour": HARBOUR_DOCS["harbour"]}
        # All leaves (1 chunk + its entities) within S_min: one summary holds them all.
        index.insert(documents(one), methods=["hygrag:lsh_min_cluster_size=20"])
        nodes = summaries(index)
        leaves = len(index.store.chunk_ids()) + len(index.store.nodes_of_kind(NodeKind.ENTITY))
        assert len(nodes) == 1 and next(iter(nodes.values())).data["size"] == leaves
    from hygraph.methods.hygrag import HyGRAGConfig

    assert parse_method_spec("hygrag:lsh_order=gray")[1] == {"lsh_order": "gray"}
    bad_options = [
        {"pool": "both"},
        {"lsh_order": "random"},
        {"lsh_min_cluster_size": 9, "lsh_max_cluster_size": 4},
        {"passage_rank": "chunks+nope"},
    ]
    for bad in bad_options:
        with pytest.raises(ConfigError):
            HyGRAGConfig(**bad)


def test_build_resumes_after_a_kill_without_duplicates(tmp_path, monkeypatch):
    path = tmp_path / "i"
    monkeypatch.setattr(hygrag_tree, "LEVEL_BATCH", 1)
    real = hygrag_tree.summarise_leaves
    seen = {"batches": 0}

    def dies_on_third_batch(*args, **kwargs):
        seen["batches"] += 1
        if seen["batches"] == 3:
            raise KeyboardInterrupt  # the process is killed mid-layer
        return real(*args, **kwargs)

    monkeypatch.setattr(hygrag_tree, "summarise_leaves", dies_on_third_batch)
    with GraphIndex(path, embedder=WordEmbedder(512), progress=False) as index:
        with pytest.raises(KeyboardInterrupt):
            index.insert(documents(HARBOUR_DOCS), methods=[f"hygrag:{SMALL}"])
        partial = set(summaries(index))
        assert 0 < len(partial) and index.vectors.count(HY_COLLECTION) == len(partial)
    monkeypatch.setattr(hygrag_tree, "summarise_leaves", real)
    with GraphIndex(path, embedder=WordEmbedder(512), progress=False) as index:
        index.insert([], methods=["hygrag"])
        resumed = summaries(index)
        assert partial <= set(resumed)
        check_consistent(index)
    with GraphIndex(tmp_path / "clean", embedder=WordEmbedder(512), progress=False) as clean:
        clean.insert(documents(HARBOUR_DOCS), methods=[f"hygrag:{SMALL}"])
        assert set(summaries(clean)) == set(resumed)


# --------------------------------------------------------------------------- LLM, insert


@pytest.fixture
def llm_index(tmp_path):
    script = Summariser()
    llm = ScriptedLLM(responder=script)
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(512), llm=llm, progress=False) as index:
        index.insert(documents(HARBOUR_DOCS), methods=[f"hygrag:{SMALL}"])
        yield index, script, llm


def test_llm_build_writes_one_call_per_summary_and_falls_back_per_group(tmp_path):
    script = Summariser()
    # Replies 2 and 4 are malformed: reasoning only, and an empty JSON summary; reply 5
    # is a failed call. Each of those summaries falls back to extractive, alone.
    script.malformed = {2: "<think>still thinking", 4: '{"summary": ""}', 5: ModelError("500")}
    llm = ScriptedLLM(responder=script)
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(512), llm=llm, progress=False) as index:
        index.insert(documents(HARBOUR_DOCS), methods=[f"hygrag:{SMALL}"])
        nodes = summaries(index)
        made = Counter(n.data["written_by"] for n in nodes.values())
        assert made == {"llm": len(nodes) - 3, "extractive": 3}
        assert len(llm.calls) == len(nodes)  # one call per summary node, no more
        upper = [n for n in nodes.values() if n.data["level"] == 2]
        assert all(re.fullmatch(r"panorama u\d+", n.text) for n in upper if
                   n.data["written_by"] == "llm")  # fmt: skip
        usage = index.tracker.report()
        assert any(stage.startswith("build:hygrag:level") for stage in usage["stages"])
        check_consistent(index)


def _roomiest(nodes: dict) -> str:
    """The layer-1 summary with the fewest members (room for a new document's leaves)."""
    level1 = [i for i, n in nodes.items() if n.data["level"] == 1]
    return min(level1, key=lambda i: (nodes[i].data["size"], i))


def _insert_one(index, script, llm, key: str, new_material: str):
    script.new_material = new_material
    before = len(llm.calls)
    index.insert(documents({key: NEW_DOCS[key]}))
    return len(llm.calls) - before, index.layer("hygrag").last_update


def _cosines(index, text: str, level: int) -> dict[str, float]:
    nodes = [n for n in summaries(index).values() if n.data["level"] == level]
    embedder = WordEmbedder(512)
    q = embedder.embed_query(text)
    return {n.id: float(embedder.embed_query(n.text) @ q) for n in nodes}


def test_insert_attaches_at_layer_one_and_resummarises_only_the_path(llm_index):
    index, script, llm = llm_index
    before = summaries(index)
    _, parent = tree(index)
    target = _roomiest(before)
    # The new material's summary is the target's own text: cosine 1 with it, and the
    # hand check below shows no other layer-1 summary passes 0.65.
    t_new = before[target].text
    others = {i: c for i, c in _cosines(index, t_new, 1).items() if i != target}
    assert max(others.values()) < 0.65
    calls, report = _insert_one(index, script, llm, "lighthouse", t_new)
    path = path_up(parent, target)
    assert report["attached"] == {1: 1}
    assert calls == 1 + len(path)  # t_new, then the target and each ancestor once
    after = summaries(index)
    children, _ = tree(index)
    new_chunk = index.store.chunk_ids_of(["lighthouse"])[0]
    assert new_chunk in children[target]
    assert "ent:quillon lighthouse" in children[target]
    changed = {i for i in before if after[i].text != before[i].text}
    assert changed == set(path)  # nothing off the path was written again
    assert set(after) == set(before)  # no new summary node
    check_consistent(index)
    # A rebuild of the same corpus needs one call per summary node.
    assert calls < len(after)


def test_insert_attaches_at_layer_two_through_a_new_layer_one_summary(llm_index):
    index, script, llm = llm_index
    before = summaries(index)
    _, parent = tree(index)
    target = sorted(i for i, n in before.items() if n.data["level"] == 2)[0]
    t_new = before[target].text  # "panorama u<n>": no word in common with layer 1
    assert max(_cosines(index, t_new, 1).values()) < 0.65
    calls, report = _insert_one(index, script, llm, "orchard", t_new)
    assert report["attached"] == {2: 1}
    assert calls == 1 + len(path_up(parent, target))
    after = summaries(index)
    children, parent_after = tree(index)
    [new] = set(after) - set(before)
    assert after[new].data["level"] == 1 and after[new].text == t_new  # holds t_new
    assert parent_after[new] == target
    assert index.store.chunk_ids_of(["orchard"])[0] in children[new]
    check_consistent(index)


def test_insert_with_no_similar_summary_makes_an_orphan_and_costs_one_call(llm_index):
    index, script, llm = llm_index
    before = summaries(index)
    calls, report = _insert_one(index, script, llm, "ferry", "zebra quartz xylophone")
    assert report["attached"] == {0: 1} and calls == 1
    after = summaries(index)
    [new] = set(after) - set(before)
    _, parent = tree(index)
    assert new not in parent and after[new].data["level"] == 1
    assert all(after[i].text == before[i].text for i in before)
    # The orphan is retrievable: retrieval searches every summary.
    result = index.retrieve("zebra quartz xylophone", "hygrag")
    assert [i.id for i in result.items if i.kind == "community"] == [new]
    check_consistent(index)


def test_a_batch_of_inserts_writes_each_shared_ancestor_once(llm_index):
    index, script, llm = llm_index
    before = summaries(index)
    _, parent = tree(index)
    # One document attaches at layer 1 under the root, the other at the root itself.
    targets = [_roomiest(before), next(i for i, n in before.items() if n.data["level"] == 2)]
    routed = dict(zip(["lighthouse", "orchard"], [before[t].text for t in targets], strict=True))

    def new_material(messages, params):
        text = messages[-1]["content"]
        if NEW_MATERIAL_MARKER in text:
            script.calls["new"] += 1
            return next(t for k, t in routed.items() if NEW_DOCS[k][1][:30] in text)
        return script(messages, params)

    llm.responder = new_material
    start = len(llm.calls)
    index.insert(documents({k: NEW_DOCS[k] for k in routed}))
    paths = set(path_up(parent, targets[0])) | set(path_up(parent, targets[1]))
    assert paths == set(path_up(parent, targets[0])) and len(paths) == 2
    assert len(llm.calls) - start == 2 + len(paths)  # a shared ancestor is written once
    assert index.layer("hygrag").last_update["attached"] == {1: 1, 2: 1}
    check_consistent(index)


def test_a_killed_insert_resumes_with_its_recorded_plan(llm_index, monkeypatch):
    from hygraph.layers import hygrag_update
    from hygraph.layers.hygrag_graph import PLAN_KEY

    index, script, llm = llm_index
    before = summaries(index)
    _, parent = tree(index)
    target = _roomiest(before)
    script.new_material = before[target].text
    real = hygrag_update._resummarise

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # after the plan is recorded, before anything is written

    monkeypatch.setattr(hygrag_update, "_resummarise", killed)
    start = len(llm.calls)
    with pytest.raises(KeyboardInterrupt):
        index.insert(documents({"lighthouse": NEW_DOCS["lighthouse"]}))
    assert index.store.get_meta(PLAN_KEY) and summaries(index).keys() == before.keys()
    monkeypatch.setattr(hygrag_update, "_resummarise", real)
    script.new_material = "a different reply the resumed insert must not ask for"
    index.insert([])  # the next build finishes the layer
    assert index.layer("hygrag").last_update["attached"] == {1: 1}
    assert len(llm.calls) - start == 1 + len(path_up(parent, target))  # as if never killed
    assert not index.store.get_meta(PLAN_KEY)
    children, _ = tree(index)
    assert index.store.chunk_ids_of(["lighthouse"])[0] in children[target]
    check_consistent(index)


def test_insert_cost_against_a_rebuild(tmp_path, llm_index):
    index, script, llm = llm_index
    calls, _ = _insert_one(index, script, llm, "lighthouse", "zebra quartz")
    script_full = Summariser()
    fresh = ScriptedLLM(responder=script_full)
    with GraphIndex(tmp_path / "full", embedder=WordEmbedder(512), llm=fresh,
                    progress=False) as full:  # fmt: skip
        docs = {**HARBOUR_DOCS, "lighthouse": NEW_DOCS["lighthouse"]}
        full.insert(documents(docs), methods=[f"hygrag:{SMALL}"])
        rebuild_calls = len(fresh.calls)
        assert rebuild_calls == len(summaries(full))
    assert calls == 1 < rebuild_calls


def test_an_oversized_summary_is_split_by_lsh(tmp_path):
    script = Summariser()
    llm = ScriptedLLM(responder=script)
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(512), llm=llm, progress=False) as index:
        index.insert(documents(HARBOUR_DOCS), methods=[f"hygrag:{SMALL}"])
        before = summaries(index)
        target = max((i for i, n in before.items() if n.data["level"] == 1),
                     key=lambda i: before[i].data["size"])  # fmt: skip
        script.new_material = before[target].text  # 8 members + 5 new leaves > S_max
        index.insert(documents({"orchard": NEW_DOCS["orchard"]}))
        report = index.layer("hygrag").last_update
        assert report["attached"] == {1: 1} and report["splits"] >= 1
        nodes = summaries(index)
        assert all(n.data["size"] <= 8 for n in nodes.values())
        check_consistent(index)


# --------------------------------------------------------------------------- delete


def test_delete_repairs_the_path_and_drops_emptied_summaries(llm_index):
    index, script, llm = llm_index
    before = summaries(index)
    target = _roomiest(before)
    _insert_one(index, script, llm, "lighthouse", before[target].text)
    _insert_one(index, script, llm, "ferry", "zebra quartz xylophone")  # an orphan
    nodes = summaries(index)
    [orphan] = set(nodes) - set(before)
    children, parent = tree(index)
    gone_chunk = index.store.chunk_ids_of(["lighthouse"])[0]
    expected = {i for i, n in nodes.items() if gone_chunk in n.sources}
    assert set(path_up(parent, target)) <= expected
    calls = len(llm.calls)
    index.delete("lighthouse")
    after = summaries(index)
    children, _ = tree(index)
    assert gone_chunk not in children[target]
    assert "ent:quillon lighthouse" not in children[target]
    assert index.layer("hygrag").last_update["resummarised"] == len(expected)
    assert {i for i in after if after[i].text != nodes[i].text} == expected
    # The path holds its first members again, so its prompts are the first build's: the
    # LLM cache answers them (no call), and the texts are the first build's again.
    assert len(llm.calls) - calls <= len(expected)
    assert {i: after[i].text for i in expected} == {i: before[i].text for i in expected}
    check_consistent(index)
    # Deleting the orphan's document empties it: the summary and its vector go.
    index.delete("ferry")
    assert orphan not in summaries(index)
    assert index.resources.stored_vectors(HY_COLLECTION, [orphan]) == {}
    check_consistent(index)


def test_offline_delete_and_reinsert(offline_index):
    index = offline_index
    index.delete("festival")
    check_consistent(index)
    chunks = set(index.store.chunk_ids())
    _, parent = tree(index)
    assert all(c in parent for c in chunks)  # the remaining leaves keep their summaries
    index.insert(documents({"festival": HARBOUR_DOCS["festival"]}))
    check_consistent(index)
    result = index.retrieve("When is the Lantern Tide Festival held?", "hygrag")
    assert result.chunks[0] == index.store.chunk_ids_of(["festival"])[0]


# --------------------------------------------------------------------------- retrieval


def test_retrieval_gives_the_four_sections_and_ranks_documents_first(offline_index):
    index = offline_index
    result = index.retrieve("Who founded Aldercott Shipyard in 1819?", "hygrag")
    titles = [line for line in result.context.splitlines() if line.startswith("## ")]
    order = ["## Community summaries", "## Entities", "## Key relationships", "## Documents"]
    assert [t for t in order if t in titles] == titles and "## Documents" in titles
    kinds = Counter(i.kind for i in result.items)
    assert kinds["community"] <= 1 and kinds["community"] + kinds["chunk"] <= 5
    assert kinds["entity"] <= 5 and kinds["relationship"] <= 5
    docs = [i.id for i in result.items if i.kind == "chunk"]
    assert result.chunks[: len(docs)] == docs  # the passage ranking starts with them
    assert result.chunks[0] == index.store.chunk_ids_of(["harbour"])[0]
    rel = [i for i in result.items if i.kind == "relationship"]
    assert rel and all("--[" in i.text for i in rel)
    separate = index.retrieve("Aldercott Shipyard", "hygrag:pool=separate,community_cap=5")
    assert sum(i.kind == "chunk" for i in separate.items) == min(5, len(index.store.chunk_ids()))
    ablated = index.retrieve("Aldercott Shipyard", "hygrag:use_entities=false")
    assert {i.kind for i in ablated.items} <= {"community", "chunk"}
    no_chunks = index.retrieve("Aldercott Shipyard", "hygrag:use_chunks=false")
    assert not any(i.kind == "chunk" for i in no_chunks.items)


def test_answer_uses_hygrag_prompt(tmp_path):
    llm = ScriptedLLM(responder=lambda m, p: (
        "Josiah Aldercott." if "Insufficient information" in m[-1]["content"] else
        Summariser()(m, p)))  # fmt: skip
    with GraphIndex(tmp_path / "i", embedder=WordEmbedder(512), llm=llm, progress=False) as index:
        index.insert(documents(HARBOUR_DOCS), methods=["hygrag"])
        result = index.query("Who founded Aldercott Shipyard?", "hygrag", answer=True)
        assert result.answer == "Josiah Aldercott."
        assert "Key relationships" in llm.calls[-1][0][0]["content"]


# --------------------------------------------------------------------------- operators


@pytest.fixture
def hand_world(tmp_path):
    """A hand-made hybrid graph: three chunks, five entities, three relations, a layer-1
    summary over the mural's chunks and entities, and a layer-2 summary above it."""
    from hygraph.graph.store import Edge, GraphStore, Node
    from hygraph.ingest import Chunker
    from hygraph.manifest import Manifest
    from hygraph.resources import Resources
    from hygraph.usage import UsageTracker
    from hygraph.vectors import open_vector_index

    store = GraphStore(tmp_path / "graph.sqlite")
    texts = {
        "a": "Zorvan Keel painted the Glass Harbor mural in Marrowby.",
        "b": "Ilsa Quorn commissioned the Glass Harbor mural.",
        "c": "The Marrowby lighthouse is on Tern Point.",
    }
    chunk = {}
    for doc_id, text in texts.items():
        doc = Document(doc_id, text)
        [piece] = Chunker(1200, 100)(doc)
        store.add_document(doc, [piece])
        chunk[doc_id] = piece.id
    names = {"zorvan keel": "a", "glass harbor mural": "ab", "ilsa quorn": "b",
             "marrowby": "ac", "tern point": "c"}  # fmt: skip
    store.upsert_nodes(
        Node(f"ent:{n}", NodeKind.ENTITY, n.title(), "", {"type": "entity"},
             [chunk[d] for d in docs])
        for n, docs in names.items()
    )  # fmt: skip
    relations = [("zorvan keel", "painted", "glass harbor mural", "a"),
                 ("ilsa quorn", "commissioned", "glass harbor mural", "b"),
                 ("glass harbor mural", "is in", "marrowby", "a")]  # fmt: skip
    store.upsert_edges(
        Edge(f"ent:{h}", f"ent:{t}", EdgeKind.RELATION, 1.0,
             {"label": r, "entries": {chunk[d]: [[r, f"{h} {r} {t}", 1.0]]}}, [chunk[d]])
        for h, r, t, d in relations
    )  # fmt: skip
    l1, l2 = "hy:1:mural", "hy:2:town"
    members = [chunk["a"], chunk["b"], "ent:zorvan keel", "ent:ilsa quorn",
               "ent:glass harbor mural"]  # fmt: skip
    summary = "Glass Harbor mural painted by Zorvan Keel and commissioned by Ilsa Quorn"
    store.upsert_nodes([
        hygrag_tree.summary_node(l1, 1, summary, "llm", 5, [chunk["a"], chunk["b"]]),
        hygrag_tree.summary_node(l2, 2, "Marrowby town overview", "llm", 1,
                                 [chunk["a"], chunk["b"]]),
    ])  # fmt: skip
    store.upsert_edges(hygrag_tree.member_edges(l1, members) + hygrag_tree.member_edges(l2, [l1]))
    manifest = Manifest(embedder="words", dim=None, chunk_size=1200, chunk_overlap=100,
                        tokenizer="t", vectors={"backend": "edge", "path": "qdrant"},
                        extractor="offline")  # fmt: skip
    res = Resources(
        path=tmp_path,
        store=store,
        vectors=open_vector_index(tmp_path / "qdrant"),
        manifest=manifest,
        embedder=WordEmbedder(512),
        llm=None,
        tracker=UsageTracker(),
        progress=False,
        cache_dir=tmp_path / "cache",
    )
    ids = list(chunk.values())
    res.upsert_vectors("chunks", ids, [texts[d] for d in chunk], [{"kind": "chunk"}] * 3)
    res.upsert_vectors("entities", [f"ent:{n}" for n in names], list(names),
                       [{"kind": "entity"}] * 5)  # fmt: skip
    res.upsert_vectors("relations", [f"ent:{h}|ent:{t}" for h, _, t, _ in relations],
                       [f"{h} {r} {t}" for h, r, t, _ in relations],
                       [{"kind": "relation"}] * 3)  # fmt: skip
    res.upsert_vectors(
        HY_COLLECTION,
        [l1, l2],
        [summary, "Marrowby town overview"],
        [hygrag_tree.summary_payload(1), hygrag_tree.summary_payload(2)],
    )
    yield res, chunk
    store.close()


QUERY = "Who commissioned the Glass Harbor mural?"


def _run_ops(res, k: int, **context_params):
    from hygraph.operators.registry import get_operator
    from hygraph.operators.state import State

    state = State(question=QUERY, top_k=k)
    get_operator("hygrag.context").fn(res, state, k=k, **context_params)
    get_operator("hygrag.relations").fn(res, state, k=k)
    get_operator("hygrag.evidence").fn(res, state, k=k)
    return state


@covers("hygrag.context", "hygrag.relations", "hygrag.evidence")
def test_operators_pool_relations_and_evidence_on_a_hand_made_graph(hand_world):
    res, chunk = hand_world
    embed = WordEmbedder(512).embed_query
    q = embed(QUERY)
    cos = {d: float(embed(t) @ q) for d, t in {
        "b": "Ilsa Quorn commissioned the Glass Harbor mural.",
        "a": "Zorvan Keel painted the Glass Harbor mural in Marrowby.",
        "summary": "Glass Harbor mural painted by Zorvan Keel and commissioned by Ilsa Quorn",
    }.items()}  # fmt: skip
    assert cos["b"] > cos["a"] > cos["summary"] > 0.3  # the order the pool below follows
    # k = 2: the two chunks outrank the summary, so the pool holds no summary.
    two = _run_ops(res, 2)
    assert [c for c, _ in two.chunks] == [chunk["b"], chunk["a"]] and two.communities == []
    # k = 3: the summary takes the third slot (the cap, max(1, 3 // 5), is one).
    three = _run_ops(res, 3)
    assert [c.id for c in three.communities] == ["hy:1:mural"]
    assert [c for c, _ in three.chunks] == [chunk["b"], chunk["a"]]
    # Relations: the one that says who commissioned the mural comes first.
    assert three.relationships[0].id == "ent:ilsa quorn|ent:glass harbor mural"
    lists = three.evidence
    [community] = lists["communities"]
    assert community.text.startswith("Layer 1 community (5 members) [score ")
    assert community.source_ids == (chunk["b"], chunk["a"])  # by cosine to the question
    assert lists["relations"][0].text.startswith(
        "Ilsa Quorn --[commissioned]--> Glass Harbor Mural [score "
    )
    assert len(lists["entities"]) == 3 and lists["entities"][0].id == "ent:glass harbor mural"
    assert [e.id for e in lists["chunks"]] == [chunk["b"], chunk["a"]]
    # Separate pools (eqs. 14-15): k of each kind.
    separate = _run_ops(res, 3, pool="separate")
    assert len(separate.communities) == 2 and len(separate.chunks) == 3


def test_membership_expansion_children_or_descendants(hand_world):
    from hygraph.operators.hygrag import _members
    from hygraph.operators.state import Scored, State

    res, _ = hand_world
    state = State(question=QUERY, top_k=1, communities=[Scored("hy:2:town", 1.0)])
    assert _members(res, state, "children") == []  # a layer-2 summary has no entity child
    assert sorted(_members(res, state, "descendants")) == [
        "ent:glass harbor mural", "ent:ilsa quorn", "ent:zorvan keel"
    ]  # fmt: skip
    with pytest.raises(ConfigError):
        _run_ops(res, 1, pool="mixed")


# --------------------------------------------------------------------------- frameworks

FRAMEWORK_DOCS = ["ilse-marrow.md", "dunmere.md"]
QUESTION = "Who designed the Caddow Bridge?"


def test_through_graph_index_llama_index_and_langchain(tmp_path, minilm, sample_path):
    pytest.importorskip("llama_index.core")
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document as LCDocument
    from llama_index.core import Document as LIDocument

    from hygraph.passages import retrieve_passages
    from langchain_hygraph import HyGraphRetriever as LCRetriever
    from llama_index_hygraph import HyGraphIndex

    texts = {n: (sample_path / n).read_text() for n in FRAMEWORK_DOCS}
    li_docs = [LIDocument(text=t, id_=n) for n, t in texts.items()]
    with HyGraphIndex.from_documents(li_docs, method="hygrag", persist_dir=tmp_path / "li") as li:
        nodes = li.as_retriever(similarity_top_k=3).retrieve(QUESTION)
        core = retrieve_passages(li.graph_index, QUESTION, "hygrag", 3).passages
        assert [n.node.node_id for n in nodes] == [p.id for p in core]
        assert nodes[0].node.metadata["method"] == "hygrag"
        assert "Ilse Marrow" in nodes[0].node.get_content()
    lc_docs = [LCDocument(page_content=t, metadata={"source": n}) for n, t in texts.items()]
    lc = LCRetriever.from_documents(lc_docs, method="hygrag", persist_dir=tmp_path / "lc")
    try:
        found = lc.invoke(QUESTION)
        assert found and all(d.metadata["method"] == "hygrag" for d in found)
        assert "Ilse Marrow" in found[0].page_content
    finally:
        lc.close()
    with GraphIndex(tmp_path / "li", progress=False) as index:
        assert "hygrag" in index.methods
        result = index.retrieve(QUESTION, "hygrag")
        assert result.chunks and "Caddow Bridge" in result.context
