"""A scripted LLM double for the graph agents (ToG, DALK), keyed on each prompt's first line.

:func:`agent_llm` builds a :class:`~doubles.ScriptedLLM` whose reply depends on which
prompt it got: the agent prompts start with fixed first lines
(:mod:`hygraph.prompts.agents`), anything else is taken for the question-entity prompt.
A reply is a string, an exception (raised by the call), or a function of the last
message's text returning either. :func:`kinds` lists the kinds of the calls made, in
order, so a test checks which calls happened and how many.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from doubles import ScriptedLLM

from hygraph.prompts.agents import (
    ENOUGH_FIRST_LINE,
    ENTITY_FIRST_LINE,
    PATH_FIRST_LINE,
    RELATION_FIRST_LINE,
)

FIRST_LINES = {
    RELATION_FIRST_LINE: "relation",
    ENTITY_FIRST_LINE: "entity",
    PATH_FIRST_LINE: "path",
    ENOUGH_FIRST_LINE: "enough",
}
Reply = str | Exception | Callable[[str], "str | Exception"]


def kind_of(messages: list[dict[str, str]]) -> str:
    """``relation``, ``entity``, ``path``, ``enough`` or ``ner`` (any other prompt)."""
    head = messages[0]["content"].splitlines()[0] if messages else ""
    return FIRST_LINES.get(head, "ner")


def agent_llm(**replies: Reply) -> ScriptedLLM:
    """A scripted double replying per prompt kind (``relation=..., entity=..., ...``).

    A kind with no scripted reply fails that call (the test then sees it in
    :func:`kinds` and in the agent's failure count).
    """

    def respond(messages: list[dict[str, str]], params: dict[str, Any]) -> Any:
        kind = kind_of(messages)
        if kind not in replies:
            return AssertionError(f"no scripted {kind} reply")
        reply = replies[kind]
        return reply(messages[-1]["content"]) if callable(reply) else reply

    return ScriptedLLM(responder=respond)


def kinds(llm: ScriptedLLM) -> list[str]:
    """The kind of every call the double received, in order."""
    return [kind_of(messages) for messages, _ in llm.calls]


def choices(*picked: tuple[int, float]) -> str:
    """A well-formed choosing reply: ``{"choices": [{"id": .., "score": ..}, ...]}``."""
    import json

    return json.dumps({"choices": [{"id": i, "score": s} for i, s in picked]})
