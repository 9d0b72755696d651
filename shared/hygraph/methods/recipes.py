"""User recipes: a method declared in a YAML or JSON file, used by name with no code.

A recipe file names the method, the layers it reads, its options with their
defaults, and its operator steps::

    name: dense-plus-bm25
    description: dense and BM25 passages fused by reciprocal rank
    layers: [chunks, bm25]
    config: {top_k: 5, depth: 30, rrf_k: 60}
    steps:
      - {op: chunk.vdb, params: {k: $depth, into: dense}}
      - {op: chunk.bm25, params: {k: $depth, into: lexical}}
      - {op: merge.rrf, params: {rankings: [dense, lexical], k: $rrf_k}}
      - {op: chunk.evidence, params: {k: $top_k}}
      - {op: merge.context, params: {sections: chunks, titles: {chunks: Passages}}}

Passing the file's path wherever a method name goes (``methods=["my.yaml"]``, ``hygraph
index --method my.yaml``, ``HyGraphIndex.from_documents(..., method="my.yaml")``)
registers it; an index built with it keeps the recipe in its manifest, so later
queries use the plain name. The recipe is checked when it is loaded: an unknown
operator or parameter, a layer the steps need but the recipe does not list, or a
``$field`` that is not in ``config`` is a one-line error naming the step.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import field, make_dataclass
from pathlib import Path
from typing import Any

from hygraph.errors import ConfigError, InputError
from hygraph.methods.base import Method, MethodConfig, get_method, register
from hygraph.operators.recipe import Step

KEYS = {"name", "description", "layers", "config", "steps", "answer_prompt", "generation"}


def read_recipe_file(path: Path) -> dict[str, Any]:
    """The recipe in a YAML or JSON file, as a dict."""
    if not path.is_file():
        raise InputError(f"no recipe file {path}")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix == ".json":
            data = json.loads(text)
        else:
            import yaml

            data = yaml.safe_load(text)
    except Exception as err:  # noqa: BLE001 - any parse failure is the user's file
        raise ConfigError(f"recipe {path}: cannot parse ({err})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"recipe {path}: expected a mapping with name, layers and steps")
    return data


def load_recipe(path: Path) -> type[Method]:
    """Read, check and register the recipe in ``path``; returns its method class."""
    return recipe_method(read_recipe_file(path), origin=str(path))


def _steps(raw: Any, origin: str) -> tuple[Step, ...]:
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"recipe {origin}: steps must be a non-empty list")
    steps = []
    for n, item in enumerate(raw, start=1):
        if not isinstance(item, dict) or "op" not in item:
            raise ConfigError(f"recipe {origin}: step {n} needs an 'op'")
        extra = set(item) - {"op", "params", "when"}
        if extra:
            raise ConfigError(f"recipe {origin}: step {n} has unknown key(s) {sorted(extra)}")
        params = item.get("params") or {}
        if not isinstance(params, dict) or not all(isinstance(k, str) for k in params):
            raise ConfigError(f"recipe {origin}: step {n} params must be a mapping")
        if item.get("when") is not None and not isinstance(item["when"], str):
            raise ConfigError(f"recipe {origin}: step {n} when must be text like 'mode=x'")
        steps.append(Step(str(item["op"]), params, item.get("when")))
    return tuple(steps)


def recipe_method(data: dict[str, Any], origin: str = "recipe") -> type[Method]:
    """A registered method class for a recipe dict (checked; a one-line error otherwise).

    A recipe is the user's file: a field of the wrong type anywhere (``layers: true``,
    ``config: [1]``, an option named ``2x``) is a :class:`ConfigError` naming the file,
    never an exception from the code that reads it.
    """
    if not isinstance(data, Mapping):
        raise ConfigError(f"recipe {origin}: expected a mapping with name, layers and steps")
    try:
        return _recipe_method(data, origin)
    except ConfigError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as err:
        raise ConfigError(f"recipe {origin}: malformed ({type(err).__name__}: {err})") from None


def _field_types(data: Mapping[str, Any], origin: str) -> None:
    """The top-level fields have the types the file format says."""
    for key in ("name", "description", "answer_prompt", "generation"):
        if data.get(key) is not None and not isinstance(data[key], str):
            raise ConfigError(f"recipe {origin}: {key} must be text, not {data[key]!r:.60}")
    layers = data.get("layers")
    if layers is not None and (
        not isinstance(layers, list) or not all(isinstance(x, str) for x in layers)
    ):
        raise ConfigError(f"recipe {origin}: layers must be a list of layer names")
    config = data.get("config")
    if config is not None and not (
        isinstance(config, Mapping) and all(isinstance(k, str) and k.isidentifier()
                                            for k in config)
    ):  # fmt: skip
        raise ConfigError(f"recipe {origin}: config must map option names to values")


def _recipe_method(data: Mapping[str, Any], origin: str) -> type[Method]:
    _field_types(data, origin)
    unknown = set(data) - KEYS
    if unknown:
        raise ConfigError(f"recipe {origin}: unknown key(s) {', '.join(sorted(unknown))}")
    name = str(data.get("name") or "").strip()
    if not name or ":" in name or name.endswith((".yaml", ".yml", ".json")):
        raise ConfigError(f"recipe {origin}: needs a plain 'name' (no ':' or file suffix)")
    options = dict(data.get("config") or {})
    # The options the file declares show as "recipe" in --describe; an undeclared top_k
    # keeps the base config's comment.
    declared = {k: f"recipe: declared in {origin}" for k in options}
    options.setdefault("top_k", 5)
    config = make_dataclass(
        f"RecipeConfig_{name}",
        [(k, type(v), field(default=v)) for k, v in options.items() if not isinstance(v, list)],
        bases=(MethodConfig,),
        namespace={"field_comments": declared},
    )
    layers = tuple(data.get("layers") or ("chunks",))
    attrs = {
        "name": name,
        "Config": config,
        "description": str(data.get("description") or f"user recipe from {origin}"),
        "layers": layers,
        "recipe": _steps(data.get("steps"), origin),
        "answer_prompt": str(data.get("answer_prompt") or "plain"),
        "generation": str(data.get("generation") or "direct"),
        "recipe_source": dict(data),
    }
    cls = type(f"Recipe_{name}", (Method,), attrs)
    try:
        cls.check()
    except ConfigError as err:
        raise ConfigError(f"recipe {origin}: {err}") from None
    _refuse_builtin_clash(name)
    return register(cls)


def _refuse_builtin_clash(name: str) -> None:
    from hygraph.methods.base import METHOD_MODULES

    if name in METHOD_MODULES:
        raise ConfigError(f"recipe name {name!r} is a built-in method; choose another name")


def register_recipes(recipes: dict[str, dict[str, Any]]) -> None:
    """Register recipes kept in an index manifest (those already registered are kept)."""
    from hygraph.methods.base import available_methods

    known = set(available_methods())
    for name, data in recipes.items():
        if name not in known:
            recipe_method(data, origin=f"manifest recipe {name}")


__all__ = ["get_method", "load_recipe", "read_recipe_file", "recipe_method", "register_recipes"]
