"""The ``fairness`` analysis: paper 004's adversary x model study as a registered analysis.

Adversaries (AFLite in evaluation-set mode over representations Phi and seeds) filter the
evaluation split; the evaluated models are the run's predictions (``--predictions``).
It reports the accuracy matrix with "none" = the full set, the filter-stage breakdown,
ranking stability (Kendall / Spearman against the unfiltered ranking, same-family rank
change) and the annotators' agreement with the gold label per stage.

On an extractive-QA run the same study runs on answer-sentence selection
(:mod:`~spurious.evaluate.fairness.qa`, a documented deviation): QA adversaries, a
conditional-logit model family, cross-fitted article halves when there is no training
split, SQuAD F1 (and EM) as the per-question score, and agreement among the annotators'
answers.
"""

from __future__ import annotations

import itertools
import logging
import math
from collections.abc import Mapping
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from spurious.analysis import (
    Analysis,
    AnalysisOutput,
    Requirements,
    VerdictScale,
    register_analysis,
)
from spurious.context import RunContext
from spurious.evaluate.fairness.adversaries import (
    PAPER_TABLE3,
    STAGES,
    adversary_names,
    run_adversaries,
    stage_arrays,
)
from spurious.evaluate.fairness.agreement import (
    agreement_by_stage,
    counts_from_lists,
    gold_agreement,
    label_entropy,
)
from spurious.evaluate.fairness.families import resolve_families
from spurious.evaluate.fairness.matrix import accuracy_matrix, correctness
from spurious.evaluate.fairness.qa import (
    QA_ADVERSARIES,
    answer_agreement,
    answer_counts,
    run_qa_adversaries,
)
from spurious.evaluate.fairness.ranking import (
    family_rank_change,
    random_subset_null,
    rank_agreement,
    ranks,
)
from spurious.exceptions import DetectorError, ParameterError
from spurious.stats.metrics import qa_scores
from spurious.utils.validation import Interval

__all__ = ["Fairness", "verdict_text"]

logger = logging.getLogger(__name__)

_STAGE_SHORT = ("first_round", "later", "selected")


