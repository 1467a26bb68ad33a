"""AFLite and cartography on real multiple-choice benchmarks (README, "Multiple-choice
benchmarks"): how much AFLite removes and how the choices-only gain over chance changes on
the kept items; whether the items whose gold is the longest option crowd the
easy-to-learn region of the data map.

For each benchmark: ``aflite`` with its defaults (MiniLM option blocks, full view), then
the cross-fitted choices-only accuracy (conditional logit on MiniLM option blocks,
5 folds, :func:`spurious.detectors.aflite.mcq.option_choice_accuracy`) on all items and
on the kept ones; ``cartography`` with the quick profile (MiniLM), then the share of
gold-is-the-longest-option items among all items and among the easy-to-learn ones, with
Fisher's exact test. Writes ``bench/results/mcq_aflite_cartography.json``. Usage::

    python bench/mcq_aflite_cartography.py [--only arc_challenge mmlu]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "mcq"
BENCHMARKS = {
    "arc_challenge": DATA / "arc_challenge" / "test.jsonl",
    "mmlu": DATA / "mmlu" / "test",
}
#: MMLU only (4 subjects, ~400 items in the smoke copy).
SMOKE_ARGS = ["--only", "mmlu"]


def main() -> int:
    import numpy as np
    from scipy.stats import fisher_exact

    import spurious
    from spurious.analysis import get_analysis
    from spurious.data import load_dataset
    from spurious.detectors.aflite.mcq import option_choice_accuracy
    from spurious.heuristics import get_heuristic
    from spurious.provenance import dependency_versions
    from spurious.utils.io import atomic_write_json

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", choices=list(BENCHMARKS), default=list(BENCHMARKS))
    args = ap.parse_args()
    out: dict = {"command": "python bench/mcq_aflite_cartography.py", "benchmarks": {}}
    for name in args.only:
        ds = load_dataset(BENCHMARKS[name], "mcq")
        t0 = time.perf_counter()
        af = spurious.run(ds, analyses={"aflite": {}}, progress=False)["aflite"]
        af_s = time.perf_counter() - t0
        kept = af.scores.set_index("id").loc[ds.ids, "removed_round"].to_numpy() < 0
        before = option_choice_accuracy(ds, "choices_only", "minilm")
        after = option_choice_accuracy(ds.subset(np.flatnonzero(kept)), "choices_only", "minilm")
        t1 = time.perf_counter()
        quick = get_analysis("cartography").profiles["quick"]
        carto = spurious.run(ds, analyses={"cartography": dict(quick)}, progress=False)
        carto_s = time.perf_counter() - t1
        region = carto["cartography"].scores.set_index("id").loc[ds.ids, "region"].to_numpy()
        longest = get_heuristic("gold_is_longest")().compute(ds) == 1.0
        easy = region == "easy_to_learn"
        table = [[int((easy & longest).sum()), int((easy & ~longest).sum())],
                 [int((~easy & longest).sum()), int((~easy & ~longest).sum())]]  # fmt: skip
        odds, p = fisher_exact(table, alternative="greater")
        row = {
            "n_items": len(ds),
            "aflite_removed_share": float(1 - kept.mean()),
            "aflite_s": round(af_s, 1),
            "choices_only_all": before,
            "choices_only_kept": after,
            "cartography_s": round(carto_s, 1),
            "gold_longest_share_all": float(longest.mean()),
            "gold_longest_share_easy": float(longest[easy].mean()),
            "fisher_odds_ratio": float(odds),
            "fisher_p": float(p),
        }
        out["benchmarks"][name] = row
        print(name, {k: v for k, v in row.items() if not isinstance(v, dict)}, flush=True)
        print(
            "  choices-only beyond chance:", before["beyond_chance"], "->", after["beyond_chance"]
        )
    out["versions"] = dependency_versions()
    atomic_write_json(ROOT / "bench/results/mcq_aflite_cartography.json", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
