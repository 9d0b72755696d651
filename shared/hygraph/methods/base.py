"""What a retrieval method is, and the lazy registry that names them.

A method is four things: a ``Config`` dataclass whose defaults are its paper's
values (each with its source in a comment), the ``layers`` it reads (built once per
index and shared with every other method that names them), a ``recipe`` of operator
steps (:mod:`hygraph.operators`), and a generation mode with its answer prompt.
Built-in methods are found by name through :data:`METHOD_MODULES` (imported on first
use); ``@register`` adds any other, and a YAML or JSON recipe file registers itself
(:mod:`hygraph.methods.recipes`). Registered methods appear in the CLI, the benchmark
and both framework integrations with no further code.

**``top_k`` and depths.** ``top_k`` (a query's, else the config's) is only how many
passages come back: the final ``chunk.evidence`` ``k`` or the final cut of the passage
list. Every internal depth (seed passages, entry points, prize nodes, entities
searched, dense passages seeding a walk, ...) is a config field of its own with its
reference value as default, so asking for more passages never changes how a method
retrieves (:mod:`hygraph.operators.recipe` states the rule and its one allowance).

**Source tags.** Each config field's comment starts with where its default comes from,
then a colon, the meaning and the exact reference in parentheses: ``paper:``, ``code:``
(the method authors' code), ``framework:`` (the unified framework's code,
JayLZhou/GraphRAG), ``ours:`` or ``library:`` (a library's default). ``hygraph methods
--describe`` shows them (:mod:`hygraph.methods.describe`).
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from hygraph.errors import ConfigError, UnknownMethodError
from hygraph.operators.recipe import Step, run, validate
from hygraph.operators.state import State
from hygraph.retrieval.context import Context

if TYPE_CHECKING:
    from hygraph.models.base import Message
    from hygraph.resources import Resources


@dataclass
class MethodConfig:
    """Base of every method's configuration."""

    #: Tagged source comments of fields declared without source code (a recipe file's
    #: options), which ``--describe`` reads where a comment in the code would be.
    field_comments: ClassVar[dict[str, str]] = {}

    top_k: int = 5  # ours: passages returned, the final cut (a query's top_k replaces it)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any] | None) -> MethodConfig:
        values = dict(values or {})
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ConfigError(
                f"unknown option(s) for {cls.__qualname__}: {', '.join(unknown)}; "
                f"known: {', '.join(sorted(known))}"
            )
        return cls(**values)


def _coerce(name: str, raw: str, default: Any) -> Any:
    if isinstance(default, bool):
        lowered = raw.strip().lower()
        if lowered in ("1", "true", "yes", "on"):
            return True
        if lowered in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"option {name} takes true or false, not {raw!r}")
    try:
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
    except ValueError:
        raise ConfigError(f"option {name} takes a number, not {raw!r}") from None
    return raw


def parse_method_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """Split ``"name:key=value,key=value"`` into the method name and its typed options.

    Options set fields of the method's ``Config`` (values are converted to the
    field's type), so a variant or an ablation is named on the command line, in a
    benchmark or from Python without code: ``hypergraph:chunk_retrieval=false``.
    """
    name, _, rest = split_spec(spec)
    cls = get_method(name.strip())
    defaults = cls.Config()
    known = {f.name for f in fields(cls.Config)}
    options: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, raw = part.partition("=")
        key = key.strip()
        if not sep:
            raise ConfigError(f"method option {part!r} must look like name=value")
        if key not in known:
            raise ConfigError(
                f"unknown option {key!r} for method {cls.name}; known: {', '.join(sorted(known))}"
            )
        options[key] = _coerce(key, raw.strip(), getattr(defaults, key))
    return cls.name, options


def saved_options(cls: type[Method], saved: dict[str, Any]) -> dict[str, Any]:
    """A method's saved build options that its current ``Config`` still has.

    An index built by an earlier version may have saved an option that has since been
    renamed or removed; it is dropped with a warning rather than making the index
    unreadable (the method then uses the current default for it).
    """
    known = {f.name for f in fields(cls.Config)}
    dropped = sorted(set(saved) - known)
    if dropped:
        warnings.warn(
            f"method {cls.name}: saved option(s) {', '.join(dropped)} no longer exist and are "
            "ignored (the index was built by an earlier version)",
            stacklevel=3,
        )
    return {k: v for k, v in saved.items() if k in known}


