"""Use any scikit-learn classifier as a probe, or build one from a short name."""

from __future__ import annotations

from typing import Any

from sklearn.base import ClassifierMixin, clone, is_classifier

from spurious.exceptions import ParameterError

#: Short names accepted by :func:`make_probe` (and the CLI's ``--probe``).
PROBES = ("logistic", "sklearn-logistic", "linear-svm", "rbf-svm", "mlp")


def make_probe(spec: str | Any = "logistic", random_state: int | None = 0, **kwargs) -> Any:
    """A fresh, unfitted probe.

    Parameters
    ----------
    spec : str or estimator
        ``"logistic"`` (our PyTorch :class:`~spurious.models.LogisticProbe`, the default),
        ``"sklearn-logistic"``, ``"linear-svm"``, ``"rbf-svm"``, ``"mlp"``, or any
        scikit-learn classifier instance (cloned, so the caller's object is untouched).
        It must implement ``predict_proba``, or ``decision_function`` (then a softmax of
        the decision values stands in for probabilities).
    random_state : int, optional
        Seed passed to estimators that take one.
    **kwargs
        Extra parameters for the named probe.

    Examples
    --------
    >>> type(make_probe("logistic")).__name__
    'LogisticProbe'
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> make_probe(DecisionTreeClassifier(max_depth=2)).max_depth
    2
    """
    if not isinstance(spec, str):
        ok = hasattr(spec, "fit") and hasattr(spec, "get_params")
        if not ok or not (isinstance(spec, ClassifierMixin) or is_classifier(spec)):
            raise ParameterError(
                "The 'probe' parameter must be a probe name from "
                f"{list(PROBES)} or a scikit-learn classifier. Got {type(spec).__name__} instead."
            )
        est = clone(spec)
        if "random_state" in est.get_params() and est.get_params()["random_state"] is None:
            est.set_params(random_state=random_state)
        return est
    if spec == "logistic":
        from spurious.models.linear import LogisticProbe

        return LogisticProbe(**kwargs)
    if spec == "sklearn-logistic":
        from sklearn.linear_model import LogisticRegression

        return LogisticRegression(max_iter=kwargs.pop("max_iter", 1000), **kwargs)
    if spec == "linear-svm":
        from sklearn.svm import LinearSVC

        return LinearSVC(random_state=random_state, **kwargs)
    if spec == "rbf-svm":
        from sklearn.svm import SVC

        return SVC(kernel="rbf", random_state=random_state, **kwargs)
    if spec == "mlp":
        from sklearn.neural_network import MLPClassifier

        return MLPClassifier(random_state=random_state, early_stopping=True, **kwargs)
    raise ParameterError(
        f"The 'probe' parameter must be one of {list(PROBES)} or a scikit-learn classifier. "
        f"Got {spec!r} instead."
    )


def predict_proba(model: Any, X) -> Any:
    """``predict_proba`` when available, else a softmax over ``decision_function``."""
    import numpy as np
    from scipy.special import softmax

    if hasattr(model, "predict_proba"):
        return np.asarray(model.predict_proba(X), dtype=np.float64)
    dec = np.asarray(model.decision_function(X), dtype=np.float64)
    if dec.ndim == 1:  # binary: one margin per row
        dec = np.stack([-dec, dec], axis=1) / 2.0
    return softmax(dec, axis=1)
