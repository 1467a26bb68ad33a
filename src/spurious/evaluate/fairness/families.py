"""Families of adversaries and evaluated models, inferred from the run (paper 004 Fig. 4).

Paper 004 asks whether a model falls in the ranking when the adversary shares its
pretrained model. When the user declares no ``families``, they are inferred:

- an adversary from its featurizer spec: ``bow`` / ``tfidf`` / the lexical QA adversaries
  -> ``"lexical"``; ``minilm`` -> ``"minilm"``; ``finetuned:<dir>`` -> the base model the
  training engine recorded for that fine-tune (``metrics.json`` ``config.model``, else
  ``model/spurious_finetune.json`` ``base_model``); a Hugging Face folder -> its
  ``config.json`` (``_name_or_path``, then the folder name, then ``model_type``);
- an evaluated model from its name (``electra-base`` -> ``"electra"``,
  ``mlp256-minilm-s0`` -> ``"minilm"``, ``logreg-bow`` -> ``"lexical"``), else from the
  training engine's ``metrics.json`` next to its prediction file.

A base-model name maps to a family by the first known key it contains
(:data:`FAMILY_KEYS`; ``minilm`` before ``bert``, since MiniLM's config says
``model_type: bert``). Declared families override inferred ones.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["FAMILY_KEYS", "adversary_family", "family_of_name", "model_family", "resolve_families"]

#: Substring -> family, tried in order (more specific names first).
FAMILY_KEYS: tuple[tuple[str, str], ...] = (
    ("minilm", "minilm"),
    ("distilbert", "distilbert"),
    ("deberta", "deberta"),
    ("roberta", "roberta"),
    ("electra", "electra"),
    ("albert", "albert"),
    ("bert", "bert"),
    ("xlnet", "xlnet"),
    ("t5", "t5"),
    ("gpt", "gpt"),
    ("tfidf", "lexical"),
    ("bow", "lexical"),
    ("lexical", "lexical"),
)
_LEXICAL_SPECS = {"bow": "lexical", "tfidf": "lexical", "qa_lexical": "lexical",
                  "qa_heuristic": "lexical", "qa_position": "position"}  # fmt: skip


def family_of_name(name: str) -> str | None:
    """The family a (model or file) name names, or ``None``.

    Examples
    --------
    >>> family_of_name("electra-base"), family_of_name("sentence-transformers/all-MiniLM-L6-v2")
    ('electra', 'minilm')
    >>> family_of_name("bert-tiny"), family_of_name("logreg-tfidf"), family_of_name("lstm")
    ('bert', 'lexical', None)
    """
    low = str(name).lower()
    return next((fam for key, fam in FAMILY_KEYS if key in low), None)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        with path.open(encoding="utf-8") as fh:
            obj = json.load(fh)
        return obj if isinstance(obj, dict) else {}
    except (OSError, ValueError):
        return {}


def _finetune_family(folder: Path) -> str | None:
    """Family of a training-engine output folder (or its ``model/`` subfolder)."""
    for root in (folder, folder.parent):
        cfg = _read_json(root / "metrics.json").get("config") or {}
        fam = family_of_name(cfg.get("model", "")) if isinstance(cfg, dict) else None
        if fam:
            return fam
    for meta in (folder / "model" / "spurious_finetune.json", folder / "spurious_finetune.json"):
        fam = family_of_name(_read_json(meta).get("base_model", ""))
        if fam:
            return fam
    return None


def _hf_family(folder: Path) -> str | None:
    cfg = _read_json(folder / "config.json")
    for candidate in (cfg.get("_name_or_path", ""), folder.name, cfg.get("model_type", "")):
        fam = family_of_name(str(candidate))
        if fam:
            return fam
    return None


def adversary_family(spec: Any) -> str | None:
    """The family of an adversary's featurizer spec, or ``None`` if it cannot be told.

    Examples
    --------
    >>> adversary_family("bow"), adversary_family("minilm"), adversary_family("qa_lexical")
    ('lexical', 'minilm', 'lexical')
    >>> adversary_family(object()) is None
    True
    """
    if not isinstance(spec, str | os.PathLike):
        return None
    spec = str(spec)
    if spec in _LEXICAL_SPECS:
        return _LEXICAL_SPECS[spec]
    if spec.startswith("finetuned:"):
        return _finetune_family(Path(spec[len("finetuned:") :].strip()))
    path = Path(spec)
    if path.is_dir():
        return _finetune_family(path) or _hf_family(path)
    return family_of_name(spec)


def model_family(name: str, source: str | os.PathLike[str] | None = None) -> str | None:
    """The family of an evaluated model, from its name or the folder of its predictions.

    Examples
    --------
    >>> model_family("bert-base-uncased"), model_family("mlp256-minilm-s1")
    ('bert', 'minilm')
    """
    fam = family_of_name(name)
    if fam is None and source is not None:
        fam = _finetune_family(Path(source).parent)
    return fam


def resolve_families(
    declared: Mapping[str, str] | None,
    adversaries: Mapping[str, Any],
    models: Sequence[str],
    sources: Mapping[str, str | None] | None = None,
) -> tuple[dict[str, str], list[str]]:
    """Declared families, completed by inferred ones where a name has none.

    Parameters
    ----------
    declared : mapping name -> family, optional
        The user's families; they win.
    adversaries : mapping adversary name -> featurizer spec
    models : sequence of str
        Evaluated model names.
    sources : mapping model name -> prediction file, optional

    Returns
    -------
    families : dict name -> family
    inferred : list of str
        The names whose family was inferred (not declared).

    Examples
    --------
    >>> fam, inferred = resolve_families({"bow": "bag"}, {"bow": "bow", "lm": "minilm"},
    ...                                  ["mlp-minilm", "lstm"])
    >>> fam, inferred
    ({'bow': 'bag', 'lm': 'minilm', 'mlp-minilm': 'minilm'}, ['lm', 'mlp-minilm'])
    """
    out = dict(declared or {})
    inferred: list[str] = []
    sources = sources or {}
    for name, spec in adversaries.items():
        if name not in out:
            fam = adversary_family(spec)
            if fam is not None:
                out[name] = fam
                inferred.append(name)
    for name in models:
        if name not in out:
            fam = model_family(name, sources.get(name))
            if fam is not None:
                out[name] = fam
                inferred.append(name)
    if inferred:
        logger.info("fairness: families inferred for %s", ", ".join(inferred))
    return out, inferred
