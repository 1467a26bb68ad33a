"""AFLite on SNLI with MiniLM pair features, scored as in paper 000 Table 3.

SNLI's training set is not available here; the two 9.8K files stand in. Two modes:

- ``--mode eval`` (paper 004, App. A): the 9,824 pairs of ``test_tokenized.jsonl`` are
  the pool D that AFLite filters; its classifiers train on the pool only and in every
  round also score the remaining pairs of ``dev.jsonl`` (9,842), so one run gives the
  filtered pool D(Phi) and the "AF-selected" dev pairs (held-out examples AFLite keeps).
  Probes are trained on D, on random subsets of |D(Phi)| (``random_subset_baseline``, 5
  seeds), on the one-shot filter baseline of that size (``one_shot_filter_baseline``;
  paper 000 Sec. 4.2) and on D(Phi), and scored on all of dev and on the AF-selected dev.
- ``--mode union`` (paper 000's protocol, "AFLite maintains an identical train-test
  distribution"): AFLite filters both files together; the union is split 50/50 by
  premise, and probes trained on the train half of D, of a random subset and of D(Phi)
  are scored on the test half and on its AFLite-kept rows.

Settings: Table 8's SNLI ratios scaled to the filtered set (t = 50K/550K = 9.1%, k =
10K/550K = 1.8%), tau = 0.75, m = 64, greedy slices, partitions by premise
(``group_by="auto"``), model family scikit-learn ``LogisticRegression`` (lbfgs, C=1) on
the MiniLM "full" view ([u, v, |u-v|, u*v], 1,536 dims). Probes: the same logistic
regression on the full pair, and on the hypothesis embedding alone (hypothesis-only,
384 dims: the partial-input accuracy before and after filtering).

Writes ``bench/results/aflite_snli.json`` (one section per mode; rerunning a mode
replaces only its section). Usage (embeddings come from the feature cache,
SPURIOUS_CACHE_DIR; a cold cache encodes ~20K pairs first)::

    .venv/bin/python bench/aflite_snli.py --mode eval    # ~4 min on 2 busy cores
    .venv/bin/python bench/aflite_snli.py --mode union   # ~9 min
    .venv/bin/python bench/aflite_snli.py                # both
"""

from __future__ import annotations

import os

# One BLAS thread: 64 small logistic fits per round are ~20x slower when BLAS threads
# oversubscribe a small shared machine. Set before numpy is imported.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import GroupShuffleSplit  # noqa: E402

from spurious import load_dataset  # noqa: E402
from spurious.detectors.aflite import AFLite  # noqa: E402
from spurious.detectors.aflite.baselines import (  # noqa: E402
    one_shot_filter_baseline,
    random_subset_baseline,
)
from spurious.features import make_featurizer  # noqa: E402
from spurious.provenance import cpu_model  # noqa: E402
from spurious.utils.io import atomic_write_json, read_json  # noqa: E402
from spurious.views import get_view  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "snli"
#: tests/test_bench_smoke.py: both modes on its 1,000-row copy of the data
SMOKE_ARGS: list[str] = []

#: Paper 000 Table 3 (SNLI dev accuracy, %), the RoBERTa-filtered column D(phi_RoBERTa).
PAPER_TABLE3 = {
    "RoBERTa": {"D": 92.6, "D_92k": 88.3, "D_phi_RoBERTa": 62.6},
    "RoBERTa-HypOnly": {"D": 72.0, "D_92k": 70.4, "D_phi_RoBERTa": 48.5},
    "training_set_size": {"D": 550_000, "D_92k": 92_000, "D_phi_RoBERTa": 92_000},
    "one_shot_filter_RoBERTa (Sec. 4.2)": 72.1,
}


def probe() -> LogisticRegression:
    return LogisticRegression(max_iter=1000)


