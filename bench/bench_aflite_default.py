"""AFLite's default run on a 10k dataset (issue 13 item 10): wall time, per round, before/after.

``spurious aflite ../shared/data/snli/dev.jsonl --task nli`` runs AFLite with its
defaults: MiniLM pair features (1,536 d), m=64 partitions, t=10%, k=2%, tau=0.75, the
batched logistic regression, until tau stops it. This script times that run on SNLI dev
(9,842 pairs) with the features read from the feature cache (encoding is timed apart,
``--encode``) and compares it with the code before the change in the same process:

* **after**: ``AFLite(features=X).run(dataset)``, today's defaults;
* **before**: the same detector with the model family of commit :data:`LEGACY_REV`
  (``git show``: the checkout needs its history, not a shallow clone), which builds its
  pooled start and Hessian preconditioner in every call (every round) and uses torch's
  default intra-op threads: exactly the old code path (the detector hands a start only
  to models that offer one).

Runs are interleaved (after, before, after, before ...); medians are reported. The
before-runs stop after ``--legacy-rounds`` rounds (its rounds cost about the same from
first to last), unless ``--agreement`` is given: then full before and after runs on SNLI
dev and on CAD (``cad_snli/original/train.tsv``, 1,666 pairs) compare which examples are
removed (Jaccard of the removed sets, Spearman of p), next to the same comparisons for
the old code against itself with another seed and with a 10x tighter solver tolerance.

Writes ``bench/results/aflite_default.json`` (agreement numbers of an earlier
``--agreement`` run are kept when it is not given). Usage::

    python bench/bench_aflite_default.py                      # ~3 min on 2 busy cores
    python bench/bench_aflite_default.py --agreement          # + ~20-30 min of full old runs
    python bench/bench_aflite_default.py --encode             # + MiniLM encoding, cold
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from spurious.provenance import cpu_model

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = REPO.parent / "shared" / "data"
SNLI_DEV = DATA / "snli" / "dev.jsonl"
CAD_TRAIN = DATA / "cad_snli" / "original" / "train.tsv"
RESULTS = HERE / "results" / "aflite_default.json"
#: The last commit of ``models/batched.py`` before issue 13 item 10 (per-call start).
LEGACY_REV = "7ec22ed"
#: One after/before pair on SNLI dev's first 500 pairs, the before-run stopped after a round.
SMOKE_ARGS = ["--repeats", "1", "--legacy-rounds", "1", "--rows", "500"]

#: Where the time went before the change (cProfile of the default run on SNLI dev,
#: 2 rounds, this machine at load ~5; measured once while making the change, not re-run).
PROFILE_BEFORE = {
    "torch_default_threads_2": {
        "seconds_per_round": 30.2,
        "shared_start (pooled fit + Hessian preconditioner, every round)": "40%: 12.2 s "
        "per round; Hessian GEMMs (3 blocks x 8,192 rows x 1,537^2, plus a 9,842-row "
        "covariance for the pooled fit's own preconditioner) 7.9 s, two Cholesky + "
        "triangular inverses of a 3,074^2 float64 matrix 3.1 s",
        "classifier L-BFGS": "60%: 18.3 s per round; gradient GEMMs 6.6 s, change of "
        "variables by the (3,074 x 3,074) float64 preconditioner 2.0 s, bookkeeping "
        "(two-loop recursion, dot products, masks) 9.6 s: hundreds of small float64 ops "
        "per iteration, each split over 2 OpenMP threads that wait for each other on a "
        "busy machine",
    },
    "one_thread": {
        "seconds_per_round": 10.9,
        "shared_start": "79%: 8.6 s",
        "classifier L-BFGS": "2.2 s: preconditioner products 1.0 s, GEMMs 1.0 s",
    },
    "changes": [
        "shared start built once per run on D (SharedStart), not once per round",
        "L-BFGS with H0 = H^-1 (one float32 product per iteration) instead of two "
        "float64 changes of variables per evaluation",
        "small groups run in parallel on worker threads with one intra-op thread each",
        "Hessian estimate on max(4096, ...) rows instead of max(8192, ...); pooled fit's "
        "covariance on <= 4096 rows",
    ],
}


def git_checkout() -> Path:
    """This checkout, or, where ``bench/`` was copied out of it (the smoke test does), the
    checkout the imported ``spurious`` package comes from (an editable install)."""
    import spurious

    for folder in (REPO, Path(spurious.__file__).resolve().parent):
        probe = ["git", "rev-parse", "--git-dir"]
        if subprocess.run(probe, cwd=folder, capture_output=True, check=False).returncode == 0:
            return folder
    return REPO


def legacy_model_class() -> type:
    """``BatchedLogisticRegression`` as of :data:`LEGACY_REV`, loaded from git."""
    shown = subprocess.run(
        ["git", "show", f"{LEGACY_REV}:src/spurious/models/batched.py"],
        cwd=git_checkout(),
        check=False,
        capture_output=True,
        text=True,
    )
    if shown.returncode != 0:  # a shallow clone, or no checkout at all
        raise SystemExit(
            f"The 'before' runs load the solver of commit {LEGACY_REV} from git, which this "
            f"checkout ({git_checkout()}) does not have ({shown.stderr.strip().rstrip('.')}). "
            "Run `git fetch --unshallow` (or clone without --depth) and try again."
        )
    source = shown.stdout
    path = Path(tempfile.mkdtemp()) / "batched_legacy.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("batched_legacy", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["batched_legacy"] = module
    spec.loader.exec_module(module)
    return module.BatchedLogisticRegression


class RoundClock(logging.Handler):
    """Timestamps of the detector's one INFO line per round."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.marks: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("aflite round "):
            self.marks.append(time.perf_counter())


