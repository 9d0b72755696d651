"""The forward pass of a local sentence-transformers BERT encoder on ONNX Runtime.

Chosen with ``$HYGRAPH_EMBEDDER_RUNTIME=onnx`` (or ``runtime="onnx"``); PyTorch stays the
default. Why: on a CPU, PyTorch spends about 20 ms on every call of all-MiniLM-L6-v2 whatever it
embeds (one question, one chunk, the eight entity names of a new document), and a build
or an insert makes many small calls. ONNX Runtime runs the same graph, with attention,
GELU and layer norms fused, in about 5 ms a call and faster on short texts
(``benchmarks/results/embedder-runtime.md``). The vectors are the model's own: the
export is checked against the PyTorch forward on :data:`PROBES` and refused below
:data:`AGREEMENT` cosine, in which case the embedder keeps PyTorch.

Why by hand: sentence-transformers' own ``backend="onnx"`` needs ``optimum-onnx``, which
pins ``transformers`` below the version sentence-transformers 6 requires. The export
here is ``torch.onnx.export`` of the loaded model with its mean pooling, then
ONNX Runtime's own transformer optimizer (``onnxruntime.transformers``) fuses it.

The exported file is kept under :func:`onnx_cache_dir` (``$HYGRAPH_ONNX_DIR``, else
``~/.cache/hygraph/onnx``), named by a digest of the model's files and the library
versions, so it is made once per machine (a few seconds), checked once when made, and
never reused for another model. Tokenization stays sentence-transformers' own
(``model.preprocess``), so both runtimes read the same word pieces.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hygraph.errors import ModelError
from hygraph.models.mean_pooled import encode_batches, supported_bert

log = logging.getLogger("hygraph")

RUNTIMES = ("torch", "onnx")
#: Chooses the runtime of the bundled embedder (and of ``sentence-transformers:`` specs).
RUNTIME_ENV = "HYGRAPH_EMBEDDER_RUNTIME"
ONNX_DIR_ENV = "HYGRAPH_ONNX_DIR"
#: The least cosine between an exported model's vector and PyTorch's, on every probe.
AGREEMENT = 0.9999
#: Texts both runtimes embed before an export is used: short, long (past the window),
#: numbers, accents and scripts other than Latin, so padding and truncation are covered.
PROBES = (
    "Paris",
    "Marie Curie won the Nobel Prize in Physics in 1903",
    "Kizir River related to Кизир",
    "Liège, 1830: the Belgian Revolution begins in Brussels.",
    " ".join(["The dry dock at Saint-Nazaire was used by a boat repair cooperative."] * 40),
    "Who founded the company that made the first commercially available 3-D printer?",
)
#: Bump when the exported graph changes (its inputs, pooling or optimisation).
EXPORT_FORMAT = 1


def requested_runtime(value: str | None = None) -> str:
    """The runtime asked for: ``value``, else ``$HYGRAPH_EMBEDDER_RUNTIME``, else torch."""
    runtime = (value or os.environ.get(RUNTIME_ENV) or "torch").strip().lower()
    if runtime not in RUNTIMES:
        raise ModelError(f"embedder runtime must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
    return runtime


def onnx_cache_dir() -> Path:
    """Where exported models are kept (``$HYGRAPH_ONNX_DIR`` or ``~/.cache/hygraph/onnx``)."""
    configured = os.environ.get(ONNX_DIR_ENV)
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "hygraph" / "onnx"


def _model_digest(model_path: str) -> str:
    """A digest of the model folder's files (sizes, configs, the weights' ends) and the
    library versions: a changed model or exporter gives a new file name."""
    import onnxruntime
    import torch

    versions = f"{EXPORT_FORMAT} {onnxruntime.__version__} {torch.__version__}"
    digest = hashlib.sha256(versions.encode())
    for path in sorted(Path(model_path).rglob("*")):
        if not path.is_file() or path.name.startswith("."):
            continue
        stat = path.stat()
        digest.update(f"{path.relative_to(model_path)} {stat.st_size}".encode())
        with path.open("rb") as fh:
            digest.update(fh.read(1 << 16))
            if stat.st_size > 1 << 16:
                fh.seek(-(1 << 16), os.SEEK_END)
                digest.update(fh.read())
    return digest.hexdigest()[:20]


def _export(model: Any, target: Path, check: Callable[[Path], None]) -> None:
    """Write ``model``'s forward pass with mean pooling to ``target`` (optimised, atomic);
    ``check`` is called on the finished file before it takes ``target``'s name."""
    import torch
    from onnxruntime.transformers import optimizer

    bert = supported_bert(model)

    class MeanPooled(torch.nn.Module):
        def __init__(self, encoder: Any) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask)[0]
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    before = bert.config._attn_implementation
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        raw = Path(tmp) / "raw.onnx"
        # Eager attention exports as plain operators that the optimizer fuses into one
        # Attention node; the SDPA path exports as a pattern it does not recognise.
        bert.set_attn_implementation("eager")
        try:
            example = torch.ones((2, 8), dtype=torch.long)
            axes = {0: "batch", 1: "tokens"}
            with warnings.catch_warnings():
                # The tracer warns of a padding test on shapes that are equal for every
                # input; the agreement check covers what tracing could get wrong.
                warnings.simplefilter("ignore")
                torch.onnx.export(
                    MeanPooled(bert).eval(), (example, example), str(raw),
                    input_names=["input_ids", "attention_mask"], output_names=["pooled"],
                    dynamic_axes={"input_ids": axes, "attention_mask": axes,
                                  "pooled": {0: "batch"}},
                    opset_version=17, dynamo=False,
                )  # fmt: skip
        finally:
            bert.set_attn_implementation(before)
        quiet = logging.root.manager.disable
        logging.disable(logging.INFO)  # the optimizer logs each fusion it makes
        try:
            fused = optimizer.optimize_model(
                str(raw), model_type="bert", num_heads=bert.config.num_attention_heads,
                hidden_size=bert.config.hidden_size, opt_level=1,
            )  # fmt: skip
        finally:
            logging.disable(quiet)
        done = Path(tmp) / "model.onnx"
        fused.save_model_to_file(str(done))
        check(done)
        os.replace(done, target)  # a reader never sees half a file


