"""What an AFLite run returns: per-example scores, example rows, metrics and details.

:func:`side_scores` turns one side's history (training or evaluation examples) into the
result's score table; :func:`report_examples` picks the removed and kept examples the
report shows; :func:`filter_output` assembles metrics, details and the summary of the
filtering (the verdict's evidence is added by
:mod:`~spurious.detectors.aflite.verdict`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from spurious.analysis import AnalysisOutput
from spurious.data.dataset import Dataset
from spurious.detectors.aflite.algorithm import (
    HIST_BINS,
    STAGES,
    STREAM_EXAMPLES,
    mean_or_none,
    round_rng,
)
from spurious.detectors.aflite.checkpoint import FilterState, SideState
from spurious.exceptions import AnalysisError
from spurious.models.partition import PartitionModel
from spurious.utils.io import to_jsonable

if TYPE_CHECKING:  # the protocol the analysis passing itself satisfies
    from spurious.detectors.aflite.settings import AFLiteSettings

#: Why filtering stopped, in words (``details["stop_reason_text"]``).
STOP_TEXT = {
    "tau": "fewer than k={k} examples reached p >= {tau}",
    "target_size": "at most n={n} examples remain",
    "eval_exhausted": "every evaluation example was filtered",
    "max_rounds": "round budget (max_rounds) reached",
}


def side_scores(side: SideState, ds: Dataset) -> pd.DataFrame:
    """The score table of one side's examples (the columns of ``AFLite.score_columns``)."""
    names = np.asarray(ds.label_names, dtype=object)
    rr = side.removed_round
    stage = np.where(rr < 0, STAGES[2], np.where(rr == 1, STAGES[0], STAGES[1]))
    cols: dict[str, Any] = {
        "id": ds.ids,
        "label": names[ds.labels],
        "aflite_score": side.last_p,
        "is_aflite_issue": rr >= 0,
        "removed_round": rr.astype(np.int64),
        "stage": stage.astype(object),
        "times_held_out": side.times_held_out,
        "times_correct": side.times_correct,
    }
    for r, p in enumerate(side.p_rounds, start=1):
        cols[f"p_round_{r}"] = p.astype(np.float64)
    return pd.DataFrame(cols)


def report_examples(
    scores: pd.DataFrame, ds: Dataset, entropy: int, n_examples: int
) -> dict[str, list]:
    """A few removed (earliest, most predictable first) and kept (random) examples."""
    fields = list(ds.task.text_fields)
    removed = scores.index[scores["is_aflite_issue"]].to_numpy()
    order = np.lexsort(
        (
            -scores["aflite_score"].to_numpy()[removed],
            scores["removed_round"].to_numpy()[removed],
        )
    )
    removed = removed[order[:n_examples]]
    kept = scores.index[~scores["is_aflite_issue"]].to_numpy()
    rng = round_rng(entropy, 0, STREAM_EXAMPLES)
    kept = np.sort(kept[rng.permutation(len(kept))[:n_examples]])

    def rows(idx: np.ndarray) -> list[dict[str, Any]]:
        out = []
        for i in idx:
            ex = {"id": str(scores["id"].iloc[i]), "label": str(scores["label"].iloc[i])}
            ex.update({f: ds.frame[f].iloc[i] for f in fields})
            if "options" in ds.frame and ds.task.multiple_choice:
                # One line of lettered options: the report shows the item as it was asked.
                opts = ds.frame["options"].iloc[i]
                ex["options"] = " | ".join(f"{chr(65 + j)}) {o}" for j, o in enumerate(opts))
            ex["aflite_score"] = float(scores["aflite_score"].iloc[i])
            ex["removed_round"] = int(scores["removed_round"].iloc[i])
            out.append(ex)
        return out

    return {"removed_examples": rows(removed), "kept_examples": rows(kept)}


