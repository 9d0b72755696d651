"""Secrets kept out of every line hygraph prints, logs or raises.

A server may echo the key it was sent ("Incorrect API key provided: sk-…"), and an SDK
error may carry request headers; such text reaches warnings, errors and the cost
report. :func:`redact` replaces, wherever they appear:

- every value registered with :func:`register_secret` (the API keys hygraph was
  given) and every environment variable whose name says it holds a secret
  (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*PASSWORD``);
- text shaped like a credential: ``sk-…`` style keys, ``Bearer …`` tokens, and the
  value after ``api_key=`` / ``Authorization:`` / ``token:``.

It is applied by :class:`~hygraph.errors.HygraphError` to its own message, by the
CLI's log handler (:class:`RedactingFilter`) and to the CLI's last-resort error line,
so a secret cannot leave through any of them.
"""

from __future__ import annotations

import logging
import os
import re

MASK = "***"
#: Values shorter than this are never treated as secrets (they would mask ordinary words).
MIN_SECRET = 8
_SECRET_ENV = re.compile(r"(API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD)$", re.IGNORECASE)
_SHAPES = (
    # Provider keys: sk-..., sk-proj-..., pk-..., rk-... (OpenAI, Anthropic, Stripe-like).
    re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{6,}"),
    # HTTP bearer tokens, wherever they are quoted.
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=\-]{8,}"),
)
# "api_key=X", "Authorization: X", '"token": "X"': the value after the name.
_NAMED = re.compile(
    r"(?i)\b(api[_-]?key|authorization|x-api-key|access[_-]?token|token|secret|password)"
    r"([\"']?\s*[:=]\s*[\"']?)(?!\*\*\*)([^\s\"',;}]+)"
)
_registered: set[str] = set()


def register_secret(value: str | None) -> None:
    """Mask ``value`` in everything hygraph shows from now on (short values are ignored)."""
    if value and len(value) >= MIN_SECRET:
        _registered.add(value)


def _known() -> list[str]:
    found = set(_registered)
    for name, value in os.environ.items():
        if value and len(value) >= MIN_SECRET and _SECRET_ENV.search(name):
            found.add(value)
    return sorted(found, key=len, reverse=True)  # longest first: no partial leftovers


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``***``."""
    if not text:
        return text
    for secret in _known():
        if secret in text:
            text = text.replace(secret, MASK)
    for shape in _SHAPES:
        text = shape.sub(MASK, text)
    return _NAMED.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)


class RedactingFilter(logging.Filter):
    """A log filter that formats each record's message and redacts it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: leave it to the handler's own error path
            return True
        record.msg, record.args = redact(message), None
        return True
