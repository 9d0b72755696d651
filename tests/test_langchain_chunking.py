"""Splits an app already made are the index's chunks: no re-join, no re-cut, no overlap twice.

LangChain apps usually split before indexing (``RecursiveCharacterTextSplitter``), and
every split keeps its file's ``metadata["source"]``. The retriever must keep those splits
as the chunks it ranks and returns. The splits here are cut by hand the way a splitter
cuts them (with overlap), and by LangChain's real splitter when it is installed.
"""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_core")

from langchain_core.documents import Document  # noqa: E402

from hygraph.demo import sample_dir  # noqa: E402
from langchain_hygraph import HyGraphRetriever  # noqa: E402
from langchain_hygraph.retriever import to_core_documents  # noqa: E402

NAME = "great-dunmere-flood.md"


def splits(name: str = NAME, overlap: int = 60) -> list[Document]:
    """A file cut into paragraphs, each repeating the end of the one before (overlap)."""
    text = (sample_dir() / name).read_text()
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    pieces = [paragraphs[0]] + [
        prev[-overlap:] + " " + para for prev, para in zip(paragraphs, paragraphs[1:], strict=False)
    ]
    return [
        Document(page_content=piece, metadata={"source": name, "start_index": i})
        for i, piece in enumerate(pieces)
    ]


def stored_chunks(retriever: HyGraphRetriever, doc_id: str) -> list[str]:
    store = retriever.index.store
    chunks = store.get_chunks(store.chunk_ids_of([doc_id]))
    return [c.text for c in sorted(chunks.values(), key=lambda c: c.index)]


def test_splits_sharing_a_source_are_kept_as_chunks(tmp_path, minilm):
    pieces = splits()
    assert len(pieces) >= 3
    other = Document(
        page_content=(sample_dir() / "ilse-marrow.md").read_text(),
        metadata={"source": "ilse-marrow.md"},
    )
    with HyGraphRetriever.from_documents(
        [*pieces, other], method="vanilla", persist_dir=tmp_path / "i", k=3
    ) as retriever:
        assert stored_chunks(retriever, NAME) == [p.page_content for p in pieces]
        # Returned passages are the app's own splits, verbatim.
        docs = retriever.invoke("How many homes did the flood damage?")
        split_texts = {p.page_content for p in pieces}
        assert docs[0].page_content in split_texts and docs[0].metadata["source"] == NAME
        # A whole document (one per source) is still cut by the core's token windows.
        whole = stored_chunks(retriever, "ilse-marrow.md")
        assert whole and whole[0].strip()[:40] == other.page_content.strip()[:40]
        # Adding the same splits again changes nothing; new splits replace the old ones.
        assert retriever.add_documents(pieces) == [NAME]
        assert stored_chunks(retriever, NAME) == [p.page_content for p in pieces]
        fewer = pieces[:2]
        retriever.add_documents(fewer)
        assert stored_chunks(retriever, NAME) == [p.page_content for p in fewer]


def test_to_core_documents_chunking_modes():
    pieces = splits()
    (kept,) = to_core_documents(pieces)
    assert kept.parts == tuple(p.page_content for p in pieces)
    assert kept.metadata == {"source": NAME}  # start_index differs per split: dropped
    (joined,) = to_core_documents(pieces, chunking="core")
    assert joined.parts is None and joined.text == "\n\n".join(p.page_content for p in pieces)
    (lone,) = to_core_documents(pieces[:1])
    assert lone.parts is None  # a source given whole: the core chunks it
    (forced,) = to_core_documents(pieces[:1], chunking="keep")
    assert forced.parts == (pieces[0].page_content,)
    with pytest.raises(ValueError, match="chunking must be one of"):
        to_core_documents(pieces, chunking="paragraphs")


def test_core_chunking_on_request(tmp_path, minilm):
    pieces = [p.page_content for p in splits()]
    with HyGraphRetriever.from_documents(
        splits(), method="vanilla", persist_dir=tmp_path / "i", chunking="core"
    ) as retriever:
        chunks = stored_chunks(retriever, NAME)
    assert chunks and chunks != pieces  # the core's own token windows over the joined text
    overlap = pieces[2][:60]  # the end of the paragraph before, repeated by the splitter
    assert sum(chunk.count(overlap) for chunk in chunks) >= 2


def test_recursive_character_text_splitter_output(tmp_path, minilm):
    splitters = pytest.importorskip("langchain_text_splitters")
    loaded = [
        Document(page_content=(sample_dir() / n).read_text(), metadata={"source": n})
        for n in (NAME, "dunmere.md")
    ]
    splitter = splitters.RecursiveCharacterTextSplitter(
        chunk_size=400, chunk_overlap=80, add_start_index=True
    )
    pieces = splitter.split_documents(loaded)
    with HyGraphRetriever.from_documents(
        pieces, method="vanilla", persist_dir=tmp_path / "i", k=4
    ) as retriever:
        for name in (NAME, "dunmere.md"):
            own = [p.page_content for p in pieces if p.metadata["source"] == name]
            assert len(own) > 1 and stored_chunks(retriever, name) == own
        docs = retriever.invoke("How many homes did the flood damage?")
        assert len(docs) == 4 and all(
            d.page_content in {p.page_content for p in pieces} for d in docs
        )
