"""Extraction: one schema per chunk, filled by offline rules, LLM prompts or a precomputed file.

``resolve_extractor(spec, llm)`` turns a spec into an extractor:

- ``offline`` (default): rule-based, no model, no network; options
  ``offline:numbers=false`` (no quantities) and ``offline:counts=true`` (also counts
  and percentages);
- ``llm`` (alias ``llm-unified``): one LLM call per chunk fills the whole schema;
  ``llm:glean=N`` adds N gleaning passes;
- ``llm-twostep``: named-entity recognition, then OpenIE triples (HippoRAG/HyGRAG);
- ``llm-nary``: HyperGraphRAG's delimited n-ary records (knowledge segments with their
  scored entities), with 2 gleaning passes by default; ``llm-nary:glean=N`` sets them
  (0 = one call per chunk);
- ``llm-noderag``: NodeRAG's text decomposition (semantic units with their UPPER-CASE
  entities and relationships), one call per chunk plus a repair call per malformed
  relationship; no options;
- ``precomputed:FILE``: HippoRAG-style OpenIE records (``{"id", "entities", "triples"}``);
- ``none``: no extraction (chunks and vectors only).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from hygraph.errors import ConfigError
from hygraph.extract.keys import display_name, entity_key
from hygraph.extract.schema import (
    ChunkInput,
    Entity,
    Extraction,
    ExtractionStats,
    Extractor,
    Fact,
    Relation,
    Unit,
)

if TYPE_CHECKING:
    from hygraph.models.base import LLM

__all__ = [
    "ChunkInput",
    "Entity",
    "Extraction",
    "ExtractionStats",
    "Extractor",
    "Fact",
    "Relation",
    "Unit",
    "canonical_spec",
    "display_name",
    "entity_key",
    "resolve_extractor",
]

DEFAULT_EXTRACTOR = "offline"


def canonical_spec(spec: str) -> str:
    """The spec as recorded in a manifest (precomputed paths made absolute)."""
    if spec.startswith("precomputed:"):
        return "precomputed:" + str(Path(spec.split(":", 1)[1]).expanduser().resolve())
    if spec == "llm-unified":
        return "llm"
    if spec in ("llm-nary:glean=2", "llm-nary:"):
        return "llm-nary"  # 2 passes is its default
    if spec == "llm-noderag:":
        return "llm-noderag"
    return spec


def _options(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in filter(None, text.split(",")):
        key, sep, value = part.partition("=")
        if not sep:
            raise ConfigError(f"extractor option {part!r} must look like name=value")
        out[key.strip()] = value.strip()
    return out


def _gleaning(value: str) -> int:
    """A ``glean=N`` option as a count of passes (a whole number, 0 or more)."""
    try:
        passes = int(value)
    except ValueError:
        raise ConfigError(f"glean must be a whole number, got {value!r}") from None
    if passes < 0:
        raise ConfigError(f"glean must be 0 or more, got {passes}")
    return passes


def resolve_extractor(spec: str | Any | None, llm: LLM | None = None) -> Any:
    """An extractor for ``spec`` (see module docs); ``None`` for ``"none"``."""
    if spec is None:
        spec = DEFAULT_EXTRACTOR
    if not isinstance(spec, str):
        if isinstance(spec, Extractor):
            return spec
        raise ConfigError(f"not an extractor: {spec!r}")
    kind, _, rest = spec.partition(":")
    if kind == "none":
        return None
    if kind == "offline":
        from hygraph.extract.offline import OfflineExtractor

        flags = {k: v.lower() in ("1", "true", "yes") for k, v in _options(rest).items()}
        unknown = set(flags) - {"numbers", "counts"}
        if unknown:
            raise ConfigError(f"unknown offline extractor options: {', '.join(sorted(unknown))}")
        return OfflineExtractor(**flags)
    if kind == "precomputed":
        if not rest:
            raise ConfigError("use precomputed:FILE with the path of an extraction .jsonl")
        from hygraph.extract.precomputed import PrecomputedExtractor

        return PrecomputedExtractor(rest)
    if kind in ("llm", "llm-unified", "llm-twostep", "llm-nary", "llm-noderag"):
        if llm is None:
            raise ConfigError(
                f"extractor {spec!r} needs an LLM: pass llm=... (or --llm MODEL), or set "
                "OPENAI_MODEL (and OPENAI_BASE_URL for a local server)"
            )
        options = _options(rest)
        from hygraph.extract.llm import TwoStepLLMExtractor, UnifiedLLMExtractor

        if kind == "llm-twostep":
            if options:
                raise ConfigError("llm-twostep takes no options")
            return TwoStepLLMExtractor(llm)
        if kind == "llm-noderag":
            if options:
                raise ConfigError("llm-noderag takes no options")
            from hygraph.extract.noderag import NodeRAGLLMExtractor

            return NodeRAGLLMExtractor(llm)
        if kind == "llm-nary":
            from hygraph.extract.hyper import NaryLLMExtractor

            gleaning = _gleaning(options.pop("glean", "2"))
            if options:
                raise ConfigError(f"unknown llm-nary extractor options: {', '.join(options)}")
            return NaryLLMExtractor(llm, gleaning=gleaning)
        gleaning = _gleaning(options.pop("glean", "0"))
        if options:
            raise ConfigError(f"unknown llm extractor options: {', '.join(options)}")
        return UnifiedLLMExtractor(llm, gleaning=gleaning)
    raise ConfigError(
        f"unknown extractor {spec!r}: use offline, llm, llm-twostep, llm-nary, llm-noderag, "
        "precomputed:FILE or none"
    )
