"""Prediction files: reading JSON, JSONL, CSV and TSV into ``{id: prediction}``.

:func:`load_predictions` reads a file (:func:`_read_mapping`: SQuAD's ``{id: answer}``
JSON, arrays of objects, tabular files with an id and a prediction column, or files in
the dataset's row order), then hands the mapping to
:func:`~spurious.data.predictions.align.align_predictions`.

For multiple-choice data (task ``mcq``) it also reads per-option score lists
(:data:`~spurious.data.predictions.base.MC_SCORE_FIELDS`, also as JSON text in a CSV
cell) and lm-evaluation-harness ``samples_*.jsonl`` files (:func:`_lm_eval_mapping`).
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.data.predictions.align import align_predictions
from spurious.data.predictions.base import (
    CORRECTNESS_FIELDS,
    GOLD_FIELDS,
    KINDS,
    LM_EVAL_FIELDS,
    MC_SCORE_FIELDS,
    PROBABILITY_FIELDS,
    PROBABILITY_PREFIXES,
    VALUE_FIELDS,
    PredictionSet,
    check_choice,
)
from spurious.data.readers import parse_json, read_delimited, read_jsonl
from spurious.exceptions import DataFormatError, SchemaError
from spurious.utils.io import check_input_file, read_input_text

# The logger keeps the name it had before predictions.py became a package, so logging
# configuration that targets it (and the CLI's "%(name)s" prefix) is unchanged.
logger = logging.getLogger("spurious.data.predictions")

__all__ = ["load_predictions"]

#: How messages name a prediction file (the API's argument; the CLI's --predictions).
PREDICTIONS_WHAT = "Prediction file"


def load_predictions(
    path: str | os.PathLike[str],
    dataset: Dataset,
    *,
    name: str | None = None,
    format: str | None = None,
    id_field: str | None = None,
    value_field: str | None = None,
    kind: str = "auto",
    align: str = "id",
    on_missing: str = "wrong",
) -> PredictionSet:
    """Read a prediction file and align it to ``dataset`` by id (or by row order).

    Parameters
    ----------
    path : path
        ``.json`` (``{id: prediction}``, an array of objects or, with ``align="rows"``,
        an array of values), ``.jsonl``, ``.csv`` or ``.tsv``.
    dataset : Dataset
        The evaluated dataset; its ids decide the order of the returned values.
    name : str, optional
        Model name (default: the file stem, e.g. ``electra-base``).
    format : {"json", "jsonl", "csv", "tsv"}, optional
        Overrides the format inferred from the suffix.
    id_field : str, optional
        Id column of tabular files (default ``"id"``). The ids must be the dataset's
        (its id column, or the content hashes of ``spurious ids``).
    value_field : str, optional
        Prediction column of tabular files (default: the first of :data:`VALUE_FIELDS`,
        then :data:`CORRECTNESS_FIELDS`, :data:`PROBABILITY_FIELDS` and per-label
        probability columns, present). May name a gold-looking column (``label``) when
        that column really is the prediction.
    kind : {"auto", "labels", "correctness", "probabilities"}, default="auto"
        What the values are; ``"auto"`` decides from the column's name and values
        (JSON booleans are correctness, lists are probabilities).
    align : {"id", "rows"}, default="id"
        ``"rows"``: the file's rows are the dataset's rows in order (no id needed);
        checked by the row count and any text column the file shares with the dataset.
    on_missing : {"wrong", "error"}, default="wrong"
        What to do with dataset examples the file has no prediction for; see
        :func:`align_predictions`.

    Notes
    -----
    Multiple-choice data (task ``mcq``) take, per item, a predicted letter (``"B"``,
    also ``"b"`` / ``"(B)"``) or 0-based option index, or a list of per-option scores
    (log-probabilities, similarities or probabilities: a JSON ``{id: [...]}``, a JSONL /
    CSV column :data:`~spurious.data.predictions.base.MC_SCORE_FIELDS` or
    :data:`~spurious.data.predictions.base.PROBABILITY_FIELDS`) whose length must be the
    item's option count; the prediction is the best-scored option. An
    lm-evaluation-harness ``samples_*.jsonl`` file (``doc_id``, ``target``,
    ``filtered_resps`` or ``resps`` holding ``[log-likelihood, is_greedy]`` per option)
    is read too: its ``doc_id`` is a row index of the harness' document list, so it is
    aligned only with ``align="rows"`` (the dataset must be in the harness' order), and
    a numeric or letter ``target`` must be each row's gold.

    Returns
    -------
    PredictionSet

    Raises
    ------
    DataFormatError
        The file cannot be read, or has no id column (``align="id"``) or no prediction
        column (the message lists the columns searched for).
    SchemaError
        A predicted id is not in the dataset, none of the dataset's ids has a
        prediction, some have none and ``on_missing="error"`` (the message counts
        missing and extra ids), an id is duplicated, or, with ``align="rows"``, the row
        count or a text column does not match (the message names the first row).
    LabelError
        A classification prediction is not a known label name or id.

    Examples
    --------
    >>> import json, tempfile, pathlib, pandas as pd
    >>> ds = Dataset.from_frame(pd.DataFrame({"id": ["q1"], "question": ["Who?"],
    ...     "context": ["Ann did."], "answers": [["Ann"]]}), "qa")
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "model-a.json"
    >>> _ = f.write_text(json.dumps({"q1": "Ann"}))
    >>> p = load_predictions(f, ds)
    >>> p.name, p.values.tolist()
    ('model-a', ['Ann'])

    A file without ids, in the dataset's row order:

    >>> g = f.with_name("model-b.csv")
    >>> _ = g.write_text("question,prediction\\nWho?,Bob\\n")
    >>> load_predictions(g, ds, align="rows").values.tolist()
    ['Bob']
    """
    check_choice("align", align, ("id", "rows"), "load_predictions")
    check_choice("kind", kind, KINDS, "load_predictions")
    # Before any read: a FIFO would block forever, /dev/zero fill the memory.
    path = check_input_file(path, what=PREDICTIONS_WHAT, kind="predictions")
    fmt = (format or path.suffix.lower().lstrip(".")).replace("ndjson", "jsonl")
    mapping, kind = _read_mapping(
        path, fmt, dataset, id_field, value_field, kind, by_rows=align == "rows"
    )
    return align_predictions(
        mapping,
        dataset,
        name=name or path.stem,
        source=os.fspath(path),
        on_missing=on_missing,
        kind=kind,
    )


def _read_mapping(
    path: Path,
    fmt: str,
    dataset: Dataset,
    id_field: str | None,
    value_field: str | None,
    kind: str,
    *,
    by_rows: bool,
) -> tuple[dict[str, Any], str]:
    """``{id: value}`` and the kind of the prediction file ``path`` in format ``fmt``."""
    if fmt == "json":
        obj = _read_json(path)
        if isinstance(obj, dict):
            # SQuAD's official prediction format: {question id: answer text}.
            if by_rows:
                raise DataFormatError(
                    f"{str(path)!r} is a JSON object keyed by id; align it by id "
                    "(align='id', --align id), not by row order."
                )
            mapping, kind = obj, kind
        elif isinstance(obj, list) and obj and all(isinstance(r, dict) for r in obj):
            frame = pd.DataFrame.from_records(obj)
            rows = list(range(1, len(obj) + 1))
            mapping, kind = _frame_to_mapping(
                frame, rows, path, dataset, id_field, value_field, kind, by_rows
            )
        elif isinstance(obj, list) and by_rows:
            mapping = _rows_to_mapping(obj, None, list(range(1, len(obj) + 1)), path, dataset)
        else:
            raise DataFormatError(
                f"{str(path)!r}: expected a JSON object {{id: prediction}} or an array of "
                f"objects (an array of values with align='rows'), got {type(obj).__name__}."
            )
    elif fmt in ("jsonl", "csv", "tsv", "txt"):
        frame, rows = (
            read_jsonl(path)
            if fmt == "jsonl"
            else read_delimited(path, "," if fmt == "csv" else "\t")
        )
        if _is_lm_eval(frame, dataset, id_field, value_field):
            return _lm_eval_mapping(frame, rows, path, dataset, by_rows=by_rows), "probabilities"
        mapping, kind = _frame_to_mapping(
            frame, rows, path, dataset, id_field, value_field, kind, by_rows
        )
    else:
        raise DataFormatError(
            f"Cannot read predictions from {str(path)!r}: unknown format {fmt!r}; "
            "use .json ({id: prediction}), .jsonl, .csv or .tsv, or pass format=."
        )
    return mapping, kind


def _read_json(path: Path) -> Any:
    text = read_input_text(path, what=PREDICTIONS_WHAT, kind="predictions")
    return parse_json(text, path)


def _probability_columns(frame: pd.DataFrame, labels: Sequence[str]) -> list[str] | None:
    """Per-label probability columns (``<label>`` or ``prob_<label>`` ...), in label order."""
    cols = set(map(str, frame.columns))
    for prefix in ("", *PROBABILITY_PREFIXES):
        names = [f"{prefix}{lab}" for lab in labels]
        if labels and all(n in cols for n in names):
            return names
    return None


def _frame_to_mapping(
    frame: pd.DataFrame,
    rows: list[int],
    path: Path,
    dataset: Dataset,
    id_field: str | None,
    value_field: str | None,
    kind: str,
    by_rows: bool,
) -> tuple[dict[str, Any], str]:
    """``{id: value}`` and the kind of a tabular prediction file."""
    cols = list(map(str, frame.columns))
    asked = kind
    id_col = id_field or "id"
    if not by_rows and id_col not in frame.columns:
        raise DataFormatError(
            f"{str(path)!r}: no id column {id_col!r}; columns found: {cols}. Name it with "
            "id_field= (--id-field), or align a file in the dataset's row order with "
            "align='rows' (--align rows)."
        )
    labels = list(dataset.label_names) if dataset.task.has_labels else []
    prob_cols = None
    if value_field is not None:
        if value_field not in frame.columns:
            raise DataFormatError(
                f"{str(path)!r}: no prediction column {value_field!r}; columns found: {cols}."
            )
        if kind == "auto" and value_field in CORRECTNESS_FIELDS:
            kind = "correctness"
    else:
        searched: list[str] = []
        for names, what in (
            (() if kind in ("correctness", "probabilities") else VALUE_FIELDS, "labels"),
            (() if kind in ("labels", "probabilities") else CORRECTNESS_FIELDS, "correctness"),
            (() if kind in ("labels", "correctness") else _list_fields(dataset), "probabilities"),
        ):
            searched.extend(names)
            value_field = next((c for c in names if c in frame.columns), None)
            if value_field is not None:
                kind = what if kind == "auto" else kind
                break
        if value_field is None and kind in ("auto", "probabilities"):
            prob_cols = _probability_columns(frame, labels)
            if prob_cols is not None:
                kind = "probabilities"
        if value_field is None and prob_cols is None:
            gold = [c for c in GOLD_FIELDS if c in frame.columns]
            note = (
                f" The gold column(s) {gold} are never read as predictions; if one of them "
                "really holds the model's predictions, name it with value_field= "
                "(--value-field)."
                if gold
                else ""
            )
            per_label = (
                f", or one probability column per label ({labels} or prob_<label>)"
                if labels and kind in ("auto", "probabilities")
                else ""
            )
            raise DataFormatError(
                f"{str(path)!r}: no prediction column; looked for {searched}{per_label} among "
                f"{cols}.{note} Pass value_field= (--value-field) to name it."
            )
    if prob_cols is not None:
        block = frame[prob_cols]
        values = [list(r) for r in block.itertuples(index=False, name=None)]
        where = prob_cols
    else:
        values = frame[value_field].tolist()
        where = value_field
        if dataset.task.multiple_choice:
            values = [_json_list(v) for v in values]
            # A "prediction" column of lists holds per-option scores, not letters.
            if asked == "auto" and values and all(isinstance(v, list) for v in values):
                kind = "probabilities"
    missing = [rows[i] for i, v in enumerate(values) if _is_missing(v)]
    if missing:
        raise SchemaError(
            f"{str(path)!r}, row {missing[0]}: the prediction ({where!r}) is missing "
            f"({len(missing)} row(s) affected)."
        )
    logger.debug("%s: %d predictions from %r (%s)", path, len(values), where, kind)
    if by_rows:
        return _rows_to_mapping(values, frame, rows, path, dataset), kind
    keys = frame[id_col].map(str)
    dup = keys.duplicated(keep=False).to_numpy()
    if dup.any():
        first = keys[dup].iloc[0]
        where_rows = [rows[i] for i in np.flatnonzero((keys == first).to_numpy())][:5]
        raise SchemaError(
            f"{str(path)!r}: id {first!r} has several predictions (rows {where_rows}); "
            f"{int(keys[dup].nunique())} id(s) are duplicated."
        )
    return dict(zip(keys.tolist(), values, strict=True)), kind


def _list_fields(dataset: Dataset) -> tuple[str, ...]:
    """List columns read as probabilities: per-option score names too for multiple choice."""
    return PROBABILITY_FIELDS + (MC_SCORE_FIELDS if dataset.task.multiple_choice else ())


def _json_list(v: Any) -> Any:
    """A list written as JSON text (a CSV cell ``"[-1.2, -0.3]"``) as a list; else ``v``."""
    if isinstance(v, str) and v.strip().startswith("["):
        try:
            return json.loads(v)
        except json.JSONDecodeError:
            return v
    return v


def _is_missing(v: Any) -> bool:
    if isinstance(v, list):
        return any(x is None or (isinstance(x, float) and math.isnan(x)) for x in v)
    return v is None or (isinstance(v, float) and math.isnan(v))


def _rows_to_mapping(
    values: Sequence[Any],
    frame: pd.DataFrame | None,
    rows: list[int],
    path: Path,
    dataset: Dataset,
) -> dict[str, Any]:
    """``{dataset id: value}`` for a file in the dataset's row order, checked."""
    n = len(dataset)
    if len(values) != n:
        dropped = int(dataset.frame.attrs.get("n_dropped_no_gold", 0))
        note = (
            f" (the dataset left out {dropped} row(s) without a gold label; predictions for "
            "them must be removed too)"
            if dropped
            else ""
        )
        raise SchemaError(
            f"{str(path)!r} has {len(values)} prediction row(s) but dataset {dataset.name!r} "
            f"has {n}{note}; align='rows' needs one row per example, in the same order."
        )
    if frame is not None:
        for col in dataset.task.text_fields:
            if col not in frame.columns or col not in dataset.frame.columns:
                continue
            theirs = frame[col].map(lambda v: "" if v is None else str(v).strip()).to_numpy()
            ours = dataset.frame[col].map(lambda v: "" if v is None else str(v).strip())
            bad = np.flatnonzero(theirs != ours.to_numpy())
            if bad.size:
                i = int(bad[0])
                raise SchemaError(
                    f"{str(path)!r}, row {rows[i]}: its {col!r} is {theirs[i][:80]!r} but "
                    f"example {i} of {dataset.name!r} (id {dataset.ids[i]!r}) has "
                    f"{str(ours.iloc[i])[:80]!r}; {bad.size} of {n} row(s) differ, so the "
                    "file is not in the dataset's row order (align='rows')."
                )
    return dict(zip(dataset.ids.tolist(), values, strict=True))


# -- lm-evaluation-harness samples files ---------------------------------------------------


def _is_lm_eval(
    frame: pd.DataFrame, dataset: Dataset, id_field: str | None, value_field: str | None
) -> bool:
    """Whether ``frame`` is an lm-evaluation-harness ``samples_*.jsonl`` of MC items."""
    return (
        dataset.task.multiple_choice
        and id_field is None
        and value_field is None
        and "doc_id" in frame.columns
        and any(c in frame.columns for c in LM_EVAL_FIELDS)
    )


def _first_number(v: Any) -> float:
    """The log-likelihood of one option's response: ``x``, ``[x, greedy]`` or ``[[x, greedy]]``.

    The harness writes the numbers as JSON numbers or as strings (``"-1.25"``), by version.
    """
    while isinstance(v, list | tuple) and v:
        v = v[0]
    if isinstance(v, bool) or not isinstance(v, int | float | str):
        raise ValueError(repr(v))
    return float(v)


def _lm_eval_mapping(
    frame: pd.DataFrame, rows: list[int], path: Path, dataset: Dataset, *, by_rows: bool
) -> dict[str, Any]:
    """``{dataset id: [score per option]}`` of an lm-evaluation-harness samples file.

    ``doc_id`` is the item's index in the harness' document list, so the file is aligned
    by row order, and only when asked (``align="rows"``); a ``target`` that is an option
    index or letter must be the dataset's gold of that row, which catches a dataset in
    another order (or one that dropped items) before any number is computed.
    """
    if not by_rows:
        raise DataFormatError(
            f"{str(path)!r} is an lm-evaluation-harness samples file: its 'doc_id' is a row "
            "index of the harness' documents, not an item id. Align it by row order with "
            "align='rows' (--align rows) when the dataset is in the harness' order."
        )
    col = next(c for c in LM_EVAL_FIELDS if c in frame.columns)
    n = len(dataset)
    out: dict[str, Any] = {}
    gold = dataset.labels
    targets = frame["target"].tolist() if "target" in frame.columns else [None] * len(frame)
    for i, (doc, resps) in enumerate(zip(frame["doc_id"].tolist(), frame[col], strict=True)):
        where = f"{str(path)!r}, line {rows[i]} (doc_id {doc!r})"
        if (
            isinstance(doc, bool)
            or not isinstance(doc, int | float)
            or not math.isfinite(doc)
            or doc != int(doc)
        ):
            raise SchemaError(f"{where}: 'doc_id' must be an integer row index. Got {doc!r}.")
        doc = int(doc)
        if not 0 <= doc < n:
            raise SchemaError(
                f"{where}: 'doc_id' is outside the dataset's rows [0, {n}) of {dataset.name!r}; "
                "is this the samples file of another task or split?"
            )
        key = str(dataset.ids[doc])
        if key in out:
            raise SchemaError(f"{where}: doc_id {doc} occurs more than once.")
        try:
            if not isinstance(resps, list):
                raise ValueError(repr(resps))
            out[key] = [_first_number(r) for r in resps]
        except ValueError:
            raise SchemaError(
                f"{where}: {col!r} must hold one [log-likelihood, is_greedy] per option "
                f"(a multiple-choice task). Got {str(resps)[:120]!r}."
            ) from None
        _check_target(targets[i], int(gold[doc]), doc, where, dataset)
    return out


def _check_target(target: Any, gold: int, row: int, where: str, dataset: Dataset) -> None:
    """Raise when the harness' gold ``target`` (index or letter) is not the row's gold."""
    if isinstance(target, bool) or target is None:
        return
    text = str(target).strip()
    if isinstance(target, int | float) and float(target).is_integer():
        theirs = int(target)
    elif text.isdigit():
        theirs = int(text)
    elif len(text) == 1 and text.upper() in dataset.label_names:
        theirs = dataset.label_names.index(text.upper())
    else:
        return  # an answer text: not comparable to a position
    if theirs != gold:
        dropped = sum(int(v) for k, v in dataset.frame.attrs.items() if k.startswith("n_dropped"))
        note = (
            f" {dataset.name!r} left out {dropped} item(s) when it was loaded, which shifts "
            "every later row."
            if dropped
            else ""
        )
        raise SchemaError(
            f"{where}: the harness' gold 'target' is {target!r} but row {row} of "
            f"{dataset.name!r} (id {dataset.ids[row]!r}) has gold {dataset.label_names[gold]!r} "
            f"(index {gold}), so the dataset is not in the harness' order.{note}"
        )
