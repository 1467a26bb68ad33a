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
they take seconds per analysis with its ``fast_params``; an analysis of multiple-choice
items only gets as many synthetic items with a planted length cue instead
(:func:`spurious.data.synthetic_mcq.make_mcq_artifacts`, predictions as letters). A seed
is set only where the analysis has one (a parameter called ``random_state`` or declared with the
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

import functools
import unittest
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from spurious.analysis import Analysis
from spurious.testing.checks import CHECKS, CheckFn
from spurious.testing.data import Data, Inputs, default_inputs_for
from spurious.testing.support import analysis_label, as_instance

if TYPE_CHECKING:  # pragma: no cover
    import pytest

__all__ = ["analysis_checks", "check_analysis", "parametrize_with_checks"]

#: A check: takes the analysis (an instance, or a class built with its ``fast_params``).
Check = Callable[[Any], None]


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
    analysis = as_instance(cls_or_instance, params)
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
    analysis = as_instance(cls_or_instance, {})  # fail early on something that is not one
    inputs = (
        default_inputs_for(analysis)
        if data is None
        else functools.cache(lambda: Inputs.build(data))
    )
    for name, fn in CHECKS:
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
        analysis = as_instance(item, {})
        label = analysis_label(analysis)
        for name, check in analysis_checks(analysis):
            params.append(pytest.param(analysis, check, id=f"{label}-{name}"))
    return pytest.mark.parametrize(("analysis", "check"), params)


# ---------------------------------------------------------------------------------------
# A check bound to its inputs
# ---------------------------------------------------------------------------------------
class _BoundCheck:
    """One check bound to its inputs; failures name the analysis and the check."""

    def __init__(self, name: str, fn: CheckFn, inputs: Callable[[], Inputs]):
        self.name = name
        self.fn = fn
        self.inputs = inputs
        self.__name__ = name
        self.__doc__ = fn.__doc__

    def __call__(self, analysis: type[Analysis] | Analysis) -> None:
        instance = as_instance(analysis, {})
        try:
            self.fn(instance, self.inputs)
        except unittest.SkipTest:
            raise
        except AssertionError as e:
            raise AssertionError(
                f"{analysis_label(instance)} failed the check {self.name!r}: {e}"
            ) from e
        except Exception as e:
            raise AssertionError(
                f"{analysis_label(instance)} failed the check {self.name!r}: it raised "
                f"{type(e).__name__}: {e}"
            ) from e

    def __repr__(self) -> str:
        return f"<analysis check {self.name!r}>"
