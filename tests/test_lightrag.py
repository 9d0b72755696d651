"""LightRAG local / global / hybrid through ``GraphIndex``, the CLI-facing specs, and both
framework retrievers (no adapter code), offline and with scripted LLM doubles.

The corpus is the four Harrowby documents of :mod:`corpora`, extracted by the offline
rules and embedded with the bundled MiniLM. LLMs are :class:`~doubles.ScriptedLLM`,
scripted stand-ins that return realistic replies (well-formed and malformed ones).
"""

from __future__ import annotations

import json
import re

import pytest
from corpora import HARBOUR_DOCS
from doubles import ScriptedLLM

from hygraph import GraphIndex
from hygraph.errors import ConfigError
from hygraph.graph.kinds import EdgeKind
from hygraph.ingest import Document
from hygraph.layers.rich_kg import RICH_RELATION_COLLECTION
from hygraph.methods.base import parse_method_spec

METHODS = ["lightrag-local", "lightrag-global", "lightrag-hybrid"]
QUESTION = "Who commanded Gannet's Reach?"


def documents(ids: list[str] | None = None) -> list[Document]:
    return [Document(i, HARBOUR_DOCS[i][1], title=HARBOUR_DOCS[i][0])
            for i in ids or list(HARBOUR_DOCS)]  # fmt: skip


@pytest.fixture(scope="module")
def built(tmp_path_factory, minilm):
    """An index of the corpus with the three methods (built once, read-only)."""
    path = tmp_path_factory.mktemp("lightrag") / "index"
    with GraphIndex(path, embedder=minilm, progress=False) as index:
        index.insert(documents(), methods=METHODS)
    return path


def sections(context: str) -> list[str]:
    return [line[3:] for line in context.splitlines() if line.startswith("## ")]


def relation_edges(index: GraphIndex) -> dict:
    return {(e.src, e.dst): e for e in index.store.iter_edges(EdgeKind.RELATION)}


# --------------------------------------------------------------------------- retrieval


@pytest.mark.parametrize("method", METHODS)
def test_each_method_gives_lightrags_three_sections(built, minilm, method):
    with GraphIndex(built, embedder=minilm, progress=False) as index:
        result = index.query(QUESTION, method, budget=4000)
    assert sections(result.context) == ["Entities", "Relationships", "Sources"]
    kinds = {item.kind for item in result.items}
    assert kinds == {"entity", "relationship", "chunk"}
    relationships = [i for i in result.items if i.kind == "relationship"]
    assert all("(keywords: " in r.text for r in relationships)  # the rich graph's keywords
    assert result.chunks and result.passages
    steps = [step["name"] for step in result.trace]
    assert steps[0] == "question.keywords" and steps[-1] == "merge.context"
    assert all(step["llm_calls"] == 0 for step in result.trace)  # offline keywords


def test_global_and_hybrid_reach_the_commander_through_relations(built, minilm):
    with GraphIndex(built, embedder=minilm, progress=False) as index:
        state = index.method("lightrag-global:relation_top_k=2").run(index.resources, QUESTION)
        # Offline keywords: the names are low-level; high-level are the question's content
        # words with its names, in question order (a global search can meet the names).
        assert state.subgraph["keywords"] == {
            "low": ["Gannet", "Reach"], "high": ["commanded", "Gannet", "Reach"],
            "source": "offline"}  # fmt: skip
        assert "ent:renna osk" in {m for r in state.relationships for m in r.data["members"]}
        found = index.query(QUESTION, "lightrag-global:relation_top_k=2")
        assert found.passages[0] == "expedition"
        # The hybrid puts the local passages first (the framework's order), the global
        # ones first on request.
        both = index.query(QUESTION, "lightrag-hybrid:relation_top_k=2,entity_top_k=2")
        alone = index.query(QUESTION, "lightrag-local:entity_top_k=2")
        assert both.passages[0] == alone.passages[0]
        high = index.query(
            QUESTION, "lightrag-hybrid:relation_top_k=2,entity_top_k=2,hybrid_first=high"
        )
        assert high.passages[0] == "expedition"
        # The local retrieval starts from the named entities instead.
        local = index.method("lightrag-local:entity_top_k=2").run(index.resources, QUESTION)
        assert [n.id for n in local.nodes] == ["ent:gannet", "ent:reach"]


