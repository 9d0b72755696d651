"""What a build that has not finished has cost so far, kept beside the index.

A build killed half-way (a crash, Ctrl-C, a machine stopped) is finished by the next
run, which redoes only what is missing. So that the cost report of that run, and the
build history that ``hygraph info`` and ``hygraph bench`` read, give the whole build
and not only its last part, an insert saves its counters (seconds, LLM calls and
tokens, embeddings per stage) every :data:`SAVE_EVERY_S` seconds and once more when it
fails; the run that completes the build starts from them and removes the file.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from hygraph.usage import UsageTracker

UNFINISHED_FILE = "build-unfinished.json"
SAVE_EVERY_S = 30.0


def read_unfinished(folder: Path) -> dict[str, Any] | None:
    """The saved counters of the unfinished attempts at ``folder``'s build, if any:
    ``{"attempts", "seconds", "usage"}`` (None when the last build finished)."""
    try:
        data = json.loads((Path(folder) / UNFINISHED_FILE).read_text(encoding="utf-8"))
    except (FileNotFoundError, NotADirectoryError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("usage"), dict) else None


class UnfinishedBuild:
    """While an insert runs: its counters, saved every :data:`SAVE_EVERY_S` seconds and
    when it fails, on top of those of the attempts before it; removed when it succeeds.

    Entering it resets the tracker to the earlier attempts' counters, so the report
    this run makes covers the whole build.
    """

    def __init__(self, folder: Path, tracker: UsageTracker) -> None:
        self.path = Path(folder) / UNFINISHED_FILE
        self.tracker = tracker
        self.earlier = read_unfinished(folder) or {"attempts": 0, "seconds": 0.0, "usage": {}}
        self.start = time.perf_counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._save_every, daemon=True,
                                        name="hygraph-build-cost")  # fmt: skip

    @property
    def earlier_seconds(self) -> float:
        """Wall seconds of the unfinished attempts before this run."""
        return float(self.earlier.get("seconds", 0.0))

    @property
    def earlier_attempts(self) -> int:
        return int(self.earlier.get("attempts", 0))

    def save(self) -> None:
        data = {
            "attempts": self.earlier_attempts + 1,
            "seconds": round(self.earlier_seconds + time.perf_counter() - self.start, 3),
            "usage": self.tracker.snapshot(),
        }
        tmp = self.path.with_name(f".{UNFINISHED_FILE}.{os.getpid()}")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, self.path)

    def _save_every(self) -> None:
        while not self._stop.wait(SAVE_EVERY_S):
            try:
                self.save()
            except OSError:  # a full or read-only disk: the build itself will say so
                pass

    def __enter__(self) -> UnfinishedBuild:
        self.tracker.reset()
        self.tracker.carry(self.earlier["usage"])
        self.start = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, kind: Any, error: Any, trace: Any) -> None:
        self._stop.set()
        self._thread.join()
        if kind is None:
            self.path.unlink(missing_ok=True)
        else:
            try:
                self.save()
            except OSError:
                pass
