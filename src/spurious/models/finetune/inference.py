"""No-grad passes over a split: logits for the training dynamics, hidden states as features.

The pass is the shared batched forward pass of :mod:`spurious.models.runtime.batches`
(the sentence encoder runs the same one): examples are tokenised once, sorted by length
and batched so a batch pads only to its own longest example (on CPU at most ~1k padded
tokens per batch); the model runs in eval mode under ``torch.inference_mode()`` and the
training's autocast precision (so the recorded probabilities are those of the model as
trained); on CPU whole batches run on worker threads with one intra-op thread each.

Also here: trained model folders on disk (:func:`check_model_dir`, :func:`model_meta`,
:func:`weights_digest`, :func:`load_classifier`) and the public entry points
:func:`hidden_states` and :func:`predict_proba`.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from spurious.data.dataset import Dataset
from spurious.exceptions import FeatureError, ParameterError, missing_dependency
from spurious.models.finetune.data import EncodedSplit, encode
from spurious.models.runtime import (
    CPU_TOKENS_PER_BATCH,
    amp_context,
    cpu_workers,
    forward_batches,
    quiet_transformers,
    resolve_device,
    resolve_precision,
    sorted_batches,
)
from spurious.utils.io import read_json
from spurious.views import View

logger = logging.getLogger(__name__)

__all__ = [
    "CPU_TOKENS_PER_BATCH",
    "MODEL_META",
    "POOLINGS",
    "amp_context",
    "check_model_dir",
    "hidden_states",
    "load_classifier",
    "model_meta",
    "plan_batches",
    "pooled_hidden",
    "predict_logits",
    "predict_proba",
    "quiet_transformers",
    "run_batches",
    "weights_digest",
]

#: File written beside a fine-tuned model's weights: how it was trained (view, labels ...).
MODEL_META = "spurious_finetune.json"
POOLINGS = ("cls", "mean")
#: At most this many CPU worker threads for a pass.
_MAX_CPU_WORKERS = 8
#: Length-sorted batches (the name this had when it lived here).
plan_batches = sorted_batches


def run_batches(
    model: Any,
    split: EncodedSplit,
    fn: Callable[[Any, dict[str, Any]], Any],
    *,
    device: str,
    precision: str = "fp32",
    batch_size: int = 256,
    rows: np.ndarray | None = None,
    bar: Any = None,
) -> dict[int, np.ndarray]:
    """Apply ``fn(model, batch) -> tensor (b, ...)`` to length-sorted batches of ``rows``.

    Returns ``{row: numpy array}``-like results gathered into one array per call by the
    callers (:func:`predict_logits`, :func:`pooled_hidden`). The model must already be in
    eval mode on ``device``. ``bar`` (a tqdm bar) advances by examples.
    """
    import torch

    rows = np.arange(len(split)) if rows is None else np.asarray(rows, dtype=np.int64)
    on_cpu = torch.device(device).type == "cpu"
    batches = sorted_batches(split.lengths, rows, batch_size, on_cpu)
    out: dict[int, np.ndarray] = {}

    def one(batch_rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        batch = split.batch(batch_rows)
        batch.pop("idx", None)
        batch.pop("labels", None)
        batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}
        return batch_rows, fn(model, batch).float().cpu().numpy()

    total = torch.get_num_threads()
    workers, threads_each = cpu_workers(total, _MAX_CPU_WORKERS, split_threads=True)
    for r, res in forward_batches(
        one,
        batches,
        device=device,
        precision=precision,
        workers=workers if on_cpu else 1,
        threads_each=threads_each,
        name="spurious-finetune-pass",
    ):
        out.update(zip(r.tolist(), res, strict=True))
        if bar is not None:
            bar.update(len(r))
    return out


def _stack(results: dict[int, np.ndarray], rows: np.ndarray) -> np.ndarray:
    return np.stack([results[int(r)] for r in rows]).astype(np.float32, copy=False)


def predict_logits(
    model: Any,
    split: EncodedSplit,
    *,
    device: str,
    precision: str = "fp32",
    batch_size: int = 256,
    rows: np.ndarray | None = None,
    bar: Any = None,
) -> np.ndarray:
    """Classifier logits ``(len(rows), n_labels)`` float32 for ``rows`` (default: all)."""
    rows = np.arange(len(split)) if rows is None else np.asarray(rows, dtype=np.int64)
    res = run_batches(
        model,
        split,
        lambda m, b: m(**b).logits,
        device=device,
        precision=precision,
        batch_size=batch_size,
        rows=rows,
        bar=bar,
    )
    return _stack(res, rows)


def pooled_hidden(
    model: Any,
    split: EncodedSplit,
    *,
    layer: int = -1,
    pooling: str = "cls",
    device: str,
    precision: str = "fp32",
    batch_size: int = 256,
    bar: Any = None,
) -> np.ndarray:
    """Pooled hidden states ``(n, hidden)`` of one layer of the model's encoder."""
    n_layers = int(model.config.num_hidden_layers)
    if not -(n_layers + 1) <= layer <= n_layers:
        raise ParameterError(
            f"The 'layer' parameter must be in [-{n_layers + 1}, {n_layers}] for this model "
            f"({n_layers} layers; 0 = embeddings, -1 = last). Got {layer!r} instead."
        )
    if pooling not in POOLINGS:
        raise ParameterError(
            f"The 'pooling' parameter must be one of {list(POOLINGS)}. Got {pooling!r} instead."
        )

    def fn(m: Any, b: dict[str, Any]) -> Any:
        want_all = layer not in (-1, n_layers)
        out = m.base_model(**b, output_hidden_states=want_all)
        hidden = out.hidden_states[layer] if want_all else out[0]
        hidden = hidden.float()  # pool in fp32: summing bf16 activations loses precision
        if pooling == "cls":
            return hidden[:, 0]
        mask = b["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)

    res = run_batches(
        model, split, fn, device=device, precision=precision, batch_size=batch_size, bar=bar
    )
    return _stack(res, np.arange(len(split)))


# -- trained models on disk ---------------------------------------------------------


def _weight_files(path: Path) -> list[Path]:
    return sorted(p for p in path.iterdir() if p.suffix in (".safetensors", ".bin"))


def check_model_dir(model_dir: str | os.PathLike[str], what: str = "model_dir") -> Path:
    """A model folder that exists and holds ``config.json`` and weights, resolved."""
    path = Path(model_dir).expanduser()
    if path.is_dir() and (path / "model" / "config.json").is_file():
        path = path / "model"  # the output folder of fine_tune / ``spurious train``
    if not path.is_dir():
        raise ParameterError(
            f"The '{what}' parameter must be a folder holding a trained model (config.json "
            f"and weights, e.g. the --out of 'spurious train'). Got {str(model_dir)!r}, "
            "which is not a folder."
        )
    if not (path / "config.json").is_file() or not _weight_files(path):
        raise ParameterError(
            f"The '{what}' parameter must be a folder holding a trained model; "
            f"{str(path)!r} has no config.json or no weights (*.safetensors)."
        )
    return path.resolve()


@functools.lru_cache(maxsize=32)
def _digest(stamps: tuple[tuple[str, int, int], ...]) -> str:
    h = hashlib.blake2b(digest_size=16)
    for name, _size, _mtime in stamps:
        with open(name, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 22), b""):
                h.update(chunk)
    return h.hexdigest()


