"""Training dynamics: how a model's belief in each example's gold label moves while it trains.

Dataset cartography (Swayamdipta et al. 2020, used by paper 002 Sec. 3) summarises, per
example, the probability a model gives the gold label at the end of each training epoch.
This module holds the record and everything that makes or moves one:

- :class:`TrainingDynamics`: one row per (example, split, recording) with ``p_gold``,
  ``pred``, ``correct`` and optionally the ``logits``; saved as Parquet + JSON
  (atomically), and converted to and from allenai/cartography's
  ``dynamics_epoch_{e}.jsonl`` files so dynamics recorded elsewhere can be used here and
  ours elsewhere;
- :func:`cartography_stats`: confidence, variability, correctness and forgetting events
  per example;
- :func:`probe_dynamics`: the *fast path* (issue 8 part 3), a small MLP or a linear
  softmax layer trained for a few epochs on frozen features (cached sentence
  embeddings), recording every training and evaluation example after every epoch;
- the ``"training_dynamics"`` artifact provider of the run context, so every analysis
  of a run shares one record per configuration. ``path="finetune"`` delegates to the
  fine-tuning engine (:func:`spurious.models.finetune.finetune_dynamics`).

Dynamics of the evaluation split come from the model trained on the training split only,
recorded after each epoch as one would record validation accuracy (paper 002 Sec. 3 and
footnote 5: "we are **not** fine-tuning on the test set").
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import sparse

from spurious.context import register_artifact
from spurious.exceptions import (
    DataFormatError,
    DetectorError,
    ParameterError,
    ResultLoadError,
    missing_dependency,
)
from spurious.utils.io import atomic_write, atomic_write_json, atomic_write_text, read_json

if TYPE_CHECKING:  # pragma: no cover
    from spurious.context import RunContext
    from spurious.data.dataset import Dataset

logger = logging.getLogger(__name__)

__all__ = [
    "DYNAMICS_COLUMNS",
    "FAST_MODELS",
    "FAST_OPTIONS",
    "OPTIONAL_COLUMNS",
    "PATHS",
    "TrainingDynamics",
    "cartography_stats",
    "load_dynamics",
    "probe_dynamics",
    "training_dynamics_artifact",
]

#: Required columns of :attr:`TrainingDynamics.frame`.
DYNAMICS_COLUMNS = ("id", "split", "epoch", "p_gold", "pred", "correct")
#: Optional columns: the logits, and the gold label id (kept when a maker knows it, so
#: an export need not recover it from ``p_gold``).
OPTIONAL_COLUMNS = ("logits", "gold")
#: Models of the fast path.
FAST_MODELS = ("mlp", "linear")
#: Training options of the fast path (keywords of :func:`probe_dynamics`) a caller may set.
FAST_OPTIONS = (
    "lr",
    "batch_size",
    "hidden_size",
    "weight_decay",
    "records_per_epoch",
    "standardize",
    "record_logits",
    "n_threads",
)
#: Paths that build dynamics: train a probe on frozen features, fine-tune a model, or
#: read dynamics saved earlier (ours, or allenai/cartography's files).
PATHS = ("fast", "finetune", "load")

_FORMAT_VERSION = 1
_FRAME_FILE = "dynamics.parquet"
_META_FILE = "dynamics.json"
_EPOCH_FILE = re.compile(r"dynamics_epoch_(\d+)\.jsonl?$")


# =======================================================================================
# The record
# =======================================================================================
@dataclass
class TrainingDynamics:
    """Per-example predictions of a model recorded during training.

    Attributes
    ----------
    frame : pandas.DataFrame
        One row per example, split and recording: ``id`` (str), ``split`` (``"train"``
        or ``"eval"``), ``epoch`` (float; epochs of training done when recorded, so the
        end of the first epoch is 1.0 and a mid-epoch recording 0.5), ``p_gold``
        (probability of the gold label), ``pred`` (predicted label id), ``correct``
        (bool) and optionally ``logits`` (list of float, one per label).
    label_names : list of str
        Label id -> name, the ids used by ``pred`` and by the logits' positions.
    meta : dict
        Plain-data description: how the dynamics were made (path, model, view,
        features, epochs, timings ...).

    Examples
    --------
    >>> frame = pd.DataFrame({"id": ["a", "a"], "split": ["train", "train"],
    ...                       "epoch": [1.0, 2.0], "p_gold": [0.4, 0.8],
    ...                       "pred": [1, 0], "correct": [False, True]})
    >>> dyn = TrainingDynamics(frame, ["yes", "no"])
    >>> dyn.epochs("train"), dyn.ids("train")
    ([1.0, 2.0], ['a'])
    """

    frame: pd.DataFrame
    label_names: list[str]
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.frame, pd.DataFrame):
            raise DataFormatError(
                "TrainingDynamics expects a pandas DataFrame as 'frame'; got "
                f"{type(self.frame).__name__}."
            )
        missing = [c for c in DYNAMICS_COLUMNS if c not in self.frame.columns]
        if missing:
            raise DataFormatError(
                f"The 'frame' of TrainingDynamics needs columns {list(DYNAMICS_COLUMNS)}; "
                f"missing {missing} (got {list(self.frame.columns)})."
            )
        bad = sorted(set(self.frame["split"]) - {"train", "eval"})
        if bad:
            raise DataFormatError(
                f"The 'split' column of TrainingDynamics holds 'train' or 'eval'; got {bad}."
            )
        self.label_names = [str(n) for n in self.label_names]
        frame = self.frame.copy()
        frame["id"] = frame["id"].astype(str)
        frame["split"] = frame["split"].astype(str)
        frame["epoch"] = frame["epoch"].astype(float)
        frame["p_gold"] = frame["p_gold"].astype(float)
        frame["pred"] = frame["pred"].astype(np.int64)
        frame["correct"] = frame["correct"].astype(bool)
        p = frame["p_gold"].to_numpy()
        if len(p) and (not np.isfinite(p).all() or p.min() < 0 or p.max() > 1 + 1e-6):
            raise DataFormatError(
                "The 'p_gold' column of TrainingDynamics must hold probabilities in [0, 1]; "
                f"got values in [{np.nanmin(p)}, {np.nanmax(p)}]."
            )
        if "gold" in frame.columns:
            frame["gold"] = frame["gold"].astype(np.int64)
        keep = [*DYNAMICS_COLUMNS, *(c for c in OPTIONAL_COLUMNS if c in frame.columns)]
        self.frame = frame[keep].reset_index(drop=True)

    # -- access ---------------------------------------------------------------------------
    def splits(self) -> list[str]:
        """Splits present, ``"train"`` first."""
        return [s for s in ("train", "eval") if (self.frame["split"] == s).any()]

    def of(self, split: str) -> pd.DataFrame:
        """Rows of ``split`` (``"train"`` or ``"eval"``); a clear error when it is absent."""
        if split not in ("train", "eval"):
            raise ParameterError(f"The 'split' argument must be 'train' or 'eval'; got {split!r}.")
        rows = self.frame[self.frame["split"] == split]
        if rows.empty:
            raise DetectorError(
                f"These training dynamics hold no {split!r} split (they have {self.splits()})."
            )
        return rows

    def epochs(self, split: str = "train") -> list[float]:
        """Recording points of ``split``, ascending."""
        return sorted(float(e) for e in self.of(split)["epoch"].unique())

    def ids(self, split: str = "train") -> list[str]:
        """Example ids of ``split`` in first-seen order."""
        return list(pd.unique(self.of(split)["id"]))

    def accuracy(self, split: str = "train") -> dict[float, float]:
        """Accuracy of ``split`` at each recording (a learning curve).

        Examples
        --------
        >>> frame = pd.DataFrame({"id": ["a", "b"], "split": "train", "epoch": 1.0,
        ...                       "p_gold": [0.9, 0.2], "pred": [0, 1],
        ...                       "correct": [True, False]})
        >>> TrainingDynamics(frame, ["x", "y"]).accuracy()
        {1.0: 0.5}
        """
        rows = self.of(split)
        acc = rows.groupby("epoch")["correct"].mean()
        return {float(k): float(v) for k, v in acc.items()}

    def __len__(self) -> int:
        return len(self.frame)

    def __repr__(self) -> str:
        parts = [
            f"{s}: {len(self.ids(s))} examples x {len(self.epochs(s))} recordings"
            for s in self.splits()
        ]
        return f"TrainingDynamics({'; '.join(parts) or 'empty'})"

    @classmethod
    def concat(cls, parts: Sequence[TrainingDynamics]) -> TrainingDynamics:
        """Join dynamics of different splits (same labels) into one record.

        Examples
        --------
        >>> f = pd.DataFrame({"id": ["a"], "split": ["train"], "epoch": [1.0],
        ...                   "p_gold": [0.5], "pred": [0], "correct": [True]})
        >>> g = f.assign(split="eval", id="b")
        >>> TrainingDynamics.concat([TrainingDynamics(f, ["x"]), TrainingDynamics(g, ["x"])])
        TrainingDynamics(train: 1 examples x 1 recordings; eval: 1 examples x 1 recordings)
        """
        if not parts:
            raise ParameterError("The 'parts' argument of TrainingDynamics.concat is empty.")
        names = parts[0].label_names
        for p in parts[1:]:
            if p.label_names != names:
                raise DataFormatError(
                    f"Cannot join training dynamics with label names {p.label_names} to ones "
                    f"with {names}."
                )
        frame = pd.concat([p.frame for p in parts], ignore_index=True)
        if frame.duplicated(["id", "split", "epoch"]).any():
            raise DataFormatError(
                "Joined training dynamics hold the same (id, split, epoch) more than once."
            )
        meta = {k: v for p in parts for k, v in p.meta.items()}
        return cls(frame, names, meta)

    # -- Parquet + JSON ---------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        """Write ``dynamics.parquet`` and ``dynamics.json`` into ``directory`` atomically.

        Examples
        --------
        >>> import tempfile
        >>> f = pd.DataFrame({"id": ["a"], "split": ["train"], "epoch": [1.0],
        ...                   "p_gold": [0.5], "pred": [0], "correct": [True]})
        >>> d = TrainingDynamics(f, ["x", "y"], {"model": "mlp"}).save(tempfile.mkdtemp())
        >>> TrainingDynamics.load(d).meta
        {'model': 'mlp'}
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        atomic_write(directory / _FRAME_FILE, lambda p: self.frame.to_parquet(p, index=False))
        atomic_write_json(
            directory / _META_FILE,
            {
                "format_version": _FORMAT_VERSION,
                "label_names": self.label_names,
                "meta": self.meta,
            },
        )
        return directory

    @classmethod
    def load(cls, directory: str | Path) -> TrainingDynamics:
        """Read what :meth:`save` wrote (a clear error for a missing or newer file)."""
        directory = Path(directory)
        meta_path, frame_path = directory / _META_FILE, directory / _FRAME_FILE
        if not meta_path.is_file() or not frame_path.is_file():
            raise ResultLoadError(
                f"{str(directory)!r} holds no saved training dynamics (expected "
                f"{_FRAME_FILE} and {_META_FILE})."
            )
        try:
            info = read_json(meta_path)
        except (OSError, json.JSONDecodeError) as e:
            raise ResultLoadError(f"{str(meta_path)!r} is not a valid JSON file: {e}") from None
        version = info.get("format_version", 0)
        if version > _FORMAT_VERSION:
            raise ResultLoadError(
                f"{str(meta_path)!r} has format version {version}; this spurious reads up to "
                f"{_FORMAT_VERSION}. Upgrade spurious."
            )
        frame = pd.read_parquet(frame_path)
        if "logits" in frame.columns:
            frame["logits"] = [list(map(float, v)) for v in frame["logits"]]
        return cls(frame, list(info["label_names"]), dict(info.get("meta") or {}))

    # -- allenai/cartography files -----------------------------------------------------
    def to_cartography_jsonl(self, directory: str | Path, *, split: str = "train") -> list[Path]:
        """Write ``dynamics_epoch_{e}.jsonl`` files as allenai/cartography reads them.

        One file per recording of ``split`` (``e`` = 0, 1, ... in epoch order; a
        fractional recording gets the next index), each line
        ``{"guid": id, "logits_epoch_{e}": [...], "gold": label id}``.

        Raises
        ------
        DetectorError
            The dynamics were recorded without logits (the format needs them).

        Examples
        --------
        >>> import tempfile
        >>> f = pd.DataFrame({"id": ["a"], "split": ["train"], "epoch": [1.0], "p_gold": [0.5],
        ...                   "pred": [0], "correct": [False], "logits": [[0.0, 0.0]]})
        >>> files = TrainingDynamics(f, ["x", "y"]).to_cartography_jsonl(tempfile.mkdtemp())
        >>> files[0].name, files[0].read_text().strip()
        ('dynamics_epoch_0.jsonl', '{"guid": "a", "logits_epoch_0": [0.0, 0.0], "gold": 1}')
        """
        if "logits" not in self.frame.columns:
            raise DetectorError(
                "to_cartography_jsonl needs logits, but these training dynamics were recorded "
                "without them (record_logits=False)."
            )
        rows = self.of(split)
        gold = _gold_from_rows(rows)
        directory = Path(directory)
        out = []
        for e, epoch in enumerate(self.epochs(split)):
            at = rows[rows["epoch"] == epoch]
            lines = [
                json.dumps(
                    {
                        "guid": i,
                        f"logits_epoch_{e}": [float(x) for x in logits],
                        "gold": int(gold[i]),
                    }
                )
                for i, logits in zip(at["id"], at["logits"], strict=True)
            ]
            path = directory / f"dynamics_epoch_{e}.jsonl"
            atomic_write_text(path, "\n".join(lines) + "\n")
            out.append(path)
        return out

    @classmethod
    def from_cartography_jsonl(
        cls,
        directory: str | Path,
        dataset: Dataset,
        *,
        split: str = "train",
        meta: dict[str, Any] | None = None,
    ) -> TrainingDynamics:
        """Read allenai/cartography's ``dynamics_epoch_{e}.jsonl`` files.

        Parameters
        ----------
        directory : path
            The folder of the files, or a folder holding them in ``training_dynamics/``
            (the layout allenai/cartography writes). ``.json`` files of the same name are
            read too.
        dataset : Dataset
            The examples the dynamics describe: each ``guid`` must be one of its ids and
            each ``gold`` the id of its label.
        split : {"train", "eval"}
            Which split the records describe.
        meta : dict, optional
            Stored as :attr:`TrainingDynamics.meta` (plus the source folder).

        Returns
        -------
        TrainingDynamics
            Epoch ``e`` of the files is recorded as epoch ``e + 1`` (after ``e + 1``
            epochs of training); ``p_gold`` is the softmax of the logits at ``gold``.

        Examples
        --------
        >>> import tempfile, pathlib
        >>> from spurious.data import Dataset
        >>> ds = Dataset.from_frame(pd.DataFrame({"id": ["7", "8"], "text": ["fine", "bad"],
        ...                                       "label": ["pos", "neg"]}), "text")
        >>> gold = dict(zip(ds.ids, ds.labels.tolist()))  # label ids, as the files use them
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / "dynamics_epoch_0.jsonl").write_text(
        ...     f'{{"guid": 7, "logits_epoch_0": [0.0, 0.0], "gold": {gold["7"]}}}\\n'
        ...     f'{{"guid": 8, "logits_epoch_0": [0.0, 0.0], "gold": {gold["8"]}}}\\n')
        >>> TrainingDynamics.from_cartography_jsonl(d, ds).frame["p_gold"].tolist()
        [0.5, 0.5]
        """
        files = _epoch_files(Path(directory))
        known = {str(i): k for k, i in enumerate(dataset.ids)}
        labels = dataset.labels
        n_labels = len(dataset.label_names)
        parts: list[pd.DataFrame] = []
        first_ids: set[str] | None = None
        for e, path in enumerate(files):
            ids, logits, golds = _read_epoch_file(path, e)
            for lineno, (guid, g, lg) in enumerate(zip(ids, golds, logits, strict=True), 1):
                if guid not in known:
                    raise DataFormatError(
                        f"{path.name} line {lineno}: guid {guid!r} is not an id of dataset "
                        f"{dataset.name!r} (ids look like {list(dataset.ids[:3])})."
                    )
                if g != labels[known[guid]]:
                    raise DataFormatError(
                        f"{path.name} line {lineno}: gold {g} of guid {guid!r} differs from the "
                        f"dataset's label {int(labels[known[guid]])} "
                        f"({dataset.label_names[labels[known[guid]]]!r}); gold must be the label "
                        f"id in the order {list(dataset.label_names)}."
                    )
                if len(lg) != n_labels:
                    raise DataFormatError(
                        f"{path.name} line {lineno}: guid {guid!r} has {len(lg)} logits; the "
                        f"dataset has {n_labels} labels {list(dataset.label_names)}."
                    )
            if len(set(ids)) != len(ids):
                raise DataFormatError(f"{path.name}: a guid occurs more than once.")
            if first_ids is None:
                first_ids = set(ids)
            elif set(ids) != first_ids:
                raise DataFormatError(
                    f"{path.name} covers different guids than {files[0].name}; every epoch "
                    "file must record the same examples."
                )
            z = np.asarray(logits, dtype=float).reshape(len(ids), n_labels)
            prob = _softmax(z)
            gold = np.asarray(golds, dtype=np.int64)
            pred = z.argmax(axis=1)
            parts.append(
                pd.DataFrame(
                    {
                        "id": ids,
                        "split": split,
                        "epoch": float(e + 1),
                        "p_gold": prob[np.arange(len(ids)), gold],
                        "pred": pred,
                        "correct": pred == gold,
                        "logits": [list(map(float, row)) for row in z],
                        "gold": gold,
                    }
                )
            )
        info = {"path": "load", "source": str(directory), "format": "allenai/cartography"}
        info.update(meta or {})
        return cls(pd.concat(parts, ignore_index=True), list(dataset.label_names), info)