class OnnxEncoder:
    """Mean-pooled (not normalised) vectors of a sentence-transformers model on ONNX Runtime.

    Built by :func:`onnx_encoder`, which exports the model once and checks the result.
    """

    def __init__(self, model: Any, path: Path, batch_size: int, dim: int) -> None:
        import onnxruntime as ort

        options = ort.SessionOptions()
        # Idle worker threads sleep instead of spinning: between small calls a spinning
        # pool keeps both cores of a small machine busy and slows the work around it.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.model = model
        self.batch_size = batch_size
        self.dim = dim
        self.path = path

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """The vectors of ``texts``, batched longest first as sentence-transformers does."""
        return encode_batches(self.model, texts, self.batch_size, self.dim, self._forward)

    def _forward(self, features: dict[str, Any]) -> np.ndarray:
        feed = {
            "input_ids": features["input_ids"].numpy().astype(np.int64),
            "attention_mask": features["attention_mask"].numpy().astype(np.int64),
        }
        return self.session.run(None, feed)[0]


def onnx_encoder(model: Any, model_path: str, batch_size: int, dim: int) -> OnnxEncoder:
    """An :class:`OnnxEncoder` for the loaded sentence-transformers ``model`` at ``model_path``.

    Exports it on first use (kept under :func:`onnx_cache_dir`); an export is kept only
    when its vectors agree with PyTorch's on :data:`PROBES`. Raises ModelError when the
    model is not one this export handles, ONNX Runtime is missing, or the vectors disagree.
    """
    try:
        import onnxruntime  # noqa: F401
    except ImportError as exc:
        raise ModelError("the onnx runtime needs the 'onnxruntime' package") from exc
    supported_bert(model)
    path = onnx_cache_dir() / f"{Path(model_path).name}-{_model_digest(model_path)}.onnx"

    def check(candidate: Path) -> None:
        ours = _unit(OnnxEncoder(model, candidate, batch_size, dim).encode(PROBES))
        theirs = model.encode(list(PROBES), convert_to_numpy=True, show_progress_bar=False)
        least = float((ours * _unit(np.asarray(theirs, np.float32))).sum(axis=1).min())
        if least < AGREEMENT:
            raise ModelError(
                f"the ONNX export of {model_path} disagrees with PyTorch "
                f"(cosine {least:.6f} < {AGREEMENT})"
            )

    if not path.exists():
        log.info("exporting %s to ONNX at %s (once per machine)", model_path, path)
        try:
            _export(model, path, check)
        except ModelError:
            raise
        except Exception as exc:
            raise ModelError(f"could not export {model_path} to ONNX: {exc}") from exc
    try:
        return OnnxEncoder(model, path, batch_size, dim)
    except Exception as exc:  # a damaged file: the next process exports it again
        path.unlink(missing_ok=True)
        raise ModelError(f"could not open the ONNX export {path}: {exc}") from exc


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)
