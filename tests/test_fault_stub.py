"""A small, fast fault campaign: LLM extraction against the loopback fault-injecting stub.

The stub (``benchmarks/reliability/stub_server.py``) answers 10% of requests with 429,
10% with 500, 10% by hanging past the client timeout and 10% with a malformed 200. The
index is rebuilt until no chunk is pending; after each build the report and the store
must agree, and the final index must equal a fault-free build.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks" / "reliability"))

from fault import campaign, make_llm  # noqa: E402
from stub_server import FaultPlan, StubServer, respond  # noqa: E402

from hygraph.demo import sample_documents, sample_questions  # noqa: E402

TIMEOUT = 0.3
NO_TRUNCATION = ("non-json", "no-choices", "garbage")


def _docs() -> list[Path]:
    # Six documents: enough chunks (sentence chunking) that the faulted first build
    # leaves some for the next.
    return sample_documents()[:6]


def _questions() -> list[str]:
    return [q["question"] for q in sample_questions()[:2]]


def test_stub_faults_are_deterministic_and_valid_replies_parse() -> None:
    from hygraph.extract.parse import parse_unified
    from hygraph.extract.records import parse_nary_records
    from hygraph.prompts.extraction import unified_messages
    from hygraph.prompts.hypergraph import nary_messages

    text = _docs()[0].read_text()
    extraction, malformed = parse_unified(respond(unified_messages(text)), "c")
    assert extraction.entities and extraction.relations and not malformed
    extraction, malformed = parse_nary_records(respond(nary_messages(text)), "c")
    assert extraction.facts and extraction.entities and not malformed

    def fates(seed: int) -> list[str]:
        stub = StubServer(FaultPlan(), seed=seed)
        return [stub._decide([{"role": "user", "content": f"m{i % 7}"}]) for i in range(200)]

    assert fates(3) == fates(3)
    assert fates(3) != fates(4)
    assert {f.split(":")[0] for f in fates(3)} >= {"ok", "429", "500", "timeout", "malformed"}


def test_stub_is_loopback_and_bounded() -> None:
    with StubServer(FaultPlan.none(), max_requests=2) as stub:
        assert stub.base_url.startswith("http://127.0.0.1:")
        llm = make_llm(stub.base_url, timeout=2.0, max_retries=0)
        assert llm.complete([{"role": "user", "content": "hi"}]).text == "OK"
        llm.complete([{"role": "user", "content": "hi"}])
        stub._thread.join(timeout=5)  # the second request stopped it
        assert stub.stopped_reason == "max_requests"
        assert not stub._thread.is_alive()


def test_fault_campaign_completes_with_consistent_counts(minilm, tmp_path: Path) -> None:
    plan = FaultPlan(malformed_kinds=NO_TRUNCATION, hang=TIMEOUT + 0.3)
    result = campaign(
        "llm",
        tmp_path,
        plan=plan,
        seed=1,
        max_runs=8,
        timeout=TIMEOUT,
        max_retries=1,
        docs=_docs(),
        questions=_questions(),
        embedder=minilm,
    )
    rows = result["rows"]
    assert sum(n for k, n in result["stub"].items() if k != "ok") > 0, "no fault was injected"
    assert len(rows) > 1, "the first build should leave chunks for the next"
    for row in rows:
        assert row["problems"] == [], row
        assert row["extracted_total"] + row["pending"] == row["chunks"]
    assert rows[-1]["pending"] == 0
    assert result["clean_failed"] == 0
    (compare,) = result["compare"]
    assert compare["counts_equal"], (compare["counts"], result["clean_counts"])
    assert not compare["missing_nodes"] and not compare["extra_nodes"]
    assert compare["rankings_equal"] == compare["rankings_total"]


def test_truncated_replies_are_not_taken_as_complete(minilm, tmp_path: Path) -> None:
    plan = FaultPlan(
        p_429=0.0, p_500=0.0, p_timeout=0.0, p_malformed=0.5, malformed_kinds=("truncated",)
    )
    result = campaign(
        "llm",
        tmp_path,
        plan=plan,
        seed=0,
        max_runs=6,
        timeout=2.0,
        max_retries=0,
        docs=_docs(),
        questions=_questions(),
        embedder=minilm,
    )
    assert result["stub"].get("malformed:truncated", 0) > 0
    (compare,) = result["compare"]
    assert not compare["missing_nodes"] and compare["counts_equal"]
