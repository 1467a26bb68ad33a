"""Families of adversaries and evaluated models, inferred from the run (paper 004 Fig. 4).

Paper 004 Fig. 4 asks whether a model falls in the ranking when the adversary was built
on *the same pretrained model*: a family is one pretrained checkpoint (RoBERTa-large,
XLM-R-large, MiniBERTa-base-1B, BART-base, ...), not an architecture name. When the user
declares no ``families``, they are inferred:

- an adversary from its featurizer spec: ``bow`` / ``tfidf`` / the lexical QA adversaries
  -> ``"lexical"``; ``minilm`` -> ``"all-minilm-l6-v2"`` (the product's encoder);
  ``finetuned:<dir>`` -> the checkpoint the training engine recorded for that fine-tune
  (``metrics.json`` ``config.model``, else ``model/spurious_finetune.json``
  ``base_model``); a Hugging Face folder -> its ``config.json`` ``_name_or_path``, then
  the folder name (never ``model_type`` alone: it names an architecture, not a checkpoint);
- an evaluated model from its name (``electra-base`` -> ``"electra-base"``,
  ``mlp256-minilm-s0`` -> ``"all-minilm-l6-v2"``, ``logreg-bow`` -> ``"lexical"``), else
  from the training engine's ``metrics.json`` next to its prediction file.

A name maps to the first pattern of :data:`CHECKPOINTS` that matches it as whole words
(case, organisation prefix and ``_`` / ``-`` / ``/`` / ``.`` separators ignored; more
specific checkpoints first, so ``xlm-roberta-large`` and the MiniBERTas
``nyu-mll/roberta-base-1B-1`` never count as ``roberta-*``). A name that gives an
architecture without its size (``roberta``, ``my-electra``) gets no family: it cannot
tell which checkpoint it is. Declared families override inferred ones.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spurious.exceptions import ParameterError

logger = logging.getLogger(__name__)

__all__ = [
    "CHECKPOINTS",
    "adversary_family",
    "check_declared",
    "family_of_name",
    "model_family",
    "resolve_families",
]

_SIZE = r"(?P<size>xsmall|small|base|large|xlarge|xxlarge)"
#: (regular expression over the normalised name, family template), tried in order; the
#: template is filled with the match's named groups. Whole-word matches only.
CHECKPOINTS: tuple[tuple[str, str], ...] = (
    (r"xlm-?r(?:oberta)?-(?P<size>base|large|xl|xxl)", "xlm-roberta-{size}"),
    # MiniBERTas (Zhang et al. 2021; nyu-mll/roberta-<size>-<data>-<run>) and paper 004's
    # short names (Min-1M = MiniBERTa-S-1M, Min-1B = MiniBERTa-B-1B).
    (
        r"roberta-(?P<size>base|med-small)-(?P<data>1m|10m|100m|1b)(?:-(?P<run>\d))?",
        "roberta-{size}-{data}{run}",
    ),
    (r"mini-?berta-(?:s|small|med-small)-(?P<data>1m|10m|100m)", "roberta-med-small-{data}"),
    (r"mini-?berta-(?:b|base)-(?P<data>10m|100m|1b)", "roberta-base-{data}"),
    (r"min-(?P<data>1m)", "roberta-med-small-{data}"),
    (r"min-(?P<data>1b)", "roberta-base-{data}"),
    (r"distilroberta-base", "distilroberta-base"),
    (r"distilbert-base(?:-(?P<case>uncased|cased|multilingual-cased))?", "distilbert-base{case}"),
    (r"deberta-(?P<ver>v3|v2)-" + _SIZE, "deberta-{ver}-{size}"),
    (r"deberta-rtd-" + _SIZE, "deberta-v3-{size}"),
    (r"deberta-(?P<size>base|large|xlarge)", "deberta-{size}"),
    (r"roberta-(?P<size>base|large)", "roberta-{size}"),
    (r"bart-(?P<size>base|large)", "bart-{size}"),
    (r"electra-(?P<size>small|base|large)", "electra-{size}"),
    (r"albert-(?P<size>base|large|xlarge|xxlarge)(?:-(?P<v>v1|v2))?", "albert-{size}{v}"),
    (
        r"bert-(?P<size>base|large)(?:-(?P<case>(?:multilingual-)?(?:uncased|cased)))?",
        "bert-{size}{case}",
    ),
    (r"bert-(?P<size>tiny|mini|small|medium)", "bert-{size}"),
    (r"(?:all-)?minilm-l(?P<layers>6|12)(?:-h(?P<h>\d+))?(?:-v2)?", "minilm-l{layers}"),
    # The bare word: the product's encoder (features "minilm" = all-MiniLM-L6-v2).
    (r"minilm", "all-minilm-l6-v2"),
    (r"(?:flan-)?t5-(?P<size>small|base|large|3b|11b)", "t5-{size}"),
    (r"gpt2(?:-(?P<size>medium|large|xl))?", "gpt2{size}"),
    (r"xlnet-(?P<size>base|large)", "xlnet-{size}"),
    (r"tf-?idf|bow|lexical", "lexical"),
)
_COMPILED = tuple(
    (re.compile(r"(?<![a-z0-9])(?:" + pat + r")(?![a-z0-9])"), fam) for pat, fam in CHECKPOINTS
)
# all-MiniLM-L6-v2 is the one sentence-transformers checkpoint of 6 layers the product uses.
_ALIASES = {"minilm-l6": "all-minilm-l6-v2"}
_LEXICAL_SPECS = {"bow": "lexical", "tfidf": "lexical", "qa_lexical": "lexical",
                  "qa_heuristic": "lexical", "qa_position": "position"}  # fmt: skip


def _normalise(name: str) -> str:
    return re.sub(r"[\s_/.]+", "-", str(name).lower())


def family_of_name(name: str) -> str | None:
    """The pretrained checkpoint a (model, file or folder) name names, or ``None``.

    Examples
    --------
    >>> family_of_name("google/electra-base-discriminator"), family_of_name("mlp-minilm-s0")
    ('electra-base', 'all-minilm-l6-v2')
    >>> family_of_name("xlm-roberta-large"), family_of_name("nyu-mll/roberta-base-1B-1")
    ('xlm-roberta-large', 'roberta-base-1b-1')
    >>> family_of_name("facebook/bart-large-mnli"), family_of_name("roberta-large")
    ('bart-large', 'roberta-large')
    >>> family_of_name("logreg-tfidf"), family_of_name("roberta"), family_of_name("lstm")
    ('lexical', None, None)
    """
    low = _normalise(name)
    for pattern, template in _COMPILED:
        match = pattern.search(low)
        if match is not None:
            parts = {k: ("" if v is None else v) for k, v in match.groupdict().items()}
            # optional parts join with a dash; the size is always present where used
            for key in ("case", "v", "run", "data"):
                if parts.get(key) and key != "data":
                    parts[key] = "-" + parts[key]
            if template.startswith("gpt2") and parts.get("size"):
                parts["size"] = "-" + parts["size"]
            fam = template.format(**parts)
            return _ALIASES.get(fam, fam)
    return None


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
    # model_type ("bert", "roberta") names an architecture, not a checkpoint: not used.
    for candidate in (cfg.get("_name_or_path", ""), folder.name):
        fam = family_of_name(str(candidate))
        if fam:
            return fam
    return None


def adversary_family(spec: Any) -> str | None:
    """The family of an adversary's featurizer spec, or ``None`` if it cannot be told.

    Examples
    --------
    >>> adversary_family("bow"), adversary_family("minilm"), adversary_family("qa_lexical")
    ('lexical', 'all-minilm-l6-v2', 'lexical')
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
    ('bert-base-uncased', 'all-minilm-l6-v2')
    """
    fam = family_of_name(name)
    if fam is None and source is not None:
        fam = _finetune_family(Path(source).parent)
    return fam


def check_declared(
    declared: Mapping[str, str] | None, adversaries: Sequence[str], models: Sequence[str]
) -> None:
    """Every declared family names an adversary or an evaluated model of the run.

    A family for a name the run does not have would be ignored (the same-family rank
    change looks families up by adversary and model name), so it is an error.

    Examples
    --------
    >>> check_declared({"bow": "lexical"}, ["bow"], ["electra-base"])
    >>> check_declared({"electra-bse": "electra-base"}, ["bow"], ["electra-base"])
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'families' parameter ... ['electra-bse'], neither ...
    """
    unknown = sorted(set(declared or {}) - set(adversaries) - set(models))
    if unknown:
        raise ParameterError(
            f"The 'families' parameter of Fairness (--family) names {unknown}, neither an "
            f"adversary ({list(adversaries)}) nor an evaluated model ({list(models)}, the "
            "prediction files' stems) of this run; a family is looked up by those names only."
        )


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
    ({'bow': 'bag', 'lm': 'all-minilm-l6-v2', 'mlp-minilm': 'all-minilm-l6-v2'}, ['lm', 'mlp-minilm'])
    """
    out = dict(declared or {})
    inferred: list[str] = []
    sources = sources or {}
    for name, spec in adversaries.items():
        if name not in out:
            # several representation seeds of one adversary: one family if they agree
            fams = {adversary_family(s) for s in (spec if isinstance(spec, list) else [spec])}
            fam = fams.pop() if len(fams) == 1 else None
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
