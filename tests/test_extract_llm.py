"""Tests of LLM extraction: prompts, tolerant parsing and the two LLM extractors.

No network. The model is :class:`ScriptedLLM`, a test double for the
:class:`~hygraph.models.base.LLM` protocol that replays scripted replies shaped like
what real endpoints and small local models return (fenced JSON, ``<think>`` blocks,
truncated output, Python-style quotes, refusals, empty strings) and records every call.
"""

from __future__ import annotations

import asyncio
import json
import logging
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from doubles import Reply, Responder, ScriptedLLM

from hygraph.errors import HygraphError, ModelError
from hygraph.extract.llm import EmptyExtractionWarning, TwoStepLLMExtractor, UnifiedLLMExtractor
from hygraph.extract.parse import parse_ner, parse_triples, parse_unified
from hygraph.extract.schema import (
    DEFAULT_ENTITY_SCORE,
    DEFAULT_FACT_SCORE,
    ChunkInput,
    Entity,
    Extraction,
    ExtractionStats,
    Extractor,
)
from hygraph.models.base import LLM, Message
from hygraph.models.cache import DiskCache
from hygraph.models.llm import CachedLLM, OpenAILLM
from hygraph.prompts import extraction as prompts
from hygraph.prompts.replies import ParseError, parse_json_payload

# --------------------------------------------------------------------------- replies

PERFECT = json.dumps(
    {
        "entities": [
            {
                "name": "Ada Lovelace",
                "type": "person",
                "description": "Mathematician who wrote notes on the Analytical Engine.",
                "importance": 95,
            },
            {
                "name": "Analytical Engine",
                "type": "machine",
                "description": "Mechanical computer designed by Charles Babbage.",
                "importance": 85,
            },
            {
                "name": "Charles Babbage",
                "type": "person",
                "description": "Designer of the Analytical Engine.",
                "importance": 70,
            },
        ],
        "relations": [
            {
                "source": "Ada Lovelace",
                "target": "Analytical Engine",
                "label": "wrote notes on",
                "description": "Lovelace annotated a paper on the engine.",
                "strength": 9,
            },
            {
                "source": "Charles Babbage",
                "target": "Analytical Engine",
                "label": "designed",
                "description": "Babbage designed the engine.",
                "strength": 10,
            },
        ],
        "facts": [
            {
                "statement": "Ada Lovelace wrote notes on the Analytical Engine that Charles "
                "Babbage designed.",
                "entities": ["Ada Lovelace", "Analytical Engine", "Charles Babbage"],
                "completeness": 9,
            }
        ],
        "units": [
            "Ada Lovelace wrote notes on the Analytical Engine.",
            "Charles Babbage designed the Analytical Engine.",
        ],
    }
)

FENCED = (
    "Sure! Here is the extraction you asked for:\n\n```json\n"
    '{"entities": [{"name": "Marie Curie", "type": "person", "importance": 90},\n'
    '  {"name": "Warsaw", "type": "city", "importance": 60}],\n'
    ' "relations": [{"source": "Marie Curie", "target": "Warsaw", "label": "born in"}],\n'
    ' "facts": [], "units": ["Marie Curie was born in Warsaw."]}\n'
    "```\n\nLet me know if you need anything else!"
)

THINKING = (
    "<think>\nThe passage mentions Kyoto and Japan. I should output {entities: [...]} "
    "and maybe [relations].\n</think>\n\n"
    '{"entities": [{"name": "Kyoto", "type": "city"}, {"name": "Japan", "type": "country"}], '
    '"relations": [{"source": "Kyoto", "target": "Japan", "label": "located in"}], '
    '"facts": [], "units": []}'
)

TRUNCATED = (
    '{"entities": [{"name": "Nile", "type": "river", "importance": 80}, '
    '{"name": "Egypt", "type": "country", "importance": 75}, {"name": "Cai'
)

SLOPPY = (
    "{'entities': [{'name': 'Oslo', 'type': 'city', 'importance': 70,},"
    " {'name': 'Norway', 'type': 'country',},],"
    " 'relations': [{'source': 'Oslo', 'target': 'Norway', 'label': 'capital of',},],"
    " 'facts': [], 'units': ['Oslo is the capital of Norway.',],}"
)

