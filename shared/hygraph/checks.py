"""Argument checks of the :class:`~hygraph.index.GraphIndex` facade: one-line errors for slips.

A string where a list of sources is expected, a ``top_k`` that is not a positive whole
number, a LlamaIndex or LangChain model object passed to the core without its adapter:
each is caught before anything is written, with a message that names the mistake.
"""

from __future__ import annotations

import numbers
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hygraph.errors import ConfigError
from hygraph.ingest.documents import Document


def as_sources(
    sources: Iterable[str | Path | Document] | str | Path | Document,
) -> Iterable[str | Path | Document]:
    """A single file, folder or document as a list of one (a string is not a list of paths)."""
    if isinstance(sources, (str, os.PathLike, Document)):
        return [sources]
    return sources


def check_top_k(top_k: Any) -> int | None:
    """``top_k`` as an int; anything but a positive whole number is a one-line error."""
    if top_k is None:
        return None
    if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral) or top_k < 1:
        raise ConfigError(f"top_k must be a positive whole number, not {top_k!r}")
    return int(top_k)


#: What the core calls on a model object (see hygraph.models.base), and where the
#: framework adapters that provide it live.
_MODEL_INTERFACE = {
    "llm": (("name", "complete", "acomplete"), "LLM", "LlamaIndexLLM", "LangChainLLM"),
    "embedder": (
        ("name", "dim", "embed", "embed_query"),
        "embedder",
        "LlamaIndexEmbedder",
        "LangChainEmbedder",
    ),
}


def _has(obj: Any, attr: str) -> bool:
    """Whether ``obj`` has ``attr``, without running a property (``dim`` may call a model).

    Objects that compute attributes (``__getattr__``: proxies, wrappers) are asked.
    """
    if hasattr(type(obj), attr) or attr in getattr(obj, "__dict__", {}):
        return True
    return hasattr(type(obj), "__getattr__") and hasattr(obj, attr)


def check_model(obj: Any, arg: str) -> None:
    """Refuse, in one line, a model object that lacks the core interface of ``arg``.

    A LlamaIndex or LangChain model passed to the core directly is the usual slip: the
    message names its type and the adapter that wraps it.
    """
    if obj is None or isinstance(obj, str):
        return
    needs, role, llama_adapter, langchain_adapter = _MODEL_INTERFACE[arg]
    missing = [attr for attr in needs if not _has(obj, attr)]
    if not missing:
        return
    kind = type(obj).__name__
    top = type(obj).__module__.split(".")[0]
    if top == "llama_index":
        hint = f"wrap it: {arg}=llama_index_hygraph.models.{llama_adapter}({kind}(...))"
    elif top.startswith("langchain"):
        hint = f"wrap it: {arg}=langchain_hygraph.models.{langchain_adapter}({kind}(...))"
    else:
        hint = (
            f"wrap a LlamaIndex model with llama_index_hygraph.models.{llama_adapter} or a "
            f"LangChain one with langchain_hygraph.models.{langchain_adapter}, or pass a "
            "model name"
        )
    raise ConfigError(
        f"{arg}= got a {kind}, which is not a hygraph {role} (it lacks "
        f"{', '.join(missing)}); {hint}"
    )
