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
    assert set(passages) == {"hybrid-ppr", "vanilla", "bm25"}
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


def test_langchain_quickstart(tmp_path, minilm, capsys):
    pytest.importorskip("langchain_core")
    found = _load("langchain_quickstart").main(str(tmp_path / "index"))
    # The bridge's designer is among the sources; the reopened index finds the same ones.
    assert "ilse-marrow.md" in found["found"]
    assert found["inserted"] == ["note.md"] and "note.md" not in found["reopened"]
    assert set(found["found"]) <= set(found["reopened"])
    out = capsys.readouterr().out
    assert "fact" in out and "scripted stand-in" in out
    assert "reopened with hypergraph-bridge" in out


def test_readme_shows_the_langchain_example():
    readme = (EXAMPLES.parent / "README.md").read_text()
    body = (EXAMPLES / "langchain_quickstart.py").read_text().split('"""\n\n', 1)[1]
    assert body in readme


@pytest.mark.filterwarnings("ignore:create_react_agent has been moved")
def test_langgraph_agent_example(tmp_path, minilm, capsys):
    pytest.importorskip("langgraph")
    run = _load("langgraph_agent").main(str(tmp_path / "index"))
    # Both hops of the question: the voyage, and the orchestra whose conductor wrote the tribute.
    hops = {"northern-shelf-expedition.md", "harrowby-tide-orchestra.md"}
    assert hops <= set(run["graph_documents"][:3]) and run["graph_context"].strip()
    assert run["tools_called"] == ["search_hypergraph_bridge"]
    assert hops <= set(run["tool_documents"]) and "Vantreul" in run["tool_context"]
    out = capsys.readouterr().out
    assert "search_bm25" in out and "scripted stand-in" in out


def test_readme_shows_the_langgraph_example():
    readme = (EXAMPLES.parent / "README.md").read_text()
    body = (EXAMPLES / "langgraph_agent.py").read_text().split('"""\n\n', 1)[1]
    assert body in readme
    assert readme.index("## LangChain") < readme.index("## LangGraph") < readme.index("## Methods")
