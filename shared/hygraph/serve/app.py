"""``hygraph serve``: one index over HTTP, a JSON API (``/v1``) and a web page (``/``).

A thin layer above :class:`~hygraph.index.GraphIndex` (it never reaches into layers or
the store): retrieval and answers, the methods and their descriptions, index info with
its build history and costs, documents (list, insert, delete) and the graph a method
used for a question or the graph around an entity, bounded in size. Inserting and
deleting run as jobs on one worker thread (:mod:`hygraph.serve.jobs`): one writer at a
time, the request returns the job at once, and retrieval keeps answering meanwhile.

Guards, all configurable (:class:`Limits`): an optional API key (``Authorization:
Bearer KEY`` or ``X-API-Key``), CORS origins (none by default), the question's length,
``top_k``, the request body's size and the documents per request. Every error is one
line of JSON, ``{"error": {"type": ..., "message": ...}}``, with the status that fits
(400 bad input, 401 no key, 404 unknown, 409 busy, 413 too large, 422 malformed); an
unexpected one is logged here and reaches the client as ``internal error`` only, never
as a stack trace.
"""

from __future__ import annotations

import hashlib
import logging
import secrets as token_compare
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, File, Query, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from starlette.exceptions import HTTPException

from hygraph import __version__
from hygraph.errors import ConfigError, HygraphError, IndexNotFoundError, InputError
from hygraph.ingest import Document
from hygraph.locks import IndexBusyError
from hygraph.methods.base import available_methods, get_method
from hygraph.passages import retrieve_passages
from hygraph.progress import reporting
from hygraph.secrets import redact
from hygraph.serve.jobs import JobRunner
from hygraph.serve.schemas import (
    BuildRequest,
    ErrorOut,
    InsertRequest,
    JobOut,
    QueryRequest,
    RetrieveRequest,
    RetrieveResponse,
)

log = logging.getLogger("hygraph.serve")

API = "/v1"
STATIC = Path(__file__).parent / "static"


@dataclass(frozen=True)
class Limits:
    """What one request may ask for."""

    question_chars: int = 2_000
    top_k: int = 100
    body_bytes: int = 20_000_000
    documents: int = 1_000
    graph_nodes: int = 200


def _status(err: HygraphError) -> int:
    if isinstance(err, IndexBusyError):
        return 409
    if isinstance(err, IndexNotFoundError):
        return 404
    return 400


def _error(status: int, kind: str, message: str) -> Any:
    return JSONResponse({"error": {"type": kind, "message": redact(message)}}, status_code=status)


