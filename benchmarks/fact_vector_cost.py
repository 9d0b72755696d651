"""What the vector layers of ``hybrid-ppr`` cost to embed, against the chunks, in one process.

Reads a built index's graph (any index with an extraction: the bench's shared index)
and embeds, with the bundled MiniLM and no cache, each text set the layers would embed:

* ``chunks``: the chunk texts (title line, then text), the ``chunks`` layer's;
* ``relations``: ``"source label target: descriptions"``, ``relation-vectors``' (distinct);
* ``facts``: ``"source label target"``, ``fact-vectors``' (distinct);
* ``entities``: ``"name: description"``, ``entity-vectors``';
* ``names``: the entity names alone (what HippoRAG embeds for synonymy).

The sets are embedded in turn, ``--rounds`` times in alternating order, so a busy machine
slows them alike; the report gives each set's best seconds and its ratio to the chunks'.
``--fraction`` embeds a fixed random share of each set (rates, not totals, then matter).
``--variants`` also times the facts and the entities at other batch sizes and call sizes.

    python benchmarks/fact_vector_cost.py --index /tmp/build/off/musique-full-0422f837
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable, Sequence

import numpy as np

from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.graph.store import GraphStore
from hygraph.layers.entity_vectors import entity_embedding_text
from hygraph.layers.fact_vectors import fact_text
from hygraph.layers.relation_vectors import relation_text


def text_sets(index: str) -> dict[str, list[str]]:
    """The texts each layer embeds, read from the index's graph store."""
    from pathlib import Path

    store = GraphStore(Path(index) / "graph.sqlite")
    chunks = store.get_chunks(store.chunk_ids())
    titles = store.document_titles(c.doc_id for c in chunks.values())
    chunk_texts = [
        f"{titles[c.doc_id]}\n{c.text}" if titles.get(c.doc_id) else c.text for c in chunks.values()
    ]
    entities = list(store.nodes_of_kind(NodeKind.ENTITY))
    names = {n.id: n.name or n.id for n in entities}
    keys = [(s, d, EdgeKind.RELATION) for s, d, _ in store.edge_rows([EdgeKind.RELATION])]
    relations, facts = [], []
    for (src, dst, _), edge in store.get_edges(keys).items():
        label = str(edge.data.get("label", ""))
        entries = edge.data.get("entries", {})
        said = [item[1] for items in entries.values() for item in items if len(item) > 1]
        relations.append(relation_text(names.get(src, src), label, names.get(dst, dst), said))
        facts.append(fact_text(names.get(src, src), label, names.get(dst, dst)))
    print(
        f"{len(chunk_texts)} chunks; {len(keys)} relation edges: {len(set(relations))} distinct "
        f"relation texts, {len(set(facts))} distinct fact texts; {len(entities)} entities"
    )
    return {
        "chunks": chunk_texts,
        "relations": list(dict.fromkeys(relations)),
        "facts": list(dict.fromkeys(facts)),
        "entities": [entity_embedding_text(n.name or "", n.text or "", "paper") for n in entities],
        "names": list(dict.fromkeys(n.name or "" for n in entities)),
    }


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def embed_in_calls(model, texts: Sequence[str], call: int, batch: int) -> np.ndarray:
    """``texts`` embedded ``call`` at a time (as ``upsert_vectors`` does), ``batch`` per step."""
    out = [
        model.encode(list(texts[s : s + call]), batch_size=batch, normalize_embeddings=True,
                     convert_to_numpy=True, show_progress_bar=False)
        for s in range(0, len(texts), call)
    ]  # fmt: skip
    return np.vstack(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--fraction", type=float, default=1.0)
    parser.add_argument("--variants", action="store_true")
    args = parser.parse_args()

    import torch

    from hygraph.models.embedders import bundled_minilm

    sets = text_sets(args.index)
    if args.fraction < 1.0:
        rng = random.Random(0)
        sets = {k: rng.sample(v, max(1, int(len(v) * args.fraction))) for k, v in sets.items()}
    tok = bundled_minilm()._load().tokenizer
    for name, texts in sets.items():
        lengths = [len(tok(t, truncation=True, max_length=256)["input_ids"]) for t in texts]
        print(f"  {name:<10} {len(texts):>6} texts, word pieces mean {np.mean(lengths):6.1f} "
              f"median {np.median(lengths):5.0f}")  # fmt: skip
    model = bundled_minilm()._load()
    print(f"torch threads {torch.get_num_threads()}, interop {torch.get_num_interop_threads()}")
    runs: dict[str, Callable[[], object]] = {
        name: (lambda t=texts: embed_in_calls(model, t, 256, 64)) for name, texts in sets.items()
    }
    if args.variants:
        for name in ("facts", "entities", "names"):
            texts = sets[name]
            for call, batch in ((256, 128), (256, 256), (4096, 64), (4096, 128), (4096, 256)):
                runs[f"{name} call={call} batch={batch}"] = lambda t=texts, c=call, b=batch: (
                    embed_in_calls(model, t, c, b)
                )
    best: dict[str, float] = {}
    names = list(runs)
    embed_in_calls(model, sets["facts"][:256], 256, 64)  # warm up
    for r in range(args.rounds):
        for name in names if r % 2 == 0 else reversed(names):
            seconds = timed(runs[name])
            best[name] = min(best.get(name, seconds), seconds)
            print(f"  round {r + 1}: {name:<32} {seconds:7.2f} s", flush=True)
    chunk = best["chunks"]
    print("\n| texts | count | best s | texts/s | vs chunks |\n|---|---:|---:|---:|---:|")
    for name in names:
        count = len(sets[name.split()[0]])
        print(f"| {name} | {count} | {best[name]:.2f} | {count / best[name]:.0f} | "
              f"{best[name] / chunk:.2f} |")  # fmt: skip


if __name__ == "__main__":
    main()