def test_hybrid_is_the_union_of_local_and_global(built, minilm):
    with GraphIndex(built, embedder=minilm, progress=False) as index:
        opts = "entity_top_k=3,relation_top_k=3"
        hybrid = index.query(QUESTION, f"lightrag-hybrid:{opts}", budget=8000)
        parts = [index.query(QUESTION, f"lightrag-{m}:{opts}", budget=8000)
                 for m in ("local", "global")]  # fmt: skip
        interleaved = index.query(QUESTION, f"lightrag-hybrid:{opts},hybrid_order=interleave",
                                  budget=8000)  # fmt: skip
        high_first = index.query(QUESTION, f"lightrag-hybrid:{opts},hybrid_first=high",
                                 budget=8000)  # fmt: skip

    def keys(result, kind):
        return [i.id for i in result.items if i.kind == kind]

    def turns(one, two):  # one of each in turn, the rest of the longer list after
        paired = [x for pair in zip(one, two, strict=False) for x in pair]
        return paired + one[len(two) :] + two[len(one) :]

    top_k = 4  # LightRAGConfig.top_k: no query above gives one
    for kind in ("entity", "relationship", "chunk"):
        local, glob = keys(parts[0], kind), keys(parts[1], kind)
        # The local context first, as the framework's code merges (BasicQuery.py:28-33).
        union = list(dict.fromkeys([*local, *glob]))
        mixed = list(dict.fromkeys(turns(local, glob)))
        high = list(dict.fromkeys([*glob, *local]))
        if kind == "chunk":  # the merged passages are cut to the query's top_k
            union, mixed, high = union[:top_k], mixed[:top_k], high[:top_k]
        assert keys(hybrid, kind) == union
        assert keys(interleaved, kind) == mixed
        assert keys(high_first, kind) == high


@pytest.mark.parametrize("method", METHODS)
def test_top_k_changes_only_how_many_passages_come_back(built, minilm, method):
    def sources(result):
        return [i.id for i in result.items if i.kind == "chunk"]

    def steps(result):  # every step but the final cut, with its parameters
        return [(s["name"], s["params"]) for s in result.trace
                if s["name"] not in ("chunk.evidence", "chunk.from_evidence")]  # fmt: skip

    with GraphIndex(built, embedder=minilm, progress=False) as index:
        few = index.query(QUESTION, method, top_k=1, budget=8000)
        many = index.query(QUESTION, method, top_k=3, budget=8000)
    assert len(sources(few)) == 1 and 1 <= len(sources(many)) <= 3
    assert sources(many)[:1] == sources(few) and many.passages[0] == few.passages[0]
    # Entities, relations and the chunk ranking itself do not depend on top_k.
    assert steps(few) == steps(many)
    for kind in ("entity", "relationship"):
        assert [i.id for i in few.items if i.kind == kind] == [
            i.id for i in many.items if i.kind == kind]  # fmt: skip


def test_options_through_method_specs(built, minilm):
    with GraphIndex(built, embedder=minilm, progress=False) as index:
        code = index.query(QUESTION, "lightrag-local", top_k=2)
        paper = index.query(QUESTION, "lightrag-local:occurrence=paper", top_k=2)
        similar = index.query(QUESTION, "lightrag-local:occurrence=similarity", top_k=2)
        assert len([i for i in paper.items if i.kind == "chunk"]) <= 2
        assert code.chunks and paper.chunks and similar.chunks
        # The similarity pick ranks the entities' chunks by cosine to the question.
        scores = [i.score for i in similar.items if i.kind == "chunk"]
        assert scores == sorted(scores, reverse=True) and 0 < scores[0] <= 1
        for option in ("relation_vdb_order=retrieval", "relation_chunks=similarity"):
            assert index.query(QUESTION, f"lightrag-global:{option}").chunks, option
        ordered = index.query(QUESTION, "lightrag-local:relation_order=retrieval")
        assert ordered.items
        only = index.query(QUESTION, "lightrag-local:sections=chunks")
        assert sections(only.context) == ["Sources"]
    assert parse_method_spec("lightrag-hybrid:keywords=offline,top_k=3")[1] == {
        "keywords": "offline", "top_k": 3}  # fmt: skip
    from hygraph.methods.lightrag import LightRAGConfig

    with pytest.raises(ConfigError, match="occurrence must be one of"):
        LightRAGConfig(occurrence="sometimes")
    with pytest.raises(ConfigError, match="sections takes"):
        LightRAGConfig(sections="entities+summary")
    with pytest.raises(ConfigError, match="keywords must be one of"):
        LightRAGConfig(keywords="psychic")


