"""Tests of hygraph.models.llm: the OpenAI-compatible client and the caching wrapper.

No network: :class:`OpenAILLM` runs the real ``openai`` SDK against
:class:`ScriptedServer`, an ``httpx.MockTransport`` test double, and
:class:`CachedLLM` wraps :class:`FakeLLM`, a scripted in-process test double.
Retry waits go through a recorded fake sleep, so the file runs in well under a second.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from hygraph.errors import ConfigError, ModelError
from hygraph.models import llm as llm_mod
from hygraph.models.base import LLM, LLMResponse, Message
from hygraph.models.cache import DiskCache
from hygraph.models.llm import CachedLLM, OpenAILLM, run_sync
from hygraph.usage import UsageTracker

BASE_URL = "http://llm.test/v1"
MESSAGES: list[Message] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Say hi."},
]

Step = Callable[[httpx.Request], httpx.Response]

# Async tests run on asyncio through anyio's pytest plugin (anyio ships with httpx).
pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# --------------------------------------------------------------------------- doubles


def completion_body(
    text: str | None = "hello",
    *,
    finish_reason: str = "stop",
    prompt_tokens: int = 11,
    completion_tokens: int = 3,
    model: str = "test-model",
    usage: bool = True,
) -> dict[str, Any]:
    """A realistic chat-completion JSON body, as an OpenAI-compatible server returns it."""
    body: dict[str, Any] = {
        "id": "chatcmpl-test123",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
    }
    if usage:
        body["usage"] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
    return body


def ok(text: str | None = "hello", **kw: Any) -> Step:
    return lambda request: httpx.Response(200, json=completion_body(text, **kw))


def error(status: int, headers: dict[str, str] | None = None, message: str = "boom") -> Step:
    body = {"error": {"message": message, "type": "test_error", "code": None}}
    return lambda request: httpx.Response(status, json=body, headers=headers)


def raise_timeout(request: httpx.Request) -> httpx.Response:
    raise httpx.ReadTimeout("read timed out", request=request)


class ScriptedServer:
    """Test double for an OpenAI-compatible HTTP server, used through ``httpx.MockTransport``.

    Each request consumes the next scripted step (a function from request to
    response, or raising like a network failure); the last step repeats once the
    script runs out. ``router`` instead picks a step per request. The async
    handler records every request and the largest number in flight at once;
    ``delay`` keeps requests open long enough for that count to mean something.
    """

    def __init__(
        self,
        steps: Sequence[Step] = (),
        *,
        router: Callable[[httpx.Request], Step] | None = None,
        delay: float = 0.0,
    ) -> None:
        self.steps = list(steps) or [ok()]
        self.router = router
        self.delay = delay
        self.requests: list[httpx.Request] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = asyncio.Lock()  # asyncio primitives bind to a loop lazily (3.10+)

    @property
    def calls(self) -> int:
        return len(self.requests)

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]

    async def handler(self, request: httpx.Request) -> httpx.Response:
        async with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay:
                await asyncio.sleep(self.delay)
            self.requests.append(request)
            if self.router is not None:
                step = self.router(request)
            else:
                index = min(len(self.requests) - 1, len(self.steps) - 1)
                step = self.steps[index]
            return step(request)
        finally:
            async with self._lock:
                self.in_flight -= 1

    def client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(self.handler))


@pytest.fixture
def sleeps(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Replace the retry wait with a recorder: the test sees each requested delay."""
    recorded: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        recorded.append(seconds)

    monkeypatch.setattr(llm_mod, "_sleep", fake_sleep)
    return recorded


def make_llm(server: ScriptedServer, **kw: Any) -> OpenAILLM:
    kw.setdefault("tracker", UsageTracker())
    return OpenAILLM("test-model", BASE_URL, "sk-test", http_client=server.client(), **kw)


def usage(llm: OpenAILLM | CachedLLM) -> Any:
    assert llm.tracker is not None
    return llm.tracker.total()


# --------------------------------------------------------------------------- OpenAILLM


