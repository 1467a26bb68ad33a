"""Out-of-fold partial-input leakage at scale (issue 14, item 11): growth curve, old vs new.

Rows: "SNLI-like" pairs made by resampling the real SNLI sentences in ../shared/data
(dev + test_tokenized): each new premise group is one real premise drawn with
replacement, with three hypotheses, one per label, each drawn from the real hypotheses of
that label, and its own ``group`` key (so folds keep a group together, as the premise
grouping does on real SNLI). Hypothesis artifacts survive the resampling; the premise
carries no label information. No SNLI train split is available offline.

Threads: ``--torch-threads`` (default 1) sets PyTorch's intra-op threads in every timed
process, old and new alike. This machine's 2 cores are shared with other jobs (load 5-9
while measuring), and under that oversubscription the probe's many tiny OpenMP-parallel
ops wait on each other: one L-BFGS fit on 20k rows took 31 s with 2 threads, 2.3 s
with 1.

For each size the *new* path (``PartialInput`` as shipped: folds once, one tokenisation
per text block, fold x condition tasks, count bootstrap) is timed in a fresh process
that reports its wall time and peak RSS; at the sizes where it finishes in time the *old*
path (a faithful copy of the code before this change, :func:`legacy_partial_input`) is
timed the same way. Both run in this one script, one after the other, so the ratios are
comparable on a shared machine. ``--agreement`` compares the metrics of both paths on the
real SNLI data (dev out-of-fold; train test_tokenized -> evaluate dev).

Usage::

    python bench/bench_leakage_scale.py --sizes 10000 100000 1000000 --old-sizes 10000 100000
    python bench/bench_leakage_scale.py --agreement
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing as mp
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "snli"
OUT = ROOT / "bench" / "results" / "leakage_scale.json"
#: Smoke run: both paths at 1,000 SNLI-like rows and the bag-of-words agreement.
SMOKE_ARGS = ["--sizes", "1000", "--old-sizes", "1000", "--agreement", "--agreement-features",
              "bow", "--timeout", "300"]  # fmt: skip
LABELS = ("entailment", "neutral", "contradiction")


def snli_like(n: int, random_state: int = 0):
    """``n`` SNLI-like pairs resampled from the real SNLI sentences (see module doc)."""
    from spurious.data import Dataset

    rows = []
    for name in ("dev.jsonl", "test_tokenized.jsonl"):
        with open(DATA / name) as fh:
            rows += [json.loads(line) for line in fh]
    real = pd.DataFrame(rows)
    real = real[real["label"].isin(LABELS)]
    premises = real["premise"].unique()
    rng = np.random.default_rng(random_state)
    n_groups = -(-n // 3)
    prem = premises[rng.integers(0, len(premises), n_groups)]
    hyps = np.stack(
        [
            (pool := real.loc[real["label"] == lab, "hypothesis"].to_numpy())[
                rng.integers(0, len(pool), n_groups)
            ]
            for lab in LABELS
        ],
        axis=1,
    )
    frame = pd.DataFrame(
        {
            "id": [f"s{i:07d}" for i in range(3 * n_groups)],
            "premise": np.repeat(prem, 3),
            "hypothesis": hyps.ravel(),
            "label": np.tile(LABELS, n_groups),
            "group": np.repeat(np.arange(n_groups), 3),
        }
    ).iloc[:n]
    return Dataset.from_frame(frame.reset_index(drop=True), "nli", name=f"snli-like-{n}")


# ---------------------------------------------------------------------------------------
# The path before this change, kept verbatim in behaviour: folds recomputed per
# condition, the featurizer refitted (every text tokenised again) per fold, and
# scipy.stats.bootstrap over the examples for every interval.
# ---------------------------------------------------------------------------------------
def _legacy_metrics(y, preds, majority, *, n_resamples, confidence, random_state):
    from spurious.stats.bootstrap import bootstrap_interval, safe_ratio

    boot = dict(n_resamples=n_resamples, confidence=confidence, random_state=random_state)
    c_full = (np.asarray(preds["full"]) == y).astype(float)
    maj = (y == majority).astype(float)
    out: dict[str, float] = {}

    def put(name, fn, arrays):
        est, lo, hi = bootstrap_interval(fn, arrays, **boot)
        out[name], out[f"{name}_ci_low"], out[f"{name}_ci_high"] = est, lo, hi

    put("accuracy_full", lambda c, axis=-1: np.mean(c, axis=axis), [c_full])
    put("majority_accuracy", lambda c, axis=-1: np.mean(c, axis=axis), [maj])
    for c in [c for c in preds if c != "full"]:
        p = np.asarray(preds[c])
        c_ssc = (p == y).astype(float)
        agree = (p == np.asarray(preds["full"])).astype(float)
        put(f"accuracy_{c}", lambda a, axis=-1: np.mean(a, axis=axis), [c_ssc])
        put(
            f"delta_maj_{c}",
            lambda a, m, axis=-1: np.mean(a, axis=axis) - np.mean(m, axis=axis),
            [c_ssc, maj],
        )
        put(
            f"recovery_{c}",
            lambda a, b, axis=-1: safe_ratio(np.mean(a, axis=axis), np.mean(b, axis=axis)),
            [c_ssc, c_full],
        )
        put(f"nba_{c}", lambda a, axis=-1: np.mean(a, axis=axis), [agree])
        put(
            f"nbr_{c}",
            lambda a, ac, axis=-1: safe_ratio(np.mean(ac, axis=axis), np.mean(a, axis=axis)),
            [agree, agree * c_ssc],
        )
    return out


def legacy_partial_input(train, eval=None, *, features="tfidf", n_folds=5, n_resamples=1000,
                         random_state=0, progress=False):  # fmt: skip
    """Metrics and out-of-fold probabilities exactly as the detector computed them before."""
    from spurious.context import RunContext
    from spurious.detectors.partial_input import _fit_predict
    from spurious.features import make_featurizer
    from spurious.views import standard_views

    ctx = RunContext(train, eval, progress=progress)
    views = [standard_views(train.task)["full"]]
    views += [v for v in standard_views(train.task).values() if v.is_partial]
    probas = {}
    for view in views:
        if eval is not None:
            X_tr = ctx.features(features, view.name, split="train")
            X_ev = ctx.features(features, view.name, split="eval")
            probas[view.name] = _fit_predict(
                "logistic", random_state, X_tr, train.labels, X_ev, train.n_classes
            )
            continue
        y, groups = train.labels, train.group_keys("auto")
        if groups is not None and len(set(groups)) < len(y):
            sp = StratifiedGroupKFold(n_folds, shuffle=True, random_state=random_state)
            folds = sp.split(np.zeros(len(y)), y, groups=groups)
        else:
            sp = StratifiedKFold(n_folds, shuffle=True, random_state=random_state)
            folds = sp.split(np.zeros(len(y)), y)
        featurizer = make_featurizer(features)
        X_all = ctx.features(features, view.name) if featurizer.stateless else None
        proba = np.zeros((len(train), train.n_classes))
        for tr, te in folds:
            if X_all is not None:
                proba[te] = _fit_predict(
                    "logistic", random_state, X_all[tr], y[tr], X_all[te], train.n_classes
                )
                continue
            a, b = train.subset(tr), train.subset(te)
            feat = clone(featurizer)
            proba[te] = _fit_predict(
                "logistic", random_state, feat.fit_transform(a, view), a.labels,
                feat.transform(b, view), train.n_classes,
            )  # fmt: skip
        probas[view.name] = proba
    target = eval if eval is not None else train
    preds = {c: p.argmax(axis=1) for c, p in probas.items()}
    majority = int(np.argmax(np.bincount(train.labels, minlength=train.n_classes)))
    metrics = _legacy_metrics(
        target.labels, preds, majority, n_resamples=n_resamples, confidence=0.95,
        random_state=random_state,
    )  # fmt: skip
    return metrics, probas


def new_partial_input(train, eval=None, *, features="tfidf", n_folds=5, n_resamples=1000,
                      random_state=0, executor="local", progress=False,
                      timings=None):  # fmt: skip
    """Metrics and out-of-fold probabilities from the detector as shipped (``timings``:
    seconds spent on each shared input: folds, token counts)."""
    from spurious.context import RunContext
    from spurious.detectors import PartialInput

    ctx = RunContext(train, eval, progress=progress)
    res = PartialInput(
        features=features, n_folds=n_folds, n_resamples=n_resamples,
        random_state=random_state, executor=executor,
    ).run(context=ctx)  # fmt: skip
    if timings is not None:
        timings.update(ctx.timings)
    probas = {
        c: res.scores[f"p_gold_{c}"].to_numpy() for c in ("full", "premise_only", "hypothesis_only")
    }
    return res.metrics, probas


# ---------------------------------------------------------------------------------------
# Timing in a fresh process: wall time and peak RSS of one run.
# ---------------------------------------------------------------------------------------
def _child(path: str, n: int, features: str, threads: int, executor: str, conn) -> None:
    import logging

    import torch

    if threads:
        torch.set_num_threads(threads)
    logging.basicConfig(level=logging.INFO, format="  [%(asctime)s] %(message)s")
    t0 = time.perf_counter()
    data = snli_like(n)
    t_data = time.perf_counter() - t0
    t0 = time.perf_counter()
    shared: dict[str, float] = {}
    if path == "new":
        from spurious.execution import make_executor

        # Ray: two single-threaded workers on this machine's two cores.
        ex = make_executor(executor, **({"num_cpus": 2} if executor == "ray" else {}))
        metrics, _ = new_partial_input(data, features=features, timings=shared, executor=ex)
        ex.close()
    else:
        metrics, _ = legacy_partial_input(data, features=features)
    wall = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    keys = ("accuracy_full", "accuracy_hypothesis_only", "accuracy_premise_only",
            "delta_maj_hypothesis_only", "majority_accuracy")  # fmt: skip
    conn.send({"wall_s": round(wall, 2), "data_s": round(t_data, 2),
               "peak_rss_gib": round(rss, 3), "shared_inputs_s": shared,
               "metrics": {k: metrics[k] for k in keys}})  # fmt: skip


def _tree_pss_gib(pid: int) -> float:
    """Proportional set size of a process and its descendants (Ray workers, object store):
    shared pages counted once across the tree."""
    import psutil

    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0.0
    total = 0
    for proc in procs:
        with contextlib.suppress(psutil.Error):  # a worker may exit between the calls
            total += proc.memory_full_info().pss
    return total / 2**30


def timed(
    path: str, n: int, features: str, timeout_s: float, threads: int, executor: str = "local"
) -> dict[str, Any]:
    """Run one path at one size in a fresh process; ``timed_out`` past ``timeout_s``,
    ``exit_code`` when the process died without a result."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(path, n, features, threads, executor, child))
    t0, load0 = time.perf_counter(), os.getloadavg()[0]
    proc.start()
    peak_tree, out, died = 0.0, None, False
    while time.perf_counter() - t0 < timeout_s:
        peak_tree = max(peak_tree, _tree_pss_gib(proc.pid))
        alive = proc.is_alive()
        if parent.poll(2.0):
            out = parent.recv()
            break
        if not alive:  # died (an error, killed for memory): no result will come
            died = True
            break
    head = {"path": path, "n": n, "features": features, "torch_threads": threads,
            "executor": executor if path == "new" else "local",
            "load_avg_1min": [round(load0, 2), round(os.getloadavg()[0], 2)]}  # fmt: skip
    if out is not None:
        proc.join()
        return {**head, **out, "peak_tree_pss_gib": round(peak_tree, 3)}
    proc.kill()
    proc.join()
    if died:
        return {**head, "exit_code": proc.exitcode, "wall_s": round(time.perf_counter() - t0, 1)}
    return {**head, "timed_out": True, "wall_s": round(time.perf_counter() - t0, 1),
            "limit_s": timeout_s, "peak_tree_pss_gib": round(peak_tree, 3)}  # fmt: skip