WRONG_TYPES = json.dumps(
    {
        "entities": [
            {"name": "Apollo 11", "type": "mission", "importance": "85"},
            "Neil Armstrong",
            {"name": ["Buzz", "Aldrin"], "type": "person", "importance": "high"},
        ],
        "relations": [
            {
                "source": "Neil Armstrong",
                "target": "Apollo 11",
                "label": "commanded",
                "strength": "8",
            }
        ],
        "facts": [
            {
                "statement": "Neil Armstrong and Buzz Aldrin landed on the Moon with Apollo 11.",
                "entities": ["Neil Armstrong", "Buzz Aldrin", "Apollo 11"],
                "completeness": "high",
            },
            {"statement": "Apollo 11 launched in July 1969.", "completeness": "7"},
        ],
        "units": [{"text": "Apollo 11 landed on the Moon."}, "Armstrong walked first."],
    }
)

MISSING_FIELDS = json.dumps(
    {
        "entities": [
            {"name": "Rome", "type": "city"},
            {"type": "person", "description": "nameless"},
            {"name": "   "},
            42,
        ],
        "relations": [
            {"source": "Rome", "target": "Italy", "label": "capital of"},
            {"source": "Rome", "label": "near"},
        ],
        "facts": [{"entities": ["Rome"], "completeness": 5}, {"statement": "Rome is old."}],
        "units": ["", {"note": "no text"}, "Rome is the capital of Italy."],
    }
)

EXTRA_KEYS = json.dumps(
    {
        "entities": [
            {"entity_name": "Lisbon", "entity_type": "city", "score": 66, "confidence": "n/a"}
        ],
        "relationships": [{"head": "Lisbon", "tail": "Portugal", "relation": "capital of"}],
        "facts": [{"text": "Lisbon is the capital of Portugal.", "members": ["Lisbon"]}],
        "units": [],
        "notes": "I was careful.",
        "language": "English",
    }
)

GARBAGE = "I cannot help with that."
EMPTY = ""
EMPTY_LISTS = '{"entities": [], "relations": [], "facts": [], "units": []}'


# --------------------------------------------------------------------------- doubles


class StubBaseline:
    """A stand-in for the offline extractor: a fixed number of entities per chunk."""

    def __init__(self, per_chunk: int) -> None:
        self.name = "stub-baseline"
        self.stats = ExtractionStats()
        self.per_chunk = per_chunk
        self.seen: list[str] = []

    def extract(self, chunks: Sequence[ChunkInput]) -> list[Extraction]:
        self.seen.extend(c.id for c in chunks)
        return [
            Extraction(c.id, entities=[Entity(f"E{i}") for i in range(self.per_chunk)])
            for c in chunks
        ]


def chunk(i: int, text: str | None = None) -> ChunkInput:
    return ChunkInput(id=f"c{i}", doc_id="d1", text=text or f"Passage number {i}.")


def by_passage(replies: dict[str, Reply]) -> Responder:
    """A responder choosing the reply by a marker found in the last user message."""

    def respond(messages: list[Message], params: dict[str, Any]) -> Reply:
        last = messages[-1]["content"]
        for marker, reply in replies.items():
            if marker in last:
                return reply
        raise AssertionError(f"no scripted reply for {last[:60]!r}")

    return respond


def names(extraction: Extraction) -> list[str]:
    return [e.name for e in extraction.entities]


def _silent_baseline() -> StubBaseline:
    return StubBaseline(0)


# --------------------------------------------------------------------------- prompts


