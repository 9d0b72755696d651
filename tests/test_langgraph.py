"""The LangGraph pieces with LangChain's and LangGraph's real classes, offline.

A compiled ``StateGraph`` runs the retrieve node (with its own state and in a plain
``MessagesState`` chat graph), tools are invoked directly and by an agent built with the
current, non-deprecated API (``langchain.agents.create_agent`` when ``langchain`` is
installed, else LangGraph's ``ToolNode`` loop) whose chat model is a scripted stand-in,
all over an index of a few sample documents with every registered method built.
"""

from __future__ import annotations

import asyncio
import re
import warnings

import pytest

pytest.importorskip("langgraph")

from langchain_core.callbacks import BaseCallbackHandler  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage  # noqa: E402
from langchain_core.utils.function_calling import convert_to_openai_tool  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from method_lists import offline_methods  # noqa: E402
from pydantic import Field  # noqa: E402

from hygraph.demo import sample_dir  # noqa: E402
from hygraph.errors import UnknownMethodError  # noqa: E402
from hygraph.methods.base import available_methods, get_method  # noqa: E402
from langchain_hygraph import HyGraphRetriever  # noqa: E402
from langchain_hygraph.graph import (  # noqa: E402
    METHOD_GUIDANCE,
    NO_RESULTS,
    RetrievalState,
    make_method_tools,
    make_retrieve_node,
    make_retriever_tool,
    method_description,
    question_from_state,
    tool_name,
)

DOCS = [
    "aldercott-shipyard.md",
    "ilse-marrow.md",
    "colworth-university.md",
    "northern-shelf-expedition.md",
    "harrowby-tide-orchestra.md",
]
# Two hops: the voyage (northern-shelf-expedition.md), then its tribute (the orchestra).
TWO_HOP = "Who wrote a musical tribute to the voyage that mapped 2,400 square kilometres of seabed?"
ONE_HOP = "In what year was Aldercott Shipyard founded?"


class ScriptedChatModel(GenericFakeChatModel):
    """A stand-in tool-calling chat model (test double): replays scripted replies, records
    the tools it is given and every list of messages it is asked to answer."""

    bound: list = Field(default_factory=list)
    seen: list = Field(default_factory=list)

    def bind_tools(self, tools, **kwargs):
        self.bound.extend(convert_to_openai_tool(t) for t in tools)
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def build_agent(model, tools):
    """A tool-calling agent with the current API (LangChain 1.x ``create_agent``), as the
    example builds it: LangGraph 1.x deprecates its ``create_react_agent``."""
    from langchain.agents import create_agent

    return create_agent(model, tools)


@pytest.fixture(scope="module")
def retriever(tmp_path_factory, minilm):
    docs = [
        Document(page_content=(sample_dir() / name).read_text(), id=name, metadata={"n": i})
        for i, name in enumerate(DOCS)
    ]
    built = HyGraphRetriever.from_documents(
        docs,
        method="vanilla",
        methods=offline_methods(),
        embedding=minilm,
        persist_dir=tmp_path_factory.mktemp("langgraph") / "index",
        top_k=3,
        progress=False,
    )
    yield built
    built.close()


def _graph(node, state=RetrievalState):
    builder = StateGraph(state)
    builder.add_node("retrieve", node)
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", END)
    return builder.compile()


def _sources(documents):
    return list(dict.fromkeys(d for doc in documents for d in doc.metadata["doc_ids"]))


# -- the node ----------------------------------------------------------------------------


def test_node_in_a_compiled_state_graph(retriever):
    state = _graph(make_retrieve_node(retriever)).invoke({"question": ONE_HOP})
    assert state["question"] == ONE_HOP
    docs = state["documents"]
    assert docs and all(isinstance(d, Document) for d in docs)
    for doc in docs:
        assert {"kind", "score", "source_ids", "doc_ids", "method"} <= set(doc.metadata)
        assert doc.metadata["method"] == "vanilla"
    assert _sources(docs)[0] == "aldercott-shipyard.md"
    # The context is the method's rendered text, and it holds the retrieved passages.
    assert state["context"].strip() and "1819" in state["context"]
    assert state["context"] == retriever.retrieve_with_context(ONE_HOP)[1]


