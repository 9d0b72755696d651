"""Which registered operators the tests exercise.

A test that runs an operator says so with ``@covers("element.name")``, in whichever
test module holds it; :func:`covered_everywhere` imports every test module (pytest has
usually imported them already) and returns the names they declared, so a check can
require a test for every registered operator.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

COVERED: set[str] = set()


def covers(*names: str) -> Any:
    """Record (at import time) the operators a test exercises."""
    COVERED.update(names)
    return lambda fn: fn


def covered_everywhere() -> set[str]:
    """Every operator name declared by any ``tests/test_*.py`` module."""
    for path in sorted(Path(__file__).parent.glob("test_*.py")):
        importlib.import_module(path.stem)
    return set(COVERED)