def test_satisfies_llm_protocol() -> None:
    server = ScriptedServer()
    assert isinstance(make_llm(server), LLM)


async def test_normal_completion(sleeps: list[float]) -> None:
    server = ScriptedServer([ok("Hi there.", prompt_tokens=17, completion_tokens=4)])
    llm = make_llm(server, timeout=7.5, default_params={"temperature": 0.2})

    resp = await llm.acomplete(
        MESSAGES, max_tokens=50, response_format={"type": "json_object"}, seed=3
    )

    assert resp.text == "Hi there."
    assert (resp.prompt_tokens, resp.completion_tokens) == (17, 4)
    assert resp.finish_reason == "stop" and not resp.truncated and not resp.cached
    assert resp.raw["id"] == "chatcmpl-test123"
    assert llm.name == "test-model"

    (request,) = server.requests
    assert request.url == f"{BASE_URL}/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    body = server.bodies()[0]
    assert body["model"] == "test-model"
    assert body["messages"] == MESSAGES
    assert body["temperature"] == 0.2
    assert body["max_tokens"] == 50
    assert body["response_format"] == {"type": "json_object"}
    assert body["seed"] == 3
    assert request.extensions["timeout"]["read"] == 7.5  # per-call timeout reached httpx

    total = usage(llm)
    assert (total.llm_calls, total.prompt_tokens, total.completion_tokens) == (1, 17, 4)
    assert (total.llm_failed_calls, total.llm_retries, total.llm_cached_calls) == (0, 0, 0)
    assert sleeps == []


async def test_call_params_override_defaults() -> None:
    server = ScriptedServer()
    llm = make_llm(server, default_params={"temperature": 0.7, "seed": 1})
    await llm.acomplete(MESSAGES, temperature=0.0)
    body = server.bodies()[0]
    assert (body["temperature"], body["seed"]) == (0.0, 1)


async def test_missing_usage_and_null_content() -> None:
    server = ScriptedServer([ok(None, usage=False, finish_reason="length")])
    resp = await make_llm(server).acomplete(MESSAGES)
    assert resp.text == ""
    assert (resp.prompt_tokens, resp.completion_tokens) == (0, 0)
    assert resp.finish_reason == "length" and resp.truncated


async def test_429_retry_after_zero_then_success(sleeps: list[float]) -> None:
    server = ScriptedServer([error(429, {"Retry-After": "0"}), ok("done")])
    llm = make_llm(server)
    resp = await llm.acomplete(MESSAGES)
    assert resp.text == "done"
    assert server.calls == 2
    assert sleeps == [0.0]
    total = usage(llm)
    assert (total.llm_calls, total.llm_retries, total.llm_failed_calls) == (1, 1, 0)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "2"}, 2.0),
        ({"retry-after-ms": "1500"}, 1.5),
        ({"retry-after-ms": "250", "Retry-After": "9"}, 0.25),  # ms form wins
        ({"Retry-After": "999"}, 5.0),  # capped at backoff_max
    ],
)
async def test_retry_after_header_sets_the_delay(
    sleeps: list[float], headers: dict[str, str], expected: float
) -> None:
    server = ScriptedServer([error(429, headers), ok()])
    llm = make_llm(server, backoff_base=0.001, backoff_max=5.0)
    await llm.acomplete(MESSAGES)
    assert sleeps == [pytest.approx(expected)]


async def test_retry_after_http_date(sleeps: list[float]) -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    server = ScriptedServer([error(503, {"Retry-After": when}), ok()])
    await make_llm(server, backoff_max=60.0).acomplete(MESSAGES)
    assert len(sleeps) == 1 and 27.0 <= sleeps[0] <= 30.0


async def test_500_twice_then_success(sleeps: list[float]) -> None:
    server = ScriptedServer([error(500), error(502), ok("third time")])
    llm = make_llm(server, backoff_base=0.5, backoff_max=60.0)
    resp = await llm.acomplete(MESSAGES)
    assert resp.text == "third time"
    assert server.calls == 3
    # Full jitter: retry i waits uniformly in [0, backoff_base * 2**i].
    assert len(sleeps) == 2
    assert 0.0 <= sleeps[0] <= 0.5 and 0.0 <= sleeps[1] <= 1.0
    total = usage(llm)
    assert (total.llm_calls, total.llm_retries) == (1, 2)


