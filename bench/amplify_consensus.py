"""Is the minority consensus a steadier anti-biased split than one seed's minority marks?

Reads the runs ``python bench/amplify_snli.py --seeds 3 --compare --stability-seeds 4
--marking-seed M`` leaves in ``runs/amplify-snli-stab4[-markM]/run`` (M = 0, 5, ..., 20:
the disjoint seed groups 0-4, 5-9, ..., 20-24) and, per group:

- amplifies ``minority_consensus`` **alone**, so it keeps its own marks (the examples at
  least half of the group's five clusterings mark) instead of being q-matched to the
  group's first seed, and evaluates it with the default evaluator (tf-idf logistic
  regression, seeds 1-3), as ``bench/amplify_snli.py`` does;
- records the same for the group's own ``minority`` (its first seed), from the run's
  ``amplify_snli_stab4[_markM].json``;
- and the Jaccard overlap of the groups' marked training sets, pairwise.

Writes ``bench/results/amplify_snli_consensus.json``. Usage::

    python bench/amplify_consensus.py [--groups 0 5 10 15 20]
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pandas as pd

from amplify_snli import QUICK_RUN
from spurious.actions.amplify import amplify_run, evaluate_amplified
from spurious.provenance import dependency_versions
from spurious.utils.io import atomic_write_json

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
#: One group (seeds 0-1), from a smoke-sized bench/amplify_snli.py run made first (200 pairs,
#: bow), evaluated with one seed; writes amplify_snli_consensus_quick.json.
SMOKE_ARGS = ["--groups", "0", "--stability-seeds", "1", "--quick"]


def _name(mark: int, stab: int, quick: bool, sep: str) -> str:
    """``amplify<sep>snli[<sep>quick]<sep>stab<K>[<sep>mark<M>]`` (run folder or result)."""
    parts = ["amplify", "snli", *(["quick"] if quick else []), f"stab{stab}"]
    return sep.join(parts + ([f"mark{mark}"] if mark else []))


def _run_dir(mark: int, stab: int = 4, quick: bool = False) -> Path:
    return ROOT / "runs" / _name(mark, stab, quick, "-") / "run"


def _amplify_command(mark: int, stab: int, quick: bool) -> list[str]:
    """The bench/amplify_snli.py command that makes the group's run (and its result)."""
    seeds = ["--stability-seeds", str(stab), "--marking-seed", str(mark)]
    if not quick:
        return ["bench/amplify_snli.py", "--seeds", "3", "--compare", *seeds]
    run = _run_dir(mark, stab, quick).parent.relative_to(ROOT)
    result = (RESULTS / f"{_name(mark, stab, quick, '_')}.json").relative_to(ROOT)
    return [
        "bench/amplify_snli.py",
        *QUICK_RUN,
        *seeds,
        "--run-dir",
        str(run),
        "--out",
        str(result),
    ]


def _marked(run: Path, definition: str) -> set[str]:
    marks = pd.read_parquet(run / "minority" / "marks.parquet")
    rows = (marks["definition"] == definition) & (marks["split"] == "train") & marks["anti_biased"]
    return set(marks.loc[rows, "id"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--groups", type=int, nargs="+", default=[0, 5, 10, 15, 20])
    ap.add_argument(
        "--stability-seeds",
        type=int,
        default=4,
        help="read the runs made with this --stability-seeds K (group M: seeds M..M+K)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="smoke-sized: each group's run is runs/amplify-snli-quick-stab<K>[-mark<M>], made "
        "first when missing with `bench/amplify_snli.py --quick --seeds 1 --compare --rows 200 "
        "--stability-seeds K --marking-seed M`; evaluation seed 1 only; writes "
        "amplify_snli_consensus_quick.json",
    )
    args = ap.parse_args()
    stab, quick = args.stability_seeds, args.quick
    out: dict = {"protocol": __doc__.split("\n\n")[1].replace("\n", " "), "groups": {}}
    sets: dict[tuple[int, str], set[str]] = {}
    for mark in args.groups:
        run = _run_dir(mark, stab, quick)
        command = _amplify_command(mark, stab, quick)
        if quick and not run.is_dir():
            subprocess.run([sys.executable, str(ROOT / command[0]), *command[1:]], check=True)
        if not run.is_dir():
            raise SystemExit(f"{run} is missing: run `python {' '.join(command)}` first")
        amp = amplify_run(run, definitions=["minority_consensus"])
        seeds = (1,) if quick else (1, 2, 3)
        ev = evaluate_amplified(amp, seeds=seeds)["definitions"]["minority_consensus"]
        splits = amp.definitions["minority_consensus"].splits
        name = _name(mark, stab, quick, "_") + ".json"
        single = json.loads((RESULTS / name).read_text())["table1"]["minority"]
        out["groups"][mark] = {
            "seeds": list(range(mark, mark + stab + 1)),
            "consensus": {
                "n_train_anti_biased": int(splits["train.anti_biased"][1].sum()),
                "n_test_anti_biased": ev["n_test_anti_biased"],
                "full": ev["full"]["mean"],
                "biased": ev["biased"]["mean"],
                "drop": ev["drop_biased_minus_random"],
                "notes": ev["notes"],
            },
            "first_seed_minority": {
                "n_test_anti_biased": single["n_test_anti_biased"],
                "full": single["full"]["mean"],
                "biased": single["biased"]["mean"],
                "drop": single["drop_biased_minus_random"],
            },
        }
        for d in ("minority", "minority_consensus"):
            sets[(mark, d)] = _marked(run, d)
        print(mark, f"consensus drop {ev['drop_biased_minus_random']['mean']:+.3f}",
              f"minority drop {single['drop_biased_minus_random']['mean']:+.3f}", flush=True)  # fmt: skip
    for d in ("minority", "minority_consensus"):
        pairs = {
            f"{a}-{b}": len(sets[(a, d)] & sets[(b, d)]) / len(sets[(a, d)] | sets[(b, d)])
            for a, b in itertools.combinations(args.groups, 2)
        }
        out[f"jaccard_between_groups_{d}"] = pairs
    for key in ("consensus", "first_seed_minority"):
        drops = [g[key]["drop"]["mean"] for g in out["groups"].values()]
        out[f"{key}_drop_over_groups"] = {
            "values": drops,
            "mean": statistics.fmean(drops),
            "sd": statistics.stdev(drops) if len(drops) > 1 else None,
        }
    out["versions"] = dependency_versions()
    name = "amplify_snli_consensus" + ("_quick" if quick else "") + ".json"
    atomic_write_json(RESULTS / name, out)
    print(
        json.dumps(
            {k: v for k, v in out.items() if k.startswith(("jaccard", "consensus_", "first"))},
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