def test_prompts_build_messages_and_keep_braces_in_text() -> None:
    text = 'Code like {"a": 1} and {placeholder} must survive formatting.'
    messages = prompts.unified_messages(text, ["person", "place"])
    assert [m["role"] for m in messages] == ["system", "user"]
    assert text in messages[1]["content"]
    assert "person, place" in messages[1]["content"]
    assert "JSON" in messages[0]["content"]  # OpenAI JSON mode requires the word
    open_types = prompts.unified_messages(text, None)[1]["content"]
    assert prompts.UNIFIED_TYPES_OPEN in open_types

    # the example in the system prompt is valid JSON of the requested shape
    example = prompts.UNIFIED_SYSTEM.split("Example reply:", 1)[1]
    parsed, bad = parse_unified(example, "x")
    assert bad == 0 and parsed.entities and parsed.relations and parsed.facts and parsed.units
    assert all(len(f.entities) >= 2 for f in parsed.facts)

    ner = prompts.ner_messages(text)
    assert [m["role"] for m in ner] == ["system", "user", "assistant", "user"]
    assert text in ner[-1]["content"]
    assert parse_ner(ner[2]["content"])[0]  # the one-shot reply parses
    openie = prompts.openie_messages(text, ["Alpha", "Béta"])
    assert '["Alpha", "Béta"]' in openie[-1]["content"]
    assert parse_triples(openie[2]["content"])[0]

    glean = prompts.glean_messages(messages, "REPLY")
    assert glean[:2] == messages
    assert glean[2] == {"role": "assistant", "content": "REPLY"}
    assert glean[3] == {"role": "user", "content": prompts.GLEAN_USER}
    json.loads(prompts.GLEAN_USER[prompts.GLEAN_USER.index("{") :].rstrip("."))

    summary = prompts.summarize_messages("Ada Lovelace", ["A mathematician.", " Wrote  notes."], 80)
    assert "- A mathematician.\n- Wrote notes." in summary[1]["content"]
    assert "80 words" in summary[1]["content"] and "Ada Lovelace" in summary[1]["content"]


# --------------------------------------------------------------------------- payload


@pytest.mark.parametrize(
    ("text", "expected_names"),
    [
        (PERFECT, ["Ada Lovelace", "Analytical Engine", "Charles Babbage"]),
        (FENCED, ["Marie Curie", "Warsaw"]),
        (THINKING, ["Kyoto", "Japan"]),
        (TRUNCATED, ["Nile", "Egypt", "Cai"]),
        (SLOPPY, ["Oslo", "Norway"]),
        ('{entities: [{name: "Bern"}]}', ["Bern"]),
        ('reasoning without an opening tag</think>{"entities": [{"name": "Graz"}]}', ["Graz"]),
        ('Output [as requested]: {"entities": [{"name": "Riga"}]} Done.', ["Riga"]),
    ],
    ids=["perfect", "fenced", "think", "truncated", "sloppy", "unquoted", "stray-close", "prose"],
)
def test_parse_json_payload_recovers(text: str, expected_names: list[str]) -> None:
    payload = parse_json_payload(text)
    assert [e["name"] for e in payload["entities"]] == expected_names


@pytest.mark.parametrize(
    "text",
    [GARBAGE, EMPTY, "   \n", "<think>Let me see {entities: ...", "{", "Sorry [no]"],
    ids=["garbage", "empty", "blank", "unclosed-think", "lone-brace", "prose-bracket"],
)
def test_parse_json_payload_raises(text: str) -> None:
    with pytest.raises(ParseError):
        parse_json_payload(text)
    assert issubclass(ParseError, HygraphError)


# --------------------------------------------------------------------------- unified parser


def test_parse_unified_perfect() -> None:
    extraction, bad = parse_unified(PERFECT, "c1")
    assert bad == 0
    assert extraction.chunk_id == "c1"
    ada = extraction.entities[0]
    assert (ada.name, ada.type, ada.score) == ("Ada Lovelace", "person", 95.0)
    assert extraction.relations[1].weight == 10.0
    assert extraction.relations[0].label == "wrote notes on"
    fact = extraction.facts[0]
    assert fact.score == 9.0 and len(fact.entities) == 3
    assert [u.text for u in extraction.units][0].startswith("Ada Lovelace wrote")


def test_parse_unified_coerces_wrong_types() -> None:
    extraction, bad = parse_unified(WRONG_TYPES, "c1")
    assert bad == 0
    apollo, neil, buzz = extraction.entities
    assert apollo.score == 85.0
    assert (neil.name, neil.type, neil.score) == ("Neil Armstrong", "entity", DEFAULT_ENTITY_SCORE)
    assert buzz.name == "Buzz Aldrin" and buzz.score == DEFAULT_ENTITY_SCORE
    assert extraction.relations[0].weight == 8.0
    assert extraction.facts[0].score == DEFAULT_FACT_SCORE  # "high" is not a number
    assert extraction.facts[1].score == 7.0 and extraction.facts[1].entities == []
    assert [u.text for u in extraction.units] == [
        "Apollo 11 landed on the Moon.",
        "Armstrong walked first.",
    ]


def test_parse_unified_skips_and_counts_missing_fields() -> None:
    extraction, bad = parse_unified(MISSING_FIELDS, "c1")
    assert names(extraction) == ["Rome"]
    assert [(r.source, r.target) for r in extraction.relations] == [("Rome", "Italy")]
    assert [f.text for f in extraction.facts] == ["Rome is old."]
    assert [u.text for u in extraction.units] == ["Rome is the capital of Italy."]
    # 3 entities + 1 relation + 1 fact + 2 units
    assert bad == 7