def _gold_from_rows(rows: pd.DataFrame) -> dict[str, int]:
    """Gold label id per example: the ``gold`` column, else recovered from the records.

    Without a ``gold`` column, a correct recording's ``pred`` is the gold label; for an
    example never predicted correctly, the gold label is the position whose softmax
    probability equals ``p_gold`` (other than the wrong prediction).
    """
    if "gold" in rows.columns:
        first = rows.drop_duplicates("id")
        return dict(zip(first["id"], first["gold"].astype(int), strict=True))
    gold: dict[str, int] = {}
    hits = rows[rows["correct"]].drop_duplicates("id")
    gold.update(zip(hits["id"], hits["pred"].astype(int), strict=True))
    for i, p, logits, pg in zip(
        rows["id"], rows["pred"], rows["logits"], rows["p_gold"], strict=True
    ):
        if i in gold:
            continue
        prob = _softmax(np.asarray(logits, dtype=float)[None, :])[0]
        gap = np.abs(prob - pg)
        gap[int(p)] = np.inf  # the recording was wrong, so the prediction is not gold
        gold[i] = int(np.argmin(gap))
    return gold


def _epoch_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        raise DataFormatError(f"The 'directory' argument {str(directory)!r} is not a folder.")
    for folder in (directory, directory / "training_dynamics"):
        found: dict[int, Path] = {}
        if folder.is_dir():
            for p in folder.iterdir():
                m = _EPOCH_FILE.match(p.name)
                if m and p.is_file():
                    found.setdefault(int(m.group(1)), p)
        if found:
            missing = sorted(set(range(max(found) + 1)) - set(found))
            if missing:
                raise DataFormatError(
                    f"{str(folder)!r} lacks dynamics_epoch_{missing[0]}.jsonl; epoch files must "
                    f"be numbered 0..{max(found)} without gaps."
                )
            return [found[e] for e in sorted(found)]
    raise DataFormatError(
        f"{str(directory)!r} holds no dynamics_epoch_{{e}}.jsonl files (allenai/cartography "
        "format), neither directly nor in training_dynamics/."
    )