def scores(
    X: dict[str, np.ndarray],
    y: np.ndarray,
    X_dev: dict[str, np.ndarray],
    y_dev: np.ndarray,
    rows: np.ndarray,
    af_selected: np.ndarray,
) -> dict[str, dict[str, float]]:
    """Full and hypothesis-only probes trained on ``rows`` of the pool, scored on dev."""
    out = {}
    for view in ("full", "hypothesis_only"):
        m = probe().fit(X[view][rows], y[rows])
        pred = m.predict(X_dev[view])
        out[view] = {
            "dev": float((pred == y_dev).mean()),
            "dev_af_selected": float((pred[af_selected] == y_dev[af_selected]).mean()),
        }
    return out


def mean_std(runs: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, dict[str, float]]]:
    return {
        view: {
            split: {
                "mean": float(np.mean([r[view][split] for r in runs])),
                "std": float(np.std([r[view][split] for r in runs], ddof=1)),
            }
            for split in runs[0][view]
        }
        for view in runs[0]
    }


def eval_mode(args: argparse.Namespace) -> dict[str, Any]:
    """Filter test_tokenized in evaluation-set mode, score probes on dev."""
    t_start = time.perf_counter()
    pool = load_dataset(DATA / "test_tokenized.jsonl", "nli", name="snli-test")
    dev = load_dataset(DATA / "dev.jsonl", "nli", name="snli-dev")
    feat = make_featurizer("minilm")
    X = {v: feat.fit_transform(pool, get_view(pool.task, v)) for v in ("full", "hypothesis_only")}
    X_dev = {v: feat.transform(dev, get_view(dev.task, v)) for v in ("full", "hypothesis_only")}
    y, y_dev = np.asarray(pool.labels), np.asarray(dev.labels)
    t_feat = time.perf_counter() - t_start

    t0 = time.perf_counter()
    det = AFLite(
        mode="eval",  # explicit since 97f9ddb: an evaluation split no longer implies it
        n_partitions=args.m,
        train_size=args.train_size,
        slice_size=args.slice_size,
        tau=args.tau,
        model="sklearn-logistic",
        features=(X["full"], X_dev["full"]),
        group_by="auto",
        random_state=args.seed,
    )
    res = det.run(pool, dev)
    t_aflite = time.perf_counter() - t0
    keep = ~det.train_scores_["is_aflite_issue"].to_numpy()
    af_selected = ~res.scores["is_aflite_issue"].to_numpy()
    kept_rows = np.flatnonzero(keep)
    size = len(kept_rows)
    print(
        f"AFLite: pool {len(pool)} -> {size} in {res.metrics['n_rounds']} rounds "
        f"({res.details['stop_reason']}), dev {len(dev)} -> {int(af_selected.sum())} "
        f"AF-selected; {t_aflite:.0f}s",
        flush=True,
    )

    t0 = time.perf_counter()
    all_rows = np.arange(len(pool))
    results: dict[str, Any] = {"D": scores(X, y, X_dev, y_dev, all_rows, af_selected)}
    pos = {i: j for j, i in enumerate(pool.ids)}
    rand = []
    for s in range(args.random_seeds):
        sub = random_subset_baseline(pool, size, random_state=s)
        rows = np.array([pos[i] for i in sub.ids])
        rand.append(scores(X, y, X_dev, y_dev, rows, af_selected))
    results["D_random"] = mean_std(rand)
    one_shot = one_shot_filter_baseline(
        X["full"],
        y,
        size,
        model="sklearn-logistic",
        train_size=int(res.metrics["train_size"]),
        random_state=args.seed,
        groups=pool.group_keys("auto"),
    )
    results["D_one_shot"] = scores(X, y, X_dev, y_dev, one_shot, af_selected)
    results["D_phi"] = scores(X, y, X_dev, y_dev, kept_rows, af_selected)
    t_eval = time.perf_counter() - t0

    def majority(labels: np.ndarray, of: np.ndarray) -> float:
        return float((of == np.bincount(labels, minlength=3).argmax()).mean())

    label_names = list(pool.label_names)
    wall = time.perf_counter() - t_start
    table = [
        ("full (MiniLM pair)", "full", "dev"),
        ("full, AF-selected dev", "full", "dev_af_selected"),
        ("hypothesis-only", "hypothesis_only", "dev"),
        ("hyp-only, AF-sel. dev", "hypothesis_only", "dev_af_selected"),
    ]

    def cell(col: str, view: str, split: str) -> str:
        v = results[col][view][split]
        return (
            f"{v['mean'] * 100:5.1f}±{v['std'] * 100:3.1f}"
            if isinstance(v, dict)
            else (f"{v * 100:9.1f}")
        )

    print("\nLogistic probe accuracy (%), trained on the pool subset, scored on held-out dev")
    print(f"{'probe / eval set':<24}{'D':>9}{'D_rand':>10}{'one-shot':>9}{'D(Phi)':>9}")
    for name, view, split in table:
        print(
            f"{name:<24}{cell('D', view, split)}{cell('D_random', view, split):>10}"
            f"{cell('D_one_shot', view, split)}{cell('D_phi', view, split)}"
        )
    print(f"{'training set size':<24}{len(pool):>9}{size:>10}{size:>9}{size:>9}")
    print(
        f"wall time {wall:.0f}s (features {t_feat:.0f}s, AFLite {t_aflite:.0f}s, "
        f"probes {t_eval:.0f}s)"
    )

    rounds = [
        {
            key: h[key]
            for key in (
                "round",
                "n_before",
                "n_above_tau",
                "n_removed",
                "n_after",
                "mean_p",
                "n_eval_before",
                "n_eval_removed",
                "n_eval_after",
                "mean_p_eval",
                "n_excluded_by_groups",
            )
        }
        for h in res.details["rounds"]
    ]
    return {
        "command": command(args),
        "data": {
            "pool_filtered": "shared/data/snli/test_tokenized.jsonl",
            "held_out": "shared/data/snli/dev.jsonl",
            "n_pool": len(pool),
            "n_dev": len(dev),
            "label_names": label_names,
            "pool_label_counts": np.bincount(y, minlength=3).tolist(),
            "kept_label_counts": np.bincount(y[keep], minlength=3).tolist(),
            "dev_af_selected_label_counts": np.bincount(y_dev[af_selected], minlength=3).tolist(),
        },
        "params": {
            "n_partitions": args.m,
            "train_size": args.train_size,
            "slice_size": args.slice_size,
            "tau": args.tau,
            "resolved_t_k_n": [
                res.metrics["train_size"],
                res.metrics["slice_size"],
                res.metrics["target_size"],
            ],
            "selection": "greedy_slice",
            "group_by": "auto (premise)",
            "model_family": "sklearn LogisticRegression(max_iter=1000), lbfgs, C=1",
            "features": "minilm, view full ([u, v, |u-v|, u*v], 1536 d)",
            "probe": "sklearn LogisticRegression(max_iter=1000) on minilm full / "
            "hypothesis_only (384 d)",
            "random_subset_seeds": list(range(args.random_seeds)),
            "random_state": args.seed,
            "mode": "evaluation-set mode (paper 004 App. A): classifiers train on the pool, "
            "also score the remaining dev pairs",
        },
        "aflite": {
            "n_initial": len(pool),
            "n_final": size,
            "n_rounds": res.metrics["n_rounds"],
            "stop_reason": res.details["stop_reason"],
            "stop_reason_text": res.details["stop_reason_text"],
            "sizes": res.details["sizes"],
            "eval_sizes": res.details["eval_sizes"],
            "stages_dev": res.details["stages"],
            "rounds": rounds,
        },
        "accuracy": results,
        "majority_baseline": {
            "dev": majority(y, y_dev),
            "dev_af_selected": majority(y, y_dev[af_selected]),
        },
        "paper_table3": PAPER_TABLE3,
        "seconds": {
            "features": round(t_feat, 1),
            "aflite": round(t_aflite, 1),
            "probes": round(t_eval, 1),
            "wall": round(wall, 1),
        },
        "machine": {
            "python": platform.python_version(),
            "cpu": cpu_model(),
            "cpus": os.cpu_count(),
            "blas_threads": os.environ.get("OMP_NUM_THREADS"),
        },
    }


