"""No secret in any line hygraph shows: errors, log lines, the CLI's last-resort line.

The LLM client runs the real ``openai`` SDK against the scripted ``httpx.MockTransport``
server of ``tests/test_llm.py`` (a test double that answers 401 echoing the key, as
OpenAI's own servers do).
"""

from __future__ import annotations

import logging

import pytest

from hygraph.errors import HygraphError, ModelError
from hygraph.secrets import MASK, RedactingFilter, redact, register_secret
from tests.test_llm import MESSAGES, ScriptedServer, anyio_backend, error, make_llm  # noqa: F401

KEY = "sk-proj-Zq81xYwVb7Tn3KpLm0Qr"


@pytest.mark.parametrize(
    "text",
    [
        f"Incorrect API key provided: {KEY}. You can find your API key at ...",
        f"Incorrect API key provided: Bearer {KEY}",
        "headers: {'Authorization': 'Bearer abc.def-ghi_jkl'}",
        'api_key="qwertyuiop123"',
        "token: 0123456789abcdef",
    ],
)
def test_credential_shaped_text_is_masked(text):
    out = redact(text)
    assert MASK in out
    for secret in (KEY, "abc.def-ghi_jkl", "qwertyuiop123", "0123456789abcdef"):
        assert secret not in out


def test_ordinary_text_is_left_alone():
    text = "LLM calls 12, prompt tokens: 3400, max_tokens=512; the sky-high Bearer Creek"
    assert redact(text) == text


def test_registered_and_environment_secrets_are_masked_anywhere(monkeypatch):
    register_secret("plain-looking-secret-value")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "another.opaque.value42")
    out = redact("echo: plain-looking-secret-value and another.opaque.value42 end")
    assert out == f"echo: {MASK} and {MASK} end"
    register_secret("short")  # too short to be told from a word: never masked
    assert redact("short") == "short"


def test_every_hygraph_error_is_redacted():
    assert KEY not in str(HygraphError(f"bad key {KEY}"))
    assert KEY not in str(ModelError(f"bad key {KEY}"))


@pytest.mark.anyio
async def test_a_401_echoing_the_key_raises_no_key() -> None:
    server = ScriptedServer([error(401, message=f"Incorrect API key provided: Bearer {KEY}")])
    llm = make_llm(server)
    with pytest.raises(ModelError) as info:
        await llm.acomplete(MESSAGES)
    assert "401" in str(info.value) and KEY not in str(info.value)
    assert "sk-test" not in str(info.value)  # the key the client was given, too


def test_log_lines_are_redacted(caplog):
    handler = logging.StreamHandler()
    record = logging.LogRecord("hygraph", logging.WARNING, __file__, 1, "call failed: %s",
                               (f"Bearer {KEY}",), None)  # fmt: skip
    assert RedactingFilter().filter(record)
    assert KEY not in handler.format(record) and MASK in record.getMessage()


def test_cli_prints_no_key_from_an_unexpected_error(monkeypatch, capsys):
    from hygraph import cli

    def boom(args):
        raise RuntimeError(f"server said: Incorrect API key provided: {KEY}")

    monkeypatch.setitem(cli.COMMANDS, "info", boom)
    assert cli.main(["info", "--index", "nowhere"]) == 1
    err = capsys.readouterr().err
    assert "unexpected RuntimeError" in err and KEY not in err


def test_cli_log_lines_carry_no_key(monkeypatch, capsys):
    from hygraph import cli

    def warn(args):
        logging.getLogger("hygraph").warning("extraction of chunk c1 failed: Bearer %s", KEY)
        return 0

    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # basicConfig installs a fresh handler
    monkeypatch.setitem(cli.COMMANDS, "info", warn)
    assert cli.main(["info", "--index", "nowhere"]) == 0
    err = capsys.readouterr().err
    assert "extraction of chunk c1 failed" in err and KEY not in err
    for handler in list(root.handlers):
        root.removeHandler(handler)