async def test_backoff_is_capped(sleeps: list[float]) -> None:
    server = ScriptedServer([error(500)] * 5 + [ok()])
    await make_llm(server, backoff_base=10.0, backoff_max=0.5).acomplete(MESSAGES)
    assert len(sleeps) == 5 and all(0.0 <= s <= 0.5 for s in sleeps)


@pytest.mark.parametrize("status", [408, 409])
async def test_408_409_are_retried(sleeps: list[float], status: int) -> None:
    server = ScriptedServer([error(status), ok()])
    resp = await make_llm(server).acomplete(MESSAGES)
    assert resp.text == "hello" and server.calls == 2


async def test_timeout_then_success(sleeps: list[float]) -> None:
    server = ScriptedServer([raise_timeout, ok("after timeout")])
    llm = make_llm(server)
    resp = await llm.acomplete(MESSAGES)
    assert resp.text == "after timeout"
    assert server.calls == 2 and len(sleeps) == 1
    assert usage(llm).llm_retries == 1


async def test_connection_error_then_success(sleeps: list[float]) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    server = ScriptedServer([refuse, ok()])
    resp = await make_llm(server).acomplete(MESSAGES)
    assert resp.text == "hello" and server.calls == 2


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
async def test_client_errors_fail_at_once(sleeps: list[float], status: int) -> None:
    server = ScriptedServer([error(status, message="Incorrect API key provided"), ok()])
    llm = make_llm(server)
    with pytest.raises(ModelError) as info:
        await llm.acomplete(MESSAGES)
    message = str(info.value)
    assert str(status) in message and "test-model" in message
    assert "\n" not in message
    assert server.calls == 1 and sleeps == []
    total = usage(llm)
    assert (total.llm_calls, total.llm_failed_calls, total.llm_retries) == (0, 1, 0)


async def test_exhausting_retries(sleeps: list[float]) -> None:
    server = ScriptedServer([error(503, message="overloaded")])
    llm = make_llm(server, max_retries=3)
    with pytest.raises(ModelError, match=r"test-model failed after 4 attempts: HTTP 503"):
        await llm.acomplete(MESSAGES)
    assert server.calls == 4 and len(sleeps) == 3
    total = usage(llm)
    assert (total.llm_calls, total.llm_failed_calls, total.llm_retries) == (0, 1, 3)


async def test_exhausting_retries_on_timeouts(sleeps: list[float]) -> None:
    server = ScriptedServer([raise_timeout])
    with pytest.raises(ModelError, match="failed after 3 attempts: APITimeoutError"):
        await make_llm(server, max_retries=2).acomplete(MESSAGES)
    assert server.calls == 3


async def test_zero_retries(sleeps: list[float]) -> None:
    server = ScriptedServer([error(500), ok()])
    with pytest.raises(ModelError, match="after 1 attempts"):
        await make_llm(server, max_retries=0).acomplete(MESSAGES)
    assert server.calls == 1 and sleeps == []


async def test_concurrency_is_bounded() -> None:
    server = ScriptedServer([ok()], delay=0.02)
    llm = make_llm(server, max_concurrency=2)
    batch = [[{"role": "user", "content": f"q{i}"}] for i in range(6)]
    results = await llm.amap(batch)
    assert all(isinstance(r, LLMResponse) for r in results)
    assert server.calls == 6
    assert server.max_in_flight == 2  # bounded, and the bound was actually reached
    assert usage(llm).llm_calls == 6