def union_mode(args: argparse.Namespace) -> dict[str, Any]:
    """Paper 000's own protocol: filter dev + test together, then split D(Phi) i.i.d.

    AFLite (single-dataset mode) filters the union U of both files; U is split once into
    halves by premise (``GroupShuffleSplit``, seeded), so the filtered train and test
    halves are D(Phi) restricted to each half: identically distributed, as in paper 000
    ("AFLite maintains an identical train-test distribution").
    """
    t_start = time.perf_counter()
    parts = [
        load_dataset(DATA / "test_tokenized.jsonl", "nli", name="snli-test"),
        load_dataset(DATA / "dev.jsonl", "nli", name="snli-dev"),
    ]
    # Features per file (both are in the feature cache), stacked in the union's row order.
    feat = make_featurizer("minilm")
    X = {
        v: np.vstack([feat.fit_transform(d, get_view(d.task, v)) for d in parts])
        for v in ("full", "hypothesis_only")
    }
    frame = pd.concat(
        [
            d.frame[["premise", "hypothesis", "label"]].assign(
                id=[f"{tag}-{i}" for i in range(len(d))]
            )
            for tag, d in zip(("test", "dev"), parts, strict=True)
        ],
        ignore_index=True,
    )
    union = load_dataset(frame, "nli", name="snli-test+dev", label_names=parts[0].label_names)
    assert union.label_names == parts[0].label_names and len(union) == len(X["full"])
    y = np.asarray(union.labels)
    groups = union.group_keys("auto")
    tr, te = next(GroupShuffleSplit(1, test_size=0.5, random_state=args.seed).split(y, y, groups))
    t_feat = time.perf_counter() - t_start

    t0 = time.perf_counter()
    det = AFLite(
        n_partitions=args.m,
        train_size=args.train_size,
        slice_size=args.slice_size,
        tau=args.tau,
        model="sklearn-logistic",
        features=X["full"],
        group_by="auto",
        random_state=args.seed,
    )
    res = det.run(union)
    t_aflite = time.perf_counter() - t0
    keep = ~res.scores["is_aflite_issue"].to_numpy()
    tr_phi, te_phi = tr[keep[tr]], te[keep[te]]
    print(
        f"AFLite (union): {len(union)} -> {int(keep.sum())} in {res.metrics['n_rounds']} rounds "
        f"({res.details['stop_reason']}); train half {len(tr)} -> {len(tr_phi)}, test half "
        f"{len(te)} -> {len(te_phi)}; {t_aflite:.0f}s",
        flush=True,
    )

    t0 = time.perf_counter()

    def acc(train_rows: np.ndarray) -> dict[str, dict[str, float]]:
        out = {}
        for view in ("full", "hypothesis_only"):
            pred = probe().fit(X[view][train_rows], y[train_rows]).predict(X[view])
            out[view] = {
                "test": float((pred[te] == y[te]).mean()),
                "test_phi": float((pred[te_phi] == y[te_phi]).mean()),
            }
        return out

    results: dict[str, Any] = {"D": acc(tr), "D_phi": acc(tr_phi)}
    rand = []
    for s in range(args.random_seeds):
        rng = np.random.default_rng(s)
        rand.append(acc(np.sort(rng.choice(tr, size=len(tr_phi), replace=False))))
    results["D_random"] = mean_std(rand)
    t_eval = time.perf_counter() - t0
    wall = time.perf_counter() - t_start

    def cell(col: str, view: str, split: str) -> str:
        v = results[col][view][split]
        return (
            f"{v['mean'] * 100:5.1f}±{v['std'] * 100:3.1f}"
            if isinstance(v, dict)
            else (f"{v * 100:9.1f}")
        )

    print("\nUnion mode: probe accuracy (%) on the test half (all / AFLite-kept)")
    print(f"{'probe / test set':<24}{'D':>9}{'D_rand':>10}{'D(Phi)':>9}")
    for name, view, split in (
        ("full, test", "full", "test"),
        ("full, test D(Phi)", "full", "test_phi"),
        ("hyp-only, test", "hypothesis_only", "test"),
        ("hyp-only, test D(Phi)", "hypothesis_only", "test_phi"),
    ):
        print(
            f"{name:<24}{cell('D', view, split)}{cell('D_random', view, split):>10}"
            f"{cell('D_phi', view, split)}"
        )
    print(f"{'training set size':<24}{len(tr):>9}{len(tr_phi):>10}{len(tr_phi):>9}")
    print(f"wall time {wall:.0f}s (AFLite {t_aflite:.0f}s, probes {t_eval:.0f}s)")
    majority = int(np.bincount(y[tr], minlength=3).argmax())
    return {
        "command": command(args),
        "protocol": "AFLite on U = test_tokenized + dev (single-dataset mode); U split 50/50 by "
        "premise (GroupShuffleSplit, seed); probes trained on the train half of D, of a random "
        "subset of it (size of the kept train half, 5 seeds), and of D(Phi); scored on the "
        "test half (test) and on its AFLite-kept rows (test_phi, the paper's filtered dev).",
        "data": {
            "n_union": len(union),
            "n_train_half": len(tr),
            "n_test_half": len(te),
            "n_train_half_kept": len(tr_phi),
            "n_test_half_kept": len(te_phi),
            "label_counts": np.bincount(y, minlength=3).tolist(),
            "kept_label_counts": np.bincount(y[keep], minlength=3).tolist(),
        },
        "params": {
            "n_partitions": args.m,
            "train_size": args.train_size,
            "slice_size": args.slice_size,
            "tau": args.tau,
            "resolved_t_k_n": [
                res.metrics["train_size"],
                res.metrics["slice_size"],
                res.metrics["target_size"],
            ],
            "model_family": "sklearn LogisticRegression(max_iter=1000), lbfgs, C=1",
            "group_by": "auto (premise)",
            "random_state": args.seed,
        },
        "aflite": {
            "n_initial": len(union),
            "n_final": int(keep.sum()),
            "n_rounds": res.metrics["n_rounds"],
            "stop_reason": res.details["stop_reason"],
            "sizes": res.details["sizes"],
            "n_above_tau": [h["n_above_tau"] for h in res.details["rounds"]],
            "mean_p": [h["mean_p"] for h in res.details["rounds"]],
        },
        "accuracy": results,
        "majority_baseline": {
            "test": float((y[te] == majority).mean()),
            "test_phi": float((y[te_phi] == majority).mean()),
        },
        "seconds": {
            "features": round(t_feat, 1),
            "aflite": round(t_aflite, 1),
            "probes": round(t_eval, 1),
            "wall": round(wall, 1),
        },
    }