def test_node_method_override_runs_another_method(retriever):
    node = make_retrieve_node(retriever, method="hypergraph-bridge")
    state = _graph(node).invoke({"question": ONE_HOP})
    assert {d.metadata["method"] for d in state["documents"]} == {"hypergraph-bridge"}
    # Passages, each with the graph evidence that led to it; the context has it all.
    assert {d.metadata["kind"] for d in state["documents"]} == {"chunk"}
    evidence = [e for d in state["documents"] for e in d.metadata["graph_evidence"]]
    assert {"entity", "fact"} <= {e.split(":", 1)[0] for e in evidence}
    assert "Aldercott Shipyard" in state["context"]
    assert retriever.method == "vanilla"  # the override is a copy
    # A spec with options works too; the retriever's top_k (3) still applies.
    bm25 = _graph(make_retrieve_node(retriever, method="bm25:k1=1.2")).invoke({"question": ONE_HOP})
    assert [d.metadata["method"] for d in bm25["documents"]] == ["bm25:k1=1.2"] * 3


def test_node_with_ainvoke(retriever):
    graph = _graph(make_retrieve_node(retriever))
    state = asyncio.run(graph.ainvoke({"question": ONE_HOP}))
    sync = graph.invoke({"question": ONE_HOP})
    assert [d.id for d in state["documents"]] == [d.id for d in sync["documents"]]
    assert state["context"] == sync["context"]


def test_node_reads_the_last_human_message_and_custom_keys(retriever):
    class ChatState(MessagesState):
        hits: list[Document]
        text: str

    node = make_retrieve_node(retriever, documents_key="hits", context_key="text")
    state = _graph(node, ChatState).invoke(
        {"messages": [("user", "Tell me about the orchestra."), ("ai", "Sure."), ("user", ONE_HOP)]}
    )
    assert _sources(state["hits"])[0] == "aldercott-shipyard.md"
    assert "1819" in state["text"]


def _chat_app(node, model, checkpointer=None):
    """A plain chat app: ``StateGraph(MessagesState)``, retrieve → generate."""

    def generate(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("retrieve", node)
    builder.add_node("generate", generate)
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "generate")
    builder.add_edge("generate", END)
    return builder.compile(checkpointer=checkpointer)


def test_node_in_a_plain_messages_state_graph(retriever):
    """MessagesState has no documents/context keys: the retrieval lands in the messages."""
    model = ScriptedChatModel(messages=iter([AIMessage("1819."), AIMessage("In 1819.")]))
    app = _chat_app(make_retrieve_node(retriever), model)
    state = app.invoke({"messages": [HumanMessage(ONE_HOP)]})
    assert set(state) == {"messages"}
    human, call, result, answer = state["messages"]
    # An assistant tool call and its result: a history every tool-calling provider accepts.
    (tool_call,) = call.tool_calls
    assert tool_call["args"] == {"query": ONE_HOP} and tool_call["id"] == result.tool_call_id
    assert isinstance(result, ToolMessage) and result.name == "retrieve"
    assert result.content == retriever.retrieve_with_context(ONE_HOP)[1].strip()
    assert "1819" in result.content
    assert [d.metadata["kind"] for d in result.artifact] == ["chunk"] * 3  # top_k=3 passages
    assert _sources(result.artifact)[0] == "aldercott-shipyard.md"
    # The generate node answered from the messages as they were, context last.
    assert model.seen[0][-1].content == result.content and answer.content == "1819."
    # The async path does the same.
    astate = asyncio.run(app.ainvoke({"messages": [HumanMessage(ONE_HOP)]}))
    assert [type(m).__name__ for m in astate["messages"]] == [
        "HumanMessage",
        "AIMessage",
        "ToolMessage",
        "AIMessage",
    ]
    assert astate["messages"][2].content == result.content