def agreement(features_list: list[str], n_resamples: int) -> dict[str, Any]:
    """Old vs new metrics on the real SNLI data (dev OOF; test_tokenized -> dev)."""
    from spurious import load_dataset

    dev = load_dataset(DATA / "dev.jsonl", "nli", name="snli-dev")
    test = load_dataset(DATA / "test_tokenized.jsonl", "nli", name="snli-test")
    out = {}
    for feats in features_list:
        for setting, (tr, ev) in {"dev_oof": (dev, None), "test_to_dev": (test, dev)}.items():
            t0 = time.perf_counter()
            old, p_old = legacy_partial_input(tr, ev, features=feats, n_resamples=n_resamples)
            t_old = time.perf_counter() - t0
            t0 = time.perf_counter()
            new, p_new = new_partial_input(tr, ev, features=feats, n_resamples=n_resamples)
            t_new = time.perf_counter() - t0
            target = ev if ev is not None else tr
            rows = np.arange(len(target))
            same_proba = all(np.array_equal(p_old[c][rows, target.labels], p_new[c]) for c in p_new)
            table = {}
            for k in sorted(k for k in old if not k.endswith(("_ci_low", "_ci_high"))):
                table[k] = {
                    "old": old[k], "old_ci": [old[f"{k}_ci_low"], old[f"{k}_ci_high"]],
                    "new": new[k], "new_ci": [new[f"{k}_ci_low"], new[f"{k}_ci_high"]],
                    "new_within_old_ci": bool(old[f"{k}_ci_low"] <= new[k] <= old[f"{k}_ci_high"]),
                }  # fmt: skip
            out[f"{setting}/{feats}"] = {
                "identical_probabilities": bool(same_proba),
                "old_s": round(t_old, 2), "new_s": round(t_new, 2), "metrics": table,
            }  # fmt: skip
            worst = max(
                abs(v["new_ci"][i] - v["old_ci"][i]) for v in table.values() for i in (0, 1)
                if np.isfinite(v["new_ci"][i]) and np.isfinite(v["old_ci"][i])
            )  # fmt: skip
            print(f"{setting:12s} {feats:6s} identical p={same_proba} all-in-CI="
                  f"{all(v['new_within_old_ci'] for v in table.values())} "
                  f"max |CI bound diff|={worst:.4f} old {t_old:.1f}s new {t_new:.1f}s",
                  flush=True)  # fmt: skip
    return out