# --------------------------------------------------------------------------- query keywords


@pytest.mark.parametrize(
    ("reply", "source"),
    [
        (json.dumps({"high_level_keywords": ["ship command", "captaincy"],
                     "low_level_keywords": ["Gannet's Reach"]}), "llm"),
        ("The keywords are Gannet's Reach and command.", "offline"),
    ],
)  # fmt: skip
def test_query_keywords_from_a_scripted_llm(built, minilm, reply, source):
    llm = ScriptedLLM(routes={QUESTION: reply}, name=f"scripted-{source}")  # own cache key
    with GraphIndex(built, embedder=minilm, llm=llm, progress=False,
                    llm_in_retrieval=True) as index:  # fmt: skip
        state = index.method("lightrag-hybrid").run(index.resources, QUESTION)
        result = index.query(QUESTION, "lightrag-hybrid")
    keywords = state.subgraph["keywords"]
    assert keywords["source"] == source
    if source == "llm":
        assert keywords == {"low": ["Gannet's Reach"], "high": ["ship command", "captaincy"],
                            "source": "llm"}  # fmt: skip
        assert state.keywords == ["Gannet's Reach"]
    else:
        assert keywords["low"] == ["Gannet", "Reach"]  # the rules stand in
    assert result.trace[0]["name"] == "question.keywords"
    assert result.passages  # the query never fails for a bad reply


def test_keywords_llm_mode_needs_an_llm(built, minilm):
    with GraphIndex(built, embedder=minilm, progress=False) as index:
        with pytest.raises(ConfigError, match="needs an LLM"):
            index.query(QUESTION, "lightrag-local:keywords=llm")


# --------------------------------------------------------------------------- building


def keyword_responder(messages, params):
    """Scripted relation-keyword replies: ``kw-<target>`` per numbered line; one batch with a
    malformed reply when a line names the festival (that batch falls back to the rules)."""
    text = messages[-1]["content"]
    if "Relationships:" not in text:
        raise AssertionError(f"unexpected prompt: {text[:80]!r}")
    lines = re.findall(r"^(\d+)\. (.+?) \| (.+?) \| (.+?)(?: -- |$)", text, re.MULTILINE)
    if any("Festival" in line[1] for line in lines):
        return "Sorry, no keywords today."
    return json.dumps({"relations": [{"id": int(n), "keywords": [f"kw-{target.lower()}"]}
                                     for n, _, _, target in lines]})  # fmt: skip


def test_relation_keywords_from_the_build_llm(tmp_path, minilm):
    llm = ScriptedLLM(responder=keyword_responder)
    with GraphIndex(tmp_path / "i", embedder=minilm, llm=llm, progress=False) as index:
        index.insert(documents(["harbour"]), methods=["lightrag-global"])
        first = relation_edges(index)
        assert llm.calls and first
        for (_, dst), edge in first.items():
            target = index.store.get_nodes([dst])[dst].name.lower()
            assert edge.data["keywords"] == [f"kw-{target}"]
            assert edge.data["keywords_by"] == "llm"
        # The festival's batch gets a malformed reply: its relations take the rules'.
        index.insert(documents(["festival"]))
        after = relation_edges(index)
    new = {k: e for k, e in after.items() if k not in first}
    assert new and {e.data["keywords_by"] for e in new.values()} == {"offline"}
    assert all(not e.data["keywords"][0].startswith("kw-") for e in new.values())
    assert all(after[k].data["keywords_by"] == "llm" for k in first)


