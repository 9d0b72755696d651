"""Generation: how an answer is made from the retrieved context.

``direct`` generation is one LLM call with the method's answer prompt; the prompt
styles are ``plain`` (answer from the evidence, citing items), ``cot``
(HyperGraphRAG's reasoning prompt, whose answer is read from ``<answer>`` tags) and
``noderag`` (NodeRAG's unified answer prompt). ``map_reduce`` generation (GraphRAG
global, CheapRAG: :mod:`hygraph.generation.map_reduce`) answers from every evidence
item of the context in scored parts, then one combining call; it needs the resources
(for the shared LLM fan-out) and the items, and reads its options from the method's
config.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from hygraph.errors import ConfigError

if TYPE_CHECKING:
    from hygraph.models.base import LLM, Message
    from hygraph.resources import Resources
    from hygraph.retrieval.evidence import Evidence

GENERATION_MODES = ("direct", "map_reduce")


def _plain() -> tuple[Callable, Callable[[str], str]]:
    from hygraph.prompts.answer import answer_messages

    return answer_messages, str.strip


def _cot() -> tuple[Callable, Callable[[str], str]]:
    from hygraph.prompts.hypergraph import cot_answer_messages, extract_answer

    return cot_answer_messages, extract_answer


def _noderag() -> tuple[Callable, Callable[[str], str]]:
    from hygraph.prompts.noderag import answer_messages

    return answer_messages, str.strip


def _hygrag() -> tuple[Callable, Callable[[str], str]]:
    from hygraph.prompts.hygrag import answer_messages

    return answer_messages, str.strip


ANSWER_PROMPTS: dict[str, Callable[[], tuple[Callable, Callable[[str], str]]]] = {
    "plain": _plain,
    "cot": _cot,
    "noderag": _noderag,
    "hygrag": _hygrag,
}


def _style(name: str) -> tuple[Callable, Callable[[str], str]]:
    try:
        return ANSWER_PROMPTS[name]()
    except KeyError:
        known = ", ".join(ANSWER_PROMPTS)
        raise ConfigError(f"unknown answer prompt {name!r}; known: {known}") from None


def answer_messages(style: str, question: str, context: str) -> list[Message]:
    """The chat messages that ask for an answer to ``question`` from ``context``."""
    return _style(style)[0](question, context)


def parse_answer(style: str, text: str) -> str:
    """The answer in a reply to :func:`answer_messages` of the same style."""
    return _style(style)[1](text)


def generate(
    llm: LLM,
    mode: str,
    style: str,
    question: str,
    context: str,
    *,
    res: Resources | None = None,
    items: Sequence[Evidence] = (),
    options: Any = None,
) -> str:
    """Answer ``question`` from the rendered ``context`` with generation ``mode``.

    ``map_reduce`` reads ``items`` (every evidence item, not only the rendered ones)
    through ``res`` and takes its options from ``options`` (the method's config).
    """
    if mode not in GENERATION_MODES:
        raise ConfigError(f"unknown generation mode {mode!r}; known: {', '.join(GENERATION_MODES)}")
    if mode == "map_reduce":
        from hygraph.generation.map_reduce import MapReduceOptions, map_reduce

        if res is None:
            raise ConfigError("map-reduce generation needs the index's resources")
        fields = {k: getattr(options, k) for k in MapReduceOptions.__dataclass_fields__
                  if hasattr(options, k)}  # fmt: skip
        return map_reduce(res, question, items, MapReduceOptions(**fields)).answer
    reply = llm.complete(answer_messages(style, question, context), temperature=0)
    return parse_answer(style, reply.text)