def _read_epoch_file(path: Path, e: int) -> tuple[list[str], list[list[float]], list[int]]:
    key = f"logits_epoch_{e}"
    ids: list[str] = []
    logits: list[list[float]] = []
    golds: list[int] = []
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as err:
                raise DataFormatError(f"{path.name} line {lineno}: not JSON ({err}).") from None
            for k in ("guid", key, "gold"):
                if k not in rec:
                    raise DataFormatError(
                        f"{path.name} line {lineno}: missing {k!r} (records need 'guid', "
                        f"'{key}' and 'gold'); got keys {sorted(rec)}."
                    )
            gold = rec["gold"]
            if isinstance(gold, bool) or not isinstance(gold, int | float) or gold != int(gold):
                raise DataFormatError(
                    f"{path.name} line {lineno}: 'gold' must be a label id (int); got {gold!r}."
                )
            ids.append(str(rec["guid"]))
            logits.append([float(x) for x in rec[key]])
            golds.append(int(gold))
    return ids, logits, golds


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def load_dynamics(
    directory: str | Path, train: Dataset, eval: Dataset | None = None
) -> TrainingDynamics:
    """Dynamics saved earlier: :meth:`TrainingDynamics.save`'s folder, or cartography files.

    For allenai/cartography files, ``directory`` (or its ``training_dynamics/``) holds the
    training split's files; an ``eval/`` subfolder, when present and ``eval`` is given,
    holds the evaluation split's.

    Examples
    --------
    >>> import tempfile
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> ds = make_nli_artifacts(n=30, random_state=0).dataset
    >>> rng = np.random.default_rng(0)
    >>> frame = probe_dynamics(rng.normal(size=(30, 4)), ds.labels, epochs=2,
    ...                        train_ids=ds.ids)
    >>> d = TrainingDynamics(frame, list(ds.label_names)).save(tempfile.mkdtemp())
    >>> len(load_dynamics(d, ds).ids("train"))
    30
    """
    directory = Path(directory)
    if (directory / _FRAME_FILE).is_file():
        return TrainingDynamics.load(directory)
    parts = [TrainingDynamics.from_cartography_jsonl(directory, train, split="train")]
    if eval is not None and (directory / "eval").is_dir():
        parts.append(
            TrainingDynamics.from_cartography_jsonl(directory / "eval", eval, split="eval")
        )
    return TrainingDynamics.concat(parts)


