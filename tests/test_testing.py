"""spurious.testing: the public contract checks pass a correct analysis and catch broken ones.

The toy analyses below are deliberately small (no features, no models) so the whole
suite runs in seconds; each broken variant breaks one rule of the contract, and the
suite must fail it with a message naming that check.
"""

from __future__ import annotations

import subprocess
import sys
from numbers import Integral, Real
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chi2_contingency

from spurious.analysis import (
    Analysis,
    AnalysisOutput,
    Requirements,
    VerdictScale,
    severity_of,
)
from spurious.data.synthetic import make_nli_artifacts
from spurious.exceptions import AnalysisError, ParameterError
from spurious.testing import analysis_checks, check_analysis, parametrize_with_checks
from spurious.utils.validation import Interval, StrOptions


class CueWord(Analysis):
    """Whether hypotheses with a cue word lean to one label (a correct toy analysis).

    Parameters
    ----------
    word : str
        The cue word.
    n_bins : int
        Unused by the computation; declared to exercise the invalid-parameter checks.
    alpha : float
        Level of the test the verdict rests on.
    case : {"lower", "keep"}
        Whether hypotheses are lowercased first.
    """

    name: ClassVar[str] = "cue_word"
    description: ClassVar[str] = "Association of a cue word in the hypothesis with the label."
    requires: ClassVar[Requirements] = Requirements(labels=True, tasks=("nli",))
    metric_docs: ClassVar[dict[str, str]] = {
        "cramers_v": "Cramer's V of (cue present, label), [0, 1].",
        "p_value": "Chi-squared test of independence.",
    }
    score_columns: ClassVar[dict[str, str]] = {
        "id": "Example id.",
        "cue_word_score": "1 when the hypothesis has the cue word.",
        "is_cue_word_issue": "The hypothesis has the cue word.",
    }
    verdict_scale: ClassVar[VerdictScale] = VerdictScale(0.1, 0.3, 0.5)
    fast_params: ClassVar[dict[str, Any]] = {"word": "nobody"}
    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "word": [str],
        "n_bins": [Interval(Integral, 2, 20, closed="both")],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "case": [StrOptions({"lower", "keep"})],
    }

    def __init__(
        self, word: str = "nobody", n_bins: int = 5, alpha: float = 0.05, case: str = "lower"
    ) -> None:
        self.word = word
        self.n_bins = n_bins
        self.alpha = alpha
        self.case = case

    def check(self, ctx) -> None:
        if len(ctx.target) < 20:
            raise AnalysisError(f"CueWord needs at least 20 examples; got {len(ctx.target)}.")

    def _run(self, ctx) -> AnalysisOutput:
        ds = ctx.target
        text = ds.frame["hypothesis"].astype(str)
        if self.case == "lower":
            text = text.str.lower()
        has = text.str.split().map(lambda words: self.word in words).to_numpy()
        table = pd.crosstab(has, ds.labels)
        if table.shape[0] < 2 or table.shape[1] < 2:
            v, p = 0.0, 1.0
        else:
            chi2, p = chi2_contingency(table, correction=False)[:2]
            v = float(np.sqrt(chi2 / (len(ds) * (min(table.shape) - 1))))
        scores = pd.DataFrame(
            {"id": ds.ids, "cue_word_score": has.astype(float), "is_cue_word_issue": has}
        )
        return AnalysisOutput(
            scores=scores, metrics={"cramers_v": v, "p_value": float(p)}, summary=f"V = {v:.3f}"
        )

    def headline(self, result) -> dict[str, Any]:
        v = result.metrics["cramers_v"]
        return self.verdict_scale.headline(
            "cue word",
            v,
            f"Cramer's V {v:.2f}",
            p_value=result.metrics["p_value"],
            null="cue independent of the label",
        )


class PointEstimateVerdict(CueWord):
    """Broken: its severity comes from the point estimate alone."""

    def headline(self, result) -> dict[str, Any]:
        v = result.metrics["cramers_v"]
        return {
            "label": "cue word",
            "value": v,
            "text": f"Cramer's V {v:.2f}",
            "verdict": "",
            "severity": severity_of(v, low=0.1, moderate=0.3, high=0.5),
            "inconclusive": False,
            "evidence": {"basis": "point", "interval": None, "p_value": None, "null": None},
        }


class NullTestGradesTheSize(CueWord):
    """Broken: a significant test, and the severity of the point estimate beside it."""

    def headline(self, result) -> dict[str, Any]:
        head = super().headline(result)
        return {**head, "severity": self.verdict_scale._severity(head["value"])}


class FindsOnShuffledLabels(CueWord):
    """Broken: a tight interval far from zero, whatever the data say."""

    def headline(self, result) -> dict[str, Any]:
        v = result.metrics["cramers_v"]
        return self.verdict_scale.headline("cue word", v, "V", interval=(0.6, 0.7))


class IgnoresInvalidParameters(CueWord):
    """Broken: never validates its parameters."""

    def validate_params(self) -> None:
        pass


class ChecksTypesNotBounds(CueWord):
    """Broken: checks that n_bins is an int, not that it lies in [2, 20]."""

    def validate_params(self) -> None:
        if not isinstance(self.n_bins, int):
            raise ParameterError("The 'n_bins' parameter of ChecksTypesNotBounds is not an int.")


class UnnamedParameterError(CueWord):
    """Broken: refuses bad values with a message that does not say which parameter."""

    def validate_params(self) -> None:
        try:
            super().validate_params()
        except ParameterError:
            raise ParameterError("bad value") from None