class Method:
    """A retrieval method: Config + layers + recipe + generation (see the module docstring)."""

    name: ClassVar[str]
    Config: ClassVar[type[MethodConfig]] = MethodConfig
    description: ClassVar[str] = ""
    #: Layers the recipe reads (their requirements are built too). An instance may read
    #: fewer when its options leave a layer unused (``hybrid-ppr:synonyms=false``).
    layers: tuple[str, ...] = ("chunks",)
    #: The operator steps, run top to bottom (see :mod:`hygraph.operators.recipe`).
    recipe: ClassVar[tuple[Step, ...]] = ()
    #: How an answer is generated from the context: ``direct`` (one LLM call).
    generation: ClassVar[str] = "direct"
    #: The answer prompt (:mod:`hygraph.generation`): ``plain``, ``cot`` or ``noderag``.
    answer_prompt: ClassVar[str] = "plain"
    #: Whether a query needs an LLM (the build never does for today's methods).
    query_llm: ClassVar[str] = "optional"
    #: The method to use when none is named (exactly one: :data:`RECOMMENDED_METHOD`).
    recommended: ClassVar[bool] = False

    def __init__(self, config: MethodConfig | dict[str, Any] | None = None):
        if config is None or isinstance(config, dict):
            config = self.Config.from_dict(config)
        self.config = config

    @property
    def collections(self) -> tuple[str, ...]:
        """Vector collections of the layers this method reads, beyond the chunk vectors."""
        from hygraph.layers.base import BASE_LAYERS, get_layer

        names = [c for layer in layer_closure(self.layers) if layer not in BASE_LAYERS
                 for c in get_layer(layer).collections]  # fmt: skip
        return tuple(dict.fromkeys(names))

    @classmethod
    def check(cls) -> None:
        """Validate the recipe against the layers and config (a one-line error naming the step)."""
        validate(cls.recipe, layer_closure(cls.layers), cls.Config())

    def run(self, res: Resources, question: str, top_k: int | None = None) -> State:
        """Run the recipe for ``question``; the state holds the context and the trace."""
        state = State(question=question, top_k=top_k or self.config.top_k)
        return run(res, state, self.recipe, self.config)

    def retrieve(self, res: Resources, question: str, top_k: int | None = None) -> Context:
        return self.run(res, question, top_k).context

    def answer_messages(self, question: str, context: str) -> list[Message]:
        """The prompt that answers ``question`` from the rendered context."""
        from hygraph.generation import answer_messages

        return answer_messages(self.answer_prompt, question, context)

    def parse_answer(self, text: str) -> str:
        """The answer in the model's reply to :meth:`answer_messages`."""
        from hygraph.generation import parse_answer

        return parse_answer(self.answer_prompt, text)


def layer_closure(names: tuple[str, ...] | list[str]) -> list[str]:
    """The layers ``names`` need, with everything they require."""
    from hygraph.layers.base import layer_order

    return layer_order(names)


def build_options(spec: str) -> dict[str, dict[str, Any]]:
    """The options of a method spec that change how its layers are built: those naming a
    field of one of its layers' configs (``hybrid-ppr:fact_vector=triple``), by layer.
    The others apply at query time. An index keeps one configuration per layer, so a variant with
    build options needs an index of its own (``hygraph bench`` builds one)."""
    return layer_options(*parse_method_spec(spec))


