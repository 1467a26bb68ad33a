"""Partial-input leakage on the real NLI data in ../shared/data (README's table).

Runs the ``partial_input`` detector with bag-of-words and MiniLM features on:

- SNLI: train on test_tokenized (9,824), evaluate on dev (9,842);
- MNLI dev matched: a seeded 70/30 split (train 6,870 / eval 2,945);
- CAD (counterfactually augmented SNLI): original train -> original test, and
  revised_combined train -> revised_combined test.

Writes ``bench/results/leakage_real.json`` and one run directory per setting under
``runs/real/``. Usage::

    python bench/leakage_real.py [--features bow minilm] [--only snli mnli cad_original ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import spurious
from spurious import load_dataset
from spurious.provenance import dependency_versions
from spurious.utils.io import atomic_write_json

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
#: SNLI with bag-of-words probes only (merged into the copy's leakage_real.json).
SMOKE_ARGS = ["--features", "bow", "--only", "snli"]


def settings(data: Path = DATA) -> dict:
    """name -> () -> (train, scored): the four settings, read from ``data``."""
    cad = data / "cad_snli"
    return {
        "snli": lambda: (
            load_dataset(data / "snli/test_tokenized.jsonl", "nli", name="snli-test"),
            load_dataset(data / "snli/dev.jsonl", "nli", name="snli-dev"),
        ),
        "mnli": lambda: load_dataset(data / "mnli/dev_matched.jsonl", "nli").split(
            0.3, random_state=0
        ),
        "cad_original": lambda: (
            load_dataset(cad / "original/train.tsv", "nli", name="cad-original-train"),
            load_dataset(cad / "original/test.tsv", "nli", name="cad-original-test"),
        ),
        "cad_revised_combined": lambda: (
            load_dataset(cad / "revised_combined/train.tsv", "nli", name="cad-revised-train"),
            load_dataset(cad / "revised_combined/test.tsv", "nli", name="cad-revised-test"),
        ),
    }


KEYS = (
    "accuracy_full",
    "majority_accuracy",
    "accuracy_hypothesis_only",
    "accuracy_premise_only",
    "delta_maj_hypothesis_only",
    "delta_maj_premise_only",
    "recovery_hypothesis_only",
    "recovery_premise_only",
    "nba_hypothesis_only",
    "nbr_hypothesis_only",
    "nba_premise_only",
    "nbr_premise_only",
)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--features", nargs="+", default=["bow", "minilm"])
    ap.add_argument("--only", nargs="+", default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/leakage_real.json")
    args = ap.parse_args()
    if not DATA.exists():
        print(f"needs {DATA}", file=sys.stderr)
        return 1
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results.setdefault("runs", {})
    for name, make in settings().items():
        if args.only and name not in args.only:
            continue
        train, test = make()
        for feats in args.features:
            t0 = time.perf_counter()
            run_dir = ROOT / "runs" / "real" / f"{name}-{feats}"
            # One lifecycle: results, manifest and report written by spurious.run.
            res = spurious.run(
                train,
                eval=test,
                analyses={"partial_input": {"features": feats, "random_state": 0}},
                out=run_dir,
            )["partial_input"]
            wall = time.perf_counter() - t0
            row = {k: res.metrics.get(k) for k in KEYS}
            row.update(
                {
                    f"{k}_ci": [res.metrics.get(f"{k}_ci_low"), res.metrics.get(f"{k}_ci_high")]
                    for k in ("delta_maj_hypothesis_only", "accuracy_hypothesis_only")
                }
            )
            row.update(n_train=len(train), n_eval=len(test), wall_s=round(wall, 2))
            results["runs"][f"{name}/{feats}"] = row
            print(
                f"{name:22s} {feats:7s} A_PSC={row['accuracy_full']:.3f} "
                f"A_hyp={row['accuracy_hypothesis_only']:.3f} "
                f"A_prem={row['accuracy_premise_only']:.3f} maj={row['majority_accuracy']:.3f} "
                f"dmaj_hyp={row['delta_maj_hypothesis_only']:+.3f} "
                f"RR_hyp={100 * row['recovery_hypothesis_only']:.1f}% "
                f"NBA={row['nba_hypothesis_only']:.3f} NBR={row['nbr_hypothesis_only']:.3f} "
                f"({wall:.0f}s)",
                flush=True,
            )
    results["versions"] = dependency_versions()
    atomic_write_json(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
