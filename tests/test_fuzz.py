"""Fuzz tests of every LLM-reply parser and every file loader (hypothesis).

A parser or loader must either return a value of its documented type or raise its
documented error (:class:`~hygraph.prompts.replies.ParseError` for reply parsers,
:class:`~hygraph.errors.InputError` / :class:`~hygraph.errors.HygraphError` for
loaders); any other exception is a crash and fails the test.

The inputs are realistic but hostile: random text, JSON fragments (whole, truncated,
with NaN/Infinity and long numbers), code fences, ``<think>`` blocks, n-ary record
fragments with missing parts, lone surrogates; for loaders random bytes with BOMs,
UTF-16/32, NUL bytes and jsonl lines. CI runs 200 examples per property; set
``HYGRAPH_FUZZ_EXAMPLES`` (the reliability campaign, ``benchmarks/reliability/fuzz.py``,
uses 10000) to run more.

Inputs that once crashed a target (JSON nested past the parser's depth, integers past
Python's digit limit, a questions file that is not UTF-8) are pinned in
:data:`FORMER_CRASHES` as regression cases; the campaign also draws them at random
(:func:`crash_triggers`).

``HYGRAPH_FUZZ_COLLECT=1`` (set by the campaign) records crashes in :data:`CRASHES`
instead of raising, so all examples run and distinct crashes are counted.
"""

from __future__ import annotations

import json
import os
import tempfile
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hygraph.bench.data import Dataset, load_dataset
from hygraph.errors import HygraphError, InputError
from hygraph.extract.hyper import said_yes
from hygraph.extract.noderag import parse_decomposition, parse_repaired_relationship
from hygraph.extract.parse import parse_ner, parse_triples, parse_unified
from hygraph.extract.records import parse_nary_records
from hygraph.extract.schema import Extraction
from hygraph.ingest.documents import Document
from hygraph.ingest.loaders import LoadResult, clean_document, load_documents
from hygraph.prompts.hypergraph import (
    COMPLETION_DELIMITER,
    RECORD_DELIMITER,
    TUPLE_DELIMITER,
    extract_answer,
    parse_question_entities,
)
from hygraph.prompts.noderag import clean_summary, parse_high_level_elements, parse_query_elements
from hygraph.prompts.replies import (
    ParseError,
    drop_think_blocks,
    listed_items,
    parse_json_payload,
    preview,
    strip_thinking,
    unfence,
)

EXAMPLES = int(os.environ.get("HYGRAPH_FUZZ_EXAMPLES", "200"))
COLLECT = os.environ.get("HYGRAPH_FUZZ_COLLECT") == "1"

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)

# --------------------------------------------------------------------------- crash bookkeeping

#: Examples run per target (the campaign reads it).
RUNS: Counter[str] = Counter()
#: target -> {crash signature: smallest input seen} (only filled when COLLECT).
CRASHES: dict[str, dict[str, Any]] = {}


def _signature(exc: BaseException) -> str:
    """Exception type plus the innermost hygraph frame (file:line, function)."""
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if "/hygraph/" in f.filename.replace(os.sep, "/")]
    frame = (ours or frames or [None])[-1]
    where = "?"
    if frame is not None:
        path = frame.filename.replace(os.sep, "/")
        path = path[path.rfind("/hygraph/") + 1 :] if "/hygraph/" in path else path
        where = f"{path}:{frame.lineno} in {frame.name}"
    return f"{type(exc).__name__} at {where}"


def _record(target: str, problem: str, example: Any) -> None:
    seen = CRASHES.setdefault(target, {})
    old = seen.get(problem)
    if old is None or len(repr(example)) < len(repr(old)):
        seen[problem] = example