def filter_output(
    af: AFLiteSettings,
    state: FilterState,
    train_scores: pd.DataFrame,
    dataset: Dataset,
    eval_dataset: Dataset | None,
    sizes: tuple[int, int, int],
    feat_config: dict[str, Any],
    model: PartitionModel,
    fps: dict[str, str],
) -> AnalysisOutput:
    """Scores, metrics, details and summary of the filtering (``af`` is the analysis)."""
    t, k, n_target = sizes
    n0 = len(dataset)
    n_final = int((state.train.removed_round < 0).sum())
    metrics: dict[str, float] = {
        "n_initial": n0,
        "n_final": n_final,
        "n_removed": n0 - n_final,
        "removed_fraction": (n0 - n_final) / n0,
        "n_rounds": state.rounds_done,
        "train_size": t,
        "slice_size": k,
        "target_size": n_target,
    }
    for h in state.history:
        metrics[f"mean_p_round_{h['round']}"] = nan_if_none(h["mean_p"])
    if state.train.p_rounds:
        last = state.train.p_rounds[-1][state.train.removed_round < 0]
        metrics["mean_p_final"] = nan_if_none(mean_or_none(last.astype(np.float64)))
    stop = state.stop_reason or "max_rounds"
    details: dict[str, Any] = {
        "mode": "train" if eval_dataset is None else "eval",
        "stop_reason": stop,
        "stop_reason_text": STOP_TEXT[stop].format(k=k, tau=af.tau, n=n_target),
        "n_partitions": af.n_partitions,
        "train_size": t,
        "slice_size": k,
        "target_size": n_target,
        "tau": af.tau,
        "selection": af.selection,
        "entropy": str(state.entropy),
        "rounds": state.history,
        "hist_edges": np.linspace(0.0, 1.0, HIST_BINS + 1).round(4).tolist(),
        "sizes": [n0] + [h["n_after"] for h in state.history],
        "featurizer": feat_config,
        "model": jsonable_config(model),
        "label_names": list(dataset.label_names),
        "text_fields": list(dataset.task.text_fields),
        "group_by": af.group_by,
    }
    if eval_dataset is None:
        scores = train_scores
        details.update(report_examples(scores, dataset, state.entropy, af.n_examples))
        details["baselines"] = size_matched_baselines(n_final, n0, "training set")
        summary = (
            f"kept {n_final:,} of {n0:,} examples (removed {(n0 - n_final) / n0:.1%}) "
            f"in {state.rounds_done} round(s); stop: {details['stop_reason_text']}"
        )
    else:
        if state.eval is None:  # an evaluation split always gets its side (initial_state)
            raise AnalysisError("AFLite's state has no evaluation side for the evaluation split.")
        scores = side_scores(state.eval, eval_dataset)
        rr = state.eval.removed_round
        n_eval = len(eval_dataset)
        first, later, kept = int((rr == 1).sum()), int((rr > 1).sum()), int((rr < 0).sum())
        metrics.update(
            n_eval=n_eval,
            n_eval_filtered_first_round=first,
            n_eval_filtered_later_rounds=later,
            n_eval_selected=kept,
            eval_selected_fraction=kept / n_eval,
        )
        for h in state.history:
            metrics[f"mean_p_eval_round_{h['round']}"] = nan_if_none(h.get("mean_p_eval"))
        details["stages"] = {STAGES[0]: first, STAGES[1]: later, STAGES[2]: kept}
        details["eval_sizes"] = [n_eval] + [h["n_eval_after"] for h in state.history]
        details.update(report_examples(scores, eval_dataset, state.entropy, af.n_examples))
        details["baselines"] = size_matched_baselines(kept, n_eval, "evaluation set")
        summary = (
            f"AF-selected {kept:,} of {n_eval:,} evaluation examples ({kept / n_eval:.1%}); "
            f"{first:,} filtered in round 1, {later:,} in later rounds; "
            f"{state.rounds_done} round(s) on {n0:,} training examples "
            f"(kept {n_final:,}); stop: {details['stop_reason_text']}"
        )
    return AnalysisOutput(
        scores=scores, metrics=metrics, summary=summary, details=details, fingerprints=fps
    )


def nan_if_none(v: float | None) -> float:
    """``v`` as a float, NaN for ``None`` (metrics are floats)."""
    return math.nan if v is None else float(v)


def jsonable_config(model: Any) -> dict[str, Any]:
    """The model family's config as plain JSON (its class name when it has none)."""
    cfg = model.config() if hasattr(model, "config") else {"model": type(model).__name__}
    return to_jsonable(dict(cfg))


def size_matched_baselines(size: int, n: int, what: str) -> dict[str, Any]:
    """Size-matched baselines of paper 000 Sec. 4.2 (computed by the experiment scripts)."""
    return {
        "random_subset": {
            "size": size,
            "of": n,
            "how": f"a uniform random subset of the {what} of the same size "
            "(spurious.detectors.aflite.baselines.random_subset_baseline)",
        },
        "one_shot_filter": {
            "size": size,
            "of": n,
            "how": "one classifier, one round: the most predictable examples removed down to "
            "the same size (spurious.detectors.aflite.baselines.one_shot_filter_baseline)",
        },
    }
