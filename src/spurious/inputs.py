"""The inputs of a run: datasets, predictions, attributes and annotations, into a RunContext.

:func:`load_inputs` reads what a config's ``inputs`` names (files, or a synthetic
generator) and checks it: rows dropped for lack of a gold label (an error beyond
``max_dropped``), evaluation rows that repeat the data, annotations matched by id or text,
predictions aligned to the judged split. The Python API passes in-memory datasets in
``datasets``; every other input is read the same way for both.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.exceptions import ParameterError, SchemaError

__all__ = [
    "INPUT_KEYS",
    "MAX_DROPPED_DEFAULT",
    "attach_annotations",
    "load_inputs",
    "read_attributes",
]

logger = logging.getLogger(__name__)

#: Keys of ``config["inputs"]`` (anything else is an error, so typos do not pass silently).
INPUT_KEYS = (
    "data",
    "task",
    "eval",
    "format",
    "field_map",
    "predictions",
    "attributes",
    "heuristics_train",
    "annotations",
    "synthetic",
    "drop_overlap",
    "max_dropped",
    "split",
    "eval_split",
    "allow_network",
    "strict_predictions",
    "predictions_id_field",
    "predictions_value_field",
    "predictions_align",
    "predictions_kind",
    "annotations_min_match",
    "label_names",
)
#: Rows without a gold label beyond this fraction of a file stop the run (``max_dropped``).
MAX_DROPPED_DEFAULT = 0.1


def load_inputs(
    inputs: Mapping[str, Any],
    *,
    progress: bool | None = None,
    datasets: Mapping[str, Dataset] | None = None,
) -> RunContext:
    """Load the datasets, predictions and attributes a config names into a RunContext.

    Parameters
    ----------
    inputs : mapping
        A config's ``inputs`` (see :data:`INPUT_KEYS`).
    progress : bool, optional
        Progress bars (default: when a person watches).
    datasets : mapping, optional
        In-memory datasets for ``"data"``, ``"eval"`` and ``"heuristics_train"`` (the
        Python API); ``inputs`` then records them as ``"<in-memory NAME>"``. Every other
        input (predictions, attributes, annotations, field map, format) is read the same
        way as for files.

    Raises
    ------
    ParameterError
        A predictions, attributes or annotations file that does not exist (naming the
        input and the path; a missing data or eval file is the loader's
        ``DataFormatError``), or an in-memory placeholder without its dataset.
    """
    from spurious.data import load_dataset

    given = dict(datasets or {})
    _check_max_dropped(inputs.get("max_dropped"))
    _check_files_exist(inputs, given)
    fmap = dict(inputs.get("field_map") or {})
    fmt = inputs.get("format")
    if inputs.get("synthetic"):
        train, ev = _synthetic(inputs["synthetic"])
        task = train.task.name
    else:
        task = inputs["task"]
        for key in ("data", "eval", "heuristics_train"):
            if str(inputs.get(key) or "").startswith("<in-memory") and key not in given:
                raise ParameterError(
                    f"inputs.{key} was an in-memory dataset ({inputs[key]}) of a run kept in "
                    "memory (run() without out=), so nothing re-loads it: a config can only "
                    f"re-load files. Set inputs.{key} to the data's path, or run again with "
                    "out=DIR, which stores in-memory data in DIR/inputs/ for re-runs."
                )
        if "data" in given:
            train = given["data"]
        else:
            # --split and --allow-network apply to DATA (a DatasetDict folder or a Hub name).
            train = load_dataset(
                inputs["data"],
                task,
                field_map=fmap,
                format=fmt,
                split=inputs.get("split"),
                allow_network=bool(inputs.get("allow_network")),
                label_names=inputs.get("label_names"),  # --label-names; eval follows DATA
            )
        ev = given.get("eval")
        if ev is None and inputs.get("eval"):
            ev = load_dataset(
                inputs["eval"],
                task,
                field_map=fmap,
                format=fmt,
                split=_eval_split(inputs),
                label_names=train.label_names,
            )
        elif inputs.get("eval_split") is not None and ev is None:
            raise ParameterError(
                f"--eval-split (inputs.eval_split) {inputs['eval_split']!r} names a split of "
                "the evaluation data, but no --eval (inputs.eval) was given."
            )
    h_train = given.get("heuristics_train")
    if h_train is None and inputs.get("heuristics_train"):
        h_train = load_dataset(
            inputs["heuristics_train"],
            task,
            field_map=fmap,
            label_names=train.label_names or None,
        )
    notes = []
    if inputs.get("annotations"):
        min_match = inputs.get("annotations_min_match")
        target = attach_annotations(
            ev if ev is not None else train,
            inputs["annotations"],
            **({} if min_match is None else {"min_match": float(min_match)}),
        )
        notes.append(f"--annotations: {target.frame.attrs.get('annotations_matched')}.")
        if ev is not None:
            ev = target
        else:
            train = target
    warnings = [w for ds in (train, ev) if ds is not None for w in _row_notes(ds, inputs)]
    warnings.extend(notes)
    if ev is not None:
        ev, note = _overlap(train, ev, drop=bool(inputs.get("drop_overlap")))
        warnings.extend(note)
    target = ev if ev is not None else train
    preds = []
    if inputs.get("predictions"):
        from spurious.data.predictions import load_predictions

        on_missing = "error" if inputs.get("strict_predictions") else "wrong"
        id_field = inputs.get("predictions_id_field")
        value_field = inputs.get("predictions_value_field")
        align = inputs.get("predictions_align") or "id"
        kind = inputs.get("predictions_kind") or "auto"
        preds = [
            load_predictions(
                p,
                target,
                on_missing=on_missing,
                id_field=id_field,
                value_field=value_field,
                align=align,
                kind=kind,
            )
            for p in inputs["predictions"]
        ]
    attributes = read_attributes(inputs["attributes"]) if inputs.get("attributes") else None
    ctx = RunContext(
        train,
        ev,
        predictions=preds,
        attributes=attributes,
        heuristics_train=h_train,
        progress=progress,
    )
    for w in warnings:
        logger.warning("%s", w)
    ctx.warnings.extend(warnings)
    return ctx


#: Inputs that name files, checked before anything is read (the datasets' own loader
#: says "does not exist" for data, eval and heuristics_train, and knows Hub names).
_FILE_INPUTS = ("attributes", "annotations")


def _check_files_exist(inputs: Mapping[str, Any], given: Mapping[str, Any]) -> None:
    """Every named file exists: a clear error naming the input, never a silent skip."""
    if inputs.get("synthetic"):
        return
    for key in _FILE_INPUTS:
        value = inputs.get(key)
        if value is None or key in given or str(value).startswith("<in-memory"):
            continue
        if not Path(os.fspath(value)).expanduser().exists():
            raise ParameterError(f"inputs.{key}: no such file or folder {str(value)!r}.")
    preds = inputs.get("predictions") or []
    if isinstance(preds, str | os.PathLike):
        raise ParameterError(
            f"inputs.predictions must be a list of paths; got one path {os.fspath(preds)!r} "
            "(wrap it in a list)."
        )
    for i, p in enumerate(preds):
        # exists(), not is_file(): a folder or FIFO gets the reader's message, not this one.
        if not Path(os.fspath(p)).expanduser().exists():
            raise ParameterError(f"inputs.predictions[{i}]: no such file {os.fspath(p)!r}.")


def _row_notes(ds: Dataset, inputs: Mapping[str, Any]) -> list[str]:
    """What the loader counted about the rows: dropped, unanswerable, empty texts."""
    notes = _dropped_rows(ds, inputs)
    no_answer = int(ds.frame.attrs.get("n_no_answer", 0))
    if no_answer:
        notes.append(
            f"{ds.name}: {no_answer:,} of {len(ds):,} questions have no gold answer; they "
            "score as undefined and are left out of every mean."
        )
    repeated = int(ds.frame.attrs.get("n_dropped_duplicate_options", 0))
    if repeated:
        notes.append(
            f"{ds.name}: {repeated:,} of {repeated + len(ds):,} items repeat an option text "
            "(the gold is ambiguous or the item easier) and were left out."
        )
    for field_name, k in (ds.frame.attrs.get("n_empty_text") or {}).items():
        notes.append(f"{ds.name}: {k:,} of {len(ds):,} rows have an empty {field_name!r}.")
    return notes


def _check_max_dropped(value: Any) -> None:
    """``max_dropped`` is a fraction in [0, 1], from the CLI or written in a config."""
    if value is None:
        return
    try:
        share = float(value)
    except (TypeError, ValueError):
        share = float("nan")
    if isinstance(value, bool) or not 0.0 <= share <= 1.0:  # NaN fails too
        raise ParameterError(
            f"inputs.max_dropped (--max-dropped) must be a fraction in [0, 1]; got {value!r}."
        )


def _dropped_rows(ds: Dataset, inputs: Mapping[str, Any]) -> list[str]:
    """A warning for rows dropped for lack of a gold label; an error beyond ``max_dropped``."""
    dropped = int(ds.frame.attrs.get("n_dropped_no_gold", 0))
    if not dropped:
        return []
    limit = inputs.get("max_dropped")
    limit = MAX_DROPPED_DEFAULT if limit is None else float(limit)
    share = dropped / (dropped + len(ds))
    msg = (
        f"{ds.name}: {dropped:,} of {dropped + len(ds):,} rows ({share:.1%}) have no gold label "
        "and were left out"
    )
    if share > limit:
        raise SchemaError(
            f"{msg}, more than the {limit:.0%} allowed; check the label column (--field-map "
            "label=COLUMN), or allow it with --max-dropped FRACTION."
        )
    return [msg + "."]


def _overlap(train: Dataset, ev: Dataset, *, drop: bool) -> tuple[Dataset, list[str]]:
    """Evaluation rows that also occur in the data: the same text in every field.

    Shared rows inflate every held-out score; they are reported, and dropped on request.
    Texts are compared in Unicode NFC (:func:`~spurious.data.canonical.text_keys`): a row
    spelled with decomposed accents in one file and composed ones in the other is the
    same example. Shared ids are reported too but never dropped on their own: files that
    number their rows from 0 share ids without sharing examples.
    """
    from spurious.data.canonical import text_keys

    fields = list(train.task.text_fields)
    texts = set(text_keys(train.frame, fields))
    ev_texts = text_keys(ev.frame, fields)
    same_text = np.fromiter((t in texts for t in ev_texts), dtype=bool, count=len(ev))
    ids = set(train.ids)
    n_id = sum(i in ids for i in ev.ids)
    n = int(same_text.sum())
    notes = []
    if n_id:
        notes.append(
            f"{n_id:,} of {len(ev):,} evaluation rows share an id with the data (not dropped: "
            "ids can coincide across files that number their rows)."
        )
    if not n:
        return ev, notes
    what = f"{n:,} of {len(ev):,} evaluation rows have the same text as a row of the data"
    if not drop:
        return ev, [
            *notes,
            f"{what}; held-out scores are inflated. Pass --drop-overlap to leave them out.",
        ]
    if n == len(ev):
        raise SchemaError(f"{what}: every evaluation row; nothing would be left to evaluate.")
    keep = np.flatnonzero(~same_text)
    return ev.subset(keep, name=ev.name), [*notes, f"{what}; they were left out (--drop-overlap)."]


def _synthetic(spec: Mapping[str, Any]) -> tuple[Dataset, Dataset | None]:
    from spurious.data.synthetic import make_nli_artifacts

    spec = dict(spec)
    generator = spec.pop("generator", "nli_artifacts")
    if generator != "nli_artifacts":
        raise ParameterError(
            f"Unknown synthetic generator {generator!r}; known: ['nli_artifacts']."
        )
    split = spec.pop("eval_fraction", None)
    seed = spec.get("random_state", 0)
    synth = make_nli_artifacts(**spec)
    planted = int(synth.has_artifact.sum())
    if split is None:
        synth.dataset.frame.attrs["synthetic_n_planted"] = planted
        return synth.dataset, None
    train, test = synth.dataset.split(split, random_state=seed)
    train.name, test.name = "synthetic-nli[train]", "synthetic-nli[test]"
    train.frame.attrs["synthetic_n_planted"] = planted
    return train, test


def _eval_split(inputs: Mapping[str, Any]) -> str | None:
    """The split of a DatasetDict folder given as ``eval`` (``eval_split``), checked here
    so the message names --eval / --eval-split rather than the loader's 'split'."""
    from spurious.data.readers import hf_disk_splits

    split, path = inputs.get("eval_split"), Path(os.fspath(inputs["eval"]))
    splits = hf_disk_splits(path) if path.is_dir() else None
    if splits is None and split is not None:
        raise ParameterError(
            f"--eval-split (inputs.eval_split) applies to a DatasetDict folder; --eval "
            f"{str(path)!r} is not one. Got --eval-split {split!r}; leave it out."
        )
    if splits is not None and split is None:
        raise ParameterError(
            f"--eval {str(path)!r} is a DatasetDict folder: choose its split with --eval-split "
            f"(inputs.eval_split), one of {splits}, or name the split's folder "
            f"(--eval {str(path / splits[0])!r})."
        )
    if splits is not None and split not in splits:
        raise ParameterError(
            f"--eval-split (inputs.eval_split) must be one of {splits}, the splits of --eval "
            f"{str(path)!r}. Got {split!r} instead."
        )
    return None if split is None else str(split)


