"""Issue 24 goal 7: the audit's model-based parts on a GPU, and the 550k quick audit there.

One script for a lent GPU machine, in this order; each part writes its numbers into the
JSON at once, so a run cut short keeps what it measured:

``paths``  the CUDA paths against the CPU in the same process, on SNLI-sized synthetic
           data with a planted linear signal (20k x 384, 3 classes): the fast-path
           dynamics (:func:`probe_dynamics`, 5 epochs), minority's MLP
           (:class:`MLPEmbedding`, 2 epochs) and the partial-input cross-fit
           (:func:`cross_fit_proba`, 5 folds). Agreement (max |p_gold| and probability
           differences, accuracies) and seconds on each device (each after a warm-up
           call), in this process, each at its own thread setting (one torch thread
           for the MLPs on the CPU).
``audit``  ``spurious audit --task nli --quick`` in a fresh process per size (the real
           CLI), ``--device cuda`` and, at SNLI dev size only, ``--device cpu`` on the
           same machine: wall, CPU seconds, peak RSS (``SPURIOUS_PEAK_RSS=1``: per step
           from the manifest) and the GPU's peak memory (nvidia-smi, sampled each second).

Data: 550k "SNLI-like" pairs (real SNLI dev + test sentences resampled into new premise
groups, ``bench/bench_leakage_scale.py``'s :func:`snli_like`; no SNLI training split
exists offline, and the papers audited the real 550k) and SNLI dev itself. Model:
all-MiniLM-L6-v2; on the lent machine its weights travel as float16 (the 64 MiB transfer
limit) and the encoder casts them to float32, as it does any model.

Usage (on the GPU machine, from the repository root)::

    PYTHONPATH=src python bench/bench_audit_gpu.py --snli DIR --model DIR --out F.json \
        --deadline 540

``--snli`` holds SNLI's ``dev.jsonl`` and ``test_tokenized.jsonl`` (default
``../shared/data/snli``); ``--model`` a Hugging Face folder (default: the bundled MiniLM);
``--deadline`` the seconds the whole script may take (each audit gets what is left).
A run cut by the deadline can be continued on the same warm machine: pass the same
``--work DIR`` to both calls and ``--continue-run`` to the second; the audit keeps the
analyses the first call finished (their times are that call's) and computes the rest,
the one the cut interrupted included, so the sum of both calls' wall times bounds the
run's from above.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
import bench_leakage_scale  # noqa: E402  (snli_like: the same SNLI-like rows)
from bench_audit_scale import _steps, finished_steps, process_peak  # noqa: E402
from bench_finetune_gpu import Results  # noqa: E402  (the JSON, rewritten after each part)

CLI = "import sys; from spurious.cli import main; sys.argv[0] = 'spurious'; main()"
#: Smoke run: the dev part on the CPU alone (the small SNLI dev copy), no GPU needed.
SMOKE_ARGS = ["--parts", "dev", "--devices", "cpu", "--work", "bench/data/audit_gpu"]


def _planted(n: int, d: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Gaussian features whose first 8 columns carry a noisy 3-class linear signal."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(np.float32)
    W = rng.normal(size=(8, 3))
    y = (X[:, :8] @ W + 1.5 * rng.normal(size=(n, 3))).argmax(1)
    return X, y.astype(np.int64)


def _timed(fn: Any, sync: bool) -> tuple[Any, float]:
    import torch

    start = time.perf_counter()
    out = fn()
    if sync:
        torch.cuda.synchronize()
    return out, round(time.perf_counter() - start, 3)


def part_paths() -> dict[str, Any]:
    """CPU vs CUDA for the three fast paths (one process, same data and seeds)."""
    import torch

    from spurious.models.clustering import MLPEmbedding
    from spurious.models.dynamics import probe_dynamics
    from spurious.models.linear import cross_fit_proba

    X, y = _planted(20_000, 384)
    tr, ev = slice(0, 16_000), slice(16_000, None)
    out: dict[str, Any] = {"data": "20k x 384 float32, 3 classes, planted linear signal"}

    def dyn(device: str) -> Any:
        return probe_dynamics(X[tr], y[tr], X[ev], y[ev], epochs=5, device=device)

    def mlp(device: str) -> Any:
        return MLPEmbedding(hidden_size=256, epochs=2, batch_size=128, device=device).fit(X, y)

    def cross(device: str) -> Any:
        return cross_fit_proba(X, y, np.arange(len(y)) % 5, 3, device=device)

    for name, fn in (("dynamics", dyn), ("mlp_embedding", mlp), ("cross_fit", cross)):
        fn("cpu")  # warm-up on both: first-call costs (imports, fused Adam, kernels)
        cpu, cpu_s = _timed(lambda fn=fn: fn("cpu"), sync=False)
        fn("cuda")
        gpu, gpu_s = _timed(lambda fn=fn: fn("cuda"), sync=True)
        row: dict[str, Any] = {"cpu_s": cpu_s, "cuda_s": gpu_s, "ratio": round(cpu_s / gpu_s, 2)}
        if name == "dynamics":
            last = cpu["epoch"] == cpu["epoch"].max()
            row["max_abs_p_gold_diff"] = float(np.abs(cpu["p_gold"] - gpu["p_gold"]).max())
            for dev, frame in (("cpu", cpu), ("cuda", gpu)):
                part = frame[last & (frame["split"] == "eval")]
                row[f"eval_accuracy_{dev}"] = round(float(part["correct"].mean()), 4)
        elif name == "mlp_embedding":
            row.update(train_accuracy_cpu=cpu.train_accuracy_, train_accuracy_cuda=gpu.train_accuracy_,
                       max_abs_weight_diff=float(np.abs(cpu.weight_ - gpu.weight_).max()))  # fmt: skip
        else:
            row["max_abs_proba_diff"] = float(np.abs(cpu - gpu).max())
            row["accuracy_cpu"] = round(float((cpu.argmax(1) == y).mean()), 4)
            row["accuracy_cuda"] = round(float((gpu.argmax(1) == y).mean()), 4)
        out[name] = row
        print(f"  {name}: {row}", flush=True)
    out["cuda_peak_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    return out


class GpuMemory:
    """The GPU's used memory, sampled by nvidia-smi every second (device-wide)."""

    def __init__(self) -> None:
        self.peak_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            try:
                text = subprocess.run(
                    ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                    capture_output=True, text=True, timeout=10,
                ).stdout  # fmt: skip
                self.peak_mib = max(self.peak_mib, float(text.split()[0]))
            except (OSError, ValueError, IndexError, subprocess.SubprocessError):
                pass

    def __enter__(self) -> GpuMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def audit(
    data: Path, model: str, device: str, work: Path, timeout: float, resume: bool = False
) -> dict[str, Any]:
    """One ``spurious audit --quick`` in a fresh process (empty cache: the encoder runs).

    ``resume``: continue the run an earlier call left in ``work`` (no ``--force``: the
    audit keeps the analyses that run finished and computes the rest).
    """
    out = work / f"run_{data.stem}_{device}"
    env = {**os.environ, "SPURIOUS_PEAK_RSS": "1", "HF_HUB_OFFLINE": "1",
           "SPURIOUS_CACHE_DIR": str(work / f"cache_{data.stem}_{device}")}  # fmt: skip
    cmd = [sys.executable, "-c", CLI, "audit", str(data), "--task", "nli", "--quick",
           "--features", model, "--device", device, "--out", str(out)]  # fmt: skip
    if not resume:
        cmd.append("--force")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    row: dict[str, Any] = {"device": device, "limit_s": round(timeout)}
    with GpuMemory() as mem:
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
            row["exit_code"] = proc.returncode
            if proc.returncode not in (0, 1):
                row["stderr_tail"] = proc.stderr[-3000:]
        except subprocess.TimeoutExpired:
            row["timed_out"] = True
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    row["wall_s"] = round(time.perf_counter() - start, 1)
    row["cpu_s"] = round(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, 1)
    row["gpu_peak_mib_device_wide"] = mem.peak_mib
    row.update(_manifest_steps(out))
    row.update(process_peak(row))  # the largest step peak
    return row


