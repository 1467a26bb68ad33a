"""The record of training dynamics: :class:`TrainingDynamics` and its files.

One row per (example, split, recording) with ``p_gold``, ``pred``, ``correct`` and
optionally the ``logits``; saved as Parquet + JSON (atomically), and converted to and
from allenai/cartography's ``dynamics_epoch_{e}.jsonl`` files so dynamics recorded
elsewhere can be used here and ours elsewhere (:func:`load_dynamics` reads either).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from spurious.exceptions import AnalysisError, DataFormatError, ParameterError, ResultLoadError
from spurious.models.dynamics.cartography_files import (
    _epoch_files,
    _gold_from_rows,
    _read_epoch_file,
    _softmax,
)
from spurious.utils.io import atomic_write, atomic_write_json, atomic_write_text, read_json

if TYPE_CHECKING:  # pragma: no cover
    from spurious.data.dataset import Dataset

__all__ = [
    "DYNAMICS_COLUMNS",
    "OPTIONAL_COLUMNS",
    "PATHS",
    "TrainingDynamics",
    "load_dynamics",
]

#: Required columns of :attr:`TrainingDynamics.frame`.
DYNAMICS_COLUMNS = ("id", "split", "epoch", "p_gold", "pred", "correct")

#: Paths that make a record: train a probe on frozen features, fine-tune a model, or
#: read dynamics saved earlier (ours, or allenai/cartography's files).
PATHS = ("fast", "finetune", "load")
#: Optional columns: the logits, and the gold label id (kept when a maker knows it, so
#: an export need not recover it from ``p_gold``).
OPTIONAL_COLUMNS = ("logits", "gold")

_FORMAT_VERSION = 1
_FRAME_FILE = "dynamics.parquet"
_META_FILE = "dynamics.json"


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
            raise AnalysisError(
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
        AnalysisError
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
            raise AnalysisError(
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
    >>> from spurious.models.dynamics import probe_dynamics
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
