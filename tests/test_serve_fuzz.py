"""Property-based fuzzing of ``hygraph serve``'s API from its own OpenAPI document.

Schemathesis reads ``/openapi.json`` from the ASGI application and generates requests for
every operation, valid and invalid (wrong types, missing fields, odd strings, huge
numbers), against an index of the bundled sample corpus (a copy: the write operations
queue real jobs). The property: no response is a server error (5xx), whatever was sent,
and every error body is the one-line JSON the API documents. Each operation runs
``FUZZ_EXAMPLES`` cases (``HYGRAPH_FUZZ_EXAMPLES`` changes it); the counts are printed.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis.errors import Unsatisfiable  # noqa: E402

from hygraph import GraphIndex  # noqa: E402
from hygraph.serve import create_app  # noqa: E402

FUZZ_EXAMPLES = int(os.environ.get("HYGRAPH_FUZZ_EXAMPLES", "25"))
SEEN: Counter = Counter()


@pytest.fixture(scope="module")
def fuzzed_app(tmp_path_factory, minilm, sample_path):
    path = tmp_path_factory.mktemp("fuzz") / "index"
    GraphIndex.build(sorted(sample_path.glob("*.md")), path, embedder=minilm,
                     progress=False).close()  # fmt: skip
    index = GraphIndex.open(path, embedder=minilm, progress=False)
    app = create_app(index)
    yield app
    app.state.jobs.wait(timeout=300)
    app.state.jobs.close()
    index.close()
    shutil.rmtree(path, ignore_errors=True)
    print(f"\nfuzzed {sum(SEEN.values())} requests: " +
          ", ".join(f"{k} {v}" for k, v in sorted(SEEN.items())))  # fmt: skip


def _operations(app):
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    return [result.ok() for result in schema.get_all_operations()]


@pytest.mark.parametrize("mode", ["positive", "negative"])
def test_no_request_gets_a_server_error(fuzzed_app, mode):
    from schemathesis import GenerationMode

    failures = []
    for operation in _operations(fuzzed_app):
        try:
            strategy = operation.as_strategy(GenerationMode(mode))
        except Exception:  # noqa: BLE001 - an operation with nothing invalid to send
            continue

        @settings(max_examples=FUZZ_EXAMPLES, deadline=None, derandomize=True,
                  suppress_health_check=list(HealthCheck), database=None)  # fmt: skip
        @given(case=strategy)
        def run(case):
            response = case.call()
            SEEN[f"{response.status_code // 100}xx"] += 1
            if response.status_code >= 500:
                failures.append((case.method, case.path, response.text[:300]))
                return
            if response.status_code >= 400:
                body = json.loads(response.text)
                assert set(body) == {"error"} and {"type", "message"} <= set(body["error"])
                assert "\n" not in response.text

        try:
            run()
        except Unsatisfiable:  # nothing invalid can be sent to it (no parameters, no body)
            continue
        SEEN[f"operations ({mode})"] += 1
    assert not failures, failures[:5]
