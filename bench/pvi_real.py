"""PVI (Ethayarajh et al. 2022) on SNLI: V-information per condition and its agreement with
the partial-input leakage score (README "PVI and the canary").

Settings (SNLI train, 550k rows, is not on these machines, so both run at the ~10k scale
of ../shared/data):

- ``snli_oof``: SNLI dev (9,842), 5-fold out-of-fold, folds grouped by premise;
- ``snli_test_dev``: train on SNLI test_tokenized (9,824), evaluate on SNLI dev.

For each representation (tf-idf and MiniLM probes), ``partial_input`` runs first and
``pvi`` reuses its probabilities; the time of each is recorded. Agreement: Spearman of
hypothesis-only PVI with ``partial_input_score`` of the same probe (PVI is
log2 p_gold - log2 prior(y), so within a label the ranks agree by construction; across
labels the prior differs) and of the other representation's probe (a real comparison).

Writes ``bench/results/pvi_real.json``. Usage::

    python bench/pvi_real.py [--features tfidf minilm] [--only snli_oof snli_test_dev]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from spurious import load_dataset
from spurious.context import RunContext
from spurious.detectors.partial_input import PartialInput
from spurious.detectors.pvi import PVI
from spurious.provenance import dependency_versions
from spurious.utils.io import atomic_write_json, read_json

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
#: The train -> eval setting only, both representations (and their agreement).
SMOKE_ARGS = ["--only", "snli_test_dev"]


def settings():
    dev = lambda: load_dataset(DATA / "snli/dev.jsonl", "nli", name="snli-dev")  # noqa: E731
    return {
        "snli_oof": lambda: (dev(), None),
        "snli_test_dev": lambda: (
            load_dataset(DATA / "snli/test_tokenized.jsonl", "nli", name="snli-test"),
            dev(),
        ),
    }


def one(train, ev, features: str) -> tuple[dict, dict]:
    ctx = RunContext(train, ev, progress=False)
    t0, c0 = time.perf_counter(), time.process_time()
    pi = PartialInput(features=features, n_resamples=1000).run(context=ctx)
    t1, c1 = time.perf_counter(), time.process_time()
    ctx.results["partial_input"] = pi
    pvi = PVI(features=features, n_resamples=1000).run(context=ctx)
    t2, c2 = time.perf_counter(), time.process_time()
    assert pvi.details["reused_partial_input"]
    m = pvi.metrics
    out = {
        "features": features,
        "n_train": len(train),
        "n_eval": len(ev if ev is not None else train),
        "mode": pvi.details["mode"],
        "v_info": {
            c: [m[f"v_info_{c}"], m[f"v_info_{c}_ci_low"], m[f"v_info_{c}_ci_high"]]
            for c in pvi.details["conditions"]
        },
        "share_negative": {c: m[f"share_negative_{c}"] for c in pvi.details["conditions"]},
        "label_entropy": m["label_entropy"],
        "per_label_mean": {
            c: {k: v["mean"] for k, v in by.items()} for c, by in pvi.details["per_label"].items()
        },
        "accuracy": {c: pi.metrics[f"accuracy_{c}"] for c in pvi.details["conditions"]},
        "spearman_same_probe": m.get("spearman_partial_input"),
        "headline": pvi.headline,
        "seconds": {
            "partial_input_wall": round(t1 - t0, 2),
            "partial_input_cpu": round(c1 - c0, 2),
            "pvi_given_probabilities_wall": round(t2 - t1, 2),
            "pvi_given_probabilities_cpu": round(c2 - c1, 2),
        },
        "lowest_full": pvi.details["examples"]["full"]["lowest"][:5],
        "highest_hypothesis_only": pvi.details["examples"]["hypothesis_only"]["highest"][:5],
    }
    scores = {
        "pvi_hyp": pvi.scores["pvi_hypothesis_only"].to_numpy(),
        "leak": pi.scores["partial_input_score"].to_numpy(),
        "p_gold_hyp": pi.scores["p_gold_hypothesis_only"].to_numpy(),
    }
    return out, scores


def _jaccard_top(a: np.ndarray, b: np.ndarray, share: float) -> float:
    """Overlap of the two scores' top ``share`` of examples (|A & B| / |A | B|)."""
    k = max(1, round(share * len(a)))
    top_a = set(np.argsort(-a, kind="stable")[:k].tolist())
    top_b = set(np.argsort(-b, kind="stable")[:k].tolist())
    return len(top_a & top_b) / len(top_a | top_b)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--features", nargs="+", default=["tfidf", "minilm"])
    ap.add_argument("--only", nargs="+", default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/pvi_real.json")
    args = ap.parse_args()
    if not DATA.exists():
        print(f"needs {DATA}", file=sys.stderr)
        return 1
    results = read_json(args.out) if args.out.exists() else {}
    results.setdefault("runs", {})
    for name, make in settings().items():
        if args.only and name not in args.only:
            continue
        train, ev = make()
        scores = {}
        for features in args.features:
            out, scores[features] = one(train, ev, features)
            results["runs"][f"{name}/{features}"] = out
            print(name, features, {c: round(v[0], 3) for c, v in out["v_info"].items()},
                  out["seconds"], flush=True)  # fmt: skip
        if len(scores) == 2:
            a, b = args.features
            results["runs"][f"{name}/agreement"] = {
                f"spearman_pvi_hyp_{a}_vs_leak_{b}": float(
                    spearmanr(scores[a]["pvi_hyp"], scores[b]["leak"])[0]
                ),
                f"spearman_pvi_hyp_{b}_vs_leak_{a}": float(
                    spearmanr(scores[b]["pvi_hyp"], scores[a]["leak"])[0]
                ),
                f"spearman_pvi_hyp_{a}_vs_pvi_hyp_{b}": float(
                    spearmanr(scores[a]["pvi_hyp"], scores[b]["pvi_hyp"])[0]
                ),
                "jaccard_top10pct_pvi_hyp": _jaccard_top(
                    scores[a]["pvi_hyp"], scores[b]["pvi_hyp"], 0.1
                ),
            }
        atomic_write_json(args.out, results)
    results["versions"] = dependency_versions()
    results["command"] = "python bench/pvi_real.py " + " ".join(sys.argv[1:])
    # The CPU is in "versions"; the load says whether the wall times are comparable.
    results["machine"] = {"load_avg_at_end": os.getloadavg(), "cpus": os.cpu_count()}
    atomic_write_json(args.out, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
