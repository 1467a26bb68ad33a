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

__all__ = ["hardest_adversary", "verdict_text"]


def hardest_adversary(metrics: Mapping[str, float], adversaries: list[str]) -> str | None:
    """The adversary whose AF-selected set has the lowest mean accuracy."""
    vals = {a: metrics.get(f"mean_acc_{a}", math.nan) for a in adversaries}
    vals = {a: v for a, v in vals.items() if math.isfinite(v)}
    return min(vals, key=vals.get) if vals else None


def verdict_text(metrics: Mapping[str, float], details: Mapping[str, Any]) -> str:
    """One paragraph in words: scores, ranking stability and agreement per stage.

    Examples
    --------
    >>> m = {"mean_acc_none": 0.8, "mean_acc_a": 0.4, "chance": 1 / 3, "kendall_tau_a": 0.2,
    ...      "min_kendall_tau": 0.2, "selected_fraction_a": 0.1}
    >>> "0.800" in verdict_text(m, {"adversary_order": ["a"]})
    True
    """
    advs = list(details.get("adversary_order") or [])
    chance = metrics.get("chance", math.nan)
    score = str(details.get("score") or "accuracy")
    parts = []
    accs = [(a, metrics.get(f"mean_acc_{a}", math.nan)) for a in advs]
    acc_txt = ", ".join(f"{a} {v:.3f}" for a, v in accs if math.isfinite(v))
    parts.append(
        f"The models' mean {score} is {metrics.get('mean_acc_none', math.nan):.3f} on the full "
        f"evaluation set and {acc_txt or 'undefined'} on the AF-selected sets"
        + (f" (chance {chance:.3f})." if math.isfinite(chance) else ".")
    )
    sel = ", ".join(f"{a} {metrics.get(f'selected_fraction_{a}', math.nan):.1%}" for a in advs)
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
            f"{a} {metrics.get(f'kendall_tau_{a}', math.nan):+.2f}"
            for a in advs
            if math.isfinite(metrics.get(f"kendall_tau_{a}", math.nan))
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
        (a, metrics.get(f"agreement_first_round_{a}", math.nan),
         metrics.get(f"agreement_selected_{a}", math.nan))
        for a in advs
    ]  # fmt: skip
    ag = [x for x in ag if math.isfinite(x[1]) and math.isfinite(x[2])]
    if ag:
        lower = sum(s < f for _, f, s in ag)
        gold = "the first answer" if score != "accuracy" else "the gold label"
        parts.append(
            f"Annotators agree with {gold} less on AF-selected than on first-round "
            f"filtered examples for {lower} of {len(ag)} adversaries ("
            + ", ".join(f"{a}: {s:.3f} vs {f:.3f}" for a, f, s in ag)
            + ")."
        )
    return " ".join(parts)
