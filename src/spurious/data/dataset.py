"""The validated, canonical :class:`Dataset` every other module consumes."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.tasks import Task, get_task
from spurious.exceptions import (
    EmptyDatasetError,
    LabelError,
    ParameterError,
    SchemaError,
)
from spurious.utils.hashing import stable_hash

logger = logging.getLogger(__name__)

#: Columns that are not text fields but may be present in ``Dataset.frame``.
META_COLUMNS = ("id", "label", "label_id", "annotator_labels", "group", "answers", "answer_starts")


@dataclass(frozen=True, eq=False)
class InputSource:
    """Where a :class:`Dataset`'s rows came from, so outputs can replace the input.

    :func:`spurious.load_dataset` records it; :mod:`spurious.actions.filter` uses it to
    write kept rows with the input's own columns, value types and (for Hugging Face
    data) features and container type.

    Attributes
    ----------
    kind : {"file", "dataframe", "hf"}
        A file or folder on disk, an in-memory DataFrame, or an in-memory Hugging Face
        ``Dataset`` / ``DatasetDict``.
    rows : numpy.ndarray of int64
        Per dataset row, its 0-based row in the source (rows without a gold label are
        dropped on loading, so this is not always ``arange(n)``).
    format : str or None
        The reader's format for files (``"jsonl"``, ``"csv"``, ``"tsv"``, ``"json"``,
        ``"parquet"``, ``"arrow"``, ``"squad"``, or ``"hf_disk"`` for a ``save_to_disk``
        folder).
    path : str or None
        The file or folder.
    obj : object
        The in-memory DataFrame or Hugging Face object (a reference, not a copy).
    split : str or None
        The split taken from a DatasetDict (object or folder).
    columns : dict
        ``{canonical field: source column}`` for every field the loader renamed.
    id_column : str or None
        The source's id column; ``None`` when the ids were generated (content hashes).
    hf_features : dict or None
        Hugging Face features in their JSON form, when the source carried them.
    n_source_rows : int
        Rows in the source (to notice a file that changed before it is written back).
    """

    kind: str
    rows: np.ndarray
    format: str | None = None
    path: str | None = None
    obj: Any = field(default=None, repr=False)
    split: str | None = None
    columns: Mapping[str, str] = field(default_factory=dict)
    id_column: str | None = None
    hf_features: dict | None = field(default=None, repr=False)
    n_source_rows: int = 0

    def take(self, indices: np.ndarray) -> InputSource:
        """The same source for the dataset rows at ``indices``."""
        return replace(self, rows=self.rows[np.asarray(indices, dtype=np.int64)])


@dataclass(eq=False)
class Dataset:
    """Rows of one task with canonical fields, stable ids, labels and a fingerprint.

    Build one with :func:`spurious.load_dataset` (files, DataFrames, HF datasets) or
    :meth:`Dataset.from_frame`; the constructor assumes an already validated frame.

    Attributes
    ----------
    task : Task
        The task (``nli``, ``pair``, ``text``, ``qa``).
    frame : pandas.DataFrame
        One row per example: ``id`` (str, unique), the task's text fields, and for
        labelled tasks ``label`` (name) and ``label_id`` (int index into
        ``label_names``); optionally ``annotator_labels`` (list of label names),
        ``group`` (rows sharing it are siblings, e.g. one SNLI caption) and, for QA,
        ``answers`` / ``answer_starts``.
    label_names : tuple of str
        Label names in id order (empty for QA).
    name : str
        A human-readable name (file stem by default).
    source : InputSource or None
        Where the rows came from (set by :func:`spurious.load_dataset`; ``None`` for
        data built in memory by :meth:`from_frame`). Not part of the fingerprint.
    """

    task: Task
    frame: pd.DataFrame
    label_names: tuple[str, ...] = ()
    name: str = "dataset"
    _fingerprint: str | None = field(default=None, repr=False)
    source: InputSource | None = field(default=None, repr=False, compare=False)

    # -- construction -------------------------------------------------------------
    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        task: str | Task,
        *,
        label_names: Sequence[str] | None = None,
        name: str = "dataset",
        drop_no_gold: bool = True,
        source_rows: Sequence[int] | None = None,
        source: InputSource | None = None,
    ) -> Dataset:
        """Validate a frame that already uses canonical column names.

        Parameters
        ----------
        frame : pandas.DataFrame
            Canonical columns (see the class docstring); ``id`` is optional and is
            filled with content hashes when absent.
        task : str or Task
            The task name.
        label_names : sequence of str, optional
            Allowed labels in id order. Defaults to the task's labels (NLI) or the
            sorted distinct labels found. Integer labels index into them; when they
            index into the task's default names (NLI), a warning says which mapping
            was assumed, since nothing in the data confirms it.
        name : str
            Human-readable name used in reports.
        drop_no_gold : bool
            Drop rows whose label is missing or ``"-"`` (logged), instead of failing.
        source_rows : sequence of int, optional
            Row numbers in the source file, used in error messages (1-based).
        source : InputSource, optional
            Where ``frame``'s rows came from (``source.rows[i]`` for row ``i``); rows
            dropped here are dropped from it too.

        Examples
        --------
        >>> import pandas as pd
        >>> df = pd.DataFrame({"text": ["good", "bad"], "label": ["pos", "neg"]})
        >>> ds = Dataset.from_frame(df, "text")
        >>> ds.label_names, len(ds)
        (('neg', 'pos'), 2)
        """
        task = get_task(task) if isinstance(task, str) else task
        frame = frame.reset_index(drop=True).copy()
        rows = (
            np.asarray(source_rows, dtype=int)
            if source_rows is not None
            else np.arange(1, len(frame) + 1)
        )
        if len(frame) == 0:
            raise EmptyDatasetError(f"Dataset {name!r} has no rows.")

        required = list(task.text_fields) + (["label"] if task.has_labels else ["answers"])
        missing = [f for f in required if f not in frame.columns]
        if missing:
            raise SchemaError(
                f"Dataset {name!r} (task {task.name!r}) is missing field(s) {missing}; "
                f"fields found: {list(map(str, frame.columns))}. Map your columns with "
                f"field_map={{'{missing[0]}': '<your column>'}}."
            )

        for f in task.text_fields:
            frame[f] = _check_text_column(frame[f], f, rows, name)
        empty = {f: int(frame[f].str.strip().eq("").sum()) for f in task.text_fields}
        for f, k in empty.items():
            if k == len(frame):
                raise SchemaError(
                    f"Dataset {name!r}: field {f!r} is empty in every row; check --field-map."
                )
        if any(empty.values()):
            # Kept (an empty hypothesis is a valid, if odd, example), but counted and reported.
            frame.attrs["n_empty_text"] = {f: k for f, k in empty.items() if k}

        if label_names is not None and len(set(map(str, label_names))) != len(label_names):
            raise ParameterError(
                "The 'label_names' parameter must hold distinct names. "
                f"Got {list(label_names)!r} instead."
            )
        kept = np.arange(len(frame))
        if task.has_labels:
            frame, rows, label_names, kept = _normalise_labels(
                frame,
                rows,
                label_names or task.default_labels,
                name,
                drop_no_gold,
                assumed=not label_names,
            )
        else:
            label_names = ()
            frame = _normalise_answers(frame, rows, name)
            no_answer = int(frame["answers"].map(len).eq(0).sum())
            if no_answer == len(frame):
                raise SchemaError(
                    f"Dataset {name!r}: no question has a gold answer, so nothing can be "
                    "scored (unanswerable-question sets such as SQuAD 2.0's are not supported)."
                )
            if no_answer:
                frame.attrs["n_no_answer"] = no_answer

        if "id" in frame.columns:
            # astype(str) would turn a missing id into the id "nan" (or keep NaN).
            no_id = frame["id"].isna().to_numpy()
            if no_id.any():
                i = int(np.flatnonzero(no_id)[0])
                raise SchemaError(
                    f"Dataset {name!r}, row {rows[i]}: field 'id' is missing "
                    f"({int(no_id.sum())} row(s) without an id). Give every row an id, or "
                    "drop the id column to get content-hash ids."
                )
            ids = frame["id"].astype(str)
            dup = ids[ids.duplicated(keep=False)]
            if len(dup):
                first = dup.iloc[0]
                where = rows[(ids == first).to_numpy()].tolist()[:5]
                raise SchemaError(
                    f"Dataset {name!r} has {dup.nunique()} duplicated id(s); e.g. id "
                    f"{first!r} appears on rows {where}. Ids must be unique."
                )
            frame["id"] = ids
        else:
            frame.insert(0, "id", _content_ids(frame, task))
        if source is not None:
            source = source.take(kept)
        return cls(task=task, frame=frame, label_names=tuple(label_names), name=name, source=source)

    # -- basic protocol -----------------------------------------------------------
    def __len__(self) -> int:
        return len(self.frame)

    def __repr__(self) -> str:
        labels = f", labels={list(self.label_names)}" if self.label_names else ""
        return (
            f"Dataset(name={self.name!r}, task={self.task.name!r}, n={len(self)}"
            f"{labels}, fingerprint={self.fingerprint!r})"
        )

    @property
    def ids(self) -> np.ndarray:
        """Example ids as an object array of str."""
        return self.frame["id"].to_numpy(dtype=object)

    @property
    def labels(self) -> np.ndarray:
        """Integer label ids (``int64``); raises for unlabelled tasks."""
        if not self.task.has_labels:
            raise SchemaError(f"Task {self.task.name!r} has no class labels.")
        return self.frame["label_id"].to_numpy(dtype=np.int64)

    @property
    def n_classes(self) -> int:
        """Number of label names."""
        return len(self.label_names)

    @property
    def groups(self) -> np.ndarray | None:
        """Group keys (siblings share one), or ``None`` when the data has none."""
        return self.frame["group"].to_numpy(dtype=object) if "group" in self.frame else None

    def texts(self, field_name: str) -> list[str]:
        """The values of one text field, in row order."""
        if field_name not in self.task.text_fields:
            raise ParameterError(
                f"The 'field' parameter must be one of {list(self.task.text_fields)} for "
                f"task {self.task.name!r}. Got {field_name!r} instead."
            )
        return self.frame[field_name].tolist()

    @property
    def fingerprint(self) -> str:
        """Content hash of task, label names, ids, text fields, labels and annotations.

        Two datasets with the same fingerprint hold the same examples in the same order;
        features, caches and saved results are keyed by it.
        """
        if self._fingerprint is None:
            cols = [c for c in ("id", *self.task.text_fields, *META_COLUMNS[1:]) if c in self.frame]
            cols = list(dict.fromkeys(cols))
            flat = self.frame[cols].copy()
            for c in cols:
                if flat[c].dtype == object:
                    flat[c] = flat[c].map(_jsonish)
            row_hashes = pd.util.hash_pandas_object(flat, index=False).to_numpy()
            self._fingerprint = stable_hash(
                {
                    "task": self.task.name,
                    "labels": list(self.label_names),
                    "columns": cols,
                    "rows": stable_hash(row_hashes.tobytes().hex(), 32),
                }
            )
        return self._fingerprint

    def subset(self, indices: Sequence[int] | np.ndarray, name: str | None = None) -> Dataset:
        """A new dataset with the rows at ``indices`` (label names are kept).

        Examples
        --------
        >>> from spurious.data.synthetic import make_nli_artifacts
        >>> ds = make_nli_artifacts(n=30, random_state=0).dataset
        >>> len(ds.subset([0, 1, 2]))
        3
        """
        idx = np.asarray(indices, dtype=np.int64)
        frame = self.frame.iloc[idx].reset_index(drop=True).copy()
        source = None if self.source is None else self.source.take(idx)
        return Dataset(self.task, frame, self.label_names, name or self.name, source=source)

    def group_keys(self, group_by: str | None = "auto") -> np.ndarray | None:
        """Keys that must stay on one side of any split (``None``: no grouping).

        Parameters
        ----------
        group_by : "auto", None or a column name
            ``"auto"``: the ``group`` column when the data has one; otherwise, for NLI,
            the premise text. SNLI and MNLI write three hypotheses (one per label) for
            each premise, so splitting siblings apart lets a premise-only model learn
            "the labels this premise did *not* get" and score below chance.

        Examples
        --------
        >>> import pandas as pd
        >>> ds = Dataset.from_frame(pd.DataFrame({"premise": ["p", "p", "q"],
        ...     "hypothesis": ["a", "b", "c"], "label": [0, 1, 2]}), "nli")
        >>> ds.group_keys().tolist()
        ['p', 'p', 'q']
        """
        if group_by is None:
            return None
        if group_by == "auto":
            if "group" in self.frame:
                return self.frame["group"].to_numpy(dtype=object)
            if self.task.name == "nli":
                return self.frame["premise"].to_numpy(dtype=object)
            return None
        if group_by not in self.frame:
            raise ParameterError(
                f"The 'group_by' parameter must be 'auto', None or a column of {self.name!r} "
                f"({list(map(str, self.frame.columns))}). Got {group_by!r} instead."
            )
        return self.frame[group_by].map(str).to_numpy(dtype=object)

    def split(
        self,
        test_size: float = 0.2,
        random_state: int | None = 0,
        stratify: bool = True,
        group_by: str | None = "auto",
    ) -> tuple[Dataset, Dataset]:
        """A seeded train/test split that keeps grouped rows together.

        Parameters
        ----------
        test_size : float
            Fraction of rows (of groups, when grouping) in the test split.
        random_state : int, optional
        stratify : bool
            Stratify by label (ungrouped splits only).
        group_by : "auto", None or a column name
            See :meth:`group_keys`.

        Examples
        --------
        >>> from spurious.data.synthetic import make_nli_artifacts
        >>> train, test = make_nli_artifacts(n=100, random_state=0).dataset.split(0.25)
        >>> len(train) + len(test), set(train.frame.premise).isdisjoint(test.frame.premise)
        (100, True)
        """
        from sklearn.model_selection import GroupShuffleSplit, train_test_split

        if not 0.0 < test_size < 1.0:
            raise ParameterError(
                "The 'test_size' parameter must be a float in the range (0, 1). "
                f"Got {test_size!r} instead."
            )
        n = len(self)
        groups = self.group_keys(group_by)
        if groups is not None and len(set(groups)) < n:
            gss = GroupShuffleSplit(n_splits=1, test_size=test_size, random_state=random_state)
            train_idx, test_idx = next(gss.split(np.zeros(n), groups=groups))
        else:
            strat = self.labels if (stratify and self.task.has_labels) else None
            if strat is not None:
                counts = np.bincount(strat, minlength=self.n_classes)
                if counts[counts > 0].min() < 2:
                    raise SchemaError(
                        f"A stratified split of {self.name!r} needs at least 2 examples of every "
                        f"label; label counts are {dict(zip(self.label_names, counts.tolist(), strict=True))}."
                        " Use more data or stratify=False."
                    )
            train_idx, test_idx = train_test_split(
                np.arange(n), test_size=test_size, random_state=random_state, stratify=strat
            )
        return (
            self.subset(np.sort(train_idx), f"{self.name}[train]"),
            self.subset(np.sort(test_idx), f"{self.name}[test]"),
        )

    def to_pandas(self) -> pd.DataFrame:
        """A copy of the canonical frame."""
        return self.frame.copy()

    def to_hf(self):  # -> datasets.Dataset
        """Convert to a Hugging Face ``datasets.Dataset`` (needs the ``hf`` extra)."""
        from spurious.exceptions import missing_dependency

        try:
            import datasets
        except ImportError:
            raise missing_dependency("datasets", "hf", "Hugging Face export") from None
        return datasets.Dataset.from_pandas(self.frame, preserve_index=False)


# -- helpers ------------------------------------------------------------------------


def _jsonish(v: object) -> str:
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, list | tuple | dict):
        return json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)
    return str(v)


def _check_text_column(col: pd.Series, field_name: str, rows: np.ndarray, name: str) -> pd.Series:
    bad = col.map(lambda v: not isinstance(v, str))
    if bad.any():
        i = int(np.flatnonzero(bad.to_numpy())[0])
        v = col.iloc[i]
        # A JSON null or an absent key arrives as NaN: say "missing", not "float nan".
        got = (
            "a missing value (null/NaN)" if _is_missing(v) else f"{type(v).__name__} {_plain(v)!r}"
        )
        raise SchemaError(
            f"Dataset {name!r}, row {rows[i]}: field {field_name!r} must be a string. "
            f"Got {got} instead ({int(bad.sum())} row(s) affected)."
        )
    return col


def _normalise_labels(
    frame: pd.DataFrame,
    rows: np.ndarray,
    label_names: Sequence[str] | None,
    name: str,
    drop_no_gold: bool,
    assumed: bool = False,
) -> tuple[pd.DataFrame, np.ndarray, tuple[str, ...], np.ndarray]:
    """Labels as names and ids; returns ``(frame, rows, label_names, kept positions)``."""
    from spurious.data.tasks import NO_GOLD_LABELS

    raw = frame["label"]
    missing = raw.isna().to_numpy() | raw.map(lambda v: str(v).strip() in NO_GOLD_LABELS).to_numpy()
    if missing.any():
        if not drop_no_gold:
            i = int(np.flatnonzero(missing)[0])
            raise LabelError(
                f"Dataset {name!r}, row {rows[i]}: no gold label (got {_plain(raw.iloc[i])!r})."
            )
        logger.info("%s: dropped %d row(s) without a gold label", name, int(missing.sum()))
        frame = frame.loc[~missing].reset_index(drop=True)
        rows = rows[~missing]
        if len(frame) == 0:
            raise EmptyDatasetError(f"Dataset {name!r} has no rows with a gold label.")
    kept = np.flatnonzero(~missing)
    frame.attrs["n_dropped_no_gold"] = int(missing.sum())

    values = frame["label"].map(_label_str)
    if label_names is None:
        label_names = tuple(sorted(values.unique(), key=_natural_key))
    label_names = tuple(str(x) for x in label_names)
    index = {lab: i for i, lab in enumerate(label_names)}
    # Integer labels (HF datasets, GLUE TSVs) index into label_names.
    ids = values.map(lambda v: index.get(v, _int_index(v, len(label_names))))
    unknown = ids.isna().to_numpy()
    if unknown.any():
        i = int(np.flatnonzero(unknown)[0])
        raise LabelError(
            f"Dataset {name!r}, row {rows[i]}: unknown label {_plain(frame['label'].iloc[i])!r}; "
            f"expected one of {list(label_names)} (or an integer in [0, {len(label_names)})). "
            f"{int(unknown.sum())} row(s) have unknown labels."
        )
    frame["label_id"] = ids.astype(np.int64)
    by_position = ~values.isin(list(index)).to_numpy()
    if assumed and by_position.any():
        # Integer labels mapped to names nothing in the data states: a silent
        # corruption if the source used another order, so say which order was assumed.
        mapping = ", ".join(f"{i} -> {lab}" for i, lab in enumerate(label_names))
        logger.warning(
            "Dataset %r: %d label(s) are integers and the data carries no label names; "
            "assumed the default order %s. If the source used another order, pass "
            "label_names=[...] in id order.",
            name,
            int(by_position.sum()),
            mapping,
        )
    frame["label"] = frame["label_id"].map(lambda k: label_names[k])
    present = frame["label_id"].nunique()
    if present < 2:
        raise LabelError(
            f"Dataset {name!r} has a single class ({frame['label'].iloc[0]!r}) in all "
            f"{len(frame)} rows; at least two classes are needed."
        )
    if "annotator_labels" in frame:
        frame["annotator_labels"] = [
            [_label_str(x) for x in _as_list(v, "annotator_labels", row, name)]
            for v, row in zip(frame["annotator_labels"], rows, strict=True)
        ]
    return frame, rows, label_names, kept


def _plain(v: object) -> object:
    """A numpy scalar as the Python value (so messages read ``0.5``, not ``np.float64(0.5)``)."""
    return v.item() if isinstance(v, np.generic) else v


def _is_missing(v: object) -> bool:
    return v is None or (isinstance(v, float | np.floating) and np.isnan(v))


def _as_list(v: object, field_name: str, row: int, name: str) -> list:
    """A list-valued cell as a list; missing (None/NaN, e.g. absent from a JSONL row) -> []."""
    if _is_missing(v):
        return []
    if isinstance(v, list | tuple | np.ndarray):
        return list(v)
    raise SchemaError(
        f"Dataset {name!r}, row {row}: field {field_name!r} must be a list. "
        f"Got {type(v).__name__} {_plain(v)!r} instead."
    )


def _normalise_answers(frame: pd.DataFrame, rows: np.ndarray, name: str) -> pd.DataFrame:
    """QA answers as lists of str; also accepts one string and HF SQuAD's dict form."""
    answers, starts = [], []
    for v, row in zip(frame["answers"], rows, strict=True):
        start: list = []
        if isinstance(v, str):
            v = [v]
        elif isinstance(v, dict) and "text" in v:
            # Hugging Face SQuAD: {"text": [...], "answer_start": [...]}.
            start = [int(x) for x in _as_list(v.get("answer_start"), "answer_start", row, name)]
            v = v["text"]
        texts = _as_list(v, "answers", row, name)
        bad = [x for x in texts if not isinstance(x, str)]
        if bad:
            raise SchemaError(
                f"Dataset {name!r}, row {row}: field 'answers' must be a list of strings. "
                f"Got an element {_plain(bad[0])!r} of type {type(bad[0]).__name__}."
            )
        answers.append(texts)
        starts.append(start)
    frame["answers"] = answers
    if "answer_starts" not in frame and any(starts):
        frame["answer_starts"] = starts
    return frame


def _label_str(v: object) -> str:
    if isinstance(v, float | np.floating) and float(v).is_integer():
        v = int(v)
    return str(v).strip()


def _int_index(v: str, n: int) -> float | int:
    try:
        k = int(v)
    except ValueError:
        return np.nan
    return k if 0 <= k < n else np.nan


def _natural_key(s: str) -> tuple[int, float | str]:
    try:
        return (0, float(s))
    except ValueError:
        return (1, s)


def _content_ids(frame: pd.DataFrame, task: Task) -> list[str]:
    """Content-hash ids; exact duplicate rows get ``-1``, ``-2``... suffixes."""
    seen: dict[str, int] = {}
    out = []
    cols = list(task.text_fields) + (["label"] if task.has_labels else [])
    for values in frame[cols].itertuples(index=False, name=None):
        h = stable_hash(list(values), 12)
        k = seen.get(h, 0)
        seen[h] = k + 1
        out.append(h if k == 0 else f"{h}-{k}")
    return out
