"""The run directory: what a run writes besides the results, and the checks around it.

:func:`write_manifest` (config, seed, versions, datasets, statuses, skipped, timings,
warnings), :func:`prepare_out` (``--out`` must be empty, hold the same run, or be
replaced with ``force``; stale temp files of interrupted writes are removed) and
:func:`check_run_dir` (a run directory whose results all load). The layout is in
``docs/run-directory.md``.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from spurious._version import __version__
from spurious.data.dataset import Dataset
from spurious.data.in_memory import RUN_PREFIX
from spurious.exceptions import ParameterError, SpuriousError
from spurious.provenance import code_fingerprint, dependency_versions, now_iso
from spurious.results import Result
from spurious.utils.io import (
    atomic_write_json,
    check_not_an_input,
    input_paths,
    read_json,
    to_jsonable,
)

logger = logging.getLogger(__name__)

__all__ = [
    "RUN_FILES",
    "RUN_PREFIX",
    "STALE_TMP_SECONDS",
    "check_run_dir",
    "dataset_entry",
    "interrupted_run",
    "prepare_out",
    "release_out",
    "resolve_input_paths",
    "saved_result",
    "write_manifest",
]


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
    results: Mapping[str, Result],
    timings: dict[str, float],
    warnings: Sequence[str] = (),
    status: str = "complete",
    resources: Mapping[str, Mapping[str, float]] | None = None,
    resumed: Sequence[str] = (),
) -> Path:
    """Write ``out/manifest.json`` atomically.

    ``status`` is ``"running"`` for the manifest :func:`prepare_out` writes before the
    first result (so an interrupted run is recognised as this run, and continued by the
    same command) and ``"complete"`` once every analysis has a result. ``resources``:
    each analysis' and artifact's CPU seconds and, when measured, peak RSS (GiB).
    ``resumed``: the analyses whose results this run reused from the interrupted run it
    continued (their timings are that run's).
    """
    manifest = {
        "status": status,
        "command": command if isinstance(command, str) else " ".join(map(str, command)),
        # Relative input paths in the config are relative to this folder (spurious run
        # --config resolves them against it, from wherever it is started).
        "cwd": os.getcwd(),
        "created": now_iso(),
        "library_version": __version__,
        "code": code_fingerprint(),
        "seed": seed,
        "versions": dependency_versions(),
        "datasets": datasets,
        "analyses": list(results),
        "statuses": {k: r.status for k, r in results.items()},
        "skipped": {k: r.error for k, r in results.items() if r.status == "skipped"},
        "warnings": list(warnings),
        "config": to_jsonable(config),
        "timings": {k: round(v, 4) for k, v in timings.items()},
        "resources": to_jsonable(dict(resources or {})),
        "resumed": list(resumed),
    }
    return atomic_write_json(Path(out) / "manifest.json", manifest)


#: The lock a run holds on its directory while it writes (left in place: removing a lock
#: file another process may have opened would let two runs hold "the" lock).
LOCK_FILE = ".spurious-run.lock"
#: Files a run writes at the top of its directory (besides one folder per analysis).
RUN_FILES = ("manifest.json", "report.html", LOCK_FILE)
#: Open lock files of the runs of this process, by directory.
_HELD: dict[str, Any] = {}
#: Temp files of interrupted atomic writes older than this are removed by the next run.
STALE_TMP_SECONDS = 60.0


def prepare_out(
    out: str | os.PathLike[str],
    config: Mapping[str, Any],
    *,
    force: bool = False,
    inputs: Any = (),
    command: Sequence[str] | str | None = None,
    resume: bool = False,
) -> Path:
    """Make ``out`` ready for a run of ``config``; refuse to mix runs or lose files.

    - the run takes an exclusive lock on ``out`` (``.spurious-run.lock``) first, so a
      second run started into the same folder at the same time stops with an error
      instead of mixing its results in; :func:`release_out` (or the end of the process)
      releases it;
    - with ``command``, a manifest with ``"status": "running"`` and this config is written
      before any result, so a run interrupted before its final manifest is recognised as
      the same run and the same command continues it;
    - ``out`` must be a directory or not exist, and be writable;
    - ``out`` must not be, hold or lie inside an input of the run (the paths in
      ``config["inputs"]``: data, eval, predictions, attributes, annotations,
      heuristics_train; and ``inputs``), even with ``force``;
    - an existing, non-empty ``out`` is accepted when it holds the *same* run (same config
      in its manifest: a re-run or resume), or with ``force``; anything else is refused;
    - ``force`` replaces only a run directory: one with a manifest written by this
      package, or one holding nothing but a run's files (an interrupted run); a folder
      with other files and no manifest is refused;
    - with ``force``, or for a re-run of the same config that does not continue it
      (``resume``: :func:`interrupted_run`), the previous run's files (manifest,
      report, analysis folders) are removed first, so one report never shows two runs
      and no old result is shown as this run's; other files are left alone;
    - temp files of interrupted writes are removed.

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp()) / "run"
    >>> prepare_out(d, {"analyses": {}}).is_dir()
    True
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ParameterError(f"--out {str(out)!r} exists and is not a directory.")
    check_not_an_input(out, [config_input_paths(config), inputs], what="--out")
    created = _lock(out)
    try:
        _check_contents(out, config, force, resume)
        _check_writable(out)
    except BaseException:
        release_out(out)
        if created:  # a refused folder is left exactly as it was
            (out / LOCK_FILE).unlink(missing_ok=True)
        raise
    # Under the lock no other run writes here, so every temp file is a leftover.
    _remove_stale_temp_files(out, max_age=0.0 if _fcntl() is not None else STALE_TMP_SECONDS)
    if command is not None:
        write_manifest(out, command=command, config=dict(config), seed=config.get("seed"),
                       datasets={}, results={}, timings={}, status="running")  # fmt: skip
    return out


