"""Where :meth:`AmplifiedSplits.save <spurious.actions.amplify.AmplifiedSplits.save>`
writes: the output folder checks, each input's file format, the report's manifest.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spurious.data.dataset import Dataset
from spurious.exceptions import ParameterError
from spurious.utils.io import check_output_file

#: What ``save`` writes into its output folder (removed first on a forced re-write).
_OUTPUTS = ("summary.json", "report.html", "amplify", "hf", "files")
#: File suffix of each input format when the splits are written as files.
_FILE_FORMATS = {
    "jsonl": "jsonl",
    "json": "json",
    "csv": "csv",
    "tsv": "tsv",
    "parquet": "parquet",
    "arrow": "parquet",
    "squad": "json",
}


def _file_format(ds: Dataset) -> str:
    src = ds.source
    if src is None or src.kind != "file":
        return "jsonl"
    return _FILE_FORMATS.get(src.format, "jsonl")


def _report_manifest(
    source: Mapping[str, Any], params: Mapping[str, Any], summary: Mapping[str, Any]
) -> dict[str, Any]:
    """The report's manifest: the marks' run manifest with this action's command, seed,
    creation time and versions (``source`` / ``params`` of the AmplifiedSplits)."""
    prov = summary["provenance"]
    manifest = dict(source.get("manifest") or {})
    manifest.update(
        {
            "command": source.get("command", manifest.get("command", "spurious amplify")),
            "created": prov["created"],
            "seed": params.get("random_state"),
            "versions": prov["versions"],
        }
    )
    manifest.pop("analyses", None)
    manifest.pop("detectors", None)  # the earlier name, in older runs
    manifest.pop("statuses", None)
    return manifest


def _prepare_out(
    out: Path,
    *,
    force: bool,
    inputs: Sequence[Any],
    paths: Sequence[Path],
    keep: Sequence[str] = (),
) -> None:
    """Refuse to mix outputs or touch inputs, before anything is written."""
    if out.exists() and not out.is_dir():
        raise ParameterError(f"--out {str(out)!r} exists and is not a directory.")
    srcs = [Path(p).resolve() for p in inputs if p is not None]
    for p in paths:
        check_output_file(p, srcs, overwrite=force, what="--out file")
    ours = [out / name for name in _OUTPUTS]
    for src in srcs:
        if src == out.resolve() or any(
            src == o.resolve() or o.resolve() in src.parents for o in ours
        ):
            raise ParameterError(
                f"--out {str(out)!r} would write over the input {str(src)!r} (the data or "
                "the run directory the marks come from); inputs are never modified. Choose "
                "another folder."
            )
    existing = [o for o in ours if o.exists()]
    present = [p for p in out.iterdir() if p.name not in keep] if out.is_dir() else []
    if present:
        others = [p.name for p in present if p not in ours and not p.name.startswith(".")]
        if not force:
            raise ParameterError(
                f"--out {str(out)!r} is not empty; pass --force to replace earlier amplify "
                "outputs (other files are left alone)."
            )
        if others and not existing:
            raise ParameterError(
                f"--out {str(out)!r} holds other files ({others[:5]}); choose an empty folder."
            )
        for o in existing:
            if o.is_dir():
                shutil.rmtree(o)
            else:
                o.unlink()
    out.mkdir(parents=True, exist_ok=True)
