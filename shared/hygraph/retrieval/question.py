"""The entities a question names: asked of the LLM when one is configured, else the rules.

Graph methods enter their graph at the entities a question names (HyperGraphRAG's
entity retrieval, NodeRAG's exact-match entry points). Each method has its own prompt
and reply parser; what they share is the choice of source and what happens when the
LLM fails: the failure is logged and reported as ``None``, so the method can fall back
(to the whole question, or to its vector entry points) instead of failing the query.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from hygraph.errors import ConfigError

if TYPE_CHECKING:
    from hygraph.index import GraphIndex
    from hygraph.models.base import Message

log = logging.getLogger("hygraph")


def question_entities(
    index: GraphIndex,
    question: str,
    mode: str,
    *,
    messages: Callable[[str], list[Message]],
    parse: Callable[[str, str], list[str]],
    label: str,
    fallback: str,
) -> list[str] | None:
    """Entity names in ``question``; ``None`` when the LLM failed.

    ``mode``: ``auto`` (the LLM if the index has one, else the offline rules), ``llm``
    (an error without an LLM) or ``offline``. ``messages`` builds the prompt and
    ``parse(reply, question)`` reads the names from the reply; ``label`` and
    ``fallback`` word the warning (which method, and what it does instead).
    """
    llm = index.llm if mode in ("auto", "llm") else None
    if mode == "llm" and llm is None:
        raise ConfigError("query_entities=llm needs an LLM: pass llm=... or set OPENAI_MODEL")
    if llm is not None:
        try:
            reply = llm.complete(messages(question), temperature=0)
            return parse(reply.text, question)
        except Exception as err:  # noqa: BLE001 - the caller falls back; a query never fails here
            log.warning("%s: question entities failed (%s); %s", label, err, fallback)
            return None
    from hygraph.extract.offline import find_entities

    return list(dict.fromkeys(m.name for m in find_entities(question)))
