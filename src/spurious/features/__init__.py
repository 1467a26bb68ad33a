"""Featurizers: a view of a dataset -> a float32 matrix, with an on-disk cache."""

from __future__ import annotations

import os
from typing import Any

from spurious.exceptions import ParameterError
from spurious.features.base import Featurizer, check_features
from spurious.features.cache import FeatureCache
from spurious.features.lexical import LexicalFeaturizer
from spurious.features.precomputed import PrecomputedFeaturizer
from spurious.utils.registry import Registry

#: Short names accepted by :func:`make_featurizer` and the CLI's ``--features``:
#: name -> (featurizer kind, default keyword arguments).
FEATURIZERS: Registry[tuple[str, dict[str, Any]]] = Registry("featurizer")
FEATURIZERS.register("bow", ("lexical", {"weighting": "binary", "ngram_max": 1}))
FEATURIZERS.register("tfidf", ("lexical", {"weighting": "tfidf", "ngram_max": 2}))
FEATURIZERS.register("minilm", ("encoder", {}))


def make_featurizer(spec: str | Featurizer = "tfidf", **kwargs: Any) -> Featurizer:
    """A featurizer from a short name (``"bow"``, ``"tfidf"``, ``"minilm"``), a local model
    directory (``"path/to/hf-model"``) or an existing :class:`Featurizer` (returned as is).

    Examples
    --------
    >>> make_featurizer("bow").weighting
    'binary'
    """
    if isinstance(spec, Featurizer):
        return spec
    if not isinstance(spec, str):
        raise ParameterError(
            f"The 'features' parameter must be one of {FEATURIZERS.names()}, a model "
            f"directory, or a Featurizer. Got {type(spec).__name__} instead."
        )
    if spec.startswith("finetuned:"):
        # A model fine-tuned by spurious.models.finetune: its pooled hidden states.
        from spurious.features.finetuned import from_spec

        return from_spec(spec, **kwargs)
    if spec in FEATURIZERS:
        kind, defaults = FEATURIZERS[spec]
    elif os.path.isdir(spec) or _is_hub_name(spec):
        # A local model folder, or a hub name the user asked for explicitly ("org/name").
        if os.path.isdir(spec) and not os.path.isfile(os.path.join(spec, "config.json")):
            raise ParameterError(
                f"The 'features' parameter names the folder {spec!r}, which holds no model "
                "(no config.json): pass a Hugging Face model folder (config.json, weights, "
                f"tokenizer files), 'finetuned:<dir>', or one of {FEATURIZERS.names()}."
            )
        kind, defaults = "encoder", {"model": spec}
    else:
        raise ParameterError(
            f"The 'features' parameter must be one of {FEATURIZERS.names()}, an existing local "
            f"model directory or a Hugging Face model name (org/name). Got {spec!r} instead."
        )
    if kind == "lexical":
        return LexicalFeaturizer(**{**defaults, **kwargs})
    from spurious.features.encoder import EncoderFeaturizer

    return EncoderFeaturizer(**{**defaults, **kwargs})


def _is_hub_name(spec: str) -> bool:
    """``org/name`` with no path-like prefix (``./x/y`` or ``/x`` are missing folders)."""
    return spec.count("/") == 1 and not spec.startswith((".", "/", "~")) and " " not in spec


__all__ = [
    "FEATURIZERS",
    "FeatureCache",
    "Featurizer",
    "LexicalFeaturizer",
    "PrecomputedFeaturizer",
    "check_features",
    "make_featurizer",
]


def __getattr__(name: str):
    # The encoder pulls in torch/transformers; import it only when asked for.
    if name in ("EncoderFeaturizer", "SentenceEncoder"):
        from spurious.features import encoder

        return getattr(encoder, name)
    raise AttributeError(name)
