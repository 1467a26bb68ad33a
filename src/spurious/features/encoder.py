"""Sentence embeddings from a local transformer (all-MiniLM-L6-v2 by default).

:class:`SentenceEncoder` reproduces sentence-transformers' embedding of a model
(transformer -> pooling from ``1_Pooling/config.json`` -> optional L2 normalisation)
with plain ``transformers``, tuned for throughput on CPU:

* texts are de-duplicated, tokenised once and batched by exact token length, so no
  batch holds padding (NLI sentences are short: ~15 tokens, so fixed padding would
  waste most of the compute);
* a text's vector does not depend on the texts it is encoded with: a batch holds texts
  of one length only and always has the same number of rows for that length (the last
  batch of a length is filled up with copies of its first row). Batch composition
  changes bf16 results at rounding level (a batch of 10 rows vs 64 differs by ~6e-4),
  and with this fixed bucketing a text's vector is bit-identical whatever else is
  encoded with it, so per-text vectors can be cached and shared between datasets;
* the forward pass runs under ``torch.inference_mode()`` and, on CPUs with native bf16
  (AVX512-BF16 / AMX), under ``torch.autocast("cpu", dtype=torch.bfloat16)``: matmuls in
  bf16, layer norms / softmax / pooling in fp32 (cosine to fp32 >= 0.9999 on SNLI);
* on CPU, whole batches run in parallel on worker threads (one intra-op thread each)
  instead of splitting each matmul over cores with OpenMP: ~40% faster on 2 cores, and
  a batch's arithmetic is that of a one-thread run whatever the core count;
* the model is loaded lazily, once per process, and shared by all encoders.

``torch.compile`` was measured and rejected: ~50 s of warm-up on 2 cores for no
steady-state gain with variable sequence lengths.

Model resolution, device and precision, the length buckets and the worker-thread pass
are the transformer runtime shared with fine-tuning (:mod:`spurious.models.runtime`);
their public names stay importable from here.

:class:`EncoderFeaturizer` turns a dataset view into features: one embedding block per
text field, combined as ``[u, v, |u-v|, u*v]`` for sentence pairs. Embeddings are
cached on disk per distinct text (:class:`~spurious.features.cache.TextEmbeddingStore`),
so every text is encoded once, whichever dataset, subset, fold, split or view it comes
back in.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from spurious.data.dataset import Dataset
from spurious.exceptions import FeatureError, ParameterError, missing_dependency
from spurious.execution import resolve_executor
from spurious.features.base import Featurizer
from spurious.features.cache import TextEmbeddingStore, text_digests
from spurious.features.distributed import encode_on
from spurious.features.pair_features import pair_features
from spurious.models.runtime import (
    CPU_TOKENS_PER_BATCH,
    MODEL_ALIASES,
    PRECISIONS,
    cpu_supports_bf16,
    cpu_workers,
    default_model_path,
    forward_batches,
    length_buckets,
    quiet_transformers,
    resolve_device,
    resolve_model,
    resolve_precision,
)
from spurious.utils.io import read_json
from spurious.views import View

logger = logging.getLogger(__name__)

__all__ = [
    "MODEL_ALIASES",
    "PRECISIONS",
    "EncoderFeaturizer",
    "SentenceEncoder",
    "cpu_supports_bf16",
    "default_model_path",
    "resolve_device",
    "resolve_model",
    "resolve_precision",
]

_POOLING_MODES: tuple[str, ...] = ("mean", "cls", "max", "mean_sqrt_len")
#: Part of every cache key; bump when the embedding computation changes.
#: 2: fixed length buckets (a text's vector no longer depends on its batch).
_ENCODER_VERSION = 2
#: At most this many CPU worker threads (one intra-op thread each).
_MAX_CPU_WORKERS = 32


# -- pooling ------------------------------------------------------------------------


def _read_pooling(path: str, is_local: bool) -> str:
    """Pooling mode from sentence-transformers' ``1_Pooling/config.json`` (mean if absent)."""
    if is_local:
        cfg_path = Path(path) / "1_Pooling" / "config.json"
    else:  # a hub model the user named explicitly: its pooling config, if it has one
        try:
            from huggingface_hub import hf_hub_download

            cfg_path = Path(hf_hub_download(path, "1_Pooling/config.json"))
        except Exception as e:  # no such file, offline, no huggingface_hub...
            logger.info("no pooling config for %s (%s); using mean pooling", path, e)
            return "mean"
    if not cfg_path.is_file():
        return "mean"
    cfg = read_json(cfg_path)
    for mode in ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens"):
        if cfg.get(f"pooling_mode_{mode}"):
            return {"cls_token": "cls", "mean_tokens": "mean", "max_tokens": "max"}.get(
                mode, "mean_sqrt_len"
            )
    raise FeatureError(
        f"{cfg_path} asks for a pooling mode this encoder does not implement "
        f"(supported: {list(_POOLING_MODES)})."
    )


