"""Paper 004 on SNLI: are adversarially filtered evaluation sets fair?

AFLite (evaluation-set mode, paper 004 Table 3 hyperparameters) filters SNLI dev
(9,842 pairs) with adversaries of increasing strength: bag of words, tf-idf, frozen
MiniLM pair features and MiniLM fine-tuned on a held-out *warm-up* split (paper 000
Sec. 2, paper 004 App. D: 10% of the training pool per representation seed, never reused
by AFLite; 15% of each warm-up split is held out for early stopping). Each fine-tuned
representation seed (``--rep-seeds``: warm-up subsample and fine-tuning seed) runs with
every AFLite seed (``--seeds``), so the fine-tuned adversary's cells average over
representations x AFLite seeds as in the paper. AFLite's classifiers train on the pool
(``test_tokenized.jsonl``, 9,824 pairs) minus every warm-up split, for every adversary
alike. The evaluated models (trained here on the whole pool, written as prediction files
and read back through ``--predictions``): logistic regression on bag of words and on
tf-idf, the fast MLP on MiniLM pair features (two sizes, two seeds) and on the hypothesis
embedding alone. Annotator agreement uses the 5 annotator labels of the dev pairs that
``snli_1.0_dev_first1288.jsonl`` carries (matched by premise, hypothesis and gold label).

Every evaluated model here is built on one of the adversaries' own representations
(bag of words, tf-idf, frozen MiniLM): this is the "same family" case of paper 004
Fig. 4, not a sample of independent models.

Usage::

    .venv/bin/python bench/fairness_snli.py            # writes bench/results/fairness_snli.json
    .venv/bin/python bench/fairness_snli.py --seeds 0 --rep-seeds 0 --adversaries bow minilm_ft
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402

import spurious  # noqa: E402
from spurious import load_dataset  # noqa: E402
from spurious.context import RunContext  # noqa: E402
from spurious.provenance import cpu_model  # noqa: E402
from spurious.utils.io import atomic_write_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "snli"
ADVERSARIES = ("bow", "tfidf", "minilm", "minilm_ft")
#: One AFLite seed, bag of words and one 1-epoch MiniLM warm-up adversary, 50 bootstraps.
SMOKE_ARGS = ["--seeds", "0", "--rep-seeds", "0", "--adversaries", "bow", "minilm_ft",
              "--finetune-epochs", "1", "--n-bootstrap", "50"]  # fmt: skip


def warmup_adversaries(pool, rep_seeds, fraction, epochs, out: Path) -> tuple[list, list[str]]:
    """Fine-tune MiniLM on one held-out warm-up split per representation seed.

    Returns the warm-up splits (to hold out of AFLite's pool) and the ``finetuned:``
    specs of their models.
    """
    from spurious.models.finetune import FineTuneConfig, fine_tune
    from spurious.models.finetune.cached import warmup_split
    from spurious.models.finetune.outputs import METRICS_FILE

    warm_splits, specs = [], []
    for s in rep_seeds:
        warm, _ = warmup_split(pool, fraction, seed=s)
        # paper 004 App. D holds out examples for early stopping; here 15% of the warm-up
        stop, fit = warmup_split(warm, 0.15, seed=s)
        folder = out / f"warmup-s{s}"
        cfg = FineTuneConfig(model="minilm", epochs=epochs, seed=s, record_dynamics=False)
        t0 = time.perf_counter()
        # continue an interrupted warm-up; train a finished one again (a re-run measures
        # its time too, and fine_tune refuses to resume a finished one)
        finished = (folder / METRICS_FILE).is_file()
        res = fine_tune(
            fit, stop, cfg, folder, progress=False, resume=not finished, overwrite=finished
        )
        print(f"warm-up seed {s}: fine-tuned on {len(fit)} pairs (early stopping on "
              f"{len(stop)}) in {time.perf_counter() - t0:.0f}s -> {res.model_dir}", flush=True)  # fmt: skip
        warm_splits.append(warm)
        specs.append(f"finetuned:{folder}")
    return warm_splits, specs


def annotations_file(dev, out: Path) -> int:
    """Write {id, annotator_labels} for the dev pairs of the original-schema file."""
    raw = {}
    with (DATA / "snli_1.0_dev_first1288.jsonl").open() as fh:
        for line in fh:
            r = json.loads(line)
            raw[(r["sentence1"], r["sentence2"], r["gold_label"])] = r["annotator_labels"]
    f = dev.frame
    rows = []
    for i, p, h, lab in zip(dev.ids, f["premise"], f["hypothesis"], f["label"], strict=True):
        labels = raw.get((p, h, lab))
        if labels is not None:
            rows.append(json.dumps({"id": str(i), "annotator_labels": labels}))
    atomic_write_text(out, "\n".join(rows) + "\n")
    return len(rows)


def train_models(train, dev, out: Path) -> dict[str, dict]:
    """Train the evaluated models; write their dev predictions as JSONL files."""
    from spurious.models.debias.fast import train_fast

    ctx = RunContext(train, dev, progress=False)
    names = np.array(dev.label_names, dtype=object)
    specs = {}
    for feats in ("bow", "tfidf"):
        Xtr, Xev = ctx.features(feats, "full"), ctx.features(feats, "full", split="eval")
        specs[f"logreg-{feats}"] = (
            lambda Xtr=Xtr, Xev=Xev: (
                LogisticRegression(max_iter=1000, C=1.0).fit(Xtr, train.labels).predict(Xev)
            ),
            feats,
        )
    for view, tag in (("full", "minilm"), ("hypothesis_only", "minilm-hyp")):
        Xtr = np.asarray(ctx.features("minilm", view))
        Xev = np.asarray(ctx.features("minilm", view, split="eval"))
        for hidden, seed in ((256, 0), (256, 1), (64, 0)) if view == "full" else ((256, 0),):
            specs[f"mlp{hidden}-{tag}-s{seed}"] = (
                lambda Xtr=Xtr, Xev=Xev, hidden=hidden, seed=seed: (
                    train_fast(Xtr, train.labels, hidden_size=hidden, epochs=10, random_state=seed)
                    .predict_proba(Xev)
                    .argmax(axis=1)
                ),
                "minilm" if view == "full" else "minilm-hyp",
            )
    models = {}
    out.mkdir(parents=True, exist_ok=True)
    for name, (fit, family) in specs.items():
        t0 = time.perf_counter()
        pred = fit()
        path = out / f"{name}.jsonl"
        atomic_write_text(
            path,
            "".join(
                json.dumps({"id": str(i), "prediction": str(names[k])}) + "\n"
                for i, k in zip(dev.ids, pred, strict=True)
            ),
        )
        acc = float((pred == dev.labels).mean())
        models[name] = {"file": str(path), "family": family, "accuracy": acc,
                        "train_s": round(time.perf_counter() - t0, 2)}  # fmt: skip
        print(f"model {name}: dev accuracy {acc:.3f}", flush=True)
    return models


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="AFLite seeds")
    ap.add_argument("--rep-seeds", type=int, nargs="+", default=[0, 1, 2],
                    help="representation seeds of the fine-tuned adversary")  # fmt: skip
    ap.add_argument("--adversaries", nargs="+", default=list(ADVERSARIES), choices=ADVERSARIES)
    ap.add_argument("--warmup-fraction", type=float, default=0.1)
    ap.add_argument("--finetune-epochs", type=int, default=3)
    ap.add_argument("--n-bootstrap", type=int, default=1000)
    ap.add_argument("--out", default="runs/fairness-snli")
    ap.add_argument("--results", default="bench/results/fairness_snli.json")
    args = ap.parse_args()
    out = ROOT / args.out
    pool = load_dataset(DATA / "test_tokenized.jsonl", "nli")
    dev = load_dataset(DATA / "dev.jsonl", "nli")
    t0 = time.perf_counter()
    n_annot = annotations_file(dev, out / "inputs" / "annotations.jsonl")
    models = train_models(pool, dev, out / "inputs" / "predictions")
    t_models = time.perf_counter() - t0
    t0 = time.perf_counter()
    warm_splits, ft_specs = [], []
    if "minilm_ft" in args.adversaries:
        warm_splits, ft_specs = warmup_adversaries(
            pool, args.rep_seeds, args.warmup_fraction, args.finetune_epochs, out / "warmup"
        )
    t_warmup = time.perf_counter() - t0
    # AFLite's pool: the training pool minus every warm-up split (never reused), the
    # same for every adversary so that their AF-selected sets are comparable.
    held = set().union(*(set(w.ids) for w in warm_splits)) if warm_splits else set()
    keep = [i for i, x in enumerate(pool.ids) if x not in held]
    train = pool.subset(keep, f"{pool.name}[aflite-pool]")
    train_file = out / "inputs" / "aflite_pool.jsonl"
    train.frame[["id", "premise", "hypothesis", "label"]].to_json(
        train_file, orient="records", lines=True
    )
    specs = {"bow": "bow", "tfidf": "tfidf", "minilm": "minilm", "minilm_ft": ft_specs}
    adversaries = {a: specs[a] for a in args.adversaries}
    # Declared families: the evaluated models are built on the adversaries' own
    # representations (the same-family case of paper 004 Fig. 4).
    families = {m: v["family"] for m, v in models.items()}
    # Only the chosen adversaries: the analysis refuses a family of a name not in the run.
    adversary_families = {"bow": "bow", "tfidf": "tfidf", "minilm": "minilm", "minilm_ft": "minilm"}
    families.update({a: adversary_families[a] for a in adversaries})
    params = {
        "adversaries": adversaries,
        "seeds": args.seeds,
        "families": families,
        "annotations": str(out / "inputs" / "annotations.jsonl"),
        "n_bootstrap": args.n_bootstrap,
    }
    t1 = time.perf_counter()
    run = spurious.run(
        str(train_file),
        "nli",
        eval=str(DATA / "dev.jsonl"),
        predictions=[v["file"] for v in models.values()],
        analyses={"fairness": params},
        out=out / "run",
        force=True,
        progress=False,
    )
    t_analysis = time.perf_counter() - t1
    res = run["fairness"]
    if res.status != "ok":
        raise SystemExit(f"fairness {res.status}: {res.error}")
    d = res.details
    result = {
        "command": "python bench/fairness_snli.py --seeds "
        + " ".join(map(str, args.seeds))
        + " --rep-seeds "
        + " ".join(map(str, args.rep_seeds))
        + " --adversaries "
        + " ".join(args.adversaries)
        + f" --n-bootstrap {args.n_bootstrap} --results {args.results}",
        "data": {
            "train": "test_tokenized.jsonl minus the warm-up splits",
            "n_pool": len(pool),
            "n_warmup_held_out": len(held),
            "warmup_fraction": args.warmup_fraction,
            "rep_seeds": args.rep_seeds if ft_specs else [],
            "n_train": len(train),
            "eval": "dev.jsonl",
            "n_eval": len(dev),
            "n_annotated": n_annot,
        },
        "aflite_params": d["aflite_params"],
        "adversaries": d["adversaries"],
        "seeds": d["seeds"],
        "models": models,
        "stages": d["stages"],
        "runs": d["runs"],
        "matrix": d["matrix"],
        "n_selected": d["n_selected"],
        "ranks": d["ranks"],
        "ranking": d["ranking"],
        "family_rank_change": d["family_rank_change"],
        "agreement": d["agreement"],
        "metrics": res.metrics,
        "verdict": d["verdict"],
        "headline": res.headline,
        "runtime_s": {
            "models": round(t_models, 1),
            "warmup_finetunes": round(t_warmup, 1),
            "analysis_with_report": round(t_analysis, 1),
            "analysis": res.provenance.timings.get("total_s"),
        },
        "machine": {
            "cpu": cpu_model(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        "run_dir": str(out / "run"),
    }
    dest = ROOT / args.results
    text = json.dumps(result, indent=1, default=float) + "\n"
    # paths relative to the checkout, so the committed result does not name this machine's
    text = text.replace(json.dumps(str(ROOT))[1:-1] + "/", "")
    atomic_write_text(dest, text)
    print(d["verdict"])
    print(json.dumps(res.headline, default=float))
    print(f"analysis {t_analysis:.0f}s; wrote {dest}")


if __name__ == "__main__":
    main()
