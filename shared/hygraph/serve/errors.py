"""The server's guards and its one error shape: every error is one line of JSON.

``{"error": {"type": ..., "message": ...}}`` with the status that fits (400 bad input,
401 no key, 404 unknown, 409 busy, 413 too large, 422 malformed); an unexpected failure
is logged here and reaches the client as ``internal error`` only, never as a stack trace.
Messages are redacted (:func:`hygraph.secrets.redact`).
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from hygraph.errors import HygraphError, IndexNotFoundError
from hygraph.locks import IndexBusyError
from hygraph.secrets import redact

log = logging.getLogger("hygraph.serve")


def _status(err: HygraphError) -> int:
    if isinstance(err, IndexBusyError):
        return 409
    if isinstance(err, IndexNotFoundError):
        return 404
    return 400


def _error(status: int, kind: str, message: str) -> Any:
    return JSONResponse({"error": {"type": kind, "message": redact(message)}}, status_code=status)


def install_guards(app: FastAPI, body_bytes: int) -> None:
    """The request-size guard and the error handlers of ``app``."""

    @app.middleware("http")
    async def bounded(request: Request, call_next: Any) -> Any:
        length = request.headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > body_bytes):
            return _error(413, "too_large", f"the request body may hold {body_bytes} bytes")
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
