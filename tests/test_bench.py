"""Benchmark metrics on hand-made data, dataset helpers, and one small end-to-end run."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from hygraph.bench.data import load_dataset, subset, synthetic
from hygraph.bench.metrics import (
    answer_in_context,
    growth_exponent,
    normalize_answer,
    percentile,
    question_positions,
    recall_at_k,
    wins_ties_losses,
)


def test_recall_at_k_known_ranking():
    ranked = ["p3", "p1", "p9", "p2"]
    gold = ["p1", "p2"]
    assert recall_at_k(ranked, gold, 1) == 0.0
    assert recall_at_k(ranked, gold, 2) == 0.5
    assert recall_at_k(ranked, gold, 4) == 1.0
    assert recall_at_k(ranked, gold, 10) == 1.0
    assert recall_at_k(ranked, [], 5) == 0.0
    assert recall_at_k(["p1", "p1"], ["p1", "p2"], 2) == 0.5


def test_answer_in_context_normalises_and_matches_whole_tokens():
    context = "## Passages\n[1] The Publix chain had 35 stores in Georgia, opened in 1935."
    assert answer_in_context(context, ["35"])
    assert not answer_in_context("Founded in 1935.", ["35"])
    assert answer_in_context("It is G. Stanley Hall's idea", ["G. Stanley Hall"])
    assert answer_in_context("the Beatles played", ["The Beatles"])
    assert not answer_in_context("anything", [""])
    assert normalize_answer("The  Quick, brown fox!") == "quick brown fox"


def test_percentile_and_growth_exponent():
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert math.isnan(percentile([], 50))
    assert growth_exponent([100, 200, 400], [1.0, 2.0, 4.0]) == pytest.approx(1.0)
    assert growth_exponent([100, 200, 400], [3.0, 12.0, 48.0]) == pytest.approx(2.0)
    assert growth_exponent([100, 1000], [5.0, 5.0]) == pytest.approx(0.0)
    assert math.isnan(growth_exponent([100], [1.0]))


def _tiny_dataset(root, sample_path):
    root.mkdir()
    docs = []
    for path in sorted(sample_path.glob("*.md")):
        title, _, body = path.read_text().partition("\n")
        docs.append({"id": path.name, "title": title.lstrip("# ").strip(), "text": body.strip()})
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    (root / "questions.jsonl").write_text((sample_path / "questions.jsonl").read_text())
    return load_dataset(root)


def test_subset_keeps_gold_and_synthetic_grows(tmp_path, sample_path):
    data = _tiny_dataset(tmp_path / "tiny", sample_path)
    assert data.n_documents == 12 and len(data.questions) == 10
    half = subset(data, 0.5, tmp_path / "half")
    gold = {s for q in data.questions for s in q.supporting_ids}
    kept = {json.loads(x)["id"] for x in half.corpus_path.read_text().splitlines()}
    assert gold <= kept
    big = synthetic(data, 40, tmp_path / "big")
    records = [json.loads(x) for x in big.corpus_path.read_text().splitlines()]
    assert len(records) == 40 and len({r["id"] for r in records}) == 40
    assert len(big.questions) == 10


def test_bench_end_to_end_on_the_sample(tmp_path, sample_path, capsys):
    """Two methods in their own processes over one shared index; reuse on the second run."""
    from hygraph.cli import main

    _tiny_dataset(tmp_path / "tiny", sample_path)
    out = tmp_path / "result.json"
    report = tmp_path / "report" / "bench.md"
    args = [
        "bench",
        "--data",
        str(tmp_path / "tiny"),
        "--methods",
        "vanilla,bm25",
        "--k",
        "1,3",
        "--work",
        str(tmp_path / "work"),
        "--out",
        str(out),
        "--report",
        str(report),
    ]
    assert main(args) == 0
    result = json.loads(out.read_text())
    main_run = result["main"]
    n_questions = len(main_run["methods"]["vanilla"]["rows"])
    assert main_run["documents"] == 12 and main_run["chunks"] >= 12  # long ones split
    vanilla = main_run["methods"]["vanilla"]
    assert set(vanilla["recall"]) == {"1", "3"}
    assert vanilla["recall"]["3"] >= vanilla["recall"]["1"] > 0
    assert 0 <= vanilla["answer_in_context"] <= 100
    assert vanilla["latency_ms"]["p50"] > 0 and vanilla["peak_rss_mb"] > 0
    assert set(vanilla["recall_by_type"]) == {"1hop", "2hop", "3hop"}
    assert main_run["base_build"]["reused"] is False
    text = report.read_text()
    assert "| vanilla |" in text and "| bm25 |" in text
    # The second latency pass: both methods in one process, taking turns, every question.
    turns = main_run["turns"]["methods"]
    assert list(turns) == ["vanilla", "bm25"] and main_run["turns"]["rounds"] == 1
    assert all(t["queries"] == n_questions and t["p50"] > 0 for t in turns.values())
    assert "Latency with the methods taking turns" in text and "p50 / vanilla's" in text
    capsys.readouterr()

    assert main(args) == 0  # second run reuses the index
    again = json.loads(out.read_text())
    assert again["main"]["base_build"]["reused"] is True
    assert again["main"]["methods"]["bm25"]["recall"] == main_run["methods"]["bm25"]["recall"]
    versus = main_run["methods"]["bm25"]["vs_baseline"]
    n = len(vanilla["rows"])
    assert versus["baseline"] == "vanilla"
    assert versus["wins"] + versus["ties"] + versus["losses"] == n
    assert "W/T/L vs vanilla @5" in text
    capsys.readouterr()

    # A subset of the questions, on the same (reused) index.
    assert main([*args, "--questions", "1-3,5"]) == 0
    part = json.loads(out.read_text())
    assert part["config"]["questions"] == "1-3,5"
    assert [r["id"] for r in part["main"]["methods"]["vanilla"]["rows"]] == [
        r["id"] for i, r in enumerate(vanilla["rows"]) if i in (0, 1, 2, 4)
    ]
    assert part["main"]["base_build"]["reused"] is True
    assert part["config"]["chunk_mode"] == "sentences"

    # Token windows are their own index beside the sentence-chunked one, never a reuse.
    assert main([*args, "--chunker", "tokens", "--questions", "1-2"]) == 0
    tokens = json.loads(out.read_text())
    assert tokens["config"]["chunk_mode"] == "tokens"
    assert tokens["main"]["base_build"]["reused"] is False
    modes = {
        json.loads((p / "manifest.json").read_text()).get("chunk_mode")
        for p in (tmp_path / "work").iterdir()
        if (p / "manifest.json").exists()
    }
    assert modes == {"sentences", "tokens"}
    assert "by tokens" in report.read_text()


def test_build_options_are_the_options_that_change_a_method_s_layers():
    from hygraph.methods.base import build_options

    assert build_options("hybrid-ppr") == {}
    assert build_options("hybrid-ppr:damping=0.5,protect_gap=0") == {}  # query time
    assert build_options("hybrid-ppr:fact_vector=triple,damping=0.5") == {
        "fact-vectors": {"fact_vector": "triple"}
    }
    assert build_options("hybrid-ppr:synonym_threshold=0.9") == {
        "synonyms": {"synonym_threshold": 0.9}
    }


def test_a_variant_that_changes_layers_is_benched_on_an_index_of_its_own(tmp_path, sample_path):
    """An index keeps one configuration per layer: a variant whose options change how its
    layers are built gets its own index, built as ``hygraph index --methods SPEC`` would,
    and is queried (and timed taking turns) there; the shared index keeps the defaults."""
    from hygraph.cli import main

    _tiny_dataset(tmp_path / "tiny", sample_path)
    out = tmp_path / "result.json"
    variant = "hybrid-ppr:fact_vector=triple"
    args = ["bench", "--data", str(tmp_path / "tiny"), "--methods", f"vanilla;hybrid-ppr;{variant}",
            "--k", "1,3", "--work", str(tmp_path / "work"), "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    run = json.loads(out.read_text())["main"]
    own = run["own_indexes"]
    assert list(own) == [variant]

    def fact_mode(index: str) -> str:
        manifest = json.loads((Path(index) / "manifest.json").read_text())
        return manifest["layers"]["fact-vectors"]["fact_vector"]

    assert fact_mode(own[variant]) == "triple" and fact_mode(run["index"]) == "passage"
    assert Path(f"{own[variant]}.cache").is_dir()  # its own embedding cache: its own costs
    assert all(m.get("status") != "failed" for m in run["methods"].values())
    assert run["methods"][variant]["build"]["seconds"] > 0  # its layers, built in its index
    assert list(run["turns"]["methods"]) == ["vanilla", "hybrid-ppr", variant]


def test_taking_turns_rotates_the_methods_question_by_question(monkeypatch, tmp_path):
    """No method always follows another's work: the order rotates with each question."""
    from hygraph.bench import turns as turns_module

    asked: list[tuple[str, str]] = []

    class Index:
        embedder = type("Cached", (), {"cache": object()})()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def method(self, name, config=None):
            return None

        def query(self, text, name, top_k, budget):
            asked.append((text, name))

    monkeypatch.setattr("hygraph.index.GraphIndex.open", lambda *a, **k: Index())
    spec = {"index": str(tmp_path), "methods": ["a", "b", "c"], "top_k": 5, "budget": 100,
            "rounds": 2, "questions": [{"question": "q1"}, {"question": "q2"}]}  # fmt: skip
    result = turns_module.turns(spec)
    timed = [(t, n) for t, n in asked if t != "warm up question"]
    assert [n for _, n in timed[:6]] == ["a", "b", "c", "b", "c", "a"]
    assert len(timed) == 12 and Index.embedder.cache is None  # each question, each round
    assert {n: r["queries"] for n, r in result["methods"].items()} == {"a": 4, "b": 4, "c": 4}