async def test_amap_returns_failures_in_place(sleeps: list[float]) -> None:
    def router(request: httpx.Request) -> Step:
        content = json.loads(request.content)["messages"][0]["content"]
        return error(400, message="bad prompt") if content == "bad" else ok(f"re: {content}")

    server = ScriptedServer(router=router)
    llm = make_llm(server)
    batch = [[{"role": "user", "content": c}] for c in ("a", "bad", "c")]
    results = await llm.amap(batch)
    assert isinstance(results[0], LLMResponse) and results[0].text == "re: a"
    assert isinstance(results[1], ModelError) and "400" in str(results[1])
    assert isinstance(results[2], LLMResponse) and results[2].text == "re: c"
    total = usage(llm)
    assert (total.llm_calls, total.llm_failed_calls) == (2, 1)


def test_sync_complete_across_event_loops() -> None:
    """A semaphore bound to a finished loop must not break later calls on new loops."""
    server = ScriptedServer([ok()], delay=0.001)
    llm = make_llm(server, max_concurrency=1)  # contention binds the semaphore to its loop
    batch = [MESSAGES] * 3
    assert all(isinstance(r, LLMResponse) for r in asyncio.run(llm.amap(batch)))
    assert llm.complete(MESSAGES).text == "hello"
    assert all(isinstance(r, LLMResponse) for r in asyncio.run(llm.amap(batch)))
    assert llm.complete(MESSAGES).text == "hello"
    assert server.calls == 8


async def test_sync_complete_inside_running_loop() -> None:
    server = ScriptedServer([ok("from a thread")])
    llm = make_llm(server)
    assert llm.complete(MESSAGES).text == "from a thread"
    assert (await llm.acomplete(MESSAGES)).text == "from a thread"


def test_env_var_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env.test:8000/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    server = ScriptedServer()
    llm = OpenAILLM(http_client=server.client())
    assert llm.name == "env-model"
    assert llm.base_url == "http://env.test:8000/v1"
    llm.complete(MESSAGES)
    (request,) = server.requests
    assert request.url == "http://env.test:8000/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-env"
    assert server.bodies()[0]["model"] == "env-model"


def test_arguments_beat_env_and_key_is_optional(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_MODEL", "env-model")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    server = ScriptedServer()
    llm = OpenAILLM("arg-model", http_client=server.client())
    assert llm.name == "arg-model"
    assert llm.base_url == "https://api.openai.com/v1"
    llm.complete(MESSAGES)
    assert server.requests[0].headers["authorization"] == "Bearer not-needed"


def test_missing_model_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_MODEL", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_MODEL"):
        OpenAILLM(base_url=BASE_URL)


def test_default_client_per_loop_is_closed_after_sync_call() -> None:
    """Without a caller's http_client, complete() leaves no client behind."""
    llm = OpenAILLM("m", "http://127.0.0.1:9/v1", max_retries=0, timeout=2.0)

    async def peek() -> tuple[object, object]:
        first = llm._state()
        second = llm._state()
        await llm.aclose()
        return first, second

    first, second = asyncio.run(peek())
    assert first is second
    assert asyncio.run(peek())[0] is not first  # a new loop gets a new state
    assert llm._states == {}


# --------------------------------------------------------------------------- CachedLLM


class FakeLLM:
    """Test double satisfying the ``LLM`` protocol: replays scripted results, counts calls.

    Each call takes the next scripted item (the last one repeats): an
    :class:`LLMResponse` is returned, an exception is raised.
    """

    def __init__(self, *script: LLMResponse | Exception, name: str = "fake-model") -> None:
        self.name = name
        self.script = list(script) or [LLMResponse("fake answer", 5, 2)]
        self.calls = 0
        self.seen_params: list[dict[str, Any]] = []

    async def acomplete(self, messages: Sequence[Message], **params: Any) -> LLMResponse:
        self.calls += 1
        self.seen_params.append(params)
        item = self.script[min(self.calls - 1, len(self.script) - 1)]
        if isinstance(item, Exception):
            raise item
        return item

    def complete(self, messages: Sequence[Message], **params: Any) -> LLMResponse:
        return asyncio.run(self.acomplete(messages, **params))


def test_cached_llm_satisfies_protocol(tmp_path: Path) -> None:
    cached = CachedLLM(FakeLLM(), DiskCache(tmp_path / "c.sqlite"))
    assert isinstance(cached, LLM)
    assert cached.name == "fake-model"