def test_messages_node_with_a_checkpointer_and_opt_out(retriever):
    from langgraph.checkpoint.memory import InMemorySaver

    model = ScriptedChatModel(messages=iter([AIMessage("1819.")]))
    app = _chat_app(make_retrieve_node(retriever), model, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    app.invoke({"messages": [HumanMessage(ONE_HOP)]}, config)
    saved = app.get_state(config).values["messages"]
    assert isinstance(saved[2], ToolMessage) and "1819" in saved[2].content
    # LangGraph's checkpoint serializer gives a message's artifact back as plain dicts.
    first = saved[2].artifact[0]
    assert (first.metadata if isinstance(first, Document) else first["metadata"])["kind"] == "chunk"
    # to_messages=False leaves the messages alone (for a state that keeps documents itself).
    node = make_retrieve_node(retriever, to_messages=False)
    assert "messages" not in node.invoke({"messages": [HumanMessage(ONE_HOP)]})
    # to_messages=True adds them even when the state has no messages yet.
    forced = make_retrieve_node(retriever, to_messages=True).invoke({"question": ONE_HOP})
    assert [type(m).__name__ for m in forced["messages"]] == ["AIMessage", "ToolMessage"]


def test_question_from_state_prefers_the_question_key():
    state = {"query": "q1", "messages": [HumanMessage("q2")]}
    assert question_from_state(state, "query") == "q1"
    assert question_from_state({"messages": [HumanMessage("q2"), AIMessage("a")]}) == "q2"
    with pytest.raises(ValueError, match="no question"):
        question_from_state({"messages": [AIMessage("only the assistant")]})


def test_node_fails_early_on_an_unknown_method(retriever):
    with pytest.raises(UnknownMethodError):
        make_retrieve_node(retriever, method="no-such-method")
    with pytest.raises(ValueError, match="no question"):
        make_retrieve_node(retriever).invoke({})


def test_node_and_tool_retrievals_reach_the_callbacks(retriever):
    class Recorder(BaseCallbackHandler):
        def __init__(self):
            self.queries = []

        def on_retriever_start(self, serialized, query, **kwargs):
            self.queries.append((query, kwargs.get("parent_run_id") is not None))

    recorder = Recorder()
    graph = _graph(make_retrieve_node(retriever))
    graph.invoke({"question": ONE_HOP}, {"callbacks": [recorder]})
    make_retriever_tool(retriever).invoke({"query": "Caddow Bridge"}, {"callbacks": [recorder]})
    # Each retrieval is traced as a child run (of the graph node, of the tool).
    assert recorder.queries == [(ONE_HOP, True), ("Caddow Bridge", True)]


# -- the tools ---------------------------------------------------------------------------


def test_retriever_tool_returns_context_and_documents(retriever):
    tool = make_retriever_tool(retriever)
    assert tool.name == "hygraph_search"
    assert "`vanilla`" in tool.description and get_method("vanilla").description in tool.description
    assert list(tool.args) == ["query"]
    # Invoked with arguments, the tool returns the method's context text.
    text = tool.invoke({"query": ONE_HOP})
    assert text == retriever.retrieve_with_context(ONE_HOP)[1].strip() and "1819" in text
    # Invoked with a tool call (as agents do), the documents come along as the artifact.
    call = {"name": tool.name, "args": {"query": ONE_HOP}, "id": "c1", "type": "tool_call"}
    message = tool.invoke(call)
    assert isinstance(message, ToolMessage) and message.content == text
    assert _sources(message.artifact)[0] == "aldercott-shipyard.md"
    amessage = asyncio.run(tool.ainvoke(call))
    assert amessage.content == text and len(amessage.artifact) == len(message.artifact)


def test_retriever_tool_options(retriever):
    tool = make_retriever_tool(
        retriever, name="shipyard_search", description="Search the notes.", method="bm25"
    )
    assert (tool.name, tool.description) == ("shipyard_search", "Search the notes.")
    call = {"name": tool.name, "args": {"query": ONE_HOP}, "id": "c1", "type": "tool_call"}
    assert {d.metadata["method"] for d in tool.invoke(call).artifact} == {"bm25"}


def test_retriever_tool_says_when_nothing_was_found(tmp_path, minilm):
    empty = HyGraphRetriever.from_documents(
        [], method="vanilla", embedding=minilm, persist_dir=tmp_path / "empty", progress=False
    )
    try:
        assert make_retriever_tool(empty).invoke({"query": ONE_HOP}) == NO_RESULTS
    finally:
        empty.close()


def test_method_tools_for_every_registered_method(retriever):
    methods = offline_methods()
    tools = make_method_tools(retriever, methods)
    assert [t.name for t in tools] == [tool_name(m) for m in methods]
    assert "search_hypergraph_bridge" in [t.name for t in tools]
    descriptions = set()
    missed = []
    for method, tool in zip(methods, tools, strict=True):
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool.name)
        assert f"`{method}`" in tool.description
        assert get_method(method).description in tool.description
        assert tool.description == method_description(method)
        descriptions.add(tool.description)
        # Every provider's tool schema accepts it, and it retrieves with its own method.
        schema = convert_to_openai_tool(tool)["function"]
        assert schema["name"] == tool.name and "query" in schema["parameters"]["properties"]
        call = {"name": tool.name, "args": {"query": ONE_HOP}, "id": "c", "type": "tool_call"}
        message = tool.invoke(call)
        assert message.content.strip() and message.content != NO_RESULTS
        assert {d.metadata["method"] for d in message.artifact} == {method}
        if "aldercott-shipyard.md" not in _sources(message.artifact):
            missed.append(method)
    # The passage-first methods find the one-hop answer's document; methods whose
    # context leads with entities, trees or communities may rank it lower.
    assert not set(missed) & {"vanilla", "bm25", "hybrid", "hypergraph-bridge", "noderag-fused"}
    assert len(missed) <= len(methods) // 2, missed
    assert len(descriptions) == len(methods)
    assert set(METHOD_GUIDANCE) <= set(available_methods())  # agentic ones too


