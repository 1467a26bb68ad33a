"""Paper 002 Sec. 6 / Table 4 on SNLI: debiasing on bias-amplified splits (fast path).

Starts from the run ``bench/amplify_snli.py`` leaves in ``runs/amplify-snli/run`` (SNLI
test_tokenized marked by cartography and minority, dev as the test split) and, for the
*minority* definition (the paper's Table 4 uses it), trains on the biased training split
only:

- **biased**: plain cross-entropy;
- **self-debiasing** (Utama et al. 2020b, paper 002 footnote 12): a shallow model (2,000
  examples of the biased split, 3 epochs) gives bias probabilities; example reweighting
  by ``1 - p_bias(gold)``;
- **ambiguous filtering** (Swayamdipta et al. 2020): training dynamics on the biased split
  (the 10-epoch fast path), then plain training on its 33% most ambiguous (highest
  variability) examples;
- **100% train**: plain training on the whole training split, for reference.

Each over 3 seeds; accuracy on the anti-biased test split and on the whole dev set. The
models are the fast path's MLP on frozen MiniLM pair features (paper: RoBERTa-large on
full MultiNLI / QQP; we are at ~10k SNLI pairs).

Writes ``bench/results/amplify_debias_snli.json``. Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/amplify_debias_snli.py [--seeds 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from amplify_snli import QUICK_RUN
from spurious.actions.amplify import amplify_run
from spurious.context import RunContext
from spurious.models.debias.bias import shallow_bias
from spurious.models.debias.fast import train_fast
from spurious.models.dynamics import TrainingDynamics, cartography_stats, probe_dynamics
from spurious.provenance import dependency_versions
from spurious.utils.io import atomic_write_json

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "runs" / "amplify-snli" / "run"
#: One seed, from a smoke-sized bench/amplify_snli.py run made first (--make-run: 200 pairs).
SMOKE_ARGS = [
    "--seeds",
    "1",
    "--run",
    "runs/amplify-snli-quick/run",
    "--make-run",
    "--out",
    "bench/results/amplify_debias_snli_quick.json",
]
PAPER = {"biased": 50.5, "self-debiasing": 50.7, "ambiguous filtering": 51.4, "100% train": 71.9}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--definition", default="minority")
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/amplify_debias_snli.json")
    ap.add_argument(
        "--run",
        type=Path,
        default=RUN.relative_to(ROOT),
        help="the bench/amplify_snli.py run to start from, relative to the checkout "
        "(default: %(default)s)",
    )
    ap.add_argument(
        "--make-run",
        action="store_true",
        help="if --run is missing, first make it with a smoke-sized `bench/amplify_snli.py "
        "--quick --seeds 1 --compare --rows 200 --run-dir <its parent>` (bow marking, 3 "
        "epochs, the first 200 pairs of SNLI test_tokenized and dev)",
    )
    args = ap.parse_args()
    run_dir = ROOT / args.run
    if args.make_run and not (run_dir / "manifest.json").exists():
        amplify = [sys.executable, str(ROOT / "bench" / "amplify_snli.py"), *QUICK_RUN]
        amplify += ["--run-dir", str(run_dir.parent)]
        subprocess.run(amplify, check=True)
    if not (run_dir / "manifest.json").exists():
        print(f"needs {run_dir}: run bench/amplify_snli.py first", file=sys.stderr)
        return 1
    t0 = time.perf_counter()
    amp = amplify_run(run_dir)
    splits = amp.definitions[args.definition].splits
    biased = splits["train.biased"][1]
    anti_test = splits["test.anti_biased"][1]
    ctx = RunContext(amp.train, amp.eval, progress=False)
    X = np.asarray(ctx.features("minilm", "full", split="train"))
    X_dev = np.asarray(ctx.features("minilm", "full", split="eval"))
    y, y_dev = np.asarray(amp.train.labels), np.asarray(amp.eval.labels)
    k = amp.train.n_classes
    rows = np.flatnonzero(biased)
    Xb, yb = X[rows], y[rows]

    # Ambiguous filtering: dynamics of the biased split, its 33% most variable examples.
    frame = probe_dynamics(Xb, yb, n_classes=k, train_ids=[str(i) for i in rows], epochs=10)
    stats = cartography_stats(
        TrainingDynamics(frame, list(amp.train.label_names)), "train"
    ).set_index("id")
    variability = stats.loc[[str(i) for i in rows], "variability"].to_numpy()
    n_amb = round(0.33 * len(rows))
    ambiguous = np.argsort(-variability, kind="stable")[:n_amb]

    schemes: dict[str, list[dict[str, float]]] = {s: [] for s in PAPER}
    for s in range(1, args.seeds + 1):

        def score(model) -> dict[str, float]:
            pred = model.predict(X_dev)
            return {
                "anti_biased": float((pred[anti_test] == y_dev[anti_test]).mean()),
                "dev": float((pred == y_dev).mean()),
            }

        schemes["biased"].append(score(train_fast(Xb, yb, n_classes=k, random_state=s)))
        bias = shallow_bias(Xb, yb, n_classes=k, n_examples=2000, epochs=3, random_state=s)
        schemes["self-debiasing"].append(
            score(train_fast(Xb, yb, loss="reweight", bias_probs=bias, n_classes=k, random_state=s))
        )
        schemes["ambiguous filtering"].append(
            score(train_fast(Xb[ambiguous], yb[ambiguous], n_classes=k, random_state=s))
        )
        schemes["100% train"].append(score(train_fast(X, y, n_classes=k, random_state=s)))

    table = {}
    for name, runs in schemes.items():
        anti = np.array([r["anti_biased"] for r in runs])
        dev = np.array([r["dev"] for r in runs])
        table[name] = {
            "anti_biased_mean": float(anti.mean()),
            "anti_biased_sd": float(anti.std(ddof=1)) if len(anti) > 1 else 0.0,
            "dev_mean": float(dev.mean()),
            "paper_mnli_anti_biased": PAPER[name],
        }
        print(f"{name:20s} anti-biased {100 * anti.mean():.1f} ± {100 * table[name]['anti_biased_sd']:.1f}"
              f"  dev {100 * dev.mean():.1f}  (paper MNLI {PAPER[name]})", flush=True)  # fmt: skip
    atomic_write_json(
        args.out,
        {
            "protocol": __doc__,
            "definition": args.definition,
            "run": str(args.run),
            "n_train_biased": len(rows),
            "n_ambiguous": n_amb,
            "n_test_anti_biased": int(anti_test.sum()),
            "minority_rule": (amp.results["minority"].details or {}).get("minority_rule")
            if "minority" in amp.results
            else None,
            "note": "every scheme is the fast-path MLP on frozen MiniLM, the family that "
            "marked the minority examples (evaluate_amplified's default evaluator is a "
            "different family; the debiasing objectives here need the MLP)",
            "seeds": list(range(1, args.seeds + 1)),
            "table": table,
            "wall_s": round(time.perf_counter() - t0, 1),
            "versions": dependency_versions(),
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