# -- model loading ------------------------------------------------------------------


@functools.lru_cache(maxsize=2)
def _load(name_or_path: str, is_local: bool, device: str) -> tuple[Any, Any]:
    """Tokenizer and eval-mode fp32 model, loaded once per process and device."""
    try:
        import torch  # noqa: F401
        import transformers
    except ImportError as e:
        raise missing_dependency(e.name or "transformers", "encoder", "Sentence encoders") from None
    # Local folders must never reach the network (offline machines would hang on retries).
    kwargs: dict[str, Any] = {"local_files_only": True} if is_local else {}
    try:
        # The "Loading weights" bar is noise in a library (warnings stay on).
        with quiet_transformers(keep_warnings=True):
            tokenizer = transformers.AutoTokenizer.from_pretrained(name_or_path, **kwargs)
            # On CPU the plain (eager) attention beats SDPA's flash kernel on short
            # inputs: SDPA's per-row softmax costs more than the tiny matmuls (~5%).
            attn = {"attn_implementation": "eager"} if device == "cpu" else {}
            model = transformers.AutoModel.from_pretrained(name_or_path, **kwargs, **attn)
    except OSError as e:
        raise FeatureError(f"Could not load the encoder model {name_or_path!r}: {e}") from e
    model = model.float().to(device).eval()
    logger.info("loaded encoder %s on %s", name_or_path, device)
    return tokenizer, model


# -- the encoder --------------------------------------------------------------------


