"""A small copy of ``../shared/data`` for the benchmarks' smoke test.

Every file keeps its format and the first rows of its content: the first ``rows`` lines of
a JSONL file, the header and the first ``rows`` lines of a TSV or CSV file, the first
articles of SQuAD (and only their questions' answers in the prediction files), a few
MMLU subjects. The original files are read, never written. Usage::

    python bench/_smoke_data.py DEST [--rows 1000]

``tests/test_bench_smoke.py`` puts it beside a copy of ``bench/``, where a benchmark's
``../shared/data`` resolves to it (and its results land in the copy).
"""

from __future__ import annotations

import argparse
import json
import shutil
from itertools import islice
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "shared" / "data"
#: SQuAD articles kept (the first five hold 500-600 questions).
SQUAD_ARTICLES = 5
#: MMLU subjects kept (alphabetical), each file cut to ``rows // 10`` questions.
MMLU_SUBJECTS = 4


def _head(src: Path, dest: Path, n: int) -> None:
    with src.open(encoding="utf-8") as f, dest.open("w", encoding="utf-8") as g:
        g.writelines(islice(f, n))


def _squad(src_root: Path, dest_root: Path) -> None:
    doc = json.loads((src_root / "squad" / "dev-v1.1.json").read_text(encoding="utf-8"))
    doc["data"] = doc["data"][:SQUAD_ARTICLES]
    ids = {q["id"] for a in doc["data"] for p in a["paragraphs"] for q in p["qas"]}
    (dest_root / "squad").mkdir(parents=True, exist_ok=True)
    (dest_root / "squad" / "dev-v1.1.json").write_text(json.dumps(doc), encoding="utf-8")
    pred_src = src_root / "predictions" / "squad"
    (dest_root / "predictions" / "squad").mkdir(parents=True, exist_ok=True)
    for f in sorted(pred_src.glob("*.json")):
        preds = json.loads(f.read_text(encoding="utf-8"))
        kept = {k: v for k, v in preds.items() if k in ids}
        (dest_root / "predictions" / "squad" / f.name).write_text(json.dumps(kept))


def build(dest: Path, rows: int = 1000, source: Path = SOURCE) -> Path:
    """Write the small copy of ``source`` into ``dest`` (created) and return ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    _squad(source, dest)
    # MMLU files are <subject>_<split>.csv; the same subjects in every split.
    subjects = sorted(f.name.rsplit("_", 1)[0] for f in (source / "mcq/mmlu/test").glob("*.csv"))
    mmlu_keep = set(subjects[:MMLU_SUBJECTS])
    for src in sorted(source.rglob("*")):
        rel = src.relative_to(source)
        if src.is_dir() or rel.parts[0] in ("squad", "predictions"):
            continue
        out = dest / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if rel.parts[:2] == ("mcq", "mmlu"):
            if src.name.rsplit("_", 1)[0] in mmlu_keep:
                _head(src, out, max(rows // 10, 20))
        elif src.suffix == ".jsonl":
            _head(src, out, rows)
        elif src.suffix in (".tsv", ".csv"):
            _head(src, out, rows + 1)  # + the header
        else:
            shutil.copyfile(src, out)
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dest", type=Path)
    ap.add_argument("--rows", type=int, default=1000)
    args = ap.parse_args()
    print(build(args.dest, args.rows))


if __name__ == "__main__":
    main()
