"""Per-example annotations (several annotators' labels) read from a file and matched to a dataset.

An annotation file holds, per example, either a list of labels (``annotator_labels``,
SNLI's original format) or label counts (ChaosNLI's ``label_counter``: ``{"e": 80,
"n": 15, "c": 5}``; keys are label names or their unique first letters), with an id
(``id``, ``uid``, ``pairID``, ``guid``, or ``id_field``) and, where the file has them,
the example's texts (top level or under ChaosNLI's ``example``; ``premise`` /
``sentence1`` ...).

:func:`match_annotations` matches the file's examples to the dataset's rows by id, or by
text when the ids do not match (ChaosNLI is keyed by SNLI's ``pairID``; a copy of SNLI
without that column has content-hash ids, but the same premise and hypothesis), says how
many matched, and refuses a file of which fewer than ``min_match`` of the examples match
the dataset: a wrong or mis-keyed file must not turn into a silent "no annotations".
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.data.tasks import FIELD_ALIASES
from spurious.exceptions import DataFormatError, ParameterError, SchemaError
from spurious.utils.io import check_input_file, read_input_text, text_lines

logger = logging.getLogger(__name__)

__all__ = [
    "ID_FIELDS",
    "MIN_MATCH",
    "AnnotationMatch",
    "label_counts",
    "match_annotations",
    "read_annotations",
]

#: Id keys tried, in order, when ``id_field`` is not given.
ID_FIELDS = ("id", *FIELD_ALIASES["id"])
#: Default smallest share of the file's examples that must match the dataset.
MIN_MATCH = 0.5
#: How messages name the annotation file.
ANNOTATIONS_WHAT = "The annotations file"


@dataclass(frozen=True)
class AnnotationMatch:
    """Annotations aligned to a dataset's rows.

    Attributes
    ----------
    counts : list of dict or None
        One entry per dataset row: ``{label name: count}``, or None (not annotated).
    by : {"id", "text"}
        How the file's examples were matched to the rows.
    n_file : int
        Examples in the file.
    n_matched : int
        Of them, the ones that matched a dataset row.
    n_annotated : int
        Dataset rows that received annotations (several rows with the same text can
        share one annotated example).
    source : str or None
    """

    counts: list[dict[str, float] | None]
    by: str
    n_file: int
    n_matched: int
    n_annotated: int
    source: str | None = None

    @property
    def summary(self) -> str:
        """How many matched, in words."""
        return (
            f"{self.n_matched:,} of the {self.n_file:,} annotated examples of "
            f"{self.source or 'the annotations'} matched by {self.by}; "
            f"{self.n_annotated:,} of {len(self.counts):,} rows annotated"
        )

    def label_lists(self) -> list[list[str]]:
        """Counts as lists of labels (``annotator_labels``); ``[]`` where not annotated."""
        out = []
        for c in self.counts:
            labels: list[str] = []
            for name, k in (c or {}).items():
                if float(k) != int(k):
                    raise SchemaError(
                        f"Annotations {self.source!r}: label {name!r} has a non-integer count "
                        f"{k}; lists of labels need whole counts."
                    )
                labels.extend([name] * int(k))
            out.append(labels)
        return out


def read_annotations(
    path: str | os.PathLike[str],
    label_names: Sequence[str],
    *,
    id_field: str | None = None,
) -> pd.DataFrame:
    """Read an annotation file: one row per annotated example.

    Parameters
    ----------
    path : path
        JSONL (one object per example), a JSON array of objects, or a table the data
        readers read (Parquet, CSV ...) with the same columns.
    label_names : sequence of str
        The dataset's labels; a file's label may also be a label's unique first letter.
        Any other label is an error naming the example and the label (see
        :func:`label_counts`).
    id_field : str, optional
        The id key (default: the first of :data:`ID_FIELDS` present).

    Returns
    -------
    pandas.DataFrame
        ``id`` (str or None), ``counts`` (``{label name: count}``) and the text fields
        the file has (top level or under ``example``), under their own names.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "chaos.jsonl"
    >>> _ = f.write_text('{"uid": "x", "label_counter": {"e": 3, "c": 1}, '
    ...                  '"example": {"premise": "A", "hypothesis": "B"}}\\n')
    >>> read_annotations(f, ["entailment", "neutral", "contradiction"]).iloc[0].to_dict()
    {'id': 'x', 'counts': {'entailment': 3.0, 'contradiction': 1.0}, 'premise': 'A', 'hypothesis': 'B'}
    """
    # Checked before it is opened: a FIFO would block, a device never end.
    path = check_input_file(path, what=ANNOTATIONS_WHAT, kind="annotations")
    records = _records(path)
    names = list(label_names)
    rows = []
    for where, rec in records:
        key = rec.get(id_field) if id_field else next(
            (rec[k] for k in ID_FIELDS if rec.get(k) is not None), None
        )  # fmt: skip
        if "label_counter" in rec:
            counts = _counter(rec["label_counter"], names, f"{path}{where}")
        elif "annotator_labels" in rec:
            counts = label_counts(rec["annotator_labels"], names, f"{path}{where}") or {}
        else:
            raise DataFormatError(
                f"{path}{where}: needs 'label_counter' (ChaosNLI) or 'annotator_labels' (a "
                f"list of labels); keys found: {sorted(rec)}."
            )
        texts = {k: v for k, v in rec.items() if isinstance(v, str)}
        if isinstance(rec.get("example"), Mapping):  # ChaosNLI keeps the texts here
            texts.update({k: v for k, v in rec["example"].items() if isinstance(v, str)})
        for k in (*ID_FIELDS, id_field):
            texts.pop(k, None)
        rows.append({"id": None if key is None else str(key), "counts": counts, **texts})
    return pd.DataFrame(rows)


def match_annotations(
    annotations: str | os.PathLike[str] | pd.DataFrame,
    dataset: Dataset,
    *,
    id_field: str | None = None,
    by: str = "auto",
    min_match: float = MIN_MATCH,
) -> AnnotationMatch:
    """Match an annotation file's examples to ``dataset``'s rows, by id or by text.

    Parameters
    ----------
    annotations : path or DataFrame
        A file for :func:`read_annotations`, or its result.
    dataset : Dataset
        The judged split (with label names).
    id_field : str, optional
        The file's id key.
    by : {"auto", "id", "text"}, default="auto"
        ``"auto"``: by id, or by the task's text fields when that matches more examples
        (a dataset without the file's id column has content-hash ids).
    min_match : float in [0, 1], default=0.5
        Smallest share of the file's examples that must match a dataset row; below it
        (or when nothing matches) the file is refused. A file may annotate only part of
        the dataset (ChaosNLI: 1,514 of SNLI dev's 9,842 pairs), so the share is of the
        file, not of the dataset.

    Returns
    -------
    AnnotationMatch

    Raises
    ------
    SchemaError
        Too few of the file's examples match (the message gives the counts by id and by
        text, and the parameter that sets the threshold).

    Examples
    --------
    >>> import pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"premise": ["A", "C"], "hypothesis": ["B", "D"],
    ...     "label": ["entailment", "neutral"]}), "nli")
    >>> ann = pd.DataFrame({"id": ["p1"], "counts": [{"entailment": 4.0}],
    ...                     "premise": ["A"], "hypothesis": ["B"]})
    >>> m = match_annotations(ann, ds)
    >>> m.by, m.n_matched, m.counts
    ('text', 1, [{'entailment': 4.0}, None])
    """
    if by not in ("auto", "id", "text"):
        raise ParameterError(
            f"The 'by' parameter of match_annotations must be one of ['auto', 'id', 'text']. "
            f"Got {by!r} instead."
        )
    if not 0.0 <= min_match <= 1.0:
        raise ParameterError(
            f"The 'min_match' parameter of match_annotations must be a float in [0, 1]. "
            f"Got {min_match!r} instead."
        )
    source = None
    if not isinstance(annotations, pd.DataFrame):
        source = os.fspath(annotations)
        annotations = read_annotations(annotations, dataset.label_names, id_field=id_field)
    n_file = len(annotations)
    row_of_id = {i: k for k, i in enumerate(dataset.ids)}
    by_id = [
        [row_of_id[i]] if i is not None and i in row_of_id else []
        for i in annotations.get("id", pd.Series([None] * n_file))
    ]
    text_cols = _text_columns(annotations, dataset)
    by_text: list[list[int]] = [[] for _ in range(n_file)]
    if text_cols:
        rows_of_text: dict[tuple[str, ...], list[int]] = {}
        ours = dataset.frame[list(text_cols)].astype(str)
        for k, key in enumerate(ours.itertuples(index=False, name=None)):
            rows_of_text.setdefault(tuple(map(_norm, key)), []).append(k)
        theirs = annotations[list(text_cols.values())]
        for j, key in enumerate(theirs.itertuples(index=False, name=None)):
            by_text[j] = rows_of_text.get(tuple(map(_norm, key)), [])
    n_id = sum(bool(r) for r in by_id)
    n_text = sum(bool(r) for r in by_text)
    use = by if by != "auto" else ("text" if n_text > n_id else "id")
    rows = by_text if use == "text" else by_id
    n_matched = n_id if use == "id" else n_text
    if n_file == 0 or n_matched == 0 or n_matched < min_match * n_file:
        texts = (
            f"by text ({', '.join(text_cols)}) {n_text}"
            if text_cols
            else f"by text: the file has none of the fields {list(dataset.task.text_fields)}"
        )
        raise SchemaError(
            f"Annotations {source or '(frame)'!r}: only {n_matched} of the file's {n_file} "
            f"annotated example(s) match a row of {dataset.name!r} (by id {n_id}; {texts}), "
            f"fewer than min_match={min_match:g} of them. Is this the annotation file of "
            "this split? Name the file's id key with id_field, give the texts, or lower "
            "min_match (--min-annotation-match)."
        )
    counts: list[dict[str, float] | None] = [None] * len(dataset)
    for j, targets in enumerate(rows):
        for k in targets:
            if counts[k] is None:  # the first annotated copy of a duplicated text wins
                counts[k] = dict(annotations["counts"].iloc[j])
    match = AnnotationMatch(
        counts=counts,
        by=use,
        n_file=n_file,
        n_matched=n_matched,
        n_annotated=sum(c is not None for c in counts),
        source=source,
    )
    logger.info("%s", match.summary)
    return match


# -- helpers ------------------------------------------------------------------------


def _records(path: Path) -> list[tuple[str, dict[str, Any]]]:
    if path.suffix.lower() not in (".json", ".jsonl", ".ndjson"):
        # Tabular files (CSV, Parquet ...) with a list column, through the data readers.
        from spurious.data.readers import READERS, infer_format

        frame, rows = READERS[infer_format(path)](path)
        return [(f", row {r}", rec) for r, rec in zip(rows, frame.to_dict("records"), strict=True)]
    text = read_input_text(path, what=ANNOTATIONS_WHAT, kind="annotations")
    if text.lstrip().startswith("["):
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as e:
            raise DataFormatError(f"{path}: not valid JSON ({e.msg}, line {e.lineno}).") from None
        if not all(isinstance(r, dict) for r in obj):
            raise DataFormatError(f"{path}: expected an array of objects.")
        return [(f", item {i}", r) for i, r in enumerate(obj, 1)]
    out = []
    for line_no, line in text_lines(text):  # at \n only: U+2028 may sit inside a string
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataFormatError(f"{path}:{line_no}: not JSON ({e.msg}).") from None
        if not isinstance(row, dict):
            raise DataFormatError(f"{path}:{line_no}: expected a JSON object per line.")
        out.append((f":{line_no}", row))
    return out


def label_counts(labels: Any, label_names: Sequence[str], where: str) -> dict[str, float] | None:
    """One example's annotator labels (a list) -> ``{label name: count}``.

    Every label must be one of ``label_names`` or a name's unique first letter
    (``"e"`` for entailment); ``None``, ``""`` and SNLI's ``"-"`` (no label) are
    skipped. A string where the list belongs is refused, not split into its letters
    (``"ecn"`` would otherwise count as three annotators): write ``["entailment"]`` for
    one label.

    Parameters
    ----------
    labels : list, tuple or numpy array of labels, or None (not annotated)
    label_names : sequence of str
        The dataset's label names.
    where : str
        Where the labels come from, for messages (file and line, or dataset and id).

    Returns
    -------
    dict or None
        ``None`` when the example has no labels.

    Raises
    ------
    DataFormatError
        A label that is not one of ``label_names`` (naming it and ``where``), or a
        value that is not a list.

    Examples
    --------
    >>> names = ["entailment", "neutral", "contradiction"]
    >>> label_counts(["entailment", "e", "neutral", "-"], names, "row 1")
    {'entailment': 2.0, 'neutral': 1.0}
    >>> label_counts(["banana"], names, "row 1")
    Traceback (most recent call last):
    ...
    spurious.exceptions.DataFormatError: row 1: label 'banana' is not one of [...] ...
    >>> label_counts("entailment", names, "row 1")
    Traceback (most recent call last):
    ...
    spurious.exceptions.DataFormatError: row 1: 'annotator_labels' must be a list of labels; ...
    """
    if labels is None or (isinstance(labels, float) and labels != labels):  # None / NaN
        return None
    if not isinstance(labels, list | tuple | np.ndarray):
        raise DataFormatError(
            f"{where}: 'annotator_labels' must be a list of labels; got "
            f"{type(labels).__name__} {labels!r}. A string is not split into letters: write "
            f"[{labels!r}] if it is one annotator's label."
        )
    counts: dict[str, float] = {}
    for lab in labels:
        if lab is None or str(lab).strip() in ("", "-"):
            continue
        name = _label_name(str(lab).strip(), label_names, where)
        counts[name] = counts.get(name, 0.0) + 1.0
    return counts or None


def _counter(counter: Any, names: Sequence[str], where: str) -> dict[str, float]:
    """ChaosNLI's ``label_counter`` -> ``{label name: count}`` (counts >= 0)."""
    if not isinstance(counter, Mapping):
        raise DataFormatError(
            f'{where}: \'label_counter\' must map labels to counts (e.g. {{"e": 80, "n": '
            f"15}}); got {type(counter).__name__} {counter!r}."
        )
    counts: dict[str, float] = {}
    for lab, v in counter.items():
        name = _label_name(str(lab), names, where)
        try:
            k = float(v)
        except (TypeError, ValueError):
            k = float("nan")
        if not k >= 0:  # also NaN
            raise DataFormatError(
                f"{where}: label {lab!r} has count {v!r}; expected a number >= 0."
            )
        counts[name] = counts.get(name, 0.0) + k
    return counts


def _label_name(label: str, names: Sequence[str], where: str) -> str:
    if label in names:
        return label
    first = [n for n in names if n[:1].lower() == label[:1].lower()]
    if len(label) == 1 and len(first) == 1:
        return first[0]
    raise DataFormatError(
        f"{where}: label {label!r} is not one of {list(names)} (nor a unique first letter)."
    )


def _text_columns(annotations: pd.DataFrame, dataset: Dataset) -> dict[str, str]:
    """``{dataset field: file column}`` for every text field, when the file has them all."""
    out = {}
    for f in dataset.task.text_fields:
        col = next((c for c in (f, *FIELD_ALIASES.get(f, ())) if c in annotations.columns), None)
        if col is None:
            return {}
        out[f] = col
    return out


def _norm(text: Any) -> str:
    return " ".join(str(text).split())
