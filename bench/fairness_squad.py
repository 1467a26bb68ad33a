"""Paper 004's fairness study on SQuAD 1.1 dev, adapted to extractive QA.

Paper 004 filters classification sets only; here extractive QA is reduced to
answer-sentence selection (candidates = the context's sentences, label = the sentence
holding the first gold answer's start; a conditional logit over the sentences as AFLite's
model family; :mod:`spurious.evaluate.fairness.qa`). SQuAD's training set is not available
offline, so dev (10,570 questions) is split by article into two halves and cross-fitted:
AFLite trains on one half and filters the other, then the halves swap.

Adversaries, weakest first: ``qa_position`` (sentence position and length),
``qa_lexical`` (+ question overlap, tf-idf cosine, BM25), ``qa_heuristic`` (+ spaCy NER
answer types x wh-word, entities of the asked type) x 3 AFLite seeds, with paper 004's Table 3 hyperparameters as shares of
the training half. Evaluated models: the three real prediction files in
``../shared/data/predictions/squad/`` (ELECTRA-base, BERT-base-uncased, BERT-Tiny), scored
by SQuAD F1 (the matrix) and EM. Annotator agreement: share of the other annotators'
answers equal to the first (SQuAD normalisation).

Usage::

    .venv/bin/python bench/fairness_squad.py          # writes bench/results/fairness_squad.json
    .venv/bin/python bench/fairness_squad.py --seeds 0
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

import spurious  # noqa: E402
from spurious.provenance import dependency_versions  # noqa: E402
from spurious.utils.io import atomic_write_text  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
MODELS = ("electra-base", "bert-base-uncased", "bert-tiny")
#: One AFLite seed per adversary, 50 bootstrap resamples.
SMOKE_ARGS = ["--seeds", "0", "--n-bootstrap", "50"]


def _load() -> tuple[float, float]:
    with open("/proc/loadavg") as fh:
        one, five = fh.read().split()[:2]
    return float(one), float(five)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--n-bootstrap", type=int, default=1000)
    ap.add_argument("--out", default="runs/fairness-squad")
    args = ap.parse_args()
    out = ROOT / args.out
    preds = [str(DATA / "predictions" / "squad" / f"{m}.json") for m in MODELS]
    params = {"seeds": args.seeds, "n_bootstrap": args.n_bootstrap}
    load_before = _load()
    t0 = time.perf_counter()
    run = spurious.run(
        str(DATA / "squad" / "dev-v1.1.json"),
        "qa",
        predictions=preds,
        analyses={"fairness": params},
        out=out / "run",
        force=True,
        progress=False,
    )
    wall = time.perf_counter() - t0
    res = run["fairness"]
    if res.status != "ok":
        raise SystemExit(f"fairness {res.status}: {res.error}")
    d, m = res.details, res.metrics
    result = {
        "command": "python bench/fairness_squad.py --seeds " + " ".join(map(str, args.seeds)),
        "protocol": (
            "SQuAD 1.1 dev only (no training split offline). Extractive QA reduced to "
            "answer-sentence selection; " + d["qa"]["protocol"] + ". AFLite evaluation-set "
            "mode with paper 004 Table 3 hyperparameters as shares of the training half "
            "(m=64, t=7.27%, k=1.82%, tau=0.75); model family: conditional logit over the "
            "context's sentences. Scores: SQuAD F1 (matrix) and EM per question. Annotator "
            "agreement: share of the other annotators' answers equal to the first answer "
            "after SQuAD normalisation (an analogue of SNLI's agreement with gold)."
        ),
        "data": {"eval": "squad/dev-v1.1.json", "n_eval": int(m["n_eval"])},
        "qa": d["qa"],
        "aflite_params": d["aflite_params"],
        "adversaries": d["adversaries"],
        "seeds": d["seeds"],
        "models": {p.rsplit("/", 1)[-1]: {"file": p} for p in preds},
        "stages": d["stages"],
        "runs": d["runs"],
        "matrix_f1": d["matrix"],
        "matrix_em": d["matrix_em"],
        "n_selected": d["n_selected"],
        "ranks": d["ranks"],
        "ranking": d["ranking"],
        "families": d["families"],
        "families_inferred": d["families_inferred"],
        "family_rank_change": d["family_rank_change"],
        "agreement": d["agreement"],
        "metrics": m,
        "verdict": d["verdict"],
        "runtime_s": {
            "total_with_report": round(wall, 1),
            "analysis": res.provenance.timings.get("total_s"),
        },
        "machine": {
            "cpus": os.cpu_count(),
            "load_avg_1m_5m_before": load_before,
            "load_avg_1m_5m_after": _load(),
            "python": platform.python_version(),
            "note": "2 cores shared with other jobs (a fine-tuning benchmark ran meanwhile)",
        },
        "versions": dependency_versions(),
        "run_dir": str((out / "run").relative_to(ROOT))
        if out.is_relative_to(ROOT)
        else str(out / "run"),
    }
    dest = ROOT / "bench" / "results" / "fairness_squad.json"
    atomic_write_text(dest, json.dumps(result, indent=1, default=float) + "\n")
    print(d["verdict"])
    print(f"wall {wall:.0f}s; wrote {dest}")


if __name__ == "__main__":
    main()
