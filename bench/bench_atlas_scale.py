"""The artifact atlas at scale (issue 20, part 1: 1M NLI pairs in under 60 s).

Rows: "SNLI-like" pairs resampled from the real SNLI sentences in ../shared/data (dev +
test_tokenized), exactly as ``bench/bench_leakage_scale.py`` builds them: one real premise
per group of three, one real hypothesis of each label. Premises repeat three times, as on
real SNLI; hypothesis artifacts survive the resampling. No SNLI train split is available
offline.

Each size runs in a fresh process (``--one N``) that reports: the time to build the
``Dataset`` (not part of the analysis), the wall and CPU time of ``Atlas().run`` (both
fields, the shuffled-label control included, the default parameters), peak RSS, and the
flagged-token counts. The machine's 2 cores are shared with other jobs; the CPU time is
the steadier number.

``--analysis associations`` times the model-free associations instead: the heuristics
alone (computed once, and cached on disk as a run does), then ``Associations().run``
(which reads them from that cache: its CPU time is the tests and the properties).
``--analysis pvi`` times partial_input (tf-idf, out of fold) and then PVI reusing its
probabilities, as an audit runs them.

Usage::

    python bench/bench_atlas_scale.py --sizes 10000 100000 1000000
    python bench/bench_atlas_scale.py --analysis associations --sizes 10000 100000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "atlas_scale.json"
#: One size, 2,000 SNLI-like pairs (the atlas, in a fresh process as every size runs).
SMOKE_ARGS = ["--sizes", "2000"]
sys.path.insert(0, str(ROOT / "bench"))


def one(n: int, bigrams: bool, analysis: str = "atlas", n_permutations: int = 1000) -> dict:
    from bench_leakage_scale import snli_like
    from spurious.detectors.associations import Associations
    from spurious.detectors.atlas import Atlas

    t0 = time.perf_counter()
    ds = snli_like(n, random_state=0)
    build_s = time.perf_counter() - t0
    if analysis == "associations":
        from spurious.heuristics import compute_heuristics

        # Heuristic values are computed (and cached) apart: they are shared by every
        # analysis of a run; the analysis' own time is the tests.
        h0 = time.process_time()
        names = Associations()._heuristic_names(ds)
        compute_heuristics(ds, names)  # fills the on-disk cache the run then reads
        heur_cpu = time.process_time() - h0
        wall0, cpu0 = time.perf_counter(), time.process_time()
        result = Associations(n_permutations=n_permutations).run(ds, progress=False)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        return {
            "n": n,
            "analysis": analysis,
            "n_permutations": n_permutations,
            "dataset_build_s": round(build_s, 2),
            "heuristics_cpu_s": round(heur_cpu, 2),
            "associations_wall_s": round(wall, 2),
            "associations_cpu_s_heuristics_cached": round(cpu, 2),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "n_significant": int(result.metrics["n_significant"]),
            "summary": result.summary,
        }
    if analysis == "pvi":
        from spurious.context import RunContext
        from spurious.detectors.partial_input import PartialInput
        from spurious.detectors.pvi import PVI

        # PVI's g_x are partial_input's out-of-fold probabilities when both run (as in
        # an audit): time the probes and PVI's own work (the V-information intervals,
        # per-label tables, examples) apart.
        ctx = RunContext(ds, None, progress=False)
        wall0, cpu0 = time.perf_counter(), time.process_time()
        ctx.results["partial_input"] = PartialInput().run(context=ctx)
        pi_wall, pi_cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        wall0, cpu0 = time.perf_counter(), time.process_time()
        result = PVI().run(context=ctx)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        return {
            "n": n,
            "analysis": analysis,
            "dataset_build_s": round(build_s, 2),
            "partial_input_wall_s": round(pi_wall, 2),
            "partial_input_cpu_s": round(pi_cpu, 2),
            "pvi_wall_s_reusing_partial_input": round(wall, 2),
            "pvi_cpu_s_reusing_partial_input": round(cpu, 2),
            "reused": bool(result.details.get("reused_partial_input")),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "v_info_hypothesis_only": round(result.metrics["v_info_hypothesis_only"], 4),
            "summary": result.summary,
        }
    wall0, cpu0 = time.perf_counter(), time.process_time()
    result = Atlas(bigrams=bigrams).run(ds, progress=False)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    m = result.metrics
    return {
        "n": n,
        "bigrams": bigrams,
        "dataset_build_s": round(build_s, 2),
        "atlas_wall_s": round(wall, 2),
        "atlas_cpu_s": round(cpu, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "hypothesis_n_tested": int(m["hypothesis_n_tested"]),
        "hypothesis_n_flagged": int(m["hypothesis_n_flagged"]),
        "premise_n_tested": int(m["premise_n_tested"]),
        "premise_n_flagged": int(m["premise_n_flagged"]),
        "n_flagged_tokens_shuffled": int(m["n_flagged_tokens_shuffled"]),
        "share_flagged": round(m["share_flagged"], 4),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--bigrams", action="store_true")
    parser.add_argument("--analysis", choices=("atlas", "associations", "pvi"), default="atlas")
    parser.add_argument("--n-permutations", type=int, default=1000)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.bigrams, args.analysis, args.n_permutations)))
        return 0
    from spurious.utils.io import atomic_write_json

    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    results["data"] = __doc__.split("\n\n")[1].replace("\n", " ")
    from spurious.provenance import cpu_model

    results["machine"] = {
        "cpu": cpu_model(),
        "cpus": os.cpu_count(),
        "load_avg_at_start": os.getloadavg(),
    }
    key = "bigrams" if args.bigrams else "unigrams"
    if args.analysis == "associations":
        key = f"associations_{args.n_permutations}_permutations"
    elif args.analysis == "pvi":
        key = "pvi"
    runs = results.setdefault(key, {})
    for n in args.sizes:
        cmd = [sys.executable, __file__, "--one", str(n), "--analysis", args.analysis]
        cmd += ["--n-permutations", str(args.n_permutations)]
        cmd += ["--bigrams"] if args.bigrams else []
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row["load_avg_after"] = os.getloadavg()
        runs[str(n)] = row
        print(json.dumps(row), flush=True)
        atomic_write_json(args.out, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
