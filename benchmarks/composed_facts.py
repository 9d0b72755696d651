"""Whether fact vectors could be composed instead of embedded: a check on a built index.

A default index embeds every fact triple ``"source label target"`` (``fact-vectors``), its
largest build cost. The cheap alternative checked here composes each fact's vector from
vectors the build has anyway or can get for little: the unit sum of its two entities'
name vectors and its label's vector (distinct labels are far fewer than facts). Reported:
the cosine of each composed vector with the embedded one, and, for the dataset's
questions, how many of the 5 facts nearest to the question (what the default links) are
the same; both for every fact composed and for only the co-occurrence facts (label
"related to", which carry no words of their own) composed.

    PYTHONPATH=shared:. .venv/bin/python benchmarks/composed_facts.py <index folder> \\
        --data /work/shared/data/musique
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from hygraph.bench.data import load_dataset
from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.index import GraphIndex
from hygraph.kept_matrices import MATRIX_DIR
from hygraph.layers.fact_vectors import FACT_COLLECTION
from hygraph.models.embedders import bundled_minilm


def kept_facts(index_dir: Path) -> tuple[list[str], np.ndarray]:
    """The fact ids and unit vectors the build kept beside the index."""
    (meta,) = sorted((index_dir / MATRIX_DIR).glob(f"{FACT_COLLECTION}.*.json"))
    ids = json.loads(meta.read_text(encoding="utf-8"))["ids"]
    return ids, np.load(meta.with_suffix(".npy"))


def top5_overlap(questions: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """Mean share of the 5 nearest rows of ``a`` that are among the 5 nearest of ``b``."""
    shares = [
        len(set(np.argsort(-(a @ q))[:5]) & set(np.argsort(-(b @ q))[:5])) / 5 for q in questions
    ]
    return float(np.mean(shares))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", type=Path, help="a built index with the default's layers")
    parser.add_argument("--data", required=True, help="the dataset whose questions to ask")
    args = parser.parse_args()
    embedder = bundled_minilm()
    fact_ids, facts = kept_facts(args.index)
    with GraphIndex.open(args.index) as index:
        nodes = index.store.nodes_of_kind(NodeKind.ENTITY)
        labels = {
            f"{e.src}|{e.dst}": str(e.data.get("label", "")) or "related to"
            for e in index.store.iter_edges(EdgeKind.RELATION)
        }
    row = {n.id: k for k, n in enumerate(nodes)}
    names = embedder.embed([n.name or n.id for n in nodes])
    distinct = sorted(set(labels.values()))
    label_row = {label: k for k, label in enumerate(distinct)}
    label_vectors = embedder.embed(distinct)
    composed = np.empty_like(facts)
    for k, fact in enumerate(fact_ids):
        src, dst = fact.split("|")
        v = names[row[src]] + names[row[dst]] + label_vectors[label_row[labels[fact]]]
        composed[k] = v / np.linalg.norm(v)
    related = np.array([labels[f] == "related to" for f in fact_ids])
    partly = np.where(related[:, None], composed, facts)
    questions = embedder.embed([q.question for q in load_dataset(args.data).questions])
    cosine = (composed * facts).sum(1)
    print(f"facts {len(fact_ids)}, distinct labels {len(distinct)}, "
          f"'related to' {related.mean():.1%}")  # fmt: skip
    print(f"cosine composed / embedded: mean {cosine.mean():.3f}, "
          f"10th percentile {np.percentile(cosine, 10):.3f}; 'related to' facts only: "
          f"mean {cosine[related].mean():.3f}")  # fmt: skip
    print(f"top-5 facts shared with the embedded ones: all composed "
          f"{top5_overlap(questions, facts, composed):.2f}, 'related to' composed "
          f"{top5_overlap(questions, facts, partly):.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