def check(
    target: str,
    call: Callable[[], Any],
    returns: type | tuple[type, ...],
    allowed: tuple[type[BaseException], ...],
    example: Any,
    valid: Callable[[Any], bool] = lambda _: True,
) -> Any:
    """Run ``call``: it must return ``returns`` (and pass ``valid``) or raise ``allowed``."""
    RUNS[target] += 1
    try:
        out = call()
    except allowed:
        return None
    except Exception as exc:
        if not COLLECT:
            raise
        _record(target, _signature(exc), example)
        return None
    if not (isinstance(out, returns) and valid(out)):
        problem = f"wrong return value {type(out).__name__}: {out!r:.80}"
        if not COLLECT:
            raise AssertionError(problem)
        _record(target, "wrong return type", example)
    return out


# --------------------------------------------------------------------------- reply strategies

_KEYS = (
    "entities", "Entities", "named_entities", "relations", "relationships", "facts", "units",
    "Output", "semantic_units", "semantic_unit", "unit", "text", "name", "entity_name",
    "type", "description", "score", "importance", "source", "target", "relationship",
    "subject", "predicate", "object", "head", "tail", "members", "statement", "triples",
    "elements", "keywords", "high_level_elements", "title", "summary", "result", "answer",
)  # fmt: skip

_FRAGMENTS = (
    "{", "}", "[", "]", ",", ":", '"', "'", "`", "```", "```json\n", "```\n", "\n", " ",
    "<think>", "</think>", "<thinking>", "</thinking>", "<answer>", "</answer>",
    "NaN", "-Infinity", "Infinity", "null", "true", "false", "1e999", "-0", "0x1F",
    "9" * 300, "\\u", "\\ud800", '"\\ud800"', "\ud800", "\udfff", "\udc80", "\x00", "\x1b",
    "\u2028", "\ufeff", "“", "”", "‘", "’", "&amp;", "&#0;", "&#x110000;", "Summary:",
    "**Summary:**", "YES", "no", "## ", "- ", "{entities: [", "[[", "]]", "{{", "}}",
    RECORD_DELIMITER, COMPLETION_DELIMITER, TUPLE_DELIMITER,
    '("entity"', '("hyper-relation"', "(", ")", '("entity"<|>', '"hyper_relation"<|>',
    "A, relation, B", "A,,B", ",,,",
)  # fmt: skip

_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**300), max_value=10**300),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(_KEYS),
)
json_values = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(st.one_of(st.sampled_from(_KEYS), st.text(max_size=10)), inner, max_size=5),
    ),
    max_leaves=25,
)


@st.composite
def json_texts(draw: st.DrawFn) -> str:
    """A JSON document, perhaps truncated, re-quoted or given trailing commas."""
    text = json.dumps(draw(json_values), ensure_ascii=draw(st.booleans()))
    mutation = draw(st.sampled_from(("none", "truncate", "quotes", "commas", "slice")))
    if mutation == "truncate" and text:
        text = text[: draw(st.integers(0, len(text)))]
    elif mutation == "quotes":
        text = text.replace('"', "'")
    elif mutation == "commas":
        text = text.replace("]", ",]").replace("}", ",}")
    elif mutation == "slice" and text:
        a = draw(st.integers(0, len(text)))
        text = text[a : draw(st.integers(a, len(text)))]
    return text


@st.composite
def record_texts(draw: st.DrawFn) -> str:
    """HyperGraphRAG delimited records, some with missing or garbled parts."""
    field = st.one_of(
        st.text(max_size=15), st.sampled_from(("", '""', "85", "9", "-1.5", "1e5", "NaN", ".5"))
    )
    records = []
    for _ in range(draw(st.integers(0, 5))):
        tag = draw(st.sampled_from(('"entity"', '"hyper-relation"', "'Hyper Relation'", "x", "")))
        fields = draw(st.lists(field, max_size=6))
        body = TUPLE_DELIMITER.join(
            [tag, *(f'"{f}"' if draw(st.booleans()) else f for f in fields)]
        )
        opening, closing = draw(st.sampled_from((("(", ")"), ("(", ""), ("", ")"), ("", ""))))
        records.append(opening + body + closing)
    sep = draw(st.sampled_from((RECORD_DELIMITER, "\n", "", RECORD_DELIMITER + "\n")))
    end = draw(st.sampled_from((COMPLETION_DELIMITER, "", "<|complete|>")))
    return sep.join(records) + end


