"""Two cheaper ways to build the default's layers, checked on a built index.

The default's own layers embed every fact triple (``fact-vectors``) and every entity
name (``entity-vectors``, read only to find synonym edges). This reports, on a built
index, what two ideas for making that cheaper would give:

1. **int8 on ONNX Runtime**: the bundled embedder's exported model (see
   ``hygraph.models.onnx_runtime``) with its linear layers' weights quantized to int8
   per channel (``onnxruntime.quantization.quantize_dynamic``), against PyTorch's
   float32 packed pass that builds today: seconds (median of ``--rounds``, the two
   runtimes alternating) and the cosine of each int8 vector with the float32 one.
2. **Synonyms from the names' letters**: whether the synonym edges the build found by
   vector cosine (≥ 0.8) could be found without name vectors, by the cosine of the
   names' character trigrams (TF-IDF, scikit-learn): the share of the vector pairs a
   trigram threshold keeps, and how many pairs that threshold gives in all.

    PYTHONPATH=shared:. .venv/bin/python benchmarks/build_levers.py <index folder> \\
        [--sample 3000] [--rounds 3] [--out levers.json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from hygraph.graph.kinds import EdgeKind, NodeKind
from hygraph.index import GraphIndex
from hygraph.layers.fact_vectors import fact_text
from hygraph.models.embedders import bundled_minilm
from hygraph.models.mean_pooled import encode_batches
from hygraph.models.onnx_runtime import onnx_encoder


def unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def int8_session(fp32_path: Path, folder: str) -> object:
    """An ONNX Runtime session of ``fp32_path`` with int8 per-channel weights."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target = Path(folder) / "int8.onnx"
    quantize_dynamic(
        str(fp32_path), str(target), weight_type=QuantType.QInt8, per_channel=True,
        extra_options={"DefaultTensorType": 1},  # the fused graph's outputs are float32
    )  # fmt: skip
    options = ort.SessionOptions()
    options.add_session_config_entry("session.intra_op.allow_spinning", "1")
    return ort.InferenceSession(str(target), options, providers=["CPUExecutionProvider"])


def int8_check(texts: list[str], rounds: int) -> dict[str, float]:
    """Seconds of both runtimes over ``texts`` and the int8 vectors' agreement."""
    embedder = bundled_minilm()
    model = embedder._load()
    fp32 = onnx_encoder(model, embedder.model_path, 64, embedder.dim).path
    with tempfile.TemporaryDirectory() as folder:
        session = int8_session(fp32, folder)

        def forward(features: dict) -> np.ndarray:
            feed = {k: features[k].numpy().astype(np.int64)
                    for k in ("input_ids", "attention_mask")}  # fmt: skip
            return session.run(None, feed)[0]  # type: ignore[attr-defined]

        embedder.embed(texts[:200])
        encode_batches(model, texts[:200], 64, embedder.dim, forward)
        torch_s, int8_s = [], []
        for _ in range(rounds):
            start = time.perf_counter()
            ref = embedder.embed(texts)
            torch_s.append(time.perf_counter() - start)
            start = time.perf_counter()
            got = unit(encode_batches(model, texts, 64, embedder.dim, forward))
            int8_s.append(time.perf_counter() - start)
    cosine = (got * ref).sum(axis=1)
    return {
        "texts": len(texts), "torch_fp32_packed_s": statistics.median(torch_s),
        "onnx_int8_s": statistics.median(int8_s),
        "speedup": statistics.median(torch_s) / statistics.median(int8_s),
        "cosine_min": float(cosine.min()), "cosine_mean": float(cosine.mean()),
        "cosine_p1": float(np.percentile(cosine, 1)),
    }  # fmt: skip


def trigram_synonyms(names: dict[str, str], pairs: list[tuple[str, str]]) -> list[dict]:
    """For trigram cosine thresholds, the share of ``pairs`` kept and the pairs found."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    ids = sorted(names)
    row = {i: k for k, i in enumerate(ids)}
    grams = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 3), sublinear_tf=True)
    matrix = grams.fit_transform([names[i] for i in ids])
    sims = (matrix @ matrix.T).tocsr()
    cos = np.array([sims[row[a], row[b]] for a, b in pairs])
    out = []
    for threshold in (0.5, 0.6, 0.7, 0.8):
        found = int(((sims.data >= threshold).sum() - len(ids)) // 2)
        out.append({"threshold": threshold, "vector_pairs_kept": float((cos >= threshold).mean()),
                    "pairs_found": found})  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index", type=Path, help="a built index with the default's layers")
    parser.add_argument("--sample", type=int, default=3000, help="facts and names timed")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    with GraphIndex.open(args.index) as index:
        names = index.store.node_names(NodeKind.ENTITY)
        facts = [
            fact_text(names.get(e.src, e.src), str(e.data.get("label", "")),
                      names.get(e.dst, e.dst))
            for e in index.store.iter_edges(EdgeKind.RELATION)
        ]  # fmt: skip
        pairs = [(s, d) for s, d, _ in index.store.edge_rows([EdgeKind.SYNONYM])]
    rng = random.Random(0)
    report = {
        "index": str(args.index),
        "int8_facts": int8_check(rng.sample(facts, min(args.sample, len(facts))), args.rounds),
        "int8_names": int8_check(
            rng.sample(sorted(set(names.values())), min(args.sample, len(names))), args.rounds
        ),
        "synonym_pairs": len(pairs),
        "trigram_synonyms": trigram_synonyms(names, pairs),
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
