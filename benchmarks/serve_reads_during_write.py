"""Retrieval latency of ``hygraph serve`` while an insert job runs, against an idle server.

Through FastAPI's test client over a copy of an index: 30 ``POST /v1/retrieve`` calls on
an idle server, then an insert job of ``--docs`` documents (about 6,000 characters each)
and retrieve calls one after another until the job ends. Prints the median and the
largest latency of both, and how many calls were answered while the job ran.

    .venv/bin/hygraph demo --index /tmp/sample-index > /dev/null
    .venv/bin/python benchmarks/serve_reads_during_write.py --index /tmp/sample-index
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--index", type=Path, required=True, help="an index to copy")
    parser.add_argument("--method", default="hybrid-ppr")
    parser.add_argument("--docs", type=int, default=20)
    args = parser.parse_args()

    from fastapi.testclient import TestClient

    from hygraph import GraphIndex
    from hygraph.serve import Limits, create_app

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "index"
        shutil.copytree(args.index, copy)
        index = GraphIndex.open(copy, progress=False)
        app = create_app(index, limits=Limits(documents=max(1000, args.docs)))
        client = TestClient(app)
        ask = {"question": "Who founded the shipyard?", "method": args.method, "evidence": False}

        def latency() -> float:
            t = time.perf_counter()
            if client.post("/v1/retrieve", json=ask).status_code != 200:
                raise RuntimeError("retrieve failed")
            return 1000 * (time.perf_counter() - t)

        for _ in range(3):
            latency()
        idle = [latency() for _ in range(30)]
        line = "The harbour pilot kept the tide tables and logged every ship that came in. "
        docs = [{"id": f"log-{i}", "text": f"Log {i}. " + line * 80} for i in range(args.docs)]
        job = client.post("/v1/documents", json={"documents": docs}).json()
        busy = []
        while client.get(f"/v1/jobs/{job['id']}").json()["status"] in ("queued", "running"):
            busy.append(latency())
        status = client.get(f"/v1/jobs/{job['id']}").json()["status"]
        app.state.jobs.wait(timeout=600)
        app.state.jobs.close()
        index.close()
    print(f"idle: p50 {statistics.median(idle):.1f} ms, max {max(idle):.1f} ms (30 calls)")
    print(f"during the insert job ({status}): {len(busy)} calls answered, "
          f"p50 {statistics.median(busy):.1f} ms, max {max(busy):.1f} ms")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