def weights_digest(model_dir: str | os.PathLike[str]) -> str:
    """blake2b digest of a model folder's weight files (memoised by size and mtime).

    Examples
    --------
    >>> weights_digest("path/to/trained/model")  # doctest: +SKIP
    '3f0c9e5d...'
    """
    path = check_model_dir(model_dir)
    stamps = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in _weight_files(path))
    return _digest(stamps)


def model_meta(model_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """What :func:`~spurious.models.finetune.fine_tune` recorded beside the weights
    (view, label names, max length, precision, data fingerprints); ``{}`` for a model
    trained elsewhere."""
    path = check_model_dir(model_dir) / MODEL_META
    return read_json(path) if path.is_file() else {}


@functools.lru_cache(maxsize=2)
def _load_classifier(path: str, digest: str, device: str) -> tuple[Any, Any]:
    del digest  # part of the cache key only: a retrained model in the same folder reloads
    try:
        import torch  # noqa: F401
        import transformers
    except ImportError as e:
        raise missing_dependency(e.name or "transformers", "encoder", "Fine-tuned models") from None
    try:
        with quiet_transformers():
            tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
            model = transformers.AutoModelForSequenceClassification.from_pretrained(
                path, local_files_only=True
            )
    except (OSError, ValueError) as e:
        raise FeatureError(f"Could not load the fine-tuned model {path!r}: {e}") from e
    return tokenizer, model.float().to(device).eval()


def load_classifier(model_dir: str | os.PathLike[str], device: str = "cpu") -> tuple[Any, Any]:
    """``(tokenizer, eval-mode fp32 model)`` of a trained model folder, once per process."""
    path = check_model_dir(model_dir)
    return _load_classifier(str(path), weights_digest(path), device)


def hidden_states(
    model_dir: str | os.PathLike[str],
    dataset: Dataset,
    view: str | View = "full",
    *,
    layer: int = -1,
    pooling: str = "cls",
    batch_size: int = 256,
    max_length: int | None = None,
    device: str = "auto",
    precision: str = "auto",
    progress: bool = False,
) -> np.ndarray:
    """Hidden states of a trained model for every example of ``dataset``, pooled.

    The default is the representation the classifier reads: the last layer's [CLS]
    vector (paper 000 Sec. 4 takes "the final layer before the output layer" as AFLite's
    Phi; paper 002 App. C clusters [CLS] vectors).

    Parameters
    ----------
    model_dir : path
        A fine-tuned model folder (the ``model/`` of :func:`fine_tune`, or the output
        folder itself), or any Hugging Face sequence-classification folder.
    dataset : Dataset
    view : str or View
        The fields the model sees (usually the view it was trained on).
    layer : int, default=-1
        0 = the embeddings, 1..L = the transformer layers, -1 = the last.
    pooling : {"cls", "mean"}, default="cls"
        The first token's vector, or the mean over the non-padding tokens.
    batch_size : int
        Rows per forward pass (length-sorted batches).
    max_length : int, optional
        Truncation; default: the model's training max length (else 128).
    device : str
        ``"auto"``, ``"cpu"``, ``"cuda"``...
    precision : {"auto", "fp32", "bf16", "fp16"}
        Autocast precision (``"auto"``: fp16 on CUDA, bf16 on CPUs with native bf16).
    progress : bool
        A progress bar (examples/s).

    Returns
    -------
    numpy.ndarray of float32, shape (len(dataset), hidden_size)

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> ds = make_nli_artifacts(n=20, random_state=0).dataset
    >>> H = hidden_states("runs/train/model", ds, "full")  # doctest: +SKIP
    >>> H.shape  # doctest: +SKIP
    (20, 384)
    """
    path = check_model_dir(model_dir)
    dev = resolve_device(device)
    prec = resolve_precision(precision, dev)
    meta = model_meta(path)
    if max_length is None:
        max_length = int(meta.get("max_length", 128))
    tokenizer, model = load_classifier(path, dev)
    split = encode(dataset, view, tokenizer, max_length, with_labels=False)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(split), desc="hidden states", unit="ex")
    try:
        return pooled_hidden(
            model,
            split,
            layer=layer,
            pooling=pooling,
            device=dev,
            precision=prec,
            batch_size=batch_size,
            bar=bar,
        )
    finally:
        if bar is not None:
            bar.close()