def test_insert_and_delete_keep_keywords_and_vectors_current(tmp_path, minilm):
    with GraphIndex(tmp_path / "i", embedder=minilm, progress=False) as index:
        index.insert(documents(["harbour", "expedition"]), methods=["lightrag-hybrid"])
        first = relation_edges(index)
        assert first and all(e.data.get("keywords_of") for e in first.values())
        count = index.resources.vectors.count(RICH_RELATION_COLLECTION)
        assert count == len(first)
        index.insert(documents(["mayor", "festival"]))
        grown = relation_edges(index)
        assert len(grown) > len(first)
        assert all(e.data.get("keywords_of") for e in grown.values())  # none left stale
        assert index.resources.vectors.count(RICH_RELATION_COLLECTION) == len(grown)
        index.delete("festival")
        left = relation_edges(index)
        assert all(e.data.get("keywords_of") for e in left.values())
        assert index.resources.vectors.count(RICH_RELATION_COLLECTION) == len(left)
        texts = {i.text for i in index.query("When is the festival held?", "lightrag-hybrid",
                                              budget=8000).items}  # fmt: skip
        assert not any("Lantern Tide" in t for t in texts)
        kept = {k: (e.data["keywords"], e.weight) for k, e in left.items()}
    # A clean build of the same documents has the same relations and keywords.
    with GraphIndex(tmp_path / "clean", embedder=minilm, progress=False) as clean:
        clean.insert(documents(["harbour", "expedition", "mayor"]), methods=["lightrag-hybrid"])
        assert {k: (e.data["keywords"], e.weight) for k, e in relation_edges(clean).items()} == kept


def test_rebuild_resumes_a_killed_keyword_layer(tmp_path, minilm, monkeypatch):
    import hygraph.layers.rich_kg as rich_kg

    monkeypatch.setattr(rich_kg, "BUILD_BATCH", 1)  # a progress mark per chunk
    calls = {"n": 0}
    real = rich_kg.RelationKeywords.annotate

    def dying(self, res, keys):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(self, res, keys)

    monkeypatch.setattr(rich_kg.RelationKeywords, "annotate", dying)
    with GraphIndex(tmp_path / "i", embedder=minilm, progress=False) as index:
        with pytest.raises(KeyboardInterrupt):
            index.insert(documents(), methods=["lightrag-global"])
    monkeypatch.setattr(rich_kg.RelationKeywords, "annotate", real)
    with GraphIndex(tmp_path / "i", embedder=minilm, progress=False) as index:
        index.insert([], methods=["lightrag-global"])
        edges = relation_edges(index)
        assert all(e.data.get("keywords_of") for e in edges.values())
        assert index.resources.vectors.count(RICH_RELATION_COLLECTION) == len(edges)


# --------------------------------------------------------------------------- frameworks
# (Both frameworks' suites also run every registered method, these three included.)


def test_llama_index_retriever_with_no_adapter_code(tmp_path, minilm, method="lightrag-hybrid"):
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document as LIDocument

    from llama_index_hygraph import HyGraphIndex

    docs = [LIDocument(text=text, metadata={"title": title}, id_=i)
            for i, (title, text) in HARBOUR_DOCS.items()]  # fmt: skip
    with HyGraphIndex.from_documents(docs, method=method, persist_dir=tmp_path / "i") as index:
        nodes = index.as_retriever(similarity_top_k=2).retrieve(QUESTION)
    assert len(nodes) == 2
    assert all(n.node.metadata["method"] == method for n in nodes)


def test_langchain_retriever_with_no_adapter_code(tmp_path, minilm, method="lightrag-hybrid"):
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document as LCDocument

    from langchain_hygraph import HyGraphRetriever

    docs = [LCDocument(page_content=text, metadata={"source": i, "title": title})
            for i, (title, text) in HARBOUR_DOCS.items()]  # fmt: skip
    retriever = HyGraphRetriever.from_documents(docs, method=method, persist_dir=tmp_path / "i",
                                                top_k=2)  # fmt: skip
    try:
        found = retriever.invoke(QUESTION)
    finally:
        retriever.close()
    assert len(found) == 2 and all(d.metadata["method"] == method for d in found)
