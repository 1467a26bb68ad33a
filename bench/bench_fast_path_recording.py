"""The fast path's recording costs (issue 24 goal 1): logit lists and z-scoring.

Two measurements, each interleaved ``--repeats`` times in one process (medians):

``logits``   :func:`probe_dynamics` on 100k x 32 Gaussian rows (3 labels), 5 epochs, with
             and without ``record_logits``: seconds and the frame's memory
             (``memory_usage(deep=True)``). Cartography records none since 177c38a.
``zscore``   one recording pass over 100k x 1536 float32 rows in blocks of 8192: the
             earlier ``(X[arange] - mean) / std`` against :func:`rows_tensor` on a slice
             (one buffer, the same float32 operations; the bits are compared).

Usage::

    python bench/bench_fast_path_recording.py    # bench/results/fast_path_recording.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "results" / "fast_path_recording.json"
#: Smoke run: both measurements once (the sizes are fixed: ~20 s, 0.6 GiB).
SMOKE_ARGS = ["--repeats", "1"]


def main() -> int:
    from spurious.models.dynamics import probe_dynamics
    from spurious.models.torch_loop import rows_tensor

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(100_000, 32)).astype(np.float32)
    y = rng.integers(0, 3, 100_000)
    times: dict[str, list[float]] = {"with_logits": [], "without_logits": []}
    mib: dict[str, float] = {}
    for _ in range(args.repeats):
        for key, flag in (("with_logits", True), ("without_logits", False)):
            t = time.perf_counter()
            frame = probe_dynamics(X, y, epochs=5, record_logits=flag)
            times[key].append(time.perf_counter() - t)
            mib[key] = round(frame.memory_usage(deep=True).sum() / 2**20, 1)
    big = rng.normal(size=(100_000, 1536)).astype(np.float32)
    mean, std = big.mean(0), big.std(0)
    import torch

    def before(a: int, b: int) -> torch.Tensor:
        part = (big[np.arange(a, b)] - mean) / std
        return torch.from_numpy(np.ascontiguousarray(part, dtype=np.float32))

    def now(a: int, b: int) -> torch.Tensor:
        return rows_tensor(big, slice(a, b), (mean, std))

    passes: dict[str, list[float]] = {"before": [], "now": []}
    for _ in range(args.repeats):
        for key, fn in (("before", before), ("now", now)):
            t = time.perf_counter()
            for a in range(0, len(big), 8192):
                fn(a, min(a + 8192, len(big)))
            passes[key].append(time.perf_counter() - t)
    same = all(torch.equal(before(a, a + 8192), now(a, a + 8192)) for a in (0, 40960, 90000))
    result = {
        "command": "python bench/bench_fast_path_recording.py " + " ".join(sys.argv[1:]),
        "logits_100k_x_32_5_epochs_s": {
            k: round(statistics.median(v), 3) for k, v in times.items()
        },
        "logits_frame_mib": mib,
        "zscore_pass_100k_x_1536_s": {k: round(statistics.median(v), 3) for k, v in passes.items()},
        "zscore_same_bits": same,
        "runs": {"logits": times, "zscore": passes},
    }
    tmp = OUT.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    tmp.replace(OUT)
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
