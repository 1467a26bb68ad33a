"""The artifact atlas and the model-free associations on the real data (issue 20, "What to measure").

Atlas (Gardner et al. 2021 z test, Bonferroni and BH at alpha = 0.01, p0 = label prior,
unigrams, stop words kept, min_count = 5; Gururangan et al. 2018 add-100 PMI) on SNLI dev,
MNLI dev-matched, SST-2 train, and CAD (Kaushik et al. 2020) original vs revised
hypotheses (train splits; the revised split is also subsampled to the original's size,
seeded, since significance grows with n). For each: tokens significant per field under
both corrections, the shuffled-label control, the top 10 per label with z and PMI, and
the nine SNLI words issue 20 quotes from Gururangan et al.'s Table 4 (z, PMI, rank, flag).

Associations (out-of-fold binned accuracy over the majority, 1,000 label permutations, BH
over the features) on SNLI dev, MNLI dev-matched, SQuAD 1.1 dev (gold answer against a
random span of the same length) and SST-2 train.

All of it runs at the ~10k scale of ../shared/data: no SNLI/MNLI training split is
available offline, so counts are not comparable one-to-one with the papers' (computed on
550k / 393k training pairs). CPU seconds are per analysis, on a shared 2-core machine.

Usage::

    python bench/atlas_real.py            # everything
    python bench/atlas_real.py --only atlas
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from spurious.provenance import cpu_model

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
OUT = ROOT / "bench" / "results" / "atlas_real.json"
#: Everything (the atlas and the associations) on the small copy of the data.
SMOKE_ARGS: list[str] = []

#: The SNLI words issue 20 quotes from Gururangan et al. (2018), Table 4.
GURURANGAN_SNLI = {
    "contradiction": ["nobody", "sleeping", "cat"],
    "neutral": ["tall", "competition", "sad"],
    "entailment": ["outdoors", "instrument", "animal"],
}


def _load(name: str):
    from spurious import load_dataset

    paths = {
        "snli_dev": (DATA / "snli" / "dev.jsonl", "nli"),
        "mnli_dev_matched": (DATA / "mnli" / "dev_matched.jsonl", "nli"),
        "sst2_train": (DATA / "sst2" / "train.tsv", "text"),
        "cad_original_train": (DATA / "cad_snli" / "original" / "train.tsv", "nli"),
        "cad_revised_hypothesis_train": (
            DATA / "cad_snli" / "revised_hypothesis" / "train.tsv",
            "nli",
        ),
        "squad_dev": (DATA / "squad" / "dev-v1.1.json", "qa"),
    }
    path, task = paths[name]
    return load_dataset(path, task)


def _timed(analysis, ds):
    cpu = time.process_time()
    result = analysis.run(ds, progress=False)
    return result, round(time.process_time() - cpu, 2)


def _top(per_field: dict, k: int = 10) -> dict:
    return {
        label: [
            {
                key: (round(r[key], 4) if isinstance(r[key], float) else r[key])
                for key in ("token", "n", "p_hat", "z", "pmi", "p_bonferroni", "p_bh", "flagged")
            }
            for r in records[:k]
        ]
        for label, records in per_field["top"].items()
    }


def atlas_one(name: str, ds, *, gururangan: bool = False) -> dict:
    from spurious.detectors.atlas import Atlas, field_atlas

    result, cpu = _timed(Atlas(), ds)
    m = result.metrics
    fields = result.details["fields"]
    row = {
        "n": len(ds),
        "cpu_s": cpu,
        "per_field": {
            f: {
                "n_tested": int(m[f"{f}_n_tested"]),
                "n_significant_bonferroni": int(m[f"{f}_n_significant_bonferroni"]),
                "n_significant_bh": int(m[f"{f}_n_significant_bh"]),
                "n_flagged_shuffled_labels": int(m[f"{f}_n_flagged_shuffled"]),
                "share_examples_flagged": round(m[f"{f}_share_flagged"], 4),
                "top10_by_z": _top(result.details["per_field"][f]),
            }
            for f in fields
        },
        "headline": {k: result.headline[k] for k in ("text", "severity", "inconclusive")},
    }
    if gururangan:
        # Rank every tested token by z at each label, and look the words up.
        fa = field_atlas(ds.texts("hypothesis"), ds.labels, ds.n_classes, field="hypothesis")
        vocab = fa.vocabulary.tolist()
        names = list(ds.label_names)
        words = {}
        for label, ws in GURURANGAN_SNLI.items():
            c = names.index(label)
            rank = np.argsort(np.argsort(-np.nan_to_num(fa.z[:, c], nan=-np.inf)))
            for w in ws:
                if w not in vocab:
                    words[f"{w}->{label}"] = "not tested (n < min_count)"
                    continue
                j = vocab.index(w)
                words[f"{w}->{label}"] = {
                    "n": int(fa.n[j]),
                    "p_hat": round(float(fa.p_hat[j, c]), 3),
                    "z": round(float(fa.z[j, c]), 2),
                    "pmi": round(float(fa.pmi[j, c]), 3),
                    "z_rank_at_label": int(rank[j]) + 1,
                    "flagged_bonferroni": bool(fa.p_bonferroni[j, c] <= 0.01),
                    "flagged_bh": bool(fa.p_bh[j, c] <= 0.01),
                }
        row["gururangan_table4_words"] = words
    print(name, json.dumps({f: {k: v for k, v in d.items() if k != "top10_by_z"}
                            for f, d in row["per_field"].items()}), f"cpu {cpu}s", flush=True)  # fmt: skip
    return row


def run_atlas() -> dict:
    out = {}
    for name in ("snli_dev", "mnli_dev_matched", "sst2_train", "cad_original_train"):
        out[name] = atlas_one(name, _load(name), gururangan=name == "snli_dev")
    revised = _load("cad_revised_hypothesis_train")
    out["cad_revised_hypothesis_train"] = atlas_one("cad_revised_hypothesis_train", revised)
    n_orig = out["cad_original_train"]["n"]
    sub = revised.subset(np.sort(np.random.default_rng(0).choice(len(revised), n_orig, False)))
    out["cad_revised_hypothesis_train_subsample"] = atlas_one("cad_revised_subsample", sub)
    return out


def run_associations() -> dict:
    from spurious.detectors.associations import Associations

    out = {}
    for name in ("snli_dev", "mnli_dev_matched", "squad_dev", "sst2_train"):
        ds = _load(name)
        result, cpu = _timed(Associations(), ds)
        out[name] = {
            "n": len(ds),
            "cpu_s": cpu,
            "n_significant": int(result.metrics["n_significant"]),
            "n_features": int(result.metrics["n_features"]),
            "features": [
                {
                    key: (round(v, 4) if isinstance(v, float) else v)
                    for key, v in r.items()
                    if key != "bins"
                }
                for r in result.details["features"]
            ],
            "not_tested": result.details.get("not_tested", {}),
            "headline": {k: result.headline[k] for k in ("text", "severity", "inconclusive")},
        }
        print(name, result.summary, f"cpu {cpu}s", flush=True)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=("atlas", "associations"))
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    from spurious.utils.io import atomic_write_json

    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results["data"] = __doc__.split("\n\n")[1].replace("\n", " ")
    results["scale_note"] = __doc__.split("\n\n")[3].replace("\n", " ")
    results["machine"] = {
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "load_avg_at_start": os.getloadavg(),
    }
    if args.only in (None, "atlas"):
        results["atlas"] = run_atlas()
        atomic_write_json(args.out, results)
    if args.only in (None, "associations"):
        results["associations"] = run_associations()
        atomic_write_json(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
