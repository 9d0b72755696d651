"""Recipes: operator steps read top to bottom, checked before they run, traced as they do.

A :class:`Step` names an operator, its parameters and an optional condition. A
parameter written ``"$field"`` takes the value of the method's config field (``$top_k``
is the query's ``top_k`` when one is given). A condition ``"field"``, ``"!field"``,
``"field=value"`` or ``"field!=value"`` on config fields (``&`` joins clauses) decides
whether the step runs, so ablations and variants are options, not code.

**What ``top_k`` may change.** The query's ``top_k`` (:attr:`State.top_k`, the method's
``top_k`` field when the caller gives none) is only how many passages come back: the
``k`` of the final ``chunk.evidence`` or the final cut of a passage list. Every internal
depth (seed passages, entry points, prize nodes, entities searched, dense passages
seeding a walk, ...) is a config field of its own, defaulting to its reference value
with the source in a comment, so a method retrieves the same way whatever ``top_k``
the caller asks for, and the first passages of a ``top_k=5`` query are the first five
of a ``top_k=10`` one. The one allowance: a depth may be *widened* to ``top_k``
(``at_least_top_k``) when it could otherwise return fewer passages than asked, never
narrowed, so it changes nothing while ``top_k`` is within the configured depth.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hygraph.errors import ConfigError
from hygraph.operators.registry import get_operator
from hygraph.operators.state import State, TraceStep

if TYPE_CHECKING:
    from hygraph.resources import Resources


@dataclass(frozen=True)
class Step:
    """One operator call of a recipe."""

    op: str
    params: dict[str, Any] = field(default_factory=dict)
    when: str | None = None

    def describe(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.params.items())
        cond = f"  [when {self.when}]" if self.when else ""
        return f"{self.op}({args}){cond}"


def _field(config: Any, name: str, step: int, op: str) -> Any:
    if not hasattr(config, name):
        raise ConfigError(f"step {step} ({op}): no config field {name!r}")
    return getattr(config, name)


def resolve(value: Any, config: Any, state: State | None, step: int, op: str) -> Any:
    """A parameter with ``$field`` references replaced by config values (recursively).

    ``$top_k`` reads the query's ``top_k`` when a state is given: use it only for how
    many passages come back (see the module docstring), never for an internal depth.
    """
    if isinstance(value, str) and value.startswith("$"):
        name = value[1:]
        if name == "top_k" and state is not None:
            return state.top_k
        return _field(config, name, step, op)
    if isinstance(value, list | tuple):
        return [resolve(v, config, state, step, op) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, config, state, step, op) for k, v in value.items()}
    return value


def applies(when: str | None, config: Any, step: int = 0, op: str = "") -> bool:
    """Whether a step's condition holds for ``config`` (clauses joined by ``&`` all must)."""
    if not when:
        return True
    return all(_clause(part.strip(), config, step, op) for part in when.split("&"))


def _clause(when: str, config: Any, step: int, op: str) -> bool:
    for sep, wanted in (("!=", False), ("=", True)):
        if sep in when:
            name, value = (p.strip() for p in when.split(sep, 1))
            return (str(_field(config, name, step, op)).lower() == value.lower()) is wanted
    if when.startswith("!"):
        return not bool(_field(config, when[1:].strip(), step, op))
    return bool(_field(config, when, step, op))


def validate(steps: Sequence[Step], layers: Sequence[str], config: Any) -> None:
    """Raise a one-line :class:`ConfigError` naming the first bad step, if any."""
    for n, step in enumerate(steps, start=1):
        where = f"step {n} ({step.op})"
        try:
            op = get_operator(step.op)
        except ConfigError as err:
            raise ConfigError(f"{where}: {err}") from None
        missing = [layer for layer in op.needs if layer not in layers]
        if missing:
            raise ConfigError(f"{where} needs layer(s) {', '.join(missing)}, not in the recipe")
        known = op.params
        unknown = sorted(set(step.params) - set(known))
        if unknown:
            raise ConfigError(
                f"{where}: unknown parameter(s) {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known)) or 'none'}"
            )
        required = [k for k, d in known.items() if d is _EMPTY and k not in step.params]
        if required:
            raise ConfigError(f"{where}: missing parameter(s) {', '.join(required)}")
        resolve(step.params, config, None, n, step.op)
        for clause in (step.when or "").split("&"):  # every clause, not only until one fails
            if clause.strip():
                _clause(clause.strip(), config, n, step.op)


def settings(steps: Sequence[Step], config: Any) -> list[tuple[str, dict[str, Any]]]:
    """Each step that applies under ``config``: its operator and every parameter it runs
    with (the step's, resolved, over the operator's defaults), as known before a query.
    ``$top_k`` reads the config's."""
    out = []
    for n, step in enumerate(steps, start=1):
        if not applies(step.when, config, n, step.op):
            continue
        op = get_operator(step.op)
        params = {name: default for name, default in op.params.items() if default is not _EMPTY}
        params.update(resolve(step.params, config, None, n, step.op))
        out.append((step.op, params))
    return out


def method_settings(methods: Iterable[Any]) -> list[tuple[str, dict[str, Any]]]:
    """:func:`settings` of every step of ``methods`` (each with ``recipe`` and ``config``),
    in order: what a build, or a copy, keeps query matrices for."""
    return [s for m in methods for s in settings(m.recipe, m.config)]


def run(res: Resources, state: State, steps: Sequence[Step], config: Any) -> State:
    """Run the steps whose conditions hold, recording each in ``state.trace``."""
    for n, step in enumerate(steps, start=1):
        if not applies(step.when, config, n, step.op):
            continue
        op = get_operator(step.op)
        params = resolve(step.params, config, state, n, step.op)
        before = state.sizes()
        calls, tokens = res.tracker.llm_totals()
        start = time.perf_counter()
        op.fn(res, state, **params)
        seconds = time.perf_counter() - start
        calls_after, tokens_after = res.tracker.llm_totals()
        after = state.sizes()
        added = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
        state.trace.append(
            TraceStep(step.op, params, seconds, calls_after - calls, tokens_after - tokens, added)
        )
    return state


def _empty() -> Any:
    import inspect

    return inspect.Parameter.empty


_EMPTY = _empty()