# =======================================================================================
# Summary statistics (Swayamdipta et al. 2020, Sec. 2)
# =======================================================================================
def cartography_stats(dynamics: TrainingDynamics, split: str = "train") -> pd.DataFrame:
    """Per-example data-map coordinates of ``split``.

    With ``p_e`` the gold-label probability at recording ``e`` of ``E``:

    - ``confidence`` = mean of ``p_e`` (Swayamdipta et al. 2020, Eq. 1);
    - ``variability`` = population standard deviation of ``p_e`` (divide by ``E``;
      Eq. 2, and ``np.std`` in allenai/cartography's ``compute_train_dy_metrics``);
    - ``correctness`` = fraction of recordings where the prediction is the gold label
      (the reference code stores the count; the fraction compares across epoch counts);
    - ``forgetting`` = number of correct -> incorrect transitions between consecutive
      recordings (Toneva et al. 2019). An example never predicted correctly has 0 here;
      the reference code gives such examples the sentinel 1000 (``correctness == 0``
      identifies them).

    Parameters
    ----------
    dynamics : TrainingDynamics
    split : {"train", "eval"}

    Returns
    -------
    pandas.DataFrame
        ``id``, ``confidence``, ``variability``, ``correctness``, ``forgetting``,
        ``n_recordings``; one row per example in first-seen order.

    Raises
    ------
    DetectorError
        An example lacks a recording the others have.

    Examples
    --------
    >>> frame = pd.DataFrame({"id": ["a"] * 4, "split": "train", "epoch": [1., 2., 3., 4.],
    ...                       "p_gold": [0.2, 0.8, 0.4, 0.6], "pred": [1, 0, 1, 0],
    ...                       "correct": [False, True, False, True]})
    >>> s = cartography_stats(TrainingDynamics(frame, ["x", "y"]))
    >>> s[["confidence", "variability", "correctness", "forgetting"]].round(4).values.tolist()
    [[0.5, 0.2236, 0.5, 1.0]]
    """
    rows = dynamics.of(split)
    ids = pd.unique(rows["id"])
    epochs = np.sort(rows["epoch"].unique())
    if len(rows) != len(ids) * len(epochs) or rows.duplicated(["id", "epoch"]).any():
        counts = rows.groupby("id")["epoch"].agg(["size", "nunique"])
        odd = counts[(counts["size"] != len(epochs)) | (counts["nunique"] != len(epochs))]
        raise DetectorError(
            f"Training dynamics of the {split!r} split must hold every example once at each of "
            f"the {len(epochs)} recordings; example {str(odd.index[0])!r} has "
            f"{int(odd['size'].iloc[0])} record(s)."
        )
    row_of = pd.Index(ids).get_indexer(rows["id"])
    col_of = np.searchsorted(epochs, rows["epoch"].to_numpy())
    p = np.empty((len(ids), len(epochs)))
    c = np.empty((len(ids), len(epochs)), dtype=bool)
    p[row_of, col_of] = rows["p_gold"].to_numpy()
    c[row_of, col_of] = rows["correct"].to_numpy()
    forgetting = (c[:, :-1] & ~c[:, 1:]).sum(axis=1)
    return pd.DataFrame(
        {
            "id": ids.astype(str),
            "confidence": p.mean(axis=1),
            "variability": p.std(axis=1, ddof=0),
            "correctness": c.mean(axis=1),
            "forgetting": forgetting.astype(np.int64),
            "n_recordings": np.full(len(ids), len(epochs), dtype=np.int64),
        }
    )


