"""``hygraph serve``: an HTTP API and a web page over one index (see :mod:`hygraph.serve.app`)."""

from __future__ import annotations

from typing import Any

from hygraph.serve.app import create_app
from hygraph.serve.context import API, Limits

__all__ = ["API", "Limits", "create_app", "serve"]


def serve(
    index: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    api_key: str | None = None,
    cors_origins: tuple[str, ...] = (),
    limits: Limits | None = None,
    log_level: str = "warning",
) -> None:
    """Serve ``index`` (an open ``GraphIndex``) until interrupted (uvicorn, one process).

    Before listening, one retrieval with the index's default method loads the embedder
    and what queries read (matrices, the walk graph), so the first user does not wait
    for them.
    """
    import logging

    import uvicorn

    try:
        index.retrieve("warm up", top_k=1)
    except Exception as err:  # noqa: BLE001 - a failed warm-up only costs the first query time
        logging.getLogger("hygraph.serve").warning("warm-up retrieval failed: %s", err)
    app = create_app(index, api_key=api_key, cors_origins=cors_origins, limits=limits)
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level)
    finally:
        app.state.jobs.close()
