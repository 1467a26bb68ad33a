"""AFLite on the concentric circles of paper 000 (Sec. 3, Fig. 2, App. A.3 Table 7).

For each of the four class separations (``CIRCLE_SEPARATIONS``) and each seed:

1. draw ``n`` points (``make_concentric_circles``: two 2-D coordinates + two bias
   columns, class-specific Gaussian bias on 75% of each class, noise features on the
   rest; at the largest separation the labels of ``--flip`` of the biased rows of each
   class are flipped, as in the paper, and their bias features follow the flipped
   label: ``flipped_bias="observed"``, the construction under which the paper's "AFLite
   removes most of the flipped examples" holds);
2. run AFLite on the whole set with a logistic-regression model family (Table 8:
   m=128, t=100, tau=0.75; k, see below);
3. Table 7's protocol ("dev accuracy" of a model trained on D, resp. D(Phi)): a seeded,
   stratified 80/20 train/dev split of the original set D and, separately, of the
   filtered set D(Phi); scikit-learn's ``LogisticRegression()`` and ``SVC()`` (RBF)
   with default settings are trained on the train part (all four columns) and scored
   on the dev part. AFLite keeps train and dev identically distributed, so the dev
   part of D(Phi) is the paper's filtered benchmark.
4. In addition (not in the paper): the same models trained on the train part of D(Phi)
   and scored on a fresh, unfiltered draw of the same distribution (``n`` points,
   seed + 1000), to show what a model trained on the filtered data learned.

Deviation: the paper's k=1 (one removal per round) needs about a thousand rounds per
run; ``--slice-size`` (default 20 = 1% of n=2000) removes 20 per round. ``--k1-check``
reruns seed 0 at the largest separation with k=1 to compare.

Control (``flipped_bias_original`` in the JSON): the largest separation again, same
seeds, with ``flipped_bias="original"`` (flipped rows keep bias features of their
original class, the construction of earlier releases), to show that which rows AFLite
removes depends on that choice. ``--no-control`` skips it.

Writes ``bench/results/aflite_synthetic.json`` (per-seed numbers, params, wall time) and
the Fig. 2-style figure ``docs/img/aflite_synthetic.png`` (seed 0). Usage::

    .venv/bin/python bench/aflite_synthetic.py            # 10 seeds, ~5 min on 2 cores
    .venv/bin/python bench/aflite_synthetic.py --seeds 2  # quick look
"""

from __future__ import annotations

import os

# One BLAS thread: hundreds of tiny fits per round are ~20x slower when BLAS threads
# oversubscribe a small shared machine. Set before numpy is imported.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402
from sklearn.svm import SVC  # noqa: E402

from spurious.data import Dataset  # noqa: E402
from spurious.data.synthetic import CIRCLE_SEPARATIONS, make_concentric_circles  # noqa: E402
from spurious.detectors.aflite import AFLite  # noqa: E402
from spurious.provenance import cpu_model  # noqa: E402
from spurious.utils.io import atomic_write_json  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
#: One seed of 400 points per separation (and the control), m=16 partitions.
SMOKE_ARGS = ["--seeds", "1", "--n", "400", "--m", "16"]

#: Paper 000, App. A.3 Table 7: dev accuracy (%) mean and std over 10 seeds.
PAPER_TABLE7: dict[float, dict[str, dict[str, tuple[float, float]]]] = {
    0.8: {
        "svm": {"D": (97.0, 0.2), "D_phi": (90.7, 0.6)},
        "linear": {"D": (83.5, 0.5), "D_phi": (50.7, 1.2)},
    },
    0.7: {
        "svm": {"D": (89.9, 0.4), "D_phi": (82.5, 0.9)},
        "linear": {"D": (74.3, 1.1), "D_phi": (52.4, 1.3)},
    },
    0.6: {
        "svm": {"D": (87.6, 0.4), "D_phi": (77.8, 0.9)},
        "linear": {"D": (74.3, 1.0), "D_phi": (53.1, 1.2)},
    },
    0.4: {
        "svm": {"D": (83.8, 0.5), "D_phi": (70.7, 1.0)},
        "linear": {"D": (75.4, 0.9), "D_phi": (53.4, 1.2)},
    },
}

MODELS = {"linear": lambda: LogisticRegression(), "svm": lambda: SVC()}


def circles_dataset(y: np.ndarray) -> Dataset:
    """A text-task Dataset carrying only the labels (the features are passed as a matrix)."""
    frame = pd.DataFrame(
        {
            "id": [f"c{i}" for i in range(len(y))],
            "text": [f"point {i}" for i in range(len(y))],
            "label": y,
        }
    )
    return Dataset.from_frame(frame, "text", label_names=["outer", "inner"], name="circles")


