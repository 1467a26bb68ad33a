"""Bias-amplified splits: paper 002 ("Fighting Bias with Bias") Sec. 2, 4.1, 5 and App. C.

Given a training split, an evaluation ("test") split and the anti-biased marks of one
or more *definitions* (``Result.marks``: cartography, partial-input cartography,
minority examples, or any later analysis that fills ``marks``), build for each
definition:

``train.biased``
    the training split minus its anti-biased examples (Sec. 2.2);
``train.anti_biased``
    the anti-biased training examples that were removed;
``train.random``
    the baseline of Table 1: a seeded random subset of the training split of the same
    size as ``train.biased``;
``train.reinserted_<p>``
    ``train.biased`` plus p% of ``train.anti_biased`` (Sec. 5: 10, 20, 35, 50, 70%),
    drawn from one seeded permutation, so every fraction contains the smaller ones;
``<eval_name>.biased``, ``<eval_name>.anti_biased``
    the evaluation split divided the same way; ``<eval_name>.anti_biased`` is the
    anti-biased test of Table 1.

The split names are those of the authors' published splits (Hugging Face Hub
``bias-amplified-splits/*``: ``train.biased``, ``train.anti_biased``,
``validation.biased``, ``validation.anti_biased``, ``test.biased``,
``test.anti_biased``; MultiNLI's ``validation_matched.*``). We have one evaluation
split, named ``test`` by default, as the paper calls it throughout; pass
``eval_name="validation"`` (or ``"validation_matched"``) to name it as the Hub does for
datasets whose test labels are not public. No validation split is carved out of the
training data: the paper has none for MultiNLI, QQP and WANLI either (it evaluates on
their validation sets, footnote 9). ``train.random`` and ``train.reinserted_<p>`` are
not on the Hub (the authors published no baselines); their names are ours.

The data flow, one module each: :mod:`~spurious.marks` collects the
anti-biased marks, q-matches them (Sec. 4.1, Table 7; see that module) and aligns them
with the data's rows; :mod:`~spurious.actions.amplify.splits` builds the random
baseline, the reinsertion masks and :class:`AmplifiedSplits`;
:mod:`~spurious.actions.amplify.outputs` checks and prepares the output folder;
:mod:`~spurious.actions.amplify.evaluate` trains and scores models on the splits (Table 1,
Fig. 3) with a model family other than the marking one by default;
:func:`amplify` and :func:`amplify_run` (here) tie them together.

Outputs are written by :meth:`AmplifiedSplits.save`: a Hugging Face ``DatasetDict``
per definition (``save_to_disk``), the same splits as files in the inputs' own formats
(the drop-in writers of :mod:`spurious.actions.filter`: the inputs' rows unchanged,
atomic writes, never over an input), ``summary.json`` (sizes and label
distributions) and an ``amplify`` result that the report renders.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from spurious.actions.amplify.evaluate import (
    DEFAULT_EVALUATOR,
    EVALUATORS,
    evaluate_amplified,
    marking_family,
)
from spurious.actions.amplify.splits import (
    AMPLIFY_FORMAT_VERSION,
    REINSERT_FRACTIONS,
    AmplifiedSplits,
    DefinitionSplits,
    random_subset_mask,
    reinsert_name,
    reinsertion_masks,
)
from spurious.data.dataset import Dataset
from spurious.exceptions import DataFormatError, ParameterError
from spurious.marks import (
    _aligned,
    _load_run_results,
    collect_marks,
    match_marks,
    n_anti_of,
)

logger = logging.getLogger(__name__)

__all__ = [
    "AMPLIFY_FORMAT_VERSION",
    "DEFAULT_EVALUATOR",
    "EVALUATORS",
    "REINSERT_FRACTIONS",
    "AmplifiedSplits",
    "DefinitionSplits",
    "amplify",
    "amplify_run",
    "check_options",
    "collect_marks",
    "evaluate_amplified",
    "marking_family",
    "match_marks",
    "n_anti_of",
    "random_subset_mask",
    "reinsert_name",
    "reinsertion_masks",
]


def amplify(
    train: Dataset,
    eval: Dataset | None,
    marks: Any,
    *,
    definitions: Sequence[str] | None = None,
    match_to: str | None = "auto",
    q: float | None = None,
    reinsert: Sequence[float] = REINSERT_FRACTIONS,
    eval_name: str = "test",
    random_state: int | None = 0,
) -> AmplifiedSplits:
    """Bias-amplified splits of ``train`` and ``eval`` from anti-biased marks (paper 002).

    Parameters
    ----------
    train, eval : Dataset
        The training and evaluation ("test") splits the marks were made on.
    marks : Result, Run, mapping of results, run directory or DataFrame
        See :func:`collect_marks`; must mark both splits (``split`` ``train`` and
        ``eval``).
    definitions : sequence of str, optional
        Definitions to amplify (default: every marked one).
    match_to, q
        q-matching, see :func:`match_marks` and :mod:`~spurious.marks`.
    reinsert : sequence of float, default=(0.1, 0.2, 0.35, 0.5, 0.7)
        Shares of the anti-biased training examples put back (Sec. 5); ``()`` for none.
    eval_name : str, default="test"
        Name of the evaluation split in the split names (``test``, ``validation``,
        ``validation_matched``...).
    random_state : int or None, default=0
        Seeds the random baseline and the reinsertion draw.

    Returns
    -------
    AmplifiedSplits

    Raises
    ------
    ParameterError
        An unknown definition, bad fractions, or no evaluation split.
    DataFormatError
        The marks do not cover the data's ids exactly (ids missing or not in the data).

    Examples
    --------
    >>> import pandas as pd
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> train, test = make_nli_artifacts(n=100, random_state=0).dataset.split(0.3)
    >>> marks = pd.concat([pd.DataFrame({"id": d.ids, "split": s, "definition": "m",
    ...     "anti_biased": np.arange(len(d)) < 10}) for d, s in ((train, "train"),
    ...     (test, "eval"))])
    >>> amp = amplify(train, test, marks)
    >>> len(amp.ids("m", "train.biased")), len(amp.ids("m", "test.anti_biased"))
    (60, 10)
    """
    if eval is None:
        raise ParameterError(
            "The 'eval' argument is needed: an anti-biased test split is made from the "
            "evaluation split's marks (run the analysis with --eval)."
        )
    fractions = check_options(
        definitions=definitions, match_to=match_to, q=q, reinsert=reinsert, eval_name=eval_name
    )
    table = collect_marks(marks)
    table, matching = match_marks(table, definitions=definitions, match_to=match_to, q=q)
    out = {}
    for d, info in matching.items():
        t = table[table["definition"] == d]
        anti_train = _aligned(t, "train", train, d)
        anti_eval = _aligned(t, "eval", eval, d)
        biased = ~anti_train
        splits: dict[str, tuple[str, np.ndarray]] = {
            "train.biased": ("train", biased),
            "train.anti_biased": ("train", anti_train),
            "train.random": (
                "train",
                random_subset_mask(len(train), int(biased.sum()), random_state),
            ),
        }
        for f, mask in reinsertion_masks(anti_train, fractions, random_state).items():
            splits[reinsert_name(f)] = ("train", mask)
        splits[f"{eval_name}.biased"] = ("eval", ~anti_eval)
        splits[f"{eval_name}.anti_biased"] = ("eval", anti_eval)
        out[d] = DefinitionSplits(d, splits, info)
    params = {
        "definitions": list(out),
        "match_to": match_to,
        "q": q,
        "reinsert": list(fractions),
        "eval_name": eval_name,
        "random_state": random_state,
    }
    return AmplifiedSplits(train, eval, out, params)


def check_options(
    *,
    definitions: Sequence[str] | None = None,
    match_to: str | None = "auto",
    q: float | None = None,
    reinsert: Sequence[float] = REINSERT_FRACTIONS,
    eval_name: str = "test",
    marked: Sequence[str] | None = None,
) -> tuple[float, ...]:
    """The options of :func:`amplify`, checked before any work; the reinsertion fractions.

    ``marked`` names the definitions the marks will hold (the
    :meth:`~spurious.analysis.Analysis.mark_definitions` of the analyses about to run):
    ``definitions`` and ``match_to`` must be among them. Without it they are checked
    against the marks themselves, by :func:`match_marks`.

    Examples
    --------
    >>> check_options(reinsert=(0.1, 0.5))
    (0.1, 0.5)
    >>> check_options(eval_name="../x")
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'eval_name' argument (--eval-name) must be a split name such as 'test' or 'validation' (letters, digits, _; not 'train'); got '../x'.
    >>> check_options(definitions=["nope"], marked=["cartography"])
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'definitions' argument (--definition) names ['nope'], which the analyses do not mark; they mark ['cartography'].
    """
    if not isinstance(eval_name, str) or not eval_name.isidentifier() or eval_name == "train":
        raise ParameterError(
            "The 'eval_name' argument (--eval-name) must be a split name such as 'test' or "
            f"'validation' (letters, digits, _; not 'train'); got {eval_name!r}."
        )
    fractions = tuple(float(f) for f in reinsert)
    reinsertion_masks(np.zeros(0, dtype=bool), fractions)  # validates the fractions
    if q is not None:
        if not 0.0 <= float(q) <= 1.0:
            raise ParameterError(f"The 'q' argument (--q) must be in [0, 1]; got {q!r}.")
        if match_to not in (None, "auto"):
            raise ParameterError(
                f"Pass either 'q' or 'match_to' (--q or --match-to), not both; got q={q!r}, "
                f"match_to={match_to!r}."
            )
    if marked is not None:
        known = list(dict.fromkeys(marked))
        if not known:
            raise ParameterError(
                "The analyses to run mark no anti-biased examples, so there is nothing to "
                "amplify; run one that does (--analysis cartography or minority)."
            )
        unknown = [d for d in definitions or () if d not in known]
        if unknown:
            raise ParameterError(
                f"The 'definitions' argument (--definition) names {unknown}, which the "
                f"analyses do not mark; they mark {known}."
            )
        if match_to not in (None, "auto") and match_to not in known:
            raise ParameterError(
                "The 'match_to' argument (--match-to) must be 'auto', None ('none') or a "
                f"marked definition {known}; got {match_to!r}."
            )
    return fractions


def amplify_run(
    run: str | os.PathLike[str],
    *,
    train: Dataset | None = None,
    eval: Dataset | None = None,
    **kwargs: Any,
) -> AmplifiedSplits:
    """:func:`amplify` on a run directory written by ``spurious audit`` / ``run`` with --eval.

    The data are re-loaded from the run's manifest (``config.inputs``) and must have the
    fingerprints the manifest recorded; pass ``train`` / ``eval`` when the files moved.

    Parameters
    ----------
    run : path
        The run directory.
    train, eval : Dataset, optional
    **kwargs
        As for :func:`amplify`.

    Returns
    -------
    AmplifiedSplits
        ``source`` records the run directory, its manifest and the analyses' results
        (``source["results"]``, not written to ``summary.json``).
    """
    run_dir = Path(run)
    results, manifest = _load_run_results(run_dir)
    if not results:
        raise ParameterError(
            f"The 'run' argument {str(run_dir)!r} holds no <analysis>/marks.parquet; run an "
            "analysis that marks anti-biased examples (e.g. spurious audit DATA --eval EVAL "
            "--only cartography) into it first."
        )
    datasets_meta = manifest.get("datasets") or {}
    if train is None or eval is None:
        config = manifest.get("config") or {}
        if "inputs" not in config:
            raise ParameterError(
                f"The run directory {str(run_dir)!r} has no manifest config to re-load its "
                "data from; pass 'train' and 'eval' (--data/--eval)."
            )
        from spurious.inputs import load_inputs
        from spurious.rundir import resolve_input_paths

        # Relative paths are relative to where that run started; "<run>/inputs/..." are
        # in-memory data the run stored in its folder.
        cwd = manifest.get("cwd") if isinstance(manifest.get("cwd"), str) else None
        config = resolve_input_paths(config, cwd, run_dir=run_dir)
        ctx = load_inputs(config["inputs"], progress=False)
        train = train if train is not None else ctx.train
        eval = eval if eval is not None else ctx.eval
    for role, ds in (("train", train), ("eval", eval)):
        want = (datasets_meta.get(role) or {}).get("fingerprint")
        if ds is not None and want is not None and ds.fingerprint != want:
            raise DataFormatError(
                f"The {role} data {ds.name!r} has fingerprint {ds.fingerprint}, the run "
                f"{str(run_dir)!r} was made on {want}: the marks belong to other data. Pass "
                "the data the run used."
            )
    amp = amplify(train, eval, results, **kwargs)
    amp.source = {
        "run": os.fspath(run_dir),
        "analyses": sorted({amp.definitions[d].matching["analysis"] for d in amp.definitions}),
        "manifest": {k: manifest[k] for k in ("datasets", "config") if k in manifest},
    }
    amp.results = results
    return amp
