"""Summary statistics of training dynamics (Swayamdipta et al. 2020, Sec. 2).

:func:`cartography_stats`: confidence, variability, correctness and forgetting events per
example, the coordinates of a data map.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from spurious.exceptions import AnalysisError
from spurious.models.dynamics.record import TrainingDynamics

__all__ = ["cartography_stats"]


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
    AnalysisError
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
        raise AnalysisError(
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