def test_method_tools_with_own_descriptions_and_specs(retriever):
    tools = make_method_tools(
        retriever, {"bm25": "Exact names.", "hypergraph:top_k=2,chunk_retrieval=false": "Facts."}
    )
    assert [(t.name, t.description) for t in tools] == [
        ("search_bm25", "Exact names."),
        ("search_hypergraph_top_k_2_chunk_retrieval_false", "Facts."),
    ]
    with pytest.raises(ValueError, match="clashing"):
        make_method_tools(retriever, ["bm25:top_k=5", "bm25: top_k=5"])
    with pytest.raises(ValueError, match="at least one"):
        make_method_tools(retriever, [])
    with pytest.raises(UnknownMethodError):
        make_method_tools(retriever, ["vanilla", "no-such-method"])


# -- a prebuilt agent --------------------------------------------------------------------


def _agent_turns(tool: str, query: str, answer: str) -> ScriptedChatModel:
    call = {"name": tool, "args": {"query": query}, "id": "call-1"}
    return ScriptedChatModel(messages=iter([AIMessage("", tool_calls=[call]), AIMessage(answer)]))


def test_agent_calls_the_multi_hop_tool_without_deprecation_warnings(retriever):
    tools = make_method_tools(retriever, ["vanilla", "bm25", "hypergraph-bridge"])
    model = _agent_turns("search_hypergraph_bridge", TWO_HOP, "Edda Vantreul.")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        agent = build_agent(model, tools)
        messages = agent.invoke({"messages": [HumanMessage(TWO_HOP)]})["messages"]
    # The model was given all three tools, with their descriptions.
    # (create_agent binds them on every model turn, hence the de-duplication).
    bound = list(dict.fromkeys(t["function"]["name"] for t in model.bound))
    assert bound == [t.name for t in tools]
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert [m.name for m in results] == ["search_hypergraph_bridge"]
    # The tool found both hops: the voyage, and the orchestra whose conductor wrote the tribute.
    assert {"northern-shelf-expedition.md", "harrowby-tide-orchestra.md"} <= set(
        _sources(results[0].artifact)
    )
    assert "Vantreul" in results[0].content
    assert messages[-1].content == "Edda Vantreul."


def test_agent_async_with_keyword_search(retriever):
    tools = make_method_tools(retriever, ["vanilla", "bm25"])
    model = _agent_turns("search_bm25", "Aldercott Shipyard founded", "1819")
    agent = build_agent(model, tools)
    messages = asyncio.run(agent.ainvoke({"messages": [HumanMessage(ONE_HOP)]}))["messages"]
    result = next(m for m in messages if isinstance(m, ToolMessage))
    assert result.name == "search_bm25" and "1819" in result.content
    assert _sources(result.artifact)[0] == "aldercott-shipyard.md"
    assert {d.metadata["method"] for d in result.artifact} == {"bm25"}
