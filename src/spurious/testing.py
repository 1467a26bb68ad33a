"""The analysis contract as a public check, in the spirit of scikit-learn's ``check_estimator``.

Every analysis (built-in or from a plugin) must pass these checks; the package's own
test suite runs them over every registered analysis. A plugin author runs them on a
new analysis with one call::

    from spurious.testing import check_analysis

    check_analysis(MyAnalysis)  # raises AssertionError naming the failing check

or, in a pytest suite, one test per check::

    from spurious.testing import parametrize_with_checks

    @parametrize_with_checks([MyAnalysis])
    def test_my_analysis(analysis, check):
        check(analysis)

The checks run on small synthetic NLI data (:func:`spurious.data.synthetic.make_nli_artifacts`:
210 training and 90 evaluation examples, and the predictions of two made-up models), so
they take seconds per analysis with its ``fast_params``. A seed is set only where the
analysis has one (a parameter called ``random_state`` or declared with the
``"random_state"`` constraint); an analysis without a seed must be deterministic as it is.

What the checks require (the names are the ``<check>`` part of the test ids):

``class_attributes``
    ``name``, ``description``, ``metric_docs``, ``score_columns``, ``kind`` and a
    :class:`~spurious.analysis.Requirements` are declared.
``parameter_constraints``
    Every ``__init__`` parameter has an entry in ``_parameter_constraints`` and every
    entry is a parameter; ``__init__`` stores its arguments unchanged; ``fast_params``
    are valid.
``invalid_parameters``
    For every declared constraint, a value outside it (a value of no accepted type, one
    past each bound of an ``Interval``, a string outside a ``StrOptions``) is refused
    with a :class:`~spurious.exceptions.ParameterError` whose message names the parameter.
``config_round_trip``
    ``to_config`` is plain JSON that ``from_config`` turns back into the same parameters;
    unknown keys are refused.
``same_seed_same_output``
    Two runs with the same parameters (and seed) give the same scores and metrics.
``one_row_per_example``
    One score row per example of the scored split, ``id`` first, the
    ``<name>_score`` and ``is_<name>_issue`` columns, float metrics, JSON details and a
    complete headline.
``shuffled_labels_give_no_finding``
    With the labels permuted (two permutations) the headline is never a ``moderate`` or
    ``high`` finding.
``severity_rests_on_evidence``
    A ``low``/``moderate``/``high`` severity rests on an interval or a test against a
    null, and a test alone grades ``low`` at most (build headlines with
    :meth:`spurious.analysis.VerdictScale.headline`).
``inputs_not_mutated``
    The datasets and the shared artifacts of the run context are unchanged by a run.
``save_load_round_trip``
    The result saves and loads back identically and checks dataset fingerprints.
``section_renders``
    The report section renders from the result alone, without an error.
``clear_error_on_missing_inputs``
    A data frame instead of a dataset, or missing labels, give a clear error.
``unmet_requirements_are_skipped``
    With inputs that do not meet the requirements, a run records ``skipped`` and why.
``failure_is_recorded``
    On two examples the analysis refuses with a clear error (a
    :class:`~spurious.exceptions.SpuriousError`), recorded as ``failed`` in the result.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import math
import re
import unittest
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from spurious.analysis import Analysis, Requirements
from spurious.data.dataset import Dataset
from spurious.data.predictions import PredictionSet, align_predictions
from spurious.exceptions import AnalysisError, ParameterError, ResultLoadError, SpuriousError
from spurious.results import Result
from spurious.utils.validation import Interval, StrOptions, check_params

if TYPE_CHECKING:  # pragma: no cover
    import pytest

    from spurious.context import RunContext

__all__ = ["analysis_checks", "check_analysis", "parametrize_with_checks"]

#: A check: takes the analysis (an instance, or a class built with its ``fast_params``).
Check = Callable[[Any], None]
#: What ``data`` may be: ``None`` (the built-in synthetic NLI data), a labelled
#: :class:`~spurious.data.Dataset` (split 70/30) or a ``(train, eval)`` pair.
Data = Dataset | tuple[Dataset, Dataset] | None

_SEVERITIES = ("none", "low", "moderate", "high", "info")
_HEADLINE_KEYS = ("label", "value", "text", "verdict", "severity", "inconclusive", "evidence")


# ---------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------
def check_analysis(
    cls_or_instance: type[Analysis] | Analysis, *, data: Data = None, **params: Any
) -> dict[str, str]:
    """Run every check of the analysis contract on one analysis.

    Parameters
    ----------
    cls_or_instance : Analysis subclass or instance
        The analysis. A class is built with its ``fast_params``; an instance is used with
        its parameters (it is not modified: every check builds its own copies).
    data : Dataset or (Dataset, Dataset), optional
        Labelled data to run on: a ``(train, eval)`` pair, or one dataset split 70/30.
        Default: 300 synthetic NLI examples with a planted artifact.
    **params
        Parameters that override the class' ``fast_params`` (or the instance's).

    Returns
    -------
    dict of str to str
        Check name -> ``"passed"``, or ``"skipped: <reason>"`` for a check the inputs
        cannot exercise (e.g. the analysis does not apply to shuffled data).

    Raises
    ------
    AssertionError
        At the first failing check; the message names the analysis and the check.

    Examples
    --------
    >>> from spurious.analysis import get_analysis
    >>> report = check_analysis(get_analysis("atlas"))  # doctest: +SKIP
    >>> report["shuffled_labels_give_no_finding"]  # doctest: +SKIP
    'passed'
    """
    analysis = _as_instance(cls_or_instance, params)
    outcome: dict[str, str] = {}
    for name, check in analysis_checks(analysis, data=data):
        try:
            check(analysis)
        except unittest.SkipTest as e:
            outcome[name] = f"skipped: {e}"
        else:
            outcome[name] = "passed"
    return outcome


def analysis_checks(
    cls_or_instance: type[Analysis] | Analysis, *, data: Data = None
) -> Iterator[tuple[str, Check]]:
    """Yield ``(name, check)`` for every check of the analysis contract.

    Parameters
    ----------
    cls_or_instance : Analysis subclass or instance
        The analysis whose checks are wanted (every analysis gets the same checks today;
        the argument lets a future check depend on the analysis).
    data : Dataset or (Dataset, Dataset), optional
        As in :func:`check_analysis`; built once, on the first check that needs it, and
        shared by the checks yielded here.

    Yields
    ------
    name : str
        The check's name (see the module docstring for what each requires).
    check : callable
        ``check(analysis)`` runs the check on an analysis instance (or class); it raises
        an AssertionError naming the analysis and the check, or ``unittest.SkipTest``
        when the inputs cannot exercise it.

    Examples
    --------
    >>> from spurious.analysis import get_analysis
    >>> names = [name for name, _ in analysis_checks(get_analysis("atlas"))]
    >>> names[:3]
    ['class_attributes', 'parameter_constraints', 'invalid_parameters']
    """
    _as_instance(cls_or_instance, {})  # fail early on something that is not an analysis
    inputs = _default_inputs if data is None else functools.cache(lambda: _Inputs.build(data))
    for name, fn in _CHECKS:
        yield name, _BoundCheck(name, fn, inputs)


def parametrize_with_checks(
    classes: Iterable[type[Analysis] | Analysis],
) -> pytest.MarkDecorator:
    """A ``pytest.mark.parametrize`` decorator: one test per analysis and check.

    The decorated test takes the arguments ``analysis`` (an instance built with the
    class' ``fast_params``) and ``check`` and calls ``check(analysis)``. Test ids are
    ``<analysis>-<check>`` (the analysis' registry ``name``), so ``pytest -k
    length_leakage`` selects one analysis and ``-k shuffled`` one check.

    Parameters
    ----------
    classes : iterable of Analysis subclasses or instances

    Returns
    -------
    pytest.MarkDecorator

    Examples
    --------
    >>> from spurious.analysis import get_analysis
    >>> @parametrize_with_checks([get_analysis("atlas")])  # doctest: +SKIP
    ... def test_contract(analysis, check):
    ...     check(analysis)
    """
    import pytest  # only here: importing spurious.testing never needs pytest

    params = []
    for item in classes:
        analysis = _as_instance(item, {})
        label = _label(analysis)
        for name, check in analysis_checks(analysis):
            params.append(pytest.param(analysis, check, id=f"{label}-{name}"))
    return pytest.mark.parametrize(("analysis", "check"), params)


# ---------------------------------------------------------------------------------------
# The inputs the checks run on
# ---------------------------------------------------------------------------------------
@dataclass
class _Inputs:
    """Train and eval splits, two models' predictions and a shared context, built once."""

    train: Dataset
    eval: Dataset
    predictions: list[PredictionSet]
    _shared: RunContext | None = None
    _shuffled: dict[int, tuple[Dataset, Dataset, list[PredictionSet]]] = field(default_factory=dict)

    @classmethod
    def build(cls, data: Data) -> _Inputs:
        if data is None:
            from spurious.data.synthetic import make_nli_artifacts

            synthetic = make_nli_artifacts(n=300, artifact_rate=0.8, random_state=5)
            train, test = synthetic.dataset.split(0.3, random_state=0)
        elif isinstance(data, Dataset):
            train, test = data.split(0.3, random_state=0)
        else:
            train, test = data
        for what, ds in (("train", train), ("eval", test)):
            if not isinstance(ds, Dataset):
                raise TypeError(
                    f"data must be a spurious Dataset or a (train, eval) pair of them; the "
                    f"{what} split is a {type(ds).__name__}."
                )
        return cls(train, test, _model_predictions(test))

    def context(self) -> RunContext:
        """The shared context: features and heuristics are built once for every check."""
        if self._shared is None:
            self._shared = self.fresh()
        return self._shared

    def fresh(self) -> RunContext:
        """A new context on the same inputs (nothing built yet, no earlier results)."""
        from spurious.context import RunContext

        return RunContext(self.train, self.eval, predictions=self.predictions, progress=False)

    def shuffled(self, seed: int) -> RunContext:
        """A new context on the same rows with permuted labels (train and eval)."""
        from spurious.context import RunContext

        if seed not in self._shuffled:
            s_train = _shuffled(self.train, 10 + seed)
            s_test = _shuffled(self.eval, 20 + seed)
            # The models learned the real task (their predictions follow the unshuffled
            # labels), so against the shuffled gold labels they are right at chance.
            preds = [
                align_predictions(dict(zip(p.ids, p.values, strict=True)), s_test, name=p.name)
                for p in self.predictions
            ]
            self._shuffled[seed] = (s_train, s_test, preds)
        s_train, s_test, preds = self._shuffled[seed]
        return RunContext(s_train, s_test, predictions=preds, progress=False)


@functools.cache
def _default_inputs() -> _Inputs:
    return _Inputs.build(None)


def _model_predictions(test: Dataset) -> list[PredictionSet]:
    if not test.task.has_labels:
        return []
    return [_predictions(test, "model_a", 0.2, 0), _predictions(test, "model_b", 0.4, 1)]


def _predictions(test: Dataset, name: str, noise: float, seed: int) -> PredictionSet:
    # A model that is right on most examples, wrong more often on short last fields
    # (short hypotheses in NLI): a bias the evaluations can find.
    rng = np.random.default_rng(seed)
    last = test.frame[test.task.text_fields[-1]].astype(str)
    short = last.str.split().str.len().to_numpy() < 6
    wrong = rng.random(len(test)) < np.where(short, 2 * noise, noise)
    labels = np.where(wrong, (test.labels + 1) % test.n_classes, test.labels)
    names = np.asarray(test.label_names, dtype=object)
    return align_predictions(dict(zip(test.ids, names[labels], strict=True)), test, name=name)


def _shuffled(ds: Dataset, seed: int) -> Dataset:
    """The same rows and ids with the labels permuted: any association with the text is gone."""
    frame = ds.frame.drop(columns=["label_id"], errors="ignore").copy()
    frame["label"] = np.random.default_rng(seed).permutation(frame["label"].to_numpy())
    return Dataset.from_frame(
        frame, ds.task, label_names=ds.label_names, name=f"{ds.name}-shuffled"
    )


def _tiny(ds: Dataset) -> Dataset:
    """Two examples of ``ds`` (of two different labels when it has labels)."""
    frame = ds.frame
    if ds.task.has_labels:
        first = np.unique(ds.labels, return_index=True)[1][:2]
        frame = frame.iloc[np.sort(first)].drop(columns=["label_id"], errors="ignore")
    else:
        frame = frame.iloc[:2]
    return Dataset.from_frame(
        frame.reset_index(drop=True), ds.task, label_names=ds.label_names, name="two-examples"
    )


# ---------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------
class _BoundCheck:
    """One check bound to its inputs; failures name the analysis and the check."""

    def __init__(self, name: str, fn: Callable[..., None], inputs: Callable[[], _Inputs]):
        self.name = name
        self.fn = fn
        self.inputs = inputs
        self.__name__ = name
        self.__doc__ = fn.__doc__

    def __call__(self, analysis: type[Analysis] | Analysis) -> None:
        analysis = _as_instance(analysis, {})
        try:
            self.fn(analysis, self.inputs)
        except unittest.SkipTest:
            raise
        except AssertionError as e:
            raise AssertionError(f"{_label(analysis)} failed the check {self.name!r}: {e}") from e
        except Exception as e:
            raise AssertionError(
                f"{_label(analysis)} failed the check {self.name!r}: it raised "
                f"{type(e).__name__}: {e}"
            ) from e

    def __repr__(self) -> str:
        return f"<analysis check {self.name!r}>"


def _as_instance(obj: type[Analysis] | Analysis, params: Mapping[str, Any]) -> Analysis:
    if isinstance(obj, type) and issubclass(obj, Analysis):
        return obj(**{**obj.fast_params, **params})
    if isinstance(obj, Analysis):
        if not params:
            return obj
        return type(obj)(**{**obj.get_params(deep=False), **params})
    raise TypeError(f"Expected an Analysis subclass or instance; got {obj!r}.")


def _label(analysis: Analysis) -> str:
    return type(analysis).name or type(analysis).__name__


def _seed_params(cls: type[Analysis]) -> list[str]:
    """The parameters that seed the analysis: ``random_state`` or declared as a seed."""
    names = _init_params(cls)
    return [
        p
        for p in names
        if p == "random_state" or "random_state" in cls._parameter_constraints.get(p, [])
    ]


def _init_params(cls: type[Analysis]) -> list[str]:
    sig = inspect.signature(cls.__init__)
    return [
        p.name
        for p in sig.parameters.values()
        if p.name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def _copy(analysis: Analysis, *, seeded: bool = False, **params: Any) -> Analysis:
    """A new instance with the same parameters; ``seeded`` fixes an unset seed to 0."""
    values = {**analysis.get_params(deep=False), **params}
    if seeded:
        for p in _seed_params(type(analysis)):
            if not isinstance(values.get(p), Integral):
                values[p] = 0
    return type(analysis)(**values)


def _run_on(analysis: Analysis, ctx: RunContext) -> Result:
    unmet = analysis.unmet(ctx)
    if unmet:
        raise AssertionError(
            f"the check data do not meet its requirements ({'; '.join(unmet)}); pass "
            "data= (a labelled dataset, or a (train, eval) pair) that does"
        )
    return analysis.run(context=ctx)


def _assert_metrics_equal(a: Mapping[str, float], b: Mapping[str, float], what: str) -> None:
    assert set(a) == set(b), f"{what}: metric names differ: {sorted(set(a) ^ set(b))}"
    for k in a:
        x, y = a[k], b[k]
        same = (x != x and y != y) or math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-12)
        assert same, f"{what}: metric {k!r} is {x!r} then {y!r}"


def _assert_frames_equal(a: pd.DataFrame, b: pd.DataFrame, what: str) -> None:
    try:
        pd.testing.assert_frame_equal(a, b)
    except AssertionError as e:
        raise AssertionError(f"{what}: {e}") from None


# ---------------------------------------------------------------------------------------
# The checks: fn(analysis, inputs) with ``inputs()`` the shared _Inputs
# ---------------------------------------------------------------------------------------
def _check_class_attributes(analysis: Analysis, inputs: Callable[[], _Inputs]) -> None:
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


def _check_parameter_constraints(analysis: Analysis, inputs: Callable[[], _Inputs]) -> None:
    cls = type(analysis)
    params = _init_params(cls)
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


class _NoAcceptedType:
    """A value of a type no declared constraint accepts."""

    def __repr__(self) -> str:
        return "<an object of no accepted type>"


def _invalid_values(constraints: Sequence[Any]) -> list[Any]:
    """Candidate values outside ``constraints`` (filtered by the constraints themselves)."""
    out: list[Any] = [_NoAcceptedType()]
    for c in constraints:
        if isinstance(c, Interval):
            integral = issubclass(c.type, Integral)
            if c.left is not None:
                out.append(math.ceil(c.left) - 1 if integral else float(c.left) - 1.0)
                if c.closed in ("right", "neither"):  # the excluded bound itself
                    out.append(int(c.left) if integral else float(c.left))
            if c.right is not None:
                out.append(math.floor(c.right) + 1 if integral else float(c.right) + 1.0)
                if c.closed in ("left", "neither"):
                    out.append(int(c.right) if integral else float(c.right))
        elif isinstance(c, StrOptions):
            out.append("__no_such_option__")
    return out


def _is_invalid(constraints: Sequence[Any], name: str, value: Any) -> bool:
    try:
        check_params({name: list(constraints)}, {name: value}, "probe")
    except ParameterError:
        return True
    return False


def _check_invalid_parameters(analysis: Analysis, inputs: Callable[[], _Inputs]) -> None:
    cls = type(analysis)
    base = analysis.get_params(deep=False)
    tried = 0
    problems: list[str] = []
    for name, constraints in cls._parameter_constraints.items():
        if name not in base:
            continue  # reported by the parameter_constraints check
        for value in _invalid_values(constraints):
            if not _is_invalid(constraints, name, value):
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
                    f"{what} is outside its declared constraints ({_describe(constraints)}), "
                    "but validate_params() accepted it"
                )
    assert not problems, "\n".join(problems)
    if not tried and cls._parameter_constraints:
        raise unittest.SkipTest("no declared constraint has a value outside it to try")


def _describe(constraints: Sequence[Any]) -> str:
    return " or ".join(c.__name__ if isinstance(c, type) else str(c) for c in constraints)


def _check_config_round_trip(analysis: Analysis, inputs: Callable[[], _Inputs]) -> None:
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


def _check_same_seed_same_output(analysis: Analysis, inputs: Callable[[], _Inputs]) -> None:
    data = inputs()
    a = _run_on(_copy(analysis, seeded=True), data.fresh())
    b = _run_on(_copy(analysis, seeded=True), data.fresh())
    seed = [f"{p}={a.params.get(p)!r}" for p in _seed_params(type(analysis))]
    what = f"two runs with {', '.join(seed) or 'no seed parameter'}"
    _assert_frames_equal(a.scores, b.scores, f"{what} give different scores")
    _assert_metrics_equal(a.metrics, b.metrics, f"{what} give different metrics")


def _check_one_row_per_example(analysis: Analysis, inputs: Callable[[], _Inputs]) -> None:
    ctx = inputs().context()
    name = type(analysis).name
    a = _copy(analysis)
    res = _run_on(a, ctx)
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
    analysis: Analysis, inputs: Callable[[], _Inputs]
) -> None:
    """A verdict is a claim: with labels permuted there is nothing to find, so no analysis
    may report a MODERATE or HIGH finding (LOW stays possible at the tests' alpha)."""
    data = inputs()
    if not data.train.task.has_labels:
        raise unittest.SkipTest("the data has no labels to shuffle")
    for seed in (0, 1):
        ctx = data.shuffled(seed)
        a = _copy(analysis, seeded=True)
        unmet = a.unmet(ctx)
        if unmet:
            raise unittest.SkipTest(f"{_label(a)} cannot run on the data: {'; '.join(unmet)}")
        head = a.run(context=ctx).headline
        assert head.get("severity") not in ("moderate", "high"), (
            f"labels shuffled (permutation {seed}), yet the headline is a "
            f"{head.get('severity')} finding: {head}"
        )