def test_question_selection_and_wins_ties_losses():
    assert question_positions("1-3, 5,4", 10) == [0, 1, 2, 3, 4]
    assert question_positions("51-100", 60) == list(range(50, 60))
    for bad in ("0-3", "5-2", "a-b", "x"):
        with pytest.raises(ValueError):
            question_positions(bad, 10)
    assert wins_ties_losses([1.0, 0.5, 0.0, 0.5], [0.5, 0.5, 0.5, 0.5]) == {
        "wins": 1,
        "ties": 2,
        "losses": 1,
    }


def test_bench_builds_on_a_postgresql_store(tmp_path, sample_path, postgres_server):
    """``--store``: each point's index keeps its graph in its own schema on the server,
    beside (never reusing) the SQLite one, with the same recall."""
    from hygraph.cli import main
    from hygraph.graph.postgres import split_url

    if postgres_server is None:
        pytest.skip("no PostgreSQL server (set HYGRAPH_TEST_POSTGRES or install postgresql)")
    _tiny_dataset(tmp_path / "tiny", sample_path)
    out = tmp_path / "result.json"
    args = ["bench", "--data", str(tmp_path / "tiny"), "--methods", "vanilla,hybrid-ppr",
            "--k", "1,3", "--work", str(tmp_path / "work"), "--out", str(out)]  # fmt: skip
    assert main(args) == 0
    sqlite = json.loads(out.read_text())["main"]
    assert main([*args, "--store", postgres_server]) == 0
    result = json.loads(out.read_text())["main"]
    assert result["base_build"]["reused"] is False and result["base_build"]["store_bytes"] > 0
    manifest = json.loads((Path(result["index"]) / "manifest.json").read_text())
    assert split_url(manifest["store"])[1].startswith("bench_")
    for name in ("vanilla", "hybrid-ppr"):
        assert result["methods"][name]["recall"] == sqlite["methods"][name]["recall"]


def test_scaling_carries_the_taking_turns_p50_and_its_exponent():
    from hygraph.bench.runner import scaling

    def point(chunks, p50, turns):
        method = {"latency_ms": {"p50": p50}, "peak_rss_mb": 100.0, "build": {"seconds": 1.0}}
        return {
            "label": f"n{chunks}", "chunks": chunks, "base_build": {"first_build": {}},
            "methods": {"vanilla": method},
            "turns": {"methods": {"vanilla": {"p50": turns}}} if turns else None,
        }  # fmt: skip

    out = scaling([point(1000, 10.0, 8.0), point(10000, 20.0, 16.0)])["methods"]["vanilla"]
    assert out["turns_p50_ms"] == [8.0, 16.0]
    assert out["exponent"]["turns_p50_ms"] == pytest.approx(math.log10(2.0), abs=1e-6)
    missing = scaling([point(1000, 10.0, 8.0), point(10000, 20.0, None)])["methods"]["vanilla"]
    assert "turns_p50_ms" not in missing and "turns_p50_ms" not in missing["exponent"]
