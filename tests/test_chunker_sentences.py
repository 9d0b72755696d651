"""Sentence-mode chunking: whole sentences up to the token budget, hand-checked texts."""

from __future__ import annotations

import json
import os
import re

import pytest
from doubles import WordEmbedder
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hygraph.errors import ConfigError, IndexMismatchError
from hygraph.extract.sentences import sentence_starts, split_sentences
from hygraph.index import GraphIndex
from hygraph.ingest import Chunk, Chunker, Document, chunk_document, default_tokenizer
from hygraph.ingest.chunker import DEFAULT_MODE, MODES
from hygraph.manifest import MANIFEST_NAME, Manifest

SETTINGS = settings(
    max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# Token counts (bundled MiniLM WordPiece): 14, 23, 9, 15, 6, 2; 69 joined with spaces.
SENTENCES = [
    "Dr. Orla Penn moved to St. Avern in 1904.",
    "She met J. R. R. Tolkien there, e.g. at the U.S. embassy.",
    "The rate was 3.5 per cent!",
    "The No. 3 Dry Dock is now used by a boat repair cooperative.",
    "Was it No. 7?",
    "Yes.",
]
TEXT = " ".join(SENTENCES)
# Phrases no chunk may start or end inside.
PROTECTED = ["Dr. Orla", "St. Avern", "J. R. R. Tolkien", "e.g. at", "U.S. embassy", "3.5"]
PROTECTED += ["No. 3 Dry", "No. 7"]


@pytest.fixture(scope="module")
def tok():
    return default_tokenizer()


def check_chunks(doc: Document, chunks: list[Chunk], size: int, tok) -> None:
    """What every chunk of every mode must satisfy: exact text, offsets and token counts."""
    spans = tok.offsets(doc.text)
    for i, c in enumerate(chunks):
        assert c.index == i and c.doc_id == doc.id
        assert c.text == doc.text[c.start_char : c.end_char]
        assert 1 <= c.n_tokens == c.end_token - c.start_token <= size
        assert (c.start_char, c.end_char) == (spans[c.start_token][0], spans[c.end_token - 1][1])
        assert c.id == Chunk.make_id(doc.id, c.text)
    if chunks:
        assert chunks[0].start_token == 0 and chunks[-1].end_token == len(spans)
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        # Contiguous or overlapping, never a token left out, always something new.
        assert nxt.start_token <= prev.end_token < nxt.end_token
        assert nxt.start_token > prev.start_token


def texts(chunks: list[Chunk]) -> list[str]:
    return [c.text for c in chunks]


def runs_of_sentences(sentences: list[str]) -> set[str]:
    return {
        " ".join(sentences[i:j])
        for i in range(len(sentences))
        for j in range(i + 1, len(sentences) + 1)
    }


# -- hand-checked chunks ------------------------------------------------------------------


def test_sentence_token_counts_the_hand_checks_rely_on(tok) -> None:
    assert [tok.count(s) for s in SENTENCES] == [14, 23, 9, 15, 6, 2]
    assert tok.count(TEXT) == 69


def test_hand_checked_chunks_with_a_whole_sentence_overlap(tok) -> None:
    # Sentence ends at tokens 14, 37, 46, 61, 67, 69 (counts 14, 23, 9, 15, 6, 2).
    doc = Document(id="d", text=TEXT)
    chunks = chunk_document(doc, size=30, overlap=16, tokenizer=tok)
    # 14 | 23 (14 + 23 > 30) | 9 + 15 = 24, the even share of the 32 tokens left | the
    # next repeats "The No. 3 Dry Dock ..." (15 tokens <= 16) and ends the text.
    assert texts(chunks) == [
        SENTENCES[0],
        SENTENCES[1],
        " ".join(SENTENCES[2:4]),
        " ".join(SENTENCES[3:6]),
    ]
    assert [(c.start_token, c.end_token) for c in chunks] == [(0, 14), (14, 37), (37, 61), (46, 69)]
    check_chunks(doc, chunks, 30, tok)
    # With 10 tokens of overlap, no last sentence fits (15 > 10): no overlap.
    chunks = chunk_document(doc, size=30, overlap=10, tokenizer=tok)
    assert [(c.start_token, c.end_token) for c in chunks] == [(0, 14), (14, 37), (37, 61), (61, 69)]
    # No overlap asked: the 32 tokens after "She met ..." split 9 | 23 (nearer 16 than 24).
    chunks = chunk_document(doc, size=30, overlap=0, tokenizer=tok)
    assert texts(chunks) == [SENTENCES[0], SENTENCES[1], SENTENCES[2], " ".join(SENTENCES[3:])]
    # A larger window: two chunks; "She met ..." (23 tokens) is too long to repeat.
    chunks = chunk_document(doc, size=40, overlap=10, tokenizer=tok)
    assert texts(chunks) == [" ".join(SENTENCES[:2]), " ".join(SENTENCES[2:])]
    # The whole text fits: one chunk.
    assert texts(chunk_document(doc, size=69, overlap=10, tokenizer=tok)) == [TEXT]


def test_no_short_last_chunk(tok) -> None:
    # 16 sentences of 7 tokens (112): greedily 98 + 14 in windows of 100; evened out, 56 + 56.
    text = " ".join(f"Boat number {i} left the harbour." for i in range(16))
    assert tok.count("Boat number 3 left the harbour.") == 7
    doc = Document(id="b", text=text)
    chunks = chunk_document(doc, size=100, overlap=0, tokenizer=tok)
    assert [c.n_tokens for c in chunks] == [56, 56]
    assert chunks[1].text.startswith("Boat number 8 left")
    # A long text: chunks of nearly the window, the last ones evened out.
    long = Document(id="l", text=" ".join([text] * 10))
    sizes = [c.n_tokens for c in chunk_document(long, size=100, overlap=0, tokenizer=tok)]
    assert len(sizes) == 12 and min(sizes) >= 91 and max(sizes) <= 98


@pytest.mark.parametrize("size", [23, 24, 25, 29, 31, 37, 40, 46, 52, 60, 68])
@pytest.mark.parametrize("overlap", [0, 1, 2, 6, 8, 9, 15, 22])
def test_chunks_are_runs_of_whole_sentences(tok, size: int, overlap: int) -> None:
    if overlap >= size:
        return
    doc = Document(id="d", text=TEXT)
    chunks = chunk_document(doc, size=size, overlap=overlap, tokenizer=tok)
    check_chunks(doc, chunks, size, tok)
    whole = runs_of_sentences(SENTENCES)
    for c in chunks:
        assert c.text in whole  # so "No. 3", "U.S.", "Dr.", "e.g.", "3.5" ... stay whole
        for phrase in PROTECTED:
            for m in re.finditer(re.escape(phrase), TEXT):
                assert not m.start() < c.start_char < m.end()
                assert not m.start() < c.end_char < m.end()
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        if nxt.start_char < prev.end_char:  # an overlap: whole sentences, <= overlap tokens
            shared = TEXT[nxt.start_char : prev.end_char]
            assert shared in whole and tok.count(shared) <= overlap


def test_the_overlap_is_the_longest_run_of_last_sentences_that_fits(tok) -> None:
    sentences = ["Alpha ran.", "Beta ran.", "Gamma ran far.", "Delta ran.", "Epsilon sat."]
    assert [tok.count(s) for s in sentences] == [3, 3, 4, 3, 3]
    doc = Document(id="d", text=" ".join(sentences))
    chunks = chunk_document(doc, size=10, overlap=7, tokenizer=tok)
    assert texts(chunks) == [
        "Alpha ran. Beta ran. Gamma ran far.",
        "Beta ran. Gamma ran far. Delta ran.",  # 3 + 4 = 7 tokens carried
        "Gamma ran far. Delta ran. Epsilon sat.",  # never back into the previous carry
    ]
    check_chunks(doc, chunks, 10, tok)
    # 6 tokens: "Gamma ran far." (4) fits, "Beta ran. Gamma ran far." (7) does not.
    assert texts(chunk_document(doc, size=10, overlap=6, tokenizer=tok))[1].startswith("Gamma")
    # 3 tokens: the last sentence alone (4) is too long: no overlap at all.
    chunks = chunk_document(doc, size=10, overlap=3, tokenizer=tok)
    assert texts(chunks) == ["Alpha ran. Beta ran. Gamma ran far.", "Delta ran. Epsilon sat."]
    assert chunks[1].start_token == chunks[0].end_token


def test_the_overlap_leaves_room_for_the_next_sentence(tok) -> None:
    sentences = ["Alpha ran.", "Beta ran.", "Gamma ran far.", "Zeta ran very far away.", "Eta sat."]
    assert [tok.count(s) for s in sentences] == [3, 3, 4, 6, 3]
    doc = Document(id="d", text=" ".join(sentences))
    # 7 tokens of overlap would carry "Beta ran. Gamma ran far.", but then "Zeta ..." (6)
    # would not fit in 10: only "Gamma ran far." is carried.
    assert texts(chunk_document(doc, size=10, overlap=7, tokenizer=tok)) == [
        "Alpha ran. Beta ran. Gamma ran far.",
        "Gamma ran far. Zeta ran very far away.",
        "Zeta ran very far away. Eta sat.",
    ]


def test_no_3_never_starts_a_chunk(tok) -> None:
    # The demo's passage that began ". 3 Dry Dock is now used ...": a window ended in "No. 3".
    text = (
        "The largest facility at the yard was the No. 3 Dry Dock, completed in 1939. "
        "Aldercott Shipyard closed in 1984. "
        "The No. 3 Dry Dock is now used by a boat repair cooperative."
    )
    doc = Document(id="yard", text=text)
    longest = max(tok.count(s) for s in re.split(r"(?<=\.) (?=[AT])", text))
    assert longest == 18
    for size in range(longest, 60):
        for c in chunk_document(doc, size=size, overlap=size // 4, tokenizer=tok):
            assert c.text.startswith(("The ", "Aldercott"))
            assert c.text.endswith(("1939.", "1984.", "cooperative."))
    # Shorter windows cut the first sentence between words, never inside "No. 3".
    for size in range(4, longest):
        for c in chunk_document(doc, size=size, overlap=2, tokenizer=tok):
            assert not c.text.startswith(("3", ". 3", "."))


# -- long sentences and long words --------------------------------------------------------


def test_a_sentence_longer_than_the_window_is_cut_between_words(tok) -> None:
    long = "The harbour " + " ".join(f"harbour{i}" for i in range(60)) + " closed."
    text = f"It began. {long} It ended."
    doc = Document(id="d", text=text)
    size = 16
    chunks = chunk_document(doc, size=size, overlap=4, tokenizer=tok)
    check_chunks(doc, chunks, size, tok)
    assert tok.count(long) > size and len(chunks) > 3
    for c in chunks:
        # Every chunk starts and ends at whitespace (or the text's ends): no word is cut.
        assert c.start_char == 0 or text[c.start_char - 1].isspace()
        assert c.end_char == len(text) or text[c.end_char].isspace()
        assert tok.count(c.text) == c.n_tokens  # the same tokens on their own
    # Pieces of the long sentence are never repeated: an overlap is whole sentences only.
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        if nxt.start_char < prev.end_char:
            assert text[nxt.start_char : prev.end_char] in {"It began."}
    # The short sentences stay whole; the long one's pieces go with them where they fit.
    assert chunks[0].text == "It began. The harbour harbour0 harbour1 harbour2 harbour3 harbour4"
    assert chunks[1].text.startswith("harbour5 ") and chunks[1].start_token == 15
    assert chunks[-1].text == "harbour58 harbour59 closed. It ended."


@pytest.mark.parametrize(
    ("word", "size"),
    [
        ("東京" * 100, 32),
        ("-".join(["graph"] * 50), 10),
        ("-".join(["혼합"] * 15), 10),
        ("x-" * 40 + "x", 7),
    ],
)
def test_a_document_of_one_giant_word_is_cut_between_tokens(tok, word: str, size: int) -> None:
    doc = Document(id="w", text=word)
    chunks = chunk_document(doc, size=size, overlap=3, tokenizer=tok)
    check_chunks(doc, chunks, size, tok)
    assert len(chunks) > 1
    # The pieces follow each other without overlap and rebuild the word exactly.
    assert "".join(texts(chunks)) == word
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        assert nxt.start_token == prev.end_token and nxt.start_char == prev.end_char
    # A Hangul syllable is three tokens over one character: never cut inside one (the
    # pieces' characters do not overlap, checked above).


def test_a_giant_word_among_sentences(tok) -> None:
    text = "A short one. " + "東京" * 30 + " and more words. The end."
    doc = Document(id="g", text=text)
    chunks = chunk_document(doc, size=12, overlap=4, tokenizer=tok)
    check_chunks(doc, chunks, 12, tok)
    assert chunks[0].text == "A short one."
    assert chunks[-1].text.endswith("The end.")


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t \r\n", "\u200b\x1c"])
def test_documents_without_tokens_give_no_chunks(tok, text: str) -> None:
    for mode in MODES:
        assert chunk_document(Document(id="e", text=text), tokenizer=tok, mode=mode) == []


def test_pre_chunked_documents_keep_their_parts(tok) -> None:
    doc = Document.from_parts("p", ["First part. It has", "two sentences. Second part."])
    for mode in MODES:
        chunks = chunk_document(doc, size=4, overlap=1, tokenizer=tok, mode=mode)
        assert texts(chunks) == ["First part. It has", "two sentences. Second part."]


def test_split_sentences_keeps_the_abbreviations_found_in_musique() -> None:
    cases = {
        "ReNew Power Ventures Pvt. Ltd. is an Indian firm. It grew.": 2,
        "The Cheakamus River (pron. CHEEK-a-mus) is a tributary. It flows.": 2,
        "Modu Chanyu (r. 209–174 BC) conquered them. He died.": 2,
        "He wrote it (translit. Jeisipsamhoe Donggye) in 1912. It sold.": 2,
    }
    for text, n in cases.items():
        assert len(split_sentences(text)) == n, text
        assert len(sentence_starts(text)) == n, text


def test_lines_headings_and_hard_wrapped_text(tok) -> None:
    text = (
        "# Aldercott Shipyard\n\n"
        "The yard built the No.\n3 Dry Dock in 1939, which\nis 160 metres long.\n"
        "It closed in 1984.\n\n- a list item\n- another item\n1. First step.\n"
    )
    starts = sentence_starts(text)
    assert [text[s : s + 12] for s in starts] == [
        "# Aldercott ",
        "The yard bui",
        "It closed in",
        "- a list ite",
        "- another it",
        "1. First ste",
    ]
    doc = Document(id="h", text=text)
    wrapped = tok.count("The yard built the No.\n3 Dry Dock in 1939, which\nis 160 metres long.")
    for size in range(4, 40):
        chunks = chunk_document(doc, size=size, overlap=2, tokenizer=tok)
        check_chunks(doc, chunks, size, tok)
        for c in chunks:
            # Even where the wrapped sentence must be cut, "No." keeps its number.
            assert not c.text.startswith("3 Dry")
            if size >= wrapped:
                assert not c.text.startswith(("is 160", "First step"))


# -- modes and settings -------------------------------------------------------------------


def test_modes_and_defaults(tok) -> None:
    assert DEFAULT_MODE == "sentences" and set(MODES) == {"sentences", "tokens"}
    assert Chunker().mode == "sentences" and Chunker(240, 20).mode == "sentences"
    doc = Document(id="d", text=TEXT)
    windows = Chunker(30, 10, tok, mode="tokens")(doc)
    # Token windows cut where the count says, inside sentences.
    assert [(c.start_token, c.end_token) for c in windows] == [(0, 30), (20, 50), (40, 69)]
    assert Chunker(30, 10, tok)(doc) == chunk_document(doc, size=30, overlap=10, tokenizer=tok)
    assert list(Chunker(30, 10, tok).chunk_many([doc, doc])) == Chunker(30, 10, tok)(doc) * 2
    for bad in ("words", "", None, "Sentences"):
        with pytest.raises(ConfigError, match="chunk mode"):
            Chunker(mode=bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="chunk mode"):
            chunk_document(doc, mode=bad)  # type: ignore[arg-type]


def test_a_new_index_chunks_by_sentences_and_an_old_one_keeps_token_windows(tmp_path) -> None:
    embedder = WordEmbedder()
    text = TEXT + " The yard closed in 1984. Its last ship, the Gannet, left in May."
    doc = Document(id="yard", text=text)
    new = tmp_path / "new"
    with GraphIndex(new, embedder=embedder, chunk_size=30, chunk_overlap=10, progress=False) as ix:
        assert ix.manifest.chunk_mode == "sentences"
        ix.insert([doc], methods=["bm25"])
        stored = ix.store.chunks_of("yard")
    assert texts(stored) == texts(Chunker(30, 10)(doc))
    assert json.loads((new / MANIFEST_NAME).read_text())["chunk_mode"] == "sentences"

    # An index built before chunk modes: its manifest has no chunk_mode.
    old = tmp_path / "old"
    with GraphIndex(old, embedder=embedder, chunk_size=30, chunk_overlap=10, chunk_mode="tokens",
                    progress=False) as ix:  # fmt: skip
        ix.insert([doc], methods=["bm25"])
        before = texts(ix.store.chunks_of("yard"))
    assert before == texts(Chunker(30, 10, mode="tokens")(doc))
    data = json.loads((old / MANIFEST_NAME).read_text())
    del data["chunk_mode"]
    (old / MANIFEST_NAME).write_text(json.dumps(data))
    assert Manifest.load(old).chunk_mode == "tokens"
    other = Document(id="other", text=TEXT)
    with GraphIndex(old, embedder=embedder, progress=False) as ix:
        assert ix.manifest.chunk_mode == "tokens"
        report = ix.insert([doc, other])
        assert report.unchanged == ["yard"] and report.added == ["other"]
        assert texts(ix.store.chunks_of("yard")) == before  # no second set of chunks
        assert texts(ix.store.chunks_of("other")) == texts(Chunker(30, 10, mode="tokens")(other))
        changed = Document(id="yard", text=text + " It closed.")
        ix.insert([changed])
        assert texts(ix.store.chunks_of("yard")) == texts(Chunker(30, 10, mode="tokens")(changed))
        assert ix.store.counts()["chunks"] == len(Chunker(30, 10, mode="tokens")(changed)) + len(
            Chunker(30, 10, mode="tokens")(other)
        )
    assert json.loads((old / MANIFEST_NAME).read_text())["chunk_mode"] == "tokens"
    with pytest.raises(IndexMismatchError, match="chunks by tokens"):
        GraphIndex(old, embedder=embedder, chunk_mode="sentences", progress=False)
    with GraphIndex(old, embedder=embedder, chunk_mode="tokens", progress=False) as ix:
        assert ix.manifest.chunk_mode == "tokens"
    with pytest.raises(ConfigError, match="chunk_mode"):
        GraphIndex(tmp_path / "bad", embedder=embedder, chunk_mode="words")
    assert not (tmp_path / "bad").exists()


def test_cli_chunker_flag() -> None:
    from hygraph.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["index", "docs", "--index", "i", "--chunker", "tokens"])
    assert args.chunker == "tokens"
    assert parser.parse_args(["index", "docs", "--index", "i"]).chunker is None
    assert parser.parse_args(["extract", "docs", "--out", "o.jsonl"]).chunker == "sentences"
    with pytest.raises(SystemExit):
        parser.parse_args(["index", "docs", "--index", "i", "--chunker", "words"])


# -- properties ---------------------------------------------------------------------------

MARKDOWN_MARKERS = ("#", "-", "*", "+", ">")


@pytest.mark.parametrize("size", [240, 120, 64, 46, 30, 12])
def test_sample_corpus_chunks_start_at_sentence_starts(tok, sample_path, size: int) -> None:
    overlap = max(1, size // 12)
    for path in sorted(sample_path.glob("*.md")):
        text = path.read_text()
        doc = Document(id=path.name, text=text)
        chunks = Chunker(size, overlap, tok)(doc)
        check_chunks(doc, chunks, size, tok)
        starts = set(sentence_starts(text))
        for c in chunks:
            # Whole words: whitespace (or the text's ends) on both sides, the same tokens
            # when the chunk is encoded on its own.
            assert c.start_char == 0 or text[c.start_char - 1].isspace()
            assert c.end_char == len(text) or text[c.end_char].isspace()
            assert tok.count(c.text) == c.n_tokens <= size
            if size < 46:  # the longest sample sentence: shorter windows cut some
                continue
            # A sentence start: not punctuation, but for a heading marker starting its line.
            assert c.start_char in starts
            first = c.text[0]
            assert first.isalnum() or (
                first in MARKDOWN_MARKERS and (c.start_char == 0 or text[c.start_char - 1] == "\n")
            ), c.text[:40]


words = st.sampled_from(
    ["graph", "No.", "3", "U.S.", "Dr.", "e.g.", "3.5", "J.", "R.", "Tolkien", "The", "it",
     "東京", "혼합", "don't", "a" * 120, "x-y-z", "\u200b", "(2024)", "!", "?"]
)  # fmt: skip
separators = st.sampled_from([" ", "  ", "\n", "\n\n", "\t", ". ", "! ", "\n# ", "\n- "])
random_texts = st.lists(st.one_of(words, separators), max_size=80).map("".join)


@SETTINGS
@given(text=random_texts, size=st.integers(1, 40), data=st.data())
def test_sentence_chunks_properties(tok, text: str, size: int, data) -> None:
    overlap = data.draw(st.integers(0, size - 1))
    doc = Document(id="r", text=text)
    chunks = chunk_document(doc, size=size, overlap=overlap, tokenizer=tok)
    if not tok.offsets(text):
        assert chunks == []
        return
    check_chunks(doc, chunks, size, tok)
    assert chunk_document(doc, size=size, overlap=overlap, tokenizer=tok) == chunks
    for c in chunks[1:]:
        # A chunk starts a word (what comes before it in the word holds no token), unless
        # that word is longer than the window.
        lo = max(text.rfind(ch, 0, c.start_char) for ch in " \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f")
        if tok.count(text[lo + 1 : c.start_char]):
            assert tok.count(text[lo + 1 : c.end_char]) > size
    for prev, nxt in zip(chunks, chunks[1:], strict=False):
        if nxt.start_token < prev.end_token:  # overlap only where whole sentences fit it
            assert prev.end_token - nxt.start_token <= overlap
            assert nxt.start_char in set(sentence_starts(text))