def dev_accuracy(X: np.ndarray, y: np.ndarray, seed: int) -> dict[str, Any]:
    """Table 7's protocol: stratified 80/20 split, train on 80%, accuracy on the 20%."""
    X_tr, X_dev, y_tr, y_dev = train_test_split(X, y, test_size=0.2, random_state=seed, stratify=y)
    fitted = {name: make().fit(X_tr, y_tr) for name, make in MODELS.items()}
    acc = {name: float(m.score(X_dev, y_dev)) for name, m in fitted.items()}
    return {"acc": acc, "fitted": fitted, "n_train": len(y_tr), "n_dev": len(y_dev)}


def run_one(
    sep: float,
    seed: int,
    args: argparse.Namespace,
    slice_size: int,
    flipped_bias: str = "observed",
) -> dict[str, Any]:
    flip = args.flip if sep == max(CIRCLE_SEPARATIONS) else 0.0
    data = make_concentric_circles(
        n=args.n, separation=sep, flip_fraction=flip, random_state=seed, flipped_bias=flipped_bias
    )
    t0 = time.perf_counter()
    det = AFLite(
        n_partitions=args.m,
        train_size=args.t,
        slice_size=slice_size,
        tau=args.tau,
        group_by=None,
        # liblinear: same model (L2 logistic regression, C=1), ~10x faster than lbfgs
        # on 100-row fits.
        model=LogisticRegression(solver="liblinear"),
        features=data.X,
        random_state=seed,
    )
    res = det.run(circles_dataset(data.y))
    aflite_s = time.perf_counter() - t0
    keep = ~res.scores["is_aflite_issue"].to_numpy()

    before = dev_accuracy(data.X, data.y, seed)
    after = dev_accuracy(data.X[keep], data.y[keep], seed)
    fresh = make_concentric_circles(
        n=args.n,
        separation=sep,
        flip_fraction=flip,
        random_state=seed + 1000,
        flipped_bias=flipped_bias,
    )
    after_on_fresh = {name: float(m.score(fresh.X, fresh.y)) for name, m in after["fitted"].items()}
    flipped = data.is_flipped
    return {
        "separation": sep,
        "seed": seed,
        "flip_fraction": flip,
        "flipped_bias": flipped_bias,
        "acc_D": before["acc"],
        "acc_D_phi": after["acc"],
        "acc_D_phi_model_on_fresh_unfiltered": after_on_fresh,
        "n_initial": len(keep),
        "n_final": int(keep.sum()),
        "n_dev_D_phi": after["n_dev"],
        "biased_fraction_before": float(data.is_biased.mean()),
        "biased_fraction_after": float(data.is_biased[keep].mean()),
        "biased_removed_fraction": float((~keep[data.is_biased]).mean()),
        "biased_unflipped_removed_fraction": float(
            (~keep[data.is_biased & ~data.is_flipped]).mean()
        ),
        "unbiased_removed_fraction": float((~keep[~data.is_biased]).mean()),
        "n_flipped": int(flipped.sum()),
        "flipped_removed_fraction": float((~keep[flipped]).mean()) if flipped.any() else None,
        "n_rounds": int(res.metrics["n_rounds"]),
        "stop_reason": res.details["stop_reason"],
        "sizes": res.details["sizes"],
        "aflite_seconds": round(aflite_s, 3),
        "_keep": keep,
        "_data": data,
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for sep in CIRCLE_SEPARATIONS:
        sub = [r for r in rows if r["separation"] == sep]
        if not sub:
            continue
        entry: dict[str, Any] = {"n_seeds": len(sub)}
        for model in MODELS:
            for col in ("acc_D", "acc_D_phi", "acc_D_phi_model_on_fresh_unfiltered"):
                v = np.array([r[col][model] for r in sub]) * 100
                entry[f"{model}_{col}"] = {
                    "mean": float(v.mean()),
                    "std": float(v.std(ddof=1)) if len(v) > 1 else 0.0,
                }
        for col in (
            "n_final",
            "biased_fraction_after",
            "biased_removed_fraction",
            "unbiased_removed_fraction",
            "n_rounds",
        ):
            v = np.array([r[col] for r in sub], dtype=float)
            entry[col] = {
                "mean": float(v.mean()),
                "std": float(v.std(ddof=1)) if len(v) > 1 else 0.0,
            }
        entry.update(_flipped_summary(sub))
        entry["stop_reasons"] = sorted({r["stop_reason"] for r in sub})
        entry["paper"] = {
            m: {c: list(v) for c, v in d.items()} for m, d in PAPER_TABLE7[sep].items()
        }
        out[str(sep)] = entry
    return out


def _flipped_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Share of the flipped rows AFLite removed: mean, min and max over seeds."""
    fl = [r["flipped_removed_fraction"] for r in rows if r["flipped_removed_fraction"] is not None]
    if not fl:
        return {"flipped_removed_fraction_mean": None}
    return {
        "flipped_removed_fraction_mean": float(np.mean(fl)),
        "flipped_removed_fraction_min": float(np.min(fl)),
        "flipped_removed_fraction_max": float(np.max(fl)),
        "n_flipped_per_seed": rows[0]["n_flipped"],
    }


def make_figure(rows: list[dict[str, Any]], path: Path) -> None:
    """Fig. 2 of paper 000: coordinates before (top) and after AFLite (bottom), seed 0."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    seed0 = {r["separation"]: r for r in rows if r["seed"] == min(x["seed"] for x in rows)}
    seps = [s for s in CIRCLE_SEPARATIONS if s in seed0]
    fig = Figure(figsize=(3.2 * len(seps), 6.6))
    FigureCanvasAgg(fig)
    axes = fig.subplots(2, len(seps), squeeze=False)
    colors = np.array(["tab:blue", "tab:orange"])
    for j, sep in enumerate(seps):
        r = seed0[sep]
        data, keep = r["_data"], r["_keep"]
        for i, (mask, col, title) in enumerate(
            ((np.ones_like(keep), "acc_D", "D"), (keep, "acc_D_phi", "D(Φ)"))
        ):
            ax = axes[i, j]
            xy = data.X[mask, :2]
            ax.scatter(xy[:, 0], xy[:, 1], c=colors[data.y[mask]], s=3, alpha=0.6, linewidths=0)
            if i == 0 and data.is_flipped.any():
                fx = data.X[data.is_flipped, :2]
                ax.scatter(
                    fx[:, 0],
                    fx[:, 1],
                    facecolors="none",
                    edgecolors="k",
                    s=12,
                    linewidths=0.5,
                    label="flipped",
                )
                ax.legend(loc="upper right", fontsize=7, handletextpad=0.1)
            acc = r[col]
            ax.set_title(
                f"sep {sep}, {title} (n={int(mask.sum())})\n"
                f"linear {acc['linear']:.1%}  SVM-RBF {acc['svm']:.1%}",
                fontsize=8,
            )
            ax.set_xlim(-1.8, 1.8)
            ax.set_ylim(-1.8, 1.8)
            ax.set_aspect("equal")
            ax.tick_params(labelsize=6)
    fig.suptitle(
        "AFLite on concentric circles (paper 000 Fig. 2): top = before, bottom = after; "
        "blue = outer, orange = inner ring",
        fontsize=9,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="points per dataset")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--m", type=int, default=128, help="n_partitions (Table 8: 128)")
    ap.add_argument("--t", type=int, default=100, help="train_size (Table 8: 100)")
    ap.add_argument("--slice-size", type=int, default=20, help="k (Table 8: 1; see docstring)")
    ap.add_argument("--tau", type=float, default=0.75)
    ap.add_argument(
        "--flip",
        type=float,
        default=0.04,
        help="fraction of biased rows per class flipped at the largest separation",
    )
    ap.add_argument("--k1-check", action="store_true", help="also run seed 0, sep 0.8 with k=1")
    ap.add_argument(
        "--no-control",
        action="store_true",
        help="skip the control run with flipped_bias='original' at the largest separation",
    )
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/aflite_synthetic.json")
    ap.add_argument("--figure", type=Path, default=ROOT / "docs/img/aflite_synthetic.png")
    args = ap.parse_args()

    t_start = time.perf_counter()
    rows = []
    for sep in CIRCLE_SEPARATIONS:
        for seed in range(args.seeds):
            r = run_one(sep, seed, args, args.slice_size)
            rows.append(r)
            print(
                f"sep {sep} seed {seed}: |S| {r['n_initial']} -> {r['n_final']} in "
                f"{r['n_rounds']} rounds ({r['aflite_seconds']:.1f}s); linear "
                f"{r['acc_D']['linear']:.3f} -> {r['acc_D_phi']['linear']:.3f}, SVM "
                f"{r['acc_D']['svm']:.3f} -> {r['acc_D_phi']['svm']:.3f}",
                flush=True,
            )
    make_figure(rows, args.figure)
    summary = summarize(rows)

    control = None
    if not args.no_control:
        sep = max(CIRCLE_SEPARATIONS)
        ctrl_rows = [
            run_one(sep, seed, args, args.slice_size, flipped_bias="original")
            for seed in range(args.seeds)
        ]
        control = {
            "separation": sep,
            "flipped_bias": "original",
            **_flipped_summary(ctrl_rows),
            "biased_unflipped_removed_fraction_mean": float(
                np.mean([r["biased_unflipped_removed_fraction"] for r in ctrl_rows])
            ),
            "per_seed": [{k: v for k, v in r.items() if not k.startswith("_")} for r in ctrl_rows],
        }

    k1 = None
    if args.k1_check:
        r = run_one(max(CIRCLE_SEPARATIONS), 0, args, 1)
        k1 = {key: v for key, v in r.items() if not key.startswith("_")}
        print(
            f"k=1 check (sep {r['separation']}, seed 0): |S| -> {r['n_final']}, linear "
            f"{r['acc_D_phi']['linear']:.3f}, SVM {r['acc_D_phi']['svm']:.3f}, "
            f"{r['aflite_seconds']:.0f}s"
        )

    print("\nTable 7 (dev accuracy %, mean ± std over seeds; paper in brackets)")
    print(f"{'sep':>4} {'model':>7} {'D':>18} {'D(Phi)':>18} {'|D(Phi)|':>9} {'biased kept':>11}")
    for sep, e in summary.items():
        for model in MODELS:
            p = e["paper"][model]
            a, b = e[f"{model}_acc_D"], e[f"{model}_acc_D_phi"]
            print(
                f"{sep:>4} {model:>7} {a['mean']:5.1f}±{a['std']:3.1f} [{p['D'][0]:4.1f}] "
                f"{b['mean']:5.1f}±{b['std']:3.1f} [{p['D_phi'][0]:4.1f}] "
                f"{e['n_final']['mean']:9.0f} {e['biased_fraction_after']['mean']:11.2f}"
            )
    for name, e in (("observed", summary.get(str(max(CIRCLE_SEPARATIONS)))), ("original", control)):
        if e and e.get("flipped_removed_fraction_mean") is not None:
            print(
                f"flipped rows removed (flipped_bias={name!r}): "
                f"{e['flipped_removed_fraction_mean']:.1%} mean, "
                f"{e['flipped_removed_fraction_min']:.1%}-{e['flipped_removed_fraction_max']:.1%} "
                f"over seeds ({e['n_flipped_per_seed']} flipped rows per seed)"
            )
    wall = time.perf_counter() - t_start
    print(f"wall time {wall:.0f}s")

    atomic_write_json(
        args.out,
        {
            "experiment": "paper 000 Sec. 3 / Table 7 / Fig. 2: AFLite on concentric circles",
            "command": "python bench/aflite_synthetic.py"
            + (f" --seeds {args.seeds}" if args.seeds != 10 else "")
            + (" --k1-check" if args.k1_check else "")
            + (" --no-control" if args.no_control else ""),
            "protocol": (
                "AFLite on all n points; Table-7 accuracy = stratified 80/20 train/dev split "
                "(seeded) of D resp. D(Phi), sklearn LogisticRegression() and SVC() (RBF) on all "
                "4 columns, accuracy on the dev part. acc_D_phi_model_on_fresh_unfiltered: the "
                "D(Phi)-trained models on a fresh unfiltered draw (seed + 1000)."
            ),
            "params": {
                "n": args.n,
                "seeds": list(range(args.seeds)),
                "separations": list(CIRCLE_SEPARATIONS),
                "flip_fraction_largest_separation": args.flip,
                "flipped_bias": "observed",
                "bias_fraction": 0.75,
                "n_bias_features": 2,
                "aflite": {
                    "n_partitions": args.m,
                    "train_size": args.t,
                    "slice_size": args.slice_size,
                    "tau": args.tau,
                    "selection": "greedy_slice",
                    "target_size": None,
                    "model": "LogisticRegression(solver='liblinear')",
                },
                "deviation": f"k={args.slice_size} instead of the paper's k=1 (compute)",
            },
            "paper_table7": {str(k): v for k, v in PAPER_TABLE7.items()},
            "summary": summary,
            "per_seed": [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows],
            "k1_check": k1,
            "flipped_bias_original": control,
            "figure": str(args.figure.relative_to(ROOT))
            if args.figure.is_relative_to(ROOT)
            else str(args.figure),
            "wall_seconds": round(wall, 1),
            "machine": {
                "python": platform.python_version(),
                "cpu": cpu_model(),
                "cpus": os.cpu_count(),
                "blas_threads": os.environ.get("OMP_NUM_THREADS"),
            },
        },
    )
    print(f"wrote {args.out} and {args.figure}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
