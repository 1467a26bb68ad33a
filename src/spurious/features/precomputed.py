"""Features you computed yourself: one array (or ``.npy`` file) per view.

Rows are matched to examples either by position (the array has exactly one row per
example, in dataset order) or, when ``ids`` is given, by example id, so one array can
cover several splits (train and eval rows stacked in any order).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from spurious.data.dataset import Dataset
from spurious.exceptions import DataFormatError, FeatureError, ParameterError
from spurious.features.base import Featurizer, as_numeric_2d, check_features
from spurious.utils.hashing import array_digest
from spurious.utils.io import check_input_file, read_input_text, text_lines
from spurious.views import View, get_view

logger = logging.getLogger(__name__)

ArrayLike = np.ndarray | str | os.PathLike[str]


def _is_path(obj: object) -> bool:
    return isinstance(obj, str | os.PathLike)


class PrecomputedFeaturizer(Featurizer):
    """User-supplied feature matrices, one per view.

    Parameters
    ----------
    arrays : dict
        View name (``"full"``, ``"hypothesis_only"``... or a field name such as
        ``"hypothesis"``) -> 2-D array or path to a ``.npy`` file (loaded with
        ``allow_pickle=False``, memory-mapped so only the needed rows are read).
    ids : sequence of str, path to a text file, or None
        Example id of each array row (the text file has one id per line). With ids,
        rows are looked up by ``dataset.ids`` and one array may cover several splits;
        without, every array must have exactly ``len(dataset)`` rows in dataset order.

    Examples
    --------
    >>> import pandas as pd
    >>> from spurious.data import Dataset
    >>> ds = Dataset.from_frame(pd.DataFrame({"id": ["a", "b"], "premise": ["p", "q"],
    ...     "hypothesis": ["h", "i"], "label": ["entailment", "neutral"]}), "nli")
    >>> X = np.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    >>> feat = PrecomputedFeaturizer({"hypothesis_only": X}, ids=["c", "b", "a"])
    >>> feat.transform(ds, "hypothesis_only")
    array([[4., 5.],
           [2., 3.]], dtype=float32)
    """

    name: ClassVar[str] = "precomputed"
    stateless: ClassVar[bool] = True

    def __init__(
        self,
        arrays: Mapping[str, ArrayLike],
        ids: Sequence[str] | str | os.PathLike[str] | None = None,
    ) -> None:
        self.arrays = arrays
        self.ids = ids

    # -- loading --------------------------------------------------------------------
    def _check_arrays_param(self) -> None:
        if not isinstance(self.arrays, Mapping) or not self.arrays:
            raise ParameterError(
                "The 'arrays' parameter of PrecomputedFeaturizer must be a non-empty dict "
                "{view name: array or .npy path}. "
                f"Got {type(self.arrays).__name__} instead."
            )

    def _load_ids(self) -> np.ndarray | None:
        if self.ids is None:
            return None
        cached = getattr(self, "_ids_cache", None)
        if cached is not None and cached[0] is self.ids:
            return cached[1]
        if _is_path(self.ids):
            path = Path(self.ids)
            try:
                # A regular file of bounded size (a FIFO would block); lines end at \n only.
                text = read_input_text(path, what="The precomputed ids file", kind="ids")
            except DataFormatError as e:
                raise FeatureError(str(e)) from None
            except OSError as e:
                raise FeatureError(f"Could not read the precomputed ids file {path}: {e}") from None
            lines = [line for _, line in text_lines(text)]
            empty = [i + 1 for i, line in enumerate(lines) if not line.strip()]
            if empty:
                raise FeatureError(
                    f"The precomputed ids file {path} has {len(empty)} empty line(s) "
                    f"(first: line {empty[0]}); it needs one id per line."
                )
            ids = np.array([line.strip() for line in lines], dtype=object)
            source = str(path)
        else:
            ids = np.array([str(x) for x in self.ids], dtype=object)
            source = "the 'ids' list"
        uniq, counts = np.unique(ids.astype(str), return_counts=True)
        if (counts > 1).any():
            dup = uniq[counts > 1]
            raise FeatureError(
                f"{source} has {len(dup)} duplicated id(s), e.g. {list(dup[:3])}; ids must "
                "be unique."
            )
        self._ids_cache = (self.ids, ids)
        return ids

    def _resolve_key(self, dataset: Dataset, view: View) -> str:
        """The key of ``arrays`` that means ``view`` (keys may be field names too)."""
        if view.name in self.arrays:
            return view.name
        for key in self.arrays:
            try:
                if get_view(dataset.task, key) == view:
                    return key
            except (ParameterError, TypeError):
                continue
        raise FeatureError(
            f"PrecomputedFeaturizer has no array for view {view.name!r}; available "
            f"view(s): {sorted(self.arrays)}."
        )

    def _raw_array(self, key: str) -> tuple[np.ndarray, str]:
        """The array for ``key`` (memory-mapped when a file) and a description of it."""
        value = self.arrays[key]
        if not _is_path(value):
            what = f"precomputed features for view {key!r}"
            return self._check_raw(value, what), what
        path = Path(value)
        what = f"precomputed features for view {key!r} (file {path})"
        try:
            if path.exists():  # a missing file: np.load's "not found" below
                check_input_file(path, what="The precomputed features file", kind="features")
        except DataFormatError as e:  # not a regular file (a FIFO would block), or too large
            raise FeatureError(str(e)) from None
        try:
            # mmap: with ids only the rows of this split are read from a big shared file.
            loaded = np.load(path, mmap_mode="r", allow_pickle=False)
        except FileNotFoundError:
            raise FeatureError(f"{what}: file not found.") from None
        except (OSError, ValueError, EOFError) as e:
            raise FeatureError(
                f"{what} could not be read as a .npy array (object/pickled arrays are refused): {e}"
            ) from None
        if not isinstance(loaded, np.ndarray):  # an .npz archive
            raise FeatureError(f"{what}: expected a .npy array, got a {type(loaded).__name__}.")
        return self._check_raw(loaded, what), what

    @staticmethod
    def _check_raw(value: Any, what: str) -> np.ndarray:
        # Shape and dtype only: finiteness is checked on the rows actually used, so a NaN
        # in another split's rows does not block this one.
        return as_numeric_2d(value, what)

    # -- Featurizer -----------------------------------------------------------------
    def _transform(self, dataset: Dataset, view: View, *, progress: bool) -> np.ndarray:
        self._check_arrays_param()
        key = self._resolve_key(dataset, view)
        arr, what = self._raw_array(key)
        ids = self._load_ids()
        if ids is None:
            if arr.shape[0] != len(dataset):
                raise FeatureError(
                    f"{what} has {arr.shape[0]} rows but dataset {dataset.name!r} has "
                    f"{len(dataset)} examples; pass ids=... to match rows by example id."
                )
            rows = arr
        else:
            if arr.shape[0] != len(ids):
                raise FeatureError(
                    f"{what} has {arr.shape[0]} rows but {len(ids)} ids were given; "
                    "they must match one to one."
                )
            index = {k: i for i, k in enumerate(ids.tolist())}
            wanted = dataset.ids.tolist()
            missing = [k for k in wanted if k not in index]
            if missing:
                raise FeatureError(
                    f"{len(missing)} of {len(wanted)} example id(s) of dataset "
                    f"{dataset.name!r} are missing from the precomputed ids, e.g. "
                    f"{missing[:5]}."
                )
            take = np.fromiter((index[k] for k in wanted), dtype=np.int64, count=len(wanted))
            rows = arr[take]
        return check_features(np.asarray(rows), len(dataset), what)

    def config(self) -> dict[str, Any]:
        """Compact identity: file paths as given, in-memory arrays by shape and checksum."""

        def describe(v: Any) -> Any:
            if v is None or _is_path(v):
                return None if v is None else os.fspath(v)
            arr = np.ascontiguousarray(v)
            digest = array_digest(arr, size=8)
            return f"array{list(arr.shape)}:{arr.dtype}:{digest}"

        arrays = self.arrays if isinstance(self.arrays, Mapping) else {}
        ids = self.ids
        if ids is not None and not _is_path(ids):
            ids = np.array([str(x) for x in ids])
        return {
            "featurizer": self.name,
            "arrays": {str(k): describe(v) for k, v in sorted(arrays.items())},
            "ids": describe(ids),
        }
