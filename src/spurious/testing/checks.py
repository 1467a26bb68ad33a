"""The checks of the analysis contract, and :data:`CHECKS`, the order they run in.

Each check is ``fn(analysis, inputs)``: ``analysis`` an instance, ``inputs()`` the shared
:class:`~spurious.testing.data.Inputs`. A check raises an AssertionError saying what is
wrong, or ``unittest.SkipTest`` when the inputs cannot exercise it; the module docstring
of :mod:`spurious.testing` says what each requires.
"""

from __future__ import annotations

import copy
import json
import re
import unittest
from collections.abc import Callable
from pathlib import Path
from tempfile import TemporaryDirectory

import numpy as np
import pandas as pd

from spurious.analysis import Analysis, Requirements
from spurious.data.dataset import Dataset
from spurious.exceptions import AnalysisError, ParameterError, ResultLoadError, SpuriousError
from spurious.results import Result
from spurious.testing.data import Inputs, model_predictions, tiny_dataset
from spurious.testing.params import describe_constraints, invalid_values, is_invalid
from spurious.testing.support import (
    analysis_label,
    assert_frames_equal,
    assert_metrics_equal,
    copy_analysis,
    init_params,
    run_on,
    seed_params,
)

__all__ = ["CHECKS", "CheckFn"]

#: A check's function: ``fn(analysis, inputs)`` with ``inputs()`` the shared inputs.
CheckFn = Callable[[Analysis, Callable[[], Inputs]], None]

_SEVERITIES = ("none", "low", "moderate", "high", "info")
_HEADLINE_KEYS = ("label", "value", "text", "verdict", "severity", "inconclusive", "evidence")


# ---------------------------------------------------------------------------------------
# Checks of the class and its parameters
# ---------------------------------------------------------------------------------------
def _check_class_attributes(analysis: Analysis, inputs: Callable[[], Inputs]) -> None:
    cls = type(analysis)
    assert cls.name, "the ClassVar 'name' (the registry name) is not set"
    assert re.fullmatch(r"[a-z][a-z0-9_]*", cls.name), (
        f"name {cls.name!r} is not a lowercase identifier (it names folders and columns)"
    )
    assert cls.description, "'description' (one sentence for --help) is empty"
    assert cls.metric_docs, "'metric_docs' (every metric -> its meaning) is empty"
    assert cls.score_columns, "'score_columns' (every score column -> its meaning) is empty"
    assert isinstance(cls.requires, Requirements), (
        f"'requires' is a {type(cls.requires).__name__}, not a Requirements"
    )
    assert cls.kind in ("detector", "evaluation"), (
        f"kind is {cls.kind!r}; expected 'detector' or 'evaluation'"
    )
    assert isinstance(analysis.requirements(), Requirements), (
        "requirements() does not return a Requirements"
    )


def _check_parameter_constraints(analysis: Analysis, inputs: Callable[[], Inputs]) -> None:
    cls = type(analysis)
    params = init_params(cls)
    constraints = cls._parameter_constraints
    problems = []
    unconstrained = sorted(set(params) - set(constraints))
    unknown = sorted(set(constraints) - set(params))
    if unconstrained:
        problems.append(
            f"parameters without an entry in _parameter_constraints: {unconstrained} "
            "(use ['no_validation'] for one that takes anything)"
        )
    if unknown:
        problems.append(
            f"_parameter_constraints names {unknown}, which are not parameters of __init__ "
            "(a typo? those constraints never apply)"
        )
    assert not problems, "; ".join(problems)
    bad_fast = sorted(set(cls.fast_params) - set(params))
    assert not bad_fast, f"fast_params names unknown parameters {bad_fast}"
    try:
        cls(**cls.fast_params).validate_params()
    except ParameterError as e:
        raise AssertionError(f"fast_params are not valid: {e}") from None
    # __init__ stores its arguments unchanged (no logic there): get_params gives them back.
    values = analysis.get_params(deep=False)
    rebuilt = cls(**values).get_params(deep=False)
    for k, v in values.items():
        assert rebuilt[k] is v, (
            f"__init__ does not store the parameter {k!r} unchanged ({v!r} became "
            f"{rebuilt[k]!r}); keep logic out of __init__"
        )