def layer_options(name: str, options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Of a method's ``options``, those that configure its layers, by layer name."""
    from hygraph.layers.base import get_layer

    out: dict[str, dict[str, Any]] = {}
    for layer in layer_closure(get_method(name)(options).layers):
        known = {f.name for f in fields(get_layer(layer).Config)}
        if mine := {k: v for k, v in options.items() if k in known}:
            out[layer] = mine
    return out


def check_layer_options(
    spec: str, name: str, options: dict[str, Any], built: dict[str, dict[str, Any]]
) -> None:
    """Refuse a method spec whose options configure a layer an index already holds
    otherwise (``built``: the index's saved layer configurations). An index keeps one
    configuration per layer, and the spec's options would be silently ignored
    (``hybrid-ppr:fact_vector=triple`` in an index whose facts are pooled); such a
    variant belongs in an index of its own."""
    for layer, wanted in layer_options(name, options).items():
        saved = built.get(layer) or {}
        clash = {k: v for k, v in wanted.items() if k in saved and saved[k] != v}
        if clash:
            held = ", ".join(f"{k}={saved[k]}" for k in clash)
            raise ConfigError(
                f"{spec!r} configures the {layer} layer otherwise than this index holds it "
                f"({held}); an index keeps one configuration per layer: build this variant "
                "into an index of its own"
            )


#: The recommended method: built by default, and used when no method is named (the
#: demo, ``GraphIndex.query``, the CLI and both framework integrations).
RECOMMENDED_METHOD = "hybrid-ppr"

#: Built-in methods by name → the module that defines them (imported on first use).
METHOD_MODULES: dict[str, str] = {
    "vanilla": "hygraph.methods.vanilla",
    "bm25": "hygraph.methods.bm25",
    "hybrid": "hygraph.methods.hybrid",
    "hypergraph": "hygraph.methods.hypergraph",
    "hypergraph-bridge": "hygraph.methods.hypergraph",
    "noderag": "hygraph.methods.noderag",
    "noderag-fused": "hygraph.methods.noderag",
    "raptor": "hygraph.methods.raptor",
    "raptor-k": "hygraph.methods.raptor",
    "hipporag": "hygraph.methods.hipporag",
    "hipporag2": "hygraph.methods.hipporag",
    "fastgraphrag": "hygraph.methods.hipporag",
    "hybrid-ppr": "hygraph.methods.hybrid_ppr",
    "lightrag-local": "hygraph.methods.lightrag",
    "lightrag-global": "hygraph.methods.lightrag",
    "lightrag-hybrid": "hygraph.methods.lightrag",
    "hirag": "hygraph.methods.hirag",
    "hygrag": "hygraph.methods.hygrag",
    "graphrag-local": "hygraph.methods.graphrag",
    "graphrag-global": "hygraph.methods.graphrag",
    "vgraphrag": "hygraph.methods.graphrag",
    "cheaprag": "hygraph.methods.graphrag",
    "tog": "hygraph.methods.tog",
    "dalk": "hygraph.methods.dalk",
    "kgp": "hygraph.methods.kgp",
    "g-retriever": "hygraph.methods.g_retriever",
}
RECIPE_SUFFIXES = (".yaml", ".yml", ".json")

_REGISTRY: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Class decorator: make a method available by its ``name``."""
    _REGISTRY[cls.name] = cls
    return cls


def available_methods() -> list[str]:
    return sorted({*METHOD_MODULES, *_REGISTRY})


def get_method(name: str) -> type[Method]:
    """The method registered as ``name``, or the recipe in file ``name`` (a clear error else)."""
    if name in _REGISTRY:
        return _REGISTRY[name]
    if name in METHOD_MODULES:
        importlib.import_module(METHOD_MODULES[name])
        return _REGISTRY[name]
    if name.endswith(RECIPE_SUFFIXES):
        from hygraph.methods.recipes import load_recipe

        return load_recipe(Path(name))
    raise UnknownMethodError(
        f"unknown method {name!r}; available: {', '.join(available_methods())} "
        "(or a recipe file ending in .yaml, .yml or .json)"
    )


def split_spec(spec: str) -> tuple[str, str, str]:
    """``name:options`` split; a recipe path may itself hold a colon (``C:\\r.yaml``)."""
    for suffix in RECIPE_SUFFIXES:
        at = spec.find(suffix)
        if at > 0 and (at + len(suffix) == len(spec) or spec[at + len(suffix)] == ":"):
            end = at + len(suffix)
            return spec[:end], spec[end : end + 1], spec[end + 1 :]
    return spec.partition(":")
