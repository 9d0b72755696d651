"""Work an open index leaves for when its writes pause: once, after a burst of inserts.

Some files beside an index only spare a later process work: the kept query matrices
(:mod:`hygraph.kept_matrices`) and the BM25 postings (:mod:`hygraph.layers.bm25`) can
always be made again from the graph store and the vectors. Rewriting them whole after
every one-document insert cost more than the insert's own data as the index grew, so a
small insert leaves them to a :class:`WhenIdle`: each task is run once no task has been
left for its delay (a timer thread), when the index closes, or when the process exits. A
process killed before then leaves the older files, which name what they were made from
and are not read as current.

One timer thread at a time: a task left while it waits moves the moment it fires instead
of starting another thread at every insert.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from collections.abc import Callable

_log = logging.getLogger(__name__)


class WhenIdle:
    """Named tasks of one open index, each run once after the last :meth:`later` call."""

    def __init__(self) -> None:
        self._tasks: dict[str, Callable[[], None]] = {}
        self._lock = threading.Lock()  # guards the tasks and the timer
        self._running = threading.Lock()  # one run at a time (timer, close, exit)
        self._due = 0.0  # time.monotonic() at which the tasks run
        self._timer: threading.Timer | None = None
        self._timer_at = 0.0  # when the waiting timer fires

    def later(self, name: str, task: Callable[[], None], delay: float) -> None:
        """Run ``task`` once ``delay`` seconds pass without another call (any name), or at
        :meth:`close` or exit; it replaces a task of the same name still waiting."""
        now = time.monotonic()
        with self._lock:
            self._tasks[name] = task
            self._due = now + delay
            if self._timer is not None and self._timer_at <= self._due:
                return  # it fires first, and waits again for what is left
            if self._timer is not None:
                self._timer.cancel()
            self._start(delay)
        _WAITING.add(self)

    def pending(self, name: str) -> bool:
        """Whether a task named ``name`` waits."""
        with self._lock:
            return name in self._tasks

    def drop(self, name: str) -> None:
        """Forget the waiting task ``name`` (what it would write is no longer wanted)."""
        with self._lock:
            self._tasks.pop(name, None)

    def run(self, *, raising: bool = False) -> None:
        """Run the waiting tasks now. A failure is logged (the files they write can be
        made again); with ``raising``, the first is raised once all have run."""
        failed: Exception | None = None
        with self._running:
            with self._lock:
                tasks, self._tasks = self._tasks, {}
            for name, task in tasks.items():
                try:
                    task()
                except Exception as exc:  # noqa: BLE001 - reported below
                    _log.warning("could not write %s", name, exc_info=True)
                    failed = failed or exc
        if raising and failed is not None:
            raise failed

    def close(self) -> None:
        """Stop the timer and run what waits (errors raised)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        self.run(raising=True)

    def _start(self, delay: float) -> None:
        self._timer_at = time.monotonic() + delay
        self._timer = threading.Timer(delay, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._timer is None or threading.current_thread() is not self._timer:
                return  # cancelled, or replaced by an earlier one
            left = self._due - time.monotonic()
            if left > 0:
                self._start(left)
                return
            self._timer = None
        self.run()


#: Instances with tasks left; run when the interpreter exits (a script that inserts and
#: ends without closing the index, within the delay).
_WAITING: weakref.WeakSet[WhenIdle] = weakref.WeakSet()


@atexit.register
def _run_at_exit() -> None:
    for waiting in list(_WAITING):
        waiting.run()