async def test_cache_hit_and_persistence(tmp_path: Path) -> None:
    path = tmp_path / "cache" / "llm.sqlite"
    inner = FakeLLM(LLMResponse("answer", 10, 4))
    tracker = UsageTracker()
    cached = CachedLLM(inner, DiskCache(path), tracker)

    first = await cached.acomplete(MESSAGES, temperature=0)
    second = await cached.acomplete(MESSAGES, temperature=0)
    assert inner.calls == 1
    assert not first.cached and second.cached
    assert (second.text, second.prompt_tokens, second.completion_tokens) == ("answer", 10, 4)
    assert inner.seen_params == [{"temperature": 0}]
    assert tracker.total().llm_cached_calls == 1
    assert tracker.total().llm_calls == 0  # misses are the inner model's to record
    cached.cache.close()

    reopened = CachedLLM(inner, DiskCache(path))
    third = await reopened.acomplete(MESSAGES, temperature=0)
    assert third.cached and third.text == "answer"
    assert inner.calls == 1


async def test_different_params_or_messages_miss(tmp_path: Path) -> None:
    inner = FakeLLM()
    cached = CachedLLM(inner, DiskCache(tmp_path / "c.sqlite"))
    await cached.acomplete(MESSAGES, temperature=0)
    await cached.acomplete(MESSAGES, temperature=0.5)
    await cached.acomplete(MESSAGES, temperature=0, max_tokens=10)
    await cached.acomplete([{"role": "user", "content": "other"}], temperature=0)
    assert inner.calls == 4
    await cached.acomplete(MESSAGES, max_tokens=10, temperature=0)  # order does not matter
    assert inner.calls == 4


async def test_different_model_name_misses(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "c.sqlite")
    a, b = FakeLLM(name="model-a"), FakeLLM(name="model-b")
    await CachedLLM(a, cache).acomplete(MESSAGES)
    await CachedLLM(b, cache).acomplete(MESSAGES)
    assert (a.calls, b.calls) == (1, 1)


async def test_truncated_is_not_cached(tmp_path: Path) -> None:
    inner = FakeLLM(LLMResponse("partial", finish_reason="length"))
    cached = CachedLLM(inner, DiskCache(tmp_path / "c.sqlite"))
    assert (await cached.acomplete(MESSAGES)).truncated
    await cached.acomplete(MESSAGES)
    assert inner.calls == 2 and len(cached.cache) == 0


async def test_empty_text_is_not_cached(tmp_path: Path) -> None:
    inner = FakeLLM(LLMResponse(""))
    cached = CachedLLM(inner, DiskCache(tmp_path / "c.sqlite"))
    await cached.acomplete(MESSAGES)
    await cached.acomplete(MESSAGES)
    assert inner.calls == 2 and len(cached.cache) == 0


async def test_validate_failure_is_reraised_and_not_cached(tmp_path: Path) -> None:
    inner = FakeLLM(LLMResponse("not json"), LLMResponse('{"ok": true}'))
    cached = CachedLLM(inner, DiskCache(tmp_path / "c.sqlite"))

    with pytest.raises(json.JSONDecodeError):
        await cached.acomplete(MESSAGES, validate=json.loads)
    assert len(cached.cache) == 0

    good = await cached.acomplete(MESSAGES, validate=json.loads)
    assert good.text == '{"ok": true}' and not good.cached
    again = await cached.acomplete(MESSAGES, validate=json.loads)
    assert again.cached and again.text == '{"ok": true}'
    assert inner.calls == 2 and len(cached.cache) == 1


async def test_inner_exception_is_not_cached(tmp_path: Path) -> None:
    inner = FakeLLM(ModelError("upstream down"), LLMResponse("recovered"))
    cached = CachedLLM(inner, DiskCache(tmp_path / "c.sqlite"))
    with pytest.raises(ModelError, match="upstream down"):
        await cached.acomplete(MESSAGES)
    assert len(cached.cache) == 0
    assert (await cached.acomplete(MESSAGES)).text == "recovered"
    assert (await cached.acomplete(MESSAGES)).cached
    assert inner.calls == 2


