"""Slips an app makes on the LangChain side fail in one line that names the slip.

Each case is a mistake seen in real code: a number of passages given as a string or as
zero, a typo in ``search_kwargs``, a LlamaIndex model where a LangChain one belongs, the
method passed where ``from_documents`` expects the embedding. The errors must be one
short line (no pydantic report, no repr of a large object).
"""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings.fake import DeterministicFakeEmbedding  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402

import langchain_hygraph  # noqa: E402
from hygraph.index import GraphIndex  # noqa: E402
from langchain_hygraph import HyGraphRetriever  # noqa: E402
from langchain_hygraph.models import resolve_embedder, resolve_llm  # noqa: E402


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    """An empty index: argument checks happen before anything is retrieved."""
    core = GraphIndex(
        tmp_path_factory.mktemp("errors") / "index",
        embedder=resolve_embedder(DeterministicFakeEmbedding(size=8)),
        progress=False,
    )
    yield core
    core.close()


def _one_line(err: pytest.ExceptionInfo) -> str:
    text = str(err.value)
    assert "\n" not in text and len(text) < 220, text
    return text


@pytest.mark.parametrize(
    ("arguments", "error", "said"),
    [
        ({"k": "5"}, TypeError, "k must be a positive whole number such as k=5, not '5' (a str)"),
        ({"k": 0}, ValueError, "k must be a positive whole number such as k=5, not 0"),
        ({"k": -5}, ValueError, "not -5"),
        ({"k": 2.5}, TypeError, "not 2.5 (a float)"),
        ({"k": True}, TypeError, "not True (a bool)"),
        ({"top_k": "3"}, TypeError, "top_k must be a positive whole number"),
        ({"budget": 0}, ValueError, "budget must be a positive whole number"),
        ({"search_kwargs": {"k": "5"}}, TypeError, "k must be a positive whole number"),
        ({"search_kwargs": {"kk": 5}}, ValueError, "unknown search_kwargs key 'kk'; known: k,"),
        ({"search_kwargs": 5}, TypeError, "search_kwargs must be a dict"),
        ({"search_kwargs": {"lambda_mult": 2}}, ValueError, "lambda_mult must be between 0"),
        ({"search_type": "semantic"}, ValueError, "search_type must be one of 'similarity'"),
        ({"results": "nodes"}, ValueError, "results must be one of 'passages', 'evidence'"),
        ({"k": 5, "top_k": 3}, ValueError, "given twice (k=5, top_k=3): pass one of them"),
        (
            {"results": "evidence", "search_type": "mmr"},
            ValueError,
            "search_type='mmr' and score_threshold work on passages",
        ),
        ({"method": 5}, TypeError, "method must be a method name"),
    ],
)
def test_retriever_arguments(index, arguments, error, said):
    with pytest.raises(error) as err:
        HyGraphRetriever(index=index, **arguments)
    assert said in _one_line(err)


def test_per_call_arguments_are_checked_too(index):
    retriever = HyGraphRetriever(index=index, method="vanilla")
    with pytest.raises(TypeError) as err:
        retriever.invoke("anything", k="5")
    assert "k must be a positive whole number" in _one_line(err)


def test_index_of_the_wrong_type(index):
    big = list(range(10_000))
    with pytest.raises(TypeError) as err:
        HyGraphRetriever(index=big)
    assert "index must be a hygraph GraphIndex, not [0, 1, 2" in _one_line(err)


def test_llama_index_models_where_langchain_ones_belong():
    llama = pytest.importorskip("llama_index.core")
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.llms import MockLLM

    with pytest.raises(TypeError) as err:
        resolve_embedder(MockEmbedding(embed_dim=8))
    text = _one_line(err)
    assert "LlamaIndex model MockEmbedding" in text and "LangChain Embeddings" in text
    with pytest.raises(TypeError) as err:
        resolve_llm(MockLLM())
    assert "LlamaIndex model MockLLM" in _one_line(err)
    # Through the public constructor, before anything is built.
    with pytest.raises(TypeError, match="LlamaIndex model MockLLM"):
        HyGraphRetriever.from_documents([Document(page_content="x")], llm=MockLLM())
    with pytest.raises(TypeError) as err:
        HyGraphRetriever.from_documents([llama.Document(text="a LlamaIndex document")])
    assert "expected LangChain Documents, not Document (from llama_index" in _one_line(err)


def test_models_in_each_others_places():
    with pytest.raises(TypeError, match="llm= got the embedding model DeterministicFakeEmbedding"):
        resolve_llm(DeterministicFakeEmbedding(size=8))
    chat = GenericFakeChatModel(messages=iter(["x"]))
    with pytest.raises(TypeError, match="embedding= got the chat model GenericFakeChatModel"):
        resolve_embedder(chat)
    with pytest.raises(TypeError) as err:
        resolve_embedder(object())
    assert "embedding= takes LangChain Embeddings" in _one_line(err)


def test_the_embedding_is_from_documents_second_argument(tmp_path):
    with pytest.raises(TypeError) as err:
        HyGraphRetriever.from_documents([], "hypergraph-bridge", persist_dir=tmp_path / "i")
    assert "method='hypergraph-bridge'" in _one_line(err)
    assert not (tmp_path / "i").exists()


def test_dir_lists_the_lazily_loaded_helpers():
    names = dir(langchain_hygraph)
    lazy = ("make_retrieve_node", "make_retriever_tool", "make_method_tools", "RetrievalState")
    for name in lazy:
        assert name in names and getattr(langchain_hygraph, name) is not None
    assert "HyGraphRetriever" in names and names == sorted(names)
