"""Long work of the server (inserting documents, deleting one) as jobs a client can follow.

One worker thread runs the jobs in the order they came, so the index has one writer at a
time, and the request that started a job returns at once with its id. A job records
its state (``queued``, ``running``, ``done``, ``failed``), its times, its progress (the
stage the build reports and the items done in it, when it reports them) and its result
or a one-line error. Finished jobs are kept up to :data:`KEEP` (the oldest forgotten).
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from hygraph.errors import HygraphError
from hygraph.secrets import redact

log = logging.getLogger("hygraph.serve")

#: Jobs remembered (finished ones beyond this are forgotten, oldest first).
KEEP = 200


@dataclass
class Job:
    """One unit of long work and what is known about it."""

    id: str
    kind: str
    detail: dict[str, Any]
    status: str = "queued"
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    progress: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    error: str | None = None

    def report(self, stage: str, done: int, total: int | None) -> None:
        """Progress of the stage under way (a :func:`hygraph.progress.reporting` listener)."""
        self.progress = {"stage": stage, "done": done, "total": total}

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "kind": self.kind, "detail": self.detail, "status": self.status,
            "created": self.created, "started": self.started, "finished": self.finished,
            "progress": self.progress, "result": self.result, "error": self.error,
        }  # fmt: skip


class JobRunner:
    """Runs jobs one at a time on a worker thread (see the module docstring)."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hygraph-job")
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def submit(self, kind: str, detail: dict[str, Any], work: Callable[[Job], dict]) -> Job:
        """Queue ``work(job)`` (its return value becomes the job's result)."""
        job = Job(id=f"job-{next(self._ids)}-{int(time.time())}", kind=kind, detail=detail)
        with self._lock:
            self._jobs[job.id] = job
            self._forget_old()
        self._pool.submit(self._run, job, work)
        return job

    def _run(self, job: Job, work: Callable[[Job], dict]) -> None:
        job.status, job.started = "running", time.time()
        try:
            job.result = work(job)
            job.status = "done"
        except HygraphError as err:
            job.status, job.error = "failed", str(err)
        except Exception as err:  # noqa: BLE001 - a job fails; the server keeps serving
            log.exception("job %s failed", job.id)
            job.status, job.error = "failed", redact(f"{type(err).__name__}: {err}")
        finally:
            job.finished = time.time()

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def all(self) -> list[Job]:
        with self._lock:
            return list(self._jobs.values())

    def queued(self, kind: str) -> bool:
        """Whether a job of ``kind`` is waiting to start."""
        with self._lock:
            return any(j.kind == kind and j.status == "queued" for j in self._jobs.values())

    def busy(self) -> bool:
        """Whether a job is queued or running."""
        with self._lock:
            return any(j.status in ("queued", "running") for j in self._jobs.values())

    def _forget_old(self) -> None:
        finished = [i for i, j in self._jobs.items() if j.status in ("done", "failed")]
        for job_id in finished[: max(0, len(self._jobs) - KEEP)]:
            del self._jobs[job_id]

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until no job is queued or running (tests, shutdown); whether that happened."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.busy():
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
