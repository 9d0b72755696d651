"""``hygraph bench`` on documents of many chunks: document recall read at a depth that ranks
max(k) documents, chunk-level evidence recall, method specs with options and recipe files
in ``--methods``, and a failing method or peer reported without losing the others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hygraph.bench.data import load_dataset, parse_evidence
from hygraph.bench.metrics import evidence_ranks, evidence_recall_at_k
from hygraph.bench.report import render_markdown
from hygraph.bench.runner import is_method_spec, split_method_specs
from hygraph.bench.worker import deepen, one_line_error
from hygraph.errors import HygraphError

LONGDOCS = Path(__file__).parent / "data" / "longdocs"

GOOD_RECIPE = """\
name: bench-dense-bm25
description: dense and BM25 chunks fused by reciprocal rank (bench test)
layers: [chunks, bm25]
config: {top_k: 5, depth: 30, rrf_k: 60}
steps:
  - {op: chunk.vdb, params: {k: $depth, into: dense}}
  - {op: chunk.bm25, params: {k: $depth, into: lexical}}
  - {op: merge.rrf, params: {rankings: [dense, lexical], k: $rrf_k}}
  - {op: chunk.evidence, params: {k: $top_k}}
  - {op: merge.context, params: {sections: chunks, titles: {chunks: Passages}}}
"""

BAD_RECIPE = """\
name: bench-broken
layers: [chunks]
steps:
  - {op: chunk.nope}
