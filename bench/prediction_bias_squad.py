"""Prediction bias of three real SQuAD 1.1 models, with the natural (human) bias.

Data: ``../shared/data/squad/dev-v1.1.json`` (10,570 questions, up to 6 annotator
answers) and the predictions of ELECTRA-base, BERT-base-uncased and BERT-Tiny in
``../shared/data/predictions/squad/``. For every QA heuristic available (the spaCy ones
when spaCy and its English model are installed), the script

1. searches the threshold with the largest prediction bias on the reference model
   (BERT-base-uncased, the closest we have to the paper's BERT-base-cased) and splits
   every model and the annotators there (the paper's protocol, Sec. 5.2 / App. C);
2. repeats the table with each model's own threshold;
3. evaluates at the paper's App. C thresholds;
4. checks App. C's group sizes: for each heuristic, and for the variants the heuristics
   offer as parameters, the two group sizes at the paper's threshold, which group the
   reference model does worse on, and whether that group's size equals App. C's
   (``app_c_group_sizes`` in the JSON). ``--reference-readings`` adds three readings of
   the paper's reference code (``isbiased``) that are not library heuristics: sim-word
   over case-kept words, sim-ents counting context entities of the *answer's* types (as
   the code does; spaCy NER of every answer), subj-pos with the code's subject matching;

for exact match (the paper's metric) and F1, with the paper's bootstrap (100 trials of
800, quantiles 0.025 / 0.975, seed 0). It writes ``bench/results/prediction_bias_squad.json``
and a run directory with the HTML report. Usage::

    python bench/prediction_bias_squad.py [--no-spacy] [--reference-readings]
        [--run-dir runs/bench-prediction-bias]
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import time
from pathlib import Path

import numpy as np

from spurious import load_dataset
from spurious.data.predictions import load_predictions
from spurious.evaluate.prediction_bias import (
    PAPER_QA_THRESHOLDS,
    PAPER_QA_WORSE_GROUP_SIZES,
    bias_table,
    prediction_bias,
)
from spurious.heuristics import HEURISTICS, compute_heuristics, list_heuristics
from spurious.heuristics.qa import AnswerLength, WordDistance, question_entity_types
from spurious.provenance import dependency_versions
from spurious.report import render_report
from spurious.runner import dataset_entry, write_manifest
from spurious.stats.metrics import example_scores
from spurious.utils.io import atomic_write_json
from spurious.utils.metric_keys import metric_key

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
MODELS = ("electra-base", "bert-base-uncased", "bert-tiny")
REFERENCE = "bert-base-uncased"
#: The default run (spaCy heuristics when installed) on the copy's five SQuAD articles.
SMOKE_ARGS: list[str] = []


def _r(x: float | None, k: int = 4) -> float | None:
    return None if x is None or not math.isfinite(x) else round(float(x), k)


def summarise(res, heuristics: list[str]) -> dict:
    """Per heuristic: threshold, group sizes, worse-group size, per-model rows, human."""
    m = res.metrics
    out: dict = {}
    for h in heuristics:
        rows = {r["model"]: r for r in res.details["table"] if r["heuristic"] == h}
        entry: dict = {"models": {}}
        for name, r in rows.items():
            entry["models"][name] = {
                "threshold": _r(r["threshold"]),
                "n_low": r["n_low"],
                "n_high": r["n_high"],
                "bias": _r(r["bias"]),
                "worse_group": r["worse_group"],
                "worse_group_n": r[f"n_{r['worse_group']}"] if r["worse_group"] else None,
                "worse_performance": _r(r["worse_performance"]),
                "low": [_r(r["low_mean"]), _r(r["low_ci_low"]), _r(r["low_ci_high"])],
                "high": [_r(r["high_mean"]), _r(r["high_ci_low"]), _r(r["high_ci_high"])],
                "validity": r["validity"],
            }
        if metric_key("threshold", h) in m:
            entry["threshold"] = _r(m[metric_key("threshold", h)])
            entry["n_low"] = int(m[metric_key("n_low", h)])
            entry["n_high"] = int(m[metric_key("n_high", h)])
        nat = [r for r in res.details["natural"] if r["heuristic"] == h]
        entry["human"] = [
            {
                "threshold": _r(r["threshold"]),
                "models": r["models"],
                "bias": _r(r["bias"]),
                "annotator": r["annotator"],
                "worse_performance": _r(r["worse_performance"]),
                "per_annotator_bias": {k: _r(v["bias"]) for k, v in r["per_annotator"].items()},
            }
            for r in nat
        ]
        out[h] = entry
    return out


def group_sizes_at(attr: np.ndarray, correct: np.ndarray, threshold: float, paper_n: int | None):
    """Group sizes at ``threshold``, the reference model's worse group, and App. C's size."""
    a = np.asarray(attr, dtype=np.float64)
    ok = np.isfinite(a)
    n_low, n_high = int((a[ok] <= threshold).sum()), int((a[ok] > threshold).sum())
    res = prediction_bias(correct, a, threshold)
    worse = res.worse_group
    if worse is None:  # no significant gap: the lower mean marks the worse group
        worse = "low" if res.low.mean < res.high.mean else "high"
    n_worse = n_low if worse == "low" else n_high
    return {
        "threshold": threshold,
        "n_low": n_low,
        "n_high": n_high,
        "n_undefined": int((~ok).sum()),
        "worse_group": worse,
        "worse_group_n": n_worse,
        "bias_em": _r(res.bias),
        "paper_worse_group_n": paper_n,
        "reproduces": paper_n is not None and n_worse == paper_n,
    }


def variant_attributes(dev, attrs, heuristics: list[str]) -> dict[str, np.ndarray]:
    """The library's other readings of the App. C heuristics (parameters, not defaults)."""
    out = {
        "word_distance(variant='nearest_end')": WordDistance(variant="nearest_end").compute(dev),
        "answer_length(aggregate='mean')": AnswerLength(aggregate="mean").compute(dev),
    }
    if "entity_count" in heuristics:
        # untyped='nan' differs from the default only on untyped questions: no second NER.
        untyped = np.array([question_entity_types(q) is None for q in dev.texts("question")])
        v = attrs["entity_count"].to_numpy(dtype=np.float64).copy()
        v[untyped] = np.nan
        out["entity_count(untyped='nan')"] = v
    return out


