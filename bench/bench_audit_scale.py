"""`spurious audit --quick` (or the full profile) at 10k, 100k and 550k SNLI-like pairs.

Issue 24 goal 1: the time and peak memory of every analysis and shared artifact, and the
growth exponent of each, on data the size of SNLI's training split. No SNLI training
split exists offline, so the rows are "SNLI-like": real SNLI premises and hypotheses
(dev + test_tokenized) resampled into new premise groups, as
``bench/bench_leakage_scale.py`` makes them (its :func:`snli_like`). Hypothesis artifacts
survive the resampling; the texts repeat (about 20k distinct sentences), so the encoder's
time is that of the distinct texts, far less than on real SNLI (about 700k distinct);
the JSON states the count.

Each size runs the real CLI in a fresh process under ``/usr/bin/time -v`` (wall, CPU,
whole-process peak RSS; ``tree_peak_rss_gib`` adds the run's helper processes, sampled
every 0.5 s) with ``SPURIOUS_PEAK_RSS=1``, so the manifest holds every
analysis' and artifact's CPU seconds and own peak RSS. ``--cold`` gives each size an empty
cache folder (the encoding is timed); by default the cache of an earlier size is reused
only where texts repeat.

Usage::

    python bench/bench_audit_scale.py --sizes 10000 100000 550000
    python bench/bench_audit_scale.py --sizes 10000 --profile full
    python bench/bench_audit_scale.py --data ../shared/data/snli/dev.jsonl   # goal 2

``--data`` audits one real file twice in fresh processes, with an empty cache folder
(cold: the encoder runs) and then with that folder filled (warm); the encoder's time is
the ``artifact:features:...`` steps of the cold run.

Results accumulate in ``bench/results/audit_scale.json`` keyed by profile and size.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_aflite_round import cpu_info  # noqa: E402
from bench_leakage_scale import snli_like  # noqa: E402  (the same SNLI-like rows)

WORK = ROOT / "bench" / "data" / "audit_scale"
OUT = ROOT / "bench" / "results" / "audit_scale.json"
SPURIOUS = Path(sys.executable).with_name("spurious")
#: Smoke run: one quick audit of 1,000 SNLI-like pairs.
SMOKE_ARGS = ["--sizes", "1000"]
_TIME_FIELDS = {
    "User time (seconds)": "user_s",
    "System time (seconds)": "sys_s",
    "Maximum resident set size (kbytes)": "max_rss_kib",
    "Elapsed (wall clock) time (h:mm:ss or m:ss)": "elapsed",
}


def _data_file(n: int) -> tuple[Path, int]:
    path = WORK / f"snli_like_{n}.jsonl"
    ds = snli_like(n, random_state=0)
    distinct = int(ds.frame["premise"].nunique() + ds.frame["hypothesis"].nunique())
    if not path.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        ds.frame[["id", "premise", "hypothesis", "label", "group"]].to_json(
            tmp, orient="records", lines=True
        )
        tmp.replace(path)
    return path, distinct


def _parse_time(stderr: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for line in stderr.splitlines():
        key, _, value = line.strip().partition(": ")
        if key in _TIME_FIELDS:
            name = _TIME_FIELDS[key]
            if name == "elapsed":
                parts = [float(p) for p in value.split(":")]
                out["wall_s"] = sum(p * 60**i for i, p in enumerate(reversed(parts)))
            else:
                out[name] = float(value)
    if "max_rss_kib" in out:
        out["peak_rss_gib"] = round(out.pop("max_rss_kib") / 2**20, 3)
    return out


def _steps(manifest: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Manifest timings and resources -> {step: {wall_s, cpu_s, peak_rss_gib}}."""
    steps: dict[str, dict[str, float]] = {}
    for key, value in manifest.get("timings", {}).items():
        if key.endswith("_s") and key not in ("load_s", "analyses_s", "total_s"):
            steps.setdefault(key[:-2], {})["wall_s"] = round(float(value), 3)
    for name, used in manifest.get("resources", {}).items():
        steps.setdefault(name, {}).update(used)
    return steps


def finished_steps(out: Path) -> dict[str, dict[str, float]]:
    """Seconds (and peak RSS) of each analysis a run cut short had finished, from their
    ``result.json``: the manifest records its timings only at the end."""
    steps: dict[str, dict[str, float]] = {}
    for result in sorted(out.glob("*/result.json")):
        timings = json.loads(result.read_text()).get("provenance", {}).get("timings", {})
        steps[result.parent.name] = {
            ("wall_s" if k == "total_s" else k): v
            for k, v in timings.items()
            if k in ("total_s", "cpu_s", "peak_rss_gib", "shared_artifacts_s")
        }
    return steps