def interrupted_run(out: str | os.PathLike[str], config: Mapping[str, Any]) -> bool:
    """Whether ``out`` holds an interrupted run of ``config`` written by this version.

    Its manifest says ``"running"`` (the run never wrote its final manifest: it was
    killed, or it crashed) and records this config, this spurious version and this code
    (:func:`~spurious.provenance.code_fingerprint`), so the results it saved are this
    run's: the same command continues it, reusing each analysis' saved result
    (:func:`saved_result`) instead of computing it again. Anything else in the folder is
    re-run from scratch (:func:`prepare_out` removes its results first).

    Examples
    --------
    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = write_manifest(d, command="x", config={"seed": 0}, seed=0, datasets={},
    ...                    results={}, timings={}, status="running")
    >>> interrupted_run(d, {"seed": 0}), interrupted_run(d, {"seed": 1})
    (True, False)
    """
    try:
        manifest = read_json(Path(out) / "manifest.json")
    except (OSError, ValueError):
        return False
    return (
        isinstance(manifest, dict)
        and manifest.get("status") == "running"
        and manifest.get("library_version") == __version__
        and manifest.get("code") == code_fingerprint()
        and manifest.get("config") == to_jsonable(dict(config))
    )


def saved_result(folder: str | os.PathLike[str], fingerprints: Mapping[str, str]) -> Result | None:
    """The result an interrupted run saved in ``folder``, when a continued run may reuse it.

    Only a result that loads, ran to completion (``"ok"``: a failed or skipped analysis
    is tried again, since what stopped it may have passed), was computed on the same data
    (``fingerprints``, as :meth:`RunContext.fingerprints` gives them) and by this version
    of spurious. ``result.json`` is the last file :meth:`Result.save` writes, so a result
    cut short while saving has none and is computed again.
    """
    folder = Path(folder)
    if not (folder / "result.json").is_file():
        return None
    try:
        res = Result.load(folder, expected_fingerprints=dict(fingerprints))
    except (SpuriousError, OSError, ValueError) as e:
        logger.info("not reusing %s: %s", folder, e)
        return None
    if res.status != "ok" or res.provenance.library_version != __version__:
        return None
    return res