class SentenceEncoder:
    """Embed sentences with a local transformer, the way sentence-transformers does.

    Parameters
    ----------
    model : str or path
        ``"minilm"`` (the bundled all-MiniLM-L6-v2), a local Hugging Face model folder,
        or a hub name (the only case that may use the network).
    device : str
        ``"auto"`` (CUDA when available, else CPU), ``"cpu"``, ``"cuda"``, ``"cuda:1"``...
    precision : {"auto", "fp32", "bf16", "fp16"}
        Autocast precision. ``"auto"``: fp16 on CUDA, bf16 on CPUs with native bf16,
        otherwise fp32.
    batch_size : int
        Sentences per forward pass (texts are length-sorted, so batches pad little).
    max_length : int
        Longer inputs are truncated to this many tokens.
    normalize : bool
        L2-normalise the embeddings (cosine = dot product).
    num_threads : int, optional
        CPU threads to encode with; ``None`` uses ``torch.get_num_threads()``. On CPU the
        batches are spread over up to 8 worker threads (one intra-op thread each when
        there are at most 8 cores); torch's thread setting is left as it was.

    Examples
    --------
    >>> enc = SentenceEncoder()  # doctest: +SKIP
    >>> enc.encode(["A man plays a guitar.", "A dog runs."]).shape  # doctest: +SKIP
    (2, 384)
    """

    def __init__(
        self,
        model: str | os.PathLike[str] = "minilm",
        device: str = "auto",
        precision: str = "auto",
        batch_size: int = 128,
        max_length: int = 128,
        normalize: bool = True,
        num_threads: int | None = None,
    ) -> None:
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ParameterError(
                f"The 'batch_size' parameter must be an int >= 1. Got {batch_size!r} instead."
            )
        if not isinstance(max_length, int) or max_length < 2:
            raise ParameterError(
                f"The 'max_length' parameter must be an int >= 2. Got {max_length!r} instead."
            )
        if num_threads is not None and (not isinstance(num_threads, int) or num_threads < 1):
            raise ParameterError(
                f"The 'num_threads' parameter must be None or an int >= 1. "
                f"Got {num_threads!r} instead."
            )
        if precision not in PRECISIONS:
            raise ParameterError(
                f"The 'precision' parameter must be one of {list(PRECISIONS)}. "
                f"Got {precision!r} instead."
            )
        self.model = model
        self.device = device
        self.precision = precision
        self.batch_size = batch_size
        self.max_length = max_length
        self.normalize = normalize
        self.num_threads = num_threads
        self._resolved: tuple[str, bool, str] | None = None
        self._device: str | None = None
        self._precision: str | None = None
        self._pooling: str | None = None

    def __repr__(self) -> str:
        return (
            f"SentenceEncoder(model={self.model!r}, device={self.device!r}, "
            f"precision={self.precision!r}, batch_size={self.batch_size})"
        )

    # -- resolution (cheap; no model load) ------------------------------------------
    def _resolve(self) -> None:
        if self._resolved is None:
            try:
                import torch  # noqa: F401
            except ImportError:
                raise missing_dependency("torch", "encoder", "Sentence encoders") from None
            self._resolved = resolve_model(self.model)
            self._device = resolve_device(self.device)
            self._precision = resolve_precision(self.precision, self._device)
            self._pooling = _read_pooling(self._resolved[0], self._resolved[1])

    @property
    def resolved_device(self) -> str:
        """The device actually used (``"auto"`` resolved)."""
        self._resolve()
        assert self._device is not None
        return self._device

    @property
    def resolved_precision(self) -> str:
        """The precision actually used: ``"fp32"``, ``"bf16"`` or ``"fp16"``."""
        self._resolve()
        assert self._precision is not None
        return self._precision

    def config(self) -> dict[str, Any]:
        """What determines the embeddings (for cache keys and provenance).

        Batch size and device are left out: they change results only at rounding level.
        """
        self._resolve()
        assert self._resolved is not None
        return {
            "encoder": "transformers-pooled",
            "version": _ENCODER_VERSION,
            "model": self._resolved[2],
            "pooling": self._pooling,
            "max_length": self.max_length,
            "normalize": bool(self.normalize),
            "precision": self._precision,
        }

    def batching(self) -> dict[str, Any]:
        """How batches are built, beside :meth:`config` the rest of what fixes a text's bits.

        With fixed length buckets (module docstring) a text's vector depends on the
        model, the device type, the batch shape of its length and the intra-op threads,
        never on the other texts; this names them for the per-text cache.
        """
        import torch

        device = torch.device(self.resolved_device).type
        rule: dict[str, Any] = {"device": device, "batch_size": self.batch_size}
        if device == "cpu":
            _, threads = self._cpu_workers()
            rule.update(tokens_per_batch=CPU_TOKENS_PER_BATCH, intra_op_threads=threads)
        return rule

    def for_worker(self) -> SentenceEncoder:
        """These settings with the precision resolved here, for another process (it resolves
        the model path there; its vectors match this :meth:`config`, the cache key)."""
        return SentenceEncoder(
            self.model, self.device, self.resolved_precision, self.batch_size,
            self.max_length, self.normalize, self.num_threads,
        )  # fmt: skip

    # -- model ----------------------------------------------------------------------
    def _tokenizer_model(self) -> tuple[Any, Any]:
        self._resolve()
        assert self._resolved is not None and self._device is not None
        return _load(self._resolved[0], self._resolved[1], self._device)

    @property
    def dim(self) -> int:
        """Embedding dimension (loads the model)."""
        return int(self._tokenizer_model()[1].config.hidden_size)

    # -- encoding -------------------------------------------------------------------
    def encode(self, texts: Sequence[str], progress: bool = False) -> np.ndarray:
        """Embed ``texts``; return a ``(len(texts), dim)`` float32 array in input order.

        Parameters
        ----------
        texts : sequence of str
            Sentences; duplicates are embedded once.
        progress : bool
            Show a tqdm progress bar (sentences).

        Examples
        --------
        >>> SentenceEncoder().encode(["a cat", "a cat"]).shape  # doctest: +SKIP
        (2, 384)
        """
        import torch

        texts = list(texts)
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise FeatureError(f"encode() needs strings; item {i} is {type(t).__name__} {t!r}.")
        tokenizer, model = self._tokenizer_model()
        dim = int(model.config.hidden_size)
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)

        # Encode each distinct text once (SNLI repeats every premise three times).
        position: dict[str, int] = {}
        inverse = np.fromiter(
            (position.setdefault(t, len(position)) for t in texts), dtype=np.int64, count=len(texts)
        )
        unique = list(position)

        # Tokenise once, unpadded; padding happens per batch after sorting by length.
        ids = tokenizer(
            unique,
            add_special_tokens=True,
            truncation=True,
            max_length=self.max_length,
            padding=False,
            return_attention_mask=False,
            return_token_type_ids=False,
        )["input_ids"]
        lengths = np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))

        out = np.empty((len(unique), dim), dtype=np.float32)
        device = self.resolved_device
        on_cpu = torch.device(device).type == "cpu"
        batches = length_buckets(lengths, self.batch_size, on_cpu)
        # Progress counts input sentences, so a duplicate advances the bar with its original.
        weight = np.bincount(inverse, minlength=len(unique))

        def run(batch: tuple[np.ndarray, int]) -> int:
            rows, size = batch
            # Every row has the same length (no padding); a short last batch is filled
            # up with copies of its first row, so that every batch of this length has
            # the same shape and a text's vector does not depend on its companions.
            filled = np.concatenate([rows, np.full(size - len(rows), rows[0])])
            tokens = np.array([ids[r] for r in filled], dtype=np.int64)
            mask = np.ones_like(tokens)
            out[rows] = self._forward(model, tokens, mask)[: len(rows)]
            return int(weight[rows].sum())

        bar = None
        if progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(texts), desc="encoding", unit="sent")
        workers, threads_each = self._cpu_workers() if on_cpu else (1, self.num_threads)
        try:
            for done in forward_batches(
                run,
                batches,
                device=device,
                precision=self.resolved_precision,
                workers=workers,
                threads_each=threads_each or 1,
                serial_threads=threads_each,
                name="spurious-encode",
            ):
                if bar is not None:
                    bar.update(done)
        finally:
            if bar is not None:
                bar.close()
        return out[inverse] if len(unique) < len(texts) else out

    def _cpu_workers(self) -> tuple[int, int]:
        """``(worker threads, intra-op threads each)`` for CPU encoding.

        One intra-op thread per worker, always: a batch's arithmetic is then that of a
        one-thread run on any machine (part of what makes vectors batch-independent).
        """
        import torch

        return cpu_workers(self.num_threads or torch.get_num_threads(), _MAX_CPU_WORKERS)

    def _forward(self, model: Any, batch: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Pooled embeddings of one padded batch (run inside
        :func:`~spurious.models.runtime.forward_batches`: no grad, autocast)."""
        import torch

        device = self.resolved_device
        input_ids = torch.from_numpy(batch).to(device)
        attention = torch.from_numpy(mask).to(device)
        hidden = model(input_ids=input_ids, attention_mask=attention)[0]
        # Pool in fp32: summing bf16 activations would lose the agreement with fp32.
        return self._pool(hidden.float(), attention).cpu().numpy()

    def _pool(self, hidden: Any, attention: Any) -> Any:
        import torch

        mask = attention.unsqueeze(-1).to(hidden.dtype)
        if self._pooling == "cls":
            emb = hidden[:, 0]
        elif self._pooling == "max":
            emb = hidden.masked_fill(mask == 0, -1e9).max(dim=1).values
        else:
            summed = (hidden * mask).sum(dim=1)
            counts = mask.sum(dim=1).clamp(min=1e-9)
            emb = summed / (counts.sqrt() if self._pooling == "mean_sqrt_len" else counts)
        if self.normalize:
            emb = torch.nn.functional.normalize(emb, p=2, dim=1)
        return emb


# -- the featurizer -----------------------------------------------------------------


class EncoderFeaturizer(Featurizer):
    """Sentence-embedding features of a view (all-MiniLM-L6-v2 by default).

    Each text field is embedded separately; every distinct text is cached on disk once
    (key: the text and the encoder configuration, whatever dataset or field it came
    from). A one-field view gives ``u``; a two-field view gives the
    InferSent/SBERT pair features ``[u, v, |u - v|, u * v]`` (or ``[u, v]`` with
    ``pair_features=False``); longer views concatenate the field embeddings.

    Parameters
    ----------
    model : str or path
        ``"minilm"``, a local model folder or a hub name (see :class:`SentenceEncoder`).
    pair_features : bool
        Add ``|u - v|`` and ``u * v`` for two-field views.
    batch_size : int
        Sentences per forward pass.
    precision : {"auto", "fp32", "bf16", "fp16"}
        See :class:`SentenceEncoder`.
    device : str
        ``"auto"``, ``"cpu"``, ``"cuda"``...
    cache_dir : path, None or False
        Embedding cache folder (per-text vectors live in its ``texts/`` subfolder);
        ``None``: the default (``$SPURIOUS_CACHE_DIR`` or ``~/.cache/spurious/features``);
        ``False``: no caching.
    executor : "local", "ray", Executor or None, default=None
        Where texts not in the cache are encoded, in chunks (:mod:`.distributed`);
        ``None``: the run's (:func:`~spurious.execution.current_executor`), else local.
        Every executor gives the same vectors, so it is not part of :meth:`config`.

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> ds = make_nli_artifacts(n=6, random_state=0).dataset
    >>> EncoderFeaturizer(cache_dir=False).transform(ds, "full").shape  # doctest: +SKIP
    (6, 1536)
    """

    name: ClassVar[str] = "minilm"
    stateless: ClassVar[bool] = True

    def __init__(
        self,
        model: str = "minilm",
        pair_features: bool = True,
        batch_size: int = 128,
        precision: str = "auto",
        device: str = "auto",
        cache_dir: str | os.PathLike[str] | bool | None = None,
        executor: Any = None,
    ) -> None:
        self.model = model
        self.pair_features = pair_features
        self.batch_size = batch_size
        self.precision = precision
        self.device = device
        self.cache_dir = cache_dir
        self.executor = executor

    def config(self) -> dict[str, Any]:
        """As :meth:`Featurizer.config`, without ``executor`` (it does not change the vectors)."""
        return {k: v for k, v in super().config().items() if k != "executor"}

    def _encoder(self) -> SentenceEncoder:
        # One encoder per parameter setting; the heavy model itself is shared process-wide.
        sig = (self.model, self.device, self.precision, self.batch_size)
        enc = getattr(self, "_encoder_obj", None)
        if enc is None or getattr(self, "_encoder_sig", None) != sig:
            enc = SentenceEncoder(
                self.model, device=self.device, precision=self.precision, batch_size=self.batch_size
            )
            self._encoder_obj, self._encoder_sig = enc, sig
        return enc

    def field_embeddings(
        self, dataset: Dataset, field_name: str, *, progress: bool = False
    ) -> np.ndarray:
        """Embeddings of one text field of ``dataset`` (cached texts are not re-encoded).

        Examples
        --------
        >>> from spurious.data.synthetic import make_nli_artifacts
        >>> ds = make_nli_artifacts(n=6, random_state=0).dataset
        >>> feat = EncoderFeaturizer(cache_dir=False)
        >>> feat.field_embeddings(ds, "premise").shape  # doctest: +SKIP
        (6, 384)
        """
        return self.embed_texts(dataset.texts(field_name), progress=progress, what=field_name)

    def embed_texts(
        self, texts: Sequence[str], *, progress: bool = False, what: str = "texts"
    ) -> np.ndarray:
        """Embeddings of ``texts``, in order: each distinct text is looked up in the per-text
        cache, and only the texts it lacks are encoded (then added to it).

        The result is bit-identical to encoding ``texts`` alone: a text's vector does not
        depend on the texts it is encoded with (see the module docstring).
        """
        vectors, rows = self.embedding_table(texts, progress=progress, what=what)
        return vectors[rows]

    def embedding_table(
        self, texts: Sequence[str], *, progress: bool = False, what: str = "texts"
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(vectors, inverse)``: one embedding per distinct text of ``texts`` (a repeated
        premise is held once) and each text's row in it; ``vectors[inverse]`` is
        :meth:`embed_texts`."""
        enc = self._encoder()
        texts = list(texts)
        position: dict[str, int] = {}
        inverse = np.fromiter(
            (position.setdefault(t, len(position)) for t in texts), dtype=np.int64, count=len(texts)
        )
        unique = list(position)
        store = TextEmbeddingStore(
            {"kind": "text-embeddings", "encoder": enc.config(), "batching": enc.batching()},
            self.cache_dir,
        )
        digests = text_digests(unique)
        found, cached = store.get(digests)
        missing = np.flatnonzero(~found)
        if len(missing) == 0 and len(unique):
            vectors = np.empty((len(unique), cached.shape[1]), dtype=np.float32)
            vectors[found] = cached
            logger.debug("%d %s: all %d distinct texts from cache", len(texts), what, len(unique))
            return vectors, inverse
        t0 = time.perf_counter()
        executor, owned = resolve_executor(self.executor)
        try:
            new = encode_on(executor, enc, [unique[i] for i in missing], progress=progress)
        finally:
            if owned:
                executor.close()
        logger.info(
            "embedded %d new %s texts in %.1fs (%d of %d distinct from cache; %s, %s)",
            len(missing),
            what,
            time.perf_counter() - t0,
            int(found.sum()),
            len(unique),
            enc.resolved_device,
            enc.resolved_precision,
        )
        store.put(digests[missing], new)
        vectors = np.empty((len(unique), new.shape[1]), dtype=np.float32)
        vectors[missing] = new
        if found.any():
            vectors[found] = cached
        return vectors, inverse

    def _transform(self, dataset: Dataset, view: View, *, progress: bool) -> np.ndarray:
        if len(view.fields) == 2 and self.pair_features:
            tables = [
                self.embedding_table(dataset.texts(f), progress=progress, what=f)
                for f in view.fields
            ]
            return pair_features(*tables[0], *tables[1])
        blocks = [self.field_embeddings(dataset, f, progress=progress) for f in view.fields]
        return blocks[0] if len(blocks) == 1 else np.hstack(blocks).astype(np.float32, copy=False)
