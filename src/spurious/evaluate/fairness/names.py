"""What the ``fairness`` analysis' metrics and score columns are called and hold.

Keys about a model or an adversary put each name in its own segment
(``f1/<model>/<adversary>``, :func:`~spurious.utils.metric_keys.metric_key`), so names
with underscores never make a key ambiguous; the first segment says what the number is
(``accuracy``, or on extractive QA ``f1`` and ``em``, SQuAD's scores on a 0-1 scale).
"""

from __future__ import annotations

__all__ = ["METRIC_DOCS", "SCORE_COLUMNS", "SCORE_NAMES"]

#: What the matrix holds, in words (the key is ``details["score"]``). SQuAD scores stay on
#: the 0-1 scale of every other score of the product; the official script and HF
#: ``evaluate``'s ``squad`` metric print them x100.
SCORE_NAMES = {"accuracy": "accuracy", "f1": "SQuAD F1 (0-1)"}

#: ``Fairness.metric_docs``.
METRIC_DOCS: dict[str, str] = {
    "n_eval / n_models / n_adversaries / n_seeds": "Sizes of the study.",
    "chance": "1 / number of classes (multiple choice: the mean of 1/k over the items).",
    "<stage>_fraction/<adv> / <stage>_fraction_sd/<adv>": "Share of the evaluation "
    "set in the stage (first_round, later, selected), mean and sd over seeds.",
    "accuracy/<model>/<adv> / f1/<model>/<adv>": "The model's score on the adversary's "
    "AF-selected set (adv 'none' = full set), mean over seeds: accuracy, or on QA "
    "SQuAD F1 on a 0-1 scale (x100 = the official script's and HF evaluate's scale).",
    "accuracy_ci_low/<model>/<adv> / accuracy_ci_high/<model>/<adv> / "
    "accuracy_seed_sd/<model>/<adv>": "Its bootstrap interval over evaluation examples "
    "and sd over seeds (f1_... and em_... on QA).",
    "f1_ci_low/<model>/<adv> / f1_ci_high/<model>/<adv> / f1_seed_sd/<model>/<adv>": "The "
    "same for SQuAD F1.",
    "em/<model>/<adv> / em_ci_low/<model>/<adv> / em_ci_high/<model>/<adv> / "
    "em_seed_sd/<model>/<adv>": "QA only: SQuAD exact match (0-1) on the AF-selected "
    "set, its interval and seed sd.",
    "mean_accuracy/<adv> / mean_f1/<adv> / mean_em/<adv>": "Mean score of the models on "
    "the adversary's AF-selected set.",
    "rank/<model>/<adv>": "Rank of the model (1 = best) by its score.",
    "kendall_tau/<adv> / spearman/<adv>": "Rank correlation with the unfiltered ranking, [-1, 1].",
    "kendall_tau_ci_low/<adv> / kendall_tau_ci_high/<adv> / spearman_ci_low/<adv> / "
    "spearman_ci_high/<adv>": "Their bootstrap intervals over examples.",
    "min_kendall_tau": "The lowest Kendall tau over adversaries; + _ci_low/_ci_high and "
    "_null_p (against random subsets, Bonferroni over adversaries).",
    "min_kendall_tau_null_p": "That test's p-value.",
    "kendall_tau_null_p/<adv> / kendall_tau_null_median/<adv>": "p-value of the tau "
    "against random subsets of the AF-selected size (one-sided: lower tau) and the "
    "null's median tau.",
    "family_rank_change/<model>/<adv>": "Rank under a same-family adversary minus "
    "unfiltered rank (positive = fell).",
    "mean_family_rank_change": "Its mean.",
    "agreement_<stage>/<adv> / agreement_<stage>_ci_low/<adv> / "
    "agreement_<stage>_ci_high/<adv>": "Mean share of annotator labels equal to gold "
    "(QA: of the other answers equal to the first) among the stage's examples, with "
    "its bootstrap interval.",
    "entropy_<stage>/<adv>": "Mean entropy (bits) of the annotator label distribution.",
    "n_annotated / agreement_all / entropy_all": "The same over every annotated example.",
}

#: ``Fairness.score_columns``.
SCORE_COLUMNS: dict[str, str] = {
    "id": "Evaluation example id.",
    "label": "Gold label.",
    "stage_<adv>": "Most frequent stage over seeds: filtered_first_round, "
    "filtered_later_round or af_selected.",
    "selected_share_<adv>": "Share of the adversary's seeds that AF-select it, [0, 1].",
    "models_correct": "Share of the evaluated models that predict it correctly, [0, 1].",
    "annotator_agreement": "Share of annotator labels equal to gold (NaN: none).",
    "fairness_score": "Share of adversary runs (adversaries x seeds) that AF-select the "
    "example, [0, 1]; higher = more often in an adversarial set.",
    "is_fairness_issue": "AF-selected by at least half of the adversary runs.",
}
