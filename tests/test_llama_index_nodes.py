"""Chunks an app cut with LlamaIndex are the index's chunks, neither re-joined nor re-cut.

Nodes from ``SentenceSplitter``, ``SentenceWindowNodeParser``, an ``IngestionPipeline`` or
``transformations=`` are grouped by source document and kept in order. The docstore holds
them with their own metadata and neighbours, so ``PrevNextNodePostprocessor`` and
``MetadataReplacementPostProcessor`` work. Real bundled MiniLM, embedded Qdrant.
"""

from __future__ import annotations

import pytest

pytest.importorskip("llama_index.core")

from li_support import li_documents  # noqa: E402
from llama_index.core import Document, Settings  # noqa: E402
from llama_index.core.ingestion import IngestionPipeline  # noqa: E402
from llama_index.core.node_parser import (  # noqa: E402
    SentenceSplitter,
    SentenceWindowNodeParser,
)
from llama_index.core.postprocessor import (  # noqa: E402
    MetadataReplacementPostProcessor,
    PrevNextNodePostprocessor,
)
from llama_index.core.schema import MetadataMode  # noqa: E402

from hygraph.demo import sample_dir  # noqa: E402
from llama_index_hygraph import HyGraphIndex  # noqa: E402

NAMES = ["ilse-marrow.md", "colworth-university.md", "dunmere.md"]
QUESTION = "Who designed the Caddow Bridge?"


def documents(names: list[str] = NAMES) -> list[Document]:
    return li_documents(names)


def splitter() -> SentenceSplitter:
    return SentenceSplitter(chunk_size=96, chunk_overlap=0)


def expected_chunks(nodes) -> dict[str, list[str]]:
    """The node texts of each source document, in order."""
    out: dict[str, list[str]] = {}
    for node in nodes:
        out.setdefault(node.ref_doc_id, []).append(node.get_content())
    return out


def stored_chunks(index: HyGraphIndex) -> dict[str, list[str]]:
    store = index.graph_index.store
    return {d: [c.text for c in store.chunks_of(d)] for d in store.document_ids()}


@pytest.mark.parametrize("way", ["transformations", "nodes", "pipeline"])
def test_user_chunks_are_kept(tmp_path, minilm, way):
    nodes = splitter().get_nodes_from_documents(documents())
    want = expected_chunks(nodes)
    assert all(len(parts) > 1 for parts in want.values())  # really split
    path = tmp_path / "index"
    if way == "transformations":
        index = HyGraphIndex.from_documents(
            documents(), transformations=[splitter()], method="vanilla", persist_dir=path
        )
    elif way == "nodes":
        index = HyGraphIndex(nodes, method="vanilla", persist_dir=path)
    elif way == "pipeline":
        piped = IngestionPipeline(transformations=[splitter()]).run(documents=documents())
        index = HyGraphIndex(nodes=piped, method="vanilla", persist_dir=path)
    with index:
        assert stored_chunks(index) == want
        hits = index.as_retriever(similarity_top_k=3).retrieve(QUESTION)
        assert len(hits) == 3 and all(h.node.get_content() in sum(want.values(), []) for h in hits)
        if way == "transformations":  # insert() runs the index's transformations too
            extra = Document(text=" ".join(["The ferry ran daily."] * 60), id_="ferry")
            index.insert(extra)
            assert len(index.graph_index.store.chunks_of("ferry")) > 1


def test_whole_documents_are_chunked_by_the_core(tmp_path, minilm):
    # Settings.transformations is not read: LlamaIndex fills it with its default splitter
    # whenever an index looks at it, so it cannot tell a user's choice from the default.
    saved = Settings._transformations
    Settings.transformations = [splitter()]
    try:
        index = HyGraphIndex.from_documents(documents(), method="vanilla", persist_dir=tmp_path)
    finally:
        Settings._transformations = saved
    with index:
        core = index.graph_index
        from hygraph.ingest import Chunker
        from hygraph.ingest import Document as CoreDocument

        # The core's own windows (the index's chunk size), not the splitter's nodes.
        chunker = Chunker(core.manifest.chunk_size, core.manifest.chunk_overlap)
        for name in NAMES:
            text = (sample_dir() / name).read_text()
            expected = [c.text for c in chunker(CoreDocument(name, text))]
            assert [c.text for c in core.store.chunks_of(name)] == expected
        assert len(index.docstore.docs) == sum(len(core.store.chunks_of(n)) for n in NAMES)


def test_docstore_neighbours_serve_prev_next(tmp_path, minilm):
    with HyGraphIndex.from_documents(
        documents(NAMES[:1]), transformations=[splitter()], method="vanilla", persist_dir=tmp_path
    ) as index:
        chunks = index.graph_index.store.chunks_of("ilse-marrow.md")
        assert len(index.docstore.docs) == len(chunks)
        hit = index.as_retriever(similarity_top_k=1).retrieve(QUESTION)
        position = [c.id for c in chunks].index(hit[0].node.node_id)
        expand = PrevNextNodePostprocessor(docstore=index.docstore, num_nodes=1, mode="both")
        wider = expand.postprocess_nodes(hit)
        neighbours = {c.id for c in chunks[max(0, position - 1) : position + 2]}
        assert {n.node.node_id for n in wider} == neighbours and len(neighbours) > 1


def test_sentence_windows_serve_metadata_replacement(tmp_path, minilm):
    parser = SentenceWindowNodeParser.from_defaults(window_size=2)
    with HyGraphIndex.from_documents(
        documents(NAMES[:2]), transformations=[parser], method="vanilla", persist_dir=tmp_path
    ) as index:
        hits = index.as_retriever(similarity_top_k=2).retrieve(QUESTION)
        top = hits[0].node
        sentence, window = top.get_content(), top.metadata["window"]
        assert sentence in window and len(window) > len(sentence)
        # The parser hid its keys from the LLM; that choice survives the index.
        assert "window" not in top.get_content(metadata_mode=MetadataMode.LLM)
        replaced = MetadataReplacementPostProcessor(target_metadata_key="window")
        assert replaced.postprocess_nodes(hits)[0].node.get_content() == window
