"""Does the report stay readable at scale? report.html size and Chromium load time.

Synthetic NLI pairs with a planted cue (``make_nli_artifacts``) at 10k and 100k rows
(1M: ``--sizes 1000000``, hours on 2 shared cores) go through ``spurious.run`` with
analyses that need no sentence encoder: the artifact atlas, model-free associations,
partial-input leakage (tf-idf probes) and AFLite (tf-idf, m=8, 2 rounds). Measured:

- ``report_bytes``: size of report.html;
- ``report_cpu_s``: CPU seconds to build it again from the run directory;
- ``chromium_load_s``: median wall seconds of headless Chromium loading the page and
  dumping its DOM (``--dump-dom``), minus the same for an empty page (start-up);
- ``parquet``: the per-example tables written beside the report.

Writes ``bench/results/report_scale.json`` atomically. Usage::

    OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 python bench/report_scale.py [--sizes 10000 100000]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import spurious
from spurious.data.synthetic import make_nli_artifacts
from spurious.provenance import dependency_versions
from spurious.report.html import build_report_html
from spurious.utils.io import atomic_write_json

ROOT = Path(__file__).resolve().parents[1]
ANALYSES = {
    "atlas": {},
    "associations": {},
    "partial_input": {"features": "tfidf", "n_resamples": 200},
    "aflite": {"features": "tfidf", "n_partitions": 8, "max_rounds": 2},
}


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def load_seconds(browser: str, page: Path, repeats: int = 3) -> float:
    """Median wall seconds of a headless load + DOM dump of ``page``."""
    times = []
    with tempfile.TemporaryDirectory() as profile:
        for _ in range(repeats):
            t0 = time.perf_counter()
            subprocess.run(
                [browser, "--headless", "--no-sandbox", "--disable-gpu",
                 f"--user-data-dir={profile}", "--dump-dom", page.resolve().as_uri()],
                check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600,
            )  # fmt: skip
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=[10000, 100000])
    ap.add_argument("--runs", type=Path, default=ROOT / "runs" / "report-scale")
    ap.add_argument("--out", type=Path, default=ROOT / "bench/results/report_scale.json")
    args = ap.parse_args()
    browser = chromium()
    out: dict = {"analyses": ANALYSES, "browser": browser, "sizes": {}}
    if browser:
        blank = args.runs / "blank.html"
        blank.parent.mkdir(parents=True, exist_ok=True)
        blank.write_text("<!doctype html><title>blank</title>")
        out["chromium_blank_s"] = round(load_seconds(browser, blank), 3)
    for n in args.sizes:
        data = make_nli_artifacts(n=n, artifact_rate=0.6, random_state=0).dataset
        run_dir = args.runs / f"n{n}"
        t0 = time.perf_counter()
        spurious.run(data, analyses=ANALYSES, out=run_dir, force=True)
        run_s = time.perf_counter() - t0
        cpu = time.process_time()
        build_report_html(run_dir)
        report_cpu = time.process_time() - cpu
        page = run_dir / "report.html"
        row = {
            "rows": n,
            "run_wall_s": round(run_s, 1),
            "report_bytes": page.stat().st_size,
            "report_cpu_s": round(report_cpu, 2),
            "parquet": {
                str(p.relative_to(run_dir)): p.stat().st_size
                for p in sorted(run_dir.glob("*/*.parquet"))
            },
        }
        if browser:
            row["chromium_load_s"] = round(
                load_seconds(browser, page) - out["chromium_blank_s"], 3
            )
        out["sizes"][str(n)] = row
        print(n, row, flush=True)
    out["command"] = "python bench/report_scale.py --sizes " + " ".join(map(str, args.sizes))
    out["machine"] = "2 shared cores, loaded by other jobs (wall times noisy)"
    out["versions"] = dependency_versions()
    atomic_write_json(args.out, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
