"""Run directories: the on-disk contract every ``--out DIR`` command follows.

::

    DIR/manifest.json               command, config, seed, versions, datasets, timings
    DIR/report.html                 self-contained HTML report
    DIR/<detector>/metrics.json     flat {metric name: number}
    DIR/<detector>/scores.parquet   one row per example, keyed by ``id``
    DIR/<detector>/result.json      params, provenance, summary, details

See ``docs/run-directory.md``. A detector that raises inside :func:`run_detectors` is
recorded as failed with its error (never silently skipped).
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from spurious._version import __version__
from spurious.data.dataset import Dataset
from spurious.detectors.base import Detector
from spurious.exceptions import SpuriousError
from spurious.provenance import Provenance, dependency_versions, now_iso
from spurious.results import DetectorResult
from spurious.utils.io import atomic_write_json, to_jsonable

logger = logging.getLogger(__name__)


def dataset_entry(ds: Dataset, source: str | None = None) -> dict[str, Any]:
    """The manifest's description of one input dataset."""
    entry = {
        "name": ds.name,
        "task": ds.task.name,
        "n": len(ds),
        "fingerprint": ds.fingerprint,
        "label_names": list(ds.label_names),
        "n_dropped_no_gold": int(ds.frame.attrs.get("n_dropped_no_gold", 0)),
    }
    if source is not None:
        entry["source"] = source
    return entry


def write_manifest(
    out: str | Path,
    *,
    command: Sequence[str] | str,
    config: dict[str, Any],
    seed: int | None,
    datasets: dict[str, dict[str, Any]],
    detectors: Sequence[str],
    timings: dict[str, float],
    statuses: dict[str, str] | None = None,
) -> Path:
    """Write ``out/manifest.json`` atomically."""
    manifest = {
        "command": command if isinstance(command, str) else " ".join(map(str, command)),
        "created": now_iso(),
        "library_version": __version__,
        "seed": seed,
        "versions": dependency_versions(),
        "datasets": datasets,
        "detectors": list(detectors),
        "statuses": statuses or {},
        "config": to_jsonable(config),
        "timings": {k: round(v, 4) for k, v in timings.items()},
    }
    return atomic_write_json(Path(out) / "manifest.json", manifest)


def run_detectors(
    detectors: Sequence[Detector],
    dataset: Dataset,
    eval_dataset: Dataset | None = None,
    *,
    out: str | Path | None = None,
    progress: bool = False,
) -> dict[str, DetectorResult]:
    """Run several detectors; failures become ``status="failed"`` results with the error.

    Programming errors (anything that is not a :class:`SpuriousError`) are recorded
    the same way, with the traceback logged, so one broken detector does not lose the
    others' results.
    """
    results: dict[str, DetectorResult] = {}
    for det in detectors:
        start = time.perf_counter()
        try:
            res = det.run(dataset, eval_dataset, progress=progress)
        except Exception as e:  # recorded, not swallowed: the result says "failed"
            if not isinstance(e, SpuriousError):
                logger.error("detector %s crashed:\n%s", det.name, traceback.format_exc())
            fps = {"train": dataset.fingerprint}
            if eval_dataset is not None:
                fps["eval"] = eval_dataset.fingerprint
            res = DetectorResult(
                detector=det.name,
                scores=pd.DataFrame({"id": pd.Series([], dtype=str)}),
                metrics={},
                params=to_jsonable(det.params_for_json()),
                provenance=Provenance(
                    seed=getattr(det, "random_state", None),
                    fingerprints=fps,
                    timings={"total_s": round(time.perf_counter() - start, 4)},
                ),
                summary=f"failed: {type(e).__name__}: {e}",
                status="failed",
                error=f"{type(e).__name__}: {e}",
            )
        results[det.name] = res
        if out is not None:
            res.save(Path(out) / det.name)
    return results