def _check_contents(out: Path, config: Mapping[str, Any], force: bool, resume: bool) -> None:
    """Refuse a non-empty ``out`` that holds another run or other files (see prepare_out)."""
    if not any(p.name != LOCK_FILE for p in out.iterdir()):
        return
    previous = _previous_config(out)
    same = previous is not None and previous == to_jsonable(dict(config))
    if not same and not force:
        what = "a different run" if previous is not None else "other files"
        raise ParameterError(
            f"--out {str(out)!r} already holds {what}; results of two runs are never "
            "mixed. Choose a new directory, or pass --force to replace that run's files."
        )
    if not (same and resume) or force:  # start over: no earlier result shown as this run's
        foreign = None if previous is not None else _foreign_entry(out)
        if foreign is not None:
            raise ParameterError(
                f"--out {str(out)!r} is not a run directory (it holds {foreign.name!r} "
                "and no manifest.json); --force only replaces a run's files. Choose a "
                "new directory."
            )
        _remove_run_files(out)


def _check_writable(out: Path) -> None:
    try:
        probe = out / f".write-test-{os.getpid()}.tmp"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as e:
        raise ParameterError(f"--out {str(out)!r} is not writable: {e.strerror or e}.") from None


def release_out(out: str | os.PathLike[str]) -> None:
    """Release the lock :func:`prepare_out` took on ``out`` (nothing if none is held)."""
    fh = _HELD.pop(os.path.realpath(out), None)
    if fh is not None:
        fh.close()  # closing the descriptor releases the flock


def _fcntl() -> Any:
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks; the emptiness check remains
        return None
    return fcntl


def _lock(out: Path) -> bool:
    """Take the exclusive lock of ``out`` (created if needed), or raise if a run holds it.

    Returns whether the lock file was created here.
    """
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ParameterError(f"--out {str(out)!r} is not writable: {e.strerror or e}.") from None
    fcntl, key = _fcntl(), os.path.realpath(out)
    if fcntl is None:
        return False
    created = not (out / LOCK_FILE).exists()
    release_out(out)  # a run of this process that failed without releasing it
    try:
        fh = open(out / LOCK_FILE, "a+")  # noqa: SIM115 -- held open for the whole run
    except OSError as e:
        raise ParameterError(f"--out {str(out)!r} is not writable: {e.strerror or e}.") from None
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        fh.seek(0)
        holder = fh.read().strip() or "another process"
        fh.close()
        raise ParameterError(
            f"--out {str(out)!r} is being written by another run ({holder}); two runs never "
            "write one folder. Wait for it to finish, or choose another --out."
        ) from None
    fh.seek(0)
    fh.truncate()
    fh.write(f"pid {os.getpid()}\n")
    fh.flush()
    _HELD[key] = fh
    return created


#: Keys of ``config["inputs"]`` that name input files or folders.
_INPUT_PATH_KEYS = ("data", "eval", "heuristics_train", "predictions", "attributes", "annotations")


def resolve_input_paths(
    config: Mapping[str, Any],
    base: str | os.PathLike[str] | None,
    *,
    run_dir: str | os.PathLike[str] | None = None,
) -> dict[str, Any]:
    """``config`` with its relative input paths made absolute against ``base`` (the folder
    the run was started from, as its manifest records; ``None``: left relative), and
    ``"<run>/..."`` paths (files the run stored in its folder) against ``run_dir``.

    Examples
    --------
    >>> resolve_input_paths({"inputs": {"data": "d.jsonl", "predictions": ["/p.json"]}}, "/w")
    {'inputs': {'data': '/w/d.jsonl', 'predictions': ['/p.json']}}
    >>> resolve_input_paths({"inputs": {"data": "<run>/inputs/d.parquet"}}, None, run_dir="/r")
    {'inputs': {'data': '/r/inputs/d.parquet'}}
    """

    def fix(value: Any) -> Any:
        if isinstance(value, str) and value.startswith(RUN_PREFIX) and run_dir is not None:
            return os.path.join(os.path.abspath(run_dir), value[len(RUN_PREFIX) :])
        if isinstance(value, str) and value and not value.startswith("<") and base is not None:
            return value if os.path.isabs(value) else os.path.join(os.fspath(base), value)
        return value

    out = dict(config)
    inputs = dict(out.get("inputs") or {})
    for key in _INPUT_PATH_KEYS:
        value = inputs.get(key)
        if isinstance(value, list):
            inputs[key] = [fix(v) for v in value]
        elif value is not None:
            inputs[key] = fix(value)
    out["inputs"] = inputs
    return out


