"""The offline rule-based extractor and the sentence splitter, on hand-checked sentences."""

from __future__ import annotations

import pytest

from hygraph.extract.offline import Mention, OfflineExtractor, find_entities
from hygraph.extract.schema import ChunkInput, Extraction, Extractor
from hygraph.extract.sentences import make_units, split_sentences


def names(text: str, **kwargs) -> list[str]:
    return [m.name for m in find_entities(text, **kwargs)]


def sentences(text: str) -> list[str]:
    return [text[a:b] for a, b in split_sentences(text)]


def extract(text: str, title: str | None = None, chunk_id: str = "c1") -> Extraction:
    return OfflineExtractor().extract([ChunkInput(chunk_id, "d1", text, title)])[0]


# --------------------------------------------------------------------------- sentences


def test_split_handles_abbreviations_initials_and_decimals():
    text = (
        "Dr. Orla Penn moved to St. Avern in 1904. She met J. R. R. Tolkien there, "
        "e.g. at the U.S. embassy on Mr. Hale's street. The rate was 3.5 per cent! "
        "Was it No. 7? Yes."
    )
    assert sentences(text) == [
        "Dr. Orla Penn moved to St. Avern in 1904.",
        "She met J. R. R. Tolkien there, e.g. at the U.S. embassy on Mr. Hale's street.",
        "The rate was 3.5 per cent!",
        "Was it No. 7?",
        "Yes.",
    ]


def test_split_ends_a_sentence_after_an_acronym_before_a_sentence_opener():
    assert sentences("He moved to the U.S. The next year he left.") == [
        "He moved to the U.S.",
        "The next year he left.",
    ]
    assert sentences("Brandle Ltd. hired him. The U.S. Army did not.") == [
        "Brandle Ltd. hired him.",
        "The U.S. Army did not.",
    ]


def test_headings_and_lines_are_their_own_sentences_with_offsets():
    text = "# Harbour Notes\nThe pier opened in 1890\n\nIt closed in 1950. Boats left."
    spans = split_sentences(text)
    assert [text[a:b] for a, b in spans] == [
        "Harbour Notes",
        "The pier opened in 1890",
        "It closed in 1950.",
        "Boats left.",
    ]
    assert spans[0] == (2, 15)
    assert split_sentences("") == [] and split_sentences("  \n\n ") == []


def test_units_group_short_sentences_with_a_neighbour():
    text = (
        "Short title\n"
        "The old mill on the river was rebuilt by the town council after the great flood. "
        "It reopened. "
        "Its new wheel was carved from oak felled in the northern forest that winter."
    )
    units = make_units(text, split_sentences(text))
    assert units == [
        "Short title The old mill on the river was rebuilt by the town council after the "
        "great flood. It reopened.",
        "Its new wheel was carved from oak felled in the northern forest that winter.",
    ]
    # Two long sentences never merge, and max_words caps a grouped unit.
    assert len(make_units(text, split_sentences(text), max_words=10)) == 4
    assert make_units("", []) == []


# --------------------------------------------------------------------------- mentions


def test_basic_sentence_entities_relation_and_fact():
    ex = extract("Ilse Marrow studied at Colworth University in 1912.")
    by_name = {e.name: e for e in ex.entities}
    assert list(by_name) == ["Ilse Marrow", "Colworth University", "1912"]
    assert by_name["Colworth University"].type == "organisation"
    assert by_name["1912"].type == "date"
    rel = {(r.source, r.target): r for r in ex.relations}
    assert rel[("Ilse Marrow", "Colworth University")].label == "studied at"
    assert rel[("Colworth University", "1912")].label == "in"
    assert ("Ilse Marrow", "1912") in rel  # first mention with each later one
    assert all(r.weight == 1.0 for r in ex.relations)
    assert rel[("Ilse Marrow", "Colworth University")].description == (
        "Ilse Marrow studied at Colworth University in 1912."
    )
    assert len(ex.facts) == 1
    fact = ex.facts[0]
    assert fact.entities == ["Ilse Marrow", "Colworth University", "1912"]
    assert fact.score == 8.0  # 3 members x 2 + a verb-like word
    assert [u.text for u in ex.units] == ["Ilse Marrow studied at Colworth University in 1912."]
    assert ex.extractor == "offline" and ex.chunk_id == "c1"