def test_parse_unified_key_variants_and_extra_keys() -> None:
    extraction, bad = parse_unified(EXTRA_KEYS, "c1")
    assert bad == 0
    lisbon = extraction.entities[0]
    assert (lisbon.name, lisbon.type, lisbon.score) == ("Lisbon", "city", 66.0)
    rel = extraction.relations[0]
    assert (rel.source, rel.target, rel.label) == ("Lisbon", "Portugal", "capital of")
    assert extraction.facts[0].entities == ["Lisbon"]


def test_parse_unified_bare_list_and_wrapper() -> None:
    extraction, bad = parse_unified('["Paris", "France", 3]', "c1")
    assert names(extraction) == ["Paris", "France"] and bad == 1
    wrapped, _ = parse_unified('{"result": {"entities": [{"name": "Lyon"}]}}', "c1")
    assert names(wrapped) == ["Lyon"]


@pytest.mark.parametrize("text", [GARBAGE, EMPTY, '{"answer": "no entities here"}', "[1, 2, 3]"])
def test_parse_unified_raises_without_expected_keys(text: str) -> None:
    with pytest.raises(ParseError):
        parse_unified(text, "c1")


# --------------------------------------------------------------------------- two-step parsers


def test_parse_ner() -> None:
    found, bad = parse_ner(
        '```json\n{"named_entities": ["Tokyo", "1964", "Tokyo", 1964, null, {"name": "IOC"}]}\n```'
    )
    assert found == ["Tokyo", "1964", "IOC"] and bad == 1
    assert parse_ner('["Bonn", "Rhine"]') == (["Bonn", "Rhine"], 0)
    assert parse_ner('{"named_entities": []}') == ([], 0)
    with pytest.raises(ParseError):
        parse_ner('{"people": ["x"]}')
    with pytest.raises(ParseError):
        parse_ner(GARBAGE)


def test_parse_triples() -> None:
    text = json.dumps(
        {
            "triples": [
                ["Tokyo", "hosted", "1964 Summer Olympics"],
                ["Tokyo", "capital of"],
                ["Tokyo", "", "Japan"],
                ["Tokyo", "population", 14000000],
                ["a", "b", "c", "d"],
                {"subject": "IOC", "predicate": "awarded games to", "object": "Tokyo"},
                "Tokyo is big",
            ]
        }
    )
    triples, bad = parse_triples(text)
    assert triples == [
        ("Tokyo", "hosted", "1964 Summer Olympics"),
        ("IOC", "awarded games to", "Tokyo"),
    ]
    assert bad == 5
    assert parse_triples('[["x", "r", "y"]]') == ([("x", "r", "y")], 0)
    assert parse_triples('{"triples": [["x", "r", "y"],]}') == ([("x", "r", "y")], 0)
    with pytest.raises(ParseError, match="cut off"):  # the closing brace never came
        parse_triples('{"triples": [["x", "r", "y"],]')
    with pytest.raises(ParseError):
        parse_triples('{"entities": ["x"]}')


# --------------------------------------------------------------------------- unified extractor


def test_unified_extractor_survives_a_garbage_chunk(caplog: pytest.LogCaptureFixture) -> None:
    llm = ScriptedLLM(
        responder=by_passage(
            {"Passage number 0": PERFECT, "Passage number 1": GARBAGE, "Passage number 2": SLOPPY}
        )
    )
    extractor = UnifiedLLMExtractor(llm, baseline=_silent_baseline())
    assert isinstance(extractor, Extractor)
    assert extractor.name == "llm-unified:scripted-model"
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        out = extractor.extract([chunk(0), chunk(1), chunk(2)])
    assert [e.chunk_id for e in out] == ["c0", "c2"]
    assert all(e.extractor == extractor.name for e in out)
    assert extractor.stats.failed_chunks == 1
    assert extractor.stats.chunks == 2
    assert extractor.stats.entities == 5
    failures = [r for r in caplog.records if "failed for 1 of 3 chunks" in r.getMessage()]
    assert len(failures) == 1
    # the prompt and parameters actually sent
    messages, params = llm.calls[0]
    assert messages[0]["content"] == prompts.UNIFIED_SYSTEM
    assert params["temperature"] == 0.0 and params["max_tokens"] == 4096
    assert params["response_format"] == {"type": "json_object"}


