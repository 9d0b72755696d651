"""LlamaIndex's persistence idiom, the docstore, and several readers of one index.

``index.storage_context.persist(persist_dir=...)`` then ``load_index_from_storage(...)``
must give back a working ``HyGraphIndex``, wherever the index lived (a temporary
directory, a ``persist_dir`` elsewhere, the storage directory itself). Small indexes of
sample documents, the real bundled MiniLM and embedded Qdrant.
"""

from __future__ import annotations

import shutil

import pytest

pytest.importorskip("llama_index.core")

from li_support import li_documents  # noqa: E402
from llama_index.core import (  # noqa: E402
    Document,
    StorageContext,
    load_index_from_storage,
)
from llama_index.core.indices.registry import INDEX_STRUCT_TYPE_TO_INDEX_CLASS  # noqa: E402

from hygraph.errors import IndexNotFoundError  # noqa: E402
from llama_index_hygraph import HyGraphIndex, HyGraphIndexStruct  # noqa: E402

NAMES = ["ilse-marrow.md", "colworth-university.md", "dunmere.md"]
QUESTION = "Who designed the Caddow Bridge?"


def documents(names: list[str] = NAMES) -> list[Document]:
    return li_documents(names)


def passages(index: HyGraphIndex) -> list[tuple[str, float]]:
    nodes = index.as_retriever(similarity_top_k=3).retrieve(QUESTION)
    return [(n.node.node_id, round(n.score, 5)) for n in nodes]


def allocated(path) -> int:
    """Bytes on disk under ``path`` (blocks, not apparent sizes)."""
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


def test_temporary_index_persists_and_loads_back(tmp_path, minilm):
    index = HyGraphIndex.from_documents(documents(), method="vanilla")  # temporary directory
    before = passages(index)
    assert len(index.docstore.docs) == len(index.graph_index.store.chunk_ids()) > 0
    storage = tmp_path / "storage"
    index.storage_context.persist(persist_dir=str(storage))
    live = index.persist_dir
    index.close()
    shutil.rmtree(live)  # what happens to a temporary directory at exit

    assert INDEX_STRUCT_TYPE_TO_INDEX_CLASS["hygraph"] is HyGraphIndex
    loaded = load_index_from_storage(StorageContext.from_defaults(persist_dir=str(storage)))
    with loaded:
        assert isinstance(loaded, HyGraphIndex) and isinstance(
            loaded.index_struct, HyGraphIndexStruct
        )
        assert loaded.persist_dir == storage / "hygraph" and loaded.method == "vanilla"
        assert passages(loaded) == before
        assert set(loaded.docstore.get_all_ref_doc_info()) == set(NAMES)
        # The loaded index is a full index: it changes, and persists again in place.
        loaded.insert(Document(text="The Ost ferry ran until 1936.", id_="ferry"))
        loaded.storage_context.persist(persist_dir=str(storage))
    with HyGraphIndex.from_persist_dir(storage) as again:  # a storage directory works too
        assert "ferry" in again.ref_doc_info and "ferry" in again.docstore.get_all_ref_doc_info()
    # The copy kept embedded Qdrant's preallocated files sparse.
    apparent = sum(p.stat().st_size for p in (storage / "hygraph").rglob("*") if p.is_file())
    assert allocated(storage / "hygraph") < apparent / 10


def test_persist_copies_an_index_that_lives_elsewhere(tmp_path, minilm):
    home = tmp_path / "home"
    index = HyGraphIndex.from_documents(documents(), method="vanilla", persist_dir=home)
    before = passages(index)
    index.storage_context.persist(persist_dir=str(tmp_path / "storage"))
    index.storage_context.persist(persist_dir=str(tmp_path / "storage"))  # replaces the copy
    # The live index still works on its own directory, which the struct names again.
    assert index.index_struct.path == str(home.resolve()) and passages(index) == before
    index.close()

    moved = tmp_path / "moved"
    (tmp_path / "storage").rename(moved)
    context = StorageContext.from_defaults(persist_dir=str(moved))
    with pytest.raises(IndexNotFoundError, match="persist_dir=") as err:
        load_index_from_storage(context)
    assert "\n" not in str(err.value)
    with load_index_from_storage(context, persist_dir=moved / "hygraph") as loaded:
        assert passages(loaded) == before
    with HyGraphIndex.from_persist_dir(moved) as loaded:
        assert passages(loaded) == before


def test_persist_into_the_index_directory_itself(tmp_path, minilm):
    home = tmp_path / "home"
    with HyGraphIndex.from_documents(
        documents(NAMES[:2]), method="vanilla", persist_dir=home
    ) as index:
        before = passages(index)
        index.storage_context.persist(persist_dir=str(home))
    assert not (home / "hygraph").exists()  # nothing copied: it already is there
    with load_index_from_storage(StorageContext.from_defaults(persist_dir=str(home))) as loaded:
        assert loaded.persist_dir == home and passages(loaded) == before
    with HyGraphIndex.from_persist_dir(home) as reopened:  # still an index directory
        assert passages(reopened) == before


def test_docstore_of_a_reopened_index_is_filled_on_first_use(tmp_path, minilm):
    home = tmp_path / "home"
    HyGraphIndex.from_documents(documents(), method="vanilla", persist_dir=home).close()
    with HyGraphIndex.from_persist_dir(home) as index:
        info = index.docstore.get_all_ref_doc_info()
        assert {k: v.node_ids for k, v in info.items()} == {
            k: v.node_ids for k, v in index.ref_doc_info.items()
        }
        node = index.docstore.get_node(info["dunmere.md"].node_ids[0])
        assert node.metadata["file_name"] == "dunmere.md" and node.ref_doc_id == "dunmere.md"
        index.delete_ref_doc("dunmere.md")
        assert "dunmere.md" not in index.docstore.get_all_ref_doc_info()


def test_two_readers_of_one_index_in_one_process(tmp_path, minilm):
    home = tmp_path / "home"
    HyGraphIndex.from_documents(documents(), method="vanilla", persist_dir=home).close()
    first = HyGraphIndex.from_persist_dir(home)
    second = HyGraphIndex.from_persist_dir(home)
    try:
        assert passages(first) == passages(second)
        first.close()
        assert passages(second)  # the other reader keeps working
    finally:
        first.close()
        second.close()
