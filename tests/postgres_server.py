"""A PostgreSQL server for the store's contract tests, and fresh stores on both backends.

``HYGRAPH_TEST_POSTGRES`` names a server (``.ci/run`` starts one with
``scripts/postgres.sh``); without it the session starts its own when PostgreSQL's
programs are installed, and the PostgreSQL cases skip when they are not, unless
``HYGRAPH_REQUIRE_POSTGRES=1`` (CI) makes that a failure.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(tmp: str | None = None) -> Iterator[str | None]:
    """Yield a server URL (None when there is none to be had), stopping what it started."""
    url = os.environ.get("HYGRAPH_TEST_POSTGRES")
    if url:
        yield url
        return
    if not any(Path("/usr/lib/postgresql").glob("*/bin/initdb")):
        if os.environ.get("HYGRAPH_REQUIRE_POSTGRES") == "1":
            pytest.fail("PostgreSQL is required (HYGRAPH_REQUIRE_POSTGRES=1) but not installed")
        yield None
        return
    # Not under pytest's folder: the server runs as `postgres` when the tests run as
    # root, and pytest's folders admit their owner only.
    data = Path(tempfile.mkdtemp(prefix="hygraph-pg.", dir=tmp))
    env = {**os.environ, "PGDATA_DIR": str(data), "PGPORT_TEST": str(_free_port())}
    out = subprocess.run(
        ["bash", str(ROOT / "scripts" / "postgres.sh")],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if out.returncode != 0:
        pytest.fail(f"scripts/postgres.sh failed: {out.stderr.strip()[-2000:]}")
    found = dict(
        line.removeprefix("export ").split("=", 1)
        for line in out.stdout.splitlines()
        if line.startswith("export ")
    )
    try:
        yield found["HYGRAPH_TEST_POSTGRES"]
    finally:
        pg_ctl = next(Path("/usr/lib/postgresql").glob("*/bin/pg_ctl"))
        prefix = ["runuser", "-u", "postgres", "--"] if os.getuid() == 0 else []
        subprocess.run(
            [*prefix, str(pg_ctl), "-D", str(data), "-m", "immediate", "stop"],
            capture_output=True, check=False,
        )  # fmt: skip
        shutil.rmtree(data, ignore_errors=True)


def schema_url(server: str, name: str = "") -> str:
    """A URL naming a fresh schema on ``server`` (one index each)."""
    tag = f"t{uuid.uuid4().hex[:12]}{('_' + name) if name else ''}"
    return f"{server}{'&' if '?' in server else '?'}schema={tag}"