def test_dates_as_the_llm_lists_them():
    text = (
        "The treaty was signed on 14 March 1931 and ratified on March 20, 1932, after talks "
        "in March 1930; the 1340s saw famine, the fort stood from 1899–1942 and fell in 1944."
    )
    mentions = find_entities(text)
    assert [m.name for m in mentions] == [
        "14 March 1931",
        "March 20, 1932",
        "March 1930",
        "1340s",
        "1899–1942",
        "1944",
    ]
    assert {m.type for m in mentions} == {"date"}
    assert names("In 3500 it was 12,500 people and 1.2345 metres.") == []
    # A month opening a sentence is no date; inside a sentence it is one.
    assert names("May brought rain.") == []
    assert names("It rained in May.") == ["May"]


def test_numbers_with_units_are_optional():
    text = (
        "The tower is 6.2 metres tall, the park covers 2,400 square kilometres and cost $5 million."
    )
    assert names(text) == []  # off by default: the LLM rarely lists them
    assert names(text, numbers=True) == ["6.2 metres", "2,400 square kilometres", "$5 million"]
    counted = "The firm employs 1,300 workers in 35 stores, 45% of them part-time."
    assert names(counted, numbers=True) == []
    assert names(counted, numbers=True, counts=True) == ["1,300 workers", "35 stores", "45%"]
    assert {m.type for m in find_entities(counted, numbers=True, counts=True)} == {"number"}


def test_quoted_titles_are_works():
    text = "The band released \u201cHello Love\u201d and \"Blue Moon\", then ``Night Rain''."
    mentions = find_entities(text)
    assert [(m.name, m.type) for m in mentions] == [
        ("Hello Love", "work"),
        ("Blue Moon", "work"),
        ("Night Rain", "work"),
    ]
    # Lowercase quotations are no titles.
    assert names('He called it "a small miracle" on air.') == []


def test_honorifics_roles_leave_the_name_styles_stay():
    mentions = find_entities("Professor Anna Vey met Mayor Tobiah Quell and Sir Edwin Larch.")
    assert [(m.name, m.type, m.role) for m in mentions] == [
        ("Anna Vey", "person", "Professor"),
        ("Tobiah Quell", "person", "Mayor"),
        ("Sir Edwin Larch", "person", "Sir"),
    ]
    assert names("Dr. Mara Quint and King Oswin II arrived.") == ["Dr. Mara Quint", "King Oswin II"]
    ex = extract("Professor Anna Vey teaches physics.")
    assert ex.entities[0].name == "Anna Vey"
    assert "Professor" in ex.entities[0].description


def test_sentence_initial_common_words_are_dropped():
    assert names("The Corvale Herald reported the fire. However, nobody was hurt.") == [
        "Corvale Herald"
    ]
    assert names("In Dunmere the rain stopped. During the Long Winter it froze.") == [
        "Dunmere",
        "Long Winter",
    ]
    assert names("He left. It rained. They stayed.") == []
    # A lone sentence-initial word is kept when it is not a common word ...
    assert names("Dunmere lies on a hill.") == ["Dunmere"]
    # ... and dropped when the text also writes it in lower case.
    assert names("Rivers flow here. Many rivers do.") == []
    # Inside a sentence a capitalised "The" belongs to the name.
    assert names("She sang with The Lantern Boys.") == ["The Lantern Boys"]


def test_connectors_initials_acronyms_and_hyphens():
    assert names(
        "He joined the American Institute of Physics and the University of Copenhagen."
    ) == [
        "American Institute of Physics",
        "University of Copenhagen",
    ]
    assert names(
        "He wrote for the Journal of Mathematical Physics, not for Britain and France."
    ) == [
        "Journal of Mathematical Physics",
        "Britain",
        "France",
    ]
    assert names("It studies the Games of the XXXIII Olympiad at the Council for Small Trade.") == [
        "Games of the XXXIII Olympiad",
        "Council for Small Trade",
    ]
    tolkien = find_entities("J. R. R. Tolkien wrote to NASA and the BBC.")
    assert [(m.name, m.type) for m in tolkien] == [
        ("J. R. R. Tolkien", "person"),
        ("NASA", "entity"),
        ("BBC", "entity"),
    ]
    assert names("Wiley-Blackwell printed Seán O'Brien's memoir near Lake Verran.") == [
        "Wiley-Blackwell",
        "Seán O'Brien",
        "Lake Verran",
    ]
    assert find_entities("They sailed up the Osk River.")[0].type == "place"


def test_mention_offsets_point_into_the_text():
    text = "Later, Ilse Marrow met Colworth University staff in 1912 and Tolkien's friends."
    for m in find_entities(text):
        assert isinstance(m, Mention)
        assert text[m.start : m.end] == m.name
    assert names(text) == ["Ilse Marrow", "Colworth University", "1912", "Tolkien"]