class ConstraintTypo(CueWord):
    """Broken: a constraint under a name that is not a parameter."""

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **{k: v for k, v in CueWord._parameter_constraints.items() if k != "alpha"},
        "alhpa": [Interval(Real, 0, 1, closed="neither")],
    }


class Unseeded(CueWord):
    """Broken: random without a seed parameter, so two runs differ."""

    def _run(self, ctx) -> AnalysisOutput:
        out = super()._run(ctx)
        out.scores["cue_word_score"] = np.random.default_rng().random(len(out.scores))
        return out


class Seeded(CueWord):
    """Correct: random, with a ``random_state`` the suite sets."""

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        **CueWord._parameter_constraints,
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        word: str = "nobody",
        n_bins: int = 5,
        alpha: float = 0.05,
        case: str = "lower",
        random_state: int | None = None,
    ) -> None:
        super().__init__(word=word, n_bins=n_bins, alpha=alpha, case=case)
        self.random_state = random_state

    def _run(self, ctx) -> AnalysisOutput:
        out = super()._run(ctx)
        rng = np.random.default_rng(self.random_state)
        out.scores["cue_word_score"] += rng.random(len(out.scores)) * 1e-3
        return out


class RunsOnTwoExamples(CueWord):
    """Broken: no minimum size, so two examples get a 'result'."""

    def check(self, ctx) -> None:
        pass


def _failing_check(cls: type[Analysis]) -> str:
    with pytest.raises(AssertionError) as info:
        check_analysis(cls)
    return str(info.value)


def test_a_correct_analysis_passes_every_check():
    outcome = check_analysis(CueWord)
    assert outcome == {name: "passed" for name, _ in analysis_checks(CueWord)}
    assert "invalid_parameters" in outcome and "shuffled_labels_give_no_finding" in outcome


def test_a_seed_is_set_only_where_the_analysis_has_one():
    assert set(check_analysis(Seeded).values()) == {"passed"}  # its default seed is None
    message = _failing_check(Unseeded)
    assert "cue_word failed the check 'same_seed_same_output'" in message
    assert "no seed parameter" in message


@pytest.mark.parametrize(
    ("cls", "check", "why"),
    [
        (PointEstimateVerdict, "severity_rests_on_evidence", "a point estimate is not a verdict"),
        (NullTestGradesTheSize, "severity_rests_on_evidence", "at most 'low'"),
        (FindsOnShuffledLabels, "shuffled_labels_give_no_finding", "labels shuffled"),
        (IgnoresInvalidParameters, "invalid_parameters", "validate_params() accepted it"),
        (ChecksTypesNotBounds, "invalid_parameters", "n_bins=1"),
        (UnnamedParameterError, "invalid_parameters", "does not name"),
        (ConstraintTypo, "parameter_constraints", "'alhpa'"),
        (RunsOnTwoExamples, "failure_is_recorded", "it ran on two examples"),
    ],
    ids=lambda x: x.__name__ if isinstance(x, type) else None,
)
def test_a_broken_analysis_fails_naming_the_check(cls, check, why):
    message = _failing_check(cls)
    assert f"cue_word failed the check {check!r}" in message
    assert why in message
    # The same check alone, as parametrize_with_checks runs it.
    with pytest.raises(AssertionError, match=f"failed the check {check!r}"):
        dict(analysis_checks(cls))[check](cls)


def test_invalid_parameter_values_cover_every_constraint():
    tried: list[str] = []

    class Recording(CueWord):
        def validate_params(self) -> None:
            try:
                super().validate_params()
            except ParameterError as e:
                tried.append(str(e).split("'")[1])
                raise

    dict(analysis_checks(Recording))["invalid_parameters"](Recording)
    # A value of no accepted type for each; past both bounds of n_bins (1, 21), and of
    # alpha (0.0, -1.0, 1.0, 2.0: open interval); an unknown option of case.
    assert tried.count("word") == 1
    assert tried.count("n_bins") == 3
    assert tried.count("alpha") == 5
    assert tried.count("case") == 2


def test_check_analysis_takes_an_instance_parameters_and_data():
    train, test = make_nli_artifacts(n=240, random_state=1).dataset.split(0.4, random_state=0)
    outcome = check_analysis(CueWord(word="not"), data=(train, test), case="keep")
    assert set(outcome.values()) == {"passed"}
    with pytest.raises(TypeError, match="Analysis subclass or instance"):
        check_analysis(object)  # type: ignore[arg-type]
    with pytest.raises(AssertionError, match="pass data="):
        check_analysis(CueWord, data=_qa_dataset())


def _qa_dataset():
    from spurious.data import Dataset

    n = 40
    return Dataset.from_frame(
        pd.DataFrame(
            {
                "question": [f"q{i}?" for i in range(n)],
                "context": ["c"] * n,
                "answers": [["c"]] * n,
            }
        ),
        "qa",
    )


@parametrize_with_checks([CueWord, Seeded(random_state=3)])
def test_the_parametrizer_runs_every_check(analysis, check):
    check(analysis)


def test_parametrize_ids_name_the_analysis_and_the_check():
    mark = parametrize_with_checks([CueWord]).mark
    assert mark.args[0] == ("analysis", "check")
    ids = [p.id for p in mark.args[1]]
    names = [name for name, _ in analysis_checks(CueWord)]
    assert ids == [f"cue_word-{name}" for name in names]
    assert len(set(names)) == len(names) >= 14


def test_importing_spurious_testing_never_needs_pytest():
    code = "import sys; sys.modules['pytest'] = None; import spurious.testing"
    subprocess.run([sys.executable, "-c", code], check=True)