def test_unified_extractor_counts_model_errors_and_malformed_items() -> None:
    llm = ScriptedLLM(
        responder=by_passage(
            {
                "Passage number 0": ModelError("LLM call failed after 7 attempts: HTTP 503"),
                "Passage number 1": MISSING_FIELDS,
                "Passage number 2": EMPTY,
            }
        )
    )
    extractor = UnifiedLLMExtractor(llm, baseline=_silent_baseline())
    out = extractor.extract([chunk(0), chunk(1), chunk(2)])
    assert [e.chunk_id for e in out] == ["c1"]
    assert extractor.stats.failed_chunks == 2
    assert extractor.stats.malformed_items == 7
    # normalisation added the relation's target as an entity
    assert sorted(names(out[0])) == ["Italy", "Rome"]
    assert len(llm.calls) == 3  # a 503 after the model's own retries is not retried again


def test_gleaning_appends_reply_and_merges_new_items() -> None:
    first = json.dumps(
        {
            "entities": [{"name": "Alpha", "importance": 80}, {"name": "Beta"}],
            "relations": [{"source": "Alpha", "target": "Beta", "label": "knows"}],
            "facts": [],
            "units": ["Alpha knows Beta."],
        }
    )
    second = json.dumps(
        {
            "entities": [{"name": "beta", "description": "Friend of Alpha."}, {"name": "Gamma"}],
            "relations": [
                {"source": "Alpha", "target": "Beta", "label": "knows"},
                {"source": "Beta", "target": "Gamma", "label": "meets"},
            ],
            "facts": [{"statement": "Alpha, Beta and Gamma met.", "entities": ["Gamma"]}],
            "units": ["Alpha knows Beta."],
        }
    )
    llm = ScriptedLLM([first, second, EMPTY_LISTS])
    extractor = UnifiedLLMExtractor(llm, gleaning=3, baseline=_silent_baseline())
    assert extractor.name == "llm-unified:scripted-model:glean3"
    [out] = extractor.extract([chunk(0)])
    assert len(llm.calls) == 3  # the pass with nothing new ends the gleaning early
    base = llm.calls[0][0]
    assert llm.calls[1][0] == [
        *base,
        {"role": "assistant", "content": first},
        {"role": "user", "content": prompts.GLEAN_USER},
    ]
    assert llm.calls[2][0][-2:] == [
        {"role": "assistant", "content": second},
        {"role": "user", "content": prompts.GLEAN_USER},
    ]
    assert names(out) == ["Alpha", "Beta", "Gamma"]
    assert out.entities[1].description == "Friend of Alpha."
    assert [(r.source, r.target) for r in out.relations] == [("Alpha", "Beta"), ("Beta", "Gamma")]
    assert [u.text for u in out.units] == ["Alpha knows Beta."]
    assert [f.text for f in out.facts] == ["Alpha, Beta and Gamma met."]


def test_unusable_gleaning_reply_keeps_the_first_answer() -> None:
    llm = ScriptedLLM([PERFECT, GARBAGE])
    extractor = UnifiedLLMExtractor(llm, gleaning=2, baseline=_silent_baseline())
    [out] = extractor.extract([chunk(0)])
    assert len(out.entities) == 3 and extractor.stats.failed_chunks == 0
    assert len(llm.calls) == 2


def test_failed_gleaning_call_leaves_the_chunk_pending() -> None:
    """A fault is not an answer: the chunk fails and a later build redoes it."""
    llm = ScriptedLLM([PERFECT, ModelError("HTTP 503 after 3 retries")])
    extractor = UnifiedLLMExtractor(llm, gleaning=2, baseline=_silent_baseline())
    assert extractor.extract([chunk(0)]) == []
    assert extractor.stats.failed_chunks == 1 and len(llm.calls) == 2


def test_terse_glean_reply_means_nothing_new_and_is_cached(tmp_path: Path) -> None:
    inner = ScriptedLLM([PERFECT, "{}"])
    cached = CachedLLM(inner, DiskCache(tmp_path / "llm.sqlite"))
    extractor = UnifiedLLMExtractor(cached, gleaning=2, baseline=_silent_baseline())
    [out] = extractor.extract([chunk(0)])
    assert len(out.entities) == 3 and len(inner.calls) == 2
    assert len(cached.cache) == 2
    [again] = extractor.extract([chunk(0)])
    assert again.to_dict() == out.to_dict() and len(inner.calls) == 2


