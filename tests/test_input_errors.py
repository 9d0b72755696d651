"""Type slips at the core's door get one-line errors that name the mistake.

A string where a list of sources goes, a ``top_k`` that is not a positive whole
number, a framework's model object passed to the core without its adapter, a closed
index, text in other encodings than UTF-8, and text no encoder accepts.
"""

from __future__ import annotations

import logging

import numpy as np
import pytest

from hygraph import GraphIndex
from hygraph.errors import ConfigError, HygraphError, InputError
from hygraph.index import IndexClosedError
from hygraph.ingest import Document

DOCS = [
    Document("yard", "Aldercott Shipyard was founded in 1819 by Josiah Aldercott."),
    Document("flood", "The Great Dunmere Flood of 1931 destroyed the Old Ost Bridge."),
    Document("harbor", "Harrowby is a port town. Its shipyard is Aldercott."),
]


@pytest.fixture(scope="module")
def built(tmp_path_factory, minilm):
    path = tmp_path_factory.mktemp("errors") / "idx"
    index = GraphIndex.build(DOCS, path, methods=["vanilla"], progress=False)
    yield index
    index.close()


def _one_line(err: pytest.ExceptionInfo) -> str:
    message = str(err.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize("as_path", [False, True])
def test_a_single_source_is_not_split_into_characters(tmp_path, minilm, as_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("Harrowby is a port town.")
    (folder / "b.txt").write_text("Aldercott Shipyard was founded in 1819.")
    source = folder if as_path else str(folder)
    with GraphIndex.build(source, tmp_path / "idx", methods=["vanilla"], progress=False) as index:
        assert sorted(index.store.document_ids()) == ["a.md", "b.txt"]
        report = index.insert(str(folder / "a.md"))  # insert takes one source as well
        assert report.unchanged == ["a.md"]
        index.insert(Document("c", "A single document object."))
        assert "c" in index.store.document_ids()


@pytest.mark.parametrize("top_k", ["5", 0, -5, 2.5, True, None])
def test_top_k_must_be_a_positive_whole_number(built, top_k):
    if top_k is None:
        assert built.retrieve("shipyard", top_k=None).items  # the method's default
        return
    for call in (built.retrieve, built.query):
        with pytest.raises(ConfigError) as err:
            call("shipyard", top_k=top_k)
        assert _one_line(err) == f"top_k must be a positive whole number, not {top_k!r}"
    assert len(built.retrieve("shipyard", top_k=2).items) == 2


def test_the_question_must_be_text(built):
    with pytest.raises(InputError, match="the question must be a string, not list"):
        built.retrieve(["shipyard"])


def _llama_llm():
    from llama_index.core.llms import MockLLM

    return MockLLM()


def _langchain_chat_model():
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    return GenericFakeChatModel(messages=iter(["hi"]))


def _llama_embedding():
    from llama_index.core.embeddings import MockEmbedding

    return MockEmbedding(embed_dim=8)


def _langchain_embeddings():
    from langchain_core.embeddings import FakeEmbeddings

    return FakeEmbeddings(size=8)


@pytest.mark.parametrize(
    ("arg", "make", "adapter"),
    [
        ("llm", _llama_llm, "llama_index_hygraph.models.LlamaIndexLLM"),
        ("llm", _langchain_chat_model, "langchain_hygraph.models.LangChainLLM"),
        ("embedder", _llama_embedding, "llama_index_hygraph.models.LlamaIndexEmbedder"),
        ("embedder", _langchain_embeddings, "langchain_hygraph.models.LangChainEmbedder"),
    ],
)
def test_a_framework_model_without_its_adapter_is_named(tmp_path, arg, make, adapter):
    pytest.importorskip("llama_index.core")
    pytest.importorskip("langchain_core")
    model = make()
    with pytest.raises(ConfigError) as err:
        GraphIndex(tmp_path / "idx", **{arg: model})
    message = _one_line(err)
    assert f"{arg}= got a {type(model).__name__}" in message and adapter in message
    assert not (tmp_path / "idx").exists()  # refused before anything was written


def test_an_object_without_the_interface_is_named(tmp_path):
    with pytest.raises(ConfigError, match=r"llm= got a object, .*lacks name, complete, acomplete"):
        GraphIndex(tmp_path / "idx", llm=object())


def test_a_closed_index_says_so(tmp_path, minilm):
    path = tmp_path / "idx"
    index = GraphIndex.build(DOCS[:1], path, methods=["vanilla"], progress=False)
    index.close()
    index.close()  # twice is fine
    expected = f"index {path} is closed; open it again"
    for use in (
        lambda: index.retrieve("shipyard"),
        lambda: index.insert([Document("x", "More text.")]),
        lambda: index.delete("yard"),
        lambda: index.search_chunks("shipyard", 1),
        lambda: index.info(),
    ):
        with pytest.raises(IndexClosedError) as err:
            use()
        assert _one_line(err) == expected
    assert issubclass(IndexClosedError, HygraphError)
    with GraphIndex.open(path) as again:  # opening it again works
        assert again.retrieve("shipyard", top_k=1).passages == ["yard"]


def test_two_readers_of_one_embedded_index_in_one_process(tmp_path, minilm):
    """Both work; closing one keeps the other working (they share Qdrant Edge shards)."""
    from hygraph.integrations import open_for_framework

    path = tmp_path / "idx"
    GraphIndex.build(DOCS, path, methods=["vanilla"], progress=False).close()
    first = GraphIndex.open(path)
    second = GraphIndex.open(path)
    assert first.retrieve("shipyard founded", top_k=1).passages == ["yard"]
    assert second.retrieve("shipyard founded", top_k=1).passages == ["yard"]
    first.close()
    assert second.retrieve("flood bridge", top_k=1).passages == ["flood"]
    # Two framework wrappers over one persist_dir open the same way.
    wrap = dict(framework="test", label="Test", embedding_hint="", progress=False)
    one = open_for_framework(path, **wrap)
    two = open_for_framework(path, **wrap)
    assert one.retrieve("port town", top_k=1).passages == ["harbor"]
    two.close()
    assert one.retrieve("port town", top_k=1).passages == ["harbor"]
    one.close()
    second.close()


def test_a_lone_surrogate_does_not_fail_the_build(tmp_path, minilm, caplog):
    broken = Document("broken", "Caddow Bridge \ud800 was designed by Ilse Marrow.")
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        index = GraphIndex.build([broken, *DOCS[:1]], tmp_path / "idx", progress=False)
    with index:
        assert sorted(index.store.document_ids()) == ["broken", "yard"]
        text = index.store.get_document("broken").text
        assert "\ufffd" in text and "\ud800" not in text
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("'broken'" in w and "lone surrogates" in w for w in warned)


def test_a_lone_surrogate_in_a_jsonl_line(tmp_path, caplog):
    from hygraph.ingest import load_documents

    path = tmp_path / "docs.jsonl"
    # A JSON escape can hold half a surrogate pair; a whole pair becomes its character.
    lines = ['{"id": "a", "text": "half \\ud800 here"}', '{"id": "b", "text": "\\ud83d\\ude00"}']
    path.write_text("\n".join(lines) + "\n")
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        docs = load_documents([path]).documents
    assert [d.text for d in docs] == ["half \ufffd here", "\U0001f600"]
    assert any("'a'" in r.getMessage() for r in caplog.records)


TEXT = "Café “Marrow” – naïve façade, 1931."


@pytest.mark.parametrize(
    ("name", "data", "expected"),
    [
        ("utf8.txt", TEXT.encode("utf-8"), TEXT),
        ("utf8-bom.md", b"\xef\xbb\xbf" + TEXT.encode("utf-8"), TEXT),
        ("utf16le.txt", b"\xff\xfe" + TEXT.encode("utf-16-le"), TEXT),
        ("utf16be.txt", b"\xfe\xff" + TEXT.encode("utf-16-be"), TEXT),
        ("utf32.txt", TEXT.encode("utf-32"), TEXT),  # with its BOM
        ("cp1252.txt", TEXT.encode("cp1252"), TEXT),
        ("latin1.txt", "Café naïve façade".encode("latin-1"), "Café naïve façade"),
        ("undefined.txt", b"caf\xe9 \x81 ok", "café \x81 ok"),  # 0x81: no cp1252 character
        ("damaged.txt", "naïve ".encode() + b"\xff end", "naïve \ufffd end"),  # stays UTF-8
    ],
)
def test_text_encodings(tmp_path, caplog, name, data, expected):
    from hygraph.ingest import load_documents

    (tmp_path / name).write_bytes(data)
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        (doc,) = load_documents([tmp_path / name]).documents
    assert doc.text == expected
    guessed = any("read it as Windows-1252" in r.getMessage() for r in caplog.records)
    assert guessed == (name in ("cp1252.txt", "latin1.txt", "undefined.txt"))
    if name == "damaged.txt":
        assert any("invalid UTF-8 at byte 7" in r.getMessage() for r in caplog.records)


def test_utf16_with_a_broken_surrogate_and_jsonl_in_utf16(tmp_path, caplog):
    from hygraph.ingest import load_documents

    broken = b"\xff\xfe" + "ok ".encode("utf-16-le") + b"\x00\xd8" + "end".encode("utf-16-le")
    (tmp_path / "broken.txt").write_bytes(broken)
    lines = '{"id": "j1", "text": "Café one"}\n{"id": "j2", "text": "two"}\n'
    (tmp_path / "docs.jsonl").write_bytes(lines.encode("utf-16"))
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        docs = {d.id: d.text for d in load_documents([tmp_path]).documents}
    assert docs == {"broken.txt": "ok \ufffdend", "j1": "Café one", "j2": "two"}
    assert any("broken.txt: invalid utf-16-le" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    "data",
    [
        b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",  # NUL bytes and no byte-order mark
        bytes(range(1, 32)) * 4 + b"\x80\xff",  # no NUL, but control characters
    ],
)
def test_real_binaries_are_still_skipped(tmp_path, data):
    from hygraph.ingest import load_documents

    (tmp_path / "blob.txt").write_bytes(data)
    (tmp_path / "ok.txt").write_text("fine")
    result = load_documents([tmp_path])
    assert [d.id for d in result.documents] == ["ok.txt"]
    ((source, reason),) = result.skipped
    assert source.endswith("blob.txt") and reason.startswith("binary file")


def test_one_nul_byte_costs_its_jsonl_line_not_the_file(tmp_path):
    from hygraph.ingest import load_documents

    lines = [b'{"id": "a", "text": "first"}', b'{"id": "b", "text": "bro\x00ken"}',
             b'{"id": "c", "text": "third"}']  # fmt: skip
    (tmp_path / "docs.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    result = load_documents([tmp_path / "docs.jsonl"])
    assert [d.id for d in result.documents] == ["a", "c"]
    ((source, reason),) = result.skipped
    assert source.endswith("docs.jsonl:2") and "NUL" in reason


def test_a_jsonl_file_that_is_mostly_nul_is_binary(tmp_path):
    from hygraph.ingest import load_documents

    (tmp_path / "blob.jsonl").write_bytes(b"\x00\x01\x02\n\x00\x00\n" + b'{"text": "x"}\n')
    (tmp_path / "ok.txt").write_text("fine")
    result = load_documents([tmp_path])
    assert [d.id for d in result.documents] == ["ok.txt"]
    ((source, reason),) = result.skipped
    assert source.endswith("blob.jsonl") and reason.startswith("binary file")


def test_a_corpus_without_an_indexable_word_builds_and_answers(tmp_path, minilm):
    """BM25 has nothing to index ("a b c": single letters); the default build still works."""
    with GraphIndex.build([Document("abc", "a b c")], tmp_path / "idx", progress=False) as index:
        result = index.retrieve("a b c", top_k=3)
        assert result.passages  # dense search still finds the one chunk
        assert index.retrieve("a b c", method="bm25", top_k=3).passages == []
    with GraphIndex.open(tmp_path / "idx", progress=False) as index:  # reopened: saved as empty
        index.insert([Document("doc2", "The Caddow Bridge crosses the River Ost.")])
        assert index.retrieve("Caddow Bridge", method="bm25", top_k=1).passages


@pytest.mark.parametrize(
    "damage",
    [b"junk", b"\x00" * 1536, np.full(384, np.nan, dtype=np.float32).tobytes(), b"x" * 1537],
    ids=["short-junk", "all-zero", "nan-vector", "one-byte-long"],
)
def test_a_damaged_embedding_cache_entry_is_embedded_again(tmp_path, minilm, damage, caplog):
    import sqlite3

    with GraphIndex.build(DOCS[:2], tmp_path / "idx", progress=False) as index:
        index.insert([Document("new", "Aldercott Shipyard repaired boats for the river trade.")])
        want = index.retrieve("Who designed the Caddow Bridge?", top_k=2).passages
        cache = index.cache_dir / "embeddings.sqlite"
    with sqlite3.connect(cache) as conn:  # every entry damaged: queries, and the chunks
        conn.execute("UPDATE cache SET value = ?", (damage,))
    with caplog.at_level(logging.WARNING, logger="hygraph"):
        with GraphIndex.open(tmp_path / "idx", progress=False) as index:
            assert index.retrieve("Who designed the Caddow Bridge?", top_k=2).passages == want
            index.insert([Document("newer", "The Lantern Tide festival is held in Harrowby.")])
            assert index.retrieve("Lantern Tide festival", top_k=1).passages == ["newer"]
    assert any("damaged embedding-cache" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("edited", ["../elsewhere", "/tmp/abs-vectors", "", ".", "qdrant/../../x"])
def test_a_manifest_cannot_send_vectors_outside_the_index(tmp_path, minilm, edited):
    import json

    from hygraph.cli import main

    with GraphIndex.build(DOCS[:1], tmp_path / "idx", methods=["vanilla"], progress=False):
        pass
    manifest = tmp_path / "idx" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["vectors"]["path"] = edited
    manifest.write_text(json.dumps(data))
    with pytest.raises(HygraphError, match="vectors.path"):
        GraphIndex.open(tmp_path / "idx", progress=False)
    assert main(["query", "Aldercott", "--index", str(tmp_path / "idx")]) == 2
    (tmp_path / "more.txt").write_text("Harrowby is a port town.")
    assert main(["index", str(tmp_path / "more.txt"), "--index", str(tmp_path / "idx")]) == 2
    assert not (tmp_path / "elsewhere").exists()
