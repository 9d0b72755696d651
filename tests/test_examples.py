"""The examples run offline on the sample corpus."""

from __future__ import annotations

import importlib.util
from pathlib import Path

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
