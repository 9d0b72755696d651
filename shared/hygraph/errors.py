"""Exceptions raised by hygraph.

Every error a user can cause (bad input, wrong index, unknown method, a model
that keeps failing) derives from :class:`HygraphError`, so the CLI can print one
clear line instead of a traceback and library users can catch one type.
"""

from __future__ import annotations


class HygraphError(Exception):
    """Base class of all errors hygraph raises on purpose."""


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