def test_json_mode_falls_back_when_response_format_is_rejected(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rejected = ModelError(
        "LLM call to tiny failed: HTTP 400 (BadRequestError): "
        "response_format json_object is not supported by this model"
    )

    def respond(messages: list[Message], params: dict[str, Any]) -> Reply:
        return rejected if "response_format" in params else PERFECT

    llm = ScriptedLLM(responder=respond)
    extractor = UnifiedLLMExtractor(llm, baseline=_silent_baseline())
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        out = extractor.extract([chunk(0)])
        assert len(out) == 1
        assert ["response_format" in p for _, p in llm.calls] == [True, False]
        out = extractor.extract([chunk(1), chunk(2)])
    assert len(out) == 2 and extractor.stats.failed_chunks == 0
    assert all("response_format" not in p for _, p in llm.calls[2:])
    assert len(llm.calls) == 4
    assert sum("rejected response_format" in r.getMessage() for r in caplog.records) == 1

    off = ScriptedLLM([PERFECT])
    UnifiedLLMExtractor(off, json_mode=False, max_tokens=None, baseline=_silent_baseline()).extract(
        [chunk(0)]
    )
    assert off.calls[0][1] == {"temperature": 0.0}


def test_json_mode_probe_avoids_a_storm_of_rejected_calls() -> None:
    rejected = ModelError("LLM call to tiny failed: HTTP 400 (BadRequestError): bad request")

    def respond(messages: list[Message], params: dict[str, Any]) -> Reply:
        return rejected if "response_format" in params else PERFECT

    llm = ScriptedLLM(responder=respond)
    extractor = UnifiedLLMExtractor(llm, baseline=_silent_baseline())
    out = extractor.extract([chunk(i) for i in range(6)])
    assert len(out) == 6
    # one rejected probe, then every chunk once without response_format
    assert ["response_format" in p for _, p in llm.calls] == [True] + [False] * 6

    accepting = ScriptedLLM(responder=lambda messages, params: PERFECT)
    extractor = UnifiedLLMExtractor(accepting, baseline=_silent_baseline())
    assert len(extractor.extract([chunk(i) for i in range(4)])) == 4
    assert all(p["response_format"] == {"type": "json_object"} for _, p in accepting.calls)


def test_real_openai_client_falls_back_on_http_400() -> None:
    """End to end through OpenAILLM and the openai SDK, against an in-process fake endpoint."""
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        if "response_format" in body:
            error = {"message": "response_format is not supported", "type": "invalid_request"}
            return httpx.Response(400, json={"error": error})
        message = {"role": "assistant", "content": FENCED}
        return httpx.Response(
            200,
            json={
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": "tiny",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 50, "completion_tokens": 40, "total_tokens": 90},
            },
        )

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    llm = OpenAILLM("tiny", "http://llm.test/v1", "sk-test", http_client=client, max_retries=0)
    extractor = UnifiedLLMExtractor(llm, baseline=_silent_baseline())
    out = extractor.extract([chunk(0), chunk(1)])
    assert [names(e) for e in out] == [["Marie Curie", "Warsaw"]] * 2
    assert ["response_format" in b for b in bodies] == [True, False, False]
    assert bodies[1]["max_tokens"] == 4096 and bodies[1]["temperature"] == 0.0
    assert bodies[1]["messages"][0]["content"] == prompts.UNIFIED_SYSTEM


def test_other_bad_requests_keep_json_mode() -> None:
    too_long = ModelError("LLM call to m failed: HTTP 400 (BadRequestError): context too long")
    llm = ScriptedLLM([too_long, too_long, PERFECT])
    extractor = UnifiedLLMExtractor(llm, baseline=_silent_baseline())
    assert extractor.extract([chunk(0)]) == []
    assert extractor.stats.failed_chunks == 1
    extractor.extract([chunk(1)])
    assert "response_format" in llm.calls[2][1]  # the retry failed too: JSON mode stays


def test_cached_llm_never_caches_unparseable_replies(tmp_path: Path) -> None:
    inner = ScriptedLLM([GARBAGE, PERFECT])
    cached = CachedLLM(inner, DiskCache(tmp_path / "llm.sqlite"))
    extractor = UnifiedLLMExtractor(cached, baseline=_silent_baseline())

    assert extractor.extract([chunk(0)]) == []
    assert extractor.stats.failed_chunks == 1
    assert len(cached.cache) == 0

    [first] = extractor.extract([chunk(0)])  # asked again: the garbage was not cached
    assert len(inner.calls) == 2 and len(cached.cache) == 1

    [again] = extractor.extract([chunk(0)])  # the good reply was cached
    assert len(inner.calls) == 2
    assert again.to_dict() == first.to_dict()
    assert extractor.stats.failed_chunks == 1


def test_empty_output_guard_warns_once() -> None:
    llm = ScriptedLLM(responder=lambda messages, params: EMPTY_LISTS)
    baseline = StubBaseline(per_chunk=4)
    extractor = UnifiedLLMExtractor(llm, baseline=baseline)
    with pytest.warns(EmptyExtractionWarning) as record:
        out = extractor.extract([chunk(0), chunk(1)])
    assert len(record) == 1
    message = str(record[0].message)
    assert "2 of 2 chunks" in message and "JSON" in message
    assert extractor.stats.empty_llm_chunks == 2
    assert [e.entities for e in out] == [[], []]  # empty but successful: kept
    assert extractor.stats.failed_chunks == 0

    with pytest.warns(EmptyExtractionWarning, match=r"\(3 so far\)"):
        extractor.extract([chunk(2)])
    assert extractor.stats.empty_llm_chunks == 3


def test_empty_output_guard_is_quiet_when_baseline_agrees() -> None:
    llm = ScriptedLLM(responder=by_passage({"number 0": EMPTY_LISTS, "number 1": PERFECT}))
    baseline = StubBaseline(per_chunk=2)  # below the threshold of 3
    extractor = UnifiedLLMExtractor(llm, baseline=baseline)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyExtractionWarning)
        extractor.extract([chunk(0), chunk(1)])
    assert extractor.stats.empty_llm_chunks == 0
    assert baseline.seen == ["c0"]  # only chunks without LLM entities are checked