def _check_invalid_parameters(analysis: Analysis, inputs: Callable[[], Inputs]) -> None:
    cls = type(analysis)
    base = analysis.get_params(deep=False)
    tried = 0
    problems: list[str] = []
    for name, constraints in cls._parameter_constraints.items():
        if name not in base:
            continue  # reported by the parameter_constraints check
        for value in invalid_values(constraints):
            if not is_invalid(constraints, name, value):
                continue  # another constraint accepts it
            tried += 1
            what = f"{name}={value!r}"
            try:
                cls(**{**base, name: value}).validate_params()
            except ParameterError as e:
                if not re.search(rf"\b{re.escape(name)}\b", str(e)):
                    problems.append(f"{what} is refused, but the message does not name it: {e}")
            except Exception as e:
                problems.append(f"{what} raised {type(e).__name__} ({e}), not a ParameterError")
            else:
                problems.append(
                    f"{what} is outside its declared constraints ({describe_constraints(constraints)}), "
                    "but validate_params() accepted it"
                )
    assert not problems, "\n".join(problems)
    if not tried and cls._parameter_constraints:
        raise unittest.SkipTest("no declared constraint has a value outside it to try")


def _check_config_round_trip(analysis: Analysis, inputs: Callable[[], Inputs]) -> None:
    config = analysis.to_config()
    text = json.dumps(config)
    b = type(analysis).from_config(json.loads(text))
    assert b.get_params() == analysis.get_params(), (
        f"from_config(to_config()) gives {b.get_params()}, not {analysis.get_params()}"
    )
    try:
        type(analysis).from_config({"no_such_param": 1})
    except ParameterError as e:
        assert "Unknown parameter" in str(e), f"unclear message for an unknown parameter: {e}"
    else:
        raise AssertionError("from_config accepted the unknown parameter 'no_such_param'")


# ---------------------------------------------------------------------------------------
# Checks of what a run gives
# ---------------------------------------------------------------------------------------
def _check_same_seed_same_output(analysis: Analysis, inputs: Callable[[], Inputs]) -> None:
    data = inputs()
    a = run_on(copy_analysis(analysis, seeded=True), data.fresh())
    b = run_on(copy_analysis(analysis, seeded=True), data.fresh())
    seed = [f"{p}={a.params.get(p)!r}" for p in seed_params(type(analysis))]
    what = f"two runs with {', '.join(seed) or 'no seed parameter'}"
    assert_frames_equal(a.scores, b.scores, f"{what} give different scores")
    assert_metrics_equal(a.metrics, b.metrics, f"{what} give different metrics")


def _check_one_row_per_example(analysis: Analysis, inputs: Callable[[], Inputs]) -> None:
    ctx = inputs().context()
    name = type(analysis).name
    a = copy_analysis(analysis)
    res = run_on(a, ctx)
    scored = a.scored_dataset(ctx)
    cols = list(res.scores.columns)
    assert cols and cols[0] == "id", f"the first score column is not 'id': {cols[:5]}"
    assert res.scores["id"].is_unique, "score ids are not unique"
    assert set(res.scores["id"]) == set(scored.ids), "score ids are not the scored split's ids"
    assert len(res.scores) == len(scored), (
        f"{len(res.scores)} score rows for {len(scored)} examples"
    )
    for col in (f"{name}_score", f"is_{name}_issue"):
        assert col in res.scores, f"the score column {col!r} is missing"
    not_float = {k: type(v).__name__ for k, v in res.metrics.items() if not isinstance(v, float)}
    assert not not_float, f"metrics that are not floats: {not_float}"
    try:
        json.dumps(res.details)
    except TypeError as e:
        raise AssertionError(f"details are not plain JSON: {e}") from None
    head = res.headline
    missing = [k for k in _HEADLINE_KEYS if k not in head]
    assert not missing, f"the headline lacks {missing}; build it with VerdictScale.headline(...)"
    assert head["severity"] in _SEVERITIES, f"unknown severity {head['severity']!r}"


def _check_shuffled_labels_give_no_finding(
    analysis: Analysis, inputs: Callable[[], Inputs]
) -> None:
    """A verdict is a claim: with labels permuted there is nothing to find, so no analysis
    may report a MODERATE or HIGH finding (LOW stays possible at the tests' alpha)."""
    data = inputs()
    if not data.train.task.has_labels and data.train.task.name != "qa":
        raise unittest.SkipTest("the data has no labels to shuffle")
    for seed in (0, 1):
        ctx = data.shuffled(seed)
        a = copy_analysis(analysis, seeded=True)
        unmet = a.unmet(ctx)
        if unmet:
            raise unittest.SkipTest(
                f"{analysis_label(a)} cannot run on the data: {'; '.join(unmet)}"
            )
        head = a.run(context=ctx).headline
        assert head.get("severity") not in ("moderate", "high"), (
            f"labels shuffled (permutation {seed}), yet the headline is a "
            f"{head.get('severity')} finding: {head}"
        )


