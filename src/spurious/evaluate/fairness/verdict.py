"""The fairness analysis in words: the verdict paragraph and the hardest adversary.

:func:`verdict_text` turns the metrics of the ``fairness`` analysis into one paragraph
(scores, stage shares, ranking stability, same-family rank change, annotator agreement);
:func:`hardest_adversary` names the adversary whose AF-selected set has the lowest mean
score, for the summary and the headline.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

from spurious.utils.metric_keys import metric_key

__all__ = ["hardest_adversary", "score_key", "verdict_text"]


def score_key(details: Mapping[str, Any]) -> str:
    """What the matrix holds: ``details["score"]`` (``"accuracy"``, ``"f1"``).

    Examples
    --------
    >>> score_key({"score": "f1"}), score_key({})
    ('f1', 'accuracy')
    """
    return str(details.get("score") or "accuracy")


def hardest_adversary(
    metrics: Mapping[str, float], adversaries: list[str], score: str = "accuracy"
) -> str | None:
    """The adversary whose AF-selected set has the lowest mean ``score``."""
    vals = {a: metrics.get(metric_key(f"mean_{score}", a), math.nan) for a in adversaries}
    vals = {a: v for a, v in vals.items() if math.isfinite(v)}
    return min(vals, key=vals.get) if vals else None


def verdict_text(metrics: Mapping[str, float], details: Mapping[str, Any]) -> str:
    """One paragraph in words: scores, ranking stability and agreement per stage.

    Examples
    --------
    >>> m = {"mean_accuracy/none": 0.8, "mean_accuracy/a": 0.4, "chance": 1 / 3,
    ...      "kendall_tau/a": 0.2, "min_kendall_tau": 0.2, "selected_fraction/a": 0.1}
    >>> "0.800" in verdict_text(m, {"adversary_order": ["a"]})
    True
    """
    advs = list(details.get("adversary_order") or [])
    chance = metrics.get("chance", math.nan)
    key = score_key(details)
    score = str(details.get("score_name") or key)
    parts = []
    accs = [(a, metrics.get(metric_key(f"mean_{key}", a), math.nan)) for a in advs]
    acc_txt = ", ".join(f"{a} {v:.3f}" for a, v in accs if math.isfinite(v))
    full = metrics.get(metric_key(f"mean_{key}", "none"), math.nan)
    parts.append(
        f"The models' mean {score} is {full:.3f} on the full "
        f"evaluation set and {acc_txt or 'undefined'} on the AF-selected sets"
        + (f" (chance {chance:.3f})." if math.isfinite(chance) else ".")
    )
    sel = ", ".join(
        f"{a} {metrics.get(metric_key('selected_fraction', a), math.nan):.1%}" for a in advs
    )
    parts.append(f"The adversaries keep {sel} of the examples.")
    finite = [v for _, v in accs if math.isfinite(v)]
    if len(finite) >= 2:
        monotone = all(b <= a + 1e-12 for a, b in itertools.pairwise(finite))
        parts.append(
            "In the order given (weakest first) each adversary lowers the scores further."
            if monotone
            else "The scores do not fall monotonically in the order the adversaries are given."
        )
    tau = metrics.get("min_kendall_tau", math.nan)
    if math.isfinite(tau):
        taus = ", ".join(
            f"{a} {metrics.get(metric_key('kendall_tau', a), math.nan):+.2f}"
            for a in advs
            if math.isfinite(metrics.get(metric_key("kendall_tau", a), math.nan))
        )
        word = "stable" if tau >= 0.85 else "partly reordered" if tau >= 0.6 else "unstable"
        parts.append(
            f"Against the unfiltered ranking, Kendall's tau is {taus}: the ranking is {word} "
            "under adversarial filtering."
        )
    fam = metrics.get("mean_family_rank_change")
    if fam is not None and math.isfinite(fam):
        inferred = details.get("families_inferred") or []
        parts.append(
            f"Models lose {fam:+.2f} ranks on average under an adversary of their own family"
            + (f" (families inferred for {', '.join(map(str, inferred))})." if inferred else ".")
        )
    ag = [
        (a, metrics.get(metric_key("agreement_first_round", a), math.nan),
         metrics.get(metric_key("agreement_selected", a), math.nan))
        for a in advs
    ]  # fmt: skip
    ag = [x for x in ag if math.isfinite(x[1]) and math.isfinite(x[2])]
    if ag:
        lower = sum(s < f for _, f, s in ag)
        gold = "the first answer" if key != "accuracy" else "the gold label"
        parts.append(
            f"Annotators agree with {gold} less on AF-selected than on first-round "
            f"filtered examples for {lower} of {len(ag)} adversaries ("
            + ", ".join(f"{a}: {s:.3f} vs {f:.3f}" for a, f, s in ag)
            + ")."
        )
    return " ".join(parts)