def load(path: Path, rows: int | None = None) -> tuple[Any, np.ndarray, float]:
    """Dataset (its first ``rows``, default all) and its MiniLM pair features (the run's own
    featurizer and cache)."""
    from spurious import load_dataset
    from spurious.features import make_featurizer

    ds = load_dataset(str(path), "nli")
    if rows is not None and rows < len(ds):
        ds = ds.subset(np.arange(rows), f"{ds.name}[:{rows}]")
    t0 = time.perf_counter()
    X = make_featurizer("minilm").transform(ds, "full")
    return ds, X, time.perf_counter() - t0


def run_aflite(ds: Any, X: np.ndarray, legacy: type | None, **params: Any) -> dict[str, Any]:
    """One AFLite run with the default parameters (plus ``params``)."""
    from spurious.detectors.aflite import AFLite

    if legacy is not None:
        params["model"] = legacy()
    clock = RoundClock()
    log = logging.getLogger("spurious.detectors.aflite")
    log.addHandler(clock)
    log.setLevel(logging.INFO)
    try:
        t0 = time.perf_counter()
        res = AFLite(features=X, **params).run(ds)
        wall = time.perf_counter() - t0
    finally:
        log.removeHandler(clock)
    rounds = np.diff([t0, *clock.marks]).round(3).tolist()
    return {
        "wall_s": round(wall, 2),
        "n_rounds": int(res.metrics["n_rounds"]),
        "n_final": int(res.metrics["n_final"]),
        "stop": res.details["stop_reason"],
        "round_s": rounds,
        "first_round_s": rounds[0] if rounds else None,
        "median_later_round_s": round(statistics.median(rounds[1:]), 3)
        if len(rounds) > 1
        else None,
        "scores": res.scores,
    }


def agreement(a: Any, b: Any) -> dict[str, Any]:
    """Removed sets and predictability of two runs on the same data (scores frames)."""
    from scipy.stats import spearmanr

    a = a.set_index("id")
    b = b.set_index("id").loc[a.index]
    ra, rb = a["is_aflite_issue"].to_numpy(), b["is_aflite_issue"].to_numpy()
    union = int((ra | rb).sum())
    r1a, r1b = a["removed_round"].to_numpy() == 1, b["removed_round"].to_numpy() == 1
    return {
        "n_removed": [int(ra.sum()), int(rb.sum())],
        "n_rounds": [int(a["removed_round"].max()), int(b["removed_round"].max())],
        "jaccard_removed": round(int((ra & rb).sum()) / union, 4) if union else 1.0,
        "jaccard_removed_round_1": round(int((r1a & r1b).sum()) / int((r1a | r1b).sum()), 4),
        "spearman_p_round_1": round(float(spearmanr(a["p_round_1"], b["p_round_1"])[0]), 4),
        "identical_p_round_1": round(float((a["p_round_1"] == b["p_round_1"]).mean()), 4),
        "spearman_final_p": round(
            float(spearmanr(a["aflite_score"], b["aflite_score"], nan_policy="omit")[0]), 4
        ),
    }


