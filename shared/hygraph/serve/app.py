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
unexpected one is logged and reaches the client as ``internal error`` only, never as a
stack trace (:mod:`hygraph.serve.errors`). The routes live by subject:
:mod:`hygraph.serve.retrieval`, :mod:`hygraph.serve.documents`, and here the index's
own (health, info, builds, methods, bench) and the page.
"""

from __future__ import annotations

import secrets as token_compare
from pathlib import Path
from typing import Any

from fastapi import Depends, FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse
from starlette.exceptions import HTTPException

from hygraph import __version__
from hygraph.methods.base import available_methods, get_method
from hygraph.serve.context import API, Limits, Served
from hygraph.serve.documents import add_document_routes
from hygraph.serve.errors import install_guards
from hygraph.serve.jobs import JobRunner
from hygraph.serve.retrieval import add_retrieval_routes
from hygraph.serve.schemas import ErrorOut

STATIC = Path(__file__).parent / "static"


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

    install_guards(app, limits.body_bytes)

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
    served = Served(index, jobs, limits, guarded, errors)
    add_retrieval_routes(app, served)
    add_document_routes(app, served)

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