def process_peak(row: dict[str, Any]) -> dict[str, float]:
    """The process' peak RSS: the largest of the steps' peaks and ``/usr/bin/time``'s.

    ``/usr/bin/time`` reports the kernel's RSS high-water mark at exit, which the per-step
    meter (``SPURIOUS_PEAK_RSS=1``) resets at the start of every step: on its own it is
    the peak of the last steps only (runs before this fix recorded that; 8.07 GiB where a
    step had reached 9.49). Without ``/usr/bin/time``'s figure, the largest step peak."""
    peaks = [s["peak_rss_gib"] for s in row.get("steps", {}).values() if "peak_rss_gib" in s]
    if not peaks:
        return {}
    if "peak_rss_gib" not in row:  # no /usr/bin/time figure (the GPU benchmark's rows)
        return {"peak_rss_gib": max(peaks)}
    return {
        "time_max_rss_gib": row["peak_rss_gib"],
        "peak_rss_gib": max([*peaks, row["peak_rss_gib"]]),
    }


def run_size(n: int, profile: str, cold: bool, timeout: float, extra: list[str]) -> dict[str, Any]:
    data, distinct = _data_file(n)
    row = run_audit(data, f"{profile}_{n}", profile, cold, timeout, extra)
    return {"n": n, "distinct_texts": distinct, **row}


def run_audit(
    data: Path, key: str, profile: str, cold: bool, timeout: float, extra: list[str]
) -> dict[str, Any]:
    """One ``spurious audit`` of ``data`` in a fresh process under ``/usr/bin/time -v``.

    ``cold``: an empty cache folder first (the encoder's work is timed); otherwise the
    folder of the previous run with the same ``key`` is reused (the warm case)."""
    out = WORK / f"run_{key}"
    env = {**os.environ, "SPURIOUS_PEAK_RSS": "1", "HF_HUB_OFFLINE": "1"}
    cache = WORK / f"cache_{key}"
    if cold:
        shutil.rmtree(cache, ignore_errors=True)
    if cold or cache.exists():
        env["SPURIOUS_CACHE_DIR"] = str(cache)
    cmd = [str(SPURIOUS), "audit", str(data), "--task", "nli", "--out", str(out), "--force"]
    cmd += ["--quick"] if profile == "quick" else []
    cmd += extra
    start = time.perf_counter()
    proc = subprocess.Popen(
        ["/usr/bin/time", "-v", *cmd], env=env, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    tree = TreePeak(proc.pid).start()
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:  # keep what the finished analyses recorded
        proc.kill()
        proc.communicate()
        return {"timed_out": True, "limit_s": timeout, "steps": finished_steps(out)}
    finally:
        tree.stop()
    row: dict[str, Any] = {"command": " ".join(cmd), "exit_code": proc.returncode}
    row.update(_parse_time(stderr))
    # The run and its helper processes together (the report's section helper):
    # /usr/bin/time's peak is the largest single process.
    row["tree_peak_rss_gib"] = round(tree.peak_kib / 2**20, 3)
    row["wall_s"] = row.get("wall_s", round(time.perf_counter() - start, 2))
    manifest = out / "manifest.json"
    if manifest.exists():
        m = json.loads(manifest.read_text())
        row["statuses"] = m.get("statuses", {})
        row["skipped"] = m.get("skipped", {})
        row["warnings"] = m.get("warnings", [])
        row["steps"] = _steps(m)
        row.update(process_peak(row))
        report = out / "report.html"
        if report.exists():  # the page's own time after the run (its sections were ahead)
            after = report.stat().st_mtime - manifest.stat().st_mtime
            row["report_after_manifest_s"] = round(after, 2)
    if proc.returncode not in (0, 1):  # 1 = an analysis failed (the manifest says which)
        row["stderr_tail"] = stderr[-2000:]
    return row


class TreePeak:
    """The peak of the summed RSS of a process and all its descendants, sampled from
    ``/proc`` every ``interval`` seconds on a thread."""

    def __init__(self, root: int, interval: float = 0.5) -> None:
        self.root, self.interval, self.peak_kib = root, interval, 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> TreePeak:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._done.wait(self.interval):
            self.peak_kib = max(self.peak_kib, tree_rss_kib(self.root))


def tree_rss_kib(root: int) -> int:
    """Resident memory (KiB) of process ``root`` and its descendants, from ``/proc``."""
    children: dict[int, list[int]] = {}
    pages: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # after the command name
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))  # ppid
        pages[int(entry)] = int(fields[21])  # rss, in pages
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += pages.get(pid, 0)
        todo += children.get(pid, [])
    return total * os.sysconf("SC_PAGE_SIZE") // 1024