def read_attributes(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Precomputed heuristic values: ``id`` + one numeric column per heuristic."""
    from spurious.data.readers import READERS, infer_format
    from spurious.utils.io import check_input_file

    # Before anything opens it: a FIFO would block, a device never end.
    path = check_input_file(path, what="--attributes", kind="attributes", allow_dir=True)
    fmt = infer_format(path)
    if fmt == "squad":
        raise ParameterError(f"--attributes {str(path)!r}: a SQuAD file holds no heuristic values.")
    frame, lines = READERS[fmt](path)
    if "id" not in frame.columns:
        raise SchemaError(f"--attributes {str(path)!r} needs an 'id' column.")
    frame = frame.copy()
    for col in frame.columns:
        if col != "id":
            unit = "line" if fmt in ("jsonl", "csv", "tsv") else "row"
            frame[col] = _numeric_column(frame, col, lines, f"{str(path)!r}, {unit}")
    return frame


#: Cells of an attributes file read as "no value" (NaN), not as an error.
_MISSING = {"", "nan", "na", "n/a", "null", "none"}


def _numeric_column(frame: pd.DataFrame, col: str, lines: list[int], where: str) -> pd.Series:
    """``frame[col]`` as floats; empty cells are NaN, any other text is an error naming it.

    Examples
    --------
    >>> f = pd.DataFrame({"id": ["a", "b", "c"], "h": ["1", "", "2.5"]})
    >>> _numeric_column(f, "h", [2, 3, 4], "'x.csv', line").tolist()
    [1.0, nan, 2.5]
    >>> _numeric_column(f.assign(h=["1", "high", "2"]), "h", [2, 3, 4], "'x.csv', line")
    Traceback (most recent call last):
    ...
    spurious.exceptions.SchemaError: --attributes 'x.csv', line 3 (id 'b'): column 'h' must hold numbers (a heuristic's values); got 'high'. Leave out columns that are not heuristics.
    """
    values = pd.to_numeric(frame[col], errors="coerce")
    text = frame[col].map(lambda v: str(v).strip().lower() if isinstance(v, str) else v)
    missing = frame[col].isna() | text.isin(_MISSING)
    bad = np.flatnonzero((values.isna() & ~missing).to_numpy())
    if bad.size:
        k = int(bad[0])
        at = lines[k] if k < len(lines) else k + 1
        raise SchemaError(
            f"--attributes {where} {at} (id {frame['id'].iloc[k]!r}): column {col!r} must "
            f"hold numbers (a heuristic's values); got {frame[col].iloc[k]!r}. Leave out "
            "columns that are not heuristics."
        )
    return values.astype(np.float64)


def attach_annotations(
    ds: Dataset, path: str | os.PathLike[str], *, min_match: float | None = None
) -> Dataset:
    """``ds`` with ``annotator_labels`` from an annotation file, matched by id or by text.

    See :func:`spurious.data.annotations.match_annotations` (``annotator_labels`` lists or
    ChaosNLI ``label_counter``; a file of which fewer than ``min_match`` of the examples
    match is refused). Rows the file does not annotate get no annotator labels; how many
    matched is in ``frame.attrs["annotations_matched"]``.
    """
    from spurious.data.annotations import MIN_MATCH, match_annotations

    match = match_annotations(path, ds, min_match=MIN_MATCH if min_match is None else min_match)
    merged = ds.frame.copy()
    merged["annotator_labels"] = match.label_lists()
    out = Dataset.from_frame(merged, ds.task.name, label_names=ds.label_names, name=ds.name)
    out.frame.attrs.update({**ds.frame.attrs, "annotations_matched": match.summary})
    return out