text_pieces = st.one_of(
    st.text(max_size=40),
    st.sampled_from(_FRAGMENTS),
    json_texts(),
    record_texts(),
    st.text(alphabet=st.sampled_from("{}[]\",:'`<>/() \n\\"), max_size=40),
    st.integers(1, 60).map(lambda n: "[" * n),
    st.integers(1, 60).map(lambda n: '{"a":' * n),
)


@st.composite
def replies(draw: st.DrawFn) -> str:
    """A hostile LLM reply: pieces joined, maybe fenced and wrapped in reasoning."""
    text = "".join(draw(st.lists(text_pieces, max_size=8)))
    if draw(st.booleans()):
        text = f"```{draw(st.sampled_from(('', 'json', 'JSON ', 'text')))}\n{text}"
        text += draw(st.sampled_from(("```", "", "\n```\nthanks")))
    think = draw(st.sampled_from(("", "<think>", "<think>x</think>", "</think>", "<thinking>a")))
    return think + text if draw(st.booleans()) else text + think


questions = st.text(max_size=30)
chunk_ids = st.text(min_size=1, max_size=8)


def _str_list(value: Any) -> bool:
    return all(isinstance(v, str) for v in value)


def _pairs(value: Any) -> bool:
    return all(isinstance(p, tuple) and len(p) == 2 and _str_list(p) for p in value)


def _extraction_pair(value: Any) -> bool:
    return len(value) == 2 and isinstance(value[0], Extraction) and isinstance(value[1], int)


def _triple_or_none(value: Any) -> bool:
    return value is None or (isinstance(value, tuple) and len(value) == 3 and _str_list(value))


# --------------------------------------------------------------------------- reply parsers

P = (ParseError,)


@FUZZ
@given(replies())
def test_fuzz_parse_json_payload(text: str) -> None:
    check("parse_json_payload", lambda: parse_json_payload(text), (dict, list), P, text)


@FUZZ
@given(replies(), st.lists(st.sampled_from(_KEYS), min_size=1, max_size=3))
def test_fuzz_listed_items(text: str, keys: list[str]) -> None:
    check("listed_items", lambda: listed_items(text, keys, "items"), list, P, text)


@FUZZ
@given(replies(), st.integers(-5, 200))
def test_fuzz_text_helpers(text: str, limit: int) -> None:
    """strip_thinking, drop_think_blocks, unfence, preview: plain text in, text out."""
    for name, fn in (
        ("strip_thinking", strip_thinking),
        ("drop_think_blocks", drop_think_blocks),
        ("unfence", unfence),
        ("preview", lambda t: preview(t, max(limit, 4))),
    ):
        check(name, lambda fn=fn: fn(text), str, (), text)


@FUZZ
@given(replies(), questions)
def test_fuzz_parse_question_entities(text: str, question: str) -> None:
    check(
        "parse_question_entities",
        lambda: parse_question_entities(text, question),
        list,
        (),  # documented: never raises, falls back to [question]
        text,
        lambda v: bool(v) and _str_list(v),
    )


@FUZZ
@given(replies())
def test_fuzz_extract_answer(text: str) -> None:
    check("extract_answer", lambda: extract_answer(text), str, (), text)


@FUZZ
@given(replies(), questions)
def test_fuzz_parse_query_elements(text: str, question: str) -> None:
    check(
        "parse_query_elements",
        lambda: parse_query_elements(text, question),
        list,
        P,
        text,
        _str_list,
    )


@FUZZ
@given(replies())
def test_fuzz_parse_high_level_elements(text: str) -> None:
    check(
        "parse_high_level_elements", lambda: parse_high_level_elements(text), list, P, text, _pairs
    )


@FUZZ
@given(replies())
def test_fuzz_clean_summary(text: str) -> None:
    check("clean_summary", lambda: clean_summary(text), str, P, text, bool)


@FUZZ
@given(replies())
def test_fuzz_said_yes(text: str) -> None:
    check("said_yes", lambda: said_yes(text), bool, P, text)


