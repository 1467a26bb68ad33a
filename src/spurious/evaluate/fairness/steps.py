"""The steps of a ``fairness`` run, each turning one part of the study into results.

Given the adversary runs (:mod:`~spurious.evaluate.fairness.adversaries`,
:mod:`~spurious.evaluate.fairness.qa`) and the models' per-example scores, every step
returns its metrics (the keys of ``Fairness.metric_docs``, in the order they are
reported) and its detail rows:

- :func:`stage_breakdown`: the share of each filter stage per adversary (Fig. 1);
- :func:`matrix_entries` and :func:`em_entries`: the model x adversary matrix
  (Fig. 2/7; exact match beside F1 on QA);
- :func:`ranking_entries`: ranks, rank correlation with the unfiltered ranking and its
  test against random subsets (Fig. 3);
- :func:`family_entries`: the same-family rank change (Fig. 4);
- :func:`agreement_entries`: the annotators' agreement and entropy per stage (Fig. 5/9);
- :func:`example_scores`: the per-example score frame.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from spurious.evaluate.fairness.adversaries import STAGES, AdversaryRun
from spurious.evaluate.fairness.agreement import agreement_by_stage
from spurious.evaluate.fairness.matrix import Matrix
from spurious.evaluate.fairness.ranking import (
    family_rank_change,
    random_subset_null,
    rank_agreement,
    ranks,
)

__all__ = [
    "STAGE_SHORT",
    "agreement_entries",
    "em_entries",
    "example_scores",
    "family_entries",
    "matrix_entries",
    "ranking_entries",
    "stage_breakdown",
]

#: The stages' short names in metric keys, by stage code (0, 1, 2).
STAGE_SHORT = ("first_round", "later", "selected")


def stage_breakdown(
    stages: Mapping[str, np.ndarray], runs: Sequence[AdversaryRun], names: Mapping[str, Any]
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Fig. 1: each stage's share of the evaluation set per adversary (mean and sd over seeds)."""
    metrics: dict[str, float] = {}
    breakdown = []
    for a, s in stages.items():
        row: dict[str, Any] = {"adversary": a, "spec": str(names[a])}
        for code, short in enumerate(STAGE_SHORT):
            frac = (s == code).mean(axis=1)
            metrics[f"{short}_fraction_{a}"] = float(frac.mean())
            metrics[f"{short}_fraction_{a}_sd"] = float(frac.std(ddof=1)) if len(frac) > 1 else 0.0
            row[short] = float(frac.mean())
            row[f"{short}_sd"] = metrics[f"{short}_fraction_{a}_sd"]
        own = [r for r in runs if r.name == a]
        row["n_rounds"] = [r.n_rounds for r in own]
        row["seconds"] = round(float(sum(r.seconds for r in own)), 3)
        breakdown.append(row)
    return metrics, breakdown


