"""hygraph in LangGraph: a retrieve → generate graph, a chat graph, and a tool-calling agent.

Indexes the bundled sample corpus with three methods, then answers a two-hop question
three ways: a ``StateGraph`` with the hygraph retrieve node and a generate node, a plain
``StateGraph(MessagesState)`` chat app where the node records the retrieval in the
messages, and an agent (LangChain 1.x's ``create_agent``) that chooses among one search tool per
method. Runs offline: scripted chat models stand in for the LLMs.

    python examples/langgraph_agent.py [INDEX_DIR]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from hygraph.demo import sample_documents
from langchain_hygraph import HyGraphRetriever
from langchain_hygraph.graph import RetrievalState, make_method_tools, make_retrieve_node

# Two hops: one document names the voyage, another the tribute to it.
QUESTION = (
    "Who wrote a musical tribute to the voyage that mapped 2,400 square kilometres of seabed?"
)


class ScriptedChatModel(GenericFakeChatModel):
    """A SCRIPTED STAND-IN for a tool-calling chat model: it replays the replies it is given."""

    def bind_tools(self, tools, **kwargs):
        return self  # a real model is told about the tools here, and chooses among them


def sources(documents: list[Document]) -> list[str]:
    """The source files behind retrieved passages, best first."""
    return list(dict.fromkeys(d for doc in documents for d in doc.metadata["doc_ids"]))


def build_agent(model, tools):
    """A tool-calling agent with LangChain 1.x's ``create_agent`` (the current API; LangGraph
    1.x deprecates its ``create_react_agent``)."""
    from langchain.agents import create_agent

    return create_agent(model, tools)


def answer_with_a_graph(retriever: HyGraphRetriever) -> dict:
    """A StateGraph: retrieve (the hygraph node) → generate (a chat model)."""
    # SCRIPTED STAND-IN chat model, so this runs offline. Use a real one in its place.
    llm = GenericFakeChatModel(messages=iter(["(scripted stand-in answer)"]))

    def generate(state: RetrievalState) -> dict:
        prompt = f"Answer from the context.\n\n{state['context']}\n\nQuestion: {state['question']}"
        return {"answer": llm.invoke(prompt).content}

    builder = StateGraph(RetrievalState)
    builder.add_node("retrieve", make_retrieve_node(retriever))  # writes documents, context
    builder.add_node("generate", generate)
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "generate")
    builder.add_edge("generate", END)
    state = builder.compile().invoke({"question": QUESTION})
    print(f"graph: {state['answer']} from {sources(state['documents'])[:3]}")
    return state


def chat_with_messages(retriever: HyGraphRetriever) -> list:
    """A plain MessagesState chat app: the node appends the retrieval to the messages."""
    # SCRIPTED STAND-IN chat model; a real one answers from the tool message's context.
    llm = GenericFakeChatModel(messages=iter(["(scripted stand-in answer)"]))
    builder = StateGraph(MessagesState)
    builder.add_node("retrieve", make_retrieve_node(retriever))  # adds a tool call + result
    builder.add_node("generate", lambda state: {"messages": [llm.invoke(state["messages"])]})
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "generate")
    builder.add_edge("generate", END)
    messages = builder.compile().invoke({"messages": [HumanMessage(QUESTION)]})["messages"]
    print(f"chat: {[type(m).__name__ for m in messages]}")
    return messages


def answer_with_an_agent(retriever: HyGraphRetriever) -> list:
    """An agent with one search tool per method; the model picks one per question."""
    # Each tool's description says what its method is good at: semantic search for broad
    # questions, keywords for exact names, graph search for multi-hop chains.
    tools = make_method_tools(retriever, ["vanilla", "bm25", "hypergraph-bridge"])
    print(f"tools: {[t.name for t in tools]}")
    # SCRIPTED STAND-IN: a real model would read the descriptions and choose the multi-hop
    # tool for this question; this one is told to, then gives a canned answer.
    call = {"name": "search_hypergraph_bridge", "args": {"query": QUESTION}, "id": "call-1"}
    model = ScriptedChatModel(
        messages=iter([AIMessage("", tool_calls=[call]), "(scripted stand-in answer)"])
    )
    agent = build_agent(model, tools)
    messages = agent.invoke({"messages": [HumanMessage(QUESTION)]})["messages"]
    for message in messages:
        if isinstance(message, ToolMessage):  # the context it read; passages as the artifact
            print(f"agent: {message.name} read {len(message.content)} characters")
            print(f"  from {sources(message.artifact)[:3]}")
    print(f"agent: {messages[-1].content}")
    return messages


def main(index_dir: str | None = None) -> dict:
    """Index the sample corpus with three methods, then answer with graphs and an agent."""
    with tempfile.TemporaryDirectory() as tmp:
        docs = [Document(page_content=p.read_text(), id=p.name) for p in sample_documents()]
        with HyGraphRetriever.from_documents(
            docs,
            method="hypergraph-bridge",
            methods=["vanilla", "bm25"],
            persist_dir=index_dir or Path(tmp) / "index",
            k=5,
        ) as retriever:
            state = answer_with_a_graph(retriever)
            chat = chat_with_messages(retriever)
            messages = answer_with_an_agent(retriever)
            tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
            return {
                "graph_documents": sources(state["documents"]),
                "graph_context": state["context"],
                "chat_context": next(m.content for m in chat if isinstance(m, ToolMessage)),
                "tools_called": [m.name for m in tool_messages],
                "tool_context": tool_messages[0].content,
                "tool_documents": sources(tool_messages[0].artifact),
            }


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
