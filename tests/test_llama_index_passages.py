"""Passage results through LlamaIndex's public API: exactly k, in order, evidence attached.

One index of the twelve bundled sample documents (hypergraph and noderag, real bundled
MiniLM, embedded Qdrant) serves the module. Each document carries metadata the filter
tests select on. LLMs are scripted stand-ins, labelled as such.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("llama_index.core")

from li_support import ScriptedLLM  # noqa: E402
from llama_index.core import Document, get_response_synthesizer  # noqa: E402
from llama_index.core.postprocessor import (  # noqa: E402
    LongContextReorder,
    SimilarityPostprocessor,
)
from llama_index.core.query_engine import CitationQueryEngine  # noqa: E402
from llama_index.core.schema import MetadataMode, TextNode  # noqa: E402
from llama_index.core.vector_stores import (  # noqa: E402
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from hygraph.demo import sample_documents, sample_questions  # noqa: E402
from hygraph.passages import retrieve_passages  # noqa: E402
from llama_index_hygraph import HyGraphIndex  # noqa: E402
from llama_index_hygraph.filters import to_core_filters  # noqa: E402

QUESTION = (
    "In what year was the institution where the designer of the Caddow Bridge studied set up?"
)
ANSWER = "It was set up in 1874 [1]."


def _metadata(position: int, name: str) -> dict[str, Any]:
    """Made-up document metadata to filter on: a year, a shelf (a/b) and the file name."""
    return {"file_name": name, "year": 1900 + 10 * position, "shelf": "ab"[position % 2]}


DOCS = {p.name: _metadata(i, p.name) for i, p in enumerate(sample_documents())}


@pytest.fixture(scope="module")
def index(tmp_path_factory, minilm):
    """The sample corpus with hypergraph (default) and noderag, shared by the module."""
    docs = [
        Document(text=p.read_text(), id_=p.name, metadata=DOCS[p.name]) for p in sample_documents()
    ]
    path = tmp_path_factory.mktemp("passages") / "index"
    built = HyGraphIndex.from_documents(
        docs, method="hypergraph", methods=["noderag"], persist_dir=path
    )
    yield built
    built.close()


def _ids(nodes) -> list[str]:
    return [n.node.node_id for n in nodes]


@pytest.mark.parametrize("k", [1, 5, 8])
def test_top_k_is_exactly_k_passages_in_the_methods_order(index, k):
    retriever = index.as_retriever(similarity_top_k=k)
    nodes = retriever.retrieve(QUESTION)
    assert len(nodes) == k
    assert all(type(n.node) is TextNode and n.node.metadata["kind"] == "chunk" for n in nodes)
    core = retrieve_passages(index.graph_index, QUESTION, "hypergraph", k)
    assert _ids(nodes) == [p.id for p in core.passages]  # the method's own passage order
    scores = [n.score for n in nodes]
    assert scores == sorted(scores, reverse=True) and all(0 <= s <= 1 for s in scores)
    assert all(n.score <= n.node.metadata["cosine"] + 1e-9 for n in nodes)
    assert _ids(index.as_retriever(top_k=k).retrieve(QUESTION)) == _ids(nodes)
    # The node ids are the chunk ids that ref_doc_info and the docstore use.
    for n in nodes:
        assert n.node.node_id in index.ref_doc_info[n.node.ref_doc_id].node_ids
        assert index.docstore.get_node(n.node.node_id).get_content() == n.node.get_content()


def test_graph_evidence_is_attached_and_shown_to_the_llm_only(index):
    retriever = index.as_retriever(similarity_top_k=5)
    nodes = retriever.retrieve(QUESTION)
    top = nodes[0].node
    # Both documents that name the bridge's designer rank first with some chunking.
    assert top.ref_doc_id in ("ilse-marrow.md", "great-dunmere-flood.md")
    evidence = top.metadata["graph_evidence"]
    assert evidence and all(": " in e for e in evidence)  # "kind: text"
    assert any(e.startswith("entity: Ilse Marrow") for e in evidence)
    assert len(top.metadata["graph_evidence_ids"]) == len(evidence)
    llm_view = top.get_content(metadata_mode=MetadataMode.LLM)
    assert "graph_evidence: " in llm_view and "entity: Ilse Marrow" in llm_view
    assert f"file_name: {top.ref_doc_id}" in llm_view  # the document's metadata, as stock
    assert "graph_evidence_ids" not in llm_view and "cosine" not in llm_view
    assert top.get_content(metadata_mode=MetadataMode.EMBED) == top.text  # bare text
    # The method's full context (every section) stays on the retriever.
    context = retriever.last_context
    assert context == retriever.last_result.context and "Entities" in context
    assert context == retrieve_passages(index.graph_index, QUESTION, "hypergraph", 5).result.context
    # The evidence reaches a stock synthesizer's prompt next to the passage.
    llm = ScriptedLLM(answer=ANSWER)
    response = get_response_synthesizer(llm=llm).synthesize(QUESTION, nodes=nodes)
    assert str(response) == ANSWER and "entity: Ilse Marrow" in llm.prompts[-1]


def test_evidence_items_are_the_documented_option(index):
    nodes = index.as_retriever(items="evidence").retrieve(QUESTION)
    assert {"chunk", "entity", "fact"} <= {n.node.metadata["kind"] for n in nodes}
    with pytest.raises(ValueError, match="items must be one of passages, evidence"):
        index.as_retriever(items="facts")


def test_stock_postprocessors_and_citations_work_unchanged(index):
    nodes = index.as_retriever(similarity_top_k=5).retrieve(QUESTION)
    kept = SimilarityPostprocessor(similarity_cutoff=0.3).postprocess_nodes(list(nodes))
    assert kept and _ids(kept) == [i for i in _ids(nodes) if i in set(_ids(kept))]
    answering = ("ilse-marrow.md", "great-dunmere-flood.md")  # both name the designer
    assert all(n.score >= 0.3 for n in kept) and kept[0].node.ref_doc_id in answering
    reordered = LongContextReorder().postprocess_nodes(list(nodes))
    assert sorted(_ids(reordered)) == sorted(_ids(nodes)) and len(reordered) == 5

    engine = index.as_query_engine(
        llm=ScriptedLLM(answer=ANSWER),
        similarity_top_k=5,
        node_postprocessors=[SimilarityPostprocessor(similarity_cutoff=0.1)],
    )
    response = engine.query(QUESTION)
    documents = list(dict.fromkeys(n.node.ref_doc_id for n in response.source_nodes))
    # Sources are passages; a long document split into two chunks may be cited twice.
    assert documents[0] in answering and len(documents) <= len(response.source_nodes)

    citing = CitationQueryEngine.from_args(
        index, llm=ScriptedLLM(answer=ANSWER), similarity_top_k=5
    )
    cited = citing.query(QUESTION)
    assert str(cited) == ANSWER
    sources = [n.node.get_content() for n in cited.source_nodes]
    assert sources[0].startswith("Source 1:") and "Ilse Marrow" in sources[0]
    cited_docs = {n.node.metadata["file_name"] for n in cited.source_nodes}
    assert {"ilse-marrow.md", "colworth-university.md"} <= cited_docs


def test_noderag_keeps_its_passage_ranking_through_llama_index(index):
    retriever = index.as_retriever(method="noderag", similarity_top_k=3)
    ours, core = [], []
    for q in sample_questions():
        gold = set(q["supporting_ids"])
        nodes = retriever.retrieve(q["question"])
        passages = retrieve_passages(index.graph_index, q["question"], "noderag", 3).passages
        assert _ids(nodes) == [p.id for p in passages], q["id"]
        ours.append(len(gold & {n.node.ref_doc_id for n in nodes}) / len(gold))
        core.append(len(gold & {p.metadata["doc_id"] for p in passages}) / len(gold))
    assert ours == core and sum(ours) / len(ours) >= 0.7


def test_filters_translate_to_the_core_vocabulary():
    f = MetadataFilter
    cases = {
        FilterOperator.EQ: "$eq",
        FilterOperator.NE: "$ne",
        FilterOperator.GT: "$gt",
        FilterOperator.GTE: "$gte",
        FilterOperator.LT: "$lt",
        FilterOperator.LTE: "$lte",
    }
    for op, core in cases.items():
        assert to_core_filters(
            MetadataFilters(filters=[f(key="year", value=1950, operator=op)])
        ) == {"year": {core: 1950}}
    nested = MetadataFilters(
        filters=[
            f(key="shelf", value=["a"], operator=FilterOperator.IN),
            MetadataFilters(
                filters=[
                    f(key="year", value=1920, operator=FilterOperator.LT),
                    f(key="file_name", value=["dunmere.md"], operator=FilterOperator.NIN),
                ],
                condition=FilterCondition.OR,
            ),
        ]
    )
    assert to_core_filters(nested) == {
        "$and": [
            {"shelf": {"$in": ["a"]}},
            {"$or": [{"year": {"$lt": 1920}}, {"file_name": {"$nin": ["dunmere.md"]}}]},
        ]
    }
    assert to_core_filters(None, doc_ids=["a.md"]) == {"doc_id": {"$in": ["a.md"]}}
    for op in (FilterOperator.CONTAINS, FilterOperator.ANY, FilterOperator.TEXT_MATCH):
        with pytest.raises(ValueError, match=f"operator '{op.value}'") as err:
            to_core_filters(MetadataFilters(filters=[f(key="k", value="v", operator=op)]))
        assert "\n" not in str(err.value)
    negated = MetadataFilters(filters=[f(key="k", value="v")], condition=FilterCondition.NOT)
    with pytest.raises(ValueError, match="condition 'not'"):
        to_core_filters(negated)


@pytest.mark.parametrize(
    ("filters", "keep"),
    [
        (
            MetadataFilters(filters=[MetadataFilter(key="shelf", value="b")]),
            lambda m: m["shelf"] == "b",
        ),
        (
            MetadataFilters(
                filters=[MetadataFilter(key="shelf", value="a", operator=FilterOperator.NE)]
            ),
            lambda m: m["shelf"] != "a",
        ),
        (
            MetadataFilters(
                filters=[
                    MetadataFilter(key="year", value=1930, operator=FilterOperator.GT),
                    MetadataFilter(key="year", value=1990, operator=FilterOperator.LTE),
                ]
            ),
            lambda m: 1930 < m["year"] <= 1990,
        ),
        (
            MetadataFilters(
                filters=[
                    MetadataFilter(key="year", value=1920, operator=FilterOperator.LT),
                    MetadataFilter(key="year", value=2000, operator=FilterOperator.GTE),
                ],
                condition=FilterCondition.OR,
            ),
            lambda m: m["year"] < 1920 or m["year"] >= 2000,
        ),
        (
            MetadataFilters(
                filters=[
                    MetadataFilter(
                        key="file_name",
                        value=["ilse-marrow.md", "colworth-university.md", "dunmere.md"],
                        operator=FilterOperator.IN,
                    ),
                    MetadataFilter(
                        key="file_name", value=["dunmere.md"], operator=FilterOperator.NIN
                    ),
                ]
            ),
            lambda m: m["file_name"] in ("ilse-marrow.md", "colworth-university.md"),
        ),
    ],
)
def test_metadata_filters_keep_only_matching_documents(index, filters, keep):
    allowed = {name for name, meta in DOCS.items() if keep(meta)}
    k = min(3, len(allowed))
    nodes = index.as_retriever(similarity_top_k=k, filters=filters).retrieve(QUESTION)
    assert len(nodes) == k and {n.node.ref_doc_id for n in nodes} <= allowed


def test_filters_reach_the_retriever_through_engines_and_doc_ids(index):
    only = MetadataFilters(
        filters=[MetadataFilter(key="file_name", value="colworth-university.md")]
    )
    engine = index.as_query_engine(llm=ScriptedLLM(answer=ANSWER), filters=only, similarity_top_k=1)
    assert [n.node.ref_doc_id for n in engine.query(QUESTION).source_nodes] == [
        "colworth-university.md"
    ]
    nodes = index.as_retriever(doc_ids=["dunmere.md"], similarity_top_k=1).retrieve(QUESTION)
    assert [n.node.ref_doc_id for n in nodes] == ["dunmere.md"]
    with pytest.raises(ValueError, match="operator 'contains'"):
        index.as_retriever(
            filters=MetadataFilters(
                filters=[MetadataFilter(key="k", value="v", operator=FilterOperator.CONTAINS)]
            )
        )


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ("5", TypeError, "similarity_top_k must be a positive int, not '5' (str)"),
        (0, ValueError, "similarity_top_k must be a positive int, not 0"),
        (-5, ValueError, "similarity_top_k must be a positive int, not -5"),
        (2.5, TypeError, "similarity_top_k must be a positive int, not 2.5 (float)"),
    ],
)
def test_top_k_slips_are_one_line_errors(index, value, error, message):
    with pytest.raises(error) as err:
        index.as_retriever(similarity_top_k=value)
    assert str(err.value) == message
    with pytest.raises(error, match="similarity_top_k must be a positive int"):
        index.as_query_engine(llm=ScriptedLLM(answer=ANSWER), similarity_top_k=value)
