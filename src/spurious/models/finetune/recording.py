"""Training dynamics while a model trains: per snapshot and example, p(gold), prediction, logits.

The frame (one row per example and snapshot) has the columns of
:data:`FINETUNE_FRAME_COLUMNS`: the required columns of
:class:`spurious.models.dynamics.TrainingDynamics`
(:data:`spurious.models.dynamics.DYNAMICS_COLUMNS`) plus ``gold`` and ``logits``:

===========  =====================================================================
``id``       example id (str)
``split``    ``"train"`` or ``"eval"``
``epoch``    epochs completed when recorded (1.0 = end of the first epoch;
             fractional with several snapshots per epoch)
``p_gold``   softmax probability of the gold label
``pred``     predicted label id (argmax)
``correct``  ``pred == gold``
``gold``     gold label id
``logits``   the classifier's logits (list of float)
===========  =====================================================================

Two sources, as :class:`~spurious.models.finetune.FineTuneConfig` ``train_dynamics``
picks: the training forward pass itself (:meth:`DynamicsRecorder.capture`, what
allenai/cartography records; free) and a no-grad pass in eval mode over whole splits
(:meth:`DynamicsRecorder.snapshot`; the evaluation split always comes from it, so it is
never trained on). :class:`DynamicsCallback` drives both from ``transformers.Trainer``'s
events and stores the frame in every checkpoint, so a resumed fine-tune continues the
same record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spurious.models.dynamics.record import DYNAMICS_COLUMNS
from spurious.models.finetune.data import EncodedSplit
from spurious.models.finetune.inference import predict_logits
from spurious.utils.io import atomic_write, atomic_write_json, read_json

logger = logging.getLogger(__name__)

#: Columns of a fine-tune's dynamics frame, in order: the required columns of a
#: :class:`~spurious.models.dynamics.TrainingDynamics` frame, then the gold label id and
#: the logits (both optional there, always recorded here).
FINETUNE_FRAME_COLUMNS = (*DYNAMICS_COLUMNS, "gold", "logits")
#: File names inside a checkpoint folder.
CHECKPOINT_DYNAMICS = "spurious_dynamics.parquet"
CHECKPOINT_STATE = "spurious_state.json"


def records(split: EncodedSplit, name: str, epoch: float, rows: np.ndarray, logits: np.ndarray):
    """The dynamics rows of ``rows`` of ``split`` from their ``logits`` (float32).

    Examples
    --------
    >>> import numpy as np
    >>> from spurious.models.finetune.data import EncodedSplit
    >>> s = EncodedSplit(np.array(["a", "b"], dtype=object), [[1], [1]], None,
    ...                  np.array([0, 1]), np.array([1, 1]), 0)
    >>> f = records(s, "train", 1.0, np.array([0, 1]), np.array([[2.0, 0.0], [2.0, 0.0]]))
    >>> f[["id", "pred", "correct"]].values.tolist()
    [['a', 0, True], ['b', 0, False]]
    >>> round(float(f.p_gold[0]), 4)
    0.8808
    """
    logits = np.asarray(logits, dtype=np.float32)
    z = logits - logits.max(axis=1, keepdims=True)
    probs = np.exp(z)
    probs /= probs.sum(axis=1, keepdims=True)
    gold = split.labels[rows]
    pred = logits.argmax(axis=1)
    return pd.DataFrame(
        {
            "id": split.ids[rows].astype(str),
            "split": name,
            "epoch": float(round(epoch, 6)),
            "p_gold": probs[np.arange(len(rows)), gold].astype(np.float64),
            "pred": pred.astype(np.int64),
            "correct": pred == gold,
            "gold": gold.astype(np.int64),
            "logits": list(logits),
        }
    )


def empty_frame() -> pd.DataFrame:
    """A dynamics frame with no rows and the right dtypes."""
    return pd.DataFrame(
        {
            "id": pd.Series([], dtype=object),
            "split": pd.Series([], dtype=object),
            "epoch": pd.Series([], dtype=np.float64),
            "p_gold": pd.Series([], dtype=np.float64),
            "pred": pd.Series([], dtype=np.int64),
            "correct": pd.Series([], dtype=bool),
            "gold": pd.Series([], dtype=np.int64),
            "logits": pd.Series([], dtype=object),
        }
    )


class DynamicsRecorder:
    """Collects dynamics records of a training split and an evaluation split.

    Parameters
    ----------
    train, eval : EncodedSplit
        The splits (``eval`` may be ``None``).
    device, precision : str
        Where and in which autocast precision the no-grad passes run.
    batch_size : int
        Rows per batch of the no-grad passes.
    record : bool
        ``False``: keep nothing, only compute evaluation metrics (for early stopping).
    rank, world_size : int
        This process's shard of each pass (data-parallel training).
    gather : callable
        ``gather(list) -> list`` concatenating a Python list over processes.
    progress : bool
        A bar per pass.
    """

    def __init__(
        self,
        train: EncodedSplit,
        eval: EncodedSplit | None,
        *,
        device: str,
        precision: str,
        batch_size: int,
        record: bool = True,
        rank: int = 0,
        world_size: int = 1,
        gather: Callable[[list[Any]], list[Any]] = lambda x: x,
        progress: bool = False,
    ) -> None:
        self.train = train
        self.eval = eval
        self.device = device
        self.precision = precision
        self.batch_size = batch_size
        self.record = record
        self.rank = rank
        self.world_size = world_size
        self.gather = gather
        self.progress = progress
        self.chunks: list[pd.DataFrame] = []
        #: global step -> metrics of the evaluation pass at that step.
        self.eval_metrics: dict[int, dict[str, float]] = {}
        #: Seconds spent in no-grad passes (the recording cost beyond plain training).
        self.pass_seconds = 0.0
        self._forward: list[tuple[Any, Any]] = []

    # -- the training forward pass --------------------------------------------------
    def capture(self, idx: Any, logits: Any) -> None:
        """Keep the logits of a training batch (tensors stay on the device until the
        epoch ends, so recording adds no host synchronisation to a step)."""
        self._forward.append((idx.detach(), logits.detach()))

    def flush_forward(self, epoch: float) -> None:
        """Turn the captured training logits of the epoch into records."""
        import torch

        if not self._forward:
            return
        idx = torch.cat([i for i, _ in self._forward]).cpu().numpy()
        logits = torch.cat([x for _, x in self._forward]).float().cpu().numpy()
        self._forward.clear()
        idx, logits = self._gathered(idx, logits)
        # Dataset order; a distributed sampler pads shards with repeated examples: keep
        # each example once.
        rows, first = np.unique(idx, return_index=True)
        self.chunks.append(records(self.train, "train", epoch, rows, logits[first]))

    def discard_forward(self) -> None:
        """Drop captured logits (a partial epoch that a resume will redo)."""
        self._forward.clear()

    # -- no-grad passes ------------------------------------------------------------
    def snapshot(
        self, model: Any, epoch: float, step: int, *, train: bool, record: bool | None = None
    ) -> dict[str, float]:
        """Score the evaluation split (and the training split if ``train``) with ``model``
        in eval mode; return the evaluation metrics (accuracy, loss)."""
        record = self.record if record is None else record
        was_training = model.training
        model.eval()
        start = time.perf_counter()
        metrics: dict[str, float] = {}
        try:
            for name, split in (("train", self.train if train else None), ("eval", self.eval)):
                if split is None:
                    continue
                rows, logits = self._pass(model, split, name)
                if name == "eval":
                    metrics = _metrics(split, rows, logits)
                    self.eval_metrics[step] = metrics
                if record:
                    self.chunks.append(records(split, name, epoch, rows, logits))
        finally:
            model.train(was_training)
            self.pass_seconds += time.perf_counter() - start
        return metrics

    def _pass(self, model: Any, split: EncodedSplit, name: str) -> tuple[np.ndarray, np.ndarray]:
        rows = np.arange(len(split))[self.rank :: self.world_size]
        bar = None
        if self.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=len(rows), desc=f"dynamics ({name})", unit="ex", leave=False)
        try:
            logits = predict_logits(
                model,
                split,
                device=self.device,
                precision=self.precision,
                batch_size=self.batch_size,
                rows=rows,
                bar=bar,
            )
        finally:
            if bar is not None:
                bar.close()
        rows, logits = self._gathered(rows, logits)
        order = np.argsort(rows, kind="stable")
        return rows[order], logits[order]

    def _gathered(self, rows: np.ndarray, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self.world_size == 1:
            return rows, logits
        parts = self.gather([(rows, logits)])
        return np.concatenate([r for r, _ in parts]), np.concatenate([x for _, x in parts])

    # -- the frame ------------------------------------------------------------------
    def frame(self) -> pd.DataFrame:
        """Every record so far (train before eval, then by epoch, then dataset order)."""
        if not self.chunks:
            return empty_frame()
        df = pd.concat(self.chunks, ignore_index=True)
        if len(self.chunks) > 1:
            # One chunk per (split, epoch) in recording order; a stable sort by split then
            # epoch keeps the dataset order inside each chunk.
            df = df.sort_values(
                ["split", "epoch"], key=_split_key, kind="stable", ignore_index=True
            )
            self.chunks = [df]
        return df

    def save(self, folder: str | Path) -> None:
        """Store the records and evaluation metrics in a checkpoint folder (atomically)."""
        folder = Path(folder)
        df = self.frame()
        atomic_write(folder / CHECKPOINT_DYNAMICS, lambda p: df.to_parquet(p, index=False))
        atomic_write_json(
            folder / CHECKPOINT_STATE,
            {
                "eval_metrics": {str(k): v for k, v in self.eval_metrics.items()},
                "pass_seconds": self.pass_seconds,
            },
        )

    def load(self, folder: str | Path) -> None:
        """Continue from what :meth:`save` stored in a checkpoint folder."""
        folder = Path(folder)
        path = folder / CHECKPOINT_DYNAMICS
        self.chunks = [read_dynamics(path)] if path.is_file() else []
        state_path = folder / CHECKPOINT_STATE
        if state_path.is_file():
            state = read_json(state_path)
            self.eval_metrics = {int(k): v for k, v in state.get("eval_metrics", {}).items()}
            self.pass_seconds = float(state.get("pass_seconds", 0.0))


def read_dynamics(path: str | Path) -> pd.DataFrame:
    """A dynamics frame from Parquet, with the logits as float32 arrays."""
    df = pd.read_parquet(path)
    if "logits" in df:
        df["logits"] = [np.asarray(x, dtype=np.float32) for x in df["logits"]]
    return df


def _split_key(col: pd.Series) -> pd.Series:
    return col.map({"train": 0, "eval": 1}) if col.name == "split" else col


def _metrics(split: EncodedSplit, rows: np.ndarray, logits: np.ndarray) -> dict[str, float]:
    gold = split.labels[rows]
    z = logits - logits.max(axis=1, keepdims=True)
    log_probs = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return {
        "accuracy": float((logits.argmax(axis=1) == gold).mean()),
        "loss": float(-log_probs[np.arange(len(rows)), gold].mean()),
    }


def make_callback(recorder: DynamicsRecorder, per_epoch: int, train_pass: bool) -> Any:
    """The ``transformers.TrainerCallback`` that records dynamics (see the module doc)."""
    from transformers import TrainerCallback

    class DynamicsCallback(TrainerCallback):
        """Snapshots at ``per_epoch`` points of every epoch; the records go into every
        checkpoint."""

        def _steps_per_epoch(self, args: Any, state: Any) -> int:
            return max(1, int(state.max_steps // max(1, int(np.ceil(args.num_train_epochs)))))

        def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any):
            if per_epoch == 1 or model is None:
                return
            spe = self._steps_per_epoch(args, state)
            pos = state.global_step % spe
            targets = {round(j * spe / per_epoch) for j in range(1, per_epoch)} - {0, spe}
            if pos in targets:
                recorder.snapshot(model, state.epoch, state.global_step, train=train_pass)

        def on_epoch_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any):
            epoch = float(state.epoch)
            if recorder.record:
                recorder.flush_forward(round(epoch))
            if model is not None and (recorder.eval is not None or train_pass):
                recorder.snapshot(model, epoch, state.global_step, train=train_pass)

        def on_save(self, args: Any, state: Any, control: Any, **kw: Any):
            if state.is_world_process_zero:
                folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
                if folder.is_dir():
                    recorder.save(folder)

    return DynamicsCallback()
