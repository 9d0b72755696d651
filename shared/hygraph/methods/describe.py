"""What a method is made of, for people: config fields, layers and recipe steps.

``hygraph methods --describe NAME`` prints it. Each config field comes with its
default, where the default comes from and what it means, both read from the field's
comment, which starts with a source tag and a colon::

    seed_passages: int = 10  # framework: TF-IDF seed passages (KGPQuery.py:16)

The tags (:data:`SOURCE_TAGS`): ``paper``, ``code`` (the method authors' code),
``framework`` (the unified framework's code, JayLZhou/GraphRAG), ``ours``, ``library``
(a library's default) and ``recipe`` (an option a recipe file declares). The rest of
the comment is the meaning, with the exact reference in parentheses. A long comment
goes on in comment lines right below the field, indented past the ``#`` (``#   ...``).
The tag is explicit on purpose: a source guessed from words in the comment was often
wrong. Fields declared without source code (a recipe file's options) carry their
tagged comments in the config class's ``field_comments``.
"""

from __future__ import annotations

import ast
import inspect
import io
import re
import textwrap
import tokenize
from dataclasses import MISSING, fields
from typing import Any

from hygraph.methods.base import get_method, layer_closure
from hygraph.operators.registry import available_operators

#: Source tag (what a field's comment starts with) → how ``--describe`` shows it.
SOURCE_TAGS = {
    "paper": "paper",
    "code": "authors' code",
    "framework": "framework code",
    "ours": "ours",
    "library": "library",
    "recipe": "recipe",
}
_TAGGED = re.compile(r"^([a-z]+):\s*(.*)$", re.DOTALL)
_GOES_ON = re.compile(r"^#\s{2,}\S")  # a comment line continuing the field above it


def _comments(config: type) -> dict[str, str]:
    """Field name → its source comment, nearest class first (see the module docstring)."""
    out: dict[str, str] = {}
    for cls in config.__mro__:
        for name, comment in vars(cls).get("field_comments", {}).items():
            out.setdefault(name, comment)
        try:
            source = textwrap.dedent(inspect.getsource(cls))
        except (OSError, TypeError):
            continue
        for name, comment in field_comments(source).items():
            out.setdefault(name, comment)
    return out


def field_comments(source: str) -> dict[str, str]:
    """Field name → comment, for the fields of the (first) class defined in ``source``.

    A field's comment is the comment on its line(s) (a default spanning lines
    included), continued by the comment lines right below it that are indented past
    the ``#``; a comment line with one space (``# -- section``) stands on its own.
    """
    tree = ast.parse(source)
    body = next((n.body for n in tree.body if isinstance(n, ast.ClassDef)), [])
    comments: dict[int, tuple[str, bool]] = {}  # line → (text, alone on its line)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = (tok.string, tok.line.strip().startswith("#"))
    out: dict[str, str] = {}
    for node in body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        end = node.end_lineno or node.lineno
        parts = [comments[n][0] for n in range(node.lineno, end + 1) if n in comments]
        if not parts:
            continue
        line = end + 1
        while line in comments and comments[line][1] and _GOES_ON.match(comments[line][0]):
            parts.append(comments[line][0])
            line += 1
        out[node.target.id] = " ".join(p.lstrip("#").strip() for p in parts)
    return out


def split_source(comment: str) -> tuple[str, str]:
    """``(source label, meaning)`` of a field comment; the label is "" without a known tag."""
    match = _TAGGED.match(comment.strip())
    if match and match.group(1) in SOURCE_TAGS:
        return SOURCE_TAGS[match.group(1)], match.group(2).strip()
    return "", comment.strip()


def source_of(comment: str) -> str:
    """Where a default comes from: the label of the comment's source tag ("" if none)."""
    return split_source(comment)[0]


def describe(name: str) -> dict[str, Any]:
    """The method's description, generation, fields, layers and steps as plain data."""
    cls = get_method(name)
    comments = _comments(cls.Config)
    config = cls.Config()
    rows = []
    for f in fields(cls.Config):
        default = getattr(config, f.name) if f.default is MISSING else f.default
        source, meaning = split_source(comments.get(f.name, ""))
        rows.append({"name": f.name, "default": default, "source": source, "meaning": meaning})
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
