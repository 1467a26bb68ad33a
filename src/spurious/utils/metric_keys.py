"""Metric keys that name models, adversaries or heuristics: ``<metric>/<name>[/<name>]``.

A flat key such as ``acc_<model>_<adversary>`` cannot be taken apart again when a name
holds an underscore (``acc_bert_base_bow``: model ``bert`` and adversary ``base_bow``,
or model ``bert_base`` and adversary ``bow``?), and two different pairs can even give
the same key. Keys that are *about* something named by the user therefore put the names
in their own segments, separated by ``/``, which is escaped inside a name (``%2F``, and
``%`` itself as ``%25``), so a key always splits back into its parts:

- the first segment says what the number is, statistic included: ``f1``, ``f1_ci_low``,
  ``bias``, ``bias_mc_sd``, ``kendall_tau_null_p``;
- the following segments say whom it is about, in a fixed, documented order (model then
  adversary; model then heuristic).

Build keys with :func:`metric_key` and read them with :func:`split_metric_key`; never
slice them by hand.
"""

from __future__ import annotations

from spurious.exceptions import ParameterError

__all__ = ["SEPARATOR", "metric_key", "split_metric_key"]

#: The separator between a metric and the names it is about.
SEPARATOR = "/"


def _escape(name: str) -> str:
    return str(name).replace("%", "%25").replace(SEPARATOR, "%2F")


def _unescape(part: str) -> str:
    return part.replace("%2F", SEPARATOR).replace("%25", "%")


def metric_key(metric: str, *names: str) -> str:
    """The key of ``metric`` about ``names`` (each escaped so that it is one segment).

    Examples
    --------
    >>> metric_key("f1", "bert_base", "qa_position")
    'f1/bert_base/qa_position'
    >>> metric_key("bias", "org/model", "answer_length")
    'bias/org%2Fmodel/answer_length'
    >>> metric_key("max_bias")
    'max_bias'
    """
    if not metric or SEPARATOR in metric:
        raise ParameterError(
            f"The 'metric' parameter of metric_key must be a non-empty name without "
            f"{SEPARATOR!r}. Got {metric!r} instead."
        )
    return SEPARATOR.join([metric, *(_escape(n) for n in names)])


def split_metric_key(key: str) -> tuple[str, tuple[str, ...]]:
    """``(metric, names)`` of a key built by :func:`metric_key`.

    Examples
    --------
    >>> split_metric_key("f1_ci_low/bert_base/qa_position")
    ('f1_ci_low', ('bert_base', 'qa_position'))
    >>> split_metric_key(metric_key("bias", "a/b", "100%"))
    ('bias', ('a/b', '100%'))
    """
    metric, *names = str(key).split(SEPARATOR)
    return metric, tuple(_unescape(n) for n in names)
