"""Cost accounting: LLM calls, tokens, embeddings, wall and CPU time per build stage.

A :class:`UsageTracker` is shared by the models and the build pipeline. Code marks
the stage it is in with ``with tracker.stage("embed"):``; model wrappers call
:meth:`UsageTracker.record_llm` / :meth:`UsageTracker.record_embeddings`, which
charge the current stage (a context variable, so concurrent asyncio tasks started
inside a stage are charged to it too).
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields

_current_stage: contextvars.ContextVar[str] = contextvars.ContextVar(
    "hygraph_stage", default="other"
)


@dataclass
class StageUsage:
    """Counters for one stage."""

    seconds: float = 0.0
    #: CPU seconds of the whole process (every thread) while the stage ran: unlike
    #: ``seconds``, not lengthened by other programs sharing the machine (stages running
    #: at once in several threads each count the other's CPU too).
    cpu_seconds: float = 0.0
    llm_calls: int = 0
    llm_cached_calls: int = 0
    llm_failed_calls: int = 0
    llm_retries: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    embeddings: int = 0
    embeddings_cached: int = 0

    def add(self, other: StageUsage) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass
class UsageTracker:
    """Thread-safe per-stage usage counters with a JSON-friendly report."""

    stages: dict[str, StageUsage] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _open: list[tuple[str, float, float]] = field(default_factory=list, repr=False)

    def _get(self, stage: str | None) -> StageUsage:
        name = stage or _current_stage.get()
        if name not in self.stages:
            self.stages[name] = StageUsage()
        return self.stages[name]

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Charge everything inside the block to ``name`` and time it."""
        token = _current_stage.set(name)
        opened = (name, time.perf_counter(), time.process_time())
        with self._lock:
            self._open.append(opened)
        try:
            yield
        finally:
            elapsed = time.perf_counter() - opened[1]
            cpu = time.process_time() - opened[2]
            _current_stage.reset(token)
            with self._lock:
                self._open.remove(opened)
                usage = self._get(name)
                usage.seconds += elapsed
                usage.cpu_seconds += cpu

    def record_llm(
        self,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        *,
        cached: bool = False,
        failed: bool = False,
        retries: int = 0,
    ) -> None:
        with self._lock:
            usage = self._get(None)
            if cached:
                usage.llm_cached_calls += 1
            elif failed:
                usage.llm_failed_calls += 1
            else:
                usage.llm_calls += 1
                usage.prompt_tokens += prompt_tokens
                usage.completion_tokens += completion_tokens
            usage.llm_retries += retries

    def record_embeddings(self, computed: int, cached: int = 0) -> None:
        with self._lock:
            usage = self._get(None)
            usage.embeddings += computed
            usage.embeddings_cached += cached

    def total(self) -> StageUsage:
        out = StageUsage()
        with self._lock:
            for usage in self.stages.values():
                out.add(usage)
        return out

    def llm_totals(self) -> tuple[int, int]:
        """LLM calls and tokens (prompt + completion) over all stages: a cheap snapshot
        that a query's trace takes around every step."""
        with self._lock:
            calls = sum(u.llm_calls for u in self.stages.values())
            tokens = sum(u.prompt_tokens + u.completion_tokens for u in self.stages.values())
        return calls, tokens

    def report(self) -> dict:
        """A JSON-serialisable report: per stage and in total."""
        with self._lock:
            stages = {name: asdict(u) for name, u in self.stages.items()}
        return {"stages": stages, "total": asdict(self.total())}

    def snapshot(self) -> dict:
        """:meth:`report` as of now, the stages still running counted up to this moment."""
        now, cpu_now = time.perf_counter(), time.process_time()
        with self._lock:
            stages = {name: StageUsage(**asdict(u)) for name, u in self.stages.items()}
            for name, start, cpu_start in self._open:
                running = stages.setdefault(name, StageUsage())
                running.seconds += now - start
                running.cpu_seconds += cpu_now - cpu_start
        total = StageUsage()
        for usage in stages.values():
            total.add(usage)
        return {"stages": {n: asdict(u) for n, u in stages.items()}, "total": asdict(total)}

    def carry(self, report: dict) -> None:
        """Add a :meth:`report` of earlier work (a build's unfinished attempts) to the counters."""
        known = {f.name for f in fields(StageUsage)}
        with self._lock:
            for name, values in report.get("stages", {}).items():
                self._get(name).add(StageUsage(**{k: v for k, v in values.items() if k in known}))

    def discard(self, stage: str) -> None:
        """Forget ``stage`` (a stage that turned out to have nothing to do)."""
        with self._lock:
            self.stages.pop(stage, None)

    def reset(self) -> None:
        with self._lock:
            self.stages.clear()
