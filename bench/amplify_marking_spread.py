"""How much the bias-amplified split results move with the marking's own seed.

``bench/amplify_snli.py`` reports, per definition, a 95% bootstrap interval of the drop
biased - random over the anti-biased test examples. That interval holds the marking
fixed: one cartography map, one minority clustering. This script reads the runs made
with other marking seeds (``python bench/amplify_snli.py --seeds 3 --compare
--marking-seed N`` for N = 1..4, beside the seed-0 run) and reports, per definition, the
marked share, the anti-biased test size, the full-data model's accuracy there and the
drop for every marking seed, with their mean, sd and a t interval over the seeds.

Usage::

    python bench/amplify_marking_spread.py [--data snli] [--seeds 0 1 2 3 4]

Writes ``bench/results/amplify_snli_marking_spread.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from scipy import stats

from spurious.utils.io import atomic_write_json

RESULTS = Path(__file__).resolve().parent / "results"
#: The default: reads the committed amplify_snli[_mark1..4].json results (copied with bench/).
SMOKE_ARGS: list[str] = []


def _result_file(data: str, seed: int) -> Path:
    return RESULTS / (f"amplify_{data}.json" if seed == 0 else f"amplify_{data}_mark{seed}.json")


def spread(values: list[float]) -> dict[str, float]:
    """Mean, sd and a 95% t interval over the marking seeds (one value per seed)."""
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else float("nan")
    half = stats.t.ppf(0.975, len(values) - 1) * sd / len(values) ** 0.5 if len(values) > 1 else 0
    return {
        "mean": mean,
        "sd": sd,
        "ci_low": mean - half,
        "ci_high": mean + half,
        "min": min(values),
        "max": max(values),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", choices=["snli", "mnli"], default="snli")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    args = ap.parse_args()
    runs = {}
    for seed in args.seeds:
        path = _result_file(args.data, seed)
        if not path.is_file():
            raise SystemExit(
                f"{path} is missing: run `python bench/amplify_snli.py --data {args.data} "
                f"--seeds 3 --compare --marking-seed {seed}` first"
            )
        runs[seed] = json.loads(path.read_text())
    evaluators = {r["evaluator"] for r in runs.values()}
    if len(evaluators) != 1:
        raise SystemExit(f"the runs used different evaluators: {sorted(evaluators)}")
    out: dict = {
        "protocol": __doc__.split("\n\n")[1].replace("\n", " "),
        "data": args.data,
        "evaluator": evaluators.pop(),
        "marking_seeds": args.seeds,
        "cpu": sorted({r["versions"].get("cpu", "unknown") for r in runs.values()}),
        "definitions": {},
    }
    for d in runs[args.seeds[0]]["definitions"]:
        per_seed = {}
        for seed, r in runs.items():
            e = r["table1"][d]
            drop = e["drop_biased_minus_random"]
            per_seed[seed] = {
                "q": r["q"][d],
                "anti_biased_test_n": r["split_sizes"][d]["test.anti_biased"],
                "full": e["full"]["mean"],
                "random": e["random"]["mean"],
                "biased": e["biased"]["mean"],
                "drop": drop["mean"],
                "drop_ci_over_test_examples": [drop["ci_low"], drop["ci_high"]],
                "notes": e["notes"],
            }
        drops = [v["drop"] for v in per_seed.values()]
        widths = [
            v["drop_ci_over_test_examples"][1] - v["drop_ci_over_test_examples"][0]
            for v in per_seed.values()
        ]
        out["definitions"][d] = {
            "per_marking_seed": per_seed,
            "drop_over_marking_seeds": spread(drops),
            "q_over_marking_seeds": spread([v["q"] for v in per_seed.values()]),
            "median_width_of_the_test_example_interval": statistics.median(widths),
        }
        s = out["definitions"][d]["drop_over_marking_seeds"]
        qs = " ".join(f"{v['q']:.3f}" for v in per_seed.values())
        print(
            f"{d:<26} drops {' '.join(f'{x:+.3f}' for x in drops)}  mean {s['mean']:+.3f} "
            f"sd {s['sd']:.3f} [{s['ci_low']:+.3f}, {s['ci_high']:+.3f}]  "
            f"q {qs}"
        )
    atomic_write_json(RESULTS / f"amplify_{args.data}_marking_spread.json", out)


if __name__ == "__main__":
    main()
