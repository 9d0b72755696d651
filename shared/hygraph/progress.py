"""Progress bars for long work (ingest, extraction, embedding, layer builds, LLM fan-out).

Besides the bar on a terminal, the work of the current thread can be followed by a
listener (:func:`reporting`): the server's jobs use it to show, per job, the stage under
way and how far it is (``desc``, items done, total when known), whether a bar is shown.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

#: ``listener(desc, done, total)`` per thread (see :func:`reporting`).
_local = threading.local()
#: Seconds between two reports of the same bar (the last item is always reported).
EVERY = 0.25

Listener = Callable[[str, int, "int | None"], None]


@contextmanager
def reporting(listener: Listener) -> Iterator[None]:
    """Report the progress bars this thread opens to ``listener`` while inside."""
    previous = getattr(_local, "listener", None)
    _local.listener = listener
    try:
        yield
    finally:
        _local.listener = previous


def progress_bar(
    iterable: Iterable | None,
    *,
    total: int | None,
    desc: str,
    enabled: bool | None,
    unit: str = "it",
) -> Any:
    """A tqdm bar on stderr; ``enabled=None`` shows it only on a terminal (clean CI logs)."""
    from tqdm.auto import tqdm

    disable = None if enabled is None else not enabled
    bar = tqdm(iterable, total=total, desc=desc, unit=unit, disable=disable, leave=False)
    listener = getattr(_local, "listener", None)
    return bar if listener is None else _Reported(bar, iterable, listener, desc, total)


class _Reported:
    """A bar whose progress also goes to a listener (iterating it, or ``update(n)``)."""

    def __init__(
        self, bar: Any, iterable: Iterable | None, listener: Listener, desc: str, total: int | None
    ) -> None:
        self._bar, self._iterable, self._listener = bar, iterable, listener
        self._desc, self._total, self._done, self._last = desc, total, 0, 0.0
        self._tell(force=True)

    def _tell(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if force or now - self._last >= EVERY:
            self._last = now
            self._listener(self._desc, self._done, self._total)

    def __iter__(self) -> Iterator[Any]:
        for item in self._bar:
            yield item
            self._done += 1
            self._tell()
        self._tell(force=True)

    def update(self, n: int = 1) -> None:
        self._bar.update(n)
        self._done += n
        self._tell(force=self._total is not None and self._done >= self._total)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._bar, name)
