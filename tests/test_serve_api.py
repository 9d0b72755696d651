"""``hygraph serve``'s JSON API, every endpoint through FastAPI's own test client.

The index is the bundled sample corpus built offline with the default methods (the
recommended ``hygraph-ppr``, ``vanilla``, ``bm25``) in a temporary folder; writes go to
a copy of it so the read-only tests see the corpus as built. The LLM, where one is
needed, is the scripted test double of ``test_llm`` (realistic replies, no network).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

fastapi = pytest.importorskip("fastapi")
from fastapi.testclient import TestClient  # noqa: E402

from hygraph import GraphIndex  # noqa: E402
from hygraph.graph.ppr_views import passage_walk  # noqa: E402
from hygraph.graph.view import graph_view  # noqa: E402
from hygraph.serve import API, Limits, create_app  # noqa: E402

QUESTION = "When did the Great Dunmere Flood happen?"


@pytest.fixture(scope="module")
def built(tmp_path_factory, minilm, sample_path) -> Path:
    path = tmp_path_factory.mktemp("serve") / "index"
    GraphIndex.build(
        sorted(sample_path.glob("*.md")), path, embedder=minilm, progress=False
    ).close()
    return path


@pytest.fixture(scope="module")
def client(built, minilm):
    index = GraphIndex.open(built, embedder=minilm, progress=False)
    app = create_app(index)
    with TestClient(app) as c:
        yield c
    app.state.jobs.close()
    index.close()


@pytest.fixture()
def writable(built, minilm, tmp_path):
    path = tmp_path / "copy"
    shutil.copytree(built, path)
    index = GraphIndex.open(path, embedder=minilm, progress=False)
    app = create_app(index, api_key="s3cret-key", limits=Limits(documents=3, body_bytes=50_000))
    with TestClient(app) as c:
        yield c, app
    app.state.jobs.close()
    index.close()


def _auth() -> dict[str, str]:
    return {"Authorization": "Bearer s3cret-key"}


def _finished(c: TestClient, job: dict, headers: dict) -> dict:
    for _ in range(600):
        got = c.get(f"{API}/jobs/{job['id']}", headers=headers).json()
        if got["status"] in ("done", "failed"):
            return got
        time.sleep(0.05)
    raise AssertionError("the job did not finish")


def test_progress_bars_report_to_the_listener_of_their_thread():
    from hygraph.progress import progress_bar, reporting

    seen = []
    with reporting(lambda desc, done, total: seen.append((desc, done, total))):
        for _ in progress_bar(range(3), total=3, desc="embedding", enabled=False):
            pass
        bar = progress_bar(None, total=2, desc="calls", enabled=False)
        bar.update(2)
        bar.close()
    assert seen[0] == ("embedding", 0, 3) and ("embedding", 3, 3) in seen
    assert seen[-1] == ("calls", 2, 2)
    plain = progress_bar(range(2), total=2, desc="x", enabled=False)
    assert list(plain) == [0, 1]  # no listener: the bar itself


def test_health_info_builds_and_openapi(client):
    assert client.get(f"{API}/health").json()["status"] == "ok"
    info = client.get(f"{API}/info").json()
    assert info["counts"]["documents"] == 12 and info["default_method"] == "hybrid-ppr"
    builds = client.get(f"{API}/builds").json()["builds"]
    assert builds and {"seconds", "usage"} <= set(builds[-1])
    spec = client.get("/openapi.json").json()
    assert spec["openapi"].startswith("3.") and f"{API}/retrieve" in spec["paths"]


def test_methods_and_a_description(client):
    body = client.get(f"{API}/methods").json()
    assert body["default"] == "hybrid-ppr"
    rows = {m["name"]: m for m in body["methods"]}
    assert rows["hybrid-ppr"]["recommended"] and rows["hybrid-ppr"]["built"]
    assert rows["vanilla"]["built"] and not rows["graphrag-local"]["built"]
    described = client.get(f"{API}/methods/hybrid-ppr").json()
    assert described["name"] == "hybrid-ppr" and described["steps"]
    assert client.get(f"{API}/methods/nope").json()["error"]["type"] == "not_found"


def test_retrieve_returns_passages_citations_and_the_graph(client):
    r = client.post(f"{API}/retrieve", json={"question": QUESTION, "top_k": 3})
    assert r.status_code == 200
    body = r.json()
    assert body["method"] == "hybrid-ppr" and len(body["passages"]) == 3
    first = body["passages"][0]
    assert first["rank"] == 1 and first["doc_id"] == "great-dunmere-flood.md" and first["text"]
    assert first["via"] == "method" and isinstance(first["graph_evidence"], list)
    scores = [p["score"] for p in body["passages"]]
    assert scores == sorted(scores, reverse=True)  # cosines, non-increasing down the list
    kinds = {n["kind"] for n in body["evidence"]["nodes"]}
    assert {"entity", "chunk"} <= kinds and body["evidence"]["edges"]
    plain = client.post(
        f"{API}/retrieve", json={"question": QUESTION, "method": "vanilla", "evidence": False}
    )
    assert plain.json()["evidence"] is None and plain.json()["method"] == "vanilla"


@pytest.mark.parametrize(
    ("payload", "status", "kind"),
    [
        ({"question": ""}, 400, "InputError"),
        ({"question": "x" * 2001}, 400, "InputError"),
        ({"question": QUESTION, "top_k": 0}, 400, "InputError"),
        ({"question": QUESTION, "top_k": 101}, 400, "InputError"),
        ({"question": QUESTION, "method": "graphrag-local"}, 400, "ConfigError"),
        ({"question": QUESTION, "method": "no-such"}, 400, "UnknownMethodError"),
        ({"question": 3}, 422, "malformed"),
        ({"questio": QUESTION}, 422, "malformed"),
    ],
)
def test_bad_requests_get_one_line_of_json(client, payload, status, kind):
    r = client.post(f"{API}/retrieve", json=payload)
    assert r.status_code == status
    body = r.json()
    assert set(body) == {"error"} and body["error"]["type"] == kind
    assert "\n" not in r.text and "Traceback" not in r.text


def test_filters_keep_passages_of_matching_documents(client):
    only = {"question": QUESTION, "top_k": 3, "filters": {"doc_id": {"$in": ["dunmere.md"]}}}
    body = client.post(f"{API}/retrieve", json=only).json()
    assert {p["doc_id"] for p in body["passages"]} == {"dunmere.md"}
    bad = client.post(
        f"{API}/retrieve", json={"question": QUESTION, "filters": {"year": {"$x": 1}}}
    )
    assert bad.status_code == 400 and "operator" in bad.json()["error"]["message"]


def test_query_answers_with_the_configured_llm(built, minilm):
    from doubles import ScriptedLLM

    llm = ScriptedLLM(["The Great Dunmere Flood happened in 1931."])
    index = GraphIndex.open(built, embedder=minilm, llm=llm, progress=False)
    app = create_app(index)
    try:
        with TestClient(app) as c:
            r = c.post(f"{API}/query", json={"question": QUESTION, "method": "vanilla",
                                             "top_k": 3})  # fmt: skip
            body = r.json()
            assert r.status_code == 200 and body["answer"].endswith("in 1931.")
            assert len(body["passages"]) == 3 and body["usage"]["llm_calls"] == 1
            assert QUESTION in llm.calls[0][0][-1]["content"]
    finally:
        app.state.jobs.close()
        index.close()


def test_query_without_an_llm_is_a_clear_400(client):
    r = client.post(f"{API}/query", json={"question": QUESTION})
    assert r.status_code == 400 and "LLM" in r.json()["error"]["message"]


def test_the_graph_around_an_entity(client):
    r = client.get(f"{API}/graph/entity", params={"name": "Great Dunmere Flood", "limit": 5})
    body = r.json()
    assert (
        body["nodes"][0]["role"] == "centre"
        and len([n for n in body["nodes"] if n["kind"] != "chunk"]) <= 5
    )
    assert any(e["kind"] == "mentions" for e in body["edges"])
    missing = client.get(f"{API}/graph/entity", params={"name": "Atlantis"})
    assert missing.status_code == 400 and "Atlantis" in missing.json()["error"]["message"]


def test_documents_are_listed_in_pages(client):
    page = client.get(f"{API}/documents", params={"offset": 10, "limit": 5}).json()
    assert page["total"] == 12 and len(page["documents"]) == 2
    assert {"id", "title", "chunks", "added_at"} <= set(page["documents"][0])


def test_the_page_and_its_libraries_are_served_from_the_package(client):
    page = client.get("/")
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert "/static/vendor/cytoscape.min.js" in page.text
    for asset in ("/static/app.js", "/static/style.css", "/static/vendor/cytoscape.min.js"):
        assert client.get(asset).status_code == 200, asset


def test_recall_from_a_bench_report_kept_beside_the_index(client, built):
    assert client.get(f"{API}/bench").status_code == 404
    folder = built / "bench"
    folder.mkdir()
    report = {
        "command": "hygraph bench ...",
        "date": "2026-11-26",
        "main": {
            "dataset": "sample",
            "methods": {
                "vanilla": {
                    "status": "ok",
                    "recall": {"2": 50.0, "5": 70.0},
                    "latency_ms": {"p50": 20.0},
                    "peak_rss_mb": 600.0,
                },
                "broken": {"status": "failed"},
            },
        },
    }
    (folder / "run.json").write_text(json.dumps(report))
    try:
        body = client.get(f"{API}/bench").json()
        assert body["file"] == "run.json" and list(body["methods"]) == ["vanilla"]
        assert body["methods"]["vanilla"]["recall"] == {"2": 50.0, "5": 70.0}
    finally:
        shutil.rmtree(folder)


def test_an_api_key_guards_every_call_but_health(writable):
    c, _ = writable
    assert c.get(f"{API}/health").status_code == 200
    r = c.get(f"{API}/info")
    assert r.status_code == 401 and r.json()["error"]["type"] == "unauthorized"
    assert c.get(f"{API}/info", headers={"X-API-Key": "wrong"}).status_code == 401
    assert c.get(f"{API}/info", headers={"X-API-Key": "s3cret-key"}).status_code == 200
    assert c.get(f"{API}/info", headers=_auth()).status_code == 200


def test_insert_and_delete_run_as_jobs_while_retrieval_answers(writable):
    c, _ = writable
    text = (
        "The Harrowby lighthouse keeper Orla Penhallow rowed the harbour pilot out in the "
        "storm of 1899. Orla Penhallow later founded the Harrowby Sea Rescue society."
    )
    r = c.post(
        f"{API}/documents",
        headers=_auth(),
        json={"documents": [{"id": "penhallow", "title": "Orla Penhallow", "text": text}]},
    )
    assert r.status_code == 202 and r.json()["status"] in ("queued", "running", "done")
    assert (
        c.post(f"{API}/retrieve", headers=_auth(), json={"question": QUESTION}).status_code == 200
    )
    done = _finished(c, r.json(), _auth())
    assert done["status"] == "done" and done["result"]["added"] == ["penhallow"]
    assert done["progress"]["stage"] and done["progress"]["done"] >= 1  # the build's bars
    found = c.post(
        f"{API}/retrieve",
        headers=_auth(),
        json={"question": "Who founded the Harrowby Sea Rescue society?", "top_k": 3},
    )
    assert found.json()["documents"][0] == "penhallow"
    assert c.get(f"{API}/documents", headers=_auth()).json()["total"] == 13
    gone = c.delete(f"{API}/documents/penhallow", headers=_auth())
    assert gone.status_code == 202 and _finished(c, gone.json(), _auth())["status"] == "done"
    assert c.get(f"{API}/documents", headers=_auth()).json()["total"] == 12
    assert c.delete(f"{API}/documents/penhallow", headers=_auth()).status_code == 404
    listed = c.get(f"{API}/jobs", headers=_auth()).json()["jobs"]
    assert [j["kind"] for j in listed if j["kind"] != "refresh"] == ["insert", "delete"]
    assert c.get(f"{API}/jobs/job-99", headers=_auth()).status_code == 404


def test_a_write_is_followed_by_a_refresh_of_what_queries_read(writable, monkeypatch):
    from hygraph.operators import passage_prior

    monkeypatch.setattr(passage_prior, "MIN_CHUNKS", 0)  # the walk matrix at any size
    monkeypatch.setattr(passage_prior, "REFRESH_SHARE", 2.0)  # an insert leaves it stale
    c, app = writable
    folder = app.state.index.path / "vector-matrices"
    one = {"documents": [{"id": "t", "text": "The tide mill of Dunmere."}]}
    job = c.post(f"{API}/documents", headers=_auth(), json=one).json()
    assert _finished(c, job, _auth())["status"] == "done"
    assert app.state.jobs.wait(timeout=120)
    kinds = [j["kind"] for j in c.get(f"{API}/jobs", headers=_auth()).json()["jobs"]]
    assert kinds == ["insert", "refresh"]
    index = app.state.index
    view = graph_view(index.resources.store)
    walk = passage_walk(view, keep=folder)
    settings = {"damping": 0.7, "synonyms": True, "pair_factor": 2.0}
    assert passage_prior.prior_matrix(index.resources, view, walk, **settings) is not None
    assert len(list(folder.glob("passage-walk-*.npz"))) == 1


def test_building_a_method_runs_as_a_job(writable):
    c, _ = writable
    unknown = c.post(f"{API}/methods/build", headers=_auth(), json={"methods": ["nope"]})
    assert unknown.status_code == 400
    job = c.post(f"{API}/methods/build", headers=_auth(), json={"methods": ["hybrid"]})
    assert job.status_code == 202
    done = _finished(c, job.json(), _auth())
    assert done["status"] == "done" and "hybrid" in done["result"]["methods"]
    rows = {m["name"]: m for m in c.get(f"{API}/methods", headers=_auth()).json()["methods"]}
    assert rows["hybrid"]["built"]


def test_uploads_and_limits(writable):
    c, _ = writable
    ok = c.post(
        f"{API}/documents/files",
        headers=_auth(),
        files=[
            (
                "files",
                ("tides.md", b"# Tides\nThe Harrowby tide runs twice daily.", "text/markdown"),
            )
        ],
    )
    assert ok.status_code == 202 and _finished(c, ok.json(), _auth())["status"] == "done"
    binary = c.post(
        f"{API}/documents/files",
        headers=_auth(),
        files=[("files", ("x.md", b"ab\x00cd", "text/markdown"))],
    )
    assert binary.status_code == 400 and "binary" in binary.json()["error"]["message"]
    wrong = c.post(
        f"{API}/documents/files",
        headers=_auth(),
        files=[("files", ("x.pdf", b"%PDF", "application/pdf"))],
    )
    assert wrong.status_code == 400
    many = {"documents": [{"text": f"doc {i}"} for i in range(4)]}
    assert c.post(f"{API}/documents", headers=_auth(), json=many).status_code == 400
    big = c.post(
        f"{API}/documents", headers=_auth(), json={"documents": [{"text": "word " * 20_000}]}
    )
    assert big.status_code == 413 and big.json()["error"]["type"] == "too_large"


def test_an_unexpected_failure_is_logged_not_shown(writable, monkeypatch, caplog):
    c, app = writable

    def broken(*args, **kwargs):
        raise RuntimeError("secret internals at /srv/x")

    monkeypatch.setattr(app.state.index, "query", broken)
    r = c.post(f"{API}/retrieve", headers=_auth(), json={"question": QUESTION})
    assert r.status_code == 500 and r.json() == {
        "error": {"type": "internal", "message": "internal error"}
    }
    assert "secret internals" not in r.text


def test_no_query_cache_keeps_no_question_on_disk(tmp_path, minilm):
    from hygraph.models.cache import DiskCache
    from hygraph.models.embedders import CachedEmbedder

    cache = DiskCache(tmp_path / "cache")
    embedder = CachedEmbedder(minilm, cache)
    embedder.cache_queries = False
    first = embedder.embed_query("Who rowed the pilot out in 1899?")
    assert cache.get_many([embedder._key("Who rowed the pilot out in 1899?", "query")]) == {}
    embedder.embed(["a document text"])  # documents are still cached
    assert cache.get_many([embedder._key("a document text", "doc")])
    assert first.shape == (minilm.dim,)


def test_retrieval_answers_while_a_long_insert_job_runs(writable):
    c, _ = writable
    words = "The harbour pilot of Harrowby kept the tide tables and logged every ship. "
    docs = [{"id": f"log-{i}", "text": f"Log {i}. " + words * 60} for i in range(3)]
    job = c.post(f"{API}/documents", headers=_auth(), json={"documents": docs}).json()
    answered_while_running = 0
    for _ in range(200):
        r = c.post(f"{API}/retrieve", headers=_auth(),
                   json={"question": QUESTION, "method": "vanilla", "evidence": False})  # fmt: skip
        assert r.status_code == 200
        status = c.get(f"{API}/jobs/{job['id']}", headers=_auth()).json()["status"]
        if status == "running":
            answered_while_running += 1
        if status in ("done", "failed"):
            break
    assert answered_while_running >= 1
    assert _finished(c, job, _auth())["status"] == "done"
