"""Facts pooled from their passage (``fact_vector="passage"``): spans, the pass that pools
them, the cache that carries them from ``chunks`` to ``fact-vectors``, and the layer."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from doubles import WordEmbedder

from hygraph.errors import ConfigError
from hygraph.graph.kinds import EdgeKind
from hygraph.graph.store import Edge
from hygraph.index import GraphIndex
from hygraph.ingest.documents import Document
from hygraph.layers.fact_spans import MAX_SPAN_CHARS, find_region, first_chunk
from hygraph.layers.fact_vectors import FACT_COLLECTION, FactVectorsConfig, fact_text
from hygraph.models.cache import DiskCache
from hygraph.models.embedders import CachedEmbedder

# Hand-made: worded facts the offline extractor finds ("built by", "born in") and a name
# stated in two documents, so that deleting one moves a fact to the other's passage.
DOCS = [
    Document(
        id="dock",
        title="Dry Dock",
        text=(
            "The No. 3 Dry Dock was built by Harland and Wolff in 1911. "
            "It served the White Star Line for decades. "
            "Today the dock is used by a boat repair cooperative."
        ),
    ),
    Document(
        id="yard",
        title="Harland and Wolff",
        text=(
            "Harland and Wolff is a shipyard in Belfast. "
            "The No. 3 Dry Dock was built by Harland and Wolff for the larger liners. "
            "Edward Harland was born in Scarborough."
        ),
    ),
    Document(
        id="captain",
        title="Renna Osk",
        text="Renna Osk was born in Bergen. She commanded the ship Tern for the Aalborg yard.",
    ),
]


def _pool(model: Any, text: str, region: tuple[tuple[int, int], ...]) -> np.ndarray:
    """The reference: one plain forward pass over ``text``, its outputs over the word pieces
    ``region`` covers averaged and made unit."""
    import torch

    encoded = model.tokenizer(text, return_offsets_mapping=True, return_tensors="pt",
                              truncation=True, max_length=model.max_seq_length)  # fmt: skip
    offsets = encoded.pop("offset_mapping")[0].tolist()
    with torch.inference_mode():
        hidden = model[0].auto_model(**encoded)[0][0]
    rows = [j for j, (a, b) in enumerate(offsets)
            if b > a and any(a < end and b > start for start, end in region)]  # fmt: skip
    vector = hidden[rows].mean(0).numpy()
    return vector / np.linalg.norm(vector)


def test_find_region_takes_the_nearest_pair_of_mentions_in_any_case():
    text = "Alpha met Beta. Much later, beta and ALPHA parted."
    assert find_region(text, "alpha", "beta") == ((0, 14),)
    assert find_region("Beta then alpha", "Alpha", "beta") == ((0, 15),)
    assert find_region(text, "Alpha", "Gamma") == ((0, 15),)  # one name: its sentence
    assert find_region(text, "Gamma", "parted") == ((16, 50),)
    assert find_region(text, "", "Delta") is None


def test_names_far_apart_are_pooled_as_their_two_mentions():
    far = "Alpha " + "x" * MAX_SPAN_CHARS + " Beta"
    assert find_region(far, "Beta", "Alpha") == ((0, 5), (len(far) - 4, len(far)))
    near = far[:-5] + " Alpha Beta"
    assert find_region(near, "Alpha", "Beta") == ((len(near) - 10, len(near)),)


def test_names_in_different_sentences_are_pooled_as_their_two_mentions():
    """A stretch across a sentence end holds other statements (the demo's "Renna Osk
    (1908–1990) was a sea captain ... Osk gained her master's certificate in 1934"):
    the fact gets its two mentions, not the stretch."""
    text = "Renna Osk was a captain. She gained her certificate in 1934."
    assert find_region(text, "Renna Osk", "1934") == ((0, 9), (55, 59))
    assert find_region(text, "certificate", "1934") == ((40, 59),)


def test_first_chunk_is_the_label_s_first_mark():
    edge = Edge("ent:a", "ent:b", EdgeKind.RELATION, 1.0, {
        "label": "built by",
        "tally": {"labels": {"built by": [2, 7, "c-seven", 0], "made": [1, 3, "c-three", 0]}},
    })  # fmt: skip
    assert first_chunk(edge) == "c-seven"
    assert first_chunk(Edge("ent:a", "ent:b", EdgeKind.RELATION, 1.0, {"label": "x"})) is None


def test_the_span_pass_gives_the_plain_vectors_and_pooled_spans(minilm):
    texts = [
        "Dry Dock\nThe No. 3 Dry Dock was built by Harland and Wolff in 1911.",
        "Renna Osk commanded the ship Tern, built in 1948.",
        "a text without spans",
    ]
    spans = [[find_region(texts[0], "No. 3 Dry Dock", "Harland and Wolff")],
             [find_region(texts[1], "Renna Osk", "Tern"), ((0, 4), (36, 40))], []]  # fmt: skip
    vectors, pooled = minilm.embed_spans(texts, spans)
    np.testing.assert_allclose(vectors, minilm.embed(texts), atol=1e-5)
    assert [p.shape for p in pooled] == [(1, 384), (2, 384), (0, 384)]
    model = minilm._load()
    for i in (0, 1):
        for k, region in enumerate(spans[i]):
            assert float(_pool(model, texts[i], region) @ pooled[i][k]) > 0.99999


class _Counting:
    """A scripted stand-in for the bundled encoder: word-hashing vectors, and for each span
    the vector of its characters; counts the texts each pass takes."""

    name = "counting"
    dim = 64

    def __init__(self) -> None:
        self.words = WordEmbedder(dim=64)
        self.passed: list[str] = []

    def embed(self, texts):
        self.passed += list(texts)
        return self.words.embed(texts)

    def embed_query(self, text):
        return self.words.embed_query(text)

    def pools_spans(self) -> bool:
        return True

    def embed_spans(self, texts, spans):
        self.passed += list(texts)
        pooled = [self.words.embed([" ".join(t[a:b] for a, b in r) for r in s]) if s
                  else np.zeros((0, 64)) for t, s in zip(texts, spans, strict=True)]  # fmt: skip
        return self.words.embed(texts), pooled


def test_the_cache_carries_pooled_spans_to_a_later_call(tmp_path):
    inner = _Counting()
    cached = CachedEmbedder(inner, DiskCache(tmp_path / "e.sqlite"))
    texts, spans = ["alpha beta gamma", "delta"], [[((0, 10),)], []]
    first = cached.embed_spans(texts, spans)
    assert inner.passed == texts
    again = cached.embed_spans(texts, spans)  # all cached: no pass
    assert inner.passed == texts
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1][0], again[1][0])
    cached.embed_spans(texts, [[((0, 10),)], [((0, 3),)]])  # a new region: that text passes
    assert inner.passed == [*texts, "delta"]
    assert CachedEmbedder(WordEmbedder(dim=8), None).embed_spans(texts, spans) is None


def _fact_vectors(index: GraphIndex) -> dict[str, np.ndarray]:
    ids = [f"{e.src}|{e.dst}" for e in index.store.iter_edges(EdgeKind.RELATION)]
    return index.vectors.vectors(FACT_COLLECTION, ids)


def _worded(index: GraphIndex) -> dict[str, Edge]:
    from hygraph.layers.fact_vectors import cooccurrence

    return {f"{e.src}|{e.dst}": e for e in index.store.iter_edges(EdgeKind.RELATION)
            if not cooccurrence(e)}  # fmt: skip


def test_a_default_build_pools_worded_facts_from_the_chunk_pass(tmp_path, minilm, monkeypatch):
    """Each worded fact's vector is the pooled span of the chunk that first stated it,
    made in the chunks layer's pass: building the facts again passes no chunk."""
    from hygraph.layers.fact_spans import passage_spans
    from hygraph.models.embedders import SentenceTransformerEmbedder

    with GraphIndex(tmp_path / "i", progress=False) as index:
        index.insert(DOCS, methods=["hybrid-ppr:fact_vector=passage"])
        res = index.resources
        worded = _worded(index)
        spans = passage_spans(res, list(worded.items()))
        assert "ent:dry dock|ent:harland" in spans and "ent:renna osk|ent:bergen" in spans
        stored = _fact_vectors(index)
        model = minilm._load()
        for rid, (chunk, region) in spans.items():
            text = res.chunk_texts([chunk])[chunk]
            assert float(_pool(model, text, region) @ stored[rid]) > 0.9999, rid
        for rid in set(worded) - set(spans):  # no span: the triple
            edge = worded[rid]
            names = [index.store.get_nodes([n])[n].name for n in (edge.src, edge.dst)]
            triple = minilm.embed([fact_text(names[0], edge.data["label"], names[1])])[0]
            assert float(triple @ stored[rid]) > 0.9999, rid
        usage = index.manifest.builds[-1]["usage"]["stages"]
        assert "fact-spans" in usage  # the chunk pass found the spans
        passes: list[int] = []
        shipped = SentenceTransformerEmbedder.embed_spans

        def counted(self: Any, texts: Any, spans: Any) -> Any:
            passes.append(len(texts))
            return shipped(self, texts, spans)

        monkeypatch.setattr(SentenceTransformerEmbedder, "embed_spans", counted)
        layer = index.layer("fact-vectors")
        layer.reset(res)
        layer.update(res)
        assert passes == []  # every span came from the embedding cache
        again = _fact_vectors(index)
        for rid in spans:
            np.testing.assert_array_equal(again[rid], stored[rid])


def test_a_fact_moves_to_another_passage_when_its_first_is_deleted(tmp_path, minilm):
    """ "Dry Dock was built by Harland" is stated in two documents: deleting the first
    pools it from the other's passage."""
    from hygraph.layers.fact_spans import passage_spans

    rid = "ent:dry dock|ent:harland"
    with GraphIndex(tmp_path / "i", progress=False) as index:
        index.insert(DOCS, methods=["hybrid-ppr:fact_vector=passage"])
        before = _fact_vectors(index)[rid]
        index.delete("dock")
        edge = _worded(index)[rid]
        chunk, region = passage_spans(index.resources, [(rid, edge)])[rid]
        assert index.store.get_chunks([chunk])[chunk].doc_id == "yard"
        after = _fact_vectors(index)[rid]
        text = index.resources.chunk_texts([chunk])[chunk]
        assert float(_pool(minilm._load(), text, region) @ after) > 0.9999
        assert float(before @ after) < 0.9999  # another passage, another vector


def test_one_document_at_a_time_pools_what_a_bulk_build_pools(tmp_path, minilm):
    with GraphIndex(tmp_path / "bulk", progress=False) as bulk:
        bulk.insert(DOCS, methods=["hybrid-ppr:fact_vector=passage"])
        expected = _fact_vectors(bulk)
    with GraphIndex(tmp_path / "one", progress=False) as one:
        for doc in DOCS:
            one.insert([doc], methods=["hybrid-ppr:fact_vector=passage"])
        found = _fact_vectors(one)
    assert found.keys() == expected.keys()
    for rid, vector in expected.items():
        np.testing.assert_allclose(found[rid], vector, atol=1e-5, err_msg=rid)


def test_an_embedder_that_cannot_pool_embeds_the_triples(tmp_path):
    words = WordEmbedder(dim=64)
    built = {}
    for mode in ("triple", "passage"):
        with GraphIndex(tmp_path / mode, embedder=words, progress=False) as index:
            index.insert(DOCS, methods=[f"hybrid-ppr:fact_vector={mode}"])
            built[mode] = _fact_vectors(index)
    assert built["passage"].keys() == built["triple"].keys()
    for rid, vector in built["triple"].items():
        np.testing.assert_array_equal(built["passage"][rid], vector)


def test_fact_vector_is_checked():
    with pytest.raises(Exception, match="fact_vector"):
        FactVectorsConfig(fact_vector="sentence")


def test_an_index_refuses_a_variant_its_layers_are_not_built_for(tmp_path, minilm):
    """One configuration per layer: asking an index whose facts are pooled for triples
    would be silently ignored, so it is refused, and the index keeps working."""
    with GraphIndex(tmp_path / "idx", embedder=minilm, progress=False) as index:
        index.insert(DOCS[:1], methods=["hybrid-ppr"])
        with pytest.raises(ConfigError, match="fact_vector=passage"):
            index.insert(DOCS[1:2], methods=["hybrid-ppr:fact_vector=triple"])
        index.insert(DOCS[1:2], methods=["hybrid-ppr:fact_vector=passage,damping=0.5"])
        assert index.retrieve("Who built the dock?", "hybrid-ppr", top_k=1).passages