def against_previous(previous: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """This run's real-data metrics against the last recorded run of this bench (another
    commit): the largest change, and whether every metric lies in the earlier interval."""
    rows, worst, inside = {}, 0.0, True
    for key, cur in current.items():
        prev = previous.get(key, {}).get("metrics", {})
        for name, m in cur["metrics"].items():
            if name not in prev:
                continue
            lo, hi = prev[name]["new_ci"]
            diff = abs(m["new"] - prev[name]["new"])
            ok = bool(lo <= m["new"] <= hi) if np.isfinite(lo) and np.isfinite(hi) else True
            rows[f"{key}/{name}"] = {"previous": prev[name]["new"], "now": m["new"],
                                     "abs_diff": diff, "within_previous_ci": ok}  # fmt: skip
            worst, inside = max(worst, diff), inside and ok
    return {"summary": {"max_abs_diff": worst, "all_within_previous_ci": inside}, "rows": rows}


def growth(curve: list[dict[str, Any]]) -> dict[str, Any]:
    """Per path: the log-log slope of wall time over rows, and old/new ratios per size."""
    out: dict[str, Any] = {}
    done = [
        r
        for r in curve
        if not r.get("timed_out") and "exit_code" not in r and r.get("executor", "local") == "local"
    ]
    for path in sorted({r["path"] for r in done}):
        pts = sorted((r["n"], r["wall_s"]) for r in done if r["path"] == path)
        if len(pts) >= 2:
            n, t = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
            out[f"{path}_time_exponent"] = round(float(np.polyfit(n, t, 1)[0]), 3)
    walls = {(r["path"], r["n"]): r["wall_s"] for r in done}
    out["old_over_new"] = {
        str(n): round(walls[("old", n)] / walls[("new", n)], 2)
        for (path, n) in walls
        if path == "old" and ("new", n) in walls
    }
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--old-sizes", type=int, nargs="*", default=[10_000, 100_000])
    ap.add_argument("--torch-threads", type=int, default=1, help="0: PyTorch's default")
    ap.add_argument("--executor", choices=["local", "ray"], default="local")
    ap.add_argument("--features", default="tfidf")
    ap.add_argument("--timeout", type=float, default=1500.0)
    ap.add_argument("--agreement", action="store_true")
    ap.add_argument("--agreement-features", nargs="+", default=["bow", "tfidf"])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--label", default=None, help="what this run measures (kept with each run; 1M runs "
        "are also appended to the history in 'runs_1m')"
    )  # fmt: skip
    args = ap.parse_args()
    if not DATA.exists():
        print(f"needs {DATA}", file=sys.stderr)
        return 1
    from spurious.provenance import cpu_model, dependency_versions
    from spurious.utils.io import atomic_write_json

    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results["data"] = __doc__.split("\n\n")[1].replace("\n", " ")
    results["machine"] = {
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "load_avg_at_start": os.getloadavg(),
    }
    if args.agreement:
        previous = results.get("agreement")
        results["agreement"] = agreement(args.agreement_features, n_resamples=1000)
        if previous:
            results["agreement_vs_previous_run"] = against_previous(previous, results["agreement"])
            print(json.dumps(results["agreement_vs_previous_run"]["summary"]), flush=True)
    runs = {
        (r["path"], r["n"], r["features"], r.get("executor", "local")): r
        for r in results.get("curve", [])
    }
    # Every new run first, so a slow old run cannot crowd out the largest new one.
    plan = [("new", n) for n in args.sizes] + [("old", n) for n in args.old_sizes]
    failed = []
    for path, n in plan:
        print(f"{path} n={n:,} ...", flush=True)
        r = timed(path, n, args.features, args.timeout, args.torch_threads, args.executor)
        if args.label:
            r["label"] = args.label
        print(f"  -> {r}", flush=True)
        if "exit_code" in r:
            failed.append(f"{path} n={n} (exit code {r['exit_code']})")
        if n >= 1_000_000 and path == "new":
            results.setdefault("runs_1m", []).append(r)
        runs[(path, n, args.features, r["executor"])] = r
        results["curve"] = sorted(
            runs.values(),
            key=lambda r: (r["features"], r["n"], r["path"], r.get("executor", "local")),
        )
        atomic_write_json(args.out, {**results, "versions": dependency_versions()})
    results["growth"] = growth(results.get("curve", []))
    results["versions"] = dependency_versions()
    atomic_write_json(args.out, results)
    print(json.dumps(results["growth"]))
    if failed:  # recorded in the JSON too; the run is not a measurement
        print("failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