def growth(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Log-log slope of wall time over rows, per step present at >= 2 sizes."""
    done = [r for r in rows if "steps" in r]
    names = sorted({s for r in done for s in r["steps"]} | {"total"})
    out: dict[str, float] = {}
    for name in names:
        pts = [
            (r["n"], r["wall_s"] if name == "total" else r["steps"][name].get("wall_s", 0.0))
            for r in done
            if name == "total" or name in r["steps"]
        ]
        pts = [(n, t) for n, t in pts if t > 0.05]
        if len(pts) >= 2:
            x, y = np.log([p[0] for p in pts]), np.log([p[1] for p in pts])
            out[name] = round(float(np.polyfit(x, y, 1)[0]), 2)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 550_000])
    parser.add_argument(
        "--data",
        type=Path,
        help="audit this file instead (issue 24 goal 2: SNLI dev): cold cache, then warm",
    )
    parser.add_argument("--profile", choices=("quick", "full"), default="quick")
    parser.add_argument(
        "--label", help="with --data: a suffix of the result's key (e.g. the code measured)"
    )
    parser.add_argument("--cold", action="store_true", help="an empty cache per size")
    parser.add_argument("--timeout", type=float, default=7200.0, help="seconds per size")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[],
                        help="further audit options, e.g. --extra --features tfidf")  # fmt: skip
    args = parser.parse_args()
    results = json.loads(OUT.read_text()) if OUT.exists() else {}
    if args.data is not None:
        return _run_file(results, args)
    runs = results.setdefault("runs", {}).setdefault(args.profile, {})
    for n in args.sizes:
        print(f"audit --{args.profile} on {n:,} SNLI-like pairs ...", flush=True)
        row = run_size(n, args.profile, args.cold, args.timeout, args.extra)
        row.update(cold_cache=args.cold, extra=args.extra, load_avg_end=os.getloadavg())
        row.update(code=_code_version(), bench_command=_bench_command(), cpu=cpu_info()[0])
        runs[str(n)] = row
        print(
            f"  wall {row.get('wall_s')} s, CPU {row.get('user_s', 0) + row.get('sys_s', 0):.0f} s, "
            f"peak {row.get('peak_rss_gib')} GiB, exit {row.get('exit_code')}",
            flush=True,
        )
        _save(results, args)  # after each size: a long run keeps what it measured
    return 0


def _bench_command() -> str:
    """The command as run, with the environment settings that change what is timed."""
    env = [f"{k}={os.environ[k]} " for k in ("SPURIOUS_REPORT_PREFETCH",) if k in os.environ]
    return "".join(env) + "python bench/bench_audit_scale.py " + " ".join(sys.argv[1:])


def _code_version() -> str:
    """The commit of the spurious package the audit imports (PYTHONPATH may point to
    another checkout, to measure a baseline in the same session)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    src = subprocess.run(
        [sys.executable, "-c", "import spurious, pathlib; print(pathlib.Path(spurious.__file__).parents[2])"],
        env=env, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    head = subprocess.run(
        ["git", "-C", src, "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    return f"{src} @ {head}"


def _run_file(results: dict[str, Any], args: argparse.Namespace) -> int:
    """Goal 2: the audit of one real file, cold (empty cache) then warm (same cache)."""
    key = f"{args.data.stem}_{args.profile}" + (f"_{args.label}" if args.label else "")
    rows = results.setdefault("files", {}).setdefault(key, {})
    for case in ("cold", "warm"):
        print(f"audit --{args.profile} of {args.data} ({case} cache) ...", flush=True)
        load_start = os.getloadavg()
        row = run_audit(args.data, key, args.profile, case == "cold", args.timeout, args.extra)
        row.update(load_avg_start=load_start, load_avg_end=os.getloadavg())
        row.update(code=_code_version(), bench_command=_bench_command(), cpu=cpu_info()[0])
        rows[case] = row
        print(f"  wall {row.get('wall_s')} s, peak {row.get('peak_rss_gib')} GiB", flush=True)
        _save(results, args)
    return 0


def _save(results: dict[str, Any], args: argparse.Namespace) -> None:
    results["growth_exponent"] = {
        p: growth([r for _, r in sorted(v.items(), key=lambda kv: int(kv[0]))])
        for p, v in results["runs"].items()
    }
    if args.data is None:  # a file's rows record their own command (bench_command)
        results["command"] = _bench_command()
    results.update(
        machine={"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        data="SNLI-like: real SNLI dev+test sentences resampled into new premise groups "
        "(no SNLI training split offline)",
        goal="quick audit of 550k pairs < 30 min within 8 GiB on 2 cores; full < 2 h",
    )
    tmp = OUT.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(results, indent=2, default=float) + "\n")
    tmp.replace(OUT)


if __name__ == "__main__":
    sys.exit(main())