async def test_cached_amap_returns_failures_in_place(tmp_path: Path) -> None:
    inner = FakeLLM(LLMResponse("fine"))
    cached = CachedLLM(inner, DiskCache(tmp_path / "c.sqlite"))

    def validate(text: str) -> None:
        raise ValueError("rejected")

    ok_batch = [[{"role": "user", "content": "x"}], [{"role": "user", "content": "y"}]]
    results = await cached.amap(ok_batch)
    assert [r.text for r in results if isinstance(r, LLMResponse)] == ["fine", "fine"]
    rejected = await cached.amap([[{"role": "user", "content": "z"}]], validate=validate)
    assert isinstance(rejected[0], ValueError)


def test_cached_sync_complete(tmp_path: Path) -> None:
    inner = FakeLLM()
    cached = CachedLLM(inner, DiskCache(tmp_path / "c.sqlite"))
    assert not cached.complete(MESSAGES).cached
    assert cached.complete(MESSAGES).cached
    assert inner.calls == 1


def test_cached_openai_llm_counts_each_call_once(tmp_path: Path) -> None:
    """Inner OpenAILLM records the real call, CachedLLM only the hit: no double counting."""
    tracker = UsageTracker()
    server = ScriptedServer([ok("real", prompt_tokens=8, completion_tokens=2)])
    inner = OpenAILLM("test-model", BASE_URL, http_client=server.client(), tracker=tracker)
    cached = CachedLLM(inner, DiskCache(tmp_path / "c.sqlite"), tracker)
    with tracker.stage("extract"):
        assert cached.complete(MESSAGES, temperature=0).text == "real"
        assert cached.complete(MESSAGES, temperature=0).cached
    stage = tracker.report()["stages"]["extract"]
    assert server.calls == 1
    assert (stage["llm_calls"], stage["llm_cached_calls"]) == (1, 1)
    assert (stage["prompt_tokens"], stage["completion_tokens"]) == (8, 2)


def not_json(body: str = "<html><body>502 Bad Gateway</body></html>") -> Step:
    return lambda request: httpx.Response(200, text=body, headers={"content-type": "text/html"})


async def test_a_200_reply_that_is_not_json_is_retried(sleeps: list[float]) -> None:
    server = ScriptedServer([not_json(), ok("after the page")])
    llm = make_llm(server)
    resp = await llm.acomplete(MESSAGES)
    assert resp.text == "after the page" and server.calls == 2
    total = usage(llm)
    assert (total.llm_calls, total.llm_failed_calls, total.llm_retries) == (1, 0, 1)


async def test_a_server_that_only_sends_pages_fails_in_one_line(sleeps: list[float]) -> None:
    server = ScriptedServer([not_json("plain words, no JSON")])
    llm = make_llm(server, max_retries=2)
    with pytest.raises(ModelError) as info:
        await llm.acomplete(MESSAGES)
    message = str(info.value)
    assert "after 3 attempts" in message and "not a chat completion" in message
    assert "AttributeError" not in message and "\n" not in message


def test_a_client_made_without_accounts_reports_to_the_index(tmp_path, minilm) -> None:
    """The CLI's ``--llm-base-url`` makes an OpenAILLM without a tracker: its retries and
    failures must still reach the index's cost report."""
    from hygraph.index import GraphIndex

    server = ScriptedServer([error(503), error(429, {"Retry-After": "0"}), ok("fine")])
    llm = OpenAILLM("test-model", BASE_URL, "sk-test", http_client=server.client(),
                    backoff_base=0.0, backoff_max=0.0)  # fmt: skip
    with GraphIndex(tmp_path / "ix", llm=llm, extractor="offline", progress=False) as index:
        assert index.llm is not None
        assert run_sync(lambda: index.llm.acomplete(MESSAGES)).text == "fine"
        total = index.tracker.total()
    assert (total.llm_calls, total.llm_retries, total.llm_failed_calls) == (1, 2, 0)
