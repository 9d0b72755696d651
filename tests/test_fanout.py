"""The LLM fan-out (:mod:`hygraph.models.fanout`): order, failures, the bound, progress.

The model here is :class:`~doubles.ScriptedLLM`, a scripted test double of the LLM
protocol (no endpoint is called); :class:`PacedLLM` adds to it a pause per call and a
count of calls in flight, so that concurrency and completion order can be observed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from doubles import ScriptedLLM

import hygraph.models.fanout as fanout
from hygraph.errors import ModelError
from hygraph.models.base import LLMResponse, Message
from hygraph.models.fanout import DEFAULT_CONCURRENCY, acomplete_many, complete_many


def echo(messages: list[Message], params: dict[str, Any]) -> str:
    """Reply with the prompt's text, upper-cased, so each reply names its prompt."""
    return messages[-1]["content"].upper()


class PacedLLM(ScriptedLLM):
    """A :class:`ScriptedLLM` (scripted test double) whose calls take ``delay(prompt)``
    seconds of ``asyncio.sleep`` and which records the most calls in flight at once."""

    def __init__(self, *args: Any, delay: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.delay = delay or (lambda text: 0.01)
        self.in_flight = 0
        self.max_in_flight = 0
        self.finished: list[str] = []
        self.closed = 0

    async def acomplete(self, messages: Sequence[Message], **params: Any) -> LLMResponse:
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay(messages[-1]["content"]))
            return await super().acomplete(messages, **params)
        finally:
            self.in_flight -= 1
            self.finished.append(messages[-1]["content"])

    async def aclose(self) -> None:
        self.closed += 1


def prompts(n: int) -> list[list[Message]]:
    return [[{"role": "user", "content": f"prompt {i}"}] for i in range(n)]


def test_replies_come_back_in_prompt_order_whatever_order_calls_finish_in() -> None:
    llm = PacedLLM(responder=echo, delay=lambda text: 0.05 - 0.01 * int(text.split()[1]))
    replies = complete_many(llm, prompts(5), progress=False)
    assert replies == [f"PROMPT {i}" for i in range(5)]
    assert llm.finished == [f"prompt {i}" for i in reversed(range(5))]  # last finished first


def test_failures_are_returned_in_place_and_the_others_kept() -> None:
    boom = ModelError("HTTP 500: down")
    llm = ScriptedLLM(routes={"prompt 0": "zero", "prompt 1": boom, "prompt 2": "two"})
    replies = complete_many(llm, prompts(3), progress=False)
    assert replies[0] == "zero" and replies[2] == "two"
    assert replies[1] is boom


def test_a_bug_in_the_model_is_a_returned_failure_too() -> None:
    llm = ScriptedLLM(routes={"prompt 0": ValueError("bad adapter"), "prompt 1": "one"})
    replies = complete_many(llm, prompts(2), progress=False)
    assert isinstance(replies[0], ValueError) and replies[1] == "one"


@pytest.mark.parametrize("bound", [1, 3, DEFAULT_CONCURRENCY])
def test_calls_in_flight_never_exceed_the_bound(bound: int) -> None:
    llm = PacedLLM(responder=echo)
    replies = complete_many(llm, prompts(20), progress=False, concurrency=bound)
    assert len(replies) == 20 and len(llm.calls) == 20
    assert llm.max_in_flight == bound  # reached, never passed


def test_no_prompts_returns_an_empty_list_without_an_event_loop(monkeypatch) -> None:
    def no_loop(factory: Any) -> Any:
        raise AssertionError("an event loop was started for no prompts")

    monkeypatch.setattr(fanout, "run_sync", no_loop)
    llm = ScriptedLLM()
    assert complete_many(llm, []) == []
    assert asyncio.run(acomplete_many(llm, [])) == []
    assert llm.calls == []


def test_progress_disabled_still_answers_every_prompt() -> None:
    llm = ScriptedLLM(responder=echo)
    assert complete_many(llm, prompts(3), progress=False, desc="quiet") == [
        "PROMPT 0",
        "PROMPT 1",
        "PROMPT 2",
    ]


def test_the_bar_counts_every_finished_call_failures_included_and_is_closed(monkeypatch) -> None:
    made: list[dict[str, Any]] = []

    class Bar:
        def __init__(self) -> None:
            self.updates = 0
            self.closed = False

        def update(self, n: int) -> None:
            self.updates += n

        def close(self) -> None:
            self.closed = True

    def fake_bar(iterable: Any, **kwargs: Any) -> Bar:
        bar = Bar()
        made.append({"iterable": iterable, "bar": bar, **kwargs})
        return bar

    monkeypatch.setattr(fanout, "progress_bar", fake_bar)
    llm = ScriptedLLM(routes={"prompt 0": "a", "prompt 1": ModelError("x"), "prompt 2": "c"})
    complete_many(llm, prompts(3), desc="summaries", progress=True)
    (record,) = made
    assert record["iterable"] is None and record["total"] == 3
    assert record["desc"] == "summaries" and record["enabled"] is True
    assert record["unit"] == "call"
    assert record["bar"].updates == 3 and record["bar"].closed


def test_temperature_is_sent_with_every_call_and_defaults_to_an_int_zero() -> None:
    llm = ScriptedLLM(responder=echo)
    complete_many(llm, prompts(2), progress=False)
    complete_many(llm, prompts(1), progress=False, temperature=0.7)
    params = [p for _, p in llm.calls]
    assert params == [{"temperature": 0}, {"temperature": 0}, {"temperature": 0.7}]
    assert all(type(p["temperature"]) is int for p in params[:2])  # cache keys unchanged


def test_complete_many_closes_the_model_on_its_own_loop_and_acomplete_many_does_not() -> None:
    llm = PacedLLM(responder=echo)
    complete_many(llm, prompts(2), progress=False)
    assert llm.closed == 1
    asyncio.run(acomplete_many(llm, prompts(2), progress=False))
    assert llm.closed == 1  # the caller's loop: not ours to clean up


def test_works_from_inside_a_running_event_loop() -> None:
    llm = ScriptedLLM(responder=echo)

    async def caller() -> tuple[list[Any], list[Any]]:
        in_thread = complete_many(llm, prompts(2), progress=False)  # runs on a worker thread
        on_loop = await acomplete_many(llm, prompts(2), progress=False, concurrency=1)
        return in_thread, on_loop

    in_thread, on_loop = asyncio.run(caller())
    assert in_thread == on_loop == ["PROMPT 0", "PROMPT 1"]


@pytest.mark.parametrize("bound", [0, -1])
def test_a_bound_below_one_is_refused(bound: int) -> None:
    with pytest.raises(ValueError, match="concurrency"):
        complete_many(ScriptedLLM(), prompts(1), concurrency=bound)
