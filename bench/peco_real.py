"""PECO on the real NLI data in ../shared/data (paper 003 Table 4 / Table 5 analogue).

Two representations of the hypothesis:

- ``minilm``: frozen all-MiniLM-L6-v2 sentence embeddings (the default of the analysis);
- ``psc``: the paper's representation, a model fine-tuned on *full pairs* (PSC) fed the
  hypothesis alone (003 App. B), via ``features="finetuned:<dir>"``. One MiniLM is
  fine-tuned per dataset on its training portion (SNLI: test_tokenized -> scored on dev;
  MNLI dev matched: a seeded 70/30 split; CAD: each variant's train -> its test) and
  PECO is computed on the held-out portion, as the paper does on test sets.

With frozen MiniLM the big sets are also scored whole (SNLI dev, SNLI test_tokenized,
MNLI dev matched; k = 50, |PC| = 30). The CAD comparison (original vs revised_combined,
the paper's SNLI > CAugNLI) scores both test sets with the same k. The App. C sweep runs
on SNLI dev (every cell the mean over the analysis' 5 k-means seeds). Delta_maj of the
partial-input analysis comes from ``bench/results/leakage_real.json`` (same splits) for
the ranking comparison.

Every row records the headline (severity, inconclusive, the excess interval over k-means
seeds and bootstrap) and the biased regions under the three rules (the authors' sum of
squares > 0.25, Eq. 11 > 0.2**2/C, the per-cluster permutation test) with how many
clusters each rule flags under shuffled labels. ``profiles`` runs SNLI dev with the
quick and full audit profiles at three base seeds: does the severity move with the
k-means seeds?

Writes ``bench/results/peco_real.json``. Usage::

    python bench/peco_real.py [--skip-finetune] [--epochs 2] [--keep-psc]
    python bench/peco_real.py --psc-features runs/peco-psc-gpu
    python bench/peco_real.py --skip-finetune --only snli_dev cad_original --profile-seeds 0

``--only`` keeps the named whole sets and held-out settings (the JSON then holds those
only); ``--profile-seeds`` sets the profiles' base seeds (none: no profiles).

``--keep-psc`` (with ``--skip-finetune``) copies the PSC rows of the previous JSON,
marked ``"stale": true``, instead of dropping them. ``--psc-features DIR`` reads the PSC
representations from ``DIR/<name>.npy`` with the row ids in ``DIR/psc_meta.json`` (as
written by a fine-tune on another machine: same fine-tune, same pooled last layer, e.g.
on a GPU), instead of fine-tuning here. The 2-D map is off (``projection="none"``): the
bench measures scores; ``bench_peco_scale.py`` times the map.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from leakage_real import settings  # bench/ is on sys.path when run as a script
from spurious import load_dataset
from spurious.context import RunContext
from spurious.detectors.peco import Peco
from spurious.provenance import dependency_versions
from spurious.utils.io import atomic_write_json

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
#: SNLI dev whole and CAD original held out (frozen MiniLM only), profiles at one seed.
SMOKE_ARGS = ["--skip-finetune", "--only", "snli_dev", "cad_original", "--profile-seeds", "0"]
KEYS = ("peco_l2", "peco_l2_ci_low", "peco_l2_ci_high", "peco_l2_seed_sd", "peco_l2_baseline",
        "peco_l2_excess", "peco_l2_excess_ci_low", "peco_l2_excess_ci_high", "peco_l2_p_value",
        "peco_kl", "peco_kl_ci_low", "peco_kl_ci_high", "peco_kl_baseline", "peco_kl_excess",
        "peco_kl_excess_ci_low", "peco_kl_excess_ci_high", "peco_l2_reference",
        "peco_kl_reference", "n_clusters", "n_biased_clusters", "n_biased_clusters_null",
        "share_in_biased_regions", "share_in_biased_regions_null",
        "region_threshold")  # fmt: skip
REGION_KEYS = ("n_biased_clusters", "n_biased_clusters_null", "share_in_biased_regions",
               "share_in_biased_regions_null", "region_threshold",
               "max_dominant_share")  # fmt: skip


def held_out_settings():
    """name -> (train, scored): the splits of ``leakage_real.py``, so Delta_maj compares."""
    return settings()


def _regions(res) -> dict:
    out = {k: res.metrics.get(k) for k in REGION_KEYS if k in res.metrics}
    flagged = [c["dominant_share"] for c in res.details["clusters"] if c["biased"]]
    out["max_dominant_share"] = max(flagged) if flagged else None
    return out


def score(dataset, features: str, **params) -> tuple[dict, float]:
    ctx = RunContext(dataset, progress=False)
    ctx.features(features, "hypothesis_only")  # embed first: timed apart from the analysis
    t0 = time.perf_counter()
    res = Peco(features=features, projection="none", **params).run(context=ctx)
    wall = time.perf_counter() - t0
    row = {k: res.metrics.get(k) for k in KEYS}
    h = res.headline
    row.update(
        n=len(dataset),
        analysis_s=round(wall, 2),
        severity=h["severity"],
        inconclusive=h["inconclusive"],
        verdict=h["verdict"],
        regions={"authors": _regions(res)},
    )
    # The other region rules on the same (first-seed) clusters: one seed, no bootstrap.
    light = {**params, "n_seeds": 1, "n_bootstrap": 0, "run_sweep": False}
    for rule in ("eq11", "null"):
        other = Peco(features=features, region_rule=rule, projection="none", **light)
        other = other.run(context=ctx)
        row["regions"][rule] = _regions(other)
    if "sweep" in res.details:
        row["sweep"] = res.details["sweep"]
    return row, wall


def profiles(dataset, seeds=(0, 10, 20)) -> list[dict]:
    """SNLI dev's headline under the quick and full audit profiles at several base seeds."""
    ctx = RunContext(dataset, progress=False)
    rows = []
    for name in ("quick", "full"):
        params = {**Peco.profiles[name], "run_sweep": False, "projection": "none"}
        for seed in seeds:
            res = Peco(**params, random_state=seed).run(context=ctx)
            m, h = res.metrics, res.headline
            rows.append({
                "profile": name, "random_state": seed, "n_seeds": res.params["n_seeds"],
                "peco_l2_excess": m["peco_l2_excess"],
                "peco_l2_excess_ci_low": m["peco_l2_excess_ci_low"],
                "peco_l2_excess_ci_high": m["peco_l2_excess_ci_high"],
                "peco_l2_seed_sd": m["peco_l2_seed_sd"], "p_value": m["peco_l2_p_value"],
                "severity": h["severity"], "inconclusive": h["inconclusive"],
            })  # fmt: skip
            r = rows[-1]
            print(f"  {name:5s} seed {seed:2d}: excess {r['peco_l2_excess']:.3f} "
                  f"[{r['peco_l2_excess_ci_low']:.3f}, {r['peco_l2_excess_ci_high']:.3f}] "
                  f"{r['severity']}{' (inconclusive)' if r['inconclusive'] else ''}",
                  flush=True)  # fmt: skip
    return rows