def _manifest_steps(out: Path) -> dict[str, Any]:
    """Per-step wall and CPU seconds and peak RSS from the run's manifest, or from the
    analyses finished so far when the run was cut short."""
    manifest = out / "manifest.json"
    if not manifest.exists():
        return {}
    m = json.loads(manifest.read_text())
    steps = _steps(m)
    if m.get("status") != "complete":  # cut short: what each finished analysis recorded
        steps.update(finished_steps(out))
    return {"status": m.get("status"), "statuses": m.get("statuses", {}),
            "gpu": m.get("versions", {}).get("gpu"), "steps": steps,
            "total_s": m.get("timings", {}).get("total_s")}  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--snli", type=Path, default=ROOT.parent / "shared" / "data" / "snli")
    parser.add_argument("--model", default=None, help="a Hugging Face folder (default: MiniLM)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench/results/audit_gpu.json")
    parser.add_argument(
        "--parts",
        default="paths,dev,audit",
        help="comma-separated: paths, dev (SNLI dev with --device cuda and cpu), audit (--sizes)",
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[550_000])
    parser.add_argument(
        "--devices",
        nargs="+",
        choices=["cuda", "cpu"],
        default=["cuda", "cpu"],
        help="dev: SNLI dev on each (cpu last); audit: the sizes on the first. "
        "'--devices cpu' checks the script on a machine without a GPU",
    )
    parser.add_argument("--deadline", type=float, default=3600.0, help="seconds for it all")
    parser.add_argument(
        "--work",
        type=Path,
        default=None,
        help="folder for the data and runs (default: a new temp one)",
    )
    parser.add_argument(
        "--continue-run",
        action="store_true",
        help="continue the audits a call cut short in --work (same data, same folders): "
        "a lent machine's 10-minute call limit, on the same warm machine",
    )
    args = parser.parse_args()
    t0 = time.perf_counter()
    import torch

    model = args.model or "minilm"
    res = Results(args.out, {
        "command": "python bench/bench_audit_gpu.py " + " ".join(sys.argv[1:]),
        "gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None,
        "cpus": os.cpu_count(), "torch": torch.__version__, "python": platform.python_version(),
        "data": "SNLI dev (9,842) and SNLI-like pairs (real SNLI dev+test sentences "
                "resampled; no SNLI training split offline)",
    })  # fmt: skip
    parts = args.parts.split(",")
    if "paths" in parts:
        res.put("paths", part_paths())
    if "audit" not in parts and "dev" not in parts:
        return 0
    bench_leakage_scale.DATA = args.snli
    work = args.work or Path(tempfile.mkdtemp(prefix="audit_gpu_"))
    work.mkdir(parents=True, exist_ok=True)
    dev = args.snli / "dev.jsonl"
    jobs: list[tuple[str, Path, str]] = []
    if "dev" in parts and "cuda" in args.devices:
        jobs.append(("snli_dev_cuda", dev, "cuda"))
    for n in args.sizes if "audit" in parts else []:
        path = work / f"snli_like_{n}.jsonl"
        if not (args.continue_run and path.exists()):
            ds = bench_leakage_scale.snli_like(n, random_state=0)
            ds.frame[["id", "premise", "hypothesis", "label", "group"]].to_json(
                path, orient="records", lines=True
            )
        jobs.append((f"snli_like_{n}_{args.devices[0]}", path, args.devices[0]))
    if "dev" in parts and "cpu" in args.devices:
        jobs.append(("snli_dev_cpu", dev, "cpu"))  # last: the same machine's CPU baseline
    for key, data, device in jobs:
        left = args.deadline - (time.perf_counter() - t0) - 15
        if left < 30:
            res.put(key, {"skipped": f"{left:.0f} s left of the deadline"})
            continue
        print(f"audit {key} (limit {left:.0f} s) ...", flush=True)
        res.put(key, audit(data, model, device, work, left, resume=args.continue_run))
    # 1: an analysis failed (its status is in the row); anything else: the audit did not run
    failed = [k for k, row in res.data["parts"].items() if row.get("exit_code") not in (None, 0, 1)]
    if failed:
        print(f"failed: {', '.join(failed)} (stderr_tail in {args.out})", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
