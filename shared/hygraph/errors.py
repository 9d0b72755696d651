"""Exceptions raised by hygraph.

Every error a user can cause (bad input, wrong index, unknown method, a model
that keeps failing) derives from :class:`HygraphError`, so the CLI can print one
clear line instead of a traceback and library users can catch one type.
"""

from __future__ import annotations

from typing import Any

from hygraph.secrets import redact


class HygraphError(Exception):
    """Base class of all errors hygraph raises on purpose.

    Its message is redacted (:func:`hygraph.secrets.redact`): a server that echoes the
    API key it was sent cannot put the key into an error a user sees or logs.
    """

    def __init__(self, *args: Any) -> None:
        super().__init__(*(redact(a) if isinstance(a, str) else a for a in args))


class InputError(HygraphError):
    """The documents given to index are missing, empty or unreadable."""


class IndexNotFoundError(HygraphError):
    """No hygraph index exists at the given directory."""


class IndexMismatchError(HygraphError):
    """An index was opened with settings it was not built with (embedder, format)."""


class UnknownMethodError(HygraphError):
    """A retrieval method name is not registered."""


class ModelError(HygraphError):
    """An LLM or embedder call failed after all retries."""


class ConfigError(HygraphError):
    """A configuration value is invalid or a required setting is missing."""
