"""The validated, canonical :class:`Dataset` every other module consumes."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.canonical import (
    check_fields,
    check_label_names,
    check_texts,
    normalise_answers,
    normalise_ids,
    normalise_labels,
)
from spurious.data.mcq import normalise_mcq
from spurious.data.tasks import Task, get_task
from spurious.exceptions import EmptyDatasetError, ParameterError, SchemaError
from spurious.utils.hashing import stable_hash

#: Columns that are not text fields but may be present in ``Dataset.frame``.
META_COLUMNS = (
    "id",
    "label",
    "label_id",
    "annotator_labels",
    "group",
    "answers",
    "answer_starts",
    "options",
    "context",
)


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
        check_fields(frame, task, name)
        check_texts(frame, task, rows, name)
        check_label_names(label_names)
        kept = np.arange(len(frame))
        if task.multiple_choice:
            frame, rows, label_names, kept = normalise_mcq(frame, rows, name, drop_no_gold)
        elif task.has_labels:
            frame, rows, label_names, kept = normalise_labels(
                frame,
                rows,
                label_names or task.default_labels,
                name,
                drop_no_gold,
                assumed=not label_names,
            )
        else:
            label_names = ()
            frame = normalise_answers(frame, rows, name)
        normalise_ids(frame, task, rows, name)
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

        Parameters
        ----------
        indices : sequence of int, or boolean mask
            Row positions in ``[0, len(self))`` (in the order wanted; repeats allowed),
            or one boolean per row (the rows where it is true).
        name : str, optional
            Name of the new dataset (default: this one's).

        Raises
        ------
        ParameterError
            A position outside the rows, a value that is not an integer position (a
            fractional number, an id), or a mask of another length.

        Examples
        --------
        >>> from spurious.data.synthetic import make_nli_artifacts
        >>> ds = make_nli_artifacts(n=30, random_state=0).dataset
        >>> len(ds.subset([0, 1, 2])), len(ds.subset(ds.labels == 0))
        (3, 10)
        >>> ds.subset([30])
        Traceback (most recent call last):
        ...
        spurious.exceptions.ParameterError: The 'indices' parameter of Dataset.subset must ...
        """
        idx = self._positions(indices)
        frame = self.frame.iloc[idx].reset_index(drop=True).copy()
        source = None if self.source is None else self.source.take(idx)
        return Dataset(self.task, frame, self.label_names, name or self.name, source=source)

    def _positions(self, indices: Sequence[int] | np.ndarray) -> np.ndarray:
        """``indices`` as checked int64 row positions (a boolean mask: where it is true)."""
        n, name = len(self), self.name
        arr = np.asarray(indices)
        if arr.ndim != 1:
            raise ParameterError(
                f"The 'indices' parameter of Dataset.subset must be one-dimensional (row "
                f"positions of {name!r}); got an array of shape {arr.shape}."
            )
        if arr.dtype == bool:
            if len(arr) != n:
                raise ParameterError(
                    f"The 'indices' parameter of Dataset.subset as a boolean mask needs one "
                    f"value per row of {name!r} ({n:,}); got {len(arr):,}."
                )
            return np.flatnonzero(arr)
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        if not np.issubdtype(arr.dtype, np.integer):
            raise ParameterError(
                f"The 'indices' parameter of Dataset.subset must hold integer row positions "
                f"of {name!r} (not ids or fractions); got {arr.dtype} values such as "
                f"{arr[:1].tolist()[0]!r}."
            )
        bad = np.flatnonzero((arr < 0) | (arr >= n))
        if len(bad):
            raise ParameterError(
                f"The 'indices' parameter of Dataset.subset must hold row positions in "
                f"[0, {n:,}) of {name!r}; got {int(arr[bad[0]]):,} at position {int(bad[0])}"
                + (f" ({len(bad):,} out of range)." if len(bad) > 1 else ".")
            )
        return arr.astype(np.int64, copy=False)

    def group_keys(self, group_by: str | None = "auto") -> np.ndarray | None:
        """Keys that must stay on one side of any split (``None``: no grouping).

        Parameters
        ----------
        group_by : "auto", None or a column name
            ``"auto"``: the ``group`` column when the data has one; otherwise, for NLI,
            the premise text. SNLI and MNLI write three hypotheses (one per label) for
            each premise, so splitting siblings apart lets a premise-only model learn
            "the labels this premise did *not* get" and score below chance. A row whose
            group is missing (``None``, NaN) has no siblings: it is a group of its own.

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
                return _group_keys(self.frame["group"], as_str=False)
            if self.task.name == "nli":
                return self.frame["premise"].to_numpy(dtype=object)
            return None
        if group_by not in self.frame:
            raise ParameterError(
                f"The 'group_by' parameter must be 'auto', None or a column of {self.name!r} "
                f"({list(map(str, self.frame.columns))}). Got {group_by!r} instead."
            )
        return _group_keys(self.frame[group_by], as_str=True)

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


def _group_keys(values: pd.Series, *, as_str: bool) -> np.ndarray:
    """Split keys from a group column; a row without a group is a group of its own.

    A missing group (``None``, NaN) says the row has no siblings, so it may go to any
    side of a split alone; the keys are then all strings (sortable, as the folds need).

    Examples
    --------
    >>> keys = _group_keys(pd.Series(["a", None, "a", None]), as_str=False)
    >>> keys[0] == keys[2], len(set(keys))
    (True, 3)
    """
    missing = values.isna().to_numpy()
    if not missing.any():
        return (values.map(str) if as_str else values).to_numpy(dtype=object)
    keys = values.map(str).to_numpy(dtype=object)
    # A NUL prefix no real group key has in practice: these never meet one.
    keys[missing] = [f"\x00row {i}" for i in np.flatnonzero(missing)]
    return keys


def _jsonish(v: object) -> str:
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, list | tuple | dict):
        return json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)
    return str(v)
