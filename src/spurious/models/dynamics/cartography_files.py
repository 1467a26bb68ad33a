"""allenai/cartography's ``dynamics_epoch_{e}.jsonl`` files: finding and reading them.

The helpers behind :meth:`TrainingDynamics.from_cartography_jsonl
<spurious.models.dynamics.TrainingDynamics.from_cartography_jsonl>` and
:meth:`~spurious.models.dynamics.TrainingDynamics.to_cartography_jsonl` (the gold label of
a record without a ``gold`` column), and the softmax shared with the fast path.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd

from spurious.exceptions import DataFormatError

__all__: list[str] = []

_EPOCH_FILE = re.compile(r"dynamics_epoch_(\d+)\.jsonl?$")


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
