"""Run the README's example commands and digest every number they write.

Used to show that a refactor moves no number: run it before and after, then compare
the two JSON files (``--compare A.json B.json``). The digest of a run directory holds, per
result folder, its metrics (exact floats) and a content hash of ``scores.parquet``; written
datasets are hashed line by line after sorting.

    python bench/outputs_digest.py --out-dir /tmp/digest-after --json bench/results/outputs_after.json
    python bench/outputs_digest.py --compare bench/results/outputs_before.json bench/results/outputs_after.json
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
#: Three of the README's commands (bag-of-words leakage, SQuAD bias, resampling), digested.
SMOKE_ARGS = ["--only", "leakage_snli_bow", "bias_squad", "resample_squad",
              "--out-dir", "runs/digest", "--json", "bench/results/outputs_digest.json"]  # fmt: skip


def commands(out: Path) -> dict[str, list[str]]:
    d = SHARED
    preds = sorted(glob.glob(str(d / "predictions/squad/*.json")))
    return {
        "demo": ["demo", "--out", str(out / "demo")],
        "leakage_snli_bow": [
            "leakage",
            str(d / "snli/test_tokenized.jsonl"),
            "--eval",
            str(d / "snli/dev.jsonl"),
            "--task",
            "nli",
            "--features",
            "bow",
            "--out",
            str(out / "leakage_snli_bow"),
        ],
        "leakage_snli_minilm": [
            "leakage",
            str(d / "snli/test_tokenized.jsonl"),
            "--eval",
            str(d / "snli/dev.jsonl"),
            "--task",
            "nli",
            "--features",
            "minilm",
            "--out",
            str(out / "leakage_snli_minilm"),
        ],
        "leakage_cad_oof": [
            "leakage",
            str(d / "cad_snli/original/train.tsv"),
            "--task",
            "nli",
            "--features",
            "bow",
            "--out",
            str(out / "leakage_cad_oof"),
        ],
        "bias_squad": [
            "bias",
            str(d / "squad/dev-v1.1.json"),
            "--task",
            "qa",
            "--no-spacy",
            "--predictions",
            *preds,
            "--out",
            str(out / "bias_squad"),
        ],
        "aflite_train": [
            "aflite",
            str(d / "cad_snli/revised_combined/train.tsv"),
            "--task",
            "nli",
            "--features",
            "tfidf",
            "--partitions",
            "16",
            "--max-rounds",
            "4",
            "--out",
            str(out / "aflite_train"),
            "--write-filtered",
            str(out / "aflite_train_filtered.jsonl"),
        ],
        "aflite_eval": [
            "aflite",
            str(d / "cad_snli/original/train.tsv"),
            "--task",
            "nli",
            "--eval",
            str(d / "cad_snli/original/test.tsv"),
            "--features",
            "minilm",
            "--partitions",
            "16",
            "--max-rounds",
            "3",
            "--out",
            str(out / "aflite_eval"),
        ],
        # Every registered analysis the inputs allow (the quick and the full profile), so a
        # structural change is checked on PECO, cartography, minority, PVI, atlas,
        # associations and debiasing too, not only on the single-analysis commands.
        "audit_cad_quick": [
            "audit",
            str(d / "cad_snli/original/train.tsv"),
            "--eval",
            str(d / "cad_snli/original/test.tsv"),
            "--task",
            "nli",
            "--quick",
            "--out",
            str(out / "audit_cad_quick"),
        ],
        "audit_cad_full": [
            "audit",
            str(d / "cad_snli/original/train.tsv"),
            "--eval",
            str(d / "cad_snli/original/test.tsv"),
            "--task",
            "nli",
            "--out",
            str(out / "audit_cad_full"),
        ],
        "resample_squad": [
            "resample",
            str(d / "squad/dev-v1.1.json"),
            "--task",
            "qa",
            "--heuristic",
            "answer_length",
            "--out",
            str(out / "resampled.json"),
        ],
    }


def _frame_hash(path: Path) -> dict[str, str]:
    """One hash per column (rows sorted by id), so an added column shows as added only."""
    df = pd.read_parquet(path)
    df = df.sort_values("id").reset_index(drop=True) if "id" in df else df
    out = {}
    for col in df.columns:
        payload = pd.util.hash_pandas_object(df[col].astype(str), index=False).to_numpy()
        out[str(col)] = hashlib.sha256(payload.tobytes()).hexdigest()[:16]
    return out


def digest_dir(out: Path) -> dict:
    found: dict = {}
    for metrics in sorted(out.rglob("metrics.json")):
        folder = metrics.parent
        key = os.fspath(folder.relative_to(out))
        entry = {"metrics": json.loads(metrics.read_text())}
        if (folder / "scores.parquet").exists():
            entry["scores"] = _frame_hash(folder / "scores.parquet")
        found[key] = entry
    for data in sorted(out.parent.glob(out.name + "_filtered.jsonl")):
        lines = sorted(data.read_text().splitlines())
        found[data.name] = hashlib.sha256("\n".join(lines).encode()).hexdigest()[:16]
    return found


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--out-dir", type=Path, default=Path("runs/digest"))
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--spurious", default=None, help="spurious executable (default: the venv's)")
    ap.add_argument("--compare", nargs=2, type=Path, default=None)
    args = ap.parse_args()
    if args.compare:
        a, b = (json.loads(p.read_text()) for p in args.compare)
        diffs = compare(a["digest"], b["digest"])
        print("\n".join(diffs) if diffs else "identical: every metric and every score table")
        sys.exit(1 if diffs else 0)
    exe = args.spurious or os.fspath(Path(sys.executable).parent / "spurious")
    results: dict = {"digest": {}, "wall_s": {}}
    for name, argv in commands(args.out_dir).items():
        if args.only and name not in args.only:
            continue
        target = args.out_dir / name
        t0 = time.perf_counter()
        proc = subprocess.run(
            [exe, *argv], capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}
        )
        results["wall_s"][name] = round(time.perf_counter() - t0, 2)
        if proc.returncode != 0:
            print(f"{name}: exit {proc.returncode}\n{proc.stderr[-2000:]}", file=sys.stderr)
            results["digest"][name] = {"exit": proc.returncode}
            continue
        if target.is_dir():
            results["digest"][name] = digest_dir(target)
        else:  # a command that writes one file (resample)
            written = args.out_dir / "resampled.json"
            results["digest"][name] = hashlib.sha256(written.read_bytes()).hexdigest()[:16]
        print(f"{name}: {results['wall_s'][name]} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    failed = [name for name, d in results["digest"].items() if isinstance(d, dict) and "exit" in d]
    if failed:  # digested as {"exit": code}; a comparison would show it, a run says it too
        sys.exit(f"commands that failed: {', '.join(failed)}")


def compare(a: dict, b: dict, path: str = "") -> list[str]:
    out = []
    for k in sorted(set(a) | set(b)):
        p = f"{path}/{k}"
        if k not in a or k not in b:
            out.append(f"{p}: only in {'second' if k not in a else 'first'}")
        elif isinstance(a[k], dict) and isinstance(b[k], dict):
            out.extend(compare(a[k], b[k], p))
        elif a[k] != b[k]:
            out.append(f"{p}: {a[k]!r} != {b[k]!r}")
    return out


if __name__ == "__main__":
    main()
