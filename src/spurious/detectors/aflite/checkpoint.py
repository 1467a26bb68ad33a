"""AFLite's resumable state and its on-disk checkpoint (JSON + ``.npy``, never pickle).

Everything random in a round is drawn from a generator derived from the run's seed and
the round number, so the state after round ``r`` (which examples remain, their history)
is all a resumed run needs to continue exactly as an uninterrupted one.

Layout of a checkpoint folder::

    aflite_state.json                 commit marker: identity, round, history, file list
    arrays/<name>.r<round>.npy        per-example arrays, each with a blake2b checksum

Arrays are written first, the JSON last (both atomically), so the JSON only ever names
complete files. Files the JSON no longer names are deleted after it is written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from spurious.exceptions import AnalysisError
from spurious.utils.hashing import array_digest
from spurious.utils.io import atomic_write, atomic_write_json, read_json, to_jsonable

logger = logging.getLogger(__name__)

STATE_FILE = "aflite_state.json"
ARRAY_DIR = "arrays"
#: Bumped when the layout changes; an older checkpoint then raises a clear error.
CHECKPOINT_FORMAT = 1

# Per-example arrays of one side (training set S or evaluation set R) and their dtypes.
_SIDE_ARRAYS = {
    "removed_round": np.int32,
    "last_p": np.float64,
    "times_held_out": np.int64,
    "times_correct": np.int64,
}


@dataclass
class SideState:
    """Per-example history of one side (the filtered set S, or evaluation set R).

    Attributes
    ----------
    removed_round : ndarray of int32
        Round (1-based) an example was removed in; -1 while it remains.
    last_p : ndarray of float64
        Predictability in the last round the example was scored (NaN: never scored).
    times_held_out, times_correct : ndarray of int64
        Totals over rounds: predictions received, and how many were its gold label.
    p_rounds : list of ndarray of float32
        Predictability per round (NaN where the example was not scored that round).
    """

    removed_round: np.ndarray
    last_p: np.ndarray
    times_held_out: np.ndarray
    times_correct: np.ndarray
    p_rounds: list[np.ndarray] = field(default_factory=list)

    @classmethod
    def empty(cls, n: int) -> SideState:
        """The state of ``n`` examples before the first round."""
        return cls(
            removed_round=np.full(n, -1, dtype=np.int32),
            last_p=np.full(n, np.nan),
            times_held_out=np.zeros(n, dtype=np.int64),
            times_correct=np.zeros(n, dtype=np.int64),
        )

    @property
    def remaining(self) -> np.ndarray:
        """Indices of the examples not yet removed, ascending."""
        return np.flatnonzero(self.removed_round < 0)


@dataclass
class FilterState:
    """Everything AFLite needs to continue after ``rounds_done`` rounds.

    Attributes
    ----------
    entropy : int
        Seed from which every round's generators are derived.
    rounds_done : int
        Completed rounds.
    stop_reason : str or None
        Why filtering stopped (``None`` while it may continue).
    train : SideState
        The filtered set S.
    eval : SideState or None
        The evaluation set R (evaluation-set mode only).
    history : list of dict
        One JSON summary per round.
    resumed_from : int or None
        The rounds read from a checkpoint when this run resumed one (``None``: started
        fresh). Not saved: it describes this run, not the filtering.
    """

    entropy: int
    train: SideState
    rounds_done: int = 0
    stop_reason: str | None = None
    eval: SideState | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    resumed_from: int | None = None


def _checksum(arr: np.ndarray) -> str:
    return array_digest(arr)


def _save_npy(path: Path, arr: np.ndarray) -> None:
    with open(path, "wb") as fh:
        np.save(fh, np.ascontiguousarray(arr), allow_pickle=False)


def save_checkpoint(directory: str | Path, identity: dict[str, Any], state: FilterState) -> Path:
    """Write ``state`` after its last round; returns the state file.

    Only the arrays that changed are written: the per-round predictability of round
    ``r`` is written once, in round ``r``.
    """
    directory = Path(directory)
    arrays_dir = directory / ARRAY_DIR
    arrays_dir.mkdir(parents=True, exist_ok=True)
    r = state.rounds_done
    files: dict[str, dict[str, str]] = {}
    sides = {"train": state.train, "eval": state.eval}
    for side, st in sides.items():
        if st is None:
            continue
        for name in _SIDE_ARRAYS:
            arr = getattr(st, name)
            fname = f"{side}_{name}.r{r:04d}.npy"
            atomic_write(arrays_dir / fname, lambda p, a=arr: _save_npy(p, a))
            files[f"{side}/{name}"] = {"file": fname, "blake2b": _checksum(arr)}
        for k, arr in enumerate(st.p_rounds, start=1):
            fname = f"{side}_p.r{k:04d}.npy"
            path = arrays_dir / fname
            if k == len(st.p_rounds) or not path.exists():
                atomic_write(path, lambda p, a=arr: _save_npy(p, a))
            files[f"{side}/p/{k}"] = {"file": fname, "blake2b": _checksum(arr)}
    meta = {
        "format": CHECKPOINT_FORMAT,
        "identity": identity,
        "entropy": str(state.entropy),
        "rounds_done": r,
        "stop_reason": state.stop_reason,
        "history": state.history,
        "files": files,
    }
    out = atomic_write_json(directory / STATE_FILE, to_jsonable(meta))
    keep = {f["file"] for f in files.values()}
    for p in arrays_dir.iterdir():
        if p.name not in keep and p.suffix == ".npy":
            p.unlink(missing_ok=True)
    return out


def read_identity(directory: str | Path) -> dict[str, Any] | None:
    """The identity stored in a checkpoint folder, or ``None`` when it holds none."""
    path = Path(directory) / STATE_FILE
    if not path.exists():
        return None
    meta = _read_meta(path)
    return meta["identity"]


def _read_meta(path: Path) -> dict[str, Any]:
    try:
        meta = read_json(path)
        fmt = int(meta["format"])
        meta["identity"], meta["files"], meta["rounds_done"]
    except (ValueError, TypeError, KeyError, OSError) as e:
        raise AnalysisError(
            f"The AFLite checkpoint {str(path)!r} is unreadable ({e!r}); delete the folder or "
            "pass checkpoint_mismatch='restart' to start over."
        ) from None
    if fmt != CHECKPOINT_FORMAT:
        raise AnalysisError(
            f"The AFLite checkpoint {str(path)!r} has format {fmt}; this version reads format "
            f"{CHECKPOINT_FORMAT}. Delete the folder or pass checkpoint_mismatch='restart'."
        )
    return meta


def load_checkpoint(directory: str | Path) -> FilterState:
    """Read the state written by :func:`save_checkpoint`, verifying every array."""
    directory = Path(directory)
    meta = _read_meta(directory / STATE_FILE)
    files = meta["files"]

    def load(key: str) -> np.ndarray:
        entry = files[key]
        path = directory / ARRAY_DIR / entry["file"]
        try:
            arr = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as e:
            raise AnalysisError(
                f"AFLite checkpoint array {str(path)!r} cannot be read ({e}); delete the folder "
                "or pass checkpoint_mismatch='restart'."
            ) from None
        if _checksum(arr) != entry["blake2b"]:
            raise AnalysisError(
                f"AFLite checkpoint array {str(path)!r} does not match its checksum (corrupted); "
                "delete the folder or pass checkpoint_mismatch='restart'."
            )
        return arr

    def side(name: str) -> SideState | None:
        if f"{name}/removed_round" not in files:
            return None
        n_rounds = sum(1 for k in files if k.startswith(f"{name}/p/"))
        return SideState(
            **{k: load(f"{name}/{k}").astype(dt, copy=False) for k, dt in _SIDE_ARRAYS.items()},
            p_rounds=[load(f"{name}/p/{k}") for k in range(1, n_rounds + 1)],
        )

    train = side("train")
    if train is None:
        raise AnalysisError(
            f"The AFLite checkpoint in {str(directory)!r} has no training-side arrays; delete "
            "the folder or pass checkpoint_mismatch='restart'."
        )
    return FilterState(
        entropy=int(meta["entropy"]),
        train=train,
        rounds_done=int(meta["rounds_done"]),
        stop_reason=meta.get("stop_reason"),
        eval=side("eval"),
        history=list(meta.get("history", [])),
    )


def clear_checkpoint(directory: str | Path) -> None:
    """Delete the state file and the arrays this module wrote (nothing else)."""
    directory = Path(directory)
    (directory / STATE_FILE).unlink(missing_ok=True)
    arrays_dir = directory / ARRAY_DIR
    if arrays_dir.is_dir():
        for p in arrays_dir.glob("*.npy"):
            p.unlink(missing_ok=True)