@FUZZ
@given(replies(), chunk_ids)
def test_fuzz_parse_nary_records(text: str, chunk_id: str) -> None:
    check(
        "parse_nary_records",
        lambda: parse_nary_records(text, chunk_id),
        tuple,
        P,
        text,
        _extraction_pair,
    )


@FUZZ
@given(replies(), chunk_ids)
def test_fuzz_parse_unified(text: str, chunk_id: str) -> None:
    check("parse_unified", lambda: parse_unified(text, chunk_id), tuple, P, text, _extraction_pair)


@FUZZ
@given(replies())
def test_fuzz_parse_ner(text: str) -> None:
    check(
        "parse_ner",
        lambda: parse_ner(text),
        tuple,
        P,
        text,
        lambda v: _str_list(v[0]) and isinstance(v[1], int),
    )


@FUZZ
@given(replies())
def test_fuzz_parse_triples(text: str) -> None:
    check(
        "parse_triples",
        lambda: parse_triples(text),
        tuple,
        P,
        text,
        lambda v: all(_triple_or_none(t) and t is not None for t in v[0]),
    )


@FUZZ
@given(replies(), chunk_ids)
def test_fuzz_parse_decomposition(text: str, chunk_id: str) -> None:
    check(
        "parse_decomposition",
        lambda: parse_decomposition(text, chunk_id),
        tuple,
        P,
        text,
        lambda v: len(v) == 3 and isinstance(v[0], Extraction) and isinstance(v[2], int),
    )


@FUZZ
@given(replies())
def test_fuzz_parse_repaired_relationship(text: str) -> None:
    check(
        "parse_repaired_relationship",
        lambda: parse_repaired_relationship(text),
        (tuple, type(None)),
        (),  # documented: returns None for junk
        text,
        _triple_or_none,
    )


# --------------------------------------------------------------------------- loaders

_BOMS = (b"", b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")
_CODECS = ("utf-8", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "cp1252", "latin-1")


@st.composite
def file_bytes(draw: st.DrawFn) -> bytes:
    """File content: random bytes, or text in some encoding, maybe with a BOM and NULs."""
    kind = draw(st.sampled_from(("bytes", "text", "jsonl")))
    if kind == "bytes":
        data = draw(st.binary(max_size=300))
    else:
        if kind == "text":
            text = draw(replies())
        else:
            lines = draw(
                st.lists(
                    st.one_of(
                        st.builds(
                            lambda d: json.dumps(d, ensure_ascii=False),
                            st.fixed_dictionaries(
                                {},
                                optional={
                                    "text": json_values,
                                    "id": json_values,
                                    "title": json_values,
                                    "meta": json_values,
                                },
                            ),
                        ),
                        json_texts(),
                        st.text(max_size=20),
                    ),
                    max_size=6,
                )
            )
            text = draw(st.sampled_from(("\n", "\r\n", "\u2028"))).join(lines)
        codec = draw(st.sampled_from(_CODECS))
        lossless = codec.startswith("utf") and draw(st.booleans())
        data = text.encode(codec, errors="surrogatepass" if lossless else "replace")
    if draw(st.booleans()):
        data = draw(st.sampled_from(_BOMS)) + data
    if draw(st.integers(0, 4)) == 0 and data:
        cut = draw(st.integers(0, len(data)))
        data = (
            data[:cut]
            + draw(st.sampled_from((b"\x00", b"\xff", b"\xc3", b"\xed\xa0\x80")))
            + data[cut:]
        )
    return data


def _load(data: bytes, suffix: str, max_bytes: int) -> LoadResult:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"doc{suffix}"
        path.write_bytes(data)
        return load_documents([path], max_bytes=max_bytes)


def _documents_ok(result: LoadResult) -> bool:
    return bool(result.documents) and all(
        isinstance(d, Document) and isinstance(d.id, str) and isinstance(d.text, str)
        for d in result.documents
    )


@FUZZ
@given(file_bytes(), st.sampled_from((".txt", ".md", ".markdown", ".jsonl", ".JSONL")))
def test_fuzz_load_documents(data: bytes, suffix: str) -> None:
    check(
        "load_documents",
        lambda: _load(data, suffix, 10_000),
        LoadResult,
        (InputError,),
        (suffix, data),
        _documents_ok,
    )


@FUZZ
@given(st.text(max_size=30), st.text(max_size=60), st.one_of(st.none(), st.text(max_size=10)))
def test_fuzz_clean_document(doc_id: str, text: str, title: str | None) -> None:
    """Lone surrogates anywhere in a document are made encodable."""

    def run() -> Document:
        doc = clean_document(Document(id=doc_id or "x", text=text or "x", title=title))
        (doc.id + doc.text + (doc.title or "")).encode("utf-8")
        return doc

    check("clean_document", run, Document, (HygraphError,), (doc_id, text, title))


@st.composite
def question_files(draw: st.DrawFn) -> str:
    """questions.jsonl text: records with wrong types, missing keys, junk lines."""
    record = st.fixed_dictionaries(
        {},
        optional={
            "id": json_values,
            "question": json_values,
            "answers": json_values,
            "supporting_ids": json_values,
            "type": json_values,
        },
    )
    line = st.one_of(
        record.map(json.dumps), json_values.map(json.dumps), json_texts(), st.text(max_size=20)
    )
    return "\n".join(draw(st.lists(line, max_size=5)))


def _dataset(questions_text: str | None) -> Dataset:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "corpus.jsonl").write_text('{"text": "a"}\n', encoding="utf-8")
        if questions_text is not None:
            # text without lone surrogates: non-UTF-8 files are a known crash (below)
            data = questions_text.encode("utf-8", errors="replace")
            (Path(tmp) / "questions.jsonl").write_bytes(data)
        return load_dataset(tmp)