@register_analysis
class Fairness(Analysis):
    """Are adversarially filtered evaluation sets fair? (paper 004, Sec. 5, App. A-B).

    Parameters
    ----------
    adversaries : list of str or dict of str to str (or to a list of str), optional
        Representations Phi, weakest first: featurizer specs (``"bow"``, ``"tfidf"``,
        ``"minilm"``, ``"finetuned:<dir>"``, a model folder), or ``{name: spec}``;
        ``{name: [spec, spec, ...]}`` is one adversary with several representation seeds
        (e.g. fine-tunes on different warm-up subsamples), each run with every AFLite
        seed; its cells average over representations x seeds.
        Default ``bow, tfidf, minilm``; on a QA run ``qa_position, qa_lexical,
        qa_heuristic`` (:data:`~spurious.evaluate.fairness.qa.QA_ADVERSARIES`, the only
        ones QA accepts; a list with no QA adversary, such as the audit's quick profile,
        falls back to them with a warning).
    seeds : list of int, default=(0, 1, 2)
        AFLite seeds per representation (paper: 3 representation x 3 AFLite seeds;
        frozen representations are deterministic, so for them only AFLite's seeds vary;
        give fine-tuned adversaries a list of specs for representation seeds).
    aflite_params : dict, optional
        AFLite hyperparameters; default paper 004 Table 3 for SNLI (m=64, t=40K/550K,
        k=10K/550K of the training set, tau=0.75; see
        :data:`~spurious.evaluate.fairness.adversaries.PAPER_TABLE3`).
    view : str, default="full"
        Text fields the adversaries' representation sees.
    families : dict of str to str, optional
        Family per model name and adversary name (e.g. both ``"minilm"``) for the
        same-family rank change (paper 004 Fig. 4). Names left out get a family inferred
        from their spec or name where possible
        (:func:`~spurious.evaluate.fairness.families.resolve_families`); the result says
        which were inferred.
    annotations : str, optional
        A JSONL file of annotations per evaluation id (``annotator_labels`` lists or
        ChaosNLI ``label_counter``); default: the split's own ``annotator_labels``.
    n_bootstrap : int, default=1000
        Bootstrap draws over the evaluation examples for every interval.
    confidence : float, default=0.95
    random_state : int, default=0
        Seed of the bootstraps and, on a QA run without a training split, of the article
        halves (AFLite uses ``seeds``).

    Examples
    --------
    >>> Fairness(adversaries=["bow"], seeds=[0]).adversaries
    ['bow']
    """

    name: ClassVar[str] = "fairness"
    kind: ClassVar[str] = "evaluation"
    description: ClassVar[str] = (
        "Accuracy of the given models on evaluation sets adversarially filtered by AFLite "
        "with several representations; ranking stability and annotator agreement per "
        "filter stage (paper 004)."
    )
    # Classification needs its labels and an evaluation split; a QA run needs neither (it
    # cross-fits article halves of the data), so labels are checked in unmet, by task.
    requires: ClassVar[Requirements] = Requirements(eval_split=True, predictions=True)
    metric_docs: ClassVar[dict[str, str]] = {
        "n_eval / n_models / n_adversaries / n_seeds": "Sizes of the study.",
        "chance": "1 / number of classes.",
        "<stage>_fraction_<adv>": "Share of the evaluation set in the stage (first_round, "
        "later, selected), mean over seeds; + _sd over seeds.",
        "acc_<model>_<adv>": "Accuracy on the adversary's AF-selected set (adv 'none' = "
        "full set), mean over seeds; + _ci_low/_ci_high (bootstrap) and _seed_sd.",
        "mean_acc_<adv>": "Mean accuracy of the models on the adversary's AF-selected set.",
        "rank_<model>_<adv>": "Rank of the model (1 = best) by accuracy.",
        "kendall_tau_<adv> / spearman_<adv>": "Rank correlation with the unfiltered "
        "ranking, [-1, 1]; + _ci_low/_ci_high (bootstrap over examples).",
        "min_kendall_tau": "The lowest Kendall tau over adversaries; + _ci_low/_ci_high and "
        "_null_p (against random subsets, Bonferroni over adversaries).",
        "kendall_tau_<adv>_null_p / _null_median": "p-value of the tau against random "
        "subsets of the AF-selected size (one-sided: lower tau) and the null's median tau.",
        "family_rank_change_<model>_<adv>": "Rank under a same-family adversary minus "
        "unfiltered rank (positive = fell).",
        "agreement_<stage>_<adv>": "Mean share of annotator labels equal to gold among the "
        "stage's examples; + _ci_low/_ci_high.",
        "entropy_<stage>_<adv>": "Mean entropy (bits) of the annotator label distribution.",
        "agreement_all / entropy_all": "The same over every annotated example.",
        "em_<model>_<adv>": "QA only: exact match on the AF-selected set (acc_ is SQuAD F1).",
    }
    score_columns: ClassVar[dict[str, str]] = {
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
    #: Headline effect: 1 - the lowest Kendall tau against the unfiltered ranking.
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(
        0.15,
        0.4,
        0.8,
        {
            "none": "adversarial filtering keeps the models' ranking",
            "low": "adversarial filtering slightly reorders the models",
            "moderate": "adversarial filtering reorders the models",
            "high": "adversarial filtering scrambles the models' ranking",
        },
    )
    fast_params: ClassVar[dict[str, Any]] = {
        "adversaries": ["bow", "tfidf"],
        "seeds": [0, 1],
        "aflite_params": {
            "n_partitions": 8,
            "train_size": 0.3,
            "slice_size": 0.1,
            "max_rounds": 3,
        },
        "n_bootstrap": 50,
    }
    profiles: ClassVar[dict[str, dict[str, Any]]] = {
        "quick": {
            "adversaries": ["bow", "tfidf"],
            "seeds": [0],
            "aflite_params": {**PAPER_TABLE3, "n_partitions": 16, "max_rounds": 3},
            "n_bootstrap": 200,
        },
        "full": {},
    }
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "adversaries": [list, tuple, dict, None],
        "seeds": [list, tuple],
        "aflite_params": [dict, None],
        "view": [str],
        "families": [dict, None],
        "annotations": [str, None],
        "n_bootstrap": [Interval(Integral, 0, None, closed="left")],
        "confidence": [Interval(Real, 0, 1, closed="neither")],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
    }

    def __init__(
        self,
        adversaries: list[str] | dict[str, str] | None = None,
        seeds: list[int] = (0, 1, 2),
        aflite_params: dict[str, Any] | None = None,
        view: str = "full",
        families: dict[str, str] | None = None,
        annotations: str | None = None,
        n_bootstrap: int = 1000,
        confidence: float = 0.95,
        random_state: int | None = 0,
    ) -> None:
        self.adversaries = list(adversaries) if isinstance(adversaries, tuple) else adversaries
        self.seeds = list(seeds) if isinstance(seeds, tuple) else seeds
        self.aflite_params = aflite_params
        self.view = view
        self.families = families
        self.annotations = annotations
        self.n_bootstrap = n_bootstrap
        self.confidence = confidence
        self.random_state = random_state

    def validate_params(self) -> None:
        """The declared constraints, then the content of ``seeds`` and ``adversaries``."""
        super().validate_params()
        if not self.seeds or not all(
            isinstance(s, Integral) and not isinstance(s, bool) and s >= 0 for s in self.seeds
        ):
            raise ParameterError(
                "The 'seeds' parameter of Fairness must be a non-empty list of ints >= 0. "
                f"Got {self.seeds!r} instead."
            )
        if len(set(self.seeds)) != len(self.seeds):
            raise ParameterError(
                f"The 'seeds' parameter of Fairness repeats a seed. Got {self.seeds!r} instead."
            )
        if self.adversaries is not None:
            adversary_names(self.adversaries)
        if self.families is not None and not all(
            isinstance(k, str) and isinstance(v, str) for k, v in self.families.items()
        ):
            raise ParameterError(
                "The 'families' parameter of Fairness must map names (str) to families (str). "
                f"Got {self.families!r} instead."
            )

    def unmet(self, context: RunContext) -> list[str]:
        """Classification needs labels and an evaluation split; QA needs neither (it
        cross-fits article halves when there is no training split)."""
        if _is_qa(context):
            return Requirements(predictions=True).unmet(context)
        return Requirements(labels=True, eval_split=True, predictions=True).unmet(context)

    def _adversary_specs(self, qa: bool) -> dict[str, Any]:
        default = QA_ADVERSARIES if qa else ("bow", "tfidf", "minilm")
        names = adversary_names(list(default) if self.adversaries is None else self.adversaries)
        if qa and not any(s in QA_ADVERSARIES for s in names.values()):
            # Classification representations (e.g. the audit's quick profile: bow, tfidf)
            # do not apply to QA; the QA defaults stand in, and the result says so.
            logger.warning(
                "fairness on a QA run: adversaries %s are not QA adversaries; using %s",
                list(names.values()), list(QA_ADVERSARIES),
            )  # fmt: skip
            names = adversary_names(list(QA_ADVERSARIES))
        return names

    def check(self, context: RunContext) -> None:
        """Predictions must be class labels of the evaluation split (answer texts for QA);
        QA runs take QA adversaries only."""
        if _is_qa(context):
            bad = {a: s for a, s in self._adversary_specs(True).items() if s not in QA_ADVERSARIES}
            if bad:
                raise ParameterError(
                    f"The 'adversaries' parameter of Fairness on a QA run must use only "
                    f"{list(QA_ADVERSARIES)} (or no QA adversary at all, for the defaults). "
                    f"Got {bad!r} instead."
                )
            return
        if context.eval is None:
            return
        for p in context.predictions:
            if p.values.dtype.kind not in "iu":
                raise DetectorError(
                    f"fairness needs predicted class labels; predictions {p.name!r} are not."
                )

    # -- the work ------------------------------------------------------------------------
    def _annotation_counts(self, ctx: RunContext) -> list[dict[str, float] | None] | None:
        ds = ctx.split("eval")
        if self.annotations is not None:
            from spurious.data.annotations import match_annotations

            # By id, else by text; refused (with the count) when too few examples match,
            # instead of an agreement of NaN over zero matched rows.
            return match_annotations(self.annotations, ds).counts
        col = ds.frame.get("annotator_labels")
        if col is None or not col.notna().any():
            return None
        return counts_from_lists(col.tolist())

    def _run(self, ctx: RunContext) -> AnalysisOutput:
        qa = _is_qa(ctx)
        ds = ctx.target if qa else ctx.split("eval")
        n = len(ds)
        names = self._adversary_specs(qa)
        models = [p.name for p in ctx.predictions]
        if len(set(models)) != len(models):
            raise DetectorError(f"fairness needs distinct model names; got {models}.")
        qa_info: dict[str, Any] = {}
        em = None
        if qa:
            runs, qa_info = run_qa_adversaries(
                ds, names, self.seeds, aflite_params=self.aflite_params,
                train=ctx.train if ctx.eval is not None else None,
                split_seed=0 if self.random_state is None else int(self.random_state),
            )  # fmt: skip
            answers = [list(a) for a in ds.frame["answers"]]
            # SQuAD F1 / EM per question (max over the gold answers, official normalisation)
            correct = np.stack([qa_scores(p.values, answers, "f1") for p in ctx.predictions])
            em = np.stack([qa_scores(p.values, answers, "em") for p in ctx.predictions])
            gold_col = [a[0] if a else "" for a in answers]
            chance = math.nan  # no chance level for span F1
        else:
            runs = run_adversaries(
                ctx, names, self.seeds, aflite_params=self.aflite_params, view=self.view
            )
            correct = correctness([p.values for p in ctx.predictions], ds.labels)
            gold_col = [ds.label_names[k] for k in ds.labels]
            chance = 1.0 / ds.n_classes
        stages = stage_arrays(runs)
        mat = accuracy_matrix(
            correct,
            {a: s == 2 for a, s in stages.items()},
            models=models,
            n_bootstrap=self.n_bootstrap,
            confidence=self.confidence,
            random_state=self.random_state,
        )
        metrics: dict[str, float] = {
            "n_eval": float(n),
            "n_models": float(len(models)),
            "n_adversaries": float(len(names)),
            "n_seeds": float(len(self.seeds)),
            "chance": chance,
        }
        # Fig. 1: the stage breakdown
        breakdown = []
        for a, s in stages.items():
            row: dict[str, Any] = {"adversary": a, "spec": str(names[a])}
            for code, short in enumerate(_STAGE_SHORT):
                frac = (s == code).mean(axis=1)
                metrics[f"{short}_fraction_{a}"] = float(frac.mean())
                metrics[f"{short}_fraction_{a}_sd"] = (
                    float(frac.std(ddof=1)) if len(frac) > 1 else 0.0
                )
                row[short] = float(frac.mean())
                row[f"{short}_sd"] = metrics[f"{short}_fraction_{a}_sd"]
            own = [r for r in runs if r.name == a]
            row["n_rounds"] = [r.n_rounds for r in own]
            row["seconds"] = round(float(sum(r.seconds for r in own)), 3)
            breakdown.append(row)
        # the matrix
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
        em_table = []
        if em is not None:  # QA: exact match beside F1 (F1 is the matrix's score)
            mat_em = accuracy_matrix(
                em, {a: s == 2 for a, s in stages.items()}, models=models,
                n_bootstrap=self.n_bootstrap, confidence=self.confidence,
                random_state=self.random_state,
            )  # fmt: skip
            for i, m in enumerate(models):
                for j, a in enumerate(mat_em.adversaries):
                    metrics[f"em_{m}_{a}"] = float(mat_em.accuracy[i, j])
                    em_table.append(
                        {"model": m, "adversary": a, "em": float(mat_em.accuracy[i, j]),
                         "ci_low": float(mat_em.ci_low[i, j]),
                         "ci_high": float(mat_em.ci_high[i, j]),
                         "seed_sd": float(mat_em.seed_sd[i, j])}
                    )  # fmt: skip
        # ranking stability
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
                confidence=self.confidence,
            )
            for k, v in ra.items():
                metrics[k.replace("kendall_tau", f"kendall_tau_{a}").replace(
                    "spearman", f"spearman_{a}"
                )] = v  # fmt: skip
            # The null "the adversary selects at random": tau of random subsets of the
            # AF-selected size (the same resampling seed for every adversary).
            null = random_subset_null(
                correct, mat.n_selected[j], ra["kendall_tau"], n_draws=self.n_bootstrap,
                random_state=self.random_state,
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
        family_changes = []
        families, inferred = resolve_families(
            self.families, names, models, {p.name: p.source for p in ctx.predictions}
        )
        if families:
            changes = family_rank_change(
                rank_table["none"], {a: rank_table[a] for a in names}, families
            )
            for (m, a), v in changes.items():
                metrics[f"family_rank_change_{m}_{a}"] = v
                family_changes.append({"model": m, "adversary": a, "rank_change": v})
            if changes:
                metrics["mean_family_rank_change"] = float(np.mean(list(changes.values())))
        # annotator agreement by stage
        counts = None if qa else self._annotation_counts(ctx)
        agreement_rows = []
        agree = np.full(n, np.nan)
        if qa or counts is not None:
            if qa:  # share of the other annotators' answers equal to the first one
                agree = answer_agreement(answers)
                entropy = label_entropy(answer_counts(answers))
                entropy[np.isnan(agree)] = np.nan  # one answer: no distribution to speak of
            else:
                agree = gold_agreement(counts, gold_col)
                entropy = label_entropy(counts)
            metrics["n_annotated"] = float(np.isfinite(agree).sum())
            metrics["agreement_all"] = (
                float(np.nanmean(agree)) if metrics["n_annotated"] else math.nan
            )
            metrics["entropy_all"] = (
                float(np.nanmean(entropy)) if metrics["n_annotated"] else math.nan
            )
            for a, s in stages.items():
                by_a = agreement_by_stage(
                    agree, s, n_bootstrap=self.n_bootstrap, confidence=self.confidence,
                    random_state=self.random_state,
                )  # fmt: skip
                by_e = agreement_by_stage(entropy, s, n_bootstrap=0)
                for code, short in enumerate(_STAGE_SHORT):
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
        # per-example scores
        scores = pd.DataFrame({"id": ds.ids, "label": gold_col})
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
        scores["models_correct"] = correct.mean(axis=0) if len(models) else np.nan  # QA: mean F1
        scores["annotator_agreement"] = agree
        scores["fairness_score"] = selected_total / sum(len(s) for s in stages.values())
        scores["is_fairness_issue"] = scores["fairness_score"].to_numpy() >= 0.5
        details = {
            "models": models,
            "adversaries": {a: str(v) for a, v in names.items()},
            "adversary_order": list(names),
            "seeds": list(self.seeds),
            "aflite_params": dict(
                PAPER_TABLE3 if self.aflite_params is None else self.aflite_params
            ),
            "chance": metrics["chance"],
            "matrix": table,
            "n_selected": dict(zip(mat.adversaries, mat.n_selected.tolist(), strict=True)),
            "stages": breakdown,
            "ranks": rank_table,
            "ranking": ranking,
            "family_rank_change": family_changes,
            "families": families,
            "families_inferred": inferred,
            "score": "SQuAD F1" if qa else "accuracy",
            "matrix_em": em_table,
            "qa": qa_info,
            "agreement": agreement_rows,
            "runs": [
                {
                    "adversary": r.name,
                    "representation": r.representation,
                    "seed": r.seed,
                    "n_rounds": r.n_rounds,
                    "seconds": round(r.seconds, 3),
                    "n_selected": int((r.stages == 2).sum()),
                }
                for r in runs
            ],
        }
        details["verdict"] = verdict_text(metrics, details)
        summary = (
            f"{len(models)} models x {len(names)} adversaries x {len(self.seeds)} seeds: "
            f"mean {details['score']} {metrics['mean_acc_none']:.3f} unfiltered"
        )
        weakest = _hardest(metrics, list(names))
        if weakest is not None:
            summary += f", {metrics[f'mean_acc_{weakest}']:.3f} on {weakest}'s AF-selected set"
        if math.isfinite(metrics["min_kendall_tau"]):
            summary += f"; lowest Kendall tau vs unfiltered {metrics['min_kendall_tau']:+.2f}"
        return AnalysisOutput(scores=scores, metrics=metrics, summary=summary, details=details)

    def headline(self, result: Any) -> dict[str, Any]:
        """Ranking stability: 1 - the lowest Kendall tau against the unfiltered ranking.

        The severity rests on the bootstrap interval of that tau (over the evaluation
        examples; its lower bound sets the degree) and on a test against random subsets
        of the AF-selected size (Bonferroni over the adversaries): a reordering that
        random subsets produce as often is not the adversary's doing.
        """
        m = result.metrics
        tau = m.get("min_kendall_tau", math.nan)
        hardest = _hardest(m, list((result.details or {}).get("adversary_order") or []))
        score = (result.details or {}).get("score") or "accuracy"
        drop = (
            f"; mean {score} {m['mean_acc_none']:.3f} -> {m[f'mean_acc_{hardest}']:.3f} ({hardest})"
            if hardest
            else ""
        )
        if tau is None or not math.isfinite(tau):
            return self.verdict_scale.headline(
                "fairness of AF sets", None, f"ranking undefined (fewer than 2 models){drop}",
                severity="info",
            )  # fmt: skip
        lo, hi = m.get("min_kendall_tau_ci_low", math.nan), m.get("min_kendall_tau_ci_high")
        interval = (1 - hi, 1 - lo) if hi is not None else None
        p = m.get("min_kendall_tau_null_p")
        ci = (
            f" [{lo:+.2f}, {hi:+.2f}]"
            if hi is not None and math.isfinite(lo) and math.isfinite(hi)
            else ""
        )
        return self.verdict_scale.headline(
            "fairness of AF sets",
            tau,
            f"lowest Kendall tau vs the unfiltered ranking {tau:+.2f}{ci}{drop}",
            effect=1 - tau,
            interval=interval,
            p_value=p if p is not None and math.isfinite(p) else None,
            null="random subsets of the AF-selected size",
            measured="1 - the lowest Kendall tau of an AF-selected set's ranking against "
            "the unfiltered one (95% bootstrap interval over evaluation examples)",
        )


def _is_qa(ctx: RunContext) -> bool:
    return ctx.target.task.name == "qa"


def _hardest(metrics: Mapping[str, float], adversaries: list[str]) -> str | None:
    """The adversary whose AF-selected set has the lowest mean accuracy."""
    vals = {a: metrics.get(f"mean_acc_{a}", math.nan) for a in adversaries}
    vals = {a: v for a, v in vals.items() if math.isfinite(v)}
    return min(vals, key=vals.get) if vals else None


def verdict_text(metrics: Mapping[str, float], details: Mapping[str, Any]) -> str:
    """One paragraph in words: scores, ranking stability and agreement per stage.

    Examples
    --------
    >>> m = {"mean_acc_none": 0.8, "mean_acc_a": 0.4, "chance": 1 / 3, "kendall_tau_a": 0.2,
    ...      "min_kendall_tau": 0.2, "selected_fraction_a": 0.1}
    >>> "0.800" in verdict_text(m, {"adversary_order": ["a"]})
    True
    """
    advs = list(details.get("adversary_order") or [])
    chance = metrics.get("chance", math.nan)
    score = str(details.get("score") or "accuracy")
    parts = []
    accs = [(a, metrics.get(f"mean_acc_{a}", math.nan)) for a in advs]
    acc_txt = ", ".join(f"{a} {v:.3f}" for a, v in accs if math.isfinite(v))
    parts.append(
        f"The models' mean {score} is {metrics.get('mean_acc_none', math.nan):.3f} on the full "
        f"evaluation set and {acc_txt or 'undefined'} on the AF-selected sets"
        + (f" (chance {chance:.3f})." if math.isfinite(chance) else ".")
    )
    sel = ", ".join(f"{a} {metrics.get(f'selected_fraction_{a}', math.nan):.1%}" for a in advs)
    parts.append(f"The adversaries keep {sel} of the examples.")
    finite = [v for _, v in accs if math.isfinite(v)]
    if len(finite) >= 2:
        monotone = all(b <= a + 1e-12 for a, b in itertools.pairwise(finite))
        parts.append(
            "In the order given (weakest first) each adversary lowers the scores further."
            if monotone
            else "The scores do not fall monotonically in the order the adversaries are given."
        )
    tau = metrics.get("min_kendall_tau", math.nan)
    if math.isfinite(tau):
        taus = ", ".join(
            f"{a} {metrics.get(f'kendall_tau_{a}', math.nan):+.2f}"
            for a in advs
            if math.isfinite(metrics.get(f"kendall_tau_{a}", math.nan))
        )
        word = "stable" if tau >= 0.85 else "partly reordered" if tau >= 0.6 else "unstable"
        parts.append(
            f"Against the unfiltered ranking, Kendall's tau is {taus}: the ranking is {word} "
            "under adversarial filtering."
        )
    fam = metrics.get("mean_family_rank_change")
    if fam is not None and math.isfinite(fam):
        inferred = details.get("families_inferred") or []
        parts.append(
            f"Models lose {fam:+.2f} ranks on average under an adversary of their own family"
            + (f" (families inferred for {', '.join(map(str, inferred))})." if inferred else ".")
        )
    ag = [
        (a, metrics.get(f"agreement_first_round_{a}", math.nan),
         metrics.get(f"agreement_selected_{a}", math.nan))
        for a in advs
    ]  # fmt: skip
    ag = [x for x in ag if math.isfinite(x[1]) and math.isfinite(x[2])]
    if ag:
        lower = sum(s < f for _, f, s in ag)
        gold = "the first answer" if score != "accuracy" else "the gold label"
        parts.append(
            f"Annotators agree with {gold} less on AF-selected than on first-round "
            f"filtered examples for {lower} of {len(ag)} adversaries ("
            + ", ".join(f"{a}: {s:.3f} vs {f:.3f}" for a, f, s in ag)
            + ")."
        )
    return " ".join(parts)
