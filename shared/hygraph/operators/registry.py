"""The operator registry: every operator by ``element.name``, with its parameters.

An operator is a plain function ``op(res, state, **params) -> None`` that reads and
extends the :class:`~hygraph.operators.state.State`. ``@operator("chunk.vdb",
needs=("chunks",))`` registers it with the layers it reads, so a recipe can be checked
before it runs (unknown operator, missing layer, unknown parameter) and described
without running it.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hygraph.errors import ConfigError

#: The modules that define the built-in operators, one per element.
OPERATOR_MODULES = (
    "hygraph.operators.question",
    "hygraph.operators.node",
    "hygraph.operators.relationship",
    "hygraph.operators.chunk",
    "hygraph.operators.bridge",
    "hygraph.operators.subgraph",
    "hygraph.operators.community",
    "hygraph.operators.tree",
    "hygraph.operators.community_select",
    "hygraph.operators.hirag",
    "hygraph.operators.merge",
    "hygraph.operators.ppr",
    "hygraph.operators.hygrag",
    "hygraph.operators.paths",
    "hygraph.operators.agents",
    "hygraph.operators.kgp",
    "hygraph.operators.steiner",
)


@dataclass(frozen=True)
class Operator:
    """A registered operator: its name, function, required layers and parameters."""

    name: str
    fn: Callable[..., None]
    needs: tuple[str, ...]
    summary: str

    @property
    def params(self) -> dict[str, Any]:
        """Parameter name → default (``inspect.Parameter.empty`` when required)."""
        return dict(_keyword_params(self.fn))


@functools.cache
def _keyword_params(fn: Callable[..., None]) -> dict[str, Any]:
    """``fn``'s keyword-only parameters and defaults, read once (every build resolves its
    recipes' settings, and reading a signature costs about a tenth of a millisecond)."""
    found = inspect.signature(fn).parameters.values()
    return {p.name: p.default for p in found if p.kind is inspect.Parameter.KEYWORD_ONLY}


_OPERATORS: dict[str, Operator] = {}
_loaded = False


def operator(name: str, *, needs: tuple[str, ...] = ()) -> Callable:
    """Decorator: register ``fn`` as operator ``name`` (``element.verb``)."""

    def wrap(fn: Callable[..., None]) -> Callable[..., None]:
        doc = (fn.__doc__ or "").strip().splitlines()
        _OPERATORS[name] = Operator(name, fn, tuple(needs), doc[0] if doc else "")
        return fn

    return wrap


def _load() -> None:
    global _loaded
    if not _loaded:
        for module in OPERATOR_MODULES:
            importlib.import_module(module)
        _loaded = True


def get_operator(name: str) -> Operator:
    """The operator ``name`` (a clear error listing the known ones otherwise)."""
    _load()
    try:
        return _OPERATORS[name]
    except KeyError:
        raise ConfigError(
            f"unknown operator {name!r}; known: {', '.join(sorted(_OPERATORS))}"
        ) from None


def available_operators() -> list[Operator]:
    _load()
    return [_OPERATORS[n] for n in sorted(_OPERATORS)]
