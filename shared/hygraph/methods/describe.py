"""What a method is made of, for people: config fields, layers and recipe steps.

``hygraph methods --describe NAME`` prints it. Each config field comes with its
default, where the default comes from (the paper, the authors' code, or our choice,
as its source comment says) and the comment's one-line meaning.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import MISSING, fields
from typing import Any

from hygraph.methods.base import get_method, layer_closure
from hygraph.operators.registry import available_operators

_FIELD = re.compile(r"^\s+(\w+)\s*:\s*[^=#]+=\s*[^#]*#\s*(.+)$")
_SOURCES = (
    ("ours", ("ours", "our choice", "our ")),
    ("authors' code", ("reference code", "authors' code", "code ", "(code", "shipped config")),
    ("paper", ("paper", "spec ", "spec§", "§")),
    ("library", ("bm25s", "cormack", "hipporag", "default")),
)


def _comments(config: type) -> dict[str, str]:
    """Field name → the comment after its default, nearest class first."""
    out: dict[str, str] = {}
    for cls in config.__mro__:
        try:
            lines = inspect.getsource(cls).splitlines()
        except (OSError, TypeError):
            continue
        for line in lines:
            match = _FIELD.match(line)
            if match:
                out.setdefault(match.group(1), match.group(2).strip())
    return out


def source_of(comment: str) -> str:
    """Where a default comes from, read from its comment."""
    lowered = comment.lower()
    for label, marks in _SOURCES:
        if any(mark in lowered for mark in marks):
            return label
    return ""


def describe(name: str) -> dict[str, Any]:
    """The method's description, generation, fields, layers and steps as plain data."""
    cls = get_method(name)
    comments = _comments(cls.Config)
    config = cls.Config()
    rows = []
    for f in fields(cls.Config):
        default = getattr(config, f.name) if f.default is MISSING else f.default
        comment = comments.get(f.name, "")
        rows.append(
            {"name": f.name, "default": default, "source": source_of(comment), "meaning": comment}
        )
    return {
        "name": cls.name,
        "description": cls.description,
        "generation": cls.generation,
        "answer_prompt": cls.answer_prompt,
        "layers": list(cls.layers),
        "builds": layer_closure(cls.layers),
        "fields": rows,
        "steps": [
            {"op": s.op, "params": s.params, "when": s.when, "text": s.describe()}
            for s in cls.recipe
        ],
    }


def render(info: dict[str, Any]) -> str:
    """:func:`describe`'s data as text."""
    lines = [f"{info['name']}: {info['description']}", ""]
    lines.append(f"layers: {', '.join(info['layers'])}  (built: {', '.join(info['builds'])})")
    lines.append(f"generation: {info['generation']} (answer prompt: {info['answer_prompt']})")
    lines += ["", "config:"]
    width = max((len(r["name"]) for r in info["fields"]), default=4)
    for row in info["fields"]:
        source = f"[{row['source']}] " if row["source"] else ""
        lines.append(f"  {row['name']:<{width}}  {row['default']!r:<14} {source}{row['meaning']}")
    lines += ["", "recipe:"]
    lines += [f"  {n}. {step['text']}" for n, step in enumerate(info["steps"], start=1)]
    return "\n".join(lines)


def operators_table() -> list[dict[str, Any]]:
    """Every operator with the layers it reads, its parameters and its one-line summary."""
    return [
        {
            "name": op.name,
            "needs": list(op.needs),
            "params": {
                k: (None if v is inspect.Parameter.empty else v) for k, v in op.params.items()
            },
            "summary": op.summary,
        }
        for op in available_operators()
    ]
