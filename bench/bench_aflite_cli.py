"""One AFLite round through the CLI against the scikit-learn reference round (issue 24 goal 4).

The setting of ``bench_aflite_round.py``'s ``small`` entry: N=20k synthetic
sentence-embedding-like rows (d=384, 3 classes, planted artifacts; ``aflite_reference.
make_embeddings``), m=64 partitions of t=5k. Ours runs as a user would run it::

    spurious aflite rows.jsonl --task text --features-npy X.npy --partitions 64 \\
        --train-size 5000 --max-rounds 1 --out DIR

in a fresh process (``/usr/bin/time -v``: wall, CPU, peak RSS), so its time includes the
interpreter, imports (torch), reading the rows and the matrix, the round, the verdict's
baselines and writing the run folder and report. The manifest's ``aflite`` step is the
analysis alone. The reference is one round of scikit-learn ``LogisticRegression`` (lbfgs,
``max_iter=100``) per partition on the same matrix, timed in this process with one BLAS
thread and with the default threads, interleaved with the CLI runs; medians over
``--repeats``.

Usage::

    python bench/bench_aflite_cli.py                # 3 repeats
    python bench/bench_aflite_cli.py --repeats 1

Writes ``bench/results/aflite_cli.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from aflite_reference import make_embeddings, random_partitions, reference_round  # noqa: E402
from bench_aflite_round import DATA_KW, SETTINGS, machine_info  # noqa: E402
from bench_audit_scale import _parse_time  # noqa: E402

RESULTS = HERE / "results" / "aflite_cli.json"
SPURIOUS = Path(sys.executable).with_name("spurious")
#: One repeat on N=2,000 rows (d=64), m=8 partitions of t=500.
SMOKE_ARGS = ["--repeats", "1", "--n", "2000", "--d", "64", "--m", "8", "--t", "500"]


def write_inputs(folder: Path, X: np.ndarray, y: np.ndarray) -> tuple[Path, Path]:
    """The rows as JSONL (a text task: one placeholder text per row) and X as .npy."""
    rows = folder / "rows.jsonl"
    with rows.open("w") as f:
        for i, label in enumerate(y):
            f.write(json.dumps({"id": f"r{i}", "text": f"row {i}", "label": int(label)}) + "\n")
    feats = folder / "X.npy"
    np.save(feats, X.astype(np.float32))
    return rows, feats


def _machine() -> dict[str, Any]:
    """The CPU model and its bf16 support: the figures differ between the machines lent."""
    import torch

    return machine_info(torch)


def run_cli(rows: Path, feats: Path, out: Path, m: int, t: int) -> dict[str, Any]:
    """One ``spurious aflite`` round in a fresh process."""
    cmd = [str(SPURIOUS), "aflite", str(rows), "--task", "text", "--features-npy", str(feats),
           "--partitions", str(m), "--train-size", str(t), "--max-rounds", "1",
           "--out", str(out), "--force"]  # fmt: skip
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], env=env, capture_output=True, text=True)
    row: dict[str, Any] = {"exit_code": proc.returncode, **_parse_time(proc.stderr)}
    if proc.returncode != 0:
        row["stderr_tail"] = proc.stderr[-1500:]
        return row
    manifest = json.loads((out / "manifest.json").read_text())
    row["aflite_step_s"] = manifest.get("timings", {}).get("aflite_s")
    row["timings"] = manifest.get("timings", {})
    return row


def reference(X: np.ndarray, y: np.ndarray, train_idx: np.ndarray, threads: int | None) -> float:
    """Wall seconds of one scikit-learn round (``threads``: BLAS threads, None: default)."""
    from threadpoolctl import threadpool_limits

    start = time.perf_counter()
    if threads is None:
        reference_round(X, y, train_idx)
    else:
        with threadpool_limits(threads):
            reference_round(X, y, train_idx)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    small = SETTINGS["small"]
    for key, what in (("n", "rows"), ("d", "features"), ("m", "partitions"), ("t", "train size")):
        parser.add_argument(
            f"--{key}",
            type=int,
            default=small[key],
            help=f"{what} (default: bench_aflite_round.py's small setting, %(default)s)",
        )
    args = parser.parse_args()
    s = {key: getattr(args, key) for key in ("n", "d", "m", "t")}
    X, y = make_embeddings(s["n"], s["d"], **DATA_KW)[:2]
    X = X.astype(np.float32)
    train_idx = random_partitions(s["n"], s["m"], s["t"], seed=0)
    cli, ref1, refd = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        rows, feats = write_inputs(Path(tmp), X, y)
        for r in range(args.repeats):
            cli.append(run_cli(rows, feats, Path(tmp) / f"run{r}", s["m"], s["t"]))
            ref1.append(reference(X, y, train_idx, 1))
            refd.append(reference(X, y, train_idx, None))
            print(f"repeat {r + 1}: CLI wall {cli[-1].get('wall_s')} s (aflite step "
                  f"{cli[-1].get('aflite_step_s')} s); reference 1 thread {ref1[-1]:.1f} s, "
                  f"default threads {refd[-1]:.1f} s", flush=True)  # fmt: skip
    ok = [c for c in cli if c.get("exit_code") == 0]
    wall = statistics.median(c["wall_s"] for c in ok)
    step = statistics.median(c["aflite_step_s"] for c in ok)
    r1, rd = statistics.median(ref1), statistics.median(refd)
    result = {
        "command": "python bench/bench_aflite_cli.py " + " ".join(sys.argv[1:]),
        "setting": {k: s[k] for k in ("n", "d", "m", "t")},
        "cli_runs": cli,
        "reference_1_thread_s": ref1,
        "reference_default_threads_s": refd,
        "median": {
            "cli_wall_s": wall,
            "cli_aflite_step_s": step,
            "reference_1_thread_s": r1,
            "reference_default_threads_s": rd,
        },
        "ratio": {
            "reference_1_thread_over_cli_wall": round(r1 / wall, 2),
            "reference_default_over_cli_wall": round(rd / wall, 2),
            "reference_1_thread_over_aflite_step": round(r1 / step, 2),
            "reference_default_over_aflite_step": round(rd / step, 2),
        },
        "goal": ">= 50x the reference per-partition scikit-learn round, end to end via the CLI",
        "machine": {**_machine(), "load_avg_end": os.getloadavg()},
    }
    tmp_out = RESULTS.with_suffix(".json.tmp")
    tmp_out.write_text(json.dumps(result, indent=2, default=float) + "\n")
    tmp_out.replace(RESULTS)
    print(json.dumps(result["median"]), json.dumps(result["ratio"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
