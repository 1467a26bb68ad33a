"""What a minority result shows besides its metrics: scores, clusters, examples, marks.

:func:`example_scores` is the per-example score table of the scored split;
:func:`cluster_table` lists the clusters with their label counts and minority labels;
:func:`cluster_examples` samples minority and biased examples of each cluster for the
report; :func:`minority_marks` writes the anti-biased marks in ``Result.marks`` form;
:func:`split_verdict` says whether they make an anti-biased split.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset
from spurious.detectors.minority.clustering import MinorityClusters
from spurious.detectors.minority.labels import label_counts


def example_scores(
    res: MinorityClusters,
    train: Dataset,
    evald: Dataset | None,
    clusters: np.ndarray,
    anti: np.ndarray,
    names: np.ndarray,
) -> pd.DataFrame:
    """Per scored example: its cluster, the cluster's majority, its label's share there,
    the mark; with an evaluation split, the nearest training neighbour and its distance."""
    scored = evald if evald is not None else train
    counts = res.counts
    sizes = counts.sum(axis=1)
    safe = np.maximum(sizes, 1)
    majority_share = counts.max(axis=1) / safe
    y = scored.labels
    label_share = counts[clusters, y] / safe[clusters]
    scores = pd.DataFrame(
        {
            "id": scored.ids,
            "label": names[y],
            "cluster": clusters.astype(np.int64),
            "cluster_majority": names[res.majority[clusters]],
            "cluster_majority_share": majority_share[clusters],
            "label_share": label_share,
            "anti_biased": anti.astype(bool),
            "minority_score": 1.0 - label_share,
            "is_minority_issue": anti.astype(bool),
        }
    )
    if evald is not None:
        scores["nn_distance"] = res.eval_distance
        scores["neighbor_id"] = np.asarray(train.ids, dtype=object)[res.eval_neighbor]
    return scores


def cluster_table(
    res: MinorityClusters, names: np.ndarray, evald: Dataset | None
) -> list[dict[str, Any]]:
    """One row per cluster: label counts, majority, minority labels, evaluation counts."""
    rows = []
    k, c = res.counts.shape
    eval_counts = None
    if evald is not None:
        eval_counts = label_counts(res.eval_clusters, evald.labels, k, c)
    for i in range(k):
        counts = res.counts[i]
        size = int(counts.sum())
        row: dict[str, Any] = {
            "cluster": i,
            "n_train": size,
            "label_counts": {str(names[j]): int(counts[j]) for j in range(c)},
            "majority": str(names[res.majority[i]]) if size else None,
            "majority_share": float(counts.max() / size) if size else None,
            "minority_labels": [str(names[j]) for j in np.flatnonzero(res.minority[i])],
            "n_minority_train": int(counts[res.minority[i]].sum()),
        }
        if eval_counts is not None:
            ec = eval_counts[i]
            row["n_eval"] = int(ec.sum())
            row["eval_label_counts"] = {str(names[j]): int(ec[j]) for j in range(c)}
            row["n_minority_eval"] = int(ec[res.minority[i]].sum())
        rows.append(row)
    return rows


def cluster_examples(
    res: MinorityClusters,
    scored: Dataset,
    clusters: np.ndarray,
    anti: np.ndarray,
    names: np.ndarray,
    n_examples: int,
    random_state: int | None,
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Per cluster, a seeded sample of minority and of biased examples of the scored split."""
    if n_examples == 0:
        return {}
    rng = np.random.default_rng(random_state)
    fields = list(scored.task.text_fields)
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for i in range(res.counts.shape[0]):
        entry: dict[str, list[dict[str, Any]]] = {}
        for kind, mask in (("minority", anti), ("biased", ~anti)):
            rows = np.flatnonzero((clusters == i) & mask)
            if len(rows) > n_examples:
                rows = np.sort(rng.choice(rows, n_examples, replace=False))
            exs = []
            for r in rows:
                ex: dict[str, Any] = {
                    "id": str(scored.ids[r]),
                    "label": str(names[scored.labels[r]]),
                }
                ex.update({f: str(scored.frame[f].iloc[r]) for f in fields})
                exs.append(ex)
            entry[kind] = exs
        out[str(i)] = entry
    return out


def minority_marks(
    dataset: Dataset,
    split: str,
    anti: np.ndarray,
    definition: str = "minority",
    score: np.ndarray | None = None,
) -> pd.DataFrame:
    """Long-format anti-biased marks of one split (``Result.marks``); with ``score``
    (higher = more anti-biased) amplification may re-threshold them (q-matching)."""
    frame = pd.DataFrame(
        {
            "id": dataset.ids,
            "split": split,
            "definition": definition,
            "anti_biased": np.asarray(anti, dtype=bool),
        }
    )
    if score is not None:
        frame["score"] = np.asarray(score, dtype=float)
    return frame


def split_verdict(m: dict[str, float]) -> str:
    """Whether the marks give an anti-biased split; never claimed when nothing is marked.

    Examples
    --------
    >>> split_verdict({"n_anti_biased_train": 0.0, "n_train": 10.0, "n_clusters": 10.0})[:33]
    'no anti-biased split: no training'
    >>> split_verdict({"n_anti_biased_train": 5.0})[:29]
    'anti-biased split available f'
    """
    if not m.get("n_anti_biased_train", 0.0) > 0:
        return (
            "no anti-biased split: no training example is a minority example of its cluster "
            f"({m.get('n_train', 0.0):,.0f} examples in {m.get('n_clusters', 0.0):,.0f} "
            "clusters); nothing to amplify"
        )
    if "n_anti_biased_eval" in m and not m["n_anti_biased_eval"] > 0:
        return (
            "no anti-biased test split: no evaluation example is a minority example of the "
            "cluster of its nearest training example"
        )
    return "anti-biased split available for bias amplification (paper 002)"
