"""Question operators: the query vector and the entities or terms a question names."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from hygraph.errors import ConfigError
from hygraph.operators.registry import operator

if TYPE_CHECKING:
    from hygraph.operators.state import State
    from hygraph.resources import Resources

log = logging.getLogger("hygraph")

#: Prompt families that ask an LLM for a question's entities: (messages, parser).
PROMPTS = {
    "hypergraph": ("question_entities_messages", "parse_question_entities"),
    "noderag": ("query_elements_messages", "parse_query_elements"),
    "hipporag": ("question_entities_messages", "parse_question_entities"),
}
MODES = ("auto", "llm", "offline", "question")


@operator("question.embed")
def embed(res: Resources, state: State) -> None:
    """The question's query vector (embedded once, read by every later vector step)."""
    state.query_vector(res)


@operator("question.entities")
def entities(
    res: Resources,
    state: State,
    *,
    mode: str = "auto",
    prompt: str = "hypergraph",
    fallback: str = "question",
) -> None:
    """Entity names in the question: the LLM's (``prompt`` family) or the offline rules'.

    ``mode``: ``auto`` (the LLM if one is configured, else the rules), ``llm`` (an error
    without one), ``offline`` or ``question`` (the whole question). When nothing is
    found or the LLM fails (logged), ``fallback="question"`` keeps the whole question
    and ``"none"`` leaves the keywords empty.
    """
    if mode not in MODES:
        raise ConfigError(f"question entities mode must be one of {', '.join(MODES)}")
    found: list[str] | None = [state.question] if mode == "question" else None
    if found is None:
        found = _ask(res, state.question, mode, prompt, fallback)
    if not found and fallback == "question":
        found = [state.question]
    state.keywords = list(found or [])


def _ask(res: Resources, question: str, mode: str, prompt: str, fallback: str) -> list[str] | None:
    """The LLM's entities (None when it failed), or the offline rules' when there is none."""
    # Retrieval is LLM-free unless the index was opened with llm_in_retrieval=True, or the
    # method's options ask for the LLM by name (mode "llm").
    llm = res.llm if mode == "llm" else res.retrieval_llm if mode == "auto" else None
    if mode == "llm" and llm is None:
        raise ConfigError("query_entities=llm needs an LLM: pass llm=... or set OPENAI_MODEL")
    if llm is not None:
        import importlib

        module = importlib.import_module(f"hygraph.prompts.{prompt}")
        messages, parse = (getattr(module, name) for name in PROMPTS[prompt])
        try:
            reply = res.complete_bounded(messages(question))
            return parse(reply, question)
        except Exception as err:  # noqa: BLE001 - the recipe falls back; a query never fails
            log.warning("%s: question entities failed (%s); using the offline rules", prompt, err)
    from hygraph.extract.offline import find_entities

    return list(dict.fromkeys(m.name for m in find_entities(question)))


# --------------------------------------------------------------------------- keywords (LightRAG)

KEYWORD_MODES = ("auto", "llm", "offline")
KEYWORD_LEVELS = ("low", "high", "both")


@operator("question.keywords")
def keywords(
    res: Resources, state: State, *, mode: str = "auto", keep: str = "low", names: bool = True
) -> None:
    """The question's low- and high-level keywords (LightRAG): the LLM's or the rules'.

    ``mode``: ``auto`` (the LLM when retrieval may use it, else the rules), ``llm`` (an
    error without one) or ``offline``. The rules take the offline extractor's entity
    mentions as low-level keywords and the other content phrases as high-level ones
    (:func:`~hygraph.extract.phrases.question_keywords`); with ``names`` the rules'
    high-level keywords also hold those mentions, all in question order (see
    :func:`rule_keywords`). An LLM reply that cannot be read, or a call that fails,
    falls back to the rules (logged); the LLM's keywords are kept as given. Both levels
    are kept in ``state.subgraph["keywords"]`` (with ``"source"``: ``llm`` or
    ``offline``); ``keep`` says which go to ``state.keywords``, what ``node.vdb``
    searches with: ``low``, ``high`` or ``both``.
    """
    if mode not in KEYWORD_MODES:
        raise ConfigError(f"question keywords mode must be one of {', '.join(KEYWORD_MODES)}")
    if keep not in KEYWORD_LEVELS:
        raise ConfigError(f"question keywords keep must be one of {', '.join(KEYWORD_LEVELS)}")
    llm = res.llm if mode == "llm" else res.retrieval_llm if mode == "auto" else None
    if mode == "llm" and llm is None:
        raise ConfigError("keywords=llm needs an LLM: pass llm=... or set OPENAI_MODEL")
    found: tuple[list[str], list[str]] | None = None
    if llm is not None:
        from hygraph.prompts.lightrag import parse_query_keywords, query_keywords_messages

        try:
            reply = res.complete_bounded(query_keywords_messages(state.question))
            found = parse_query_keywords(reply)
        except Exception as err:  # noqa: BLE001 - the rules stand in; a query never fails
            log.warning("question keywords failed (%s); using the offline rules", err)
    source = "llm" if found is not None else "offline"
    if found is None:
        found = rule_keywords(state.question, names=names)
    low, high = found
    state.subgraph["keywords"] = {"low": low, "high": high, "source": source}
    chosen = {"low": low, "high": high, "both": [*low, *high]}[keep]
    state.keywords = list(dict.fromkeys(chosen))


def rule_keywords(question: str, *, names: bool = True) -> tuple[list[str], list[str]]:
    """``(low, high)`` keywords of ``question`` by rule; with ``names``, high holds the names.

    Low-level: the entity mentions the offline extractor finds. High-level: the other
    content phrases and, with ``names``, the mentions too, in the order the question
    says them. LightRAG's LLM-written high-level keywords often name the question's
    entities and noun phrases along with its themes, and the relation vectors they
    search begin with a relation's keywords and endpoint names, so a high-level text
    without any name rarely meets the relations a question is about (ours: the rule).
    """
    from hygraph.extract.phrases import question_keywords

    low, high = question_keywords(question)
    if not names or not low:
        return low, high
    folded = question.casefold()

    def at(phrase: str) -> int:
        found = folded.find(phrase.casefold())
        return found if found >= 0 else len(folded)

    merged = sorted(dict.fromkeys([*high, *low]), key=at)  # sorted() keeps equal keys' order
    return low, merged
