"""The filtering loop of paper 000 Alg. 1 (and paper 004 App. A Alg. 1) on a run's state.

:func:`run_identity` says what a checkpoint must match to be resumed and
:func:`initial_state` starts fresh or resumes from ``checkpoint_dir``;
:func:`filter_rounds` runs rounds until a stop rule (or the round budget) hits, saving
the state after each; :func:`filter_round` is one round (partitions, predictability,
the slice removed, the evaluation examples filtered) and :func:`record_round` writes a
round's predictions into one side's history. The building blocks are in
:mod:`~spurious.detectors.aflite.algorithm`, the state in
:mod:`~spurious.detectors.aflite.checkpoint`.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.detectors.aflite.algorithm import (
    STREAM_PARTITIONS,
    STREAM_SELECT,
    chunk_partitions,
    mean_or_none,
    p_histogram,
    predictability,
    prepare_start,
    round_rng,
    sample_partitions,
    score_partitions,
    select_slice,
)
from spurious.detectors.aflite.checkpoint import (
    FilterState,
    SideState,
    clear_checkpoint,
    load_checkpoint,
    read_identity,
    save_checkpoint,
)
from spurious.detectors.aflite.outputs import jsonable_config
from spurious.exceptions import AnalysisError
from spurious.execution import Executor
from spurious.models.partition import PartitionModel
from spurious.utils.io import to_jsonable
from spurious.utils.progress import step_bar

if TYPE_CHECKING:  # the protocol the analysis passing itself satisfies
    from spurious.detectors.aflite.settings import AFLiteSettings

logger = logging.getLogger(__name__)


def run_identity(
    af: AFLiteSettings,
    dataset: Dataset,
    eval_dataset: Dataset | None,
    model: PartitionModel,
    feat_config: dict[str, Any],
    fps: dict[str, str],
    sizes: tuple[int, int, int],
) -> dict[str, Any]:
    """What a checkpoint must match to be resumed (not the run budget or executor)."""
    skip = {"checkpoint_dir", "checkpoint_mismatch", "executor", "chunk_size", "max_rounds",
            "features", "model", "n_examples"}  # fmt: skip
    params = {k: v for k, v in af.params_for_json().items() if k not in skip}
    return {
        "params": params,
        "sizes": list(sizes),
        "model": jsonable_config(model),
        "featurizer": feat_config,
        "dataset": dataset.fingerprint,
        "eval_dataset": None if eval_dataset is None else eval_dataset.fingerprint,
        **fps,
    }


def initial_state(
    af: AFLiteSettings, identity: dict[str, Any], n_train: int, n_eval: int | None
) -> FilterState:
    """A fresh state, or the one saved in ``af.checkpoint_dir`` when it is this run's."""
    fresh = FilterState(
        entropy=(
            int(af.random_state)
            if af.random_state is not None
            else int(np.random.SeedSequence().entropy)
        ),
        train=SideState.empty(n_train),
        eval=None if n_eval is None else SideState.empty(n_eval),
    )
    if af.checkpoint_dir is None:
        return fresh
    directory = Path(af.checkpoint_dir)
    stored = read_identity(directory)
    if stored is None:
        return fresh
    current = to_jsonable(identity)
    if stored != current:
        diff = sorted(
            key for key in set(stored) | set(current) if stored.get(key) != current.get(key)
        )
        if af.checkpoint_mismatch == "restart":
            logger.warning(
                "AFLite checkpoint in %s is from a different run (%s differ); starting over",
                directory,
                diff,
            )
            clear_checkpoint(directory)
            return fresh
        raise AnalysisError(
            f"The AFLite checkpoint in {str(directory)!r} belongs to a different run: "
            f"{', '.join(diff)} differ ({_describe_diff(stored, current, diff)}). Use another "
            "checkpoint_dir, or pass checkpoint_mismatch='restart' to discard it."
        )
    state = load_checkpoint(directory)
    state.resumed_from = state.rounds_done
    logger.info("aflite: resumed from round %d of %s", state.rounds_done, directory)
    return state


def filter_rounds(
    af: AFLiteSettings,
    state: FilterState,
    X: Any,
    y: np.ndarray,
    codes: np.ndarray,
    sizes: tuple[int, int, int],
    model: PartitionModel,
    executor: Executor,
    identity: dict[str, Any],
    n_classes: int,
    progress: bool,
) -> None:
    """Run rounds on ``state`` in place until a stop rule (or the round budget) hits."""
    if state.stop_reason is not None:
        return
    t, k, n_target = sizes
    n_train = len(state.train.removed_round)  # X holds the evaluation rows after these
    shared = None
    m = af.n_partitions
    chunk = chunk_partitions(m, af.chunk_size, executor.n_workers, model)
    bound = (
        state.rounds_done
        + max(0, (int((state.train.removed_round < 0).sum()) - n_target)) // max(k, 1)
        + 1
    )
    total = min(bound, af.max_rounds) if af.max_rounds else bound
    bar = step_bar("aflite: rounds", total, enabled=progress, unit="round",
                   initial=state.rounds_done)  # fmt: skip
    try:
        while True:
            S = state.train.remaining
            R = state.eval.remaining + n_train if state.eval is not None else None
            if len(S) <= n_target:
                state.stop_reason = "target_size"
                break
            if R is not None and len(R) == 0:
                state.stop_reason = "eval_exhausted"
                break
            if af.max_rounds is not None and state.rounds_done >= af.max_rounds:
                logger.info("aflite: stopping at the round budget max_rounds=%d", af.max_rounds)
                break
            r = state.rounds_done + 1
            if shared is None:
                bar.set_postfix_str("preparing the partition models' shared start")
                # The model's shared start (pooled fit + preconditioner of the
                # batched model) is built once per run on D, not once per round.
                # Planned from D alone (not from the rounds done): a resumed run
                # builds the same start.
                planned = max(0, n_train - n_target) // max(k, 1) + 1
                if af.max_rounds:
                    planned = min(planned, af.max_rounds)
                start = prepare_start(model, X, y, n_train, t, n_classes, n_fits=m * planned)
                shared = executor.put(
                    {"X": X, "y": y, "model": model, "n_classes": n_classes,
                     "start": start}
                )  # fmt: skip
                bar.set_postfix(size=len(S))
            filter_round(af, state, r, S, R, codes, sizes, executor, shared, chunk)
            if af.checkpoint_dir is not None:
                save_checkpoint(af.checkpoint_dir, identity, state)
            bar.update(1)
            bar.set_postfix(size=len(state.train.remaining))
            if state.stop_reason is not None:
                break
    finally:
        bar.close()
    if af.checkpoint_dir is not None and state.stop_reason is not None:
        save_checkpoint(af.checkpoint_dir, identity, state)


