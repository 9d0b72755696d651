"""The examples run offline on the sample corpus."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_quickstart(tmp_path, minilm, capsys):
    passages = _load("quickstart").main(str(tmp_path / "index"))
    assert set(passages) == {"vanilla", "bm25", "hybrid"}
    # The question's first hop (the bridge's designer) is found by the dense baseline.
    assert "ilse-marrow.md" in passages["vanilla"]
    assert "entity" in capsys.readouterr().out


def test_llama_index_quickstart(tmp_path, minilm, capsys):
    pytest.importorskip("llama_index.core")
    found = _load("llama_index_quickstart").main(str(tmp_path / "index"))
    # The bridge's designer is among the passages; the reopened index finds the same ones.
    assert "ilse-marrow.md" in found["found"]
    assert found["inserted"] == ["note.md"] and "note.md" not in found["reopened"]
    assert set(found["found"]) <= set(found["reopened"])
    out = capsys.readouterr().out
    assert "fact" in out and "reopened with ['hypergraph-bridge']" in out


def test_readme_shows_the_llama_index_example():
    readme = (EXAMPLES.parent / "README.md").read_text()
    body = (EXAMPLES / "llama_index_quickstart.py").read_text().split('"""\n\n', 1)[1]
    assert body in readme