@FUZZ
@given(st.one_of(st.none(), question_files()))
def test_fuzz_load_dataset(text: str | None) -> None:
    check("load_dataset", lambda: _dataset(text), Dataset, (InputError,), text)


# --------------------------------------------------------------------------- user structures
# Filters and recipes come from users (a LangChain ``filter=``, a YAML file): any shape
# must give a boolean / a method, or a ConfigError, never another exception.

_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True),
                     st.text(max_size=5))  # fmt: skip
_FILTER_KEYS = st.sampled_from(["year", "topic", "$and", "$or", "$in", "$gt", "$eq", "$nin",
                                "$lte", "$not", "a"])  # fmt: skip
_JSONISH = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(_FILTER_KEYS, inner, max_size=3)),
    max_leaves=12,
)  # fmt: skip


@FUZZ
@given(st.dictionaries(st.sampled_from(["year", "topic", "a"]), _SCALARS, max_size=3),
       st.one_of(_JSONISH, st.dictionaries(_FILTER_KEYS, _JSONISH, max_size=3)))  # fmt: skip
def test_fuzz_match_filters(metadata: dict[str, Any], filters: Any) -> None:
    from hygraph.errors import ConfigError
    from hygraph.filters import match_filters

    check("match_filters", lambda: match_filters(metadata, filters), bool, (ConfigError,),
          filters)  # fmt: skip


_RECIPE_VALUES = st.one_of(_JSONISH, st.just(["chunks"]), st.just("fuzzed"),
                           st.just([{"op": "question.embed"}, {"op": "chunk.vdb"}]))  # fmt: skip


@FUZZ
@given(st.dictionaries(st.sampled_from(["name", "layers", "steps", "config", "description",
                                        "answer_prompt", "generation", "when"]),
                       _RECIPE_VALUES, max_size=6))  # fmt: skip
def test_fuzz_recipe_method(data: dict[str, Any]) -> None:
    from hygraph.errors import ConfigError
    from hygraph.methods.base import _REGISTRY
    from hygraph.methods.recipes import recipe_method

    data = {"name": "fuzzed", **data} if "name" not in data else data
    before = dict(_REGISTRY)
    try:
        check("recipe_method", lambda: recipe_method(data, "fuzz.yaml"), type, (ConfigError,),
              data)  # fmt: skip
    finally:  # a recipe that loads is registered: keep other tests' method lists as they were
        _REGISTRY.clear()
        _REGISTRY.update(before)