def filter_round(
    af: AFLiteSettings,
    state: FilterState,
    r: int,
    S: np.ndarray,
    R: np.ndarray | None,
    codes: np.ndarray,
    sizes: tuple[int, int, int],
    executor: Executor,
    shared: Any,
    chunk: int,
) -> None:
    """One filtering phase of Algorithm 1 (plus the evaluation lines of paper 004)."""
    t, k, n_target = sizes
    n_train = len(state.train.removed_round)
    n_total = n_train + (0 if state.eval is None else len(state.eval.removed_round))
    # Re-code the groups of S densely so sample_partitions sees codes in [0, G).
    codes_S = pd.factorize(codes[S])[0]
    pos_train, pos_excl = sample_partitions(
        codes_S, t, af.n_partitions, round_rng(state.entropy, r, STREAM_PARTITIONS)
    )
    # Active rows: S, then R. Partitions index S's positions, which come first.
    rows = S if R is None else np.concatenate([S, R])
    correct, held = score_partitions(
        executor,
        shared,
        None if len(rows) == n_total else rows,  # nothing removed yet: no copy
        pos_train,
        pos_excl,
        chunk,
    )
    p_all = predictability(correct, held)
    p_S = p_all[: len(S)]

    chosen = select_slice(p_S, k, af.tau, af.selection, round_rng(state.entropy, r, STREAM_SELECT))
    with np.errstate(invalid="ignore"):
        n_above = int((p_S >= af.tau).sum())
    chosen = chosen[: max(0, len(S) - n_target)]  # never below n
    record_round(state.train, S, correct[: len(S)], held[: len(S)], p_S, S[chosen], r, n_train)
    entry: dict[str, Any] = {
        "round": r,
        "n_before": len(S),
        "n_scored": int(np.isfinite(p_S).sum()),
        "n_above_tau": n_above,
        "n_removed": len(chosen),
        "n_after": int(len(S) - len(chosen)),
        "mean_p": mean_or_none(p_S),
        "p_hist": p_histogram(p_S),
        "n_excluded_by_groups": int(sum(len(e) for e in pos_excl)),
    }
    if R is not None:  # R: the evaluation side's rows
        if state.eval is None:  # initial_state gives an evaluation split its side
            raise AnalysisError("AFLite's state has no evaluation side for the evaluation rows.")
        p_R = p_all[len(S) :]
        with np.errstate(invalid="ignore"):
            drop = R[p_R >= af.tau] - n_train
        record_round(
            state.eval,
            R - n_train,
            correct[len(S) :],
            held[len(S) :],
            p_R,
            drop,
            r,
            len(state.eval.removed_round),
        )
        entry.update(
            n_eval_before=len(R),
            n_eval_removed=len(drop),
            n_eval_after=int(len(R) - len(drop)),
            mean_p_eval=mean_or_none(p_R),
            p_eval_hist=p_histogram(p_R),
        )
    state.history.append(entry)
    state.rounds_done = r
    n_left = len(S) - len(chosen)
    if n_left <= n_target:
        state.stop_reason = "target_size"
    elif len(chosen) < k:
        state.stop_reason = "tau"
    logger.info(
        "aflite round %d: |S| %d -> %d (%d with p >= %.2f)%s",
        r,
        len(S),
        n_left,
        n_above,
        af.tau,
        "" if R is None else f"; eval {len(R)} -> {entry['n_eval_after']}",
    )


def record_round(
    side: SideState,
    rows: np.ndarray,
    correct: np.ndarray,
    held: np.ndarray,
    p: np.ndarray,
    removed: np.ndarray,
    r: int,
    n: int,
) -> None:
    """Add round ``r``'s predictions of ``rows`` to ``side``; mark ``removed`` as gone in r."""
    side.times_held_out[rows] += held
    side.times_correct[rows] += correct
    scored = np.isfinite(p)
    side.last_p[rows[scored]] = p[scored]
    p_round = np.full(n, np.nan, dtype=np.float32)
    p_round[rows] = p
    side.p_rounds.append(p_round)
    side.removed_round[removed] = r


def _describe_diff(stored: dict[str, Any], current: dict[str, Any], keys: list[str]) -> str:
    parts = []
    for key in keys[:3]:
        a, b = stored.get(key), current.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            sub = sorted(x for x in set(a) | set(b) if a.get(x) != b.get(x))
            parts.append(
                f"{key}: " + ", ".join(f"{x} {a.get(x)!r} -> {b.get(x)!r}" for x in sub[:3])
            )
        else:
            parts.append(f"{key}: {a!r} -> {b!r}")
    return "; ".join(parts)