def test_empty_output_guard_uses_the_offline_extractor_by_default() -> None:
    text = "Marie Curie and Pierre Curie worked in Paris with Henri Becquerel at the Sorbonne."
    extractor = UnifiedLLMExtractor(ScriptedLLM([EMPTY_LISTS]))
    with pytest.warns(EmptyExtractionWarning, match="1 of 1 chunks"):
        extractor.extract([ChunkInput("c0", "d1", text)])
    assert extractor.stats.empty_llm_chunks == 1


def test_normalisation_merges_spelling_variants_from_one_reply() -> None:
    reply = json.dumps(
        {
            "entities": [
                {"name": "The  Beatles", "type": "band", "importance": 70},
                {
                    "name": "the beatles",
                    "description": "Rock band from Liverpool.",
                    "importance": 90,
                },
            ],
            "relations": [{"source": "the beatles", "target": "Liverpool", "label": "from"}],
            "facts": [],
            "units": [],
        }
    )
    extractor = UnifiedLLMExtractor(ScriptedLLM([reply]), baseline=_silent_baseline())
    [out] = extractor.extract([chunk(0)])
    assert names(out) == ["The Beatles", "Liverpool"]
    beatles = out.entities[0]
    assert (beatles.type, beatles.score) == ("band", 90.0)
    assert beatles.description == "Rock band from Liverpool."


def test_extract_inside_a_running_event_loop() -> None:
    extractor = UnifiedLLMExtractor(ScriptedLLM([PERFECT]), baseline=_silent_baseline())

    async def main() -> list[Extraction]:
        return extractor.extract([chunk(0)])

    assert len(asyncio.run(main())[0].entities) == 3


def test_aextract_and_entity_types() -> None:
    llm = ScriptedLLM([PERFECT])
    extractor = UnifiedLLMExtractor(
        llm, entity_types=["person", "machine"], temperature=0.3, baseline=_silent_baseline()
    )
    out = asyncio.run(extractor.aextract([chunk(0)]))
    assert len(out) == 1
    messages, params = llm.calls[0]
    assert "person, machine" in messages[1]["content"]
    assert params["temperature"] == 0.3


# --------------------------------------------------------------------------- two-step extractor


