"""PSC representations for ``bench/peco_real.py --psc-features``: fine-tune, then embed.

Paper 003 App. B: PECO clusters the hypothesis as seen by a model trained on *full
pairs* (PSC). For each setting of ``bench/leakage_real.py`` this fine-tunes MiniLM on the
training portion's full pairs (``spurious.models.finetune.fine_tune``, default config;
SNLI 3 epochs, the others 2; the scored portion is the evaluation split, as in
``peco_real.py``'s own fine-tunes) and writes the pooled last layer of the scored
portion's hypotheses (the ``finetuned:<dir>`` features) to ``OUT/<name>.npy``, with the
row ids, the training history and the wall time in ``OUT/psc_meta.json``. Meant for a
GPU machine (the four fine-tunes took 67 s on one H200); ``peco_real.py`` then scores
the arrays on any machine.

Usage::

    python bench/peco_psc_features.py --out runs/peco-psc-gpu [--data ../shared/data]
        [--only snli] [--epochs 1] [--n-train 2000]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from leakage_real import settings  # bench/ is on sys.path when run as a script

ROOT = Path(__file__).resolve().parents[1]
#: CAD original only: 1 epoch on 200 of its training pairs, on the CPU.
SMOKE_ARGS = ["--only", "cad_original", "--epochs", "1", "--n-train", "200",
              "--out", "bench/results/peco-psc", "--work", "runs/peco-psc"]  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--only", nargs="+", default=None)
    ap.add_argument("--work", type=Path, default=Path("/tmp/peco-psc"))
    ap.add_argument("--epochs", type=int, default=None, help="default: SNLI 3, the others 2")
    ap.add_argument(
        "--n-train", type=int, default=None, help="fine-tune on a seeded subset of this size"
    )
    args = ap.parse_args()

    from spurious.features import make_featurizer
    from spurious.models.finetune import FineTuneConfig, fine_tune

    args.out.mkdir(parents=True, exist_ok=True)
    meta = {}
    for name, make in settings(args.data).items():
        if args.only and name not in args.only:
            continue
        train, scored = make()
        if args.n_train is not None and args.n_train < len(train):
            rows = np.sort(np.random.default_rng(0).choice(len(train), args.n_train, replace=False))
            train = train.subset(rows, f"{train.name}[{args.n_train}, seed 0]")
        epochs = args.epochs or (3 if name == "snli" else 2)
        t0 = time.perf_counter()
        res = fine_tune(
            train,
            scored,
            FineTuneConfig(epochs=epochs, record_dynamics=False),
            args.work / name,
            progress=False,
            overwrite=True,
        )
        train_s = time.perf_counter() - t0
        X = make_featurizer(f"finetuned:{args.work / name}/model").transform(
            scored, "hypothesis_only"
        )
        X = np.asarray(X, dtype=np.float32)
        np.save(args.out / f"{name}.npy", X)
        meta[name] = {
            "ids": [str(i) for i in scored.ids],
            "n_train": len(train),
            "n_scored": len(scored),
            "epochs": epochs,
            "train_s": round(train_s, 1),
            "history": res.history,
            "metrics": res.metrics,
            "shape": list(X.shape),
        }
        print(f"{name}: {X.shape} in {train_s:.0f}s", flush=True)
    (args.out / "psc_meta.json").write_text(json.dumps(meta, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
