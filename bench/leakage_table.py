"""Print bench/results/leakage_real.json as the Markdown table used in the README.

``--json PATH`` (relative to the checkout) also writes the table's lines to a JSON file.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The table of the copy's leakage_real.json, also written as JSON.
SMOKE_ARGS = ["--json", "bench/results/leakage_table.json"]


def table(runs: dict) -> list[str]:
    lines = [
        "| data (train -> eval) | features | A_PSC | A_SSC hyp | A_SSC prem | majority | "
        "Delta_maj hyp [95% CI] | %R_R hyp | NBA hyp | NBR hyp |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key in sorted(runs):
        r = runs[key]
        data, feats = key.split("/")
        lo, hi = r["delta_maj_hypothesis_only_ci"]
        lines.append(
            f"| {data} ({r['n_train']} -> {r['n_eval']}) | {feats} | {r['accuracy_full']:.3f} | "
            f"{r['accuracy_hypothesis_only']:.3f} | {r['accuracy_premise_only']:.3f} | "
            f"{r['majority_accuracy']:.3f} | {r['delta_maj_hypothesis_only']:+.3f} "
            f"[{lo:+.3f}, {hi:+.3f}] | {100 * r['recovery_hypothesis_only']:.1f} | "
            f"{r['nba_hypothesis_only']:.3f} | {r['nbr_hypothesis_only']:.3f} |"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", type=Path, default=None, help="also write the table here")
    args = ap.parse_args()
    source = ROOT / "bench/results/leakage_real.json"
    lines = table(json.loads(source.read_text())["runs"])
    print("\n".join(lines))
    if args.json is not None:
        dest = ROOT / args.json
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(
            json.dumps({"source": "bench/results/leakage_real.json", "table": lines}, indent=1)
            + "\n"
        )


if __name__ == "__main__":
    main()
