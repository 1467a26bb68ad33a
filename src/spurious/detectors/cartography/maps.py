"""One view's data map of one split, and what the report shows of it.

:func:`map_view` turns training dynamics into the per-example columns of a view
(confidence, variability, correctness, forgetting, region, anti-biased, score);
:func:`region_marks` writes a map's anti-biased marks in ``Result.marks`` form;
:func:`region_examples`, :func:`anti_biased_by_label`, :func:`region_crosstab`,
:func:`learning_curves` and :func:`plain_meta` are the details the report shows;
:func:`check_dynamics_dir` checks the folder of saved dynamics before a run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.data.mcq import LETTERS
from spurious.detectors.cartography.regions import REGIONS, anti_biased_mask, assign_regions
from spurious.exceptions import AnalysisError, ParameterError
from spurious.models.dynamics import TrainingDynamics, cartography_stats

#: Columns computed per view; the partial view's carry the ``partial_`` prefix.
VIEW_COLUMNS = (
    "confidence",
    "variability",
    "correctness",
    "forgetting",
    "region",
    "anti_biased",
    "cartography_score",
)


def map_view(
    dyn: TrainingDynamics,
    split: str,
    dataset: Dataset,
    *,
    ambiguous_fraction: float,
    hard_fraction: float,
    easy_fraction: float,
    anti_biased_fraction: float,
    chance: np.ndarray | None = None,
) -> pd.DataFrame:
    """The per-view columns for ``dataset``'s examples, in its row order.

    ``chance`` (multiple-choice items: ``1 / k`` per item) makes the ranks use
    confidence above chance, ``(confidence - chance) / (1 - chance)``, and the score
    ``(1 - confidence) / (1 - chance)``; the ranked value is the ``rank_confidence``
    column (the confidence itself without ``chance``).
    """
    stats = cartography_stats(dyn, split).set_index("id")
    ids = [str(i) for i in dataset.ids]
    missing = [i for i in ids if i not in stats.index]
    if missing:
        raise AnalysisError(
            f"The training dynamics of the {split!r} split lack {len(missing)} example(s), "
            f"e.g. id {missing[0]!r}."
        )
    stats = stats.loc[ids]
    conf = stats["confidence"].to_numpy()
    var = stats["variability"].to_numpy()
    # An item of k options starts at 1/k under a uniform guess: rank what is above it.
    rank = conf if chance is None else (conf - chance) / (1.0 - chance)
    out = pd.DataFrame(
        {
            "confidence": conf,
            "variability": var,
            "correctness": stats["correctness"].to_numpy(),
            "forgetting": stats["forgetting"].to_numpy().astype(np.int64),
            "region": assign_regions(
                rank,
                var,
                ambiguous_fraction=ambiguous_fraction,
                hard_fraction=hard_fraction,
                easy_fraction=easy_fraction,
            ),
            "anti_biased": anti_biased_mask(rank, anti_biased_fraction),
            "cartography_score": 1.0 - rank,
            "rank_confidence": rank,
        }
    )
    out.attrs["n_recordings"] = int(stats["n_recordings"].iloc[0]) if len(stats) else 0
    return out


def region_marks(
    table: pd.DataFrame, dataset: Dataset, split: str, definition: str
) -> pd.DataFrame:
    """Long-format anti-biased marks of one split and definition (``Result.marks``)."""
    return pd.DataFrame(
        {
            "id": dataset.ids,
            "split": split,
            "definition": definition,
            "anti_biased": table["anti_biased"].to_numpy(dtype=bool),
            # The ranking behind the marks, so amplify can choose another q (Table 7).
            "score": table["cartography_score"].to_numpy(dtype=float),
        }
    )


def region_examples(
    table: pd.DataFrame,
    other: pd.DataFrame | None,
    dataset: Dataset,
    other_prefix: str,
    n_examples: int,
) -> dict[str, list[dict[str, Any]]]:
    """Most typical examples of each region: easy = most confident, hard = least,
    ambiguous = most variable."""
    names = np.asarray(dataset.label_names, dtype=object)
    labels = dataset.labels
    fields = list(dataset.task.text_fields)
    order = {
        "easy_to_learn": -table["confidence"].to_numpy(),
        "ambiguous": -table["variability"].to_numpy(),
        "hard_to_learn": table["confidence"].to_numpy(),
    }
    out: dict[str, list[dict[str, Any]]] = {}
    regions = table["region"].to_numpy()
    for region, key in order.items():
        rows = np.flatnonzero(regions == region)
        rows = rows[np.argsort(key[rows], kind="stable")][:n_examples]
        examples = []
        for i in rows:
            ex: dict[str, Any] = {"id": str(dataset.ids[i]), "label": str(names[labels[i]])}
            ex.update({f: str(dataset.frame[f].iloc[i]) for f in fields})
            if dataset.task.multiple_choice:
                opts = dataset.frame["options"].iloc[i]
                ex["options"] = " | ".join(f"{LETTERS[j]}) {o}" for j, o in enumerate(opts))
            for col in ("confidence", "variability", "correctness", "forgetting"):
                ex[col] = float(table[col].iloc[i])
            ex["anti_biased"] = bool(table["anti_biased"].iloc[i])
            if other is not None:
                ex[f"{other_prefix}confidence"] = float(other["confidence"].iloc[i])
                ex[f"{other_prefix}region"] = str(other["region"].iloc[i])
            examples.append(ex)
        out[region] = examples
    return out


def region_crosstab(table: pd.DataFrame, other: pd.DataFrame) -> dict[str, dict[str, int]]:
    """Examples per (region of ``table``, region of ``other``)."""
    return {
        r: {q: int(((table["region"] == r) & (other["region"] == q)).sum()) for q in REGIONS}
        for r in REGIONS
    }


def learning_curves(dyn: TrainingDynamics) -> dict[str, list[list[float]]]:
    """Accuracy per recording, per split: ``{split: [[epoch, accuracy], ...]}``."""
    return {s: [[e, a] for e, a in dyn.accuracy(s).items()] for s in dyn.splits()}


def check_dynamics_dir(path: str, dynamics_dir: str | None) -> None:
    """With ``path="load"``, ``dynamics_dir`` must be a folder that holds dynamics:
    ``dynamics.parquet`` (:meth:`TrainingDynamics.save`) or allenai/cartography's
    ``dynamics_epoch_<e>.jsonl`` files (in it or in its ``training_dynamics/``).

    Checked before the run starts, so a missing, mistyped or empty folder stops it with
    nothing written.

    Examples
    --------
    >>> import tempfile
    >>> check_dynamics_dir("fast", None)  # nothing to read
    >>> check_dynamics_dir("load", tempfile.mkdtemp())
    Traceback (most recent call last):
    ...
    spurious.exceptions.ParameterError: The 'dynamics_dir' parameter of Cartography: ... holds no ...
    """
    if path != "load" or dynamics_dir is None:
        return
    folder = Path(dynamics_dir).expanduser()
    if not folder.is_dir():
        what = "is a file" if folder.exists() else "does not exist"
        raise ParameterError(
            f"The 'dynamics_dir' parameter of Cartography must be a folder of saved training "
            f"dynamics; {str(folder)!r} {what}."
        )
    if (folder / "dynamics.parquet").is_file():
        return
    for sub in (folder, folder / "training_dynamics"):
        if sub.is_dir() and any(sub.glob("dynamics_epoch_*.json*")):
            return
    raise ParameterError(
        f"The 'dynamics_dir' parameter of Cartography: {str(folder)!r} holds no training "
        "dynamics (no dynamics.parquet, no dynamics_epoch_<e>.jsonl files in it or in its "
        "training_dynamics/)."
    )


def plain_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """How the dynamics were made, the keys the report shows."""
    keep = ("path", "view", "features", "model", "epochs", "options", "source", "train_s")
    return {k: meta[k] for k in keep if k in meta}


def anti_biased_by_label(table: pd.DataFrame, dataset: Dataset) -> dict[str, dict[str, float]]:
    """Per gold label: examples, anti-biased examples and mean confidence."""
    names = dataset.label_names
    anti = table["anti_biased"].to_numpy()
    out = {}
    for k, name in enumerate(names):
        rows = dataset.labels == k
        out[str(name)] = {
            "n": int(rows.sum()),
            "n_anti_biased": int((anti & rows).sum()),
            "mean_confidence": float(table["confidence"][rows].mean()) if rows.any() else 0.0,
        }
    return out
