"""Adversaries: AFLite in evaluation-set mode, one run per representation Phi and seed.

Each adversary is a featurizer spec (``"bow"``, ``"tfidf"``, ``"minilm"``,
``"finetuned:<dir>"``, a local model folder), or a list of specs that are the *same*
adversary built with different representation seeds (paper 004 Sec. 4: 3 fine-tuning
subsamples x 3 AFLite seeds, e.g. ``["finetuned:ft-s0", "finetuned:ft-s1"]``); every
run goes through the run context, so a representation is built once and shared by all
AFLite seeds (and by the other analyses of the run). The result of one run is a stage code per evaluation example (paper 004 Fig. 1):
0 = filtered in the first round, 1 = filtered in a later round, 2 = AF-selected (kept).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from spurious.detectors.aflite.algorithm import STAGES
from spurious.exceptions import ParameterError

if TYPE_CHECKING:  # pragma: no cover
    from spurious.context import RunContext

logger = logging.getLogger(__name__)

__all__ = ["PAPER_TABLE3", "STAGES", "AdversaryRun", "adversary_names", "run_adversaries"]

#: SNLI's training set size, which paper 004 Table 3's absolute t and k refer to.
SNLI_TRAIN_SIZE = 550_152
#: Paper 004 Table 3 (SNLI column): m=64, t=40K, k=10K, tau=0.75. Our AFLite takes t and
#: k as fractions of the training set, so t and k are the paper's shares of SNLI train
#: (7.27% and 1.82%); AFLite's own defaults are 10% and 2% (paper 000's ratios).
PAPER_TABLE3: dict[str, Any] = {
    "n_partitions": 64,
    "train_size": 40_000 / SNLI_TRAIN_SIZE,
    "slice_size": 10_000 / SNLI_TRAIN_SIZE,
    "tau": 0.75,
}


@dataclass
class AdversaryRun:
    """One AFLite evaluation-set run: an adversary (Phi) and a seed.

    Attributes
    ----------
    name : str
        Adversary name (metric-safe).
    spec : Any
        The featurizer spec given to AFLite.
    seed : int
        AFLite's ``random_state``.
    representation : int
        Index of the representation seed (the position of ``spec`` in the adversary's
        list of specs; 0 for a single spec).
    stages : numpy.ndarray of int8
        Stage code per evaluation example (0 first round, 1 later, 2 AF-selected).
    n_rounds : int
        Rounds AFLite ran.
    seconds : float
        Wall time of the run (features built on first use are included once).
    metrics : dict
        AFLite's own metrics.
    """

    name: str
    spec: Any
    seed: int
    stages: np.ndarray
    n_rounds: int
    seconds: float
    metrics: dict[str, float] = field(default_factory=dict)
    representation: int = 0


def _slug(text: str) -> str:
    return re.sub(r"[^0-9A-Za-z]+", "_", text).strip("_") or "adversary"


def adversary_names(adversaries: Sequence[Any] | Mapping[str, Any]) -> dict[str, Any]:
    """Metric-safe name -> featurizer spec.

    A mapping keeps its names; a list names string specs by their slug
    (``"finetuned:runs/ft"`` -> ``"finetuned_runs_ft"``). In a mapping, a value may be a
    list of specs: one adversary with several representation seeds.

    Examples
    --------
    >>> adversary_names(["bow", "finetuned:runs/ft"])
    {'bow': 'bow', 'finetuned_runs_ft': 'finetuned:runs/ft'}
    >>> adversary_names({"lex": "tfidf", "ft": ["finetuned:s0", "finetuned:s1"]})
    {'lex': 'tfidf', 'ft': ['finetuned:s0', 'finetuned:s1']}
    """
    if isinstance(adversaries, Mapping):
        out = {str(k): list(v) if isinstance(v, tuple) else v for k, v in adversaries.items()}
        empty = [k for k, v in out.items() if isinstance(v, list) and not v]
        if empty:
            raise ParameterError(
                "The 'adversaries' parameter must give each adversary a spec or a non-empty "
                f"list of specs (representation seeds); got an empty list for {empty[0]!r}."
            )
    else:
        out = {}
        for k, spec in enumerate(adversaries):
            name = _slug(spec) if isinstance(spec, str) else f"adversary{k}"
            out[name] = spec
        if len(out) != len(adversaries):
            raise ParameterError(
                "The 'adversaries' parameter names two adversaries the same; got "
                f"{list(adversaries)!r}. Pass a mapping name -> spec instead."
            )
    if not out:
        raise ParameterError("The 'adversaries' parameter must name at least one adversary.")
    if "none" in out:
        raise ParameterError(
            "The 'adversaries' parameter may not name an adversary 'none' (reserved for the "
            "unfiltered set)."
        )
    return out


def run_adversaries(
    ctx: RunContext,
    adversaries: Sequence[Any] | Mapping[str, Any],
    seeds: Sequence[int],
    *,
    aflite_params: Mapping[str, Any] | None = None,
    view: str = "full",
) -> list[AdversaryRun]:
    """Run AFLite in evaluation-set mode for every adversary and seed.

    Parameters
    ----------
    ctx : RunContext
        With a training split (AFLite's classifiers train there) and an evaluation split
        (filtered).
    adversaries : list of specs or mapping name -> spec (or list of specs)
        Representations Phi (see :func:`adversary_names`); a list of specs under one
        name is one adversary with several representation seeds.
    seeds : sequence of int
        AFLite seeds (partitions, tie-breaking).
    aflite_params : mapping, optional
        AFLite hyperparameters (default :data:`PAPER_TABLE3`).
    view : str
        Which text fields the representation sees.

    Returns
    -------
    list of AdversaryRun
        In the order adversary x representation x seed.

    Examples
    --------
    >>> from spurious.context import RunContext
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> tr, ev = make_nli_artifacts(n=300, random_state=0).dataset.split(0.3)
    >>> runs = run_adversaries(RunContext(tr, ev, progress=False), ["bow"], [0],
    ...     aflite_params={"n_partitions": 4, "train_size": 0.3, "max_rounds": 2})
    >>> runs[0].stages.shape == (len(ev),)
    True
    """
    params = dict(PAPER_TABLE3 if aflite_params is None else aflite_params)
    for reserved in ("mode", "features", "random_state", "view"):
        if reserved in params:
            raise ParameterError(
                f"The 'aflite_params' parameter may not set {reserved!r}; it is set per "
                "adversary and seed (use 'adversaries', 'seeds', 'view')."
            )
    names = adversary_names(adversaries)
    code = {s: i for i, s in enumerate(STAGES)}
    ids = ctx.split("eval").ids
    runs: list[AdversaryRun] = []
    for name, specs in names.items():
        for rep, spec in enumerate(specs if isinstance(specs, list) else [specs]):
            runs.extend(_runs_of(ctx, name, spec, rep, seeds, params, view, ids, code))
    return runs


def _runs_of(ctx, name, spec, rep, seeds, params, view, ids, code) -> list[AdversaryRun]:
    """AFLite runs of one representation of one adversary, one per AFLite seed."""
    from spurious.detectors.aflite import AFLite

    runs: list[AdversaryRun] = []
    for seed in seeds:
        start = time.perf_counter()
        # Only AFLite's filtering is used here, so its shuffled-label verdict is skipped.
        params = {"n_shuffles": 0, **params}
        res = AFLite(mode="eval", features=spec, view=view, random_state=int(seed), **params).run(
            context=ctx
        )
        seconds = time.perf_counter() - start
        scores = res.scores.set_index("id").reindex(ids)
        stages = scores["stage"].map(code).to_numpy()
        if np.isnan(stages.astype(float)).any():  # pragma: no cover (AFLite invariant)
            raise RuntimeError(f"AFLite ({name}, seed {seed}) did not stage every example.")
        runs.append(
            AdversaryRun(
                name=name,
                spec=spec,
                seed=int(seed),
                stages=stages.astype(np.int8),
                n_rounds=int(res.metrics.get("n_rounds", 0)),
                seconds=seconds,
                metrics=dict(res.metrics),
                representation=rep,
            )
        )
        logger.info(
            "adversary %s representation %d seed %d: %d of %d AF-selected (%.1fs)",
            name,
            rep,
            seed,
            int((stages == 2).sum()),
            len(ids),
            seconds,
        )
    return runs


def stage_arrays(runs: Sequence[AdversaryRun]) -> dict[str, np.ndarray]:
    """Adversary name -> stage codes of shape (n_representations * n_seeds, n_eval).

    Examples
    --------
    >>> r = [AdversaryRun("a", "bow", s, np.array([0, 2], dtype=np.int8), 1, 0.0) for s in (0, 1)]
    >>> stage_arrays(r)["a"].shape
    (2, 2)
    """
    out: dict[str, list[np.ndarray]] = {}
    for r in runs:
        out.setdefault(r.name, []).append(r.stages)
    return {k: np.vstack(v) for k, v in out.items()}
