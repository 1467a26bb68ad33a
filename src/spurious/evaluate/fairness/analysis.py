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

On multiple-choice items (task ``mcq``, :mod:`~spurious.evaluate.fairness.mcq`) the
adversaries filter with option blocks (lexical or MiniLM, full item or choices only)
and a conditional logit over each item's options, cross-fitted halves stand in for a
missing training split, the models' predicted letters are scored against the gold
letter, and chance is the mean of 1/k over the items.

:class:`Fairness` holds the parameters and checks, runs the adversaries, scores the
models and calls the steps of :mod:`~spurious.evaluate.fairness.steps` in turn (each
returns its metrics and detail rows); :mod:`~spurious.evaluate.fairness.verdict` puts the
result into words.
"""

from __future__ import annotations

import logging
import math
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

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
    AdversaryRun,
    adversary_names,
    check_aflite_params,
    run_adversaries,
    stage_arrays,
)
from spurious.evaluate.fairness.agreement import (
    counts_from_lists,
    coverage,
    gold_agreement,
    label_entropy,
)
from spurious.evaluate.fairness.checks import check_study
from spurious.evaluate.fairness.families import check_declared, resolve_families
from spurious.evaluate.fairness.matrix import Matrix, accuracy_matrix, correctness
from spurious.evaluate.fairness.mcq import (
    MC_ADVERSARIES,
    is_mc_adversary,
    mc_chance,
    run_mc_adversaries,
)
from spurious.evaluate.fairness.names import METRIC_DOCS, SCORE_COLUMNS, SCORE_NAMES
from spurious.evaluate.fairness.qa import (
    QA_ADVERSARIES,
    answer_agreement,
    answer_counts,
    run_qa_adversaries,
)
from spurious.evaluate.fairness.steps import (
    agreement_entries,
    em_entries,
    example_scores,
    family_entries,
    matrix_entries,
    ranking_entries,
    stage_breakdown,
)
from spurious.evaluate.fairness.verdict import hardest_adversary, score_key, verdict_text
from spurious.exceptions import AnalysisError, ParameterError
from spurious.results import Headline
from spurious.stats.metrics import qa_scores
from spurious.utils.metric_keys import metric_key
from spurious.utils.validation import Interval

if TYPE_CHECKING:  # pragma: no cover
    from spurious.data.dataset import Dataset

__all__ = ["Fairness", "verdict_text"]

logger = logging.getLogger(__name__)


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
        falls back to them with a warning); on multiple-choice items
        ``"<features>:<view>"`` option-block adversaries, default
        :data:`~spurious.evaluate.fairness.mcq.MC_ADVERSARIES` (the same fallback).
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
        Seed of the bootstraps and, on a QA or multiple-choice run without a training
        split, of the halves (AFLite uses ``seeds``).

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
    # Classification needs its labels and an evaluation split; a QA or multiple-choice run
    # needs no evaluation split (it cross-fits halves of the data), so they are checked in
    # unmet, by task. Multiple-choice items opt in (option-block adversaries, mcq.py).
    requires: ClassVar[Requirements] = Requirements(
        eval_split=True, predictions=True, tasks=("nli", "pair", "text", "qa", "mcq")
    )
    metric_docs: ClassVar[dict[str, str]] = METRIC_DOCS
    score_columns: ClassVar[dict[str, str]] = SCORE_COLUMNS
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
        check_aflite_params(self.aflite_params)  # unknown or reserved keys, before any data
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
        if _is_mc(context):
            return Requirements(labels=True, predictions=True, tasks=("mcq",)).unmet(context)
        return Requirements(labels=True, eval_split=True, predictions=True).unmet(context)

    def _adversary_specs(self, qa: bool, *, warn: bool = False, mc: bool = False) -> dict[str, Any]:
        default = QA_ADVERSARIES if qa else MC_ADVERSARIES if mc else ("bow", "tfidf", "minilm")
        names = adversary_names(list(default) if self.adversaries is None else self.adversaries)
        if mc and not any(is_mc_adversary(s) for s in names.values()):
            # As on QA: classification representations (the quick profile's bow, tfidf)
            # do not apply to option choice; the MC defaults stand in, said once.
            if warn:
                logger.warning(
                    "fairness on multiple-choice items: adversaries %s are not option-block "
                    "adversaries; using %s", list(names.values()), list(MC_ADVERSARIES),
                )  # fmt: skip
            names = adversary_names(list(MC_ADVERSARIES))
        if qa and not any(s in QA_ADVERSARIES for s in names.values()):
            # Classification representations (e.g. the audit's quick profile: bow, tfidf)
            # do not apply to QA; the QA defaults stand in, and the result says so. Said
            # once, by the run (check() resolves the same names silently).
            if warn:
                logger.warning(
                    "fairness on a QA run: adversaries %s are not QA adversaries; using %s",
                    list(names.values()), list(QA_ADVERSARIES),
                )  # fmt: skip
            names = adversary_names(list(QA_ADVERSARIES))
        return names

    def check(self, context: RunContext) -> None:
        """Predictions must be class labels of the evaluation split (answer texts for QA);
        QA runs take QA adversaries only; declared families name adversaries or models."""
        qa, mc = _is_qa(context), _is_mc(context)
        names = self._adversary_specs(qa, mc=mc and not qa)
        check_study(context, names, self.seeds, aflite_params=self.aflite_params,
                    view=self.view, qa=qa, mc=mc and not qa)  # fmt: skip
        check_declared(self.families, list(names), [p.name for p in context.predictions])
        if not qa:  # annotator labels outside the label names fail here, before any work
            self._annotation_counts(context)
        if _is_qa(context):
            bad = {a: s for a, s in self._adversary_specs(True).items() if s not in QA_ADVERSARIES}
            if bad:
                raise ParameterError(
                    f"The 'adversaries' parameter of Fairness on a QA run must use only "
                    f"{list(QA_ADVERSARIES)} (or no QA adversary at all, for the defaults). "
                    f"Got {bad!r} instead."
                )
            return
        if _is_mc(context):
            bad = {a: s for a, s in self._adversary_specs(False, mc=True).items()
                   if not is_mc_adversary(s)}  # fmt: skip
            if bad:
                raise ParameterError(
                    "The 'adversaries' parameter of Fairness on multiple-choice items must use "
                    f"only '<features>:<view>' specs such as {list(MC_ADVERSARIES)} (or none "
                    f"of them, for the defaults). Got {bad!r} instead."
                )
        if context.eval is None:
            return
        for p in context.predictions:
            if p.values.dtype.kind not in "iu":
                raise AnalysisError(
                    f"fairness needs predicted class labels; predictions {p.name!r} are not."
                )

    # -- the work ------------------------------------------------------------------------
    def _annotation_counts(self, ctx: RunContext) -> list[dict[str, float] | None] | None:
        # The judged split: the evaluation split (classification needs one), or the data
        # of a cross-fitted multiple-choice run.
        ds = ctx.target
        if self.annotations is not None:
            from spurious.data.annotations import match_annotations

            # By id, else by text; refused (with the count) when too few examples match,
            # instead of an agreement of NaN over zero matched rows.
            return match_annotations(self.annotations, ds).counts
        col = ds.frame.get("annotator_labels")
        if col is None or not col.notna().any():
            return None
        # Labels outside the label names are refused (naming the id), not counted as
        # disagreeing with the gold.
        return counts_from_lists(col.tolist(), ds.label_names, ids=ds.ids, name=ds.name)

    def _run(self, ctx: RunContext) -> AnalysisOutput:
        qa, mc = _is_qa(ctx), _is_mc(ctx)
        ds = ctx.target if qa or mc else ctx.split("eval")
        names = self._adversary_specs(qa, warn=True, mc=mc)
        models = [p.name for p in ctx.predictions]  # distinct: checked by check()
        runs, qa_info = self._adversary_runs(ctx, ds, names, qa, mc)
        answers, correct, em, gold_col, chance = self._model_scores(ctx, ds, qa, mc)
        score = "f1" if qa else "accuracy"
        stages = stage_arrays(runs)
        mat = self._matrix(correct, stages, models)
        metrics: dict[str, float] = {
            "n_eval": float(len(ds)),
            "n_models": float(len(models)),
            "n_adversaries": float(len(names)),
            "n_seeds": float(len(self.seeds)),
            "chance": chance,
        }
        part, breakdown = stage_breakdown(stages, runs, names)
        metrics.update(part)
        part, table = matrix_entries(mat, models, score)
        metrics.update(part)
        em_table = []
        if em is not None:
            part, em_table = em_entries(self._matrix(em, stages, models), models)
            metrics.update(part)
        part, rank_table, ranking = ranking_entries(
            mat, models, correct, confidence=self.confidence, n_draws=self.n_bootstrap,
            random_state=self.random_state,
        )  # fmt: skip
        metrics.update(part)
        families, inferred = resolve_families(
            self.families, names, models, {p.name: p.source for p in ctx.predictions}
        )
        part, family_changes = family_entries(rank_table, list(names), families)
        metrics.update(part)
        agree, entropy, covered = self._agreement(ctx, qa, gold_col, answers)
        agreement_rows = []
        if agree is not None:
            part, agreement_rows = agreement_entries(
                agree, entropy, stages, n_bootstrap=self.n_bootstrap,
                confidence=self.confidence, random_state=self.random_state,
            )  # fmt: skip
            metrics.update(part)
        else:
            agree = np.full(len(ds), np.nan)
        scores = example_scores(ds.ids, gold_col, stages, correct, len(models), agree)
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
            "score": score,
            "score_name": SCORE_NAMES[score],
            "matrix_em": em_table,
            "qa": qa_info if qa else {},
            "mcq": qa_info if mc else {},
            "agreement": agreement_rows,
            "annotation_coverage": covered,
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
        return AnalysisOutput(
            scores=scores, metrics=metrics, summary=self._summary(metrics, details), details=details
        )

    def _model_scores(
        self, ctx: RunContext, ds: Dataset, qa: bool, mc: bool
    ) -> tuple[list[list[str]] | None, np.ndarray, np.ndarray | None, list[Any], float]:
        """``(answers, per-example scores, EM, gold column, chance)`` of the models."""
        if qa:
            answers = [list(a) for a in ds.frame["answers"]]
            # SQuAD F1 / EM per question (max over the gold answers, official normalisation)
            correct = np.stack([qa_scores(p.values, answers, "f1") for p in ctx.predictions])
            em = np.stack([qa_scores(p.values, answers, "em") for p in ctx.predictions])
            # no chance level for span F1
            return answers, correct, em, [a[0] if a else "" for a in answers], math.nan
        # Multiple choice: predicted letters are aligned to positions, like the gold; a
        # guess is right with probability 1/k on an item of k options.
        correct = correctness([p.values for p in ctx.predictions], ds.labels)
        chance = mc_chance(ds) if mc else 1.0 / ds.n_classes
        return None, correct, None, [ds.label_names[k] for k in ds.labels], chance

    def _adversary_runs(
        self, ctx: RunContext, ds: Dataset, names: dict[str, Any], qa: bool, mc: bool = False
    ) -> tuple[list[AdversaryRun], dict[str, Any]]:
        """Every adversary over every seed on ``ds``; on QA and multiple choice, also the
        protocol's notes."""
        if mc:
            return run_mc_adversaries(
                ctx, names, self.seeds, aflite_params=self.aflite_params, view=self.view,
                split_seed=0 if self.random_state is None else int(self.random_state),
            )  # fmt: skip
        if not qa:
            runs = run_adversaries(
                ctx, names, self.seeds, aflite_params=self.aflite_params, view=self.view
            )
            return runs, {}
        return run_qa_adversaries(
            ds, names, self.seeds, aflite_params=self.aflite_params,
            train=ctx.train if ctx.eval is not None else None,
            split_seed=0 if self.random_state is None else int(self.random_state),
            progress=ctx.progress,
        )  # fmt: skip

    def _matrix(
        self, correct: np.ndarray, stages: dict[str, np.ndarray], models: list[str]
    ) -> Matrix:
        """The models' scores on the full set ("none") and on each AF-selected set."""
        return accuracy_matrix(
            correct,
            {a: s == 2 for a, s in stages.items()},
            models=models,
            n_bootstrap=self.n_bootstrap,
            confidence=self.confidence,
            random_state=self.random_state,
        )

    def _agreement(
        self,
        ctx: RunContext,
        qa: bool,
        gold: list[Any],
        answers: list[list[str]] | None,
    ) -> tuple[np.ndarray | None, np.ndarray | None, dict[str, Any] | None]:
        """Per example: the annotators' agreement and label entropy (``None``: no
        annotations), and how many examples are annotated (a run warning when only some
        are). QA: the other answers' agreement with the first one."""
        if qa:
            agree = answer_agreement(answers)
            entropy = label_entropy(answer_counts(answers))
            entropy[np.isnan(agree)] = np.nan  # one answer: no distribution to speak of
            return agree, entropy, None
        counts = self._annotation_counts(ctx)
        if counts is None:
            return None, None, None
        covered, note = coverage(counts, ctx.target.name)
        if note is not None:
            logger.warning("%s", note)
            ctx.warnings.append(note)
        return gold_agreement(counts, gold), label_entropy(counts), covered

    def _summary(self, metrics: dict[str, float], details: dict[str, Any]) -> str:
        names = details["adversary_order"]
        score = score_key(details)
        summary = (
            f"{len(details['models'])} models x {len(names)} adversaries x {len(self.seeds)} "
            f"seeds: mean {details['score_name']} {metrics[metric_key(f'mean_{score}', 'none')]:.3f}"
            " unfiltered"
        )
        weakest = hardest_adversary(metrics, list(names), score)
        if weakest is not None:
            mean = metrics[metric_key(f"mean_{score}", weakest)]
            summary += f", {mean:.3f} on {weakest}'s AF-selected set"
        if math.isfinite(metrics["min_kendall_tau"]):
            summary += f"; lowest Kendall tau vs unfiltered {metrics['min_kendall_tau']:+.2f}"
        return summary

    def headline(self, result: Any) -> Headline:
        """Ranking stability: 1 - the lowest Kendall tau against the unfiltered ranking.

        The severity rests on the bootstrap interval of that tau (over the evaluation
        examples; its lower bound sets the degree) and on a test against random subsets
        of the AF-selected size (Bonferroni over the adversaries): a reordering that
        random subsets produce as often is not the adversary's doing.
        """
        m = result.metrics
        d = result.details or {}
        tau = m.get("min_kendall_tau", math.nan)
        key = score_key(d)
        hardest = hardest_adversary(m, list(d.get("adversary_order") or []), key)
        score = d.get("score_name") or key
        drop = ""
        if hardest is not None:
            full, hard = (m.get(metric_key(f"mean_{key}", a), math.nan) for a in ("none", hardest))
            drop = f"; mean {score} {full:.3f} -> {hard:.3f} ({hardest})"
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


def _is_mc(ctx: RunContext) -> bool:
    return bool(getattr(ctx.target.task, "multiple_choice", False))