def config_input_paths(config: Mapping[str, Any]) -> list[Path]:
    """The input files and folders a run config names (data, eval, predictions...)."""
    inputs = config.get("inputs") if isinstance(config, Mapping) else None
    if not isinstance(inputs, Mapping):
        return []
    return input_paths([inputs.get(k) for k in _INPUT_PATH_KEYS])


def _foreign_entry(out: Path) -> Path | None:
    """The first entry of ``out`` (no manifest) that a run does not write, if any."""
    for entry in sorted(out.iterdir()):
        if entry.name in RUN_FILES and entry.is_file():
            continue
        if entry.name.startswith(".") and entry.name.endswith(".tmp"):
            continue
        if entry.is_dir() and not entry.is_symlink() and (entry / "result.json").is_file():
            continue
        return entry
    if not any(p.is_dir() and (p / "result.json").is_file() for p in out.iterdir()):
        return next(iter(sorted(out.iterdir())), None)  # e.g. only a report.html of one's own
    return None


def _previous_config(out: Path) -> Any:
    try:
        return read_json(out / "manifest.json").get("config")
    except (OSError, ValueError, AttributeError):
        return None


def _remove_run_files(out: Path) -> None:
    for name in RUN_FILES:
        if name != LOCK_FILE:  # held by this run
            (out / name).unlink(missing_ok=True)
    for folder in out.iterdir():
        if folder.is_dir() and (folder / "result.json").exists():
            shutil.rmtree(folder)


def _remove_stale_temp_files(out: Path, max_age: float = STALE_TMP_SECONDS) -> None:
    now = time.time()
    for tmp in [*out.glob(".*.tmp"), *out.glob("*/.*.tmp")]:
        try:
            if now - tmp.stat().st_mtime >= max_age:
                tmp.unlink()
        except OSError:  # removed meanwhile, or not ours to remove
            continue


def check_run_dir(run_dir: str | Path) -> list[str]:
    """Problems that would make ``run_dir``'s report wrong (empty list: none).

    A directory without a manifest and without any ``<analysis>/result.json`` is not a
    run; an unreadable manifest or result is a problem to fix, not to paper over.
    """
    run_dir = Path(run_dir)
    folders = [p for p in sorted(run_dir.iterdir()) if (p / "result.json").exists()]
    if not (run_dir / "manifest.json").exists() and not folders:
        return [
            f"{str(run_dir)!r} is not a run directory (no manifest.json and no "
            "<analysis>/result.json)."
        ]
    problems = []
    expected: dict[str, str] = {}
    if (run_dir / "manifest.json").exists():
        try:
            manifest = read_json(run_dir / "manifest.json")
            if manifest.get("status") == "running":
                problems.append(
                    "the run did not finish (its manifest says 'running': interrupted, or "
                    "still writing); re-run the same command to continue it."
                )
            datasets = manifest.get("datasets") or {}
            expected = {k: v["fingerprint"] for k, v in datasets.items() if "fingerprint" in v}
        except (OSError, ValueError, AttributeError, TypeError, KeyError) as e:
            problems.append(f"manifest.json cannot be read: {e}")
    for folder in folders:
        try:
            Result.load(folder, expected_fingerprints=expected)
        except (SpuriousError, OSError, ValueError) as e:
            problems.append(f"{folder.name}: {e}")
    return problems
