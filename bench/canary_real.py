"""The canary on real data (README "PVI and the canary"): from which planted strength does
each analysis see a shortcut in SNLI dev, MNLI dev-matched and SST-2 dev?

Each setting plants the default shortcuts of its task (a made-up token in the last field,
a token in the other field only, a length cue, an overlap cue; one-field tasks: token and
length) into ``rates`` of one label's examples and runs the chosen analyses (default:
those of ``atlas``, ``partial_input`` and ``pvi`` that are registered, with the quick
profile's parameters, except 3 folds instead of 5 for partial_input and pvi: ``--folds``) on every copy. ``background="shuffled"`` plants into the same texts
with permuted labels (the unplanted copy is clean, so every dataset-level detection is
decided); ``"own"`` plants into the data as they are (analyses that already flag the real
data can only escalate; the example-level precision/recall is the informative part).

Writes ``bench/results/canary_<setting>.json`` (the table, thresholds, sentences and the
time each part took) and ``bench/results/canary_<setting>.parquet`` (every row). Usage::

    python bench/canary_real.py [--only snli_shuffled snli_own mnli_shuffled ...]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from spurious import load_dataset
from spurious.analysis import load_analyses
from spurious.canary import DEFAULT_RATES, run_canary
from spurious.provenance import cpu_model, dependency_versions
from spurious.utils.io import atomic_path, atomic_write_json

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
WANTED = ("atlas", "associations", "heuristic_association", "partial_input", "pvi")
#: One setting: a token planted in 2% and 20% of SNLI dev's neutral pairs, quick profile.
SMOKE_ARGS = ["--only", "snli_own"]


def settings() -> dict[str, dict]:
    snli = lambda: load_dataset(DATA / "snli/dev.jsonl", "nli", name="snli-dev")  # noqa: E731
    mnli = lambda: load_dataset(DATA / "mnli/dev_matched.jsonl", "nli", name="mnli-dev-m")  # noqa: E731
    sst2 = lambda: load_dataset(DATA / "sst2/dev.tsv", "text", name="sst2-dev")  # noqa: E731
    # The token in the last field gets the full grid of rates; the other plants two rates
    # (every copy costs a full audit of the data set).
    nli = [
        {"kind": "token", "field": "hypothesis"},
        {"kind": "token", "field": "premise", "rates": (0.02, 0.2)},
        {"kind": "length", "field": "hypothesis", "rates": (0.02, 0.2)},
        {"kind": "overlap", "field": "hypothesis", "rates": (0.02, 0.2)},
    ]
    short = [{"kind": "token", "field": "hypothesis"}, {**nli[2], "rates": (0.2,)}]
    text = [
        {"kind": "token", "field": "text"},
        {"kind": "length", "field": "text", "rates": (0.2,)},
    ]
    arc = lambda: load_dataset(DATA / "mcq/arc_challenge/test.jsonl", "mcq", name="arc-test")  # noqa: E731
    mmlu = lambda: load_dataset(DATA / "mcq/mmlu/test", "mcq", name="mmlu-test")  # noqa: E731
    # Multiple choice: a token or a length cue in the gold option of a share of items
    # (any letter), seen by the model-free cues and the choices-only probe.
    mcq = [{"kind": "token", "field": "options"}, {"kind": "length", "field": "options"}]
    mcq_analyses = {"mc_cues": {}, "mc_leakage": {"features": "lexical"}}
    return {
        "arc_shuffled": {
            "data": arc,
            "background": "shuffled",
            "plants": mcq,
            "analyses": mcq_analyses,
            "label": None,
        },
        "arc_own": {
            "data": arc,
            "background": "own",
            "plants": mcq,
            "analyses": mcq_analyses,
            "label": None,
        },
        "mmlu_shuffled": {
            "data": mmlu,
            "background": "shuffled",
            "plants": mcq,
            "analyses": mcq_analyses,
            "label": None,
        },
        "snli_shuffled": {"data": snli, "background": "shuffled", "plants": nli},
        "snli_own": {
            "data": snli,
            "background": "own",
            "plants": [{"kind": "token", "field": "hypothesis", "rates": (0.02, 0.2)}],
        },
        "mnli_shuffled": {"data": mnli, "background": "shuffled", "plants": short},
        "sst2_shuffled": {"data": sst2, "background": "shuffled", "plants": text},
        "snli_shuffled_r3": {
            "data": snli,
            "background": "shuffled",
            "plants": [{"kind": "token", "field": "hypothesis"}],
            "repeats": 3,
        },
        "snli_shuffled_n2000": {
            "data": snli,
            "background": "shuffled",
            "plants": short,
            "sizes": (2000,),
        },
        # For the analyses that take minutes per copy (run with --analyses aflite
        # cartography minority peco): one token plant at two rates on 2,000 pairs.
        "snli_slow_n2000": {
            "data": snli,
            "background": "shuffled",
            "plants": [{"kind": "token", "field": "hypothesis", "rates": (0.05, 0.2)}],
            "sizes": (2000,),
        },
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="+", default=None)
    ap.add_argument("--analyses", nargs="+", default=None)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument(
        "--folds",
        type=int,
        default=3,
        help="n_folds of partial_input and pvi (the quick audit uses 5; 3 fits 40%% less "
        "on a 2-core machine)",
    )
    args = ap.parse_args()
    if not DATA.exists():
        print(f"needs {DATA}", file=sys.stderr)
        return 1
    registered = load_analyses().names()
    names = args.analyses or [a for a in WANTED if a in registered]
    folds = {"n_folds": args.folds}
    analyses = {a: (folds if a in ("partial_input", "pvi") else {}) for a in names}
    for name, s in settings().items():
        if args.only and name not in args.only:
            continue
        t0, load_start = time.perf_counter(), os.getloadavg()
        data = s["data"]()
        result = run_canary(
            data,
            analyses=s.get("analyses", analyses),
            profile="quick",
            plants=s["plants"],
            rates=DEFAULT_RATES,
            sizes=s.get("sizes"),
            n_repeats=s.get("repeats", args.repeats),
            label=s.get("label", "neutral") if s["plants"][0]["field"] != "text" else None,
            background=s["background"],
            random_state=0,
            progress=lambda line, name=name: print(f"{name}: {line}", flush=True),
        )
        out = result.to_json()
        out["setting"] = name
        out["data"] = {"name": data.name, "n": len(data), "task": data.task.name}
        out["seconds_wall"] = round(time.perf_counter() - t0, 1)
        out["seconds_per_analysis"] = (
            result.rows.groupby("analysis")["seconds"]
            .agg(["mean", "sum"])
            .round(2)
            .to_dict("index")
        )
        out["versions"] = dependency_versions()
        out["command"] = f"python bench/canary_real.py --only {name} --folds {args.folds}" + (
            f" --analyses {' '.join(args.analyses)}" if args.analyses else ""
        )
        # Measured, not described: wall times only compare at a similar load.
        out["machine"] = {
            "cpu": cpu_model(),
            "cpus": os.cpu_count(),
            "load_avg_1min": [round(load_start[0], 2), round(os.getloadavg()[0], 2)],
        }
        atomic_write_json(ROOT / f"bench/results/canary_{name}.json", out)
        with atomic_path(ROOT / f"bench/results/canary_{name}.parquet") as tmp:
            result.rows.to_parquet(tmp, index=False)
        print(result.format_table(), flush=True)
        print("\n".join(result.sentences()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