def reference_readings(dev) -> dict[str, np.ndarray]:
    """Three readings of the reference code (MIR-MU/isbiased ``heuristics.py``), not shipped.

    sim-word: ``|set(q) & set(c)|`` over case-kept ``\\w+`` words (the code tokenises
    with NLTK's ``word_tokenize`` and keeps alphanumeric tokens; NLTK is no dependency
    here). sim-ents: the largest number of context entities sharing a label with an
    entity of the *last* annotator's answer (the code's loop keeps the last one), 0
    without one. subj-pos: over the question's ``nsubj`` tokens (text as written, wh-words
    included) found in the context as substrings, the number of their occurrences
    starting at or before the answer start; -1 (undefined, left out of the split as the
    code does) when the last subject is not in the context.
    """
    import re

    from spurious.heuristics.nlp import load_spacy

    nlp = load_spacy()
    word = re.compile(r"\w+")
    rows = list(zip(dev.texts("question"), dev.texts("context"), dev.frame["answers"],
                    dev.frame["answer_starts"], strict=True))  # fmt: skip
    sim_word = np.array([len(set(word.findall(q)) & set(word.findall(c))) for q, c, _, _ in rows])

    contexts = list(dict.fromkeys(c for _, c, _, _ in rows))
    ents = {
        c: [e.label_ for e in d.ents] for c, d in zip(contexts, nlp.pipe(contexts), strict=True)
    }
    last = list(dict.fromkeys(a[-1] for _, _, a, _ in rows))
    a_ents = {a: [e.label_ for e in d.ents] for a, d in zip(last, nlp.pipe(last), strict=True)}
    sim_ents = np.array(
        [max([ents[c].count(lab) for lab in a_ents[a[-1]]] + [0]) for _, c, a, _ in rows]
    )

    questions = list(dict.fromkeys(q for q, _, _, _ in rows))
    subjects = {
        q: [t.text for t in d if t.dep_ == "nsubj"]
        for q, d in zip(questions, nlp.pipe(questions), strict=True)
    }
    subj_pos = np.empty(len(rows))
    for i, (q, c, _, starts) in enumerate(rows):
        pos, best = 0.0, 0
        for item in subjects[q]:
            if item in c:
                n = sum(1 for m in re.finditer(re.escape(item), c) if m.start() <= starts[0])
                best = max(best, n)
                pos = best
            else:
                pos = np.nan
        subj_pos[i] = pos
    return {
        "shared_words(reference: case kept)": sim_word.astype(float),
        "entity_count(reference: answer entity types)": sim_ents.astype(float),
        "subject_position(reference code)": subj_pos,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--no-spacy", action="store_true", help="skip entity_count, subject_position")
    ap.add_argument(
        "--reference-readings",
        action="store_true",
        help="also size App. C's groups under three readings of the paper's code (spaCy)",
    )
    ap.add_argument("--run-dir", default=str(ROOT / "runs" / "bench-prediction-bias"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "prediction_bias_squad.json"))
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if not (DATA / "squad" / "dev-v1.1.json").exists():
        print(f"data not found under {DATA}", file=sys.stderr)
        return 1

    t_all = time.perf_counter()
    t0 = time.perf_counter()
    dev = load_dataset(DATA / "squad" / "dev-v1.1.json", "qa")
    preds = [load_predictions(DATA / "predictions" / "squad" / f"{m}.json", dev) for m in MODELS]
    official = {
        p.name: {
            "em": round(100 * float(example_scores(dev, p, "em").mean()), 2),
            "f1": round(100 * float(example_scores(dev, p, "f1").mean()), 2),
        }
        for p in preds
    }
    t_load = time.perf_counter() - t0

    plain = [n for n in list_heuristics("qa") if not HEURISTICS[n].requires_spacy]
    spacy_h = [n for n in list_heuristics("qa") if HEURISTICS[n].requires_spacy]
    t0 = time.perf_counter()
    # No cache: the timings are those of a first run.
    attrs = compute_heuristics(dev, plain, cache_dir=False)
    t_plain = time.perf_counter() - t0
    t_spacy = 0.0
    spacy_error = None
    if not args.no_spacy and spacy_h:
        t0 = time.perf_counter()
        try:
            extra = compute_heuristics(dev, spacy_h, cache_dir=False)
            for h in spacy_h:
                attrs[h] = extra[h].to_numpy()
        except ImportError as e:  # spaCy or its model missing: report without them
            spacy_error = str(e)
            spacy_h = []
        t_spacy = time.perf_counter() - t0
    else:
        spacy_h = []
    heuristics = plain + spacy_h

    tables: dict = {}
    timings: dict = {}
    shared_results = {}
    for metric in ("em", "f1"):
        t0 = time.perf_counter()
        shared = bias_table(dev, preds, attrs, metric=metric, reference=REFERENCE)
        timings[f"bias_shared_{metric}_s"] = round(time.perf_counter() - t0, 3)
        t0 = time.perf_counter()
        own = bias_table(dev, preds, attrs, metric=metric, shared_threshold=False)
        timings[f"bias_own_{metric}_s"] = round(time.perf_counter() - t0, 3)
        fixed = {h: t for h, t in PAPER_QA_THRESHOLDS.items() if h in heuristics}
        paper = bias_table(dev, preds, attrs[["id", *fixed]], metric=metric, thresholds=fixed)
        tables[metric] = {
            "shared_threshold": summarise(shared, heuristics),
            "own_threshold": summarise(own, heuristics),
            "paper_threshold": summarise(paper, list(fixed)),
            "summary": shared.summary,
        }
        shared_results[metric] = shared

    comparison = {}
    for h in heuristics:
        ours = tables["em"]["shared_threshold"][h]
        ref = ours["models"][REFERENCE]
        comparison[h] = {
            "paper_threshold": PAPER_QA_THRESHOLDS.get(h),
            "our_threshold_em": ours.get("threshold"),
            "our_threshold_f1": tables["f1"]["shared_threshold"][h].get("threshold"),
            "paper_worse_group_n": PAPER_QA_WORSE_GROUP_SIZES.get(h),
            "our_worse_group_n_em": ref["worse_group_n"],
            "our_worse_group_em": ref["worse_group"],
            "validity_em": ref["validity"],
        }

    # App. C's group sizes: defaults, library variants and (optionally) the code's readings.
    ref_em = example_scores(dev, preds[MODELS.index(REFERENCE)], "em")
    candidates = {h: attrs[h].to_numpy(dtype=float) for h in heuristics}
    candidates.update(variant_attributes(dev, attrs, heuristics))
    t_ref = 0.0
    if args.reference_readings and spacy_h:
        t0 = time.perf_counter()
        candidates.update(reference_readings(dev))
        t_ref = time.perf_counter() - t0
    app_c = {}
    for label, values in candidates.items():
        h = label.split("(")[0]
        if h in PAPER_QA_THRESHOLDS:
            app_c[label] = group_sizes_at(
                values, ref_em, PAPER_QA_THRESHOLDS[h], PAPER_QA_WORSE_GROUP_SIZES.get(h)
            )
    # The mean answer length reaches App. C's 3,124 one threshold lower (T=3).
    if "answer_length(aggregate='mean')" in candidates:
        app_c["answer_length(aggregate='mean') at T=3"] = group_sizes_at(
            candidates["answer_length(aggregate='mean')"], ref_em, 3.0, 3124
        )

    # A run directory with the report of the paper's setting (EM, shared thresholds).
    run_dir = Path(args.run_dir)
    res = shared_results["em"]
    res.save(run_dir / "prediction_bias")
    write_manifest(
        run_dir,
        command=["python", "bench/prediction_bias_squad.py", *(argv or sys.argv[1:])],
        config={"prediction_bias": res.params},
        seed=0,
        datasets={"eval": dataset_entry(dev)},
        results={"prediction_bias": res},
        timings={"total_s": time.perf_counter() - t_all},
    )

    render_report(run_dir)

    total = time.perf_counter() - t_all
    result = {
        "dataset": {"path": "squad/dev-v1.1.json", "n": len(dev), "fingerprint": dev.fingerprint},
        "models": list(MODELS),
        "reference": REFERENCE,
        "official_scores": official,
        "heuristics": heuristics,
        "spacy_heuristics": spacy_h,
        "spacy_error": spacy_error,
        "bootstrap": {"n_trials": 100, "sample_size": 800, "quantiles": [0.025, 0.975], "seed": 0},
        "tables": tables,
        "paper_comparison": comparison,
        "app_c_group_sizes": app_c,
        "timings_s": {
            "load_and_score": round(t_load, 3),
            "heuristics_without_spacy": round(t_plain, 3),
            "heuristics_spacy": round(t_spacy, 3),
            **timings,
            # The reference readings are a side check (a second spaCy pass): not counted.
            "reference_readings": round(t_ref, 3),
            "sweep_excluding_spacy": round(total - t_spacy - t_ref, 3),
            "sweep_including_spacy": round(total - t_ref, 3),
        },
        "versions": dependency_versions(),
    }
    atomic_write_json(args.out, result)
    print(f"wrote {args.out}; report {run_dir / 'report.html'}; total {total:.1f}s")
    for metric in ("em", "f1"):
        print(f"\n[{metric}] shared thresholds from {REFERENCE}")
        for h in heuristics:
            e = tables[metric]["shared_threshold"][h]
            cells = "  ".join(
                f"{n}={e['models'][n]['bias']}/{e['models'][n]['worse_performance']}"
                for n in MODELS
            )
            human = e["human"][0]["bias"] if e["human"] else None
            print(f"  {h:<22} T={e.get('threshold')} n={e.get('n_low')}/{e.get('n_high')}  "
                  f"{cells}  human={human}")  # fmt: skip
    print(f"\nApp. C group sizes ({REFERENCE}, EM, at the paper's thresholds)")
    for label, e in app_c.items():
        print(f"  {label:<48} T={e['threshold']:g} low/high {e['n_low']}/{e['n_high']} "
              f"(undefined {e['n_undefined']}), worse {e['worse_group']} n={e['worse_group_n']} "
              f"paper {e['paper_worse_group_n']} {'REPRODUCES' if e['reproduces'] else ''}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