def predict_proba(
    model_dir: str | os.PathLike[str],
    dataset: Dataset,
    view: str | View | None = None,
    *,
    batch_size: int = 256,
    max_length: int | None = None,
    device: str = "auto",
    precision: str = "auto",
    progress: bool = False,
) -> np.ndarray:
    """Class probabilities of a trained sequence classifier for every example of ``dataset``.

    Parameters
    ----------
    model_dir : path
        A fine-tuned model folder (or the output folder of :func:`fine_tune`).
    dataset : Dataset
    view : str or View, optional
        The fields the model sees; default: the view it was trained on.
    batch_size, max_length, device, precision, progress
        As in :func:`hidden_states`.

    Returns
    -------
    numpy.ndarray of float64, shape (len(dataset), n_labels)
        Columns in the model's label order (``config.id2label``; for a model from
        :func:`fine_tune`, the training data's label ids).

    Examples
    --------
    >>> P = predict_proba("runs/ft-hyp", dev)  # doctest: +SKIP
    >>> P.shape  # doctest: +SKIP
    (9842, 3)
    """
    path = check_model_dir(model_dir)
    dev = resolve_device(device)
    prec = resolve_precision(precision, dev)
    meta = model_meta(path)
    if view is None:
        view = meta.get("view", "full")
    if max_length is None:
        max_length = int(meta.get("max_length", 128))
    tokenizer, model = load_classifier(path, dev)
    split = encode(dataset, view, tokenizer, max_length, with_labels=False)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(split), desc="predicting", unit="ex")
    try:
        logits = predict_logits(
            model, split, device=dev, precision=prec, batch_size=batch_size, bar=bar
        ).astype(np.float64)
    finally:
        if bar is not None:
            bar.close()
    logits -= logits.max(axis=1, keepdims=True)
    proba = np.exp(logits)
    return proba / proba.sum(axis=1, keepdims=True)
