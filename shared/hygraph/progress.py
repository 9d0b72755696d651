"""Progress bars for long work (ingest, extraction, embedding, layer builds, LLM fan-out)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


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
    return tqdm(iterable, total=total, desc=desc, unit=unit, disable=disable, leave=False)
