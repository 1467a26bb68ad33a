"""What ``partial_input`` returns besides its metrics: scores, examples, the summary.

:func:`leakage_scores` is the per-example table (each condition's prediction and
p(gold), the leakage score and flag); :func:`top_examples` and
:func:`per_class_accuracy` are details the report shows; :func:`leakage_summary` is the
one-line summary of the leakiest condition.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from spurious.data.dataset import Dataset


def leakage_scores(
    evaluate: Dataset,
    names: np.ndarray,
    probas: dict[str, np.ndarray],
    preds: dict[str, np.ndarray],
    correct: dict[str, np.ndarray],
    scored_by: list[str],
    leaky: list[str],
    issue_threshold: float,
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The score table, the leakage score (the highest p(gold) of the conditions in
    ``scored_by``) and the flag (a leaky condition is right with p(gold) >= threshold)."""
    y = evaluate.labels
    rows = np.arange(len(evaluate))
    scores = pd.DataFrame({"id": evaluate.ids, "label": names[y]})
    for c in preds:
        scores[f"pred_{c}"] = names[preds[c]]
        scores[f"correct_{c}"] = correct[c]
        scores[f"p_gold_{c}"] = probas[c][rows, y]
    leak = np.max(np.stack([probas[c][rows, y] for c in scored_by]), axis=0)
    scores["partial_input_score"] = leak
    flagged = np.zeros(len(evaluate), dtype=bool)
    for c in leaky:
        flagged |= correct[c] & (probas[c][rows, y] >= issue_threshold)
    scores["is_partial_input_issue"] = flagged
    return scores, leak, flagged


def top_examples(
    evaluate: Dataset,
    names: np.ndarray,
    probas: dict[str, np.ndarray],
    preds: dict[str, np.ndarray],
    leak: np.ndarray,
    n_top: int,
) -> list[dict[str, Any]]:
    """The ``n_top`` examples of highest leakage score, with every condition's guess."""
    y = evaluate.labels
    top = np.argsort(-leak, kind="stable")[:n_top]
    fields = list(evaluate.task.text_fields)
    out = []
    for i in top:
        ex = {"id": str(evaluate.ids[i]), "label": str(names[y[i]])}
        ex.update({f: evaluate.frame[f].iloc[i] for f in fields})
        for c in preds:
            ex[f"pred_{c}"] = str(names[preds[c][i]])
            ex[f"p_gold_{c}"] = float(probas[c][i, y[i]])
        ex["partial_input_score"] = float(leak[i])
        out.append(ex)
    return out


def per_class_accuracy(
    y: np.ndarray, correct: dict[str, np.ndarray], names: np.ndarray, n_classes: int
) -> dict[str, dict[str, float | None]]:
    """Accuracy of every condition on the examples of each gold label."""
    return {
        c: {
            str(names[k]): float(correct[c][y == k].mean()) if (y == k).any() else None
            for k in range(n_classes)
        }
        for c in correct
    }


def leakage_summary(metrics: dict[str, float], worst: str, n_flagged: int) -> str:
    """The leakiest condition against the majority guess and the full input, in one line."""
    summary = (
        f"{worst}: accuracy {metrics[f'accuracy_{worst}']:.3f} vs majority "
        f"{metrics['majority_accuracy']:.3f} (Delta_maj {metrics[f'delta_maj_{worst}']:+.3f} "
        f"[{metrics[f'delta_maj_{worst}_ci_low']:+.3f}, "
        f"{metrics[f'delta_maj_{worst}_ci_high']:+.3f}]); full input "
        f"{metrics['accuracy_full']:.3f}; {n_flagged} leaky example(s)"
    )
    if f"tra_{worst}" in metrics:
        summary += f"; TRA {metrics[f'tra_{worst}']:.3f}"
    return summary
