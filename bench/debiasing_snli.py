"""Debiasing objectives on SNLI and on planted artifacts (issue 12's measurements).

1. SNLI: train on test_tokenized (9,824), evaluate on dev (9,842); bias model =
   hypothesis-only MLP (out-of-fold on the training split, early-stopped on the
   out-of-fold NLL within 30 epochs, temperature-scaled); frozen MiniLM pair features;
   every method x 3 seeds, ``--fast-epochs`` epochs (default 30, enough for every
   debiased run to reach 99% of its best dev accuracy; ``epochs_to_best_<m>``); prediction bias on the NLI heuristics (overlap, negation,
   hypothesis length, word-label PMI) at the plain model's thresholds; with
   ``--cross-bias`` the Fig. 6/7 matrix (each heuristic's biased segment as the bias model).
2. Planted artifacts: ``make_nli_artifacts`` trains with the cue word in 90% of the
   contradictions; the evaluation data carries the cue in half of the *non*-
   contradictions and in no contradiction, so following the cue is always wrong there.
   Reliance = how often a model answers "contradiction" on those cue-carrying examples;
   the share of plain training's reliance each method removes is reported.

Writes ``bench/results/debiasing.json`` (and run directories under ``runs/debiasing-*``).

3. ``--path finetune``: the SNLI run with MiniLM fine-tunes through the fine-tuning
   engine instead of the fast path (``debiasing`` analysis, ``path="finetune"``): plain,
   PoE, LearnedMixin+H, ConfReg and reweighting, 1 epoch, ``--seeds`` seeds, the same
   hypothesis-only bias model (fast MLP, out-of-fold), on a seeded subset of
   ``--n-train`` training pairs (CPU time); writes ``bench/results/debiasing_finetune.json``.

``--hard-subset file:<ids>`` (or ``marks:<run dir>``) scores the SNLI run's *hard*
accuracy on a subset of the user's own instead of the bias model's errors.

Usage::

    python bench/debiasing_snli.py [--seeds 3] [--cross-bias] [--only snli planted]
        [--fast-epochs 30] [--hard-subset file:hard_ids.txt]
    python bench/debiasing_snli.py --path finetune --seeds 1 --n-train 4000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import spurious
from spurious import load_dataset
from spurious.data.synthetic import make_nli_artifacts
from spurious.provenance import dependency_versions
from spurious.utils.io import atomic_write_json, read_json

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
#: The SNLI fast path only (the planted run encodes 6,000 more pairs): 1 seed, 2 epochs.
SMOKE_ARGS = ["--seeds", "1", "--fast-epochs", "2", "--only", "snli"]


def _table(res) -> list[dict]:
    return res.details["table"]


def snli(seeds: int, cross_bias: bool, epochs: int, hard_subset: str | None) -> dict:
    train = load_dataset(DATA / "snli/test_tokenized.jsonl", "nli", name="snli-test")
    dev = load_dataset(DATA / "snli/dev.jsonl", "nli", name="snli-dev")
    t0 = time.perf_counter()
    params = {"n_seeds": seeds, "cross_bias": cross_bias, "epochs": epochs}
    if hard_subset:
        params["hard_subset"] = hard_subset
    run = spurious.run(
        train,
        eval=dev,
        analyses={"debiasing": params},
        # Another configuration, another run directory (a run never mixes two).
        out=ROOT / "runs" / ("debiasing-snli-cross" if cross_bias else "debiasing-snli"),
        progress=False,
    )
    res = run["debiasing"]
    if not res.ok:
        raise RuntimeError(res.error)
    return {
        "wall_s": round(time.perf_counter() - t0, 1),
        "params": params,
        "metrics": res.metrics,
        "table": _table(res),
        "thresholds": res.details["thresholds"],
        "bias_model": res.details["bias_model"],
        "hard_definition": res.details["hard_definition"],
        "loss_params": res.details["loss_params"],
        "eval_curves": res.details["eval_curves"],
        "headline": res.headline,
        "cross_bias": res.details.get("cross_bias"),
    }


FT_METHODS = ["plain", "poe", "learned_mixin_h", "conf_reg", "reweight"]


def snli_finetune(seeds: int, n_train: int | None, methods: list[str], epochs: int) -> dict:
    train = load_dataset(DATA / "snli/test_tokenized.jsonl", "nli", name="snli-test")
    dev = load_dataset(DATA / "snli/dev.jsonl", "nli", name="snli-dev")
    if n_train is not None and n_train < len(train):
        rows = np.sort(np.random.default_rng(0).choice(len(train), n_train, replace=False))
        train = train.subset(rows, f"snli-test[{n_train}, seed 0]")
    t0 = time.perf_counter()
    run = spurious.run(
        train,
        eval=dev,
        analyses={
            "debiasing": {
                "path": "finetune",
                "methods": methods,
                "n_seeds": seeds,
                "finetune": {"epochs": epochs},
            }
        },
        out=ROOT / "runs" / "debiasing-snli-finetune",
        progress=False,
    )
    res = run["debiasing"]
    if not res.ok:
        raise RuntimeError(res.error)
    return {
        "n_train": len(train),
        "n_eval": len(dev),
        "epochs": epochs,
        "seeds": seeds,
        "wall_s": round(time.perf_counter() - t0, 1),
        "metrics": res.metrics,
        "table": _table(res),
        "thresholds": res.details["thresholds"],
        "bias_model": res.details["bias_model"],
        "finetune": res.details["finetune"],
    }


def planted(seeds: int, epochs: int) -> dict:
    train = make_nli_artifacts(n=4000, artifact_rate=0.9, random_state=0).dataset
    test_synth = make_nli_artifacts(
        n=2000, artifact_label="contradiction", artifact_rate=0.0, leak_rate=0.5, random_state=1
    )
    test = test_synth.dataset
    run = spurious.run(
        train,
        eval=test,
        analyses={
            "debiasing": {
                "n_seeds": seeds,
                "heuristics": ["negation_in_hypothesis"],
                "epochs": epochs,
            }
        },
        out=ROOT / "runs" / "debiasing-planted",
        progress=False,
    )
    res = run["debiasing"]
    if not res.ok:
        raise RuntimeError(res.error)
    cue = np.asarray(test_synth.has_artifact)
    contradiction = list(test.label_names).index("contradiction")
    # Per method and seed predictions are not stored; correctness is. On cue-carrying
    # non-contradictions, "wrong" includes following the cue and other mistakes, so we
    # report reliance as error on those minus error on cue-free non-contradictions.
    scores = res.scores.set_index("id").loc[list(test.ids)]
    non_contra = np.asarray(test.labels) != contradiction
    out = {"metrics": res.metrics, "table": _table(res), "reliance": {}, "epochs": epochs,
           "headline": res.headline}  # fmt: skip
    for m in res.details["methods"]:
        correct = scores[f"correct_{m}"].to_numpy()
        err_cue = 1 - correct[cue & non_contra].mean()
        err_clean = 1 - correct[~cue & non_contra].mean()
        out["reliance"][m] = {"error_with_cue": err_cue, "error_without_cue": err_clean,
                              "reliance": err_cue - err_clean}  # fmt: skip
    base = out["reliance"]["plain"]["reliance"]
    for r in out["reliance"].values():
        r["share_removed"] = None if base <= 0 else 1 - r["reliance"] / base
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--cross-bias", action="store_true")
    ap.add_argument("--only", nargs="+", default=["snli", "planted"])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--path", choices=["fast", "finetune"], default="fast")
    ap.add_argument("--n-train", type=int, default=4000, help="finetune: training subset")
    ap.add_argument("--epochs", type=int, default=1, help="finetune: epochs")
    ap.add_argument("--methods", nargs="+", default=FT_METHODS, help="finetune: methods")
    ap.add_argument("--fast-epochs", type=int, default=30, help="fast path: main-model epochs")
    ap.add_argument("--hard-subset", default=None, help="snli: 'file:<ids>' or 'marks:<dir>'")
    args = ap.parse_args()
    results: dict = {"protocol": __doc__}
    if args.path == "finetune":
        out = args.out or ROOT / "bench/results/debiasing_finetune.json"
        results["snli_finetune"] = snli_finetune(
            args.seeds, args.n_train, args.methods, args.epochs
        )
        for row in results["snli_finetune"]["table"]:
            print(f"snli-ft {row['method']:16s} acc {row['accuracy']:.3f} hard "
                  f"{row['hard_accuracy']:.3f} cost x{row['cost_ratio']:.2f}", flush=True)  # fmt: skip
        results["versions"] = dependency_versions()
        atomic_write_json(out, results)
        return 0
    args.out = args.out or ROOT / "bench/results/debiasing.json"
    command = "python bench/debiasing_snli.py " + " ".join(sys.argv[1:])
    if "planted" in args.only:
        results["planted"] = planted(args.seeds, args.fast_epochs)
        for m, r in results["planted"]["reliance"].items():
            print(f"planted {m:16s} reliance {r['reliance']:+.3f} removed {r['share_removed']}",
                  flush=True)  # fmt: skip
    if "snli" in args.only:
        if not DATA.exists():
            print(f"needs {DATA}", file=sys.stderr)
            return 1
        results["snli"] = snli(args.seeds, args.cross_bias, args.fast_epochs, args.hard_subset)
        for row in results["snli"]["table"]:
            print(f"snli {row['method']:16s} acc {row['accuracy']:.3f} hard "
                  f"{row['hard_accuracy']:.3f} cost x{row['cost_ratio']:.2f} "
                  f"epochs to best {row['epochs_to_best']}", flush=True)  # fmt: skip
    # --only re-runs some parts: keep the others' results (and their commands) from the file
    previous = read_json(args.out) if args.out.exists() else {}
    kept = {k: previous[k] for k in ("planted", "snli") if k in previous and k not in results}
    commands = {**previous.get("commands_by_part", {}), **{k: command for k in args.only}}
    results = {**results, **kept, "commands_by_part": commands}
    results["versions"] = dependency_versions()
    atomic_write_json(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
