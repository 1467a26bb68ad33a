"""Features from a fine-tuned model: pooled hidden states, as ``features="finetuned:<dir>"``.

AFLite's representation in paper 000 is "the final layer before the output layer" of a
model fine-tuned on a warm-up fraction (Sec. 4); paper 002 clusters a fine-tuned
model's [CLS] vectors (App. C). :class:`FinetunedFeaturizer` gives any analysis that
takes a featurizer spec that representation: the model sees the view's fields the way
it was trained (a two-field view as one text pair, not two separate sentences), and the
matrix is cached on disk keyed by the dataset's fingerprint, the view, and the model
folder *and the digest of its weights*, so retraining into the same folder never serves
stale features.
"""

from __future__ import annotations

import os
import time
from typing import Any, ClassVar

import numpy as np

from spurious.data.dataset import Dataset
from spurious.features.base import Featurizer
from spurious.features.cache import FeatureCache
from spurious.views import View

#: Prefix of the featurizer spec: ``"finetuned:<model dir>"``.
SPEC_PREFIX = "finetuned:"
#: Part of every cache key; bump when the computation changes.
_VERSION = 1


class FinetunedFeaturizer(Featurizer):
    """Pooled hidden states of a fine-tuned sequence classifier for a view.

    Parameters
    ----------
    model : str or path
        The model folder (the ``model/`` of ``spurious train --out DIR``, or ``DIR``).
    layer : int, default=-1
        0 = embeddings, 1..L = transformer layers, -1 = the last.
    pooling : {"cls", "mean"}, default="cls"
    batch_size : int, default=256
    precision : {"auto", "fp32", "bf16", "fp16"}, default="auto"
    device : str, default="auto"
    cache_dir : path, None or False
        Feature cache (``None``: the default folder; ``False``: no caching).

    Examples
    --------
    >>> f = FinetunedFeaturizer("runs/train/model")
    >>> f.layer, f.pooling
    (-1, 'cls')
    >>> from spurious.features import make_featurizer
    >>> make_featurizer("finetuned:runs/train").model  # doctest: +SKIP
    'runs/train'
    """

    name: ClassVar[str] = "finetuned"
    stateless: ClassVar[bool] = True

    def __init__(
        self,
        model: str | os.PathLike[str] = "",
        layer: int = -1,
        pooling: str = "cls",
        batch_size: int = 256,
        precision: str = "auto",
        device: str = "auto",
        cache_dir: str | os.PathLike[str] | bool | None = None,
    ) -> None:
        # Cheap on purpose: analyses build featurizers while validating parameters.
        self.model = model
        self.layer = layer
        self.pooling = pooling
        self.batch_size = batch_size
        self.precision = precision
        self.device = device
        self.cache_dir = cache_dir

    def config(self) -> dict[str, Any]:
        """Identity for cache keys and provenance: the resolved model folder, the digest
        of its weights, layer, pooling, max length and the precision actually used."""
        from spurious.models.finetune.inference import check_model_dir, model_meta, weights_digest
        from spurious.models.runtime import resolve_device, resolve_precision

        path = check_model_dir(self.model, "model")
        meta = model_meta(path)
        return {
            "featurizer": self.name,
            "version": _VERSION,
            "model": str(path),
            "weights": weights_digest(path),
            "layer": int(self.layer),
            "pooling": self.pooling,
            "max_length": int(meta.get("max_length", 128)),
            "precision": resolve_precision(self.precision, resolve_device(self.device)),
        }

    def _transform(self, dataset: Dataset, view: View, *, progress: bool) -> np.ndarray:
        import logging

        from spurious.models.finetune.inference import hidden_states

        cache = FeatureCache(self.cache_dir)
        key = {
            "kind": "finetuned-hidden-states",
            "dataset": dataset.fingerprint,
            "view": list(view.fields),
            "n": len(dataset),
            "featurizer": self.config(),
        }
        cached = cache.get(key)
        if cached is not None and cached.shape[0] == len(dataset):
            return cached
        t0 = time.perf_counter()
        X = hidden_states(
            self.model,
            dataset,
            view,
            layer=self.layer,
            pooling=self.pooling,
            batch_size=self.batch_size,
            device=self.device,
            precision=self.precision,
            progress=progress,
        )
        logging.getLogger(__name__).info(
            "%s: hidden states of %d examples (%s) in %.1fs",
            dataset.name,
            len(dataset),
            view.name,
            time.perf_counter() - t0,
        )
        return cache.put(key, X)


def from_spec(spec: str, **kwargs: Any) -> FinetunedFeaturizer:
    """``"finetuned:<dir>"`` -> :class:`FinetunedFeaturizer`; the folder is checked now,
    so a wrong path fails when an analysis is configured, not after other work.

    Examples
    --------
    >>> from_spec("finetuned:")
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'features' parameter 'finetuned:<dir>' must name a model folder after the colon. Got 'finetuned:' instead.
    """
    from spurious.exceptions import ParameterError

    folder = spec[len(SPEC_PREFIX) :].strip()
    if not folder:
        raise ParameterError(
            "The 'features' parameter 'finetuned:<dir>' must name a model folder after the "
            f"colon. Got {spec!r} instead."
        )
    from spurious.models.finetune.inference import check_model_dir

    check_model_dir(folder, "features")
    return FinetunedFeaturizer(model=folder, **kwargs)
