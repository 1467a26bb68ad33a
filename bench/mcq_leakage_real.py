"""Choices-only leakage and answer cues of real multiple-choice benchmarks (README,
"Multiple-choice benchmarks"): ARC-Challenge test, CommonsenseQA dev, MMLU test.

For each benchmark, ``mc_leakage`` (full profile: MiniLM option blocks, 5-fold
cross-fitting, 20 gold-within-item permutations, 1000 bootstraps) and ``mc_cues`` run
through the one lifecycle; the per-view accuracies, Delta over chance, the verdicts, the
significant cues, the gold-letter test and the wall times go to
``bench/results/mcq_leakage.json``, and MMLU's per-subject leakage is drawn into
``docs/img/mmlu_subject_leakage.svg`` (the report's own plot). Usage::

    python bench/mcq_leakage_real.py [--only arc_challenge commonsenseqa mmlu]
"""

from __future__ import annotations

import argparse
import base64
import sys
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "mcq"
BENCHMARKS = {
    "arc_challenge": DATA / "arc_challenge" / "test.jsonl",
    "commonsenseqa": DATA / "commonsenseqa" / "dev.jsonl",
    "mmlu": DATA / "mmlu" / "test",
}
VIEWS = ("full", "choices_only", "question_only")
#: MMLU only (4 subjects, ~400 items in the smoke copy; also draws its subject plot).
SMOKE_ARGS = ["--only", "mmlu"]


def _svg(data_uri: str) -> bytes:
    head, _, body = data_uri.partition(",")
    return base64.b64decode(body) if ";base64" in head else urllib.parse.unquote(body).encode()


def main() -> int:
    import spurious
    from spurious.data import load_dataset
    from spurious.provenance import dependency_versions
    from spurious.report.sections.mc_leakage import group_leakage_plot
    from spurious.utils.io import atomic_write, atomic_write_json

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", nargs="+", choices=list(BENCHMARKS), default=list(BENCHMARKS))
    args = ap.parse_args()
    out: dict = {"command": "python bench/mcq_leakage_real.py", "benchmarks": {}}
    for name in args.only:
        ds = load_dataset(BENCHMARKS[name], "mcq")
        t0 = time.perf_counter()
        run = spurious.run(ds, analyses={"mc_leakage": {}, "mc_cues": {}}, progress=False)
        wall = time.perf_counter() - t0
        leak, cues = run["mc_leakage"], run["mc_cues"]
        m = leak.metrics
        row = {
            "n_items": len(ds),
            "wall_s": round(wall, 1),
            "chance": m.get("chance"),
            "views": {
                v: {k: m.get(f"{k}_{v}") for k in ("accuracy", "delta_chance")}
                | {
                    f"{k}_ci": [m.get(f"{k}_{v}_ci_low"), m.get(f"{k}_{v}_ci_high")]
                    for k in ("accuracy", "delta_chance")
                }
                for v in VIEWS
            },
            "leakage_headline": leak.headline,
            "cues_headline": cues.headline,
            "cues_metrics": cues.metrics,
        }
        groups = leak.tables.get("groups") if leak.tables else None
        if groups is not None and len(groups):
            row["top_groups"] = groups.head(10).to_dict("records")
            if name == "mmlu":
                uri = group_leakage_plot(groups, max_rows=20)
                if uri:
                    svg = _svg(uri)
                    atomic_write(
                        ROOT / "docs/img/mmlu_subject_leakage.svg",
                        lambda p, svg=svg: p.write_bytes(svg),
                    )
        out["benchmarks"][name] = row
        print(f"{name}: {leak.headline['text']}  ({wall:.1f} s)", flush=True)
    out["versions"] = dependency_versions()
    atomic_write_json(ROOT / "bench/results/mcq_leakage.json", out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