# =======================================================================================
# The fast path: a probe on frozen features
# =======================================================================================
def _torch() -> Any:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is installed in every CI job
        raise missing_dependency(
            "torch", "torch", "Training dynamics on frozen features (the fast path)"
        ) from None
    return torch


def _check_matrix(X: Any, what: str) -> Any:
    if sparse.issparse(X):
        return sparse.csr_matrix(X, dtype=np.float32)
    arr = np.asarray(X, dtype=np.float32)
    if arr.ndim != 2:
        raise ParameterError(f"The {what!r} argument must be a 2-D matrix; got shape {arr.shape}.")
    if not np.isfinite(arr).all():
        raise ParameterError(f"The {what!r} argument holds NaN or infinite values.")
    return arr


def _check_labels(y: Any, n_rows: int, what: str) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or len(y) != n_rows:
        raise ParameterError(
            f"The {what!r} argument must hold one label id per row ({n_rows}); got shape {y.shape}."
        )
    if len(y) and (not np.issubdtype(y.dtype, np.integer) or y.min() < 0):
        raise ParameterError(f"The {what!r} argument must hold label ids (ints >= 0).")
    return y.astype(np.int64)


def probe_dynamics(
    X_train: Any,
    y_train: Any,
    X_eval: Any = None,
    y_eval: Any = None,
    *,
    model: str = "mlp",
    epochs: int = 10,
    lr: float = 1e-3,
    batch_size: int | None = None,
    hidden_size: int = 256,
    weight_decay: float = 0.0,
    records_per_epoch: int = 1,
    standardize: bool = True,
    record_logits: bool = True,
    n_threads: int | None = 1,
    n_classes: int | None = None,
    train_ids: Sequence[Any] | None = None,
    eval_ids: Sequence[Any] | None = None,
    random_state: int | None = 0,
) -> pd.DataFrame:
    """Train a small probe on frozen features and record every example after every epoch.

    The probe is an MLP with one hidden layer (ReLU) or a linear softmax layer, trained
    with Adam on mini-batches in a seeded order to minimise cross-entropy. After each
    epoch (or ``records_per_epoch`` times per epoch) the model, in evaluation mode, scores
    every training example and every evaluation example; the evaluation examples are
    never trained on.

    Parameters
    ----------
    X_train : array-like or sparse matrix, shape (n_train, d)
    y_train : array-like of int, shape (n_train,)
        Label ids.
    X_eval, y_eval : optional
        A held-out split recorded alongside (``split="eval"``).
    model : {"mlp", "linear"}, default="mlp"
    epochs : int, default=10
    lr : float, default=1e-3
        Adam learning rate.
    batch_size : int, optional
        Default: ``n_train // 32`` clipped to [8, 128], so a small training split still
        takes ~30 optimisation steps per epoch and 10k examples take batches of 128.
    hidden_size : int, default=256
        Width of the MLP's hidden layer (ignored by ``"linear"``).
    weight_decay : float, default=0.0
    records_per_epoch : int, default=1
        Recordings per epoch, evenly spaced in optimisation steps (epoch values
        ``e + j / records_per_epoch``).
    standardize : bool, default=True
        Z-score dense features with the training split's mean and std (sentence
        embeddings mix scales, e.g. ``u * v`` next to ``u``); sparse features are used
        as they are.
    record_logits : bool, default=True
        Keep the logits (needed by :meth:`TrainingDynamics.to_cartography_jsonl`).
    n_threads : int or None, default=1
        Torch intra-op threads while training (restored afterwards; ``None`` leaves
        torch's setting). The per-step matrices are small, so extra threads gain little,
        and on a busy machine spinning threads cost ~14x (measured: 0.66 s vs 9.5 s per
        epoch on 10k x 1536 with 2 threads on 2 shared cores).
    n_classes : int, optional
        Number of labels (default: largest label id + 1).
    train_ids, eval_ids : sequence, optional
        Example ids (default: row numbers as strings).
    random_state : int or None, default=0
        Seeds the initialisation and the batch order; the global random state of numpy
        and torch is left as it was.

    Returns
    -------
    pandas.DataFrame
        The :attr:`TrainingDynamics.frame` columns.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 5)); y = (X[:, 0] > 0).astype(int)
    >>> frame = probe_dynamics(X[:150], y[:150], X[150:], y[150:], epochs=3)
    >>> sorted(frame["epoch"].unique()), frame.groupby("split").size().to_dict()
    ([np.float64(1.0), np.float64(2.0), np.float64(3.0)], {'eval': 150, 'train': 450})
    >>> frame[frame.split == "eval"].groupby("epoch")["correct"].mean().iloc[-1] > 0.8
    np.True_
    """
    if model not in FAST_MODELS:
        raise ParameterError(
            f"The 'model' parameter of probe_dynamics must be one of {list(FAST_MODELS)}; got "
            f"{model!r}."
        )
    for name, value, low in (
        ("epochs", epochs, 1),
        ("batch_size", 1 if batch_size is None else batch_size, 1),
        ("hidden_size", hidden_size, 1),
        ("records_per_epoch", records_per_epoch, 1),
    ):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise ParameterError(
                f"The {name!r} parameter of probe_dynamics must be an int >= {low}; got {value!r}."
            )
    if not (isinstance(lr, int | float) and lr > 0):
        raise ParameterError(f"The 'lr' parameter of probe_dynamics must be > 0; got {lr!r}.")
    torch = _torch()
    Xtr = _check_matrix(X_train, "X_train")
    ytr = _check_labels(y_train, Xtr.shape[0], "y_train")
    if Xtr.shape[0] == 0:
        raise ParameterError("The 'X_train' argument has no rows.")
    has_eval = X_eval is not None
    if has_eval != (y_eval is not None):
        raise ParameterError("Pass both 'X_eval' and 'y_eval', or neither.")
    if has_eval:
        Xev = _check_matrix(X_eval, "X_eval")
        yev = _check_labels(y_eval, Xev.shape[0], "y_eval")
        if Xev.shape[1] != Xtr.shape[1]:
            raise ParameterError(
                f"The 'X_eval' argument has {Xev.shape[1]} columns; 'X_train' has {Xtr.shape[1]}."
            )
    k = int(n_classes) if n_classes is not None else int(ytr.max()) + 1
    if has_eval and len(yev):
        k = max(k, int(yev.max()) + 1) if n_classes is None else k
    if ytr.max() >= k or (has_eval and len(yev) and yev.max() >= k):
        raise ParameterError(f"Label ids must be < n_classes={k}; got {ytr.max()}.")
    ids_tr = _ids(train_ids, Xtr.shape[0], "train_ids")
    ids_ev = _ids(eval_ids, Xev.shape[0], "eval_ids") if has_eval else None

    if standardize and not sparse.issparse(Xtr):
        mu = Xtr.mean(axis=0)
        sd = Xtr.std(axis=0)
        sd[sd < 1e-8] = 1.0  # constant columns carry nothing; avoid dividing by 0
        Xtr = (Xtr - mu) / sd  # a new array: the caller's (shared) matrix is untouched
        if has_eval:
            Xev = (Xev - mu) / sd

    rng = np.random.default_rng(random_state)
    torch_seed = int(rng.integers(0, 2**31 - 1))
    d = Xtr.shape[1]
    # fork_rng restores torch's global generator afterwards; only our init uses the seed.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(torch_seed)
        if model == "mlp":
            net = torch.nn.Sequential(
                torch.nn.Linear(d, hidden_size), torch.nn.ReLU(), torch.nn.Linear(hidden_size, k)
            )
        else:
            net = torch.nn.Linear(d, k)
    opt = torch.optim.Adam(net.parameters(), lr=float(lr), weight_decay=float(weight_decay))
    loss_fn = torch.nn.CrossEntropyLoss()

    def rows_tensor(X: Any, idx: np.ndarray) -> Any:
        part = X[idx]
        if sparse.issparse(part):
            part = part.toarray()
        return torch.from_numpy(np.ascontiguousarray(part, dtype=np.float32))

    ytr_t = torch.from_numpy(ytr)
    n = Xtr.shape[0]
    if batch_size is None:
        batch_size = min(128, max(8, n // 32))
    steps = math.ceil(n / batch_size)
    # Recording j of an epoch follows step round(steps * j / records_per_epoch).
    checkpoints = {
        max(1, round(steps * j / records_per_epoch)): j for j in range(1, records_per_epoch + 1)
    }
    records: list[tuple[float, str, np.ndarray, np.ndarray]] = []

    def record(epoch_value: float) -> None:
        net.eval()
        with torch.no_grad():
            for split, X in (("train", Xtr), *((("eval", Xev),) if has_eval else ())):
                out = []
                for start in range(0, X.shape[0], 8192):
                    idx = np.arange(start, min(start + 8192, X.shape[0]))
                    out.append(net(rows_tensor(X, idx)).numpy())
                logits = np.concatenate(out) if out else np.zeros((0, k), dtype=np.float32)
                records.append((epoch_value, split, logits, ytr if split == "train" else yev))
        net.train()

    start_time = time.perf_counter()
    threads_before = torch.get_num_threads()
    if n_threads is not None:
        torch.set_num_threads(int(n_threads))
    try:
        net.train()
        for epoch in range(epochs):
            order = rng.permutation(n)
            for s in range(steps):
                idx = order[s * batch_size : (s + 1) * batch_size]
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(net(rows_tensor(Xtr, idx)), ytr_t[idx])
                loss.backward()
                opt.step()
                if s + 1 in checkpoints:
                    record(epoch + checkpoints[s + 1] / records_per_epoch)
    finally:
        torch.set_num_threads(threads_before)
    logger.info(
        "probe_dynamics: %s, %d epochs on %d x %d in %.2fs",
        model,
        epochs,
        n,
        d,
        time.perf_counter() - start_time,
    )
    return _records_frame(records, ids_tr, ids_ev, record_logits)


def _ids(ids: Sequence[Any] | None, n: int, what: str) -> np.ndarray:
    if ids is None:
        return np.array([str(i) for i in range(n)], dtype=object)
    out = np.asarray([str(i) for i in ids], dtype=object)
    if len(out) != n:
        raise ParameterError(f"The {what!r} argument must hold {n} ids; got {len(out)}.")
    return out


def _records_frame(
    records: list[tuple[float, str, np.ndarray, np.ndarray]],
    ids_tr: np.ndarray,
    ids_ev: np.ndarray | None,
    with_logits: bool,
) -> pd.DataFrame:
    parts = []
    for epoch_value, split, logits, y in records:
        prob = _softmax(logits.astype(np.float64))
        pred = logits.argmax(axis=1)
        part = pd.DataFrame(
            {
                "id": ids_tr if split == "train" else ids_ev,
                "split": split,
                "epoch": float(epoch_value),
                "p_gold": prob[np.arange(len(y)), y],
                "pred": pred.astype(np.int64),
                "correct": pred == y,
                "gold": y.astype(np.int64),
            }
        )
        if with_logits:
            part["logits"] = logits.astype(np.float64).tolist()
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


# =======================================================================================
# The run-context artifact
# =======================================================================================
@register_artifact("training_dynamics")
def training_dynamics_artifact(
    ctx: RunContext,
    *,
    path: str = "fast",
    view: str = "full",
    features: str = "minilm",
    model: str | None = None,
    epochs: int | None = None,
    random_state: int | None = 0,
    source: str | None = None,
    **options: Any,
) -> TrainingDynamics:
    """Provider of ``ctx.artifact("training_dynamics", ...)``: dynamics of ``ctx.train``
    (and of ``ctx.eval`` when present, from the model trained on ``ctx.train`` only).

    Parameters
    ----------
    ctx : RunContext
    path : {"fast", "finetune", "load"}, default="fast"
        ``"fast"``: :func:`probe_dynamics` on ``ctx.features(features, view)`` (the
        matrices are shared with every other analysis of the run); ``"finetune"``:
        :func:`spurious.models.finetune.finetune_dynamics` (the fine-tuning engine);
        ``"load"``: :func:`load_dynamics` of the folder ``source``.
    view : str, default="full"
        A view name of the task (``"hypothesis_only"`` for partial-input cartography).
    features : str, default="minilm"
        Featurizer spec of the fast path.
    model : str, optional
        ``"mlp"`` or ``"linear"`` on the fast path (default ``"mlp"``); the model the
        fine-tuning engine trains on the fine-tune path (default: the engine's).
    epochs : int, optional
        Default: 10 on the fast path (paper 002 Table 8: at most 10 epochs for base
        models), the engine's default when fine-tuning.
    random_state : int or None, default=0
        The seed (the fine-tuning engine's ``seed``).
    source : str, optional
        Folder read by ``path="load"``.
    **options
        Passed on: :func:`probe_dynamics` keywords (``lr``, ``batch_size``,
        ``hidden_size``, ``weight_decay``, ``records_per_epoch``, ``standardize``) or the
        fine-tuning engine's.

    Examples
    --------
    >>> from spurious.context import RunContext
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> train, test = make_nli_artifacts(n=200, random_state=0).dataset.split(0.3)
    >>> ctx = RunContext(train, test, progress=False)
    >>> dyn = ctx.artifact("training_dynamics", features="bow", epochs=2)
    >>> dyn.splits(), len(dyn.ids("eval")) == len(test)
    (['train', 'eval'], True)
    """
    from spurious.views import get_view

    if path not in PATHS:
        raise ParameterError(
            f"The 'path' option of training dynamics must be one of {list(PATHS)}; got {path!r}."
        )
    view_name = get_view(ctx.train.task, view).name
    if path == "load":
        if not source:
            raise ParameterError("path='load' needs 'source', the folder of saved dynamics.")
        dyn = load_dynamics(source, ctx.train, ctx.eval)
        _check_covers(dyn, ctx)
        return dyn
    if path == "finetune":
        return _finetune_dynamics(ctx, view_name, model, epochs, random_state, options)
    if not isinstance(features, str):
        raise ParameterError(
            "The 'features' option of training dynamics must be a featurizer spec (str); got "
            f"{type(features).__name__}."
        )
    start = time.perf_counter()
    X_train = ctx.features(features, view_name, split="train")
    X_eval = ctx.features(features, view_name, split="eval") if ctx.eval is not None else None
    feature_s = time.perf_counter() - start
    unknown = sorted(set(options) - set(FAST_OPTIONS))
    if unknown:
        raise ParameterError(
            f"Unknown fast-path training option(s) {unknown}; valid: {list(FAST_OPTIONS)}."
        )
    model = model or "mlp"
    epochs = 10 if epochs is None else epochs
    start = time.perf_counter()
    frame = probe_dynamics(
        X_train,
        ctx.train.labels,
        X_eval,
        None if ctx.eval is None else ctx.eval.labels,
        model=model,
        epochs=epochs,
        n_classes=ctx.train.n_classes,
        train_ids=ctx.train.ids,
        eval_ids=None if ctx.eval is None else ctx.eval.ids,
        random_state=random_state,
        **options,
    )
    meta = {
        "path": "fast",
        "view": view_name,
        "features": features,
        "model": model,
        "epochs": epochs,
        "random_state": random_state,
        "options": dict(options),
        "n_train": len(ctx.train),
        "n_eval": 0 if ctx.eval is None else len(ctx.eval),
        "n_features": int(X_train.shape[1]),
        "feature_s": round(feature_s, 4),
        "train_s": round(time.perf_counter() - start, 4),
    }
    return TrainingDynamics(frame, list(ctx.train.label_names), meta)


def _finetune_dynamics(
    ctx: RunContext,
    view: str,
    model: str | None,
    epochs: int | None,
    random_state: int | None,
    options: dict[str, Any],
) -> TrainingDynamics:
    """Dynamics from the fine-tuning engine (imported only when asked for)."""
    import importlib

    what = (
        "path='finetune' needs the fine-tuning engine (spurious.models.finetune with "
        "finetune_dynamics, issue 8 parts 1-2)"
    )
    try:
        engine = importlib.import_module("spurious.models.finetune")
    except ModuleNotFoundError as e:
        if e.name != "spurious.models.finetune":
            raise  # the engine exists but a dependency of it is missing: say which
        raise DetectorError(
            f"{what}, which this installation does not have; use path='fast'."
        ) from None
    finetune = getattr(engine, "finetune_dynamics", None)
    if finetune is None:
        raise DetectorError(
            f"{what}; spurious.models.finetune has no finetune_dynamics. Use path='fast'."
        )
    config = dict(options)
    if model is not None:
        config["model"] = model
    if epochs is not None:
        config["epochs"] = epochs
    if random_state is not None:
        config["seed"] = random_state
    out = finetune(ctx, view=view, **config)
    if isinstance(out, pd.DataFrame):
        out = TrainingDynamics(out, list(ctx.train.label_names), {"path": "finetune"})
    if not isinstance(out, TrainingDynamics):
        raise DetectorError(
            "spurious.models.finetune.finetune_dynamics must return TrainingDynamics or its "
            f"frame; got {type(out).__name__}."
        )
    out.meta.setdefault("path", "finetune")
    out.meta.setdefault("view", view)
    _check_covers(out, ctx)
    return out


def _check_covers(dyn: TrainingDynamics, ctx: RunContext) -> None:
    """Dynamics from outside must describe every example of the run's splits."""
    for split, ds in (("train", ctx.train), ("eval", ctx.eval)):
        if ds is None:
            continue
        if split not in dyn.splits():
            if split == "eval":
                raise DetectorError(
                    "The training dynamics hold no 'eval' split, but this run has an evaluation "
                    "split (for allenai/cartography files, put its files in an eval/ subfolder)."
                )
            continue
        missing = set(map(str, ds.ids)) - set(dyn.ids(split))
        if missing:
            raise DetectorError(
                f"The training dynamics lack {len(missing)} example(s) of the {split!r} split "
                f"(e.g. id {sorted(missing)[0]!r})."
            )
    if list(dyn.label_names) != list(ctx.train.label_names):
        raise DetectorError(
            f"The training dynamics use labels {dyn.label_names}; the data has "
            f"{list(ctx.train.label_names)}."
        )
