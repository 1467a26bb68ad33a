"""The steps of a ``fairness`` run, each turning one part of the study into results.

Given the adversary runs (:mod:`~spurious.evaluate.fairness.adversaries`,
:mod:`~spurious.evaluate.fairness.qa`) and the models' per-example scores, every step
returns its metrics (the keys of ``Fairness.metric_docs``, in the order they are
reported) and its detail rows. Keys about a model or an adversary are
``<metric>/<model>/<adversary>`` (:func:`~spurious.utils.metric_keys.metric_key`: names in
their own segments, so underscores in them never make a key ambiguous):

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
from spurious.utils.metric_keys import metric_key

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
            sd = float(frac.std(ddof=1)) if len(frac) > 1 else 0.0
            metrics[metric_key(f"{short}_fraction", a)] = float(frac.mean())
            metrics[metric_key(f"{short}_fraction_sd", a)] = sd
            row[short] = float(frac.mean())
            row[f"{short}_sd"] = sd
        own = [r for r in runs if r.name == a]
        row["n_rounds"] = [r.n_rounds for r in own]
        row["seconds"] = round(float(sum(r.seconds for r in own)), 3)
        breakdown.append(row)
    return metrics, breakdown


def matrix_entries(
    mat: Matrix, models: Sequence[str], score: str = "accuracy"
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """The matrix as ``<score>/<model>/<adv>`` metrics (with ``<score>_ci_low``,
    ``<score>_ci_high`` and ``<score>_seed_sd``), one table row per cell (the value under
    ``score``), and each adversary's mean over the models (``mean_<score>/<adv>``).

    ``score`` names what the cells hold: ``"accuracy"`` (classification, multiple
    choice), ``"f1"`` or ``"em"`` (SQuAD F1 / exact match, on a 0-1 scale).

    Examples
    --------
    >>> from spurious.evaluate.fairness.matrix import accuracy_matrix
    >>> mat = accuracy_matrix(np.array([[1.0, 0.0, 1.0, 1.0]]), {"a_b": np.array([[1, 1, 0, 0]]) > 0},
    ...                       models=["m_1"], n_bootstrap=0)
    >>> m, rows = matrix_entries(mat, ["m_1"], "f1")
    >>> m["f1/m_1/none"], m["f1/m_1/a_b"], m["mean_f1/a_b"], rows[1]["f1"]
    (0.75, 0.5, 0.5, 0.5)
    """
    metrics: dict[str, float] = {}
    table = []
    for i, m in enumerate(models):
        for j, a in enumerate(mat.adversaries):
            metrics[metric_key(score, m, a)] = float(mat.accuracy[i, j])
            metrics[metric_key(f"{score}_ci_low", m, a)] = float(mat.ci_low[i, j])
            metrics[metric_key(f"{score}_ci_high", m, a)] = float(mat.ci_high[i, j])
            metrics[metric_key(f"{score}_seed_sd", m, a)] = float(mat.seed_sd[i, j])
            table.append(
                {
                    "model": m,
                    "adversary": a,
                    score: float(mat.accuracy[i, j]),
                    "ci_low": float(mat.ci_low[i, j]),
                    "ci_high": float(mat.ci_high[i, j]),
                    "seed_sd": float(mat.seed_sd[i, j]),
                }
            )
    for j, a in enumerate(mat.adversaries):
        metrics[metric_key(f"mean_{score}", a)] = float(np.nanmean(mat.accuracy[:, j]))
    return metrics, table


def em_entries(
    mat_em: Matrix, models: Sequence[str]
) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """QA: the exact-match matrix beside F1 (F1 is the main matrix's score)."""
    return matrix_entries(mat_em, models, "em")


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
            metrics[metric_key("rank", m, a)] = v
    ranking = []
    # Each row's numbers apart from its adversary's name, for the lowest-tau test below.
    tests: list[dict[str, float]] = []
    for j, a in enumerate(mat.adversaries[1:], start=1):
        boot_ok = mat.boot.shape[0] > 0
        ra = rank_agreement(
            mat.accuracy[:, 0],
            mat.accuracy[:, j],
            mat.boot[:, :, 0] if boot_ok else None,
            mat.boot[:, :, j] if boot_ok else None,
            confidence=confidence,
        )
        for k, v in ra.items():  # kendall_tau[_ci_low|_ci_high], spearman[...]
            metrics[metric_key(k, a)] = v
        # The null "the adversary selects at random": tau of random subsets of the
        # AF-selected size (the same resampling seed for every adversary).
        null = random_subset_null(
            correct, mat.n_selected[j], ra["kendall_tau"], n_draws=n_draws,
            random_state=random_state,
        )  # fmt: skip
        metrics[metric_key("kendall_tau_null_p", a)] = null["p_value"]
        metrics[metric_key("kendall_tau_null_median", a)] = null["null_tau_median"]
        tests.append({**ra, **{f"null_{k}": v for k, v in null.items()}})
        ranking.append({"adversary": a, **tests[-1]})
    finite = [t for t in tests if math.isfinite(t["kendall_tau"])]
    lowest = min(finite, key=lambda t: t["kendall_tau"]) if finite else None
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
            metrics[metric_key("family_rank_change", m, a)] = v
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
            metrics[metric_key(f"agreement_{short}", a)] = by_a[code]["mean"]
            metrics[metric_key(f"agreement_{short}_ci_low", a)] = by_a[code]["ci_low"]
            metrics[metric_key(f"agreement_{short}_ci_high", a)] = by_a[code]["ci_high"]
            metrics[metric_key(f"entropy_{short}", a)] = by_e[code]["mean"]
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