def _check_severity_rests_on_evidence(analysis: Analysis, inputs: Callable[[], Inputs]) -> None:
    """Severities other than ``info`` come with the evidence they rest on."""
    head = run_on(copy_analysis(analysis), inputs().fresh()).headline
    evidence = head.get("evidence")
    assert isinstance(evidence, dict), (
        f"the headline has no 'evidence' (what its severity rests on): {head}; build it "
        "with VerdictScale.headline(...)"
    )
    if head.get("severity") in ("low", "moderate", "high"):
        assert evidence.get("basis") in ("interval", "null_test", "interval+null_test"), (
            f"severity {head['severity']!r} rests on {evidence.get('basis')!r}, not on an "
            f"interval or a test against a null (a point estimate is not a verdict): {head}"
        )
    if evidence.get("basis") == "null_test":
        assert head.get("severity") in ("none", "low", "info"), (
            f"severity {head['severity']!r} rests on a null test alone: a test says that "
            f"there is an effect, not how large it is (at most 'low' without an interval): {head}"
        )
    interval = evidence.get("interval")
    if interval is not None:
        lo, hi = interval
        assert lo <= hi, f"the interval [{lo}, {hi}] is reversed"
    if head.get("inconclusive"):
        assert "inconclusive" in head.get("verdict", ""), (
            f"an inconclusive headline whose verdict does not say so: {head['verdict']!r}"
        )


def _check_inputs_not_mutated(analysis: Analysis, inputs: Callable[[], Inputs]) -> None:
    ctx = inputs().fresh()
    train, test = ctx.train, ctx.eval
    assert test is not None, "the check context has no evaluation split"
    before = (copy.deepcopy(train.frame), copy.deepcopy(test.frame), train.fingerprint)
    run_on(copy_analysis(analysis), ctx)
    # Shared artifacts are not changed by the analysis that used them.
    memo = getattr(ctx, "_memo", {})
    shared = {k: v.copy() for k, v in memo.items() if isinstance(v, np.ndarray)}
    run_on(copy_analysis(analysis), ctx)
    for k, v in shared.items():
        try:
            np.testing.assert_array_equal(memo[k], v)
        except AssertionError:
            raise AssertionError(f"a run changed the shared artifact {k!r} in place") from None
    assert_frames_equal(train.frame, before[0], "the run changed the training data")
    assert_frames_equal(test.frame, before[1], "the run changed the evaluation data")
    assert train.fingerprint == before[2], "the run changed the training data's fingerprint"


def _check_save_load_round_trip(analysis: Analysis, inputs: Callable[[], Inputs]) -> None:
    ctx = inputs().context()
    assert ctx.eval is not None, "the check context has no evaluation split"
    res = run_on(copy_analysis(analysis), ctx)
    with TemporaryDirectory() as tmp:
        where = Path(tmp) / analysis_label(analysis)
        res.save(where)
        back = Result.load(
            where,
            expected_fingerprints={"train": ctx.train.fingerprint, "eval": ctx.eval.fingerprint},
        )
        assert_frames_equal(back.scores, res.scores, "the loaded scores differ")
        assert_metrics_equal(back.metrics, res.metrics, "the loaded metrics differ")
        assert back.params == res.params, "the loaded parameters differ"
        assert back.details == res.details, "the loaded details differ"
        assert back.headline == res.headline, "the loaded headline differs"
        assert back.provenance.seed == res.provenance.seed, "the loaded seed differs"
        assert back.provenance.fingerprints == res.provenance.fingerprints, (
            "the loaded fingerprints differ"
        )
        try:
            Result.load(where, expected_fingerprints={"train": "0" * 16})
        except ResultLoadError as e:
            assert "fingerprint for 'train'" in str(e), f"unclear fingerprint error: {e}"
        else:
            raise AssertionError("Result.load accepted a result of other training data")
        left = [p.name for p in where.iterdir() if p.name.startswith(".")]
        assert not left, f"temp files left behind by the atomic writes: {left}"


def _check_section_renders(analysis: Analysis, inputs: Callable[[], Inputs]) -> None:
    """The report section reads only what the analysis writes in ``details``/metrics."""
    from spurious.report import build_section
    from spurious.report.sections import get_section_renderer

    res = run_on(copy_analysis(analysis), inputs().context())
    try:
        get_section_renderer(res.name)(res)
    except Exception as e:
        raise AssertionError(
            f"the report section raised {type(e).__name__}: {e} (the report would fall "
            "back to the generic section)"
        ) from e
    html = str(build_section(res).html_body)
    assert len(html) > 200, f"the report section is nearly empty: {html!r}"
    assert "Traceback" not in html, "the report section shows a traceback"


