"""Does the report stay readable at scale? report.html size and Chromium load time.

Synthetic NLI pairs with a planted cue (``make_nli_artifacts``) at 10k and 100k rows
go through ``spurious.run`` (1M: hours on 2 shared cores; ``--tile-from 10000`` builds
larger run directories by repeating the 10k run's per-example tables) with
analyses that need no sentence encoder: the artifact atlas, model-free associations,
partial-input leakage (tf-idf probes) and AFLite (tf-idf, m=8, 2 rounds). Measured:

- ``report_bytes``: size of report.html;
- ``report_cpu_s``: CPU seconds to build it (again) from the run directory;
- ``chromium``: wall seconds of headless Chromium loading the page and dumping its DOM
  (``--dump-dom``) minus the same for an empty page (start-up), interleaved, median of 5
  (``--repeats``; ``load_s``; ``page_s`` and ``blank_s`` are the medians of each);
- ``parquet``: the per-example tables written beside the report.

Writes ``bench/results/report_scale.json`` atomically. Usage::

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python bench/report_scale.py [--sizes 10000 100000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

import spurious
from spurious.data.synthetic import make_nli_artifacts
from spurious.provenance import cpu_model, dependency_versions
from spurious.report.html import render_report
from spurious.results import Result
from spurious.utils.io import atomic_write_json

ROOT = Path(__file__).resolve().parents[1]
ANALYSES = {
    "atlas": {},
    "associations": {},
    "partial_input": {"features": "tfidf", "n_resamples": 200},
    "aflite": {"features": "tfidf", "n_partitions": 8, "max_rounds": 2},
}
#: 500 rows, and 1,000 tiled from them; one Chromium load each (when Chromium is there).
SMOKE_ARGS = ["--sizes", "500", "1000", "--tile-from", "500", "--repeats", "1"]


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _load_once(browser: str, page: Path, profile: str) -> float:
    t0 = time.perf_counter()
    subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
         "--dump-dom", page.resolve().as_uri()],
        check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600,
    )  # fmt: skip
    return time.perf_counter() - t0


def load_seconds(browser: str, page: Path, blank: Path, repeats: int = 5) -> dict[str, float]:
    """Headless load + DOM dump of ``page`` minus that of an empty page (Chromium's own
    start-up), interleaved so that both see the same machine load; medians."""
    pages, blanks = [], []
    with tempfile.TemporaryDirectory() as profile:
        for _ in range(repeats):
            blanks.append(_load_once(browser, blank, profile))
            pages.append(_load_once(browser, page, profile))
    diffs = [p - b for p, b in zip(pages, blanks, strict=True)]
    return {
        "load_s": round(statistics.median(diffs), 3),
        "page_s": round(statistics.median(pages), 3),
        "blank_s": round(statistics.median(blanks), 3),
    }


def tile_run(src: Path, dst: Path, n: int) -> None:
    """``dst``: the run ``src`` with every per-example table repeated to ``n`` rows."""
    if dst.exists():
        shutil.rmtree(dst)
    dst.mkdir(parents=True)
    shutil.copy(src / "manifest.json", dst / "manifest.json")
    for folder in sorted(p for p in src.iterdir() if (p / "result.json").is_file()):
        r = Result.load(folder)
        reps = -(-n // max(len(r.scores), 1))
        tiled = pd.concat([r.scores] * reps, ignore_index=True).head(n)
        if "id" in tiled.columns:
            tiled["id"] = [f"{i}-{k}" for k, i in enumerate(tiled["id"].astype(str))]
        r.scores = tiled
        r.save(dst / folder.name)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=[10000, 100000])
    ap.add_argument("--runs", type=Path, default=ROOT / "runs" / "report-scale")
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/report_scale.json")
    ap.add_argument(
        "--repeats", type=int, default=5, help="Chromium loads of each page (and of a blank one)"
    )
    ap.add_argument(
        "--reuse", action="store_true", help="re-render run directories that already exist"
    )
    ap.add_argument(
        "--tile-from",
        type=int,
        default=None,
        help="build each size's run directory by tiling the per-example tables of this "
        "size's run (ids made unique) instead of running the analyses: the page at N rows "
        "without hours of analysis on a shared machine",
    )
    args = ap.parse_args()
    browser = chromium()
    out: dict = {"analyses": ANALYSES, "browser": browser, "sizes": {}}
    if browser:
        blank = args.runs / "blank.html"
        blank.parent.mkdir(parents=True, exist_ok=True)
        blank.write_text("<!doctype html><title>blank</title>")
    for n in args.sizes:
        run_dir = args.runs / f"n{n}"
        run_s = None
        if args.tile_from is not None and n != args.tile_from:
            tile_run(args.runs / f"n{args.tile_from}", run_dir, n)
        elif not (args.reuse and (run_dir / "manifest.json").exists()):
            data = make_nli_artifacts(n=n, artifact_rate=0.6, random_state=0).dataset
            t0 = time.perf_counter()
            spurious.run(data, analyses=ANALYSES, out=run_dir, force=True)
            run_s = round(time.perf_counter() - t0, 1)
        cpu = time.process_time()
        render_report(run_dir)  # the page as this code builds it (also for --reuse)
        report_cpu = time.process_time() - cpu
        page = run_dir / "report.html"
        row = {
            "rows": n,
            "run_wall_s": run_s,
            "report_bytes": page.stat().st_size,
            "report_cpu_s": round(report_cpu, 2),
            "parquet": {
                str(p.relative_to(run_dir)): p.stat().st_size
                for p in sorted(run_dir.glob("*/*.parquet"))
            },
        }
        if browser:
            row["chromium"] = load_seconds(browser, page, blank, args.repeats)
        out["sizes"][str(n)] = row
        print(n, row, flush=True)
    out["command"] = "python bench/report_scale.py --sizes " + " ".join(map(str, args.sizes))
    if args.repeats != 5:
        out["command"] += f" --repeats {args.repeats}"
    if args.reuse:
        out["command"] += " --reuse"
    if args.tile_from is not None:
        out["command"] += f" --tile-from {args.tile_from}"
        out["tiled"] = (
            f"sizes other than {args.tile_from} repeat that run's per-example tables (ids made "
            "unique); metrics and details are that run's"
        )
    # Measured: wall times only compare between runs at a similar load.
    out["machine"] = {"cpu": cpu_model(), "cpus": os.cpu_count(), "load_avg": os.getloadavg()}
    out["versions"] = dependency_versions()
    atomic_write_json(args.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
