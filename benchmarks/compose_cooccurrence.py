"""Try a way of composing co-occurrence facts' vectors on a copy of a built index.

``fact-vectors`` gives a fact whose label carries no words ("related to", the offline
extractor's co-occurrence facts) a vector made from its entities' name vectors instead
of embedding ``"A related to B"`` (``fact_cooccurrence``). To compare ways of making
that vector without building again, this rewrites, in a COPY of an index built with
``fact_cooccurrence=text``, the rows of those facts in the query matrices the build
kept (``vector-matrices/facts.*`` and ``facts-half.*``, which is what
``relationship.fact_link`` reads); then ``hygraph bench`` over the copy's work folder
measures the rankings. Variants:

- ``names``: the unit sum of the two name vectors;
- ``pieces``: the same, each name weighted by its word pieces (what ``names`` ships as);
- ``names+label``, ``pieces+label``: plus the vector of the label "related to" (weight 1,
  or its 2 word pieces);
- ``worded``: on an index built with ``fact_cooccurrence=names``, every OTHER fact (its
  label carries words) composed the same way: the word-piece-weighted sum of its two
  name vectors and its label's vector (each distinct label embedded once), made unit.
  It asks whether the worded facts, about 60 % of the layers' word pieces offline, need
  embedding at all.

    cp -a <work folder> <copy>
    PYTHONPATH=shared:. .venv/bin/python benchmarks/compose_cooccurrence.py \\
        <copy>/<index folder> --variant pieces
    hygraph bench ... --work <copy>
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.index import GraphIndex
from hygraph.ingest.tokenizer import default_tokenizer
from hygraph.kept_matrices import MATRIX_DIR
from hygraph.layers.fact_vectors import FACT_COLLECTION, cooccurrence
from hygraph.models.embedders import bundled_minilm

VARIANTS = ("names", "pieces", "names+label", "pieces+label", "worded")


def kept_fact_ids(index: Path) -> list[str]:
    """The fact ids, in row order, of the query matrices ``index`` kept (both the same)."""
    folder = index / MATRIX_DIR
    (meta,) = folder.glob(f"{FACT_COLLECTION}.*.json")
    (half_meta,) = folder.glob(f"{FACT_COLLECTION}-half.*.json")
    ids: list[str] = json.loads(meta.read_text(encoding="utf-8"))["ids"]
    if json.loads(half_meta.read_text(encoding="utf-8"))["ids"] != ids:
        raise SystemExit("the half-precision matrix holds other facts")
    return ids


def rewrite_fact_rows(index: Path, rows: dict[int, np.ndarray]) -> float:
    """Write ``rows`` (row number → unit vector) into both kept fact matrices of ``index``;
    returns the mean cosine of the new rows with those they replace."""
    folder = index / MATRIX_DIR
    (meta,) = folder.glob(f"{FACT_COLLECTION}.*.json")
    (half_meta,) = folder.glob(f"{FACT_COLLECTION}-half.*.json")
    facts = np.load(meta.with_suffix(".npy"), mmap_mode="r+")
    half = np.load(half_meta.with_suffix(".npy"), mmap_mode="r+")
    cosines = [float(v @ facts[k]) for k, v in rows.items()]
    for k, v in rows.items():
        facts[k], half[k] = v, v.astype(np.float16)
    facts.flush()
    half.flush()
    return float(np.mean(cosines)) if cosines else 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", type=Path, help="a copy of a built index (rewritten)")
    parser.add_argument("--variant", choices=VARIANTS, required=True)
    args = parser.parse_args()
    ids = kept_fact_ids(args.index)
    with GraphIndex.open(args.index) as index:
        names = index.store.node_names(NodeKind.ENTITY)
        edges = list(index.store.iter_edges(EdgeKind.RELATION))
    worded = args.variant == "worded"
    chosen = {f"{e.src}|{e.dst}": str(e.data.get("label", "")) for e in edges
              if cooccurrence(e) != worded}  # fmt: skip
    rows = [k for k, fact in enumerate(ids) if fact in chosen]
    entities = sorted({m for k in rows for m in ids[k].split("|")})
    embedder = bundled_minilm()
    tokenizer = default_tokenizer()
    vectors = np.asarray(embedder.embed([names[e] for e in entities]), np.float32)
    if args.variant.startswith("pieces") or worded:
        pieces = tokenizer.count_many([names[e] for e in entities])
        vectors *= np.maximum(np.asarray(pieces, np.float32), 1.0)[:, None]
    labels = {"": np.zeros(vectors.shape[1], np.float32)}
    if worded:
        distinct = sorted({chosen[ids[k]] for k in rows})
        found = np.asarray(embedder.embed(distinct), np.float32)
        found *= np.maximum(np.asarray(tokenizer.count_many(distinct), np.float32), 1.0)[:, None]
        labels = dict(zip(distinct, found, strict=True))
    elif args.variant.endswith("+label"):
        label = np.asarray(embedder.embed(["related to"])[0], np.float32)
        labels[""] = label * (2.0 if args.variant.startswith("pieces") else 1.0)
    row = {e: n for n, e in enumerate(entities)}
    new: dict[int, np.ndarray] = {}
    for k in rows:
        src, dst = ids[k].split("|")
        v = vectors[row[src]] + vectors[row[dst]] + labels[chosen[ids[k]] if worded else ""]
        new[k] = v / np.linalg.norm(v)
    cosine = rewrite_fact_rows(args.index, new)
    print(f"{args.variant}: {len(rows)} of {len(ids)} facts composed; cosine with the "
          f"embedded text: mean {cosine:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
