"""A loopback OpenAI-compatible chat-completions stub that injects faults, deterministically.

:class:`StubServer` serves ``POST /v1/chat/completions`` on ``127.0.0.1`` (a free port)
from a :class:`~http.server.ThreadingHTTPServer` in a daemon thread. Each request is
answered, with the probabilities of :class:`FaultPlan`, by one of:

* ``429`` with ``Retry-After`` (seconds) or ``retry-after-ms``;
* ``500`` with a JSON error body;
* ``timeout``: the handler sleeps longer than the client's timeout, then answers;
* ``malformed``: a 200 that is not a usable reply, one of
  ``non-json`` (an HTML body labelled ``application/json``), ``no-choices`` (a JSON
  object without ``choices``), ``garbage`` (a valid envelope whose content is prose) or
  ``truncated`` (a valid envelope whose content is the valid reply cut in half, with
  ``finish_reason: "length"``, as a server that hit its token limit sends);
* ``ok``: a valid reply from a rule-based responder that reads the passage in the last
  user message and answers in the format of the prompt family: the unified JSON schema
  (extractor ``llm``), the delimited n-ary records (``llm-nary``; with
  ``split_gleaning`` the first pass gives the first half of the segments and the
  gleaning pass the rest), the NER and OpenIE JSON (``llm-twostep``), ``NO`` to the
  n-ary loop check, and question entities.

Determinism: the fate of a request depends only on the seed, the request's messages
and how many times the server has seen those messages before (``sha256`` of the three),
never on arrival order, so concurrent clients get the same faults run after run.

Bounded: the server stops itself after ``max_requests`` requests or ``max_seconds``
seconds, whichever comes first, and binds to the loopback interface only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FaultPlan", "StubServer", "respond"]

MALFORMED_KINDS = ("non-json", "no-choices", "garbage", "truncated")


@dataclasses.dataclass
class FaultPlan:
    """Per-request fault probabilities (their sum must be at most 1) and fault settings."""

    p_429: float = 0.10
    p_500: float = 0.10
    p_timeout: float = 0.10
    p_malformed: float = 0.10
    malformed_kinds: tuple[str, ...] = MALFORMED_KINDS
    retry_after: float = 0.2
    """Seconds asked for by a 429 (sent as ``Retry-After`` or ``retry-after-ms``)."""
    hang: float = 1.5
    """Seconds a ``timeout`` request sleeps before answering (more than the client waits)."""

    @classmethod
    def none(cls) -> FaultPlan:
        return cls(p_429=0.0, p_500=0.0, p_timeout=0.0, p_malformed=0.0)

    def __post_init__(self) -> None:
        total = self.p_429 + self.p_500 + self.p_timeout + self.p_malformed
        if not 0.0 <= total <= 1.0:
            raise ValueError(f"fault probabilities must sum to at most 1, got {total}")
        unknown = set(self.malformed_kinds) - set(MALFORMED_KINDS)
        if unknown or not self.malformed_kinds:
            raise ValueError(f"malformed_kinds must be drawn from {MALFORMED_KINDS}")


# --------------------------------------------------------------------------- responder

_PASSAGE = re.compile(r'"""\s*\n?(.*?)\n?\s*"""', re.DOTALL)
_NAME = re.compile(r"\b[A-Z][\w'&-]*(?:\s+(?:of|the|and|de|von|van|la|du)?\s*[A-Z][\w'&-]*)*")
_YEAR = re.compile(r"\b1[0-9]{3}\b|\b20[0-9]{2}\b")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'])")
_STOP = {
    "The", "A", "An", "In", "On", "At", "It", "Its", "He", "She", "They", "Their", "His",
    "Her", "This", "That", "These", "Those", "After", "Before", "When", "While", "By",
    "For", "From", "With", "As", "Since", "During", "Today", "Later", "There", "Both",
    "Each", "Some", "Many", "Most", "Of", "To", "And", "But", "Although", "Because",
    "Title", "Passage", "Paragraph", "Question",
}  # fmt: skip


def _passage(text: str) -> str:
    found = _PASSAGE.findall(text)
    return found[-1].strip() if found else text.strip()


def _clean_name(raw: str) -> str:
    words = raw.split()
    while words and words[0] in _STOP:
        words = words[1:]
    while words and words[-1].lower() in ("of", "the", "and", "de", "von", "van", "la", "du"):
        words = words[:-1]
    return " ".join(words).strip(" '-&")


def sentences(passage: str) -> list[str]:
    """The passage's sentences (Markdown headings dropped), in order."""
    lines = [ln for ln in passage.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    text = " ".join(" ".join(lines).split())
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def names_in(sentence: str) -> list[str]:
    """Capitalised names and years in a sentence, in order, without duplicates."""
    found: dict[str, None] = {}
    for match in _NAME.finditer(sentence):
        name = _clean_name(match.group(0))
        if len(name) > 1 and name not in _STOP:
            found.setdefault(name, None)
    for match in _YEAR.finditer(sentence):
        found.setdefault(match.group(0), None)
    return list(found)


def _kind(name: str) -> str:
    return "date" if name.isdigit() else "entity"


def unified_reply(passage: str) -> str:
    """The unified JSON schema for a passage: names, adjacent-name relations, facts, units."""
    entities: dict[str, dict[str, Any]] = {}
    relations: list[dict[str, Any]] = []
    facts: list[dict[str, Any]] = []
    units: list[str] = []
    for sentence in sentences(passage):
        names = names_in(sentence)
        units.append(sentence)
        for name in names:
            entities.setdefault(
                name,
                {"name": name, "type": _kind(name), "description": sentence, "importance": 60},
            )
        for a, b in zip(names, names[1:], strict=False):
            relations.append(
                {"source": a, "target": b, "label": "appears with", "description": sentence,
                 "strength": 6}
            )  # fmt: skip
        if names:
            facts.append({"statement": sentence, "entities": names, "completeness": 8})
    return json.dumps(
        {"entities": list(entities.values()), "relations": relations, "facts": facts,
         "units": units},
        ensure_ascii=False,
    )  # fmt: skip


def _q(text: str) -> str:
    return text.replace('"', "'").replace("<|>", " ").replace("##", " ")


def nary_records(segments: list[str]) -> str:
    """Delimited n-ary records (one hyper-relation per segment, then its entities)."""
    records: list[str] = []
    for sentence in segments:
        names = names_in(sentence)
        if not names:
            continue
        records.append(f'("hyper-relation"<|>"{_q(sentence)}"<|>8)')
        records.extend(
            f'("entity"<|>"{_q(n)}"<|>"{_kind(n)}"<|>"{_q(sentence)}"<|>70)' for n in names
        )
    return "##\n".join(records) + ("##\n" if records else "") + "<|COMPLETE|>"


def _split(segments: list[str]) -> tuple[list[str], list[str]]:
    half = (len(segments) + 1) // 2
    return segments[:half], segments[half:]


def respond(messages: list[dict[str, Any]], *, split_gleaning: bool = False) -> str:
    """The valid reply content for a conversation, by prompt family."""
    system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    last_user = next(
        (m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), ""
    )
    first_user = next((m.get("content") or "" for m in messages if m.get("role") == "user"), "")
    if system.startswith("You turn a passage into n-ary knowledge"):
        segments = sentences(_passage(first_user))
        first, rest = _split(segments) if split_gleaning else (segments, [])
        if last_user.startswith("Is any knowledge in the passage still not covered"):
            return "NO"
        if last_user.startswith("Your answer left out"):
            passes = sum(1 for m in messages if m.get("role") == "assistant")
            return nary_records(rest) if passes == 1 else "<|COMPLETE|>"
        return nary_records(first)
    if system.startswith("You read one passage and turn what it says"):
        if last_user.startswith("Passage") or '"""' in last_user:
            return unified_reply(_passage(last_user))
        return "{}"  # a gleaning pass: nothing missed
    if system.startswith("You find the named entities"):
        names = [n for s in sentences(_passage(last_user)) for n in names_in(s)]
        return json.dumps({"named_entities": list(dict.fromkeys(names))})
    if "triples" in system.lower():
        triples = []
        for sentence in sentences(_passage(last_user)):
            names = names_in(sentence)
            triples += [[a, "appears with", b] for a, b in zip(names, names[1:], strict=False)]
        return json.dumps({"triples": triples})
    if system.startswith("You pick out the key entities of a question"):
        question = last_user.removeprefix("Question:").strip()
        return json.dumps({"entities": names_in(question) or [question]})
    return "OK"


# --------------------------------------------------------------------------- the server


def _unit(*parts: object) -> float:
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2.0**64


class StubServer:
    """The fault-injecting stub; use as a context manager or call :meth:`start`/:meth:`stop`.

    Attributes:
        plan: the :class:`FaultPlan` in force (may be swapped between builds).
        outcomes: how many requests ended in each outcome (``ok``, ``429``, ``500``,
            ``timeout``, ``malformed:<kind>``).
    """

    def __init__(
        self,
        plan: FaultPlan | None = None,
        *,
        seed: int = 0,
        max_requests: int = 20_000,
        max_seconds: float = 900.0,
        split_gleaning: bool = False,
    ) -> None:
        self.plan = plan if plan is not None else FaultPlan()
        self.seed = seed
        self.max_requests = max_requests
        self.max_seconds = max_seconds
        self.split_gleaning = split_gleaning
        self.outcomes: Counter[str] = Counter()
        self.requests = 0
        self.stopped_reason: str | None = None
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None
        self._stopping = threading.Event()

    # -- lifecycle --------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self._httpd is not None, "the stub is not running"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> StubServer:
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:
                stub._handle(self)

            def do_GET(self) -> None:
                stub._send(self, 404, b'{"error": "not found"}')

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        self._timer = threading.Timer(self.max_seconds, self._stop_async, ("max_seconds",))
        self._timer.daemon = True
        self._timer.start()
        return self

    def _stop_async(self, reason: str) -> None:
        if not self._stopping.is_set():
            self.stopped_reason = reason
            threading.Thread(target=self.stop, daemon=True).start()

    def stop(self) -> None:
        if self._stopping.is_set():
            return
        self._stopping.set()
        if self._timer is not None:
            self._timer.cancel()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- one request --------------------------------------------------------------

    def _decide(self, messages: list[dict[str, Any]]) -> str:
        key = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
        with self._lock:
            nth = self._seen[key]
            self._seen[key] += 1
        u = _unit(self.seed, key, nth)
        plan = self.plan
        for outcome, p in (
            ("429", plan.p_429),
            ("500", plan.p_500),
            ("timeout", plan.p_timeout),
            ("malformed", plan.p_malformed),
        ):
            if u < p:
                if outcome == "malformed":
                    kinds = plan.malformed_kinds
                    pick = int(_unit(self.seed, key, nth, "kind") * len(kinds))
                    return f"malformed:{kinds[min(pick, len(kinds) - 1)]}"
                if outcome == "429":
                    return "429-ms" if _unit(self.seed, key, nth, "hdr") < 0.5 else "429"
                return outcome
            u -= p
        return "ok"

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
        content_type: str = "application/json",
    ) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(body)
            handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass  # the client gave up (a timeout): nothing to answer

    @staticmethod
    def _envelope(content: str, finish_reason: str = "stop") -> bytes:
        return json.dumps(
            {
                "id": "chatcmpl-stub",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": "stub",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": finish_reason,
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
            }
        ).encode()

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        with self._lock:
            self.requests += 1
            if self.requests >= self.max_requests:
                self._stop_async("max_requests")
        if not handler.path.rstrip("/").endswith("/chat/completions"):
            self._send(handler, 404, b'{"error": {"message": "not found"}}')
            return
        try:
            request = json.loads(raw or b"{}")
            messages = list(request.get("messages") or [])
        except (ValueError, AttributeError):
            self._send(handler, 400, b'{"error": {"message": "bad request body"}}')
            return
        outcome = self._decide(messages)
        with self._lock:
            self.outcomes[outcome.replace("429-ms", "429")] += 1
        plan = self.plan
        if outcome == "429":
            self._send(handler, 429, b'{"error": {"message": "rate limited"}}',
                       {"Retry-After": f"{plan.retry_after:g}"})  # fmt: skip
            return
        if outcome == "429-ms":
            self._send(handler, 429, b'{"error": {"message": "rate limited"}}',
                       {"retry-after-ms": str(int(plan.retry_after * 1000))})  # fmt: skip
            return
        if outcome == "500":
            self._send(handler, 500, b'{"error": {"message": "internal error"}}')
            return
        content = respond(messages, split_gleaning=self.split_gleaning)
        if outcome == "timeout":
            time.sleep(plan.hang)
            self._send(handler, 200, self._envelope(content))
            return
        if outcome == "malformed:non-json":
            self._send(handler, 200, b"<html><body>502 Bad Gateway</body></html>")
            return
        if outcome == "malformed:no-choices":
            self._send(handler, 200, b'{"id": "chatcmpl-stub", "object": "chat.completion"}')
            return
        if outcome == "malformed:garbage":
            self._send(handler, 200, self._envelope("I am sorry, I cannot help with that."))
            return
        if outcome == "malformed:truncated":
            self._send(handler, 200, self._envelope(content[: len(content) // 2], "length"))
            return
        self._send(handler, 200, self._envelope(content))
