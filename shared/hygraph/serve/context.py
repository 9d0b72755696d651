"""What the server's route modules share: the API prefix and the served index's context."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

API = "/v1"


@dataclass(frozen=True)
class Limits:
    """What one request may ask for."""

    question_chars: int = 2_000
    top_k: int = 100
    body_bytes: int = 20_000_000
    documents: int = 1_000
    graph_nodes: int = 200


@dataclass
class Served:
    """The index served, its job runner, the limits, the key check and the error models
    every guarded route declares."""

    index: Any
    jobs: Any
    limits: Limits
    guarded: list[Any] = field(default_factory=list)
    errors: dict[int | str, dict[str, Any]] = field(default_factory=dict)
