"""Where a worded fact is stated in a passage: the region its vector is pooled from.

With ``fact_vector="passage"`` (``fact-vectors``), a fact whose label carries words gets
no encoder pass of its own: its vector is the mean of the encoder's outputs over the
words of the passage that state it, taken from the pass that embeds the passage anyway
(late chunking: Günther et al., 2024, "Late Chunking: Contextual Chunk Embeddings Using
Long-Context Embedding Models"). The passage is the one where the fact's label was
first stated (the edge's tally keeps that chunk), and the names are those that chunk's
extraction gave, so the region depends only on the chunk and its extraction: a bulk
build and one document at a time find the same. The region (:func:`find_region`):

1. both names found in one sentence, at most :data:`MAX_SPAN_CHARS` apart: from one
   to the other;
2. both found in different sentences (or farther apart): the two mentions;
3. one found (an LLM's triple often words its object otherwise than the text): the
   sentence around its first mention;
4. neither: none, and the fact is embedded as its triple.

Chosen on MuSiQue questions 1–50 among pooling variants (``benchmarks/pooled_facts.py``,
``benchmarks/results/fact-passage.md``; the rule that a span stays within one sentence
was added for the demo, where a span across sentences outranked the fact a question
needed). ``hybrid-ppr``'s default: its layers cost less than the chunk embedding and
MuSiQue's recall is kept; ``hybrid-ppr:fact_vector=triple`` embeds triples as HippoRAG 2.

Both ``chunks`` (which pools the regions while it embeds the passages, and keeps them
in the embedding cache) and ``fact-vectors`` (which reads them, or runs the pass again
for a chunk embedded without them) call :func:`passage_spans`, so they agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from hygraph.extract.sentences import split_sentences
from hygraph.models.base import Region

if TYPE_CHECKING:
    from hygraph.graph.store import Edge
    from hygraph.resources import Resources

#: Two names farther apart than this (characters) are pooled as their two mentions, not
#: as the stretch between them: that far, the stretch is most of the passage.
MAX_SPAN_CHARS = 400

#: (chunk id, region): a fact's region of the chunk's embedded text (title line included).
Span = tuple[str, Region]


def pools_regions(res: Resources) -> bool:
    """Whether the chunks layer's pass should pool fact regions: the embedder can pool,
    and this index builds ``fact-vectors`` with ``fact_vector="passage"`` or has not
    configured it yet (the recommended method pools, and an index built first with the
    cheap methods alone, as ``hygraph bench`` builds its shared one, would otherwise
    pass its chunks again when ``hybrid-ppr`` is added). An index whose chunks were
    embedded without them passes them again, once."""
    layer = res.layers.get("fact-vectors")
    mode = getattr(getattr(layer, "config", None), "fact_vector", None)
    return mode in (None, "passage") and res.pools_spans()


def find_region(text: str, source: str, target: str) -> Region | None:
    """The character ranges of ``text`` a fact between ``source`` and ``target`` is pooled
    from (letter case ignored; the module's rules), or None when neither is named."""
    lowered = text.lower()
    first, second = mentions(lowered, source), mentions(lowered, target)
    if first and second:
        a, b = min(((a, b) for a in first for b in second),
                   key=lambda p: max(p[0][1], p[1][1]) - min(p[0][0], p[1][0]))  # fmt: skip
        start, end = min(a[0], b[0]), max(a[1], b[1])
        if end - start <= MAX_SPAN_CHARS and _one_sentence(text, start, end):
            return ((start, end),)
        return (a, b) if a < b else (b, a)
    if first or second:
        at = (first or second)[0][0]
        for start, end in _sentences(text):
            if start <= at < end:
                return ((start, end),)
    return None


def _one_sentence(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` lies within one of its sentences. A stretch across
    sentences is mostly other statements: pooled, it resembles the whole passage, and
    such facts crowded the facts a question needed out of the linked few (the demo's
    "the ship Renna Osk commanded": her master's certificate, named in the sentence
    after her name, outranked the ship she commanded)."""
    return any(s <= start and end <= e for s, e in _sentences(text))


@lru_cache(maxsize=256)
def _sentences(text: str) -> tuple[tuple[int, int], ...]:
    """:func:`split_sentences` of a passage, kept for the passage's other facts (a chunk
    states several; an insert finds its regions three times: ahead, in the chunk pass,
    and in ``fact-vectors``)."""
    return tuple(split_sentences(text))


def mentions(lowered: str, name: str) -> list[tuple[int, int]]:
    """Every ``(start, end)`` where ``name`` occurs in ``lowered`` (already lower case)."""
    needle = name.strip().lower()
    if not needle:
        return []
    found, at = [], lowered.find(needle)
    while at >= 0:
        found.append((at, at + len(needle)))
        at = lowered.find(needle, at + 1)
    return found


def first_chunk(edge: Edge) -> str | None:
    """The chunk where ``edge``'s label was first stated (its tally's first mark)."""
    labels = (edge.data.get("tally") or {}).get("labels") or {}
    mark = labels.get(str(edge.data.get("label", "")))
    return str(mark[2]) if mark and len(mark) > 2 else None


def passage_spans(
    res: Resources, edges: Sequence[tuple[str, Edge]], extractions: dict[str, Any] | None = None
) -> dict[str, Span]:
    """Fact id → its span, for the ``(fact id, edge)`` pairs whose first chunk names the
    fact's source or target (the others have none: they are embedded as their
    triple). ``extractions``: the chunks' extractions where the caller read them."""
    from hygraph.graph.entity_graph import entity_node_id

    chunk_of = {rid: c for rid, edge in edges if (c := first_chunk(edge)) is not None}
    if not chunk_of:
        return {}
    wanted = set(chunk_of.values())
    if extractions is None or not wanted <= extractions.keys():
        extractions = res.store.get_extractions(wanted)
    texts = res.chunk_texts(wanted & extractions.keys())
    stated: dict[str, dict[tuple[str, str, str], Any]] = {}  # chunk → (src, dst, label) → record
    spans: dict[str, Span] = {}
    for rid, edge in edges:
        chunk = chunk_of.get(rid)
        if chunk is None or chunk not in texts:
            continue
        if chunk not in stated:
            records: dict[tuple[str, str, str], Any] = {}
            for rel in extractions[chunk].relations:
                key = (entity_node_id(rel.source_key), entity_node_id(rel.target_key), rel.label)
                records.setdefault(key, rel)
            stated[chunk] = records
        rel = stated[chunk].get((edge.src, edge.dst, str(edge.data.get("label", ""))))
        found = None if rel is None else find_region(texts[chunk], rel.source, rel.target)
        if found is not None:
            spans[rid] = (chunk, found)
    return spans


def chunk_spans(res: Resources, chunk_ids: Sequence[str]) -> dict[str, list[Region]]:
    """For the chunks layer: chunk id → the regions of the worded facts first stated in it
    (each once), so that its pass over ``chunk_ids`` pools what ``fact-vectors`` will read."""
    from hygraph.graph.kinds import EdgeKind
    from hygraph.layers.fact_vectors import cooccurrence
    from hygraph.layers.relation_vectors import named_relations, relation_id

    wanted = set(chunk_ids)
    extractions = res.store.get_extractions(chunk_ids)
    keys = named_relations(res, chunk_ids, extractions)
    edges = res.store.get_edges(keys, entries=False) if keys else {}
    mine = [
        (relation_id(s, d), e)
        for (s, d, k), e in edges.items()
        if k == EdgeKind.RELATION and not cooccurrence(e) and first_chunk(e) in wanted
    ]
    out: dict[str, list[Region]] = {}
    for chunk, region in passage_spans(res, mine, extractions).values():
        regions = out.setdefault(chunk, [])
        if region not in regions:
            regions.append(region)
    return out