def command(args: argparse.Namespace) -> str:
    extra = "" if args.m == 64 else f" --m {args.m}"
    return f"python bench/aflite_snli.py --mode {args.mode}{extra}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=["eval", "union", "both"], default="both")
    ap.add_argument("--m", type=int, default=64, help="n_partitions (Table 8: 64)")
    ap.add_argument("--train-size", type=float, default=50 / 550, help="t as a fraction")
    ap.add_argument("--slice-size", type=float, default=10 / 550, help="k as a fraction")
    ap.add_argument("--tau", type=float, default=0.75)
    ap.add_argument("--random-seeds", type=int, default=5, help="random-subset baselines")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/aflite_snli.json")
    args = ap.parse_args()
    if not DATA.exists():
        print(f"needs {DATA}", file=sys.stderr)
        return 1
    # Each mode's section is replaced on its own, so the modes can be rerun separately.
    doc = read_json(args.out) if args.out.exists() else {}
    doc.setdefault("modes", {})
    modes = ["eval", "union"] if args.mode == "both" else [args.mode]
    for mode in modes:
        args.mode = mode
        doc["modes"][mode] = eval_mode(args) if mode == "eval" else union_mode(args)
    doc.update(
        experiment="paper 000 Table 3 analogue: AFLite on SNLI with MiniLM pair features",
        paper_table3=PAPER_TABLE3,
        machine={
            "python": platform.python_version(),
            "cpu": cpu_model(),
            "cpus": os.cpu_count(),
            "blas_threads": os.environ.get("OMP_NUM_THREADS"),
        },
    )
    atomic_write_json(args.out, doc)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
