"""LangGraph building blocks: a retrieval node for a ``StateGraph`` and tools for agents.

- :func:`make_retrieve_node` turns a :class:`~langchain_hygraph.HyGraphRetriever` into a
  graph node: it reads the question from the state and writes the retrieved passage
  ``Document``s and the method's rendered context, ready for a generate node's prompt. In
  a chat graph (``MessagesState``) it also appends the retrieval to the messages, so a
  plain ``StateGraph(MessagesState)`` keeps it.
- :func:`make_retriever_tool` turns it into a LangChain tool that an agent
  (``langchain.agents.create_agent``, ``ToolNode``) can call. The tool returns the
  rendered context,
  because that text is what the method structured for a model to read (entities, facts
  and sources for the graph methods, ranked passages for the baselines). The
  ``Document``s come along as the tool message's artifact.
- :func:`make_method_tools` gives one such tool per method, each described by what its
  method is good at, so the agent chooses the retrieval strategy per question.

Everything is generic over methods: any name or spec the core registers
(``"hypergraph:top_k=3"``) works; one the index has not built yet is built on first use,
as the retriever does.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict

from langchain_core.callbacks import Callbacks
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, convert_to_messages
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

from hygraph.methods.base import get_method, parse_method_spec

if TYPE_CHECKING:
    from langchain_hygraph.retriever import HyGraphRetriever

#: The tool's default name (and the tool call a retrieve node records in a chat history).
TOOL_NAME = "hygraph_search"
#: What the tool returns when a method found nothing, so the agent reads a clear answer.
NO_RESULTS = "No matching evidence was found in the indexed documents."

#: When an agent should pick each built-in method. A method missing here (a new one) is
#: described by its class's ``description`` alone, so every registered method gets a tool.
METHOD_GUIDANCE: dict[str, str] = {
    "vanilla": (
        "Dense semantic search over passages. Use it for broad or topical questions and for "
        "paraphrases, where the meaning matters more than the exact words."
    ),
    "bm25": (
        "Keyword search over passages. Use it for exact names, rare terms, numbers, dates "
        "and quoted phrases."
    ),
    "hybrid": (
        "Semantic and keyword search fused. A robust default when a question mixes exact "
        "names with paraphrase."
    ),
    "hybrid-ppr": (
        "The recommended search: semantic and keyword search, re-ranked by a walk over the "
        "knowledge graph from the facts the question matches. Use it by default, and for "
        "multi-hop questions whose later steps the question does not name."
    ),
    "hypergraph": (
        "Knowledge-graph search over n-ary facts, their entities and passages. Use it for "
        "questions about how named people, places and things are related."
    ),
    "hypergraph-bridge": (
        "Multi-hop knowledge-graph search: follows facts through linking entities to reach "
        "passages the question does not name. Use it for chained questions that need two "
        "or more documents, such as 'who founded the firm that built the ship X commanded'."
    ),
    "g-retriever": (
        "The smallest connected piece of the knowledge graph that links the entities and "
        "relations nearest the question (a prize-collecting Steiner tree), as text. Use it "
        "for questions about how a few named things are connected; it returns graph "
        "structure, not passages."
    ),
    "kgp": (
        "An LLM-guided walk over passages linked by shared entities: from the best keyword "
        "matches, the model picks which linked passage to read next. Use it for multi-hop "
        "questions over many documents when a model is configured (it needs one)."
    ),
    "tog": (
        "Think-on-Graph: an LLM explores the knowledge graph from the question's entities, "
        "choosing relations and entities hop by hop. Use it for chains of relations between "
        "named things when a model is configured (it needs one); it returns reasoning paths."
    ),
    "dalk": (
        "Graph paths between the question's entities, filtered by an LLM. Use it for how two "
        "or more named things are connected when a model is configured (it needs one)."
    ),
    "noderag": (
        "Graph search over short statements, entity profiles and topic insights, spreading "
        "from the best matches to their neighbours. Use it for multi-hop questions and for "
        "questions about a theme or an entity as a whole, when compact evidence is wanted."
    ),
}


class RetrievalState(TypedDict, total=False):
    """A ready-made state for a retrieve → generate graph (all keys optional).

    ``question`` goes in; the retrieve node writes ``documents`` and ``context``; a
    generate node writes ``answer``. Any state with these keys works as well, and the node
    also reads the question from a ``messages`` list (``MessagesState``).
    """

    question: str
    documents: list[Document]
    context: str
    answer: str


class SearchInput(BaseModel):
    """The arguments of a hygraph search tool, as the model sees them."""

    query: str = Field(description="The question or keywords to search the documents for.")


def _with_method(retriever: HyGraphRetriever, method: str | None) -> HyGraphRetriever:
    """``retriever`` itself, or a copy of it that runs ``method`` over the same index.

    The spec is checked now (``model_copy`` skips the retriever's validators), so an
    unknown method or option fails when the graph or agent is put together, not in the
    middle of a conversation. The copy shares the index. As with the retriever itself, a
    method the index has not built yet is built on first use.
    """
    if method is None:
        return retriever
    parse_method_spec(method)
    return retriever.model_copy(update={"method": method})


def _state_value(state: Any, key: str) -> Any:
    """``state[key]`` for a dict state, the attribute for a dataclass or pydantic state."""
    if isinstance(state, Mapping):
        return state.get(key)
    return getattr(state, key, None)


def question_from_state(
    state: Any, question_key: str = "question", messages_key: str = "messages"
) -> str:
    """The question in ``state``: its ``question_key``, else the last human message.

    The fallback lets the node sit in a chat graph (``MessagesState``) where the question
    is the user's latest message rather than a separate key.
    """
    question = _state_value(state, question_key)
    if isinstance(question, str) and question.strip():
        return question
    messages = _state_value(state, messages_key)
    if messages:
        for message in reversed(convert_to_messages(messages)):
            if isinstance(message, HumanMessage) and message.text.strip():
                return message.text
    raise ValueError(
        f"the state has no question: set {question_key!r} or add a human message to "
        f"{messages_key!r}"
    )


def retrieval_messages(
    question: str, context: str, documents: list[Document], *, name: str = TOOL_NAME
) -> list[AIMessage | ToolMessage]:
    """A retrieval as chat messages: an assistant tool call and the tool's result.

    This is how a chat history records retrieved context in a form every tool-calling
    provider accepts, and after which a chat model answers (rather than continuing an
    assistant turn): the call carries the question, the result carries the method's
    rendered context as its content (:data:`NO_RESULTS` when empty) and the passage
    ``Document``s as its ``artifact`` (kept in the state, not sent to the model).
    """
    call_id = f"{name}-{uuid.uuid4().hex[:12]}"
    call = AIMessage(
        content="", tool_calls=[{"name": name, "args": {"query": question}, "id": call_id}]
    )
    result = ToolMessage(
        content=context.strip() or NO_RESULTS,
        tool_call_id=call_id,
        name=name,
        artifact=documents,
    )
    return [call, result]


def _has_key(state: Any, key: str) -> bool:
    if isinstance(state, Mapping):
        return key in state
    return hasattr(state, key)


def make_retrieve_node(
    retriever: HyGraphRetriever,
    *,
    question_key: str = "question",
    documents_key: str = "documents",
    context_key: str = "context",
    messages_key: str = "messages",
    to_messages: bool | None = None,
    method: str | None = None,
    name: str = "retrieve",
) -> RunnableLambda:
    """A LangGraph node that retrieves for the state's question.

    The node reads ``state[question_key]`` (or the last human message in
    ``state[messages_key]``) and returns ``{documents_key: [Document, ...], context_key:
    "..."}``: the retriever's passages with their provenance and graph evidence, and the
    context text the method rendered for a prompt (:class:`RetrievalState` has these keys).

    In a chat graph (a plain ``StateGraph(MessagesState)``), LangGraph drops keys its
    state does not declare, so the node also appends the retrieval to the messages
    (:func:`retrieval_messages`: an assistant tool call named ``name`` and its
    ``ToolMessage`` with the context, the documents as its artifact). A generate node
    then answers from ``state["messages"]`` as it is. ``to_messages`` decides: None (the
    default) appends when the state has ``messages_key``, True always, False never.

    It works in ``invoke`` and ``ainvoke`` (the async path does not block the event
    loop). ``method`` runs another method of the same index instead of the retriever's
    own. Add it with ``builder.add_node("retrieve", node)``.
    """
    chosen = _with_method(retriever, method)

    def update(state: Any, question: str, documents: list[Document], context: str) -> dict:
        out: dict[str, Any] = {documents_key: documents, context_key: context}
        if to_messages or (to_messages is None and _has_key(state, messages_key)):
            out[messages_key] = retrieval_messages(question, context, documents, name=name)
        return out

    # RunnableLambda passes the node's config on, so the retrieval is traced as its child.
    def retrieve(state: Any, config: RunnableConfig) -> dict[str, Any]:
        question = question_from_state(state, question_key, messages_key)
        documents, context = chosen.retrieve_with_context(question, config)
        return update(state, question, documents, context)

    async def aretrieve(state: Any, config: RunnableConfig) -> dict[str, Any]:
        question = question_from_state(state, question_key, messages_key)
        documents, context = await chosen.aretrieve_with_context(question, config)
        return update(state, question, documents, context)

    return RunnableLambda(retrieve, afunc=aretrieve, name=name)


def method_description(method: str) -> str:
    """A tool description for ``method``: when to use it, and what the method does."""
    base, _ = parse_method_spec(method)
    what = get_method(base).description
    guidance = METHOD_GUIDANCE.get(base, "")
    label = f"hygraph method `{method}`" + (f" ({what})" if what else "")
    parts = [
        guidance,
        f"Searches the indexed documents with {label}.",
        "Returns the evidence as text.",
    ]
    return " ".join(part for part in parts if part)


def make_retriever_tool(
    retriever: HyGraphRetriever,
    *,
    name: str = TOOL_NAME,
    description: str | None = None,
    method: str | None = None,
) -> StructuredTool:
    """A LangChain tool that searches with the retriever's method (or ``method``).

    The tool takes ``{"query": ...}`` and returns the method's rendered context as its
    content, with the ``Document``s as the artifact (``response_format=
    "content_and_artifact"``: a ``ToolMessage.artifact`` the model does not see). The
    default description says what the method retrieves and when it helps
    (:func:`method_description`); pass ``description`` to word it for your documents.
    """
    chosen = _with_method(retriever, method)

    # A ``callbacks`` parameter receives the tool run's child callbacks (tracing).
    def search(query: str, callbacks: Callbacks = None) -> tuple[str, list[Document]]:
        documents, context = chosen.retrieve_with_context(query, {"callbacks": callbacks})
        return context.strip() or NO_RESULTS, documents

    async def asearch(query: str, callbacks: Callbacks = None) -> tuple[str, list[Document]]:
        config: RunnableConfig = {"callbacks": callbacks}
        documents, context = await chosen.aretrieve_with_context(query, config)
        return context.strip() or NO_RESULTS, documents

    return StructuredTool.from_function(
        func=search,
        coroutine=asearch,
        name=name,
        description=description or method_description(chosen.method),
        args_schema=SearchInput,
        response_format="content_and_artifact",
    )


def tool_name(method: str, prefix: str = "search_") -> str:
    """A tool name for ``method`` that every provider accepts: ``search_hypergraph_bridge``.

    Providers allow letters, digits, ``_`` and ``-`` up to 64 characters; the rest of a
    spec (``:``, ``=``, ``,``) becomes ``_``.
    """
    slug = re.sub(r"[^A-Za-z0-9]+", "_", method).strip("_").lower()
    return (prefix + slug)[:64]


def make_method_tools(
    retriever: HyGraphRetriever,
    methods: Mapping[str, str] | Sequence[str],
    *,
    prefix: str = "search_",
) -> list[StructuredTool]:
    """One search tool per method, so an agent chooses how to retrieve for each question.

    ``methods`` is a list of method names or specs (each tool is described by
    :func:`method_description`), or a mapping from method to your own description of when
    to use it. Tool names are ``search_<method>`` (:func:`tool_name`). All tools share the
    retriever's index; build the methods up front (``from_documents(..., methods=[...])``)
    so that no agent call waits for a build.
    """
    if isinstance(methods, str):
        methods = [methods]
    described = methods if isinstance(methods, Mapping) else dict.fromkeys(methods)
    if not described:
        raise ValueError("make_method_tools needs at least one method")
    tools = [
        make_retriever_tool(
            retriever, name=tool_name(method, prefix), description=text, method=method
        )
        for method, text in described.items()
    ]
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise ValueError(f"methods give clashing tool names: {names}")
    return tools
