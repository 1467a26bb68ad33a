"""Plant a synthetic shortcut of known strength into a copy of a real labelled dataset.

The canary (:mod:`spurious.canary`) asks whether an audit would see a shortcut of a given
strength in *this* data. Each plant changes one text field of a seeded share of one
label's examples and records exactly which rows it changed, so a detector's flags can be
scored against the truth:

- ``"token"``: a word that occurs nowhere in the data is inserted at a random word
  position. Planted into ``rate`` of a label's examples, it is a perfect cue where it
  occurs (p(label | token) = 1), the shape of "nobody" -> contradiction in SNLI. In the
  field that is not the usual partial input (the premise), it is the shortcut "in only one
  field" that a hypothesis-only audit cannot see.
- ``"length"``: the field gets the same field of another random row (any label) appended,
  roughly doubling its length: the words come from the data's own distribution, only the
  length carries the label.
- ``"overlap"`` (two-field tasks): each word of the field is replaced, with probability
  1/2, by a random word of the other field; the length is kept, the lexical overlap
  between the fields rises (the shape of the overlap heuristic of McCoy et al. 2019).

Ids, labels and every other row are unchanged, so a planted copy lines up row for row with
the original.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from numbers import Real
from typing import Any

import numpy as np

from spurious.data.dataset import Dataset
from spurious.data.plant_mcq import plant_gold_options
from spurious.exceptions import ParameterError
from spurious.utils.validation import Interval, StrOptions, check_params

__all__ = ["PLANT_KINDS", "PlantedData", "default_field", "plant_shortcut"]

#: The kinds of shortcut :func:`plant_shortcut` knows.
PLANT_KINDS = ("token", "length", "overlap")
#: The planted word when none is given: letters that English text does not use together.
DEFAULT_TOKEN = "zqxjv"


@dataclass(frozen=True, eq=False)
class PlantedData:
    """A copy of a dataset with one planted shortcut.

    Attributes
    ----------
    dataset : Dataset
        The copy (same ids, labels and row order as the original).
    planted : numpy.ndarray of bool
        True exactly on the rows whose text was changed.
    spec : dict
        ``kind``, ``field``, ``label``, ``rate``, ``token`` (for ``"token"``), ``n_planted``
        and ``random_state``: plain data, for tables.
    """

    dataset: Dataset
    planted: np.ndarray
    spec: dict[str, Any] = field(default_factory=dict)


def default_field(dataset: Dataset) -> str:
    """The field a shortcut goes into by default: the last text field (the hypothesis of
    NLI, the second sentence of a pair, the text of a one-field task).

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> default_field(make_nli_artifacts(n=30, random_state=0).dataset)
    'hypothesis'
    """
    if dataset.task.multiple_choice:
        return "options"  # the gold option of an item (spurious.data.plant_mcq)
    return dataset.task.text_fields[-1]


def _words(text: str) -> list[str]:
    return text.split()


def plant_shortcut(
    dataset: Dataset,
    kind: str = "token",
    *,
    rate: float = 0.05,
    label: str | None = None,
    field: str | None = None,
    token: str = DEFAULT_TOKEN,
    random_state: int | np.random.Generator | None = 0,
) -> PlantedData:
    """Plant one shortcut into ``rate`` of ``label``'s examples of a copy of ``dataset``.

    Parameters
    ----------
    dataset : Dataset
        A labelled dataset (tasks ``nli``, ``pair``, ``text``; ``mcq``: see
        :mod:`spurious.data.plant_mcq`, the plant goes into the gold option of ``rate``
        of all items and ``label`` / ``field`` are not used).
    kind : {"token", "length", "overlap"}, default="token"
        See the module docstring; ``"overlap"`` needs two text fields.
    rate : float in (0, 1], default=0.05
        Share of ``label``'s examples that get the shortcut (``round(rate * n_label)``,
        at least one).
    label : str, optional
        The label the shortcut points to (default: the first label name).
    field : str, optional
        The text field that is changed (default :func:`default_field`).
    token : str, default="zqxjv"
        ``kind="token"``: the planted word; one word of letters that occurs in no text
        field of the data.
    random_state : int, Generator or None, default=0
        Seed of the rows, positions and donor rows.

    Returns
    -------
    PlantedData

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> data = make_nli_artifacts(n=60, artifact_rate=0.0, random_state=0).dataset
    >>> out = plant_shortcut(data, "token", rate=0.5, label="neutral")
    >>> int(out.planted.sum()), out.spec["n_planted"]
    (10, 10)
    >>> bool(out.dataset.frame["hypothesis"][out.planted].str.contains("zqxjv").all())
    True
    >>> (out.dataset.frame["label"][out.planted] == "neutral").all()
    np.True_
    """
    check_params(
        {
            "kind": [StrOptions(set(PLANT_KINDS))],
            "rate": [Interval(Real, 0, 1, closed="right")],
            "label": [str, None],
            "field": [str, None],
            "token": [str],
        },
        {
            "kind": kind,
            "rate": rate,
            "label": label,
            "field": field,
            "token": token,
        },
        "plant_shortcut",
    )
    task = dataset.task
    if task.multiple_choice:  # into the gold option of ``rate`` of all items
        return PlantedData(*plant_gold_options(dataset, kind, rate=rate, token=token,
                                               random_state=random_state))  # fmt: skip
    if not task.has_labels:
        raise ParameterError(
            f"plant_shortcut needs class labels; task {task.name!r} has none. Got a "
            f"{task.name!r} dataset instead."
        )
    fields = list(task.text_fields)
    field = default_field(dataset) if field is None else field
    if field not in fields:
        raise ParameterError(
            f"The 'field' parameter of plant_shortcut must be one of {fields}. "
            f"Got {field!r} instead."
        )
    label = dataset.label_names[0] if label is None else label
    if label not in dataset.label_names:
        raise ParameterError(
            f"The 'label' parameter of plant_shortcut must be one of "
            f"{list(dataset.label_names)}. Got {label!r} instead."
        )
    if kind == "overlap" and len(fields) < 2:
        raise ParameterError(
            f"The 'kind' parameter of plant_shortcut is 'overlap', which needs two text "
            f"fields; task {task.name!r} has {fields}."
        )
    if kind == "token":
        if not re.fullmatch(r"[A-Za-z]+", token):
            raise ParameterError(
                "The 'token' parameter of plant_shortcut must be one word of letters. "
                f"Got {token!r} instead."
            )
        pattern = rf"(?i)\b{re.escape(token)}\b"
        for f in fields:
            hits = dataset.frame[f].str.contains(pattern, regex=True)
            if hits.any():
                row = int(np.flatnonzero(hits.to_numpy())[0])
                raise ParameterError(
                    f"The 'token' parameter of plant_shortcut must not occur in the data; "
                    f"{token!r} occurs in field {f!r} (row {row}, id "
                    f"{dataset.ids[row]!r}). Pick another word."
                )

    rng = np.random.default_rng(random_state)
    y = dataset.labels
    own = np.flatnonzero(y == dataset.label_names.index(label))
    k = min(len(own), max(1, round(rate * len(own))))
    rows = np.sort(rng.choice(own, size=k, replace=False))
    frame = dataset.frame.copy()
    texts = frame[field].to_numpy(dtype=object).copy()
    if kind == "token":
        for i in rows:
            words = _words(texts[i])
            words.insert(int(rng.integers(0, len(words) + 1)), token)
            texts[i] = " ".join(words)
    elif kind == "length":
        donors = rng.integers(0, len(frame) - 1, size=len(rows))
        donors = np.where(donors >= rows, donors + 1, donors)  # never the row itself
        original = frame[field].to_numpy(dtype=object)
        for i, d in zip(rows, donors, strict=True):
            texts[i] = f"{texts[i]} {original[d]}".strip()
    else:
        other = fields[0] if field != fields[0] else fields[1]
        source = frame[other].to_numpy(dtype=object)
        for i in rows:
            words, pool = _words(texts[i]), _words(source[i])
            if not pool:
                continue
            swap = rng.random(len(words)) < 0.5
            for j in np.flatnonzero(swap):
                words[j] = pool[int(rng.integers(0, len(pool)))]
            texts[i] = " ".join(words)
    frame[field] = texts
    planted = np.zeros(len(frame), dtype=bool)
    planted[rows] = True
    copy = Dataset(task, frame, dataset.label_names, f"{dataset.name}+{kind}@{field}")
    spec = {
        "kind": kind,
        "field": field,
        "label": label,
        "rate": float(rate),
        "n_planted": int(k),
        "n_label": len(own),
        "random_state": random_state if isinstance(random_state, int | None) else "Generator",
    }
    if kind == "token":
        spec["token"] = token
    return PlantedData(copy, planted, spec)