def test_two_step_extractor_builds_entities_and_relations() -> None:
    text = "Marie Curie won the Nobel Prize in Physics in 1903 together with Pierre Curie."
    ner = '{"named_entities": ["Marie Curie", "Nobel Prize in Physics", "1903"]}'
    triples = (
        "```json\n"
        '{"triples": [["Marie Curie", "won", "Nobel Prize in Physics"], '
        '["Marie Curie", "won prize in", "1903"], '
        '["Marie Curie", "shared prize with", "Pierre Curie"], '
        '["Marie Curie", "won"]]}\n```'
    )
    llm = ScriptedLLM([ner, triples])
    extractor = TwoStepLLMExtractor(llm, baseline=_silent_baseline())
    assert isinstance(extractor, Extractor)
    assert extractor.name == "llm-twostep:scripted-model"
    [out] = extractor.extract([ChunkInput("c9", "d1", text)])

    assert names(out) == ["Marie Curie", "Nobel Prize in Physics", "1903", "Pierre Curie"]
    assert all(e.type == "entity" for e in out.entities)
    shared = out.relations[2]
    assert (shared.source, shared.label, shared.target) == (
        "Marie Curie",
        "shared prize with",
        "Pierre Curie",
    )
    assert shared.description == "Marie Curie shared prize with Pierre Curie"
    assert shared.weight == 1.0
    assert out.facts == [] and out.units == []
    assert extractor.stats.malformed_items == 1

    ner_call, openie_call = llm.calls
    assert ner_call[0][0]["content"] == prompts.NER_SYSTEM and text in ner_call[0][-1]["content"]
    assert openie_call[0][0]["content"] == prompts.OPENIE_SYSTEM
    assert '["Marie Curie", "Nobel Prize in Physics", "1903"]' in openie_call[0][-1]["content"]
    assert openie_call[1]["response_format"] == {"type": "json_object"}


def test_two_step_failures_and_empty_ner() -> None:
    llm = ScriptedLLM(
        responder=by_passage(
            {
                "Passage number 0": '{"named_entities": []}',
                "Passage number 1": GARBAGE,
            }
        )
    )
    baseline = StubBaseline(per_chunk=5)
    extractor = TwoStepLLMExtractor(llm, baseline=baseline)
    with pytest.warns(EmptyExtractionWarning):
        out = extractor.extract([chunk(0), chunk(1)])
    assert [e.chunk_id for e in out] == ["c0"]
    assert len(llm.calls) == 2  # no OpenIE call without entities, none after a failed NER
    assert extractor.stats.failed_chunks == 1 and extractor.stats.empty_llm_chunks == 1


def test_scripted_llm_satisfies_the_protocol() -> None:
    llm = ScriptedLLM(["hi"])
    assert isinstance(llm, LLM)
    assert llm.complete([{"role": "user", "content": "x"}], temperature=0).text == "hi"


def test_a_reply_cut_off_mid_json_is_not_stored_even_when_marked_stop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A server that stops mid-answer but reports ``finish_reason: stop``: the JSON is
    closed by nobody, so the chunk fails (stays pending) instead of keeping one entity
    of eight; the next build's whole reply is the one stored."""
    cut = PERFECT[: PERFECT.index("Charles Babbage") + 8]  # inside the third entity
    assert json.loads(PERFECT) and cut.count("{") > cut.count("}")
    inner = ScriptedLLM([cut, PERFECT])  # both answered with finish_reason "stop"
    cached = CachedLLM(inner, DiskCache(tmp_path / "llm.sqlite"))
    extractor = UnifiedLLMExtractor(cached, baseline=_silent_baseline())
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        assert extractor.extract([chunk(0)]) == []
    assert extractor.stats.failed_chunks == 1 and len(cached.cache) == 0
    assert any("cut off" in r.getMessage() for r in caplog.records)
    [whole] = extractor.extract([chunk(0)])
    assert names(whole) == ["Ada Lovelace", "Analytical Engine", "Charles Babbage"]
    assert len(whole.relations) == 2


def test_parse_json_payload_whole_refuses_what_it_would_repair() -> None:
    assert parse_json_payload(TRUNCATED)["entities"]  # tolerant by default
    with pytest.raises(ParseError, match="cut off"):
        parse_json_payload(TRUNCATED, whole=True)
    assert parse_json_payload(PERFECT, whole=True)["entities"]
    assert parse_json_payload(SLOPPY, whole=True)  # trailing commas etc. are not a cut