def _check_severity_rests_on_evidence(analysis: Analysis, inputs: Callable[[], _Inputs]) -> None:
    """Severities other than ``info`` come with the evidence they rest on."""
    head = _run_on(_copy(analysis), inputs().fresh()).headline
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


def _check_inputs_not_mutated(analysis: Analysis, inputs: Callable[[], _Inputs]) -> None:
    ctx = inputs().fresh()
    train, test = ctx.train, ctx.eval
    before = (copy.deepcopy(train.frame), copy.deepcopy(test.frame), train.fingerprint)
    _run_on(_copy(analysis), ctx)
    # Shared artifacts are not changed by the analysis that used them.
    memo = getattr(ctx, "_memo", {})
    shared = {k: v.copy() for k, v in memo.items() if isinstance(v, np.ndarray)}
    _run_on(_copy(analysis), ctx)
    for k, v in shared.items():
        try:
            np.testing.assert_array_equal(memo[k], v)
        except AssertionError:
            raise AssertionError(f"a run changed the shared artifact {k!r} in place") from None
    _assert_frames_equal(train.frame, before[0], "the run changed the training data")
    _assert_frames_equal(test.frame, before[1], "the run changed the evaluation data")
    assert train.fingerprint == before[2], "the run changed the training data's fingerprint"


