"""Tests of HyperGraphRAG's prompts, record parsers and n-ary extractor.

No network. The model is :class:`ScriptedLLM`, a scripted stand-in for the
:class:`~hygraph.models.base.LLM` protocol (the same style as in
``test_extract_llm.py``): it replays replies shaped like what real endpoints return for
these prompts (well-formed records, records without ``##``, ``<think>`` blocks, code
fences, prose, HTML entities, malformed records, terse YES/NO answers) and records every
call.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from doubles import Reply, ScriptedLLM, SilentBaseline

from hygraph.errors import ConfigError, ModelError
from hygraph.extract import resolve_extractor
from hygraph.extract.hyper import NaryLLMExtractor, said_yes
from hygraph.extract.records import parse_nary_records
from hygraph.extract.schema import (
    DEFAULT_ENTITY_SCORE,
    DEFAULT_FACT_SCORE,
    ChunkInput,
    Entity,
)
from hygraph.graph.kinds import EdgeKind
from hygraph.models.cache import DiskCache
from hygraph.models.llm import CachedLLM
from hygraph.prompts import hypergraph as prompts
from hygraph.prompts.hypergraph import extract_answer, parse_question_entities
from hygraph.prompts.replies import ParseError

# --------------------------------------------------------------------------- replies

WORKED = """\
("hyper-relation"<|>"Guideline X recommends initiating dual therapy of an ACE inhibitor plus \
a calcium channel blocker for adults aged 65 or older with stage 2 hypertension."<|>9)##
("entity"<|>"Guideline X"<|>"document"<|>"Clinical guideline that issues the treatment \
recommendation."<|>85)##
("entity"<|>"Adults aged 65 or older"<|>"population"<|>"Older patient group targeted by the \
recommendation."<|>90)##
("entity"<|>"Stage 2 hypertension"<|>"disease"<|>"Hypertension grade for which dual therapy \
is advised."<|>95)##
("entity"<|>"ACE inhibitor"<|>"drug class"<|>"First component of the recommended dual \
therapy."<|>90)##
("entity"<|>"Calcium channel blocker"<|>"drug class"<|>"Second component of the recommended \
dual therapy."<|>90)##
<|COMPLETE|>"""

TWO_FACTS = """\
("hyper-relation"<|>"The Tovan Orchestra premiered Ilse Marrow's Second Symphony in Kellbury \
in 1974."<|>8)##
("entity"<|>"Tovan Orchestra"<|>"organization"<|>"Orchestra that gave the premiere."<|>90)##
("entity"<|>"Ilse Marrow"<|>"person"<|>"Composer of the Second Symphony."<|>85)##
("entity"<|>"Kellbury"<|>"city"<|>"City where the premiere took place."<|>60)##
("hyper-relation"<|>"Ilse Marrow conducted the Tovan Orchestra on its 1980 tour of \
Ardenne."<|>7)##
("entity"<|>"Ilse Marrow"<|>"person"<|>"Conductor of the 1980 tour."<|>95)##
("entity"<|>"Ardenne"<|>"country"<|>"Country the orchestra toured in 1980."<|>70)##
<|COMPLETE|>"""

MORE = """\
("hyper-relation"<|>"The Second Symphony lasts about fifty minutes."<|>6)##
("entity"<|>"Second Symphony"<|>"work"<|>"Symphony by Ilse Marrow."<|>80)##
<|COMPLETE|>"""

EVEN_MORE = """\
("hyper-relation"<|>"Kellbury has a concert hall called the Marrow Hall."<|>5)##
("entity"<|>"Marrow Hall"<|>"building"<|>"Concert hall in Kellbury."<|>70)##
<|COMPLETE|>"""

NO_DELIMITERS = """\
Here are the records:
("hyper-relation"<|>"Lake Orsk freezes over every January."<|>7)
("entity"<|>"Lake Orsk"<|>"lake"<|>"Lake that freezes in
January."<|>80)("entity"<|>"January"<|>"date"<|>"Month the lake freezes."<|>40)
("hyper-relation"<|>"Skaters use Lake Orsk in winter."<|>6)
("entity"<|>"Lake Orsk"<|>"lake"<|>"Lake used by skaters."<|>70)
"""

PROSE = "I am sorry, but I could not find any knowledge segments in this passage."
COMPLETE_ONLY = "<|COMPLETE|>"


# --------------------------------------------------------------------------- doubles


def chunk(text: str = "A passage about an orchestra.") -> ChunkInput:
    return ChunkInput(id="c0", doc_id="d0", text=text)


def extractor(llm: ScriptedLLM | CachedLLM, gleaning: int = 2) -> NaryLLMExtractor:
    return NaryLLMExtractor(llm, gleaning=gleaning, baseline=SilentBaseline())


# --------------------------------------------------------------------------- prompts


def test_nary_prompt_has_delimiters_text_and_parsable_examples() -> None:
    text = 'A passage with {braces} and "quotes".'
    messages = prompts.nary_messages(text)
    assert [m["role"] for m in messages] == ["system", "user"]
    system, user = messages[0]["content"], messages[1]["content"]
    assert text in user
    for token in ("<|>", "##", "<|COMPLETE|>", '"hyper-relation"', '"entity"', "English"):
        assert token in system
    assert prompts.NARY_TYPES_OPEN in system
    # every worked example in the prompt parses cleanly into facts with several members
    examples = system.split("Output:\n")[1:]
    assert len(examples) == 2
    for example in examples:
        parsed, bad = parse_nary_records(example, "x")
        assert bad == 0 and parsed.facts
        assert all(len(f.entities) >= 2 for f in parsed.facts)

    typed = prompts.nary_messages(text, language="German", entity_types=["person", "place"])
    assert "German" in typed[0]["content"] and "person, place" in typed[0]["content"]


def test_gleaning_and_loop_check_prompts_extend_the_history() -> None:
    history = prompts.nary_messages("Some passage.")
    cont = prompts.nary_continue_messages(history, "REPLY")
    assert cont[:2] == history
    assert cont[2] == {"role": "assistant", "content": "REPLY"}
    assert cont[3]["role"] == "user" and "<|COMPLETE|>" in cont[3]["content"]
    check = prompts.nary_loop_check_messages(cont, "MORE")
    assert check[:4] == cont and check[4]["content"] == "MORE"
    assert "YES" in check[5]["content"] and "NO" in check[5]["content"]


def test_question_entity_and_answer_prompts() -> None:
    question = "Who premiered the Second Symphony?"
    messages = prompts.question_entities_messages(question)
    assert messages[0]["role"] == "system" and "JSON" in messages[0]["content"]
    assert messages[-1] == {"role": "user", "content": f"Question: {question}"}
    shots = [m["content"] for m in messages[1:-1] if m["role"] == "assistant"]
    assert len(shots) == 3 and all(parse_question_entities(s, "q") != ["q"] for s in shots)

    [answer] = prompts.cot_answer_messages(question, "1. Some {knowledge} here.")
    assert answer["role"] == "user"
    content = answer["content"]
    headers = ["---Role---", "---Knowledge---", "---Goal---", "---Output Format---"]
    positions = [content.index(h) for h in [*headers, "---Question---"]]
    assert positions == sorted(positions)
    assert "1. Some {knowledge} here." in content and content.endswith(question)
    assert "<think>" in content and "<answer>" in content


# --------------------------------------------------------------------------- record parser


def test_worked_example_gives_one_fact_of_arity_five() -> None:
    out, bad = parse_nary_records(WORKED, "c1")
    assert bad == 0 and out.chunk_id == "c1"
    [fact] = out.facts
    assert fact.score == 9.0
    assert fact.text.startswith("Guideline X recommends initiating dual therapy")
    assert fact.entities == [
        "Guideline X",
        "Adults aged 65 or older",
        "Stage 2 hypertension",
        "ACE inhibitor",
        "Calcium channel blocker",
    ]
    assert fact.member_scores["Stage 2 hypertension"] == 95.0
    assert fact.member_scores["Guideline X"] == 85.0
    assert fact.member_descriptions["ACE inhibitor"].startswith("First component")
    assert [e.type for e in out.entities][:3] == ["document", "population", "disease"]
    assert len(out.entities) == 5


def test_entities_attach_to_the_most_recent_fact() -> None:
    out, bad = parse_nary_records(TWO_FACTS, "c")
    assert bad == 0
    first, second = out.facts
    assert first.entities == ["Tovan Orchestra", "Ilse Marrow", "Kellbury"]
    assert second.entities == ["Ilse Marrow", "Ardenne"]
    assert (first.score, second.score) == (8.0, 7.0)
    # the same entity carries a per-fact description and score
    assert first.member_descriptions["Ilse Marrow"] == "Composer of the Second Symphony."
    assert second.member_descriptions["Ilse Marrow"] == "Conductor of the 1980 tour."
    assert (first.member_scores["Ilse Marrow"], second.member_scores["Ilse Marrow"]) == (85, 95)
    # one mention per record; normalisation merges them keeping the highest score
    assert len(out.entities) == 5
    merged = {e.name: e for e in out.normalised().entities}
    assert merged["Ilse Marrow"].score == 95.0
    assert "Composer" in merged["Ilse Marrow"].description
    assert "Conductor" in merged["Ilse Marrow"].description


def test_entity_before_any_fact_is_dropped_and_counted() -> None:
    reply = (
        '("entity"<|>"Orphan"<|>"person"<|>"Nobody owns me."<|>80)##\n'
        '("hyper-relation"<|>"Ada met Bo."<|>7)##\n'
        '("entity"<|>"Ada"<|>"person"<|>"A person."<|>80)##\n'
        '("entity"<|>"Bo"<|>"person"<|>"Another person."<|>70)##\n'
        "<|COMPLETE|>"
    )
    out, bad = parse_nary_records(reply, "c")
    assert bad == 1
    assert [e.name for e in out.entities] == ["Ada", "Bo"]
    assert out.facts[0].entities == ["Ada", "Bo"]


def test_malformed_records_are_skipped_and_counted() -> None:
    reply = (
        '("hyper-relation"<|>"Short fact.")##\n'  # too few fields
        '("hyper-relation"<|>"Ada met Bo in Tarn."<|>8)##\n'
        '("entity"<|>"Ada"<|>"person")##\n'  # too few fields
        '("entity"<|>""<|>"person"<|>"No name."<|>50)##\n'  # empty name
        '("entity"<|>"Bo"<|>"person"<|>"A person."<|>70)##\n'
        '("relationship"<|>"Ada"<|>"Bo")##\n'  # an unknown record
        "(broken record without closing\n"  # opens like a record, does not parse
        "Some commentary the model added.##\n"  # prose: ignored
        "<|COMPLETE|>"
    )
    out, bad = parse_nary_records(reply, "c")
    assert bad == 5
    assert [f.text for f in out.facts] == ["Ada met Bo in Tarn."]
    assert out.facts[0].entities == ["Bo"]


def test_non_numeric_scores_get_defaults_and_normalised_clamps() -> None:
    reply = (
        '("hyper-relation"<|>"Ada met Bo."<|>high)##\n'
        '("entity"<|>"Ada"<|>"person"<|>"A person."<|>very important)##\n'
        '("entity"<|>"Bo"<|>"person"<|>"Another person."<|>"250")##\n'
        '("hyper-relation"<|>"Bo left."<|>15)##\n'
        '("entity"<|>"Bo"<|>"person"<|>"Left."<|>-4)##\n'
        "<|COMPLETE|>"
    )
    out, bad = parse_nary_records(reply, "c")
    assert bad == 0
    assert out.facts[0].score == DEFAULT_FACT_SCORE
    assert out.facts[0].member_scores == {"Ada": DEFAULT_ENTITY_SCORE, "Bo": 250.0}
    assert out.facts[1].score == 15.0
    normalised = out.normalised()
    assert [f.score for f in normalised.facts] == [DEFAULT_FACT_SCORE, 10.0]
    assert normalised.facts[0].member_scores["Bo"] == 100.0
    assert normalised.facts[1].member_scores["Bo"] == 0.0


def test_fields_are_cleaned() -> None:
    reply = (
        '("hyper-relation"<|>“Smith &amp; Jones won the\x07 Lyle Cup\nin 1990.”<|> 9 )##\n'
        '("entity"<|> "Smith &amp; Jones" <|>"Sports Team"<|>"A \x00team\x85."<|>"88")##\n'
        "('entity'<|>'O'Hara Park'<|>'place'<|>'Where the &quot;cup&quot; is played.'<|>60)##\n"
        "<|COMPLETE|>"
    )
    out, bad = parse_nary_records(reply, "c")
    assert bad == 0
    [fact] = out.facts
    assert fact.text == "Smith & Jones won the Lyle Cup in 1990."
    assert fact.score == 9.0
    smith, park = out.entities
    assert (smith.name, smith.type, smith.description, smith.score) == (
        "Smith & Jones",
        "sports team",
        "A team.",
        88.0,
    )
    assert park.name == "O'Hara Park"  # display casing kept, inner quote kept
    assert park.description == 'Where the "cup" is played.'


def test_records_on_separate_lines_without_delimiters() -> None:
    out, bad = parse_nary_records(NO_DELIMITERS, "c")
    assert bad == 0
    assert [f.text for f in out.facts] == [
        "Lake Orsk freezes over every January.",
        "Skaters use Lake Orsk in winter.",
    ]
    assert out.facts[0].entities == ["Lake Orsk", "January"]
    assert out.facts[0].member_descriptions["Lake Orsk"] == "Lake that freezes in January."
    assert out.facts[1].entities == ["Lake Orsk"]


def test_think_blocks_and_code_fences_are_dropped() -> None:
    reply = (
        "<think>\nThe passage has one fact. I'll write "
        '("hyper-relation"<|>"Not this one."<|>1) first.\n</think>\n'
        "Sure, here are the records:\n```text\n" + TWO_FACTS + "\n```\nDone."
    )
    out, bad = parse_nary_records(reply, "c")
    assert bad == 0 and len(out.facts) == 2
    assert "Not this one." not in [f.text for f in out.facts]


@pytest.mark.parametrize(
    "reply",
    [PROSE, "", "   \n", "<think>still thinking about the passage", '("entity"<|>"X")'],
)
def test_replies_without_records_raise(reply: str) -> None:
    with pytest.raises(ParseError):
        parse_nary_records(reply, "c")


@pytest.mark.parametrize(
    "reply",
    [
        COMPLETE_ONLY,
        " <|complete|>\n",
        "<think>no</think>##\n<|COMPLETE|>",
        "```\n<|COMPLETE|>\n```",
    ],
)
def test_bare_completion_delimiter_is_a_valid_empty_extraction(reply: str) -> None:
    out, bad = parse_nary_records(reply, "c")
    assert bad == 0 and out.facts == [] and out.entities == [] and out.chunk_id == "c"


# --------------------------------------------------------------------------- the extractor


def test_single_pass_extraction() -> None:
    llm = ScriptedLLM([TWO_FACTS])
    ext = extractor(llm, gleaning=0)
    assert ext.name == "llm-nary:scripted-model:glean0"
    [out] = ext.extract([chunk()])
    assert len(llm.calls) == 1
    assert "response_format" not in llm.calls[0][1]  # delimited text, not JSON mode
    assert llm.calls[0][1]["temperature"] == 0.0
    assert out.extractor == ext.name
    assert [len(f.entities) for f in out.facts] == [3, 2]
    assert {e.name for e in out.entities} == {
        "Tovan Orchestra",
        "Ilse Marrow",
        "Kellbury",
        "Ardenne",
    }
    assert out.relations == [] and out.units == []
    assert ext.stats.facts == 2 and ext.stats.failed_chunks == 0


def test_gleaning_two_passes_with_loop_check_yes() -> None:
    llm = ScriptedLLM([TWO_FACTS, MORE, "YES", EVEN_MORE])
    ext = extractor(llm)
    assert ext.name == "llm-nary:scripted-model:glean2"
    [out] = ext.extract([chunk()])
    assert len(llm.calls) == 4  # first, pass 1, loop check, pass 2 (the last: no check)
    base = llm.calls[0][0]
    assert llm.calls[1][0] == prompts.nary_continue_messages(base, TWO_FACTS)
    assert llm.calls[2][0] == prompts.nary_loop_check_messages(llm.calls[1][0], MORE)
    # the loop check is asked on the side: pass 2 continues the extraction conversation
    assert llm.calls[3][0] == prompts.nary_continue_messages(llm.calls[1][0], MORE)
    assert [f.text for f in out.facts][-2:] == [
        "The Second Symphony lasts about fifty minutes.",
        "Kellbury has a concert hall called the Marrow Hall.",
    ]
    assert len(out.facts) == 4
    assert "Marrow Hall" in {e.name for e in out.entities}


@pytest.mark.parametrize("answer", ["NO", "No, everything is covered.", "<think>hm</think>no"])
def test_loop_check_no_stops_gleaning(answer: str) -> None:
    llm = ScriptedLLM([TWO_FACTS, MORE, answer])
    [out] = extractor(llm).extract([chunk()])
    assert len(llm.calls) == 3 and len(out.facts) == 3


def test_loop_check_accepts_decorated_yes() -> None:
    assert said_yes("**YES**") and said_yes(" yes.") and said_yes("<think>x</think>\nYes")
    assert not said_yes("NO") and not said_yes("I am not sure, yes maybe")
    with pytest.raises(ParseError):
        said_yes("<think>undecided")


@pytest.mark.parametrize("nothing", [COMPLETE_ONLY, "Nothing is missing."])
def test_gleaning_reply_with_nothing_new_ends_gleaning(nothing: str) -> None:
    llm = ScriptedLLM([TWO_FACTS, nothing])
    [out] = extractor(llm, gleaning=3).extract([chunk()])
    assert len(llm.calls) == 2 and len(out.facts) == 2


@pytest.mark.parametrize("failure", ["", "<think>hmm"])
def test_unusable_gleaning_reply_keeps_the_first_pass(failure: Reply) -> None:
    llm = ScriptedLLM([TWO_FACTS, failure])
    ext = extractor(llm)
    [out] = ext.extract([chunk()])
    assert len(llm.calls) == 2 and len(out.facts) == 2
    assert ext.stats.failed_chunks == 0


@pytest.mark.parametrize(
    "script",
    [
        [TWO_FACTS, ModelError("503 from the endpoint")],  # the gleaning call fails
        [TWO_FACTS, MORE, ModelError("timeout")],  # the loop check fails
    ],
)
def test_failed_call_mid_gleaning_leaves_the_chunk_pending(tmp_path, script: list) -> None:
    """A fault must not give the chunk fewer passes than a clean build: the chunk fails,
    and the next build completes it with the answered passes from the cache."""
    inner = ScriptedLLM([*script, MORE, COMPLETE_ONLY])
    cached = CachedLLM(inner, DiskCache(tmp_path / "llm.sqlite"))
    ext = extractor(cached)
    assert ext.extract([chunk()]) == [] and ext.stats.failed_chunks == 1
    calls = len(inner.calls)
    [out] = extractor(cached).extract([chunk()])
    assert len(out.facts) == 3  # the first pass and one gleaning pass, as without the fault
    assert len(inner.calls) > calls  # only the failed call and what follows were made again


def test_first_pass_failure_leaves_the_chunk_out() -> None:
    llm = ScriptedLLM([PROSE])
    ext = extractor(llm)
    assert ext.extract([chunk()]) == []
    assert ext.stats.failed_chunks == 1 and len(llm.calls) == 1


def test_malformed_records_are_counted_in_stats() -> None:
    reply = '("entity"<|>"Orphan"<|>"x"<|>"y"<|>1)##\n' + TWO_FACTS
    ext = extractor(ScriptedLLM([reply]), gleaning=0)
    ext.extract([chunk()])
    assert ext.stats.malformed_items == 1


def test_cached_llm_caches_good_replies_only(tmp_path: Path) -> None:
    inner = ScriptedLLM([PROSE, TWO_FACTS, MORE, "NO"])
    cached = CachedLLM(inner, DiskCache(tmp_path / "llm.sqlite"))
    ext = extractor(cached)
    assert ext.extract([chunk()]) == []  # prose: not cached, retried next time
    assert len(cached.cache) == 0
    [first] = ext.extract([chunk()])
    assert len(inner.calls) == 4 and len(cached.cache) == 3
    [again] = ext.extract([chunk()])  # the whole conversation comes from the cache
    assert len(inner.calls) == 4 and again.to_dict() == first.to_dict()


def test_resolve_extractor_builds_the_nary_extractor() -> None:
    llm = ScriptedLLM()
    ext = resolve_extractor("llm-nary:glean=0", llm)
    assert isinstance(ext, NaryLLMExtractor) and ext.gleaning == 0
    assert resolve_extractor("llm-nary", llm).gleaning == 2
    with pytest.raises(ConfigError, match="needs an LLM"):
        resolve_extractor("llm-nary:glean=0")
    with pytest.raises(ConfigError, match="unknown llm-nary extractor options"):
        resolve_extractor("llm-nary:depth=3", llm)
    with pytest.raises(ConfigError, match="glean"):
        resolve_extractor("llm-nary:glean=two", llm)
    with pytest.raises(ConfigError, match="llm-nary"):
        resolve_extractor("hyper", llm)
    with pytest.raises(ValueError):
        NaryLLMExtractor(llm, gleaning=-1)


def test_entity_types_and_language_reach_the_prompt() -> None:
    llm = ScriptedLLM([COMPLETE_ONLY])
    ext = NaryLLMExtractor(
        llm, gleaning=0, language="French", entity_types=["person"], baseline=SilentBaseline()
    )
    [out] = ext.extract([chunk("Une phrase.")])
    system = llm.calls[0][0][0]["content"]
    assert "French" in system and "one of person" in system
    assert "Une phrase." in llm.calls[0][0][1]["content"]
    assert out.facts == []


# --------------------------------------------------------------------------- question entities


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"entities": ["Ilse Marrow", "Second Symphony"]}', ["Ilse Marrow", "Second Symphony"]),
        ('```json\n{"Entities": ["Kellbury"]}\n```', ["Kellbury"]),
        ('["Ardenne", "1980 tour"]', ["Ardenne", "1980 tour"]),
        (
            '{"entities": [{"name": "Tovan Orchestra"}, {"entity": "Kellbury"}, {"x": 1}]}',
            ["Tovan Orchestra", "Kellbury"],
        ),
        ('{"entities": ["Ada", "ada", " ", "", "Bo"]}', ["Ada", "Bo"]),
        ("<think>Which?</think>{'entities': ['Lake Orsk']}", ["Lake Orsk"]),
    ],
)
def test_parse_question_entities(reply: str, expected: list[str]) -> None:
    assert parse_question_entities(reply, "the question") == expected


@pytest.mark.parametrize(
    "reply",
    ["I cannot tell.", "", '{"entities": []}', '{"keywords": ["x"]}', "[]", '{"entities": 5}'],
)
def test_parse_question_entities_falls_back_to_the_question(reply: str) -> None:
    assert parse_question_entities(reply, "Who won?") == ["Who won?"]


# --------------------------------------------------------------------------- answers


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("<think>Combine 1 and 2.</think>\n<answer>\n Kellbury \n</answer>", "Kellbury"),
        ("<answer>First</answer> and <answer>second</answer>", "First"),
        ("<ANSWER>Upper</ANSWER>", "Upper"),
        ("<think>I will write <answer>draft</answer>.</think><answer>final</answer>", "final"),
        ("  Just the answer.  ", "Just the answer."),
        ("<think>reasoning</think>\n  Plain answer.", "Plain answer."),
        ("<answer>cut off before the closing tag", "<answer>cut off before the closing tag"),
        ("", ""),
    ],
)
def test_extract_answer(reply: str, expected: str) -> None:
    assert extract_answer(reply) == expected


def test_parser_builds_schema_entities() -> None:
    # the parser builds schema Entities (one per mention), which normalised() merges
    out, _ = parse_nary_records(WORKED, "c")
    assert all(isinstance(e, Entity) for e in out.entities)


# --------------------------------------------------------------------------- into an index


def test_nary_extraction_builds_the_hypergraph_with_llm_scores(tmp_path, minilm) -> None:
    """End to end: the scripted LLM extracts two facts, the hypergraph layer keeps its scores
    and the retrieval multiplies them in (the index's extractor is an LLM one)."""
    from hygraph.graph.hypergraph import fact_node_id
    from hygraph.index import GraphIndex
    from hygraph.ingest.documents import Document

    llm = ScriptedLLM([TWO_FACTS, '{"entities": ["Ilse Marrow"]}'])
    nary = NaryLLMExtractor(llm, gleaning=0, baseline=SilentBaseline())
    index = GraphIndex(
        tmp_path / "idx", extractor=nary, llm=llm, progress=False, llm_in_retrieval=True
    )
    text = (
        "The Tovan Orchestra premiered Ilse Marrow's Second Symphony in Kellbury in 1974. "
        "In 1980 Marrow conducted the orchestra on its tour of Ardenne."
    )
    index.insert([Document("marrow", text)], methods=["hypergraph"])
    assert index.manifest.extractor.startswith("llm-nary:")
    premiere = fact_node_id(
        "The Tovan Orchestra premiered Ilse Marrow's Second Symphony in Kellbury in 1974."
    )
    facts = index.store.nodes_of_kind("fact")
    assert {f.data["score"] for f in facts} == {8.0, 7.0}
    edge = index.store.get_edges([(premiere, "ent:ilse marrow", EdgeKind.INCIDENCE)])
    assert next(iter(edge.values())).weight == 85.0  # the member's score under this fact
    assert index.store.get_nodes(["ent:ilse marrow"])["ent:ilse marrow"].data["score"] == 95.0
    result = index.query("Who premiered the Second Symphony by Ilse Marrow?", "hypergraph")
    from hygraph.operators.scoring import uses_scores

    assert uses_scores(index.resources, index.method("hypergraph").config.use_scores)
    statements = {i.metadata["statement"] for i in result.items if i.kind == "fact"}
    assert len(statements) == 2  # the entity Ilse Marrow brings both of her facts
    assert not llm.replies  # one extraction call and one question-entity call
    index.close()
