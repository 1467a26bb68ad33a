"""check_params and the shape of scikit-learn's private parameter validation we build on.

``spurious.utils.validation`` wraps ``sklearn.utils._param_validation``, a private module
that may change in any scikit-learn release. These tests pin down what we rely on, so
that a release that changes it fails here, loudly, instead of in every detector.
"""

from __future__ import annotations

import inspect
import re
from numbers import Integral, Real
from pathlib import Path

import numpy as np
import pytest
import sklearn

from spurious.exceptions import ParameterError
from spurious.utils import validation
from spurious.utils.validation import (
    HasMethods,
    Interval,
    InvalidParameterError,
    Options,
    RealNotInt,
    StrOptions,
    check_params,
)

ROOT = Path(__file__).resolve().parents[1]


# -- the private API ----------------------------------------------------------------------
def test_private_module_has_what_we_import() -> None:
    from sklearn.utils import _param_validation as private

    for name in ("HasMethods", "Interval", "Options", "RealNotInt", "StrOptions"):
        assert inspect.isclass(getattr(private, name)), name
    assert issubclass(private.InvalidParameterError, ValueError)
    sig = inspect.signature(private.validate_parameter_constraints)
    assert list(sig.parameters)[:3] == ["parameter_constraints", "params", "caller_name"]
    # Interval(type, left, right, *, closed) and the closed= spellings we use.
    interval = inspect.signature(private.Interval)
    assert list(interval.parameters)[:3] == ["type", "left", "right"]
    assert interval.parameters["closed"].kind is inspect.Parameter.KEYWORD_ONLY
    for closed in ("left", "right", "both", "neither"):
        Interval(Real, 0, 1, closed=closed)


@pytest.mark.parametrize(
    ("constraint", "value", "message"),
    [
        (
            Interval(Integral, 1, None, closed="left"),
            0,
            "The 'k' parameter of X must be an int in the range [1, inf). Got 0 instead.",
        ),
        (
            Interval(Real, 0, 1, closed="both"),
            1.5,
            "The 'k' parameter of X must be a float in the range [0.0, 1.0]. Got 1.5 instead.",
        ),
        (
            Interval(RealNotInt, 0, 1, closed="neither"),
            1,
            "The 'k' parameter of X must be a float in the range (0.0, 1.0). Got 1 instead.",
        ),
        (
            StrOptions({"only"}),
            "other",
            "The 'k' parameter of X must be a str among {'only'}. Got 'other' instead.",
        ),
    ],
)
def test_message_format(constraint: object, value: object, message: str) -> None:
    with pytest.raises(ParameterError) as info:
        check_params({"k": [constraint]}, {"k": value}, "X")
    assert str(info.value) == message


def test_several_constraints_are_joined_with_or() -> None:
    constraints = {"step": [Interval(Real, 0, None, closed="neither"), None]}
    with pytest.raises(ParameterError, match=r"^The 'step' parameter of X must be ") as info:
        check_params(constraints, {"step": -1}, "X")
    assert str(info.value).endswith(" or None. Got -1 instead.")
    check_params(constraints, {"step": None}, "X")
    check_params(constraints, {"step": 0.5}, "X")


def test_string_constraints_we_use() -> None:
    c = {"flag": ["boolean"], "seed": ["random_state"], "x": ["array-like"]}
    check_params(c, {"flag": np.bool_(True), "seed": None, "x": [1, 2]}, "X")
    check_params(c, {"flag": False, "seed": np.random.RandomState(0), "x": np.ones(2)}, "X")
    with pytest.raises(ParameterError, match=r"^The 'flag' parameter of X must be an instance of"):
        check_params(c, {"flag": "yes", "seed": 0, "x": [1]}, "X")
    with pytest.raises(ParameterError, match=r"^The 'seed' parameter of X must be "):
        check_params(c, {"flag": True, "seed": "zero", "x": [1]}, "X")


def test_options_and_has_methods() -> None:
    check_params({"m": [Options(str, {"a", "b"})]}, {"m": "a"}, "X")

    class Fits:
        def fit(self) -> None: ...

    check_params({"est": [HasMethods(["fit"])]}, {"est": Fits()}, "X")
    with pytest.raises(ParameterError, match=r"^The 'est' parameter of X must be an object "):
        check_params({"est": [HasMethods(["fit"])]}, {"est": 3}, "X")


# -- check_params -------------------------------------------------------------------------
def test_check_params_raises_our_error_without_sklearn_context() -> None:
    with pytest.raises(ParameterError) as info:
        check_params({"k": [Interval(Integral, 1, None, closed="left")]}, {"k": 0}, "AFLite")
    assert isinstance(info.value, ValueError)
    assert not isinstance(info.value, InvalidParameterError)
    assert info.value.__cause__ is None and info.value.__suppress_context__
    # Parameters without constraints are not checked.
    check_params({}, {"anything": object()}, "X")


def test_only_utils_validation_imports_the_private_module() -> None:
    pattern = re.compile(r"_param_validation|\._validate_params\(")
    offenders = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "src" / "spurious").rglob("*.py"))
        if p.name != "validation.py" and pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []


# -- the pin --------------------------------------------------------------------------------
def test_pyproject_pins_the_verified_range_and_it_holds_the_installed_version() -> None:
    tomllib = pytest.importorskip("tomllib")
    specifiers = pytest.importorskip("packaging.specifiers")
    requirements = pytest.importorskip("packaging.requirements")
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (sk,) = [requirements.Requirement(d) for d in deps if d.startswith("scikit-learn")]
    assert sk.specifier == specifiers.SpecifierSet(validation.SKLEARN_VERSIONS)
    assert any(s.operator == "<" for s in sk.specifier), "scikit-learn needs an upper bound"
    assert sk.specifier.contains(sklearn.__version__), (
        f"scikit-learn {sklearn.__version__} is outside the verified range {sk.specifier}; "
        "run this file against it and widen the pin in pyproject.toml and "
        "spurious.utils.validation.SKLEARN_VERSIONS."
    )
