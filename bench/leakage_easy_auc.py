"""Does the per-example leakage score rank "easy" NLI examples first? (issue 19 item 5)

Gururangan et al. (2018) call an SNLI test example *easy* when a hypothesis-only
fastText classifier trained on SNLI train labels it correctly, *hard* otherwise. Their
hard/easy split and SNLI train are not available offline, so this builds the same kind
of label from what ../shared/data holds:

- the ``partial_input`` analysis is trained on SNLI test_tokenized (9,824) and scores
  SNLI dev (9,842), with bag-of-words and/or MiniLM probes;
- "easy" dev examples are those a *separate* fastText-like hypothesis-only model labels
  correctly: a linear bag of unigrams + bigrams (scikit-learn ``CountVectorizer`` +
  ``LogisticRegression``), trained on the same SNLI test split. It is not the product's
  probe (other features, other model), so the check is not circular;
- AUC of the score for "easy" under two rules: the old one (max p(gold) over every
  partial input, premise-only included) and the current one (max over the partial
  inputs whose Delta_maj interval lies above 0).

Writes ``bench/results/leakage_easy_auc.json`` atomically. Usage::

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python bench/leakage_easy_auc.py [--features bow minilm]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from spurious import load_dataset
from spurious.detectors import PartialInput
from spurious.provenance import dependency_versions
from spurious.utils.io import atomic_write_json

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
#: Bag-of-words probes only.
SMOKE_ARGS = ["--features", "bow"]


def easy_labels(train, test) -> tuple[np.ndarray, float]:
    """Correctness of a fastText-like hypothesis-only model (unigrams + bigrams, linear)."""
    vec = CountVectorizer(ngram_range=(1, 2), min_df=2, lowercase=True)
    X_tr = vec.fit_transform(train.frame["hypothesis"])
    X_te = vec.transform(test.frame["hypothesis"])
    clf = LogisticRegression(max_iter=2000, C=1.0).fit(X_tr, train.labels)
    correct = clf.predict(X_te) == test.labels
    return correct, float(correct.mean())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--features", nargs="+", default=["bow", "minilm"])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/leakage_easy_auc.json")
    args = ap.parse_args()
    if not DATA.exists():
        print(f"needs {DATA}", file=sys.stderr)
        return 1
    train = load_dataset(DATA / "snli/test_tokenized.jsonl", "nli", name="snli-test")
    test = load_dataset(DATA / "snli/dev.jsonl", "nli", name="snli-dev")
    easy, easy_acc = easy_labels(train, test)
    out: dict = {
        "setting": "train SNLI test_tokenized (9,824) -> score SNLI dev (9,842); 'easy' = "
        "correct by a unigram+bigram logistic hypothesis-only model trained on SNLI test "
        "(a stand-in for Gururangan et al.'s fastText on SNLI train, not available offline)",
        "easy_model_accuracy": easy_acc,
        "n_easy": int(easy.sum()),
        "n_eval": len(test),
        "runs": {},
    }
    print(f"easy model accuracy {easy_acc:.3f}; {int(easy.sum())} easy of {len(test)}")
    for feats in args.features:
        t0 = time.perf_counter()
        res = PartialInput(features=feats, random_state=0).run(train, test)
        s = res.scores
        partial = [c for c in ("premise_only", "hypothesis_only") if f"p_gold_{c}" in s]
        old = np.max(np.stack([s[f"p_gold_{c}"].to_numpy() for c in partial]), axis=0)
        row = {
            "auc_old_max_over_all_partial_inputs": float(roc_auc_score(easy, old)),
            "auc_new_leaking_conditions_only": float(roc_auc_score(easy, s["partial_input_score"])),
            **{f"auc_p_gold_{c}": float(roc_auc_score(easy, s[f"p_gold_{c}"])) for c in partial},
            "leaky_conditions": res.details["leaky_conditions"],
            **{
                f"delta_maj_{c}_ci": [
                    res.metrics[f"delta_maj_{c}_ci_low"],
                    res.metrics[f"delta_maj_{c}_ci_high"],
                ]
                for c in partial
            },
            "wall_s": round(time.perf_counter() - t0, 1),
        }
        out["runs"][feats] = row
        print(
            f"{feats}: AUC old {row['auc_old_max_over_all_partial_inputs']:.3f} -> new "
            f"{row['auc_new_leaking_conditions_only']:.3f} (leaky: {row['leaky_conditions']})",
            flush=True,
        )
    out["command"] = "python bench/leakage_easy_auc.py --features " + " ".join(args.features)
    out["versions"] = dependency_versions()
    atomic_write_json(args.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