# --------------------------------------------------------------------------- known crashes

DEEP_LIST = "[" * 1000  # json's C decoder hits the recursion limit at about 1000 levels
HUGE_INT = '{"a": ' + "1" * 4301 + "}"  # over int_max_str_digits (4300)
# A whole number past float's range (309 to 4,300 digits) wherever a reply holds values.
_LONG = "9" * 400
LONG_INT_REPLIES = [
    _LONG,
    f"[{_LONG}, {_LONG}]",
    json.dumps({"entities": [{"name": 1, "type": 2, "description": 3}],
                "relations": [{"source": 1, "target": 2, "description": 3, "keywords": 4,
                               "weight": 5, "strength": 6}],
                "facts": [[1, 2, 3]], "triples": [[1, 2, 3]], "named_entities": [1],
                "score": 7, "rating": 8, "id": 9, "answer": 10}).replace(": 1", f": {_LONG}")
    .replace(" 2", f" {_LONG}").replace(" 3", f" {_LONG}").replace(" 5", f" {_LONG}")
    .replace(" 7", f" {_LONG}").replace(" 8", f" {_LONG}").replace(" 9", f" {_LONG}"),
]  # fmt: skip

REPLY_PARSERS: dict[str, Callable[[str], Any]] = {
    "parse_json_payload": parse_json_payload,
    "listed_items": lambda t: listed_items(t, ("entities",), "entities"),
    "parse_question_entities": lambda t: parse_question_entities(t, "q"),
    "parse_query_elements": lambda t: parse_query_elements(t, "q"),
    "parse_high_level_elements": parse_high_level_elements,
    "parse_unified": lambda t: parse_unified(t, "c"),
    "parse_ner": parse_ner,
    "parse_triples": parse_triples,
    "parse_decomposition": lambda t: parse_decomposition(t, "c"),
    "parse_repaired_relationship": parse_repaired_relationship,
}
_NEVER_RAISE = {"parse_question_entities", "parse_repaired_relationship"}


def _filter_call(filters: Any) -> None:
    from hygraph.errors import ConfigError
    from hygraph.filters import match_filters

    with pytest.raises(ConfigError):
        match_filters({"a": 1}, filters)


def _recipe_call(fields: dict[str, Any]) -> None:
    from hygraph.errors import ConfigError
    from hygraph.methods.recipes import recipe_method

    steps = [{"op": "question.embed"}, {"op": "chunk.vdb"}]
    with pytest.raises(ConfigError, match="recipe fuzz.yaml"):
        recipe_method({"name": "pinned", "layers": ["chunks"], "steps": steps, **fields},
                      "fuzz.yaml")  # fmt: skip


def _reply_call(name: str, text: str) -> None:
    try:
        REPLY_PARSERS[name](text)
    except ParseError:
        if name in _NEVER_RAISE:
            raise


def _allowing_parse_error(call: Callable[[str], Any], text: str) -> None:
    """Call a parser whose documented failure is ``ParseError``."""
    try:
        call(text)
    except ParseError:
        pass


def _jsonl_call(line: str) -> None:
    try:
        _load(line.encode("utf-8"), ".jsonl", 10**6)
    except InputError:
        pass


def _questions_call(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "corpus.jsonl").write_text('{"text": "a"}\n', encoding="utf-8")
        (Path(tmp) / "questions.jsonl").write_bytes(data)
        try:
            load_dataset(tmp)
        except InputError:
            pass


