"""LogisticProbe (PyTorch, full-batch L-BFGS) vs scikit-learn LogisticRegression (lbfgs).

Same data, same C, both run to convergence in this process; reports median wall time over
repeats, their ratio, and the agreement of the fitted models. Writes
``bench/results/probe.json``. Usage: ``python bench/bench_probe.py [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.linear_model import LogisticRegression

from spurious.models import LogisticProbe
from spurious.provenance import dependency_versions
from spurious.utils.io import atomic_write_json

ROOT = Path(__file__).resolve().parents[1]
#: Smoke run: one repeat, the dense case at 2,000 rows (sklearn's fit dominates at 10k).
SMOKE_ARGS = ["--repeats", "1", "--n-dense", "2000"]


def synthetic_dense(n=10_000, d=1536, k=3, seed=0):
    """Embedding-like features: decaying spectrum, labels from a noisy linear rule."""
    rng = np.random.default_rng(seed)
    scales = 1.0 / np.sqrt(np.arange(1, d + 1))
    X = (rng.normal(size=(n, d)) * scales).astype(np.float32)
    y = np.argmax(X @ rng.normal(size=(d, k)) * 3 + rng.gumbel(size=(n, k)), axis=1)
    return X, y


def snli_tfidf():
    from spurious import load_dataset
    from spurious.features import make_featurizer

    path = ROOT.parent / "shared" / "data" / "snli" / "test_tokenized.jsonl"
    if not path.exists():
        return None
    ds = load_dataset(path, "nli")
    return make_featurizer("tfidf").fit_transform(ds, "full"), ds.labels


def timed(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), times, out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--n-dense", type=int, default=10_000, help="rows of the dense case")
    args = ap.parse_args()
    dense = "dense_10k_x_1536" if args.n_dense == 10_000 else f"dense_{args.n_dense}_x_1536"
    cases = {dense: synthetic_dense(n=args.n_dense)}
    tf = snli_tfidf()
    if tf is not None:
        cases["snli_tfidf_sparse"] = tf
    out = {
        "machine": {"cpus": os.cpu_count(), "torch_threads": torch.get_num_threads()},
        "versions": dependency_versions(),
        "cases": {},
    }
    for name, (X, y) in cases.items():
        ours_t, ours_all, ours = timed(
            lambda X=X, y=y: LogisticProbe(C=1.0, max_iter=500).fit(X, y), args.repeats
        )
        ref_t, ref_all, ref = timed(
            lambda X=X, y=y: LogisticRegression(C=1.0, max_iter=2000, tol=1e-6).fit(X, y),
            args.repeats,
        )
        p_ours, p_ref = ours.predict_proba(X), ref.predict_proba(X)
        row = {
            "shape": list(X.shape),
            "sparse": bool(sp.issparse(X)),
            "ours_median_s": round(ours_t, 3),
            "sklearn_median_s": round(ref_t, 3),
            "speedup_vs_sklearn": round(ref_t / ours_t, 2),
            "ours_times_s": [round(t, 3) for t in ours_all],
            "sklearn_times_s": [round(t, 3) for t in ref_all],
            "ours_iters": ours.n_iter_,
            "sklearn_iters": int(np.max(ref.n_iter_)),
            "max_abs_proba_diff": float(np.abs(p_ours - p_ref).max()),
            "prediction_agreement": float((p_ours.argmax(1) == p_ref.argmax(1)).mean()),
        }
        out["cases"][name] = row
        print(
            f"{name}: ours {ours_t:.2f}s, sklearn {ref_t:.2f}s, speedup x{row['speedup_vs_sklearn']}, "
            f"max|dp|={row['max_abs_proba_diff']:.1e}, agree={row['prediction_agreement']:.4f}"
        )
    atomic_write_json(ROOT / "bench/results/probe.json", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
