"""What a retrieval method is, and the registry that names them.

A method adds its own layer to an index (``build``, called with the chunks that
are new since its last build, so inserts are incremental), forgets what a
deleted document contributed (``delete``), and answers a question with a
:class:`~hygraph.retrieval.context.Context` (``retrieve``). Each method has a
``Config`` dataclass whose defaults are its paper's values.

Registering a method (``@register``) is all it takes for the CLI, the benchmark
and the framework integrations to offer it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar

from hygraph.errors import ConfigError, UnknownMethodError
from hygraph.retrieval.context import Context

if TYPE_CHECKING:
    from hygraph.graph.store import DeleteResult
    from hygraph.index import GraphIndex
    from hygraph.models.base import Message


@dataclass
class MethodConfig:
    """Base of every method's configuration."""

    top_k: int = 5

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
    name, _, rest = spec.partition(":")
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


class Method:
    """Base class of retrieval methods."""

    name: ClassVar[str]
    Config: ClassVar[type[MethodConfig]] = MethodConfig
    description: ClassVar[str] = ""
    #: Vector collections the method adds to the index (beyond the shared chunks).
    collections: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: MethodConfig | dict[str, Any] | None = None):
        if config is None or isinstance(config, dict):
            config = self.Config.from_dict(config)
        self.config = config

    def build(self, index: GraphIndex, chunk_ids: Sequence[str]) -> None:
        """Add this method's layer for ``chunk_ids`` (new chunks). Default: nothing to build."""

    def delete(self, index: GraphIndex, removed: DeleteResult) -> None:
        """Drop what a deleted document contributed. Default: nothing to drop."""

    def reset(self, index: GraphIndex) -> None:
        """Remove this method's layer so the next build starts over (:meth:`GraphIndex.rebuild`).

        Only methods whose inserts update their layer approximately need it (NodeRAG keeps
        its communities and attributes); the default leaves the layer as it is.
        """

    def retrieve(self, index: GraphIndex, question: str, top_k: int | None = None) -> Context:
        raise NotImplementedError

    def answer_messages(self, question: str, context: str) -> list[Message]:
        """The prompt that answers ``question`` from the rendered context (overridable)."""
        from hygraph.prompts.answer import answer_messages

        return answer_messages(question, context)

    def parse_answer(self, text: str) -> str:
        """The answer in the model's reply to :meth:`answer_messages`."""
        return text.strip()


_REGISTRY: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Class decorator: make a method available by its ``name``."""
    _REGISTRY[cls.name] = cls
    return cls


def available_methods() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def get_method(name: str) -> type[Method]:
    """The method class registered as ``name`` (raises UnknownMethodError otherwise)."""
    _load_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownMethodError(
            f"unknown method {name!r}; available: {', '.join(sorted(_REGISTRY))}"
        ) from None


def _load_builtin() -> None:
    # Importing the modules runs their @register decorators.
    from hygraph.methods import bm25, hybrid, hypergraph, noderag, vanilla  # noqa: F401