def matrix_entries(
    mat: Matrix, models: Sequence[str]
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """The matrix as ``acc_<model>_<adv>`` metrics (with interval and seed sd), one table
    row per cell, and each adversary's mean over the models."""
    metrics: dict[str, float] = {}
    table = []
    for i, m in enumerate(models):
        for j, a in enumerate(mat.adversaries):
            key = f"acc_{m}_{a}"
            metrics[key] = float(mat.accuracy[i, j])
            metrics[f"{key}_ci_low"] = float(mat.ci_low[i, j])
            metrics[f"{key}_ci_high"] = float(mat.ci_high[i, j])
            metrics[f"{key}_seed_sd"] = float(mat.seed_sd[i, j])
            table.append(
                {
                    "model": m,
                    "adversary": a,
                    "accuracy": float(mat.accuracy[i, j]),
                    "ci_low": float(mat.ci_low[i, j]),
                    "ci_high": float(mat.ci_high[i, j]),
                    "seed_sd": float(mat.seed_sd[i, j]),
                }
            )
    for j, a in enumerate(mat.adversaries):
        metrics[f"mean_acc_{a}"] = float(np.nanmean(mat.accuracy[:, j]))
    return metrics, table


def em_entries(
    mat_em: Matrix, models: Sequence[str]
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """QA: the exact-match matrix beside F1 (F1 is the main matrix's score)."""
    metrics: dict[str, float] = {}
    em_table = []
    for i, m in enumerate(models):
        for j, a in enumerate(mat_em.adversaries):
            metrics[f"em_{m}_{a}"] = float(mat_em.accuracy[i, j])
            em_table.append(
                {"model": m, "adversary": a, "em": float(mat_em.accuracy[i, j]),
                 "ci_low": float(mat_em.ci_low[i, j]),
                 "ci_high": float(mat_em.ci_high[i, j]),
                 "seed_sd": float(mat_em.seed_sd[i, j])}
            )  # fmt: skip
    return metrics, em_table


def ranking_entries(
    mat: Matrix,
    models: Sequence[str],
    correct: np.ndarray,
    *,
    confidence: float,
    n_draws: int,
    random_state: int | None,
) -> tuple[dict[str, float], dict[str, dict[str, float]], list[dict[str, Any]]]:
    """Ranks per adversary, and each AF-selected ranking against the unfiltered one.

    Returns the metrics, the ranks (``{adversary: {model: rank}}``) and one row per
    adversary with its Kendall / Spearman correlations, their bootstrap intervals and
    the test against random subsets of the AF-selected size.
    """
    metrics: dict[str, float] = {}
    rank_table: dict[str, dict[str, float]] = {}
    for j, a in enumerate(mat.adversaries):
        r = ranks(mat.accuracy[:, j])
        rank_table[a] = dict(zip(models, r.tolist(), strict=True))
        for m, v in rank_table[a].items():
            metrics[f"rank_{m}_{a}"] = v
    ranking = []
    for j, a in enumerate(mat.adversaries[1:], start=1):
        boot_ok = mat.boot.shape[0] > 0
        ra = rank_agreement(
            mat.accuracy[:, 0],
            mat.accuracy[:, j],
            mat.boot[:, :, 0] if boot_ok else None,
            mat.boot[:, :, j] if boot_ok else None,
            confidence=confidence,
        )
        for k, v in ra.items():
            metrics[k.replace("kendall_tau", f"kendall_tau_{a}").replace(
                "spearman", f"spearman_{a}"
            )] = v  # fmt: skip
        # The null "the adversary selects at random": tau of random subsets of the
        # AF-selected size (the same resampling seed for every adversary).
        null = random_subset_null(
            correct, mat.n_selected[j], ra["kendall_tau"], n_draws=n_draws,
            random_state=random_state,
        )  # fmt: skip
        metrics[f"kendall_tau_{a}_null_p"] = null["p_value"]
        metrics[f"kendall_tau_{a}_null_median"] = null["null_tau_median"]
        ranking.append({"adversary": a, **ra, **{f"null_{k}": v for k, v in null.items()}})
    finite = [r for r in ranking if math.isfinite(r["kendall_tau"])]
    lowest = min(finite, key=lambda r: r["kendall_tau"]) if finite else None
    metrics["min_kendall_tau"] = lowest["kendall_tau"] if lowest else math.nan
    if lowest is not None:
        # The lowest of several taus is tested with a Bonferroni correction.
        p_low = lowest.get("null_p_value", math.nan)
        metrics["min_kendall_tau_ci_low"] = lowest.get("kendall_tau_ci_low", math.nan)
        metrics["min_kendall_tau_ci_high"] = lowest.get("kendall_tau_ci_high", math.nan)
        metrics["min_kendall_tau_null_p"] = (
            min(1.0, p_low * len(finite)) if math.isfinite(p_low) else math.nan
        )
    return metrics, rank_table, ranking


def family_entries(
    rank_table: Mapping[str, Mapping[str, float]],
    adversaries: Sequence[str],
    families: Mapping[str, str],
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Fig. 4: each model's rank under an adversary of its own family minus its rank
    unfiltered, and their mean."""
    metrics: dict[str, float] = {}
    family_changes = []
    if families:
        changes = family_rank_change(
            rank_table["none"], {a: rank_table[a] for a in adversaries}, families
        )
        for (m, a), v in changes.items():
            metrics[f"family_rank_change_{m}_{a}"] = v
            family_changes.append({"model": m, "adversary": a, "rank_change": v})
        if changes:
            metrics["mean_family_rank_change"] = float(np.mean(list(changes.values())))
    return metrics, family_changes


def agreement_entries(
    agree: np.ndarray,
    entropy: np.ndarray,
    stages: Mapping[str, np.ndarray],
    *,
    n_bootstrap: int,
    confidence: float,
    random_state: int | None,
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """Fig. 5/9: the annotators' agreement (with a bootstrap interval) and label entropy,
    over every annotated example and per adversary and stage."""
    metrics: dict[str, float] = {}
    agreement_rows = []
    metrics["n_annotated"] = float(np.isfinite(agree).sum())
    metrics["agreement_all"] = float(np.nanmean(agree)) if metrics["n_annotated"] else math.nan
    metrics["entropy_all"] = float(np.nanmean(entropy)) if metrics["n_annotated"] else math.nan
    for a, s in stages.items():
        by_a = agreement_by_stage(
            agree, s, n_bootstrap=n_bootstrap, confidence=confidence,
            random_state=random_state,
        )  # fmt: skip
        by_e = agreement_by_stage(entropy, s, n_bootstrap=0)
        for code, short in enumerate(STAGE_SHORT):
            metrics[f"agreement_{short}_{a}"] = by_a[code]["mean"]
            metrics[f"agreement_{short}_{a}_ci_low"] = by_a[code]["ci_low"]
            metrics[f"agreement_{short}_{a}_ci_high"] = by_a[code]["ci_high"]
            metrics[f"entropy_{short}_{a}"] = by_e[code]["mean"]
            agreement_rows.append(
                {
                    "adversary": a,
                    "stage": STAGES[code],
                    "agreement": by_a[code]["mean"],
                    "ci_low": by_a[code]["ci_low"],
                    "ci_high": by_a[code]["ci_high"],
                    "entropy": by_e[code]["mean"],
                    "n": by_a[code]["n"],
                }
            )
    return metrics, agreement_rows


def example_scores(
    ids: Sequence[str],
    gold: Sequence[Any],
    stages: Mapping[str, np.ndarray],
    correct: np.ndarray,
    n_models: int,
    agree: np.ndarray,
) -> pd.DataFrame:
    """Per example: its stage under each adversary, how often it is AF-selected, the
    models' and annotators' view of it, and the fairness score."""
    n = len(ids)
    scores = pd.DataFrame({"id": ids, "label": gold})
    selected_total = np.zeros(n)
    for a, s in stages.items():
        counts_by_stage = np.stack([(s == c).sum(axis=0) for c in range(3)])  # (3, n)
        # most frequent stage; ties go to the later stage (argmax of reversed order)
        mode = 2 - np.argmax(counts_by_stage[::-1], axis=0)
        named = np.array(STAGES, dtype=object)[mode]
        # QA questions without a located answer are never staged (code -1)
        named[counts_by_stage.sum(axis=0) == 0] = "not_staged"
        scores[f"stage_{a}"] = named
        scores[f"selected_share_{a}"] = (s == 2).mean(axis=0)
        selected_total += (s == 2).sum(axis=0)
    scores["models_correct"] = correct.mean(axis=0) if n_models else np.nan  # QA: mean F1
    scores["annotator_agreement"] = agree
    scores["fairness_score"] = selected_total / sum(len(s) for s in stages.values())
    scores["is_fairness_issue"] = scores["fairness_score"].to_numpy() >= 0.5
    return scores
