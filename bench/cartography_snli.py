"""Dataset cartography on SNLI: data maps, region shares, and hypothesis-only leakage.

Two settings (``--settings``):

- ``dev`` (default): SNLI dev (9,842 pairs) as the data, no evaluation split. The map is
  of the training dynamics of these examples (fast path: one-hidden-layer MLP, 10 epochs,
  MiniLM features), as in Swayamdipta et al. (there is no SNLI training split offline).
  ``partial_input`` runs on the same data (5-fold out-of-fold hypothesis-only probe), and
  the two score tables are joined by id: how the hard-to-learn and ambiguous regions
  relate to the hypothesis-only probe's mistakes and to the leakage score.
- ``test_to_dev``: trained on ``test_tokenized`` (9,824), dev mapped as the evaluation
  split (paper 002's test-set dynamics: recorded after each epoch, never trained on).

Writes ``bench/results/cartography_snli.json``, ``docs/img/cartography_snli.png`` (the
full-input and hypothesis-only maps of ``dev``) and run directories under
``runs/cartography/``. Usage::

    HF_HUB_OFFLINE=1 .venv/bin/python bench/cartography_snli.py [--settings dev test_to_dev]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score

import spurious
from spurious import load_dataset
from spurious.detectors.cartography import REGIONS
from spurious.provenance import dependency_versions
from spurious.report.plots import styled
from spurious.report.sections.cartography import data_map_figure
from spurious.utils.io import atomic_write, atomic_write_json

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "snli"
FIGURE = ROOT / "docs" / "img" / "cartography_snli.png"
#: The dev setting only (cartography and partial_input on SNLI dev, the maps figure).
SMOKE_ARGS = ["--settings", "dev"]

CARTOGRAPHY = {"features": "minilm", "random_state": 0}
PARTIAL_INPUT = {"features": "minilm", "conditions": ["hypothesis_only"], "random_state": 0}


def settings() -> dict:
    return {
        "dev": lambda: (load_dataset(DATA / "dev.jsonl", "nli", name="snli-dev"), None),
        "test_to_dev": lambda: (
            load_dataset(DATA / "test_tokenized.jsonl", "nli", name="snli-test"),
            load_dataset(DATA / "dev.jsonl", "nli", name="snli-dev"),
        ),
    }


def relation_table(joined: pd.DataFrame, column: str) -> list[dict]:
    """Per region of ``column`` (and the anti-biased set, and all): leakage statistics."""
    groups = [(r, joined[column] == r) for r in REGIONS]
    anti = "anti_biased" if column == "region" else "partial_anti_biased"
    groups += [("anti-biased", joined[anti]), ("all", pd.Series(True, index=joined.index))]
    rows = []
    for name, mask in groups:
        g = joined[mask.to_numpy()]
        if g.empty:
            continue
        rows.append(
            {
                "group": name,
                "n": len(g),
                "share": round(len(g) / len(joined), 4),
                "hyp_only_probe_error": round(1 - g["correct_hypothesis_only"].mean(), 4),
                "leakage_score_mean": round(g["partial_input_score"].mean(), 4),
                "leaky_flagged_share": round(g["is_partial_input_issue"].mean(), 4),
                "full_probe_error": round(1 - g["correct_full"].mean(), 4),
                "full_confidence_mean": round(g["confidence"].mean(), 4),
                "hyp_only_confidence_mean": round(g["partial_confidence"].mean(), 4),
            }
        )
    return rows


def _rho(a: pd.Series, b: pd.Series) -> float:
    return round(float(spearmanr(a, b).statistic), 4)


def print_table(title: str, rows: list[dict]) -> None:
    print(f"\n{title}")
    keys = list(rows[0])
    print(" | ".join(f"{k:>12s}" for k in keys))
    for r in rows:
        print(" | ".join(f"{r[k]:>12}" for k in keys))


@styled
def save_maps(scores: pd.DataFrame, metrics: dict, path: Path) -> None:
    fig = Figure(figsize=(11.8, 4.9))
    grid = fig.add_gridspec(1, 2, wspace=0.28)
    for i, (prefix, title) in enumerate(
        (("", "SNLI dev, full input"), ("partial_", "SNLI dev, hypothesis only"))
    ):
        data_map_figure(
            scores[f"{prefix}confidence"],
            scores[f"{prefix}variability"],
            scores[f"{prefix}correctness"],
            anti_biased_cut=metrics.get(f"{prefix}hard_confidence_cut"),
            title=f"{title} (MLP on MiniLM, 10 epochs)",
            fig=fig,
            spec=grid[i],
        )
    atomic_write(path, lambda p: fig.savefig(p, format="png", dpi=110, bbox_inches="tight"))


def run_setting(name: str, data, eval_data) -> dict:
    t0 = time.perf_counter()
    run = spurious.run(
        data,
        eval=eval_data,
        analyses={"partial_input": PARTIAL_INPUT, "cartography": CARTOGRAPHY},
        out=ROOT / "runs" / "cartography" / f"snli-{name}",
        force=True,
        progress=False,
    )
    wall = time.perf_counter() - t0
    carto, leak = run["cartography"], run["partial_input"]
    for r in (carto, leak):
        if r.status != "ok":
            raise RuntimeError(f"{r.name} {r.status}: {r.error}")
    joined = carto.scores.merge(leak.scores.drop(columns=["label"]), on="id", validate="1:1")
    m = carto.metrics
    hyp_wrong = ~joined["correct_hypothesis_only"].to_numpy(bool)
    timings = {k: v for k, v in run.context.timings.items() if k.startswith(("training_", "feat"))}
    out = {
        "n_train": len(data),
        "n_scored": int(m["n_scored"]),
        "scored_split": carto.details["scored_split"],
        "params": carto.params,
        "wall_s_both_analyses": round(wall, 2),
        "cartography_total_s": carto.provenance.timings.get("total_s"),
        "artifact_timings_s": timings,
        "dynamics_train_s": {
            v: (carto.details["dynamics"].get(v) or {}).get("train_s") for v in ("full", "partial")
        },
        "metrics": {k: round(v, 4) for k, v in m.items()},
        "learning_curves": carto.details["learning_curves"],
        "partial_input": {
            k: round(leak.metrics[k], 4)
            for k in ("accuracy_full", "accuracy_hypothesis_only", "majority_accuracy")
        },
        "by_full_region": relation_table(joined, "region"),
        "by_hypothesis_only_region": relation_table(joined, "partial_region"),
        "agreement": {
            # Does "hard to learn (full input)" predict the hypothesis-only probe's mistakes?
            "auc_cartography_score_vs_hyp_only_mistake": round(
                roc_auc_score(hyp_wrong, joined["cartography_score"]), 4
            ),
            "auc_partial_cartography_score_vs_hyp_only_mistake": round(
                roc_auc_score(hyp_wrong, joined["partial_cartography_score"]), 4
            ),
            "spearman_full_confidence_vs_leakage_score": _rho(
                joined["confidence"], joined["partial_input_score"]
            ),
            "spearman_hyp_only_confidence_vs_leakage_score": _rho(
                joined["partial_confidence"], joined["partial_input_score"]
            ),
        },
    }
    print(f"\n== {name}: {carto.summary}  ({wall:.1f}s for both analyses)")
    print(
        "regions (full):",
        {r: m[f"share_{r}"] for r in REGIONS},
        "\nregions (hypothesis-only):",
        {r: m[f"partial_share_{r}"] for r in REGIONS},
    )
    print("timings:", timings)
    print_table("by full-input region", out["by_full_region"])
    print_table("by hypothesis-only region", out["by_hypothesis_only_region"])
    print("agreement:", out["agreement"])
    if name == "dev":
        save_maps(carto.scores, m, FIGURE)
    return out


def headline(folds: int | None) -> dict:
    """The analysis' headline on test_to_dev: full vs hypothesis-only agreement against the
    same maps made with permuted labels (issue 19 item 2); with ``folds``, the same on dev
    alone with held-out dynamics."""
    if folds is None:
        data, eval_data = settings()["test_to_dev"]()
    else:
        data, eval_data = settings()["dev"]()[0], None
    params = {**CARTOGRAPHY, "null_permutations": 5}
    if folds is not None:
        params["held_out_folds"] = folds
    start = time.process_time()
    run = spurious.run(data, eval=eval_data, analyses={"cartography": params}, progress=False)
    res = run["cartography"]
    keys = [k for k in res.metrics if k.startswith("spearman") or k.endswith("final_accuracy")]
    out = {k: round(res.metrics[k], 4) for k in keys}
    out["mean_confidence"] = round(res.metrics["mean_confidence"], 4)
    out["severity"] = res.headline["severity"]
    out["inconclusive"] = res.headline["inconclusive"]
    out["verdict"] = res.headline["verdict"]
    out["cpu_s"] = round(time.process_time() - start, 1)
    print(json.dumps(out, indent=1), flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--settings", nargs="+", default=["dev", "test_to_dev"])
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/cartography_snli.json")
    ap.add_argument(
        "--headline",
        action="store_true",
        help="only the headline on test_to_dev (permuted-label null, 5 draws) and on dev "
        "with 2 held-out folds; stored under 'headline'",
    )
    args = ap.parse_args()
    if args.headline:
        results = json.loads(args.out.read_text()) if args.out.exists() else {}
        results["headline"] = {
            "command": "HF_HUB_OFFLINE=1 .venv/bin/python bench/cartography_snli.py --headline",
            "test_to_dev": headline(None),
            "dev_held_out_2_folds": headline(2),
            "versions": dependency_versions(),  # names the CPU too
        }
        atomic_write_json(args.out, results)
        return 0
    if not DATA.exists():
        print(f"needs {DATA}", file=sys.stderr)
        return 1
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results.setdefault("settings", {})
    for name in args.settings:
        data, eval_data = settings()[name]()
        results["settings"][name] = run_setting(name, data, eval_data)
    results["command"] = "HF_HUB_OFFLINE=1 .venv/bin/python bench/cartography_snli.py"
    results["versions"] = dependency_versions()
    results["machine_note"] = "2 shared CPU cores; the fast path trains with 1 torch thread"
    atomic_write_json(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
