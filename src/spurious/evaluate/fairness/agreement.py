"""Annotator agreement by filter stage (paper 004 Sec. 5.3, Fig. 5 and 9).

Per example, *agreement* is the share of its annotator labels equal to the gold label
(SNLI: 5 labels; 3/5 = 0.6 is the lowest a validated pair can have). With many labels per
item (ChaosNLI: 100), the entropy of the label distribution (bits) measures how contested
an item is. Both are averaged over the examples of each stage (first-round filtered,
later filtered, AF-selected), per seed then over seeds, with bootstrap intervals over the
examples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from spurious.data.annotations import label_counts, read_annotations
from spurious.exceptions import DataFormatError, ParameterError

__all__ = [
    "agreement_by_stage",
    "counts_from_lists",
    "coverage",
    "gold_agreement",
    "label_entropy",
    "read_label_counts",
]


def gold_agreement(
    label_counts: Sequence[Mapping[str, float] | None], gold: Sequence[str]
) -> np.ndarray:
    """Share of annotator labels equal to the gold label (NaN without annotations).

    Parameters
    ----------
    label_counts : sequence of {label name: count} or None
    gold : sequence of str
        Gold label names.

    Examples
    --------
    >>> gold_agreement([{"a": 4, "b": 1}, None], ["a", "b"]).tolist()
    [0.8, nan]
    """
    out = np.full(len(gold), np.nan)
    for i, (c, g) in enumerate(zip(label_counts, gold, strict=True)):
        if c:
            total = float(sum(c.values()))
            if total > 0:
                out[i] = float(c.get(g, 0)) / total
    return out


def label_entropy(label_counts: Sequence[Mapping[str, float] | None]) -> np.ndarray:
    """Entropy (bits) of each example's annotator label distribution (NaN without any).

    Examples
    --------
    >>> label_entropy([{"a": 2, "b": 2}, {"a": 5}, None]).tolist()
    [1.0, 0.0, nan]
    """
    out = np.full(len(label_counts), np.nan)
    for i, c in enumerate(label_counts):
        if c:
            p = np.array([v for v in c.values() if v > 0], dtype=float)
            if p.sum() > 0:
                p = p / p.sum()
                out[i] = float(-(p * np.log2(p)).sum()) + 0.0
    return out


def counts_from_lists(
    labels: Sequence[Any],
    label_names: Sequence[str] | None = None,
    *,
    ids: Sequence[Any] | np.ndarray | None = None,
    name: str = "dataset",
) -> list[dict[str, float] | None]:
    """Annotator label lists (``Dataset.frame["annotator_labels"]``) -> label counts.

    Parameters
    ----------
    labels : sequence of lists (or None: not annotated)
    label_names : sequence of str, optional
        The dataset's label names: every annotator label must be one of them (or a
        name's unique first letter), else an error names the example and the label. A
        label outside them would silently count as disagreeing with the gold.
    ids : sequence, optional
        The examples' ids, for messages (default: row numbers from 1).
    name : str
        The dataset's name, for messages.

    Raises
    ------
    DataFormatError
        A label that is not a label name, or a string where a list belongs (see
        :func:`spurious.data.annotations.label_counts`; never split into letters).

    Examples
    --------
    >>> counts_from_lists([["a", "a", "b"], None])
    [{'a': 2.0, 'b': 1.0}, None]
    >>> counts_from_lists([["a", "banana"]], ["a", "b"], ids=["x7"])
    Traceback (most recent call last):
    ...
    spurious.exceptions.DataFormatError: dataset, id 'x7': label 'banana' is not one of ['a', 'b'] ...
    """
    out: list[dict[str, float] | None] = []
    for k, v in enumerate(labels):
        where = f"{name}, " + (f"row {k + 1}" if ids is None else f"id {str(ids[k])!r}")
        if label_names is not None:
            out.append(label_counts(v, label_names, where))
            continue
        missing = v is None or (isinstance(v, float) and math.isnan(v))
        if not missing and not isinstance(v, list | tuple | np.ndarray):
            label_counts(v, (), where)  # the error for a string (or number) where a list belongs
        c: dict[str, float] = {}
        for lab in [] if missing else v:
            if lab is None or str(lab) in ("", "-"):
                continue
            c[str(lab)] = c.get(str(lab), 0.0) + 1.0
        out.append(c or None)
    return out


def coverage(
    counts: Sequence[Mapping[str, float] | None], name: str
) -> tuple[dict[str, Any], str | None]:
    """How many examples carry annotations: a record for the result, and a warning when
    only some do (agreement is then a mean over those only).

    Examples
    --------
    >>> coverage([{"a": 5.0}, None, None, None], "dev")
    ({'n_annotated': 1, 'n_examples': 4, 'share': 0.25}, 'fairness: only 1 of the 4 examples of dev carry annotator labels (25.0%); annotator agreement and label entropy by stage are means over those 1 only.')
    >>> coverage([{"a": 5.0}], "dev")[1] is None
    True
    """
    n, k = len(counts), sum(1 for c in counts if c)
    record = {"n_annotated": k, "n_examples": n, "share": k / n if n else math.nan}
    if 0 < k < n:
        return record, (
            f"fairness: only {k:,} of the {n:,} examples of {name} carry annotator labels "
            f"({k / n:.1%}); annotator agreement and label entropy by stage are means over "
            f"those {k:,} only."
        )
    return record, None


def read_label_counts(path: str | Path, label_names: Sequence[str]) -> dict[str, dict[str, float]]:
    """Read per-example annotations: id -> {label name: count}.

    JSONL, one object per example, with an id (``id`` or ChaosNLI's ``uid``) and either
    ``annotator_labels`` (a list of labels) or ``label_counter`` (ChaosNLI: ``{"e": 80,
    "n": 15, "c": 5}``; keys are label names or their unique first letters).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "chaos.jsonl"
    >>> _ = f.write_text('{"uid": "x", "label_counter": {"e": 3, "c": 1}}\\n')
    >>> read_label_counts(f, ["entailment", "neutral", "contradiction"])
    {'x': {'entailment': 3.0, 'contradiction': 1.0}}
    """
    # One reader for annotation files (formats, label initials, errors naming the row).
    frame = read_annotations(path, label_names)
    if frame.empty:
        return {}
    missing = frame.index[frame["id"].isna()]
    if len(missing):
        raise DataFormatError(
            f"{path}: example {int(missing[0]) + 1} has no 'id' or 'uid' field (an id maps "
            "annotations to rows here; `spurious fairness --annotations` can match by text)."
        )
    return dict(zip(frame["id"], frame["counts"], strict=True))


def agreement_by_stage(
    values: np.ndarray,
    stages: np.ndarray,
    *,
    n_bootstrap: int = 1000,
    confidence: float = 0.95,
    random_state: int | None = 0,
) -> dict[int, dict[str, float]]:
    """Mean of ``values`` among the examples of each stage, averaged over seeds.

    Parameters
    ----------
    values : float array (n,)
        Per-example agreement (or entropy); NaN = no annotations (left out).
    stages : int array (n_seeds, n)
        Stage codes (0 first round, 1 later, 2 AF-selected).
    n_bootstrap : int
        Draws over the annotated examples (0: no interval).
    confidence : float
    random_state : int, optional

    Returns
    -------
    dict stage code -> {"mean", "ci_low", "ci_high", "n"}
        ``n`` is the mean number of annotated examples in the stage over seeds.

    Examples
    --------
    >>> v = np.array([1.0, 1.0, 0.6, 0.8])
    >>> r = agreement_by_stage(v, np.array([[0, 0, 2, 2]]), n_bootstrap=0)
    >>> r[0]["mean"], r[2]["mean"], r[1]["n"]
    (1.0, 0.7, 0.0)
    """
    if not 0 < confidence < 1:
        raise ParameterError(f"The 'confidence' parameter must be in (0, 1). Got {confidence}.")
    values = np.asarray(values, dtype=float)
    stages = np.atleast_2d(np.asarray(stages))
    ok = np.isfinite(values)
    v, st = values[ok], stages[:, ok]
    n = len(v)

    def mean_over_seeds(weights: np.ndarray, code: int) -> np.ndarray:
        # weights (b, n) -> (b,) mean over seeds of the weighted stage mean
        m = (st == code).astype(float)  # (S, n)
        with np.errstate(invalid="ignore", divide="ignore"):
            per_seed = (weights * v) @ m.T / (weights @ m.T)  # (b, S)
        return np.nanmean(per_seed, axis=1) if np.isfinite(per_seed).any() else per_seed[:, 0]

    out: dict[int, dict[str, float]] = {}
    rng = np.random.default_rng(random_state)
    draws = (
        rng.multinomial(n, np.full(n, 1.0 / n), size=n_bootstrap).astype(float)
        if n_bootstrap > 0 and n > 0
        else None
    )
    alpha = (1 - confidence) / 2
    for code in (0, 1, 2):
        with np.errstate(invalid="ignore"):
            mean = float(mean_over_seeds(np.ones((1, n)), code)[0]) if n else math.nan
        lo = hi = math.nan
        if draws is not None:
            b = mean_over_seeds(draws, code)
            b = b[np.isfinite(b)]
            if len(b):
                lo, hi = float(np.quantile(b, alpha)), float(np.quantile(b, 1 - alpha))
        out[code] = {
            "mean": mean,
            "ci_low": lo,
            "ci_high": hi,
            "n": float((st == code).sum(axis=1).mean()) if st.size else 0.0,
        }
    return out