def _check_clear_error_on_missing_inputs(analysis: Analysis, inputs: Callable[[], Inputs]) -> None:
    from spurious.context import RunContext

    train = inputs().train
    a = copy_analysis(analysis)
    try:
        a.run(train.frame)  # type: ignore[arg-type]
    except AnalysisError as e:
        assert "expects a spurious Dataset" in str(e), f"unclear error for a data frame: {e}"
    else:
        raise AssertionError("run() accepted a pandas DataFrame instead of a Dataset")
    unlabeled = Dataset.from_frame(
        pd.DataFrame({"question": ["q"], "context": ["c"], "answers": [["a"]]}), "qa"
    )
    unmet = a.unmet(RunContext(unlabeled, progress=False))
    if a.requirements().labels:
        assert any("needs class labels" in why for why in unmet), (
            f"needs labels, but unmet() on unlabelled data says {unmet}"
        )
        try:
            a.run(unlabeled)
        except AnalysisError as e:
            assert "needs class labels" in str(e), f"unclear error for unlabelled data: {e}"
        else:
            raise AssertionError("needs labels, but ran on unlabelled data")


def _check_unmet_requirements_are_skipped(analysis: Analysis, inputs: Callable[[], Inputs]) -> None:
    from spurious.context import RunContext
    from spurious.runner import run_analyses

    ctx = RunContext(inputs().train, progress=False)  # no eval split, no predictions
    a = copy_analysis(analysis)
    name = type(analysis).name
    with TemporaryDirectory() as tmp:
        res = run_analyses([a], ctx, out=tmp)[name]
        unmet = a.unmet(ctx)
        if unmet:
            assert res.status == "skipped", f"unmet {unmet}, but the status is {res.status!r}"
            assert res.error == "; ".join(unmet), f"skipped with {res.error!r}, not {unmet}"
            back = Result.load(Path(tmp) / name)
            assert back.status == "skipped" and back.error == res.error, (
                "the saved result does not say why it was skipped"
            )
        else:
            assert res.status == "ok", (
                f"the data alone meets its requirements, but the run {res.status}: {res.error}"
            )


def _check_failure_is_recorded(analysis: Analysis, inputs: Callable[[], Inputs]) -> None:
    from spurious.context import RunContext
    from spurious.runner import run_analyses

    tiny = tiny_dataset(inputs().train)
    a = copy_analysis(analysis)
    # An analysis that needs an evaluation split gets one (else it is skipped, not failed).
    ctx = RunContext(
        tiny,
        tiny if a.requirements().eval_split else None,
        predictions=model_predictions(tiny)[:1],
        progress=False,
    )
    unmet = a.unmet(ctx)
    if unmet:
        raise unittest.SkipTest(f"two examples of the data do not meet: {'; '.join(unmet)}")
    name = type(analysis).name
    try:
        copy_analysis(analysis).run(context=ctx)
    except SpuriousError:
        pass
    except Exception as e:
        raise AssertionError(
            f"on two examples it crashed with {type(e).__name__}: {e}; refuse too little "
            "data with a clear error (a AnalysisError saying what is needed)"
        ) from e
    else:
        raise AssertionError(
            "it ran on two examples; a statistical analysis should refuse too little data "
            "with a clear error (a AnalysisError saying what is needed)"
        )
    with TemporaryDirectory() as tmp:
        res = run_analyses([a], ctx, out=tmp)[name]
        assert res.status == "failed" and res.error, (
            f"a failing run is recorded as {res.status!r} with error {res.error!r}"
        )
        back = Result.load(Path(tmp) / name)
        assert back.status == "failed" and back.error == res.error, (
            "the saved result does not keep the failure"
        )


#: (name, check) in the order they run: cheap checks of the class first.
CHECKS: tuple[tuple[str, CheckFn], ...] = (
    ("class_attributes", _check_class_attributes),
    ("parameter_constraints", _check_parameter_constraints),
    ("invalid_parameters", _check_invalid_parameters),
    ("config_round_trip", _check_config_round_trip),
    ("clear_error_on_missing_inputs", _check_clear_error_on_missing_inputs),
    ("failure_is_recorded", _check_failure_is_recorded),
    ("one_row_per_example", _check_one_row_per_example),
    ("severity_rests_on_evidence", _check_severity_rests_on_evidence),
    ("same_seed_same_output", _check_same_seed_same_output),
    ("shuffled_labels_give_no_finding", _check_shuffled_labels_give_no_finding),
    ("inputs_not_mutated", _check_inputs_not_mutated),
    ("save_load_round_trip", _check_save_load_round_trip),
    ("section_renders", _check_section_renders),
    ("unmet_requirements_are_skipped", _check_unmet_requirements_are_skipped),
)