def psc_model(name: str, train, scored, epochs: int) -> Path:
    """Fine-tune MiniLM on full pairs of ``train`` (cached under runs/peco-psc/<name>)."""
    out = ROOT / "runs" / "peco-psc" / name
    if (out / "model" / "config.json").exists():
        return out
    if name == "snli" and (ROOT / "runs/bench-finetune-full3/model/config.json").exists():
        return ROOT / "runs/bench-finetune-full3"  # bench_finetune.py's 3-epoch SNLI model
    from spurious.models.finetune import FineTuneConfig, fine_tune

    cfg = FineTuneConfig(epochs=epochs, record_dynamics=False)
    t0 = time.perf_counter()
    fine_tune(train, scored, cfg, out, progress=False, overwrite=True)
    print(f"  fine-tuned {name} in {time.perf_counter() - t0:.0f}s", flush=True)
    return out


def precomputed_psc(folder: Path, name: str):
    """PSC hypothesis representations computed elsewhere (``--psc-features``)."""
    from spurious.features.precomputed import PrecomputedFeaturizer

    meta = json.loads((folder / "psc_meta.json").read_text())[name]
    return PrecomputedFeaturizer({"hypothesis_only": folder / f"{name}.npy"}, ids=meta["ids"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--skip-finetune", action="store_true")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--keep-psc", action="store_true")
    ap.add_argument("--psc-features", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/peco_real.json")
    ap.add_argument(
        "--only",
        nargs="+",
        default=None,
        help="these whole sets and held-out settings only (e.g. snli_dev cad_original)",
    )
    ap.add_argument(
        "--profile-seeds",
        type=int,
        nargs="*",
        default=[0, 10, 20],
        help="base seeds of the profiles on SNLI dev (none: no profiles)",
    )
    args = ap.parse_args()
    if not DATA.exists():
        print(f"needs {DATA}", file=sys.stderr)
        return 1
    previous = json.loads(args.out.read_text()) if args.out.exists() else {}
    results: dict = {"whole": {}, "held_out": {}, "protocol": __doc__}
    t_start = time.process_time()

    whole = {
        "snli_dev": DATA / "snli/dev.jsonl",
        "snli_test_tokenized": DATA / "snli/test_tokenized.jsonl",
        "mnli_dev_matched": DATA / "mnli/dev_matched.jsonl",
    }
    for name, path in whole.items():
        if args.only and name not in args.only:
            continue
        ds = load_dataset(path, "nli")
        row, wall = score(ds, "minilm", run_sweep=name == "snli_dev")
        results["whole"][name] = row
        print(f"{name:22s} minilm PECO_L2 {row['peco_l2']:.3f} "
              f"[{row['peco_l2_ci_low']:.3f}, {row['peco_l2_ci_high']:.3f}] "
              f"shuffled {row['peco_l2_baseline']:.3f} KL {row['peco_kl']:.3f} ({wall:.1f}s)",
              flush=True)  # fmt: skip

    for name, make in held_out_settings().items():
        if args.only and name not in args.only:
            continue
        train, scored = make()
        # The CAD tests (400 / 1,600) get the same k, so their scores compare.
        k = 10 if name.startswith("cad") else "auto"
        feats = ["minilm"] + ([] if args.skip_finetune and not args.psc_features else ["psc"])
        old = previous.get("held_out", {}).get(f"{name}/psc")
        if args.skip_finetune and args.keep_psc and old is not None:
            results["held_out"][f"{name}/psc"] = {**old, "stale": True}
        for f in feats:
            if f == "psc" and args.psc_features:
                spec = precomputed_psc(args.psc_features, name)
            elif f == "psc":
                spec = f"finetuned:{psc_model(name, train, scored, args.epochs)}"
            else:
                spec = f
            row, wall = score(scored, spec, n_clusters=k)
            results["held_out"][f"{name}/{f}"] = row
            print(f"{name:22s} {f:6s} n={len(scored):5d} k={row['n_clusters']:.0f} "
                  f"PECO_L2 {row['peco_l2']:.3f} [{row['peco_l2_ci_low']:.3f}, "
                  f"{row['peco_l2_ci_high']:.3f}] shuffled {row['peco_l2_baseline']:.3f} "
                  f"excess {row['peco_l2_excess']:+.3f} ({wall:.1f}s)", flush=True)  # fmt: skip

    if args.psc_features:
        meta = json.loads((args.psc_features / "psc_meta.json").read_text())
        results["psc_fine_tunes"] = {
            k: {f: v for f, v in m.items() if f != "ids"} for k, m in meta.items()
        }
    if args.profile_seeds:
        print("profiles on SNLI dev (minilm):", flush=True)
        results["profiles_snli_dev"] = profiles(
            load_dataset(whole["snli_dev"], "nli"), args.profile_seeds
        )
    results["cpu_s"] = round(time.process_time() - t_start, 1)

    leak = ROOT / "bench/results/leakage_real.json"
    if leak.exists():
        runs = json.loads(leak.read_text()).get("runs", {})
        results["delta_maj_hypothesis_only"] = {
            k: v.get("delta_maj_hypothesis_only") for k, v in runs.items()
        }
    results["versions"] = dependency_versions()
    atomic_write_json(args.out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