"""

BOOM_PEER = '''\
"""A peer that loads, then fails on every question (for the bench's failure test)."""


class Boom:
    name = "boom"

    def build(self, index):
        return {"seconds": 0.0, "embeddings": 0}

    def retrieve(self, question, top_k):
        raise RuntimeError("the boom peer cannot retrieve")


def load_peer(name):
    return Boom()
'''


# --- method lists ------------------------------------------------------------------


def test_method_list_keeps_options_with_their_method():
    assert split_method_specs(["vanilla,hybrid:rrf_k=30,candidates=20,my.yaml"]) == [
        "vanilla",
        "hybrid:rrf_k=30,candidates=20",
        "my.yaml",
    ]
    # ';' and repeated flags separate methods too; repeats are run once.
    assert split_method_specs(["vanilla;bm25", "hybrid:rrf_k=30,candidates=20", "vanilla"]) == [
        "vanilla",
        "bm25",
        "hybrid:rrf_k=30,candidates=20",
    ]
    # A value may hold a colon; a recipe file may carry options.
    assert split_method_specs(["noderag:model=openai:gpt-4o,seed=1, r.yml:top_k=3,depth=9"]) == [
        "noderag:model=openai:gpt-4o,seed=1",
        "r.yml:top_k=3,depth=9",
    ]
    for bad in ("top_k=3", "vanilla,top_k=3", "hybrid:rrf_k=30;candidates=20"):
        with pytest.raises(HygraphError, match="belongs to no method"):
            split_method_specs([bad])


def test_recipe_files_are_methods_and_other_names_peers(tmp_path):
    recipe = tmp_path / "mine.txt"
    recipe.write_text("name: x\n")
    assert is_method_spec("hybrid:rrf_k=30")
    assert is_method_spec("not/there.yaml") and is_method_spec("r.json:top_k=3")
    assert is_method_spec(str(recipe))  # an existing file, whatever its suffix
    assert not is_method_spec("llamaindex-pg") and not is_method_spec("langchain-graph")


# --- depth, evidence -----------------------------------------------------------------


def _doc_of(chunk_ids):
    """Chunk ``"d3#1"`` belongs to document ``"d3"``; distinct documents in rank order."""
    return list(dict.fromkeys(c.split("#")[0] for c in chunk_ids))


def test_deepen_stops_at_once_when_the_first_ask_has_enough_documents():
    first = [f"d{i}#0" for i in range(10)]
    asked: list[int] = []
    depth = deepen(lambda k: asked.append(k) or [], _doc_of, first, 10, 10, 1000)
    assert (depth.documents, depth.top_k, depth.asks, asked) == (_doc_of(first), 10, 1, [])


def test_deepen_doubles_until_enough_documents_and_keeps_the_first_ranking():
    # Five chunks per document: ten chunks hold two documents.
    ranking = [f"d{i}#{j}" for i in range(30) for j in range(5)]
    asked: list[int] = []

    def ask(k):
        asked.append(k)
        return list(reversed(ranking[:k]))  # a deeper ask may order differently

    depth = deepen(ask, _doc_of, ranking[:10], 10, 10, 1000)
    assert asked == [20, 40, 80] and depth.top_k == 80 and depth.asks == 4
    assert depth.documents[:2] == ["d0", "d1"]  # the first ask's documents keep their places
    assert len(depth.documents) == 16


def test_deepen_respects_the_cap_and_a_method_that_has_no_more():
    ranking = [f"d{i}#{j}" for i in range(30) for j in range(5)]
    capped = deepen(lambda k: ranking[:k], _doc_of, ranking[:10], 10, 10, 25)
    assert capped.top_k == 25 and len(capped.documents) == 5
    exhausted = deepen(lambda k: ranking[:12], _doc_of, ranking[:10], 10, 10, 1000)
    # 12 chunks at top_k 20, still 12 at 40: nothing more to give, so it stops there.
    assert exhausted.asks == 3 and exhausted.top_k == 40 and len(exhausted.documents) == 3


def test_evidence_ranks_and_recall():
    chunks = ["The lock was  designed by\nOrrin Lathe.", "Nothing here.", "BORN IN TESSALY"]
    ranks = evidence_ranks(chunks, ["designed by Orrin Lathe", "born in Tessaly", "absent"])
    assert ranks == [1, 3, None]
    assert evidence_recall_at_k(ranks, 1) == pytest.approx(1 / 3)
    assert evidence_recall_at_k(ranks, 3) == pytest.approx(2 / 3)
    assert evidence_recall_at_k([], 3) == 0.0


def test_evidence_is_read_as_strings_or_facts(tmp_path):
    assert parse_evidence(["a", {"fact": "b"}, {"text": "c"}, ""]) == ["a", "b", "c"]
    assert parse_evidence(None) == [] and parse_evidence("one") == ["one"]
    with pytest.raises(TypeError):
        parse_evidence([{"source": "x"}])
    data = load_dataset(LONGDOCS)
    assert len(data.questions) == 8 and all(len(q.evidence) >= 2 for q in data.questions)
    assert data.questions[0].evidence[0].startswith("The Cobble Lock")  # from {"fact": ...}
    (tmp_path / "corpus.jsonl").write_text('{"id": "a", "text": "x"}\n')
    (tmp_path / "questions.jsonl").write_text('{"id": "q", "question": "?", "evidence": 3}\n')
    with pytest.raises(HygraphError, match="questions.jsonl:1"):
        load_dataset(tmp_path)


def test_one_line_error_names_the_type():
    assert one_line_error(ValueError("bad value\nmore detail")) == "ValueError: bad value"
    assert one_line_error(RuntimeError()) == "RuntimeError"


def test_report_shows_a_failed_method_even_when_it_is_first():
    ok = {
        "status": "ok",
        "peer": False,
        "recall": {"5": 50.0},
        "recall_by_type": {"2hop": {"5": 50.0, "n": 1}},
        "answer_in_context": 100.0,
        "context_tokens_mean": 10.0,
        "latency_ms": {"p50": 1.0, "p95": 2.0},
        "build": {"seconds": 0.0},
        "peak_rss_mb": 100.0,
        "depth": {"top_k_p50": 5.0, "top_k_max": 5, "documents_mean": 5.0, "short": 0},
        "rows": [{"id": "q1"}],
    }
    failed = {"status": "failed", "error": "ConfigError: a | b", "peer": True}
    result = {
        "date": "2026-01-01",
        "seconds": 1.0,
        "machine": {"cores": 1, "memory_gib": 1, "cpu": "x", "python": "3", "hygraph": "0"},
        "config": {
            "ks": [5],
            "chunk_size": 60,
            "chunk_overlap": 5,
            "extractor": "offline",
            "budget": 100,
            "query_cache": "off",
        },
        "main": {
            "dataset": "d",
            "documents": 1,
            "chunks": 1,
            "base_build": {"first_build": {}, "peak_rss_mb": 1, "index_bytes": 0, "reused": False},
            "methods": {"boom": failed, "vanilla": ok},
        },
    }
    text = render_markdown(result, [])
    row = next(line for line in text.splitlines() if line.startswith("| boom (peer) |"))
    assert "failed: ConfigError: a \\| b" in row
    header = next(line for line in text.splitlines() if line.startswith("| method | R@5"))
    assert row.count(" |") == header.count(" |")  # as many cells as the header
    assert "| vanilla | 50.0 |" in text and "1 questions" in text
    assert "2hop (n=1)" in text


# --- end to end ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def bench_work(tmp_path_factory) -> Path:
    """One work folder for the runs below, so the long-document index is built once."""
    return tmp_path_factory.mktemp("bench-depth")


def _bench(work: Path, methods: list[str], *extra: str) -> tuple[int, dict, str]:
    from hygraph.cli import main

    out, report = work / "result.json", work / "report" / "bench.md"
    args = ["bench", "--data", str(LONGDOCS), "--k", "2,5,10", "--chunk-size", "60"]
    args += ["--chunk-overlap", "20", "--work", str(work / "indexes")]
    args += ["--out", str(out), "--report", str(report), "--json"]
    for spec in methods:
        args += ["--methods", spec]
    code = main([*args, *extra])
    return code, json.loads(out.read_text()), report.read_text()


def test_long_documents_rank_ten_documents_and_report_evidence(bench_work, capsys):
    code, result, text = _bench(bench_work, ["vanilla"])
    capsys.readouterr()
    assert code == 0
    main = result["main"]
    assert main["documents"] == 16 and main["chunks"] >= 4 * 16  # every document 4+ chunks
    vanilla = main["methods"]["vanilla"]
    assert vanilla["status"] == "ok"
    assert vanilla["recall"]["10"] >= vanilla["recall"]["5"] >= vanilla["recall"]["2"]
    depth = vanilla["depth"]
    assert depth["short"] == 0 and depth["documents_mean"] >= 10
    assert depth["top_k_max"] > 10  # ten chunks of these documents hold fewer than ten
    for row in vanilla["rows"]:
        assert len(row["passages"]) == 10 and row["documents"] >= 10
        assert row["depth"] >= 10 and len(row["evidence_ranks"]) >= 2
    assert vanilla["evidence_questions"] == 8
    evidence = vanilla["evidence_recall"]
    assert set(evidence) == {"2", "5", "10"} and evidence["10"] >= evidence["2"] > 0
    assert result["config"]["timing"].startswith("the first ask")
    assert "Ranking depth" in text and "| E@2 | E@5 | E@10 |" in text


def test_method_options_recipes_and_failures_in_one_run(bench_work, capsys):
    good = bench_work / "dense-bm25.yaml"
    good.write_text(GOOD_RECIPE)
    bad = bench_work / "broken.yaml"
    bad.write_text(BAD_RECIPE)
    peers = bench_work / "fake" / "benchmarks"
    (peers / "peers").mkdir(parents=True)
    (peers / "__init__.py").write_text("")
    (peers / "peers" / "__init__.py").write_text(BOOM_PEER)
    hybrid = "hybrid:rrf_k=30,candidates=20"
    code, result, text = _bench(
        bench_work,
        [f"vanilla,{hybrid},{good}", f"{bad};boom"],
        "--peers",
        str(peers),
    )
    err = capsys.readouterr().err
    assert code == 1 and "boom (full): RuntimeError: the boom peer cannot retrieve" in err
    methods = result["main"]["methods"]
    assert list(methods) == ["vanilla", hybrid, str(good), str(bad), "boom"]
    for name in ("vanilla", hybrid, str(good)):
        assert methods[name]["status"] == "ok" and methods[name]["recall"]["10"] > 0
        assert not methods[name]["peer"]
    assert methods[hybrid]["vs_baseline"]["baseline"] == "vanilla"
    broken = methods[str(bad)]
    assert broken["status"] == "failed" and not broken["peer"]  # a recipe, not a peer
    assert broken["error"].startswith("ConfigError:") and "chunk.nope" in broken["error"]
    assert methods["boom"] == {
        "status": "failed",
        "error": "RuntimeError: the boom peer cannot retrieve",
        "peer": True,
    }
    assert f"| {hybrid} |" in text and f"| {good} |" in text
    assert f"| {bad} | failed: ConfigError:" in text
    assert "| boom (peer) | failed: RuntimeError: the boom peer cannot retrieve |" in text


def test_a_reused_index_is_measured_at_todays_defaults(bench_work, capsys):
    """Options an earlier version saved when it built a method do not leak into the figures."""
    code, first, _ = _bench(bench_work, ["hybrid"])
    assert code == 0
    manifest_path = Path(first["main"]["index"]) / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["methods"]["hybrid"]["dense_weight"] = 0.0  # as if an old default had been saved
    manifest_path.write_text(json.dumps(manifest))
    code, again, _ = _bench(bench_work, ["hybrid"])
    capsys.readouterr()
    assert code == 0
    rows = [[r["passages"] for r in run["main"]["methods"]["hybrid"]["rows"]]
            for run in (first, again)]  # fmt: skip
    assert rows[0] == rows[1]