NESTED_VALUE = "[" * 400 + "]" * 400
NESTED_VALUE_CALLS: dict[str, Callable[[str], Any]] = {
    "parse_unified": lambda v: parse_unified(f'{{"entities": [{{"name": {v}}}]}}', "c"),
    "parse_unified-bare-list": lambda v: parse_unified(v, "c"),
    "parse_ner": lambda v: parse_ner(f'[{{"name": {v}}}]'),
    "parse_query_elements": lambda v: parse_query_elements(f'[{{"name": {v}}}]', "q"),
    "parse_high_level_elements": lambda v: parse_high_level_elements(f'[{{"description": {v}}}]'),
    "parse_decomposition": lambda v: parse_decomposition(f'[{{"text": {v}}}]', "c"),
    "parse_repaired_relationship": lambda v: parse_repaired_relationship(
        f'{{"source": {v}, "relationship": "r", "target": "t"}}'
    ),
}

FORMER_CRASHES = [
    *(
        pytest.param(
            lambda name=name: _reply_call(name, DEEP_LIST),
            id=f"{name}-deep-nesting",
        )
        for name in REPLY_PARSERS
    ),
    *(
        pytest.param(
            lambda name=name: _reply_call(name, HUGE_INT),
            id=f"{name}-huge-int",
        )
        for name in REPLY_PARSERS
    ),
    *(
        pytest.param(
            lambda name=name, text=text: _reply_call(name, text),
            id=f"{name}-long-int-{n}",
        )
        for name in REPLY_PARSERS
        for n, text in enumerate(LONG_INT_REPLIES)
    ),
    *(
        pytest.param(
            lambda call=call: _allowing_parse_error(call, NESTED_VALUE),
            id=f"{name}-nested-value",
        )
        for name, call in NESTED_VALUE_CALLS.items()
    ),
    pytest.param(
        lambda: clean_summary('{"a":' + "[" * 1000 + "}"),
        id="clean_summary-deep-nesting",
    ),
    pytest.param(
        lambda: _jsonl_call('{"text": "a", "x": ' + "[" * 1000 + "}"),
        id="load_documents-jsonl-deep-nesting",
    ),
    pytest.param(
        lambda: _jsonl_call('{"text": "a", "x": ' + "1" * 4301 + "}"),
        id="load_documents-jsonl-huge-int",
    ),
    pytest.param(lambda: _filter_call({"$and": False}), id="match_filters-and-not-a-list"),
    pytest.param(lambda: _filter_call({"a": {"$in": 5}}), id="match_filters-in-not-a-list"),
    pytest.param(lambda: _recipe_call({"layers": True}), id="recipe-layers-true"),
    pytest.param(lambda: _recipe_call({"config": [1]}), id="recipe-config-a-list"),
    pytest.param(
        lambda: _questions_call(b"\xff\n"),
        id="load_dataset-non-utf8-questions",
    ),
    pytest.param(
        lambda: _questions_call(b"[" * 1000 + b"\n"),
        id="load_dataset-deep-nesting",
    ),
]


@pytest.mark.parametrize("call", FORMER_CRASHES)
def test_former_crash_is_handled(call: Callable[[], None]) -> None:
    """Inputs that once crashed a parser or loader now return or raise the documented
    error (the helpers swallow those); any other exception fails the test."""
    call()


# --------------------------------------------------------------------------- crash triggers


@st.composite
def crash_triggers(draw: st.DrawFn) -> str:
    """The known crash classes drawn at random, wrapped in noise (the campaign only):
    JSON values nested 250-990 deep, brackets opened 1000+ deep, over-long integers."""
    depth = draw(st.integers(1000, 3000))
    nested = draw(st.integers(250, 990))
    value = "[" * nested + "]" * nested
    core = draw(
        st.sampled_from(
            (
                value,
                f'{{"entities": [{{"name": {value}}}]}}',
                f'[{{"description": {value}, "text": {value}}}]',
                f'{{"source": {value}, "relationship": "r", "target": "t"}}',
                "[" * depth,
                '{"a":' * depth,
                "[" * depth + "]" * depth,
                '{"entities": ' + "1" * draw(st.integers(4301, 6000)) + "}",
                "[" + "9" * draw(st.integers(4301, 6000)) + "]",
            )
        )
    )
    return draw(st.sampled_from(("", "```json\n", "<think>x</think>", "Here: "))) + core
