"""Print bench/results/leakage_real.json as the Markdown table used in the README."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    runs = json.loads((ROOT / "bench/results/leakage_real.json").read_text())["runs"]
    print(
        "| data (train -> eval) | features | A_PSC | A_SSC hyp | A_SSC prem | majority | "
        "Delta_maj hyp [95% CI] | %R_R hyp | NBA hyp | NBR hyp |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(runs):
        r = runs[key]
        data, feats = key.split("/")
        lo, hi = r["delta_maj_hypothesis_only_ci"]
        print(
            f"| {data} ({r['n_train']} -> {r['n_eval']}) | {feats} | {r['accuracy_full']:.3f} | "
            f"{r['accuracy_hypothesis_only']:.3f} | {r['accuracy_premise_only']:.3f} | "
            f"{r['majority_accuracy']:.3f} | {r['delta_maj_hypothesis_only']:+.3f} "
            f"[{lo:+.3f}, {hi:+.3f}] | {100 * r['recovery_hypothesis_only']:.1f} | "
            f"{r['nba_hypothesis_only']:.3f} | {r['nbr_hypothesis_only']:.3f} |"
        )


if __name__ == "__main__":
    main()
