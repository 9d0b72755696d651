"""Tests of NodeRAG's prompts, reply parsers and decomposition extractor (spec 004).

No network. The model is :class:`ScriptedLLM`, a scripted test double for the
:class:`~hygraph.models.base.LLM` protocol: it returns realistic outputs for these
prompts, malformed ones included (good decomposition JSON, JSON in a code fence after a
``<think>`` block, relationship strings with two or four parts, repair replies that are
junk, prose instead of JSON, empty unit lists), either in order or routed by a marker in
the prompt, and records every call.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from doubles import Reply, ScriptedLLM, SilentBaseline

from hygraph.errors import ConfigError, ModelError
from hygraph.extract import canonical_spec, resolve_extractor
from hygraph.extract.noderag import (
    NodeRAGLLMExtractor,
    normalise_entity,
    parse_decomposition,
    parse_repaired_relationship,
    split_relationship,
)
from hygraph.extract.parse import parse_unified
from hygraph.extract.schema import ChunkInput
from hygraph.models.base import Message
from hygraph.models.cache import DiskCache
from hygraph.models.llm import CachedLLM
from hygraph.prompts import noderag as prompts
from hygraph.prompts.noderag import clean_summary, parse_high_level_elements, parse_query_elements
from hygraph.prompts.replies import ParseError

# --------------------------------------------------------------------------- replies

GOOD = json.dumps(
    {
        "Output": [
            {
                "semantic_unit": "In 1998 the Korsa Ferry Company opened a route between "
                "Lindvik and Harrow Point.",
                "entities": ["Korsa Ferry Company", "Lindvik", "harrow  point", "1998"],
                "relationships": [
                    "KORSA FERRY COMPANY, opened a route to, HARROW POINT",
                    "KORSA FERRY COMPANY, opened a route from, LINDVIK",
                ],
            },
            {
                "semantic_unit": "Captain Elin Moss commanded the first crossing.",
                "entities": ["ELIN MOSS"],
                "relationships": ["ELIN MOSS, commanded the first crossing of, KORSA FERRY"],
            },
        ]
    }
)

FENCED_THINKING = (
    "<think>\nThe passage has one event: the opening of the observatory. Entities are "
    'GRETA HOLM and 2011. I will output {"Output": []} if nothing... no, one unit.\n</think>\n'
    "Here is the decomposition:\n```json\n"
    '{"Output": [{"semantic_unit": "Greta Holm opened the Sallow Hill Observatory in 2011.", '
    '"entities": ["Greta Holm", "Sallow Hill Observatory", "2011"], '
    '"relationships": ["GRETA HOLM, opened, SALLOW HILL OBSERVATORY", '
    '"SALLOW HILL OBSERVATORY, opened in, 2011",]}]}\n```\nLet me know if you need more.'
)

# one relationship with two parts, one with four (a name with a comma in it)
NEEDS_REPAIR = json.dumps(
    {
        "Output": [
            {
                "semantic_unit": "The Brill Quartet recorded its debut album in Ostrava, "
                "Moravia, in 2004.",
                "entities": ["BRILL QUARTET", "OSTRAVA, MORAVIA", "2004"],
                "relationships": [
                    "BRILL QUARTET, recorded its debut album in 2004",
                    "BRILL QUARTET, recorded its debut album in, OSTRAVA, MORAVIA",
                    "BRILL QUARTET, recorded in, 2004",
                ],
            }
        ]
    }
)
REPAIRED_TWO = (
    '{"source": "Brill Quartet", "relationship": "recorded its debut album in", "target": "2004"}'
)
REPAIRED_FOUR = (
    '```json\n{"source": "BRILL QUARTET", "relationship": "recorded its debut album in", '
    '"target": "OSTRAVA, MORAVIA"}\n```'
)
JUNK_REPAIR = "I'm not sure what you mean by this statement."
EMPTY_REPAIR = '{"source": "", "relationship": "", "target": ""}'

PROSE = "The passage describes a ferry company and its first crossing."
EMPTY_OUTPUT = '{"Output": []}'


# --------------------------------------------------------------------------- doubles


def chunk(text: str = "A passage about a ferry.", cid: str = "c0") -> ChunkInput:
    return ChunkInput(id=cid, doc_id="d0", text=text)


def extractor(llm: ScriptedLLM | CachedLLM) -> NodeRAGLLMExtractor:
    return NodeRAGLLMExtractor(llm, baseline=SilentBaseline())


# --------------------------------------------------------------------------- prompts


def _well_formed(messages: list[Message]) -> None:
    assert messages and all(set(m) == {"role", "content"} for m in messages)
    assert all(m["role"] in ("system", "user", "assistant") for m in messages)
    assert all(isinstance(m["content"], str) and m["content"].strip() for m in messages)
    assert messages[-1]["role"] == "user"


def test_decomposition_prompt_holds_the_text_and_a_parsable_example() -> None:
    text = 'A passage with {braces} and "quotes".'
    messages = prompts.decomposition_messages(text)
    _well_formed(messages)
    system, user = messages[0]["content"], messages[1]["content"]
    assert text in user and "JSON" in system
    for token in ('"Output"', '"semantic_unit"', '"entities"', '"relationships"', "UPPER CASE"):
        assert token in system
    example = system.split("Example reply:\n")[1]
    parsed, pending, bad = parse_decomposition(example, "x")
    assert bad == 0 and pending == [] and len(parsed.units) == 3
    for unit in parsed.units:  # every relationship end comes from its unit's entity list
        assert unit.entities and all(e == e.upper() for e in unit.entities)
    ends = {n for r in parsed.relations for n in (r.source, r.target)}
    assert ends <= {e.name for e in parsed.entities}
    assert "2023-03" in parsed.units[0].entities  # month granularity only


def test_json_prompts_say_json_and_hold_their_inputs() -> None:
    repair = prompts.relationship_repair_messages("ACME, sold,  to, BOLT")
    _well_formed(repair)
    assert "ACME, sold, to, BOLT" in repair[-1]["content"]
    assert '"source"' in repair[0]["content"] and "JSON" in repair[0]["content"]

    high = prompts.high_level_messages(["First text.", "", "Second  text."])
    _well_formed(high)
    assert "1. First text.\n2. Second text." in high[-1]["content"]
    assert '"high_level_elements"' in high[0]["content"] and "JSON" in high[0]["content"]

    query = prompts.query_elements_messages("Who founded the Korsa Ferry Company?")
    _well_formed(query)
    assert "Who founded the Korsa Ferry Company?" in query[-1]["content"]
    assert '"elements"' in query[0]["content"] and "JSON" in query[0]["content"]
    example = query[0]["content"].split("Example reply: ")[1]
    assert parse_query_elements(example, "q")


def test_attribute_prompt() -> None:
    messages = prompts.attribute_messages(
        "ELIN MOSS",
        ["Elin Moss commanded the first crossing.", "  "],
        ["ELIN MOSS commanded KORSA FERRY"],
        max_words=150,
    )
    _well_formed(messages)
    system, user = messages[0]["content"], messages[1]["content"]
    assert "150 words" in system and "{" not in system
    assert "Entity: ELIN MOSS" in user
    assert "Elin Moss commanded the first crossing." in user
    assert "ELIN MOSS commanded KORSA FERRY" in user
    assert "2000 words" in prompts.attribute_messages("X", [], [])[0]["content"]
    assert "(none)" in prompts.attribute_messages("X", [], [])[1]["content"]
    with pytest.raises(ValueError):
        prompts.attribute_messages("X", [], [], max_words=0)


def test_answer_prompt() -> None:
    context = "------------semantic_unit-------------\n1. Some {context} here."
    messages = prompts.answer_messages("Who commanded the first crossing?", context)
    _well_formed(messages)
    system, user = messages[0]["content"], messages[1]["content"]
    assert "paragraph" in system and "invent" in system
    assert user.index(context) < user.index("Who commanded the first crossing?")


# --------------------------------------------------------------------------- small pieces


def test_normalise_entity_and_split_relationship() -> None:
    assert normalise_entity("  harrow \n point ") == "HARROW POINT"
    assert normalise_entity("   ") == ""
    assert split_relationship(" A ,  links to , B ") == ("A", "links to", "B")
    assert split_relationship("A, links to") is None
    assert split_relationship("A, links, to, B") is None
    assert split_relationship("A, , B") is None


# --------------------------------------------------------------------------- decomposition parser


def test_parse_good_decomposition() -> None:
    out, pending, bad = parse_decomposition(GOOD, "c1")
    assert out.chunk_id == "c1" and pending == [] and bad == 0
    first, second = out.units
    assert first.entities == ["KORSA FERRY COMPANY", "LINDVIK", "HARROW POINT", "1998"]
    # a relation end missing from the unit's list joins it and the entity list
    assert second.entities == ["ELIN MOSS", "KORSA FERRY"]
    assert {e.name for e in out.entities} == {
        "KORSA FERRY COMPANY",
        "LINDVIK",
        "HARROW POINT",
        "1998",
        "ELIN MOSS",
        "KORSA FERRY",
    }
    assert all(e.type == "entity" for e in out.entities)
    rel = out.relations[0]
    assert (rel.source, rel.label, rel.target) == (
        "KORSA FERRY COMPANY",
        "opened a route to",
        "HARROW POINT",
    )
    assert rel.description == "KORSA FERRY COMPANY opened a route to HARROW POINT"
    normalised = out.normalised()
    assert normalised.units[1].entities == ["ELIN MOSS", "KORSA FERRY"]
    assert len(normalised.relations) == 3


def test_parse_fenced_reply_after_thinking() -> None:
    out, pending, bad = parse_decomposition(FENCED_THINKING, "c")
    assert pending == [] and bad == 0
    [unit] = out.units
    assert unit.text == "Greta Holm opened the Sallow Hill Observatory in 2011."
    assert unit.entities == ["GRETA HOLM", "SALLOW HILL OBSERVATORY", "2011"]
    assert [r.target for r in out.relations] == ["SALLOW HILL OBSERVATORY", "2011"]


def test_malformed_relationships_are_returned_for_repair() -> None:
    out, pending, bad = parse_decomposition(NEEDS_REPAIR, "c")
    assert bad == 0
    assert pending == [
        (0, "BRILL QUARTET, recorded its debut album in 2004"),
        (0, "BRILL QUARTET, recorded its debut album in, OSTRAVA, MORAVIA"),
    ]
    assert [(r.source, r.target) for r in out.relations] == [("BRILL QUARTET", "2004")]


def test_parse_variants_and_malformed_items() -> None:
    reply = {
        "output": [
            {"unit": "Ada met Bo in Tarn.", "entities": ["Ada", "", None, True, {"name": "Bo"}]},
            {
                "text": "Bo left Tarn in 1999.",
                "relations": [
                    ["Bo", "left", "Tarn"],
                    {"source": "bo", "relationship": "left in", "target": "1999"},
                    ["Bo", "left"],  # two parts: sent to repair as a string
                    {"source": "Bo"},  # junk
                    42,  # junk
                    {"relationship": "TARN, was left by, BO"},
                ],
            },
            {"entities": ["NOBODY"]},  # no text: dropped
            7,  # junk
            "A bare unit string.",
        ]
    }
    out, pending, bad = parse_decomposition(json.dumps(reply), "c")
    assert [u.text for u in out.units] == [
        "Ada met Bo in Tarn.",
        "Bo left Tarn in 1999.",
        "A bare unit string.",
    ]
    assert out.units[0].entities == ["ADA", "BO"]
    assert out.units[1].entities == ["BO", "TARN", "1999"]
    assert out.units[2].entities == []
    assert [(r.source, r.label, r.target) for r in out.relations] == [
        ("BO", "left", "TARN"),
        ("BO", "left in", "1999"),
        ("TARN", "was left by", "BO"),
    ]
    assert pending == [(1, "Bo, left")]
    assert bad == 3 + 2 + 2  # entities "", None, True; relations {"source"}, 42; items


@pytest.mark.parametrize(
    "reply",
    [
        '[{"semantic_unit": "Ada met Bo.", "entities": ["ADA", "BO"]}]',
        '{"semantic_units": [{"semantic_unit": "Ada met Bo.", "entities": ["ADA", "BO"]}]}',
        '{"result": {"Output": [{"semantic_unit": "Ada met Bo.", "entities": ["ADA", "BO"]}]}}',
        '{"semantic_unit": "Ada met Bo.", "entities": ["ada", "bo"]}',
        "{'Output': [{'semantic_unit': 'Ada met Bo.', 'entities': ['ADA', 'BO'],}]}",  # sloppy
    ],
)
def test_unit_list_locations(reply: str) -> None:
    out, _, _ = parse_decomposition(reply, "c")
    assert [(u.text, u.entities) for u in out.units] == [("Ada met Bo.", ["ADA", "BO"])]


def test_a_cut_off_decomposition_is_not_taken_for_a_whole_one() -> None:
    with pytest.raises(ParseError, match="cut off"):
        parse_decomposition("{'Output': [{'semantic_unit': 'Ada met Bo.', 'entities': ['A", "c")


@pytest.mark.parametrize("reply", [EMPTY_OUTPUT, "[]", '```json\n{"output": []}\n```'])
def test_empty_unit_list_is_a_valid_empty_result(reply: str) -> None:
    out, pending, bad = parse_decomposition(reply, "c")
    assert out.units == [] and out.entities == [] and pending == [] and bad == 0


@pytest.mark.parametrize(
    "reply",
    [
        PROSE,
        "",
        "<think>Let me split the passage into",
        '{"entities": ["ADA"]}',  # no unit list
        "{}",
        '{"Output": [{"entities": ["ADA"]}, 5]}',  # a list with no usable unit
    ],
)
def test_unusable_decomposition_replies_raise(reply: str) -> None:
    with pytest.raises(ParseError):
        parse_decomposition(reply, "c")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (REPAIRED_TWO, ("BRILL QUARTET", "recorded its debut album in", "2004")),
        (REPAIRED_FOUR, ("BRILL QUARTET", "recorded its debut album in", "OSTRAVA, MORAVIA")),
        ('{"result": {"head": "a", "relation": "b", "tail": "c"}}', ("A", "b", "C")),
        ('["a", "b", "c"]', ("A", "b", "C")),
        ('[{"subject": "a", "predicate": "b", "object": "c"}]', ("A", "b", "C")),
        ("<think>ok</think>Ada, met, Bo", ("ADA", "met", "BO")),
        (EMPTY_REPAIR, None),
        (JUNK_REPAIR, None),
        ('{"source": "A", "target": "B"}', None),
        ("", None),
    ],
)
def test_parse_repaired_relationship(reply: str, expected: tuple[str, str, str] | None) -> None:
    assert parse_repaired_relationship(reply) == expected


def test_units_in_the_unified_reply_keep_their_entities() -> None:
    reply = '{"units": [{"text": "Ada met Bo.", "entities": ["Ada", "Bo", "Ada"]}, "Bo left."]}'
    out, bad = parse_unified(reply, "c")
    assert bad == 0
    assert [(u.text, u.entities) for u in out.units] == [
        ("Ada met Bo.", ["Ada", "Bo"]),
        ("Bo left.", []),
    ]


# --------------------------------------------------------------------------- other parsers


def test_parse_high_level_elements() -> None:
    reply = (
        "<think>Two themes.</think>```json\n"
        '{"high_level_elements": ['
        '{"title": "Ferry expansion", "description": "Routes grew after 1998."},'
        '{"title": "", "description": "Crossings depend on   the winter weather of the strait."},'
        '{"title": "No description"},'
        '{"keywords": ["safety", "crew"], "content": "Captains train every spring."},'
        '"A bare insight.", 12]}\n```'
    )
    assert parse_high_level_elements(reply) == [
        ("Ferry expansion", "Routes grew after 1998."),
        (
            "Crossings depend on the winter weather of the",
            "Crossings depend on the winter weather of the strait.",
        ),
        ("safety, crew", "Captains train every spring."),
        ("A bare insight", "A bare insight."),
    ]
    assert parse_high_level_elements('[{"title": "T", "description": "D"}]') == [("T", "D")]
    assert parse_high_level_elements('{"elements": []}') == []
    for bad in (PROSE, "", '{"themes": [1]}'):
        with pytest.raises(ParseError):
            parse_high_level_elements(bad)


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"elements": ["Elin Moss", "first crossing"]}', ["Elin Moss", "first crossing"]),
        (
            '```json\n{"Elements": [" Korsa  Ferry ", "korsa ferry", "", 1998]}\n```',
            ["Korsa Ferry", "1998"],
        ),
        ('["Lindvik", {"name": "Harrow Point"}, null, true]', ["Lindvik", "Harrow Point"]),
        ('{"entities": ["Tarn"]}', ["Tarn"]),
        ('{"elements": []}', []),
        ("[]", []),
    ],
)
def test_parse_query_elements(reply: str, expected: list[str]) -> None:
    assert parse_query_elements(reply, "Who commanded the crossing?") == expected


@pytest.mark.parametrize("reply", [PROSE, "", "<think>hmm", '{"answer": "Elin Moss"}'])
def test_parse_query_elements_raises_on_unusable_replies(reply: str) -> None:
    with pytest.raises(ParseError):
        parse_query_elements(reply, "Who commanded the crossing?")


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Elin Moss is a ferry captain.", "Elin Moss is a ferry captain."),
        (
            "<think>Write it short.</think>\n\nSummary: Elin Moss is a captain.",
            "Elin Moss is a captain.",
        ),
        (
            "**Profile:** Lindvik is a port.\n\nIt has a ferry.",
            "Lindvik is a port.\n\nIt has a ferry.",
        ),
        ("```\nLindvik is a port town.\n```", "Lindvik is a port town."),
        ('{"summary": "Tarn is a village."}', "Tarn is a village."),
        ("Lindvik: a port town.", "Lindvik: a port town."),  # not a label: kept
    ],
)
def test_clean_summary(reply: str, expected: str) -> None:
    assert clean_summary(reply) == expected


@pytest.mark.parametrize("reply", ["", "   ", "<think>still going", "Summary:", "```\n```"])
def test_clean_summary_raises_when_nothing_is_left(reply: str) -> None:
    with pytest.raises(ParseError):
        clean_summary(reply)


# --------------------------------------------------------------------------- the extractor


def test_extractor_one_call_per_chunk_json_mode() -> None:
    llm = ScriptedLLM([GOOD])
    ext = extractor(llm)
    assert ext.name == "llm-noderag:scripted-model"
    [out] = ext.extract([chunk()])
    assert len(llm.calls) == 1
    messages, params = llm.calls[0]
    assert messages == prompts.decomposition_messages("A passage about a ferry.")
    assert params["response_format"] == {"type": "json_object"}
    assert params["temperature"] == 0.0 and params["max_tokens"] == 4096
    assert out.extractor == ext.name
    assert [u.entities for u in out.units][1] == ["ELIN MOSS", "KORSA FERRY"]
    assert {e.name for e in out.entities} >= {"KORSA FERRY COMPANY", "KORSA FERRY"}
    assert ext.stats.units == 2 and ext.stats.relations == 3
    assert ext.stats.failed_chunks == 0 and ext.stats.malformed_items == 0


def test_malformed_relationships_are_repaired_one_call_each() -> None:
    llm = ScriptedLLM([NEEDS_REPAIR, REPAIRED_TWO, REPAIRED_FOUR])
    ext = extractor(llm)
    [out] = ext.extract([chunk()])
    assert len(llm.calls) == 3
    assert llm.calls[1][0] == prompts.relationship_repair_messages(
        "BRILL QUARTET, recorded its debut album in 2004"
    )
    assert llm.calls[2][0] == prompts.relationship_repair_messages(
        "BRILL QUARTET, recorded its debut album in, OSTRAVA, MORAVIA"
    )
    assert {(r.source, r.label, r.target) for r in out.relations} == {
        ("BRILL QUARTET", "recorded in", "2004"),
        ("BRILL QUARTET", "recorded its debut album in", "2004"),
        ("BRILL QUARTET", "recorded its debut album in", "OSTRAVA, MORAVIA"),
    }
    [unit] = out.units
    assert unit.entities == ["BRILL QUARTET", "OSTRAVA, MORAVIA", "2004"]
    assert ext.stats.malformed_items == 0


@pytest.mark.parametrize(
    "repair", [JUNK_REPAIR, EMPTY_REPAIR, ModelError("503 from the endpoint"), ""]
)
def test_unrepairable_relationship_is_dropped_and_counted(repair: Reply) -> None:
    llm = ScriptedLLM([NEEDS_REPAIR, repair, REPAIRED_FOUR])
    ext = extractor(llm)
    [out] = ext.extract([chunk()])  # the chunk itself succeeds
    assert len(llm.calls) == 3
    assert len(out.relations) == 2
    assert ext.stats.malformed_items == 1 and ext.stats.failed_chunks == 0


def test_prose_reply_fails_the_chunk() -> None:
    llm = ScriptedLLM([PROSE])
    ext = extractor(llm)
    assert ext.extract([chunk()]) == []
    assert ext.stats.failed_chunks == 1 and len(llm.calls) == 1


def test_empty_output_is_a_valid_extraction() -> None:
    ext = extractor(ScriptedLLM([EMPTY_OUTPUT]))
    [out] = ext.extract([chunk()])
    assert out.units == [] and out.entities == []
    assert ext.stats.failed_chunks == 0 and ext.stats.chunks == 1


def test_cached_llm_caches_good_replies_only(tmp_path: Path) -> None:
    inner = ScriptedLLM([PROSE, NEEDS_REPAIR, JUNK_REPAIR, REPAIRED_FOUR, REPAIRED_TWO])
    cached = CachedLLM(inner, DiskCache(tmp_path / "llm.sqlite"))
    ext = extractor(cached)
    assert ext.extract([chunk()]) == []  # prose: not cached, retried next time
    assert len(cached.cache) == 0
    [first] = ext.extract([chunk()])
    assert len(inner.calls) == 4 and len(cached.cache) == 2  # the junk repair is not cached
    assert len(first.relations) == 2
    [again] = ext.extract([chunk()])  # the junk repair is asked again, and now works
    assert len(inner.calls) == 5 and len(again.relations) == 3


def test_resolve_extractor_builds_the_noderag_extractor() -> None:
    llm = ScriptedLLM()
    ext = resolve_extractor("llm-noderag", llm)
    assert isinstance(ext, NodeRAGLLMExtractor) and ext.json_mode
    assert isinstance(resolve_extractor("llm-noderag:", llm), NodeRAGLLMExtractor)
    assert canonical_spec("llm-noderag:") == "llm-noderag"
    with pytest.raises(ConfigError, match="takes no options"):
        resolve_extractor("llm-noderag:x=1", llm)
    with pytest.raises(ConfigError, match="needs an LLM"):
        resolve_extractor("llm-noderag")
    with pytest.raises(ConfigError, match="llm-noderag"):
        resolve_extractor("noderag", llm)


# --------------------------------------------------------------------------- into an index


def test_noderag_extraction_is_stored_with_unit_entities(tmp_path, minilm) -> None:
    """End to end: two tiny documents, one decomposition call each (routed by content),
    one repair call; the index stores the units with their entities."""
    from hygraph.index import GraphIndex
    from hygraph.ingest.documents import Document

    ferry = json.dumps(
        {
            "Output": [
                {
                    "semantic_unit": "Captain Elin Moss commanded the first Korsa ferry "
                    "crossing to Harrow Point.",
                    "entities": ["Elin Moss", "Harrow Point"],
                    "relationships": [
                        "ELIN MOSS, commanded the first crossing to, HARROW POINT",
                        "ELIN MOSS, captain",
                    ],
                }
            ]
        }
    )
    observatory = FENCED_THINKING
    llm = ScriptedLLM(
        routes={
            "Korsa ferry": ferry,
            "Sallow Hill": observatory,
            "Statement: ELIN MOSS, captain": EMPTY_REPAIR,
        }
    )
    ext = extractor(llm)
    index = GraphIndex(tmp_path / "idx", extractor=ext, llm=llm, progress=False)
    index.insert(
        [
            Document("ferry", "Captain Elin Moss commanded the first Korsa ferry crossing."),
            Document("sky", "Greta Holm opened the Sallow Hill Observatory in 2011."),
        ],
        methods=["bm25"],
    )
    assert index.manifest.extractor == "llm-noderag:scripted-model"
    stored = index.store.get_extractions(index.store.chunk_ids())
    assert len(stored) == 2 and len(llm.calls) == 3
    units = {u.text: u.entities for e in stored.values() for u in e.units}
    assert units == {
        "Captain Elin Moss commanded the first Korsa ferry crossing to Harrow Point.": [
            "ELIN MOSS",
            "HARROW POINT",
        ],
        "Greta Holm opened the Sallow Hill Observatory in 2011.": [
            "GRETA HOLM",
            "SALLOW HILL OBSERVATORY",
            "2011",
        ],
    }
    assert ext.stats.malformed_items == 1  # the relationship whose repair came back empty
    index.close()