def _check_save_load_round_trip(analysis: Analysis, inputs: Callable[[], _Inputs]) -> None:
    ctx = inputs().context()
    res = _run_on(_copy(analysis), ctx)
    with TemporaryDirectory() as tmp:
        where = Path(tmp) / _label(analysis)
        res.save(where)
        back = Result.load(
            where,
            expected_fingerprints={"train": ctx.train.fingerprint, "eval": ctx.eval.fingerprint},
        )
        _assert_frames_equal(back.scores, res.scores, "the loaded scores differ")
        _assert_metrics_equal(back.metrics, res.metrics, "the loaded metrics differ")
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


def _check_section_renders(analysis: Analysis, inputs: Callable[[], _Inputs]) -> None:
    """The report section reads only what the analysis writes in ``details``/metrics."""
    from spurious.report import build_section
    from spurious.report.sections import get_section_renderer

    res = _run_on(_copy(analysis), inputs().context())
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


def _check_clear_error_on_missing_inputs(analysis: Analysis, inputs: Callable[[], _Inputs]) -> None:
    from spurious.context import RunContext

    train = inputs().train
    a = _copy(analysis)
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


def _check_unmet_requirements_are_skipped(
    analysis: Analysis, inputs: Callable[[], _Inputs]
) -> None:
    from spurious.context import RunContext
    from spurious.runner import run_analyses

    ctx = RunContext(inputs().train, progress=False)  # no eval split, no predictions
    a = _copy(analysis)
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


def _check_failure_is_recorded(analysis: Analysis, inputs: Callable[[], _Inputs]) -> None:
    from spurious.context import RunContext
    from spurious.runner import run_analyses

    tiny = _tiny(inputs().train)
    a = _copy(analysis)
    # An analysis that needs an evaluation split gets one (else it is skipped, not failed).
    ctx = RunContext(
        tiny,
        tiny if a.requirements().eval_split else None,
        predictions=_model_predictions(tiny)[:1],
        progress=False,
    )
    unmet = a.unmet(ctx)
    if unmet:
        raise unittest.SkipTest(f"two examples of the data do not meet: {'; '.join(unmet)}")
    name = type(analysis).name
    try:
        _copy(analysis).run(context=ctx)
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
_CHECKS: tuple[tuple[str, Callable[[Analysis, Callable[[], _Inputs]], None]], ...] = (
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
