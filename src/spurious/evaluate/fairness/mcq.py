"""Paper 004's adversarial filtering on multiple-choice items (task ``mcq``).

An adversary is AFLite in evaluation-set mode whose classifiers score the options of an
item and pick one: a representation of the item's **option blocks**
(:class:`~spurious.features.mcq.OptionFeaturizer`: ``lexical`` cues only, or ``minilm``
embeddings plus the cues) seen through a **view** (``full`` or ``choices_only``; a
choices-only adversary filters the items whose answer the options alone give away), and
the conditional logit over the options
(:class:`~spurious.models.conditional_logit.ConditionalLogit`) as model family. An
adversary spec is ``"<features>:<view>"`` (``"lexical:choices_only"``); a bare
``"<features>"`` uses the analysis' ``view``. The option blocks come from the run's
``option_blocks`` artifact, so every seed (and every other analysis of the run) shares
them.

As in the extractive-QA branch (:mod:`~spurious.evaluate.fairness.qa`): with a training
split, AFLite's classifiers train on it and filter the evaluation split; without one,
the items are split at random into two halves (within each ``group``, e.g. an MMLU
subject, when the data has groups) and **cross-fitted**: the classifiers train on one
half and filter the other, then the halves swap. The models' predictions are letters,
aligned like the gold labels (``spurious.data.predictions.align_predictions``); chance
is per item, ``1/k``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.data.mcq import option_counts
from spurious.evaluate.fairness.adversaries import (
    PAPER_TABLE3,
    STAGES,
    AdversaryRun,
    adversary_names,
)
from spurious.exceptions import ParameterError
from spurious.features.mcq import MC_VIEWS
from spurious.utils.progress import step_bar

if TYPE_CHECKING:  # pragma: no cover
    from spurious.context import RunContext

logger = logging.getLogger(__name__)

__all__ = [
    "MC_ADVERSARIES",
    "is_mc_adversary",
    "item_halves",
    "mc_adversary",
    "mc_chance",
    "run_mc_adversaries",
]

#: The default adversaries on multiple-choice items, weakest first.
MC_ADVERSARIES = ("lexical:choices_only", "lexical:full", "minilm:choices_only", "minilm:full")
#: Option-level representations by name (a sentence-encoder folder works too).
_MC_FEATURES = ("lexical", "minilm")
#: PCA dimensions of the option blocks (the ``option_blocks`` artifact's default).
N_COMPONENTS = 32


def mc_adversary(spec: Any, view: str = "full") -> tuple[str, str]:
    """``(features, view)`` of an MC adversary spec; a ParameterError if it is none.

    Examples
    --------
    >>> mc_adversary("lexical:choices_only"), mc_adversary("minilm", "full")
    (('lexical', 'choices_only'), ('minilm', 'full'))
    """
    if isinstance(spec, str):
        feats, sep, v = spec.rpartition(":")
        if not sep or v not in MC_VIEWS:
            feats, v = spec, view
        if (feats in _MC_FEATURES or os.path.isdir(feats)) and v in MC_VIEWS:
            return feats, v
    raise ParameterError(
        "The 'adversaries' parameter on multiple-choice items takes '<features>:<view>' "
        f"specs with features in {list(_MC_FEATURES)} (or a sentence-encoder folder) and "
        f"view in {list(MC_VIEWS)}, e.g. {list(MC_ADVERSARIES)}. Got {spec!r} instead."
    )


def is_mc_adversary(spec: Any) -> bool:
    """Whether ``spec`` (or every spec of a list of representation seeds) is an MC adversary.

    Examples
    --------
    >>> is_mc_adversary("lexical:full"), is_mc_adversary("bow")
    (True, False)
    """
    specs = spec if isinstance(spec, list) else [spec]
    try:
        for s in specs:
            mc_adversary(s)
    except ParameterError:
        return False
    return bool(specs)


def mc_chance(dataset: Dataset, mask: np.ndarray | None = None) -> float:
    """Mean per-item chance ``1/k`` (over ``mask``'s items when given).

    Examples
    --------
    >>> from spurious.data.synthetic_mcq import make_mcq_artifacts
    >>> mc_chance(make_mcq_artifacts(n=8, n_options=4, random_state=0).dataset)
    0.25
    """
    inv = 1.0 / option_counts(dataset.frame)
    if mask is not None:
        inv = inv[np.asarray(mask, dtype=bool)]
    return float(inv.mean()) if len(inv) else float("nan")


def item_halves(dataset: Dataset, random_state: int = 0) -> np.ndarray:
    """Half (0 or 1) of every item: random, balanced within each group when there are groups.

    Examples
    --------
    >>> from spurious.data.synthetic_mcq import make_mcq_artifacts
    >>> h = item_halves(make_mcq_artifacts(n=10, random_state=0).dataset)
    >>> np.bincount(h).tolist()
    [5, 5]
    """
    n = len(dataset)
    groups = dataset.groups
    codes = np.zeros(n, dtype=np.int64) if groups is None else pd.factorize(groups)[0]
    rng = np.random.default_rng(random_state)
    order = rng.permutation(n)
    # Within each group (in random order) alternate halves, starting at random, so every
    # group, and the whole set, is split as evenly as it can be.
    order = order[np.argsort(codes[order], kind="stable")]
    rank = np.empty(n, dtype=np.int64)
    for g in np.unique(codes):
        members = order[codes[order] == g]
        rank[members] = np.arange(len(members)) + int(rng.integers(2))
    return (rank % 2).astype(np.int64)


def run_mc_adversaries(
    ctx: RunContext,
    adversaries: Sequence[str] | Mapping[str, Any],
    seeds: Sequence[int],
    *,
    aflite_params: Mapping[str, Any] | None = None,
    view: str = "full",
    split_seed: int = 0,
    l2: float = 1.0,
) -> tuple[list[AdversaryRun], dict[str, Any]]:
    """AFLite (evaluation-set mode) on option blocks, per adversary and seed.

    Parameters
    ----------
    ctx : RunContext
        Multiple-choice items: the evaluation split is filtered with classifiers trained on
        the data; without an evaluation split the data is cross-fitted in two halves.
    adversaries : list or mapping name -> spec (or list of specs)
        ``"<features>:<view>"`` specs (:data:`MC_ADVERSARIES`).
    seeds : sequence of int
        AFLite seeds.
    aflite_params : mapping, optional
        AFLite hyperparameters (default :data:`PAPER_TABLE3`; sizes are fractions of the
        training side).
    view : str
        The view of a spec without one.
    split_seed : int
        Seed of the halves (cross-fitting only).
    l2 : float
        Ridge penalty of the conditional logit.

    Returns
    -------
    runs : list of AdversaryRun
        Stages of the judged split's items, in the order adversary x representation x seed.
    info : dict
        ``protocol``, ``folds``, ``features`` per adversary and ``chance``.

    Examples
    --------
    >>> from spurious.context import RunContext
    >>> from spurious.data.synthetic_mcq import make_mcq_artifacts
    >>> s = make_mcq_artifacts(n=200, artifact="length", artifact_rate=0.5, random_state=0)
    >>> runs, info = run_mc_adversaries(RunContext(s.dataset, progress=False),
    ...     ["lexical:choices_only"], [0], aflite_params={"n_partitions": 8, "train_size": 0.2,
    ...     "slice_size": 0.05})
    >>> # the planted items are filtered: the AF-selected ones are mostly unplanted
    >>> bool(s.has_artifact[runs[0].stages == 2].mean() < 0.3)
    True
    """
    from spurious.detectors.aflite import AFLite
    from spurious.models.conditional_logit import ConditionalLogit

    params = dict(PAPER_TABLE3 if aflite_params is None else aflite_params)
    for reserved in ("mode", "features", "model", "random_state", "view"):
        if reserved in params:
            raise ParameterError(
                f"The 'aflite_params' parameter may not set {reserved!r} for multiple-choice "
                "adversaries; it is set per adversary and seed."
            )
    names = adversary_names(adversaries)
    ds = ctx.target
    cross_fit = ctx.eval is None
    folds, protocol = _folds(ds, cross_fit, split_seed, len(ctx.train))
    code = {s: i for i, s in enumerate(STAGES)}
    ids = np.asarray(ds.ids, dtype=object)
    info: dict[str, Any] = {
        "protocol": protocol,
        "task_reduction": "option choice: a conditional logit over each item's options",
        "folds": [{"n_train": len(a), "n_eval": len(b)} for a, b in folds],
        "chance": mc_chance(ds),
        "features": {},
    }
    runs: list[AdversaryRun] = []
    n_specs = sum(len(v) if isinstance(v, list) else 1 for v in names.values())
    bar = step_bar("fairness: option adversary runs", n_specs * len(seeds) * len(folds),
                   enabled=ctx.progress, unit="run")  # fmt: skip
    for name, specs in names.items():
        for rep, spec in enumerate(specs if isinstance(specs, list) else [specs]):
            feats, v = mc_adversary(spec, view)
            bar.set_postfix_str(f"{name}: features")
            t0 = time.perf_counter()
            X_tr, X_ev, d = _blocks(ctx, feats, v, cross_fit)
            build_s = time.perf_counter() - t0
            info["features"][name] = {"spec": str(spec), "features": feats, "view": v,
                                      "n_features": d, "seconds": round(build_s, 2)}  # fmt: skip
            model = ConditionalLogit(d, l2=l2)
            for seed in seeds:
                start = time.perf_counter()
                stages = np.full(len(ds), -1, dtype=np.int8)
                n_rounds: list[int] = []
                metrics: dict[str, float] = {}
                for a, b in folds:
                    bar.set_postfix_str(f"{name} seed {seed} fold {len(n_rounds) + 1}/{len(folds)}")
                    tr = ctx.train if not cross_fit else ds.subset(a, f"{ds.name}[half]")
                    ev = ctx.eval if not cross_fit else ds.subset(b, f"{ds.name}[other half]")
                    # Only the filtering is used (no verdict, so no null is run); its
                    # rounds show below our line.
                    res = AFLite(
                        mode="eval", features=(X_tr[a], X_ev[b]), model=model,
                        random_state=int(seed), **{"n_shuffles": 0, **params},
                    ).run(tr, ev, progress=ctx.progress)  # fmt: skip
                    stage = res.scores.set_index("id")["stage"].reindex(ids[b])
                    stages[b] = stage.map(code).to_numpy()
                    n_rounds.append(int(res.metrics.get("n_rounds", 0)))
                    for k, val in res.metrics.items():
                        metrics[f"fold{len(n_rounds) - 1}_{k}"] = val
                    bar.update(1)
                seconds = time.perf_counter() - start + (build_s if seed == seeds[0] else 0.0)
                runs.append(AdversaryRun(name, spec, int(seed), stages, max(n_rounds), seconds,
                                         metrics, representation=rep))  # fmt: skip
                logger.info(
                    "MC adversary %s seed %d: %d of %d AF-selected (%.1fs)",
                    name, seed, int((stages == 2).sum()), len(ds), seconds,
                )  # fmt: skip
    bar.close()
    return runs, info


def _blocks(
    ctx: RunContext, features: str, view: str, cross_fit: bool
) -> tuple[np.ndarray, np.ndarray, int]:
    """Option blocks of the training and the judged side (one matrix when cross-fitting)."""

    def get(split: str) -> Any:
        return ctx.artifact(
            "option_blocks", features=features, view=view, split=split, n_components=N_COMPONENTS
        )

    train = get("train")
    judged = train if cross_fit else get("eval")
    return train.X, judged.X, int(train.n_features)


def _folds(
    ds: Dataset, cross_fit: bool, split_seed: int, n_train: int
) -> tuple[list[tuple[np.ndarray, np.ndarray]], str]:
    """AFLite's (training rows, filtered rows) pairs and the protocol in words."""
    if not cross_fit:
        # Rows of the training split, then of the evaluation split (each its own positions).
        return [(np.arange(n_train), np.arange(len(ds)))], (
            "AFLite's classifiers train on the training split and filter the evaluation split"
        )
    half = item_halves(ds, split_seed)
    folds = [(np.flatnonzero(half != h), np.flatnonzero(half == h)) for h in (0, 1)]
    by = " within each group" if ds.groups is not None else ""
    return folds, (
        f"cross-fitted halves: items split at random{by} (seed {split_seed}) into two "
        "halves; AFLite's classifiers train on one half and filter the other, then swap"
    )