def strip(run: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in run.items() if k != "scores"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=2, help="interleaved after/before pairs")
    ap.add_argument("--legacy-rounds", type=int, default=3, help="rounds of each before-run")
    ap.add_argument("--agreement", action="store_true", help="full before-runs, SNLI + CAD")
    ap.add_argument("--encode", action="store_true", help="also time MiniLM encoding, cold")
    ap.add_argument(
        "--rows", type=int, default=None, help="only the first ROWS pairs of each dataset"
    )
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    legacy = legacy_model_class()
    out: dict[str, Any] = {
        "what": "AFLite default run (MiniLM pair features, m=64, t=10%, k=2%, tau=0.75, "
        "batched logistic regression, until tau) on SNLI dev; before = model family of "
        f"commit {LEGACY_REV} (per-call start, torch default threads), same detector",
        "command": "python bench/bench_aflite_default.py"
        + (" --agreement" * args.agreement)
        + (f" --rows {args.rows}" if args.rows else ""),
        "profile_before": PROFILE_BEFORE,
        "machine": {
            "cpu": cpu_model(),
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "load_avg_start": [round(x, 2) for x in os.getloadavg()],
            "python": platform.python_version(),
            "torch": torch.__version__,
        },
    }
    ds, X, t_feat = load(SNLI_DEV, args.rows)
    out["dataset"] = {"path": "snli/dev.jsonl", "n": len(ds), "features_shape": list(X.shape)}
    out["features_from_cache_s"] = round(t_feat, 2)
    if args.encode:
        from spurious.features.encoder import EncoderFeaturizer

        t0 = time.perf_counter()
        EncoderFeaturizer(cache_dir=False).transform(ds, "full")
        out["encode_cold_s"] = round(time.perf_counter() - t0, 1)

    after, before = [], []
    for rep in range(args.repeats):
        after.append(run_aflite(ds, X, None))
        print(f"[{rep}] after: {strip(after[-1])['wall_s']} s", flush=True)
        before.append(run_aflite(ds, X, legacy, max_rounds=args.legacy_rounds))
        print(f"[{rep}] before ({args.legacy_rounds} rounds): {before[-1]['wall_s']} s", flush=True)
    med = statistics.median
    after_round = med([r["median_later_round_s"] for r in after])
    after_first = med([r["first_round_s"] for r in after])
    before_round = med([med(r["round_s"]) for r in before])
    n_rounds = after[0]["n_rounds"]
    out["after"] = {
        "runs": [strip(r) for r in after],
        "median_wall_s": med([r["wall_s"] for r in after]),
        "median_first_round_s": after_first,
        "median_round_s": after_round,
    }
    out["before"] = {
        "runs": [strip(r) for r in before],
        "median_round_s": before_round,
        "estimated_full_run_s": round(before_round * n_rounds, 1),
        "note": f"first {args.legacy_rounds} rounds timed; a full run has the same "
        f"{n_rounds} rounds (every round builds its own start, so rounds cost alike)",
    }
    out["speedup"] = {
        "per_round_median": round(before_round / after_round, 1),
        "full_run_estimated": round(before_round * n_rounds / out["after"]["median_wall_s"], 1),
    }
    out["machine"]["load_avg_end"] = [round(x, 2) for x in os.getloadavg()]

    if args.agreement:
        agree: dict[str, Any] = {
            "how": "full runs with default parameters on each dataset: after (this code) vs "
            f"before (model of {LEGACY_REV}); references: before with random_state=1, and "
            "before with BatchedLogisticRegression(tol=1e-5). Jaccard of the removed sets; "
            "Spearman of p in round 1 (same partitions) and of the last p of each example.",
            "command": "python bench/bench_aflite_default.py --agreement",
        }
        for name, path in (("snli_dev", SNLI_DEV), ("cad_train", CAD_TRAIN)):
            d, Xd, _ = load(path, args.rows) if path != SNLI_DEV else (ds, X, 0.0)
            new = after[0] if path == SNLI_DEV else run_aflite(d, Xd, None)
            old = run_aflite(d, Xd, legacy)
            old_seed = run_aflite(d, Xd, legacy, random_state=1)
            old_tol = run_aflite(d, Xd, None, model=legacy(tol=1e-5))
            agree[name] = {
                "after_vs_before": agreement(old["scores"], new["scores"]),
                "reference_before_seed_0_vs_seed_1": agreement(old["scores"], old_seed["scores"]),
                "reference_before_tol_1e-4_vs_1e-5": agreement(old["scores"], old_tol["scores"]),
                "before_wall_s": old["wall_s"],
                "after_wall_s": new["wall_s"],
            }
            print(name, json.dumps(agree[name]["after_vs_before"]), flush=True)
        out["agreement"] = agree
    elif RESULTS.is_file():
        previous = json.loads(RESULTS.read_text(encoding="utf-8"))
        if "agreement" in previous:
            out["agreement"] = previous["agreement"]
            out["agreement_note"] = "from an earlier --agreement run (kept)"
        if "encode_cold_s" in previous and "encode_cold_s" not in out:
            out["encode_cold_s"] = previous["encode_cold_s"]
            out["encode_note"] = "from an earlier --encode run (kept)"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: out[k] for k in ("after", "before", "speedup")}, indent=1)[:3000])


if __name__ == "__main__":
    main()