def test_years_join_event_names_and_dates_stay_separate_otherwise():
    assert names("She ran at the 1924 Summer Olympics in Paris.") == [
        "1924 Summer Olympics",
        "Paris",
    ]
    assert names("In 1994 Elisabeth Ronn founded it.") == ["1994", "Elisabeth Ronn"]


# --------------------------------------------------------------------------- the extractor


def test_title_line_is_its_own_sentence_and_the_top_entity():
    text = (
        "Journal of Applied Tides (journal)\n"
        "The Journal of Applied Tides is published by the Colworth Press. "
        "Its editor is Ilse Marrow of Colworth University."
    )
    ex = extract(text, title="Journal of Applied Tides (journal)")
    first = ex.entities[0]
    assert first.name == "Journal of Applied Tides"
    assert first.score == max(e.score for e in ex.entities) == 90.0  # 50 + 30 title + 10
    assert {e.name for e in ex.entities} == {
        "Journal of Applied Tides",
        "Colworth Press",
        "Ilse Marrow",
        "Colworth University",
    }
    # The title line is not glued to the first sentence's mentions.
    assert ("Journal of Applied Tides", "Colworth Press") in {
        (r.source, r.target) for r in ex.relations
    }
    assert not any("\n" in f.text for f in ex.facts)


def test_title_not_repeated_in_the_body_is_kept_and_scanned():
    text = "Shipping in Dunmere\nThe river rose twice that spring."
    ex = extract(text, title="Shipping in Dunmere")
    assert ex.entities[0].name == "Shipping in Dunmere"
    assert "Dunmere" in {e.name for e in ex.entities}


def test_short_forms_resolve_to_the_earlier_full_name():
    ex = extract("Gene Talbot sang in Dunmere. Later Talbot retired to Osk Bay.")
    assert [e.name for e in ex.entities] == ["Gene Talbot", "Dunmere", "Osk Bay"]
    assert ex.entities[0].score == 70.0  # 50 + 10 for a second mention + 10 first sentence


def test_long_gaps_get_a_generic_label():
    ex = extract(
        "Ilse Marrow, after many quiet and uneventful years spent far away from home, "
        "returned to Dunmere."
    )
    assert [(r.source, r.label, r.target) for r in ex.relations] == [
        ("Ilse Marrow", "related to", "Dunmere")
    ]
    assert ex.facts[0].score == 6.0  # 2 members x 2 + verb-like "returned"


def test_empty_text_gives_an_empty_extraction_and_stats_count():
    extractor = OfflineExtractor()
    assert isinstance(extractor, Extractor)
    assert extractor.name == "offline"
    out = extractor.extract(
        [
            ChunkInput("a", "d", ""),
            ChunkInput("b", "d", "Ilse Marrow studied at Colworth University in 1912."),
        ]
    )
    assert [x.chunk_id for x in out] == ["a", "b"]
    assert out[0] == Extraction(chunk_id="a", extractor="offline")
    stats = extractor.stats
    assert stats.chunks == 2
    assert stats.entities == 3 and stats.relations == 3 and stats.facts == 1 and stats.units == 1
    assert extractor.extract([]) == [] and stats.chunks == 2
    assert OfflineExtractor(numbers=False).name == "offline:numbers=false"
    assert OfflineExtractor(counts=True).name == "offline:counts=true"


def test_output_is_normalised_and_deterministic():
    text = (
        "Harbour of Dunmere\n"
        "The Harbour of Dunmere was built by Osk Shipyard in 1902. "
        "Ilse Marrow, Gene Talbot and Mara Quint ran it for the Dunmere Council until 1931. "
        "In 1931 Osk Shipyard closed."
    )
    chunks = [ChunkInput("x", "d", text, "Harbour of Dunmere")]
    first = OfflineExtractor().extract(chunks)[0]
    second = OfflineExtractor().extract(chunks)[0]
    assert first.to_dict() == second.to_dict()
    assert first.normalised() == first
    keys = [e.key for e in first.entities]
    assert len(keys) == len(set(keys))
    assert {e.type for e in first.entities if e.name == "Osk Shipyard"} == {"organisation"}
    assert all(0 <= e.score <= 100 for e in first.entities)
    assert all(0 <= f.score <= 10 for f in first.facts)


@pytest.mark.parametrize(
    "text",
    ["", "   ", "\n\n", "...", "a b c", "1912", "“”", "The.", "# \n#", "Mr. . Dr."],
)
def test_degenerate_inputs_do_not_fail(text):
    ex = extract(text)
    assert ex.chunk_id == "c1"
    for e in ex.entities:
        assert e.key
