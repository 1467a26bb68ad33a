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
from spurious.utils.validation import check_params

if TYPE_CHECKING:  # pragma: no cover
    from spurious.context import RunContext

logger = logging.getLogger(__name__)

__all__ = [
    "PAPER_TABLE3",
    "STAGES",
    "AdversaryRun",
    "adversary_names",
    "check_adversaries",
    "check_aflite_params",
    "run_adversaries",
]

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


#: AFLite parameters that fairness sets itself, per adversary and seed.
RESERVED_AFLITE_PARAMS = ("mode", "features", "random_state", "view")


def check_aflite_params(
    aflite_params: Mapping[str, Any] | None, reserved: Sequence[str] = RESERVED_AFLITE_PARAMS
) -> dict[str, Any]:
    """``aflite_params`` with PAPER_TABLE3 for ``None``; every key a settable AFLite parameter.

    Examples
    --------
    >>> check_aflite_params({"n_partitions": 8})
    {'n_partitions': 8}
    >>> check_aflite_params({"n_partitons": 8})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'aflite_params' parameter names unknown AFLite parameter(s) ['n_partitons']; settable: [...].
    """
    from spurious.detectors.aflite import AFLite

    params = dict(PAPER_TABLE3 if aflite_params is None else aflite_params)
    for key in reserved:
        if key in params:
            raise ParameterError(
                f"The 'aflite_params' parameter may not set {key!r}; it is set per "
                "adversary and seed (use 'adversaries', 'seeds', 'view')."
            )
    settable = sorted(set(AFLite().get_params(deep=False)) - set(reserved))
    unknown = sorted(set(params) - set(settable))
    if unknown:
        raise ParameterError(
            f"The 'aflite_params' parameter names unknown AFLite parameter(s) {unknown}; "
            f"settable: {settable}."
        )
    try:
        check_params({k: AFLite._parameter_constraints[k] for k in params}, params, "AFLite")
    except ParameterError as e:
        raise ParameterError(f"The 'aflite_params' parameter: {e}") from None
    return params


def check_adversaries(
    ctx: RunContext,
    adversaries: Sequence[Any] | Mapping[str, Any],
    seeds: Sequence[int],
    *,
    aflite_params: Mapping[str, Any] | None = None,
    view: str = "full",
) -> None:
    """What :func:`run_adversaries` would refuse, before any work: every adversary's AFLite
    (its representation, the parameters, their fit to the data) is built and checked."""
    params = {"n_shuffles": 0, **check_aflite_params(aflite_params)}
    for name, specs in adversary_names(adversaries).items():
        for spec in specs if isinstance(specs, list) else [specs]:
            aflite = _aflite(spec, view, int(seeds[0]), params)
            try:
                aflite.validate_params()
            except ParameterError as e:
                raise ParameterError(
                    f"The 'adversaries' parameter (--adversary) names {name!r} = {spec!r}, "
                    f"which AFLite cannot use: {e}"
                ) from None
            aflite.check(ctx)


def _aflite(spec: Any, view: str, seed: int, params: Mapping[str, Any]) -> Any:
    """AFLite in evaluation-set mode for one representation and seed."""
    from spurious.detectors.aflite import AFLite

    return AFLite(mode="eval", features=spec, view=view, random_state=seed, **params)


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
    from spurious.utils.progress import step_bar

    params = check_aflite_params(aflite_params)
    names = adversary_names(adversaries)
    code = {s: i for i, s in enumerate(STAGES)}
    ids = ctx.split("eval").ids
    runs: list[AdversaryRun] = []
    n_specs = sum(len(v) if isinstance(v, list) else 1 for v in names.values())
    # One step per AFLite run; each run shows its own rounds below this line.
    with step_bar("fairness: adversary runs", n_specs * len(seeds), enabled=ctx.progress,
                  unit="run") as bar:  # fmt: skip
        for name, specs in names.items():
            for rep, spec in enumerate(specs if isinstance(specs, list) else [specs]):
                runs.extend(_runs_of(ctx, name, spec, rep, seeds, params, view, ids, code, bar))
    return runs


def _runs_of(ctx, name, spec, rep, seeds, params, view, ids, code, bar) -> list[AdversaryRun]:
    """AFLite runs of one representation of one adversary, one per AFLite seed (``bar``
    advances by one per run)."""

    runs: list[AdversaryRun] = []
    for seed in seeds:
        bar.set_postfix_str(f"{name} seed {seed}")
        start = time.perf_counter()
        # Only AFLite's filtering is used here, so its shuffled-label verdict is skipped.
        params = {"n_shuffles": 0, **params}
        res = _aflite(spec, view, int(seed), params).run(context=ctx)
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
        bar.update(1)
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
