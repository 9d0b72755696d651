"""Try ways of pooling worded facts' vectors from their passages, on a copy of a built index.

``fact_vector="passage"`` (``hygraph.layers.fact_spans``) gives a worded fact the mean of
the encoder's outputs over part of the passage that states it, from the pass that embeds
the passage. To compare ways of choosing that part without building again, this runs the
bundled encoder over every chunk once (token outputs), and rewrites, in a COPY of an
index built with ``fact_vector=triple`` (facts embedded as their triples), the rows of
the facts it pools in the query matrices the build kept (``vector-matrices/facts.*`` and
``facts-half.*``, what ``relationship.fact_link`` reads); ``hygraph bench`` over the
copy's work folder then measures the rankings. A fact left unpooled keeps its triple.

Options (the variants of ``benchmarks/results/fact-passage.md``):

- ``--entries``: which passage: ``3`` (the mean over its first three entries' chunks),
  ``first`` (its first entry) or ``mark`` (the chunk its label was first stated in, with
  the names that chunk's extraction gave: what ships);
- ``--region``: ``span`` (from one name to the other), ``sentence`` (the sentence(s)
  around that span) or ``mentions`` (the two names' word pieces alone); a span or
  sentence over 400 characters is not pooled;
- ``--facts``: ``all`` or ``worded`` (co-occurrence facts keep their vectors);
- ``--long mentions``: names found more than 400 characters apart are pooled as their two
  mentions; ``--one sentence``: a fact with one name found is pooled from the sentence of
  its first mention; ``--one names``: such facts, and those with neither, get the
  word-piece-weighted sum of their two name vectors;
- ``--names``: each pooled vector plus that names' sum (both unit).

    cp -a <work folder> <copy>
    PYTHONPATH=shared:. .venv/bin/python benchmarks/pooled_facts.py <copy>/<index folder> \\
        --entries mark --region span --facts worded --long mentions --one sentence
    hygraph bench ... --methods hybrid-ppr --work <copy>
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.compose_cooccurrence import kept_fact_ids, rewrite_fact_rows
from hygraph.graph.entity_graph import entity_node_id
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.index import GraphIndex
from hygraph.ingest.tokenizer import default_tokenizer
from hygraph.layers.fact_spans import MAX_SPAN_CHARS, first_chunk, mentions
from hygraph.layers.fact_vectors import cooccurrence
from hygraph.models.embedders import bundled_minilm


def _sentence(text: str, start: int, end: int) -> tuple[int, int]:
    """The stretch from the sentence end (". " or a line break) before ``start`` to the
    one after ``end`` (a plain rule, as the variants were first measured)."""
    before = max(text.rfind(". ", 0, start), text.rfind("\n", 0, start))
    after = text.find(". ", end)
    return (0 if before < 0 else before + 1), (len(text) if after < 0 else after + 1)


def _region(args: argparse.Namespace, text: str, source: str, target: str) -> list[Any] | None:
    """The character ranges to pool for a fact, or None (it keeps its triple or names)."""
    lowered = text.lower()
    first, second = mentions(lowered, source), mentions(lowered, target)
    if first and second:
        a, b = min(((a, b) for a in first for b in second), key=lambda p: abs(p[0][0] - p[1][0]))
        start, end = min(a[0], b[0]), max(a[1], b[1])
        if args.region == "mentions":
            return [a, b]
        if args.region == "sentence":
            start, end = _sentence(text, start, end)
        if end - start <= MAX_SPAN_CHARS:
            return [(start, end)]
        return [a, b] if args.long == "mentions" else None
    if (first or second) and args.one == "sentence":
        return [_sentence(text, *(first or second)[0])]
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", type=Path, help="a copy of a built index (rewritten)")
    parser.add_argument("--entries", choices=("3", "first", "mark"), default="mark")
    parser.add_argument("--region", choices=("span", "sentence", "mentions"), default="span")
    parser.add_argument("--facts", choices=("all", "worded"), default="worded")
    parser.add_argument("--long", choices=("none", "mentions"), default="none")
    parser.add_argument("--one", choices=("none", "sentence", "names"), default="none")
    parser.add_argument("--names", action="store_true", help="add the names' unit sum")
    args = parser.parse_args()
    ids = kept_fact_ids(args.index)
    with GraphIndex.open(args.index) as index:
        names = index.store.node_names(NodeKind.ENTITY)
        edges = {f"{e.src}|{e.dst}": e for e in index.store.iter_edges(EdgeKind.RELATION)}
        chunk_ids = index.store.chunk_ids()
        texts = index.resources.chunk_texts(chunk_ids)
        extractions = index.store.get_extractions(chunk_ids)
    embedder = bundled_minilm()
    model = embedder._load()
    order = sorted(chunk_ids, key=lambda c: len(texts[c]))
    outputs = model.encode([texts[c] for c in order], output_value="token_embeddings",
                           batch_size=32, convert_to_numpy=False)  # fmt: skip
    tokens = {c: o.float().numpy() for c, o in zip(order, outputs, strict=True)}
    offsets = {c: model.tokenizer(texts[c], return_offsets_mapping=True, truncation=True,
                                  max_length=model.max_seq_length)["offset_mapping"]
               for c in chunk_ids}  # fmt: skip
    entities = sorted({m for f in ids if f in edges for m in f.split("|")})
    named = [names[e] for e in entities]
    vectors = np.asarray(embedder.embed(named), np.float32)
    vectors *= np.maximum(np.asarray(default_tokenizer().count_many(named), np.float32), 1)[:, None]
    name_sum = {e: vectors[i] for i, e in enumerate(entities)}

    def names_of(fid: str) -> np.ndarray:
        src, dst = fid.split("|")
        total = name_sum[src] + name_sum[dst]
        return total / np.linalg.norm(total)

    def pool(chunk: str, ranges: list[Any]) -> np.ndarray | None:
        rows = [j for j, (x, y) in enumerate(offsets[chunk]) if y > x and j < len(tokens[chunk])
                and any(x < b and y > a for a, b in ranges)]  # fmt: skip
        if not rows:
            return None
        vector = tokens[chunk][rows].mean(0)
        return vector / np.linalg.norm(vector)

    pooled = composed = 0
    new: dict[int, np.ndarray] = {}
    for k, fid in enumerate(ids):
        edge = edges.get(fid)
        if edge is None or (args.facts == "worded" and cooccurrence(edge)):
            continue
        src, dst = fid.split("|")
        if args.entries == "mark":
            chunk = first_chunk(edge)
            label = str(edge.data.get("label", ""))
            records = [r for r in extractions[chunk].relations if (entity_node_id(r.source_key),
                       entity_node_id(r.target_key), r.label) == (src, dst, label)]  # fmt: skip
            stated = [(chunk, records[0].source, records[0].target)] if records else []
        else:
            count = 3 if args.entries == "3" else 1
            chunks = list(edge.data.get("entries", {}))[:count]
            stated = [(c, names[src], names[dst]) for c in chunks if c in texts]
        found = []
        for chunk, source, target in stated:
            ranges = _region(args, texts[chunk], source, target)
            vector = None if ranges is None else pool(chunk, ranges)
            if vector is not None:
                found.append(vector)
        if found:
            vector = np.mean(found, 0)
            if args.names:
                vector = vector / np.linalg.norm(vector) + names_of(fid)
            vector /= np.linalg.norm(vector)
            pooled += 1
        elif args.one == "names" and not cooccurrence(edge):
            vector, composed = names_of(fid), composed + 1
        else:
            continue
        new[k] = vector
    cosine = rewrite_fact_rows(args.index, new)
    print(f"{pooled} of {len(ids)} facts pooled, {composed} composed from names; cosine with "
          f"the triple's vector: mean {cosine:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