def latest_bench(folder: Path) -> dict[str, Any] | None:
    """The newest readable ``hygraph bench`` JSON kept beside an index, summarised: data,
    date, command, and per method its recall at each depth, p50 latency and peak memory."""
    import json

    found = sorted(folder.glob("bench/*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    found += [folder / "bench.json"] if (folder / "bench.json").exists() else []
    for path in found:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            methods = data["main"]["methods"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        rows = {
            name: {
                "recall": {str(k): float(v) for k, v in (m.get("recall") or {}).items()},
                "p50_ms": (m.get("latency_ms") or {}).get("p50"),
                "peak_mb": m.get("peak_rss_mb"),
            }
            for name, m in methods.items() if isinstance(m, dict) and m.get("status") == "ok"
        }  # fmt: skip
        return {"file": path.name, "command": data.get("command"), "date": data.get("date"),
                "dataset": data["main"].get("dataset"), "methods": rows}  # fmt: skip
    return None


def create_app(
    index: Any,
    *,
    api_key: str | None = None,
    cors_origins: tuple[str, ...] = (),
    limits: Limits | None = None,
) -> Any:
    """The FastAPI application serving ``index`` (an open :class:`GraphIndex`)."""
    limits = limits or Limits()
    jobs = JobRunner()
    errors: dict[int | str, dict[str, Any]] = {
        code: {"model": ErrorOut} for code in (400, 401, 404, 409, 413, 422)
    }
    app = FastAPI(
        title="hygraph",
        version=__version__,
        description="Graph retrieval over one hygraph index: retrieve passages with the "
        "graph evidence that brought them, answer, manage documents, look at the graph.",
    )
    app.state.index, app.state.jobs, app.state.limits = index, jobs, limits

    if cors_origins:
        from fastapi.middleware.cors import CORSMiddleware

        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cors_origins),
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "X-API-Key", "Content-Type"],
        )

    @app.middleware("http")
    async def bounded(request: Request, call_next: Any) -> Any:
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limits.body_bytes):
            return _error(413, "too_large", f"the request body may hold {limits.body_bytes} bytes")
        try:
            return await call_next(request)
        except Exception:  # noqa: BLE001 - logged here; the client gets one line
            log.exception("request %s %s failed", request.method, request.url.path)
            return _error(500, "internal", "internal error")

    @app.exception_handler(HygraphError)
    async def hygraph_error(request: Request, err: HygraphError) -> Any:
        return _error(_status(err), type(err).__name__, str(err))

    @app.exception_handler(RequestValidationError)
    async def malformed(request: Request, err: RequestValidationError) -> Any:
        first = err.errors()[0] if err.errors() else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return _error(422, "malformed", f"{where}: {first.get('msg', 'invalid request')}")

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, err: HTTPException) -> Any:
        kind = {401: "unauthorized", 404: "not_found", 405: "method_not_allowed"}.get(
            err.status_code, "http_error"
        )
        return _error(err.status_code, kind, str(err.detail))

    @app.exception_handler(Exception)
    async def unexpected(request: Request, err: Exception) -> Any:
        log.exception("request %s %s failed", request.method, request.url.path)
        return _error(500, "internal", "internal error")

    def authorised(request: Request) -> None:
        if api_key is None:
            return
        given = request.headers.get("x-api-key") or ""
        auth = request.headers.get("authorization") or ""
        if auth.lower().startswith("bearer "):
            given = given or auth[7:].strip()
        if not token_compare.compare_digest(given.encode(), api_key.encode()):
            raise HTTPException(401, "an API key is needed (Authorization: Bearer KEY)")

    guarded = [Depends(authorised)]

    def check_question(body: RetrieveRequest | QueryRequest) -> None:
        if len(body.question) > limits.question_chars:
            raise InputError(f"the question may be {limits.question_chars} characters long")
        if body.top_k is not None and not 1 <= body.top_k <= limits.top_k:
            raise InputError(f"top_k must be between 1 and {limits.top_k}")

    def shown(result: Any, passages: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "method": result.method, "question": result.question, "passages": passages,
            "documents": list(dict.fromkeys(p["doc_id"] for p in passages if p["doc_id"])),
            "context": result.context, "context_tokens": result.context_tokens,
            "answer": result.answer, "evidence": result.evidence, "usage": result.usage,
            "trace": result.trace,
        }  # fmt: skip

    def passage_rows(rows: list[tuple[str, float, str, list[str]]]) -> list[dict[str, Any]]:
        """``(chunk id, score, via, graph evidence)`` rows with their texts and citations."""
        store = index.resources.store
        texts = store.get_chunks(c for c, *_ in rows)
        titles = store.document_titles(c.doc_id for c in texts.values())
        out = []
        for rank, (chunk_id, score, via, cited) in enumerate(rows, start=1):
            chunk = texts.get(chunk_id)
            out.append({
                "rank": rank, "chunk_id": chunk_id, "doc_id": chunk.doc_id if chunk else None,
                "title": titles.get(chunk.doc_id) if chunk else None,
                "text": chunk.text if chunk else "", "score": float(score), "via": via,
                "graph_evidence": cited,
            })  # fmt: skip
        return out

    # -------------------------------------------------------------------- reading

    @app.get(f"{API}/health", tags=["index"])
    def health() -> dict[str, Any]:
        """Whether the server is up, and over which index."""
        return {"status": "ok", "index": str(index.path), "version": __version__}

    @app.get(f"{API}/info", dependencies=guarded, responses=errors, tags=["index"])
    def info() -> dict[str, Any]:
        """The index: manifest, counts, vectors, disk size, the last build's cost report."""
        out = index.info()
        out["default_method"] = index.default_method
        return out

    @app.get(f"{API}/builds", dependencies=guarded, responses=errors, tags=["index"])
    def builds() -> dict[str, Any]:
        """Every build of the index, oldest first: time, documents, calls, tokens, stages."""
        return {"builds": list(index.manifest.builds)}

    @app.get(f"{API}/methods", dependencies=guarded, responses=errors, tags=["methods"])
    def methods() -> dict[str, Any]:
        """Every method hygraph knows, which the index has built, and the recommended one."""
        built = set(index.methods)
        rows = [
            {"name": n, "description": get_method(n).description, "built": n in built,
             "recommended": get_method(n).recommended, "query_llm": get_method(n).query_llm}
            for n in available_methods()
        ]  # fmt: skip
        return {"default": index.default_method, "methods": rows}

    @app.get(f"{API}/methods/{{name}}", dependencies=guarded, responses=errors, tags=["methods"])
    def method(name: str) -> dict[str, Any]:
        """One method described: what it does, its steps, its options and their sources."""
        from hygraph.methods.describe import describe

        if name not in available_methods():
            raise HTTPException(404, f"no method {name!r}")
        return describe(name)

    @app.post(f"{API}/retrieve", dependencies=guarded, responses=errors,
              response_model=RetrieveResponse, tags=["retrieval"])  # fmt: skip
    def retrieve(body: RetrieveRequest) -> dict[str, Any]:
        """Passages for a question, with scores, citations and the graph evidence.

        Exactly ``top_k`` passages (default 5) in the method's order, filled from dense
        search where the method ranks fewer (``via``), as the framework retrievers
        return them; ``filters`` keep passages of matching documents only.
        """
        check_question(body)
        found = retrieve_passages(
            index, body.question, body.method or index.default_method, body.top_k or 5,
            filters=body.filters, evidence=body.evidence,
        )  # fmt: skip
        rows = [(p.id or "", p.score, p.metadata.get("via", "method"),
                 list(p.metadata.get("graph_evidence", []))) for p in found.passages]  # fmt: skip
        return shown(found.result, passage_rows(rows))

    @app.post(f"{API}/query", dependencies=guarded, responses=errors,
              response_model=RetrieveResponse, tags=["retrieval"])  # fmt: skip
    def query(body: QueryRequest) -> dict[str, Any]:
        """Retrieval, then an answer from the configured LLM (400 without one)."""
        check_question(body)
        if index.llm is None:
            raise ConfigError("no LLM is configured: start the server with --llm MODEL")
        result = index.query(body.question, body.method, top_k=body.top_k, answer=True,
                             evidence=body.evidence)  # fmt: skip
        scores = {i.source_ids[0]: i.score for i in result.items
                  if i.kind == "chunk" and i.source_ids}  # fmt: skip
        k = body.top_k or len(result.chunks)
        rows = [(c, scores.get(c, 0.0), "method", []) for c in result.chunks[:k]]
        return shown(result, passage_rows(rows))

    @app.get(f"{API}/graph/entity", dependencies=guarded, responses=errors, tags=["graph"])
    def entity_graph(
        name: str = Query(..., min_length=1, max_length=500, description="entity id or name"),
        limit: int = Query(60, ge=1, description="nodes at most (bounded by the server)"),
    ) -> dict[str, Any]:
        """The graph around an entity: related entities and the chunks that mention it."""
        return index.neighbourhood(name, limit=min(limit, limits.graph_nodes))

    @app.get(f"{API}/bench", dependencies=guarded, responses=errors, tags=["index"])
    def bench() -> dict[str, Any]:
        """Recall by method and depth from the latest ``hygraph bench`` report kept beside
        the index (``<index>/bench/*.json`` or ``<index>/bench.json``; 404 when none)."""
        report = latest_bench(Path(index.path))
        if report is None:
            raise HTTPException(
                404,
                "no hygraph bench report beside the index (write one with: "
                "hygraph bench ... --out <index>/bench/run.json)",
            )
        return report

    @app.get(f"{API}/documents", dependencies=guarded, responses=errors, tags=["documents"])
    def documents(
        offset: int = Query(0, ge=0, le=10**12), limit: int = Query(100, ge=1, le=1000)
    ) -> Any:
        """A page of the documents in the index, in the order they were added."""
        return index.documents(offset, limit)

    # -------------------------------------------------------------------- writing (jobs)

    def refresh_later() -> None:
        """After a write, a job that writes again what query processes read from disk and
        the write left stale (the passage graph; the walk matrix, which a small insert
        leaves to a later build), unless one is waiting already. It runs on the writer
        thread after the writes before it, so retrieval is not held up by it."""
        if jobs.queued("refresh"):
            return

        def work(job: Any) -> dict[str, Any]:
            with reporting(job.report):
                index.insert()  # nothing new to add: writes what is missing for queries
            return {"methods": index.methods}

        jobs.submit("refresh", {}, work)

    def insert_job(docs: list[Any], methods: list[str] | None) -> Any:
        detail = {"documents": [d.id for d in docs][:50], "count": len(docs)}

        def work(job: Any) -> dict[str, Any]:
            with reporting(job.report):
                report = index.insert(docs, methods=methods)
            refresh_later()
            return report.to_dict()

        return jobs.submit("insert", detail, work)

    @app.post(f"{API}/documents", dependencies=guarded, responses=errors, status_code=202,
              response_model=JobOut, tags=["documents"])  # fmt: skip
    def add_documents(body: InsertRequest) -> dict[str, Any]:
        """Add or replace documents (a job: follow it at /v1/jobs/{id})."""
        if not body.documents or len(body.documents) > limits.documents:
            raise InputError(f"send between 1 and {limits.documents} documents")
        docs = [
            Document(d.id or hashlib.sha256(d.text.encode()).hexdigest()[:16], d.text,
                     title=d.title, metadata=dict(d.metadata))
            for d in body.documents
        ]  # fmt: skip
        return insert_job(docs, body.methods).to_dict()

    @app.post(f"{API}/documents/files", dependencies=guarded, responses=errors, status_code=202,
              response_model=JobOut, tags=["documents"])  # fmt: skip
    async def add_files(files: list[UploadFile] = File(...)) -> dict[str, Any]:  # noqa: B008
        """Add .txt or .md files (UTF-8; a job). Each file's name is its document id."""
        if not files or len(files) > limits.documents:
            raise InputError(f"send between 1 and {limits.documents} files")
        docs = []
        for upload in files:
            name = Path(upload.filename or "upload.txt").name
            if Path(name).suffix.lower() not in (".txt", ".md"):
                raise InputError(f"{name}: only .txt and .md files can be uploaded")
            raw = await upload.read(limits.body_bytes + 1)
            if b"\x00" in raw:
                raise InputError(f"{name}: a binary file, not text")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(f"{name}: not UTF-8 text") from None
            docs.append(Document(name, text, title=Path(name).stem, source=name))
        return insert_job(docs, None).to_dict()

    @app.post(f"{API}/methods/build", dependencies=guarded, responses=errors, status_code=202,
              response_model=JobOut, tags=["methods"])  # fmt: skip
    def build_methods(body: BuildRequest) -> dict[str, Any]:
        """Build methods over the indexed chunks (their layers; a job)."""
        from hygraph.methods.base import parse_method_spec

        if not body.methods:
            raise InputError("name at least one method to build")
        for spec in body.methods:
            parse_method_spec(spec)  # an unknown method fails here, not in the job

        def work(job: Any) -> dict[str, Any]:
            with reporting(job.report):
                report = index.insert(methods=body.methods)
            return {**report.to_dict(), "methods": index.methods}

        return jobs.submit("build", {"methods": body.methods}, work).to_dict()

    @app.delete(f"{API}/documents/{{doc_id}}", dependencies=guarded, responses=errors,
                status_code=202, response_model=JobOut, tags=["documents"])  # fmt: skip
    def delete_document(doc_id: str) -> dict[str, Any]:
        """Delete a document and what was derived only from it (a job)."""
        if index.resources.store.document_hash(doc_id) is None:
            raise HTTPException(404, f"no document {doc_id!r}")

        def work(job: Any) -> dict[str, Any]:
            removed = index.delete(doc_id)
            refresh_later()
            return {"doc_id": doc_id, "chunks": len(removed.chunk_ids)}

        return jobs.submit("delete", {"doc_id": doc_id}, work).to_dict()

    @app.get(f"{API}/jobs", dependencies=guarded, responses=errors, tags=["jobs"])
    def list_jobs() -> dict[str, Any]:
        """Every job remembered, oldest first."""
        return {"jobs": [j.to_dict() for j in jobs.all()]}

    @app.get(f"{API}/jobs/{{job_id}}", dependencies=guarded, responses=errors,
             response_model=JobOut, tags=["jobs"])  # fmt: skip
    def job(job_id: str) -> dict[str, Any]:
        """One job: its state, progress and result or error."""
        found = jobs.get(job_id)
        if found is None:
            raise HTTPException(404, f"no job {job_id!r}")
        return found.to_dict()

    # -------------------------------------------------------------------- the page

    @app.get("/", include_in_schema=False)
    def page() -> Any:
        html = STATIC / "index.html"
        if not html.exists():
            return JSONResponse({"api": f"{API}/", "openapi": "/openapi.json"})
        return FileResponse(html)

    if STATIC.exists():
        from fastapi.staticfiles import StaticFiles

        app.mount("/static", StaticFiles(directory=STATIC), name="static")

    return app
