"""One run lifecycle for every command and the Python API.

::

    config -> load inputs -> RunContext -> lock DIR, manifest "running" -> analyses
        -> for each: skipped (requirements unmet) | run | failed   -> DIR/<name>/
        -> DIR/manifest.json "complete" -> DIR/report.html

A run's *config* is plain data (JSON or YAML)::

    {"inputs": {"data": "train.jsonl", "task": "nli", "eval": "dev.jsonl",
                "predictions": [], "attributes": null, "heuristics_train": null,
                "annotations": null, "field_map": {}, "format": null},
     "analyses": {"partial_input": {"features": "minilm", ...}},
     "seed": 0}

and the manifest stores it, so ``spurious run --config DIR/manifest.json`` (or
:func:`run_config`) re-runs the same run (same inputs, parameters and numbers); synthetic
inputs are described by their generator, so the demo re-runs too. An optional
``"executor"`` (``"ray"`` or ``{"kind": "ray", "options": {"address": "head:6379"}}``,
written by ``spurious audit --executor ray``) is where the run's shared steps (the
encoding) run; see :mod:`spurious.execution`. An optional ``"device"`` (``audit --device``)
is where the ``device="auto"`` steps run (:func:`spurious.models.runtime.use_device`).

The run directory layout is in ``docs/run-directory.md``. An analysis whose requirements
are not met is recorded as ``skipped`` with the reason; one that raises is recorded as
``failed`` with the error (never silently dropped), and the others still run.
"""

from __future__ import annotations

import logging
import os
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from spurious.analysis import Analysis, load_analyses
from spurious.context import RunContext
from spurious.data.dataset import Dataset
from spurious.data.in_memory import (
    check_data_argument,
    load_splits,
    save_for_rerun,
    split_inputs,
    split_task,
)
from spurious.exceptions import (
    NothingToRunError,
    ParameterError,
    ResultNotFoundError,
    SpuriousError,
    as_missing_dependency,
)
from spurious.execution import make_executor, use_executor
from spurious.inputs import load_inputs
from spurious.models.runtime.hardware import resolve_device, use_device
from spurious.plan import audit_plan as audit_plan
from spurious.plan import check_analyses_argument, run_profile
from spurious.plan import order_analyses as order_analyses
from spurious.provenance import Provenance
from spurious.results import Result
from spurious.runconfig import CONFIG_KEYS as CONFIG_KEYS
from spurious.runconfig import build_analyses as build_analyses
from spurious.runconfig import manifest_fingerprints as manifest_fingerprints
from spurious.runconfig import normalise_config as normalise_config
from spurious.runconfig import read_config as read_config
from spurious.rundir import (
    RUN_FILES as RUN_FILES,
)
from spurious.rundir import (
    check_run_dir as check_run_dir,
)
from spurious.rundir import (
    dataset_entry as dataset_entry,
)
from spurious.rundir import (
    interrupted_run,
    release_out,
    resolve_input_paths,
    saved_result,
)
from spurious.rundir import (
    prepare_out as prepare_out,
)
from spurious.rundir import (
    write_manifest as write_manifest,
)
from spurious.utils.io import to_jsonable
from spurious.utils.progress import Phases, datasets_progress, default_progress
from spurious.utils.validation import check_seed

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------
# Results of a run
# ---------------------------------------------------------------------------------------
@dataclass
class Run:
    """What a run produced: results by analysis, the context and the run directory.

    Attributes
    ----------
    results : dict of str to Result
    context : RunContext
    config : dict
        The plain-data config that re-runs this run.
    out : Path or None
        The run directory (``None`` when nothing was written).
    report : Path or None
        ``out/report.html``.
    timings : dict
    """

    results: dict[str, Result]
    context: RunContext
    config: dict[str, Any]
    out: Path | None = None
    report: Path | None = None
    timings: dict[str, float] = field(default_factory=dict)
    #: CPU seconds and (``SPURIOUS_PEAK_RSS=1``) peak RSS of each analysis and artifact.
    resources: dict[str, dict[str, float]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """No analysis failed (skipped ones are fine)."""
        return all(r.status != "failed" for r in self.results.values())

    def __getitem__(self, name: str) -> Result:
        try:
            return self.results[name]
        except (KeyError, TypeError):
            raise ResultNotFoundError(
                f"This run has no result named {name!r}; its results: {list(self.results)}."
            ) from None

    def __repr__(self) -> str:
        parts = ", ".join(f"{k}={r.status}" for k, r in self.results.items())
        where = f" -> {self.out}" if self.out else ""
        return f"<Run {parts}{where}>"

    def _repr_html_(self) -> str:
        """The report's first screen in a notebook: answer line, cards, key figure."""
        from spurious.report.notebook import notebook_html  # matplotlib only when shown

        html = notebook_html(self.results, config=self.config, out=self.out, report=self.report)
        return str(html)


# ---------------------------------------------------------------------------------------
# Running
# ---------------------------------------------------------------------------------------
def run_analyses(
    analyses: Sequence[Analysis],
    context: RunContext,
    *,
    out: str | Path | None = None,
    on_result: Callable[[Result], None] | None = None,
    resume: bool = False,
) -> dict[str, Result]:
    """Run analyses on one context; unmet requirements -> ``skipped``, errors -> ``failed``.

    Programming errors (anything that is not a :class:`SpuriousError`) are recorded the
    same way, with the traceback logged, so one broken analysis does not lose the
    others' results. Each result is saved under ``out/<name>/`` as soon as it exists.
    With ``resume`` (``out`` holds an interrupted run of this config: see
    :func:`~spurious.rundir.interrupted_run`), a result saved there is reused instead of
    computed again (``Result.resumed``); each analysis has its own seed, so the others'
    numbers do not depend on which ones ran in this process.
    """
    results: dict[str, Result] = {}
    for analysis in order_analyses(analyses):
        saved = None
        if resume and out is not None:
            saved = saved_result(Path(out) / analysis.name, context.fingerprints())
        if saved is not None:
            saved.resumed = True
            context.warnings.extend(saved.provenance.warnings)
            results[analysis.name] = context.results[analysis.name] = saved
            if on_result is not None:
                on_result(saved)
            continue
        n_warnings = len(context.warnings)
        _note_missing_dependencies(analysis, context)
        start, built = time.perf_counter(), set(context.timings)
        unmet = analysis.unmet(context)
        used: dict[str, float] = {}
        if unmet:
            res = _placeholder(analysis, context, "skipped", "; ".join(unmet), start)
        else:
            try:
                with context.meter.span() as used:
                    res = analysis.run(context=context)
            except Exception as e:  # recorded, not swallowed: the result says "failed"
                missing = as_missing_dependency(e, analysis.name)
                if missing is not None:  # an extra that is not installed: skipped, not failed
                    res = _placeholder(analysis, context, "skipped", str(missing), start)
                    _keep(results, analysis, context, res, out, on_result)
                    continue
                if not isinstance(e, SpuriousError):
                    logger.error("analysis %s crashed:\n%s", analysis.name, traceback.format_exc())
                res = _placeholder(analysis, context, "failed", f"{type(e).__name__}: {e}", start)
        # Shared artifacts (an encoding, training dynamics) this analysis happened to ask
        # for first: their time is the run's, reported on its own line, not this one's.
        new = [k for k in context.timings if k not in built and k not in context.nested_timings]
        shared = sum(context.timings[k] for k in new)
        res.provenance.timings["shared_artifacts_s"] = round(shared, 4)
        res.provenance.timings.update(used)  # cpu_s (+ peak_rss_gib), artifacts included
        res.provenance.warnings = context.warnings[n_warnings:]
        _keep(results, analysis, context, res, out, on_result)
    return results


def _keep(
    results: dict[str, Result],
    analysis: Analysis,
    context: RunContext,
    res: Result,
    out: str | Path | None,
    on_result: Callable[[Result], None] | None,
) -> None:
    """Record a result: in the run, in the context (for later analyses), on disk, to the
    caller's callback."""
    results[analysis.name] = context.results[analysis.name] = res
    if out is not None:
        res.save(Path(out) / analysis.name)
    if on_result is not None:
        on_result(res)


def _note_missing_dependencies(analysis: Analysis, context: RunContext) -> None:
    """Say when an analysis that reads another's result runs without it."""
    for dep in analysis.after:
        prev = context.results.get(dep)
        if prev is not None and prev.status == "ok":
            continue
        state = "was not run" if prev is None else f"was {prev.status}"
        context.warnings.append(
            f"{analysis.name} uses the result of {dep} when both run; {dep} {state} in this "
            f"run, so {analysis.name} ran without it."
        )


def _placeholder(
    analysis: Analysis, ctx: RunContext, status: str, why: str, start: float
) -> Result:
    verb = "skipped" if status == "skipped" else "failed"
    return Result(
        analysis=analysis.name,
        scores=pd.DataFrame({"id": pd.Series([], dtype=str)}),
        metrics={},
        params=to_jsonable(analysis.params_for_json()),
        provenance=Provenance(
            seed=getattr(analysis, "random_state", None),
            fingerprints=ctx.fingerprints(),
            timings={"total_s": round(time.perf_counter() - start, 4)},
        ),
        summary=f"{verb}: {why}",
        status=status,
        error=why,
    )


def execute(
    config: Mapping[str, Any],
    *,
    out: str | os.PathLike[str] | None = None,
    command: Sequence[str] | str = "spurious (python)",
    progress: bool | None = None,
    report: bool = True,
    context: RunContext | None = None,
    on_result: Callable[[Result], None] | None = None,
    before_run: Callable[[RunContext, list[Analysis]], None] | None = None,
    force: bool = False,
    expected_fingerprints: Mapping[str, str] | None = None,
    datasets: Mapping[str, Dataset] | None = None,
    refuse_empty: bool = False,
) -> Run:
    """Run a config end to end: inputs, analyses, results, manifest, report.

    Everything that can be checked cheaply (the config, every parameter, the inputs) is
    checked before the run directory is created, so bad input writes nothing.

    Parameters
    ----------
    config : mapping
        See the module docstring; :func:`normalise_config` checks it.
    out : path, optional
        Run directory; ``None`` keeps the results in memory only.
    command : str or list of str
        Recorded in the manifest.
    progress : bool, optional
        Progress bars (default: when a person watches).
    report : bool, default=True
        Render ``out/report.html``.
    context : RunContext, optional
        Use these inputs instead of loading ``config["inputs"]``.
    datasets : mapping, optional
        In-memory datasets for ``data`` / ``eval`` / ``heuristics_train`` (the API); the
        other inputs of ``config["inputs"]`` are loaded as usual (see
        :func:`~spurious.inputs.load_inputs`).
    on_result : callable, optional
        Called with each result as soon as it exists (the CLI prints a line).
    before_run : callable, optional
        Called with the context and analyses after validation, before any work.
    force : bool, default=False
        Replace a different run already in ``out`` (see :func:`prepare_out`).
    expected_fingerprints : mapping, optional
        ``{"train": ..., "eval": ...}`` from the manifest being re-run: loaded data that
        differ (a changed file, another file at that path) stop the run before any work.
    refuse_empty : bool, default=False
        Raise :class:`NothingToRunError` (every reason) before anything is written when no
        analysis can run, instead of a run of skipped results (the CLI's exit 2).
    """
    t0 = time.perf_counter()
    config = normalise_config(config)
    analyses = order_analyses(build_analyses(config["analyses"]))
    ctx = context
    if ctx is None:
        # datasets' own bars (flattening, saving) follow ours, off with progress=False.
        with datasets_progress(default_progress() if progress is None else progress):
            ctx = load_inputs(config["inputs"], progress=progress, datasets=datasets)
    for role, want in (expected_fingerprints or {}).items():
        ds = ctx.train if role == "train" else ctx.eval if role == "eval" else None
        if ds is not None and ds.fingerprint != want:
            raise ParameterError(
                f"--config: the {role} data loaded from {config['inputs'].get('data' if role == 'train' else role)!r} "
                f"are not the data that run used (fingerprint {ds.fingerprint}, the manifest "
                f"says {want}): the file changed, or another file is at that path."
            )
    if progress is not None:
        ctx.progress = progress
    unmet = {a.name: a.unmet(ctx) for a in analyses}
    if refuse_empty and analyses and all(unmet.values()):
        why = "; ".join(f"{name} {' and '.join(reasons)}" for name, reasons in unmet.items())
        raise NothingToRunError(f"Nothing to run: no analysis can use these inputs: {why}.")
    for analysis in analyses:
        if not unmet[analysis.name]:
            analysis.check(ctx)  # parameters that cannot fit these inputs fail here
    # The run's device (cuda without a GPU) and executor are checked before the run folder
    # exists: a cluster that cannot be reached writes nothing. The executor runs for all.
    device = config.get("device")
    if device not in (None, "cpu"):  # "cpu" needs no torch (a lexical run may have none)
        resolve_device(device)
    executor = make_executor(config.get("executor")).start()
    try:
        # Read before prepare_out rewrites the manifest as this run's "running" one.
        resume = out is not None and not force and interrupted_run(out, config)
        if out is not None:
            out = prepare_out(out, config, force=force, command=command, resume=resume)
        timings = {"load_s": time.perf_counter() - t0}
        if before_run is not None:
            before_run(ctx, analyses)
    except BaseException:
        executor.close()
        raise
    t1 = time.perf_counter()
    run_executor = use_executor(executor, start=False, close=True)
    ahead = None  # report sections rendered while the analyses run, on long runs
    if report and out is not None:
        from spurious.report.prefetch import SectionPrefetch

        ahead = SectionPrefetch.for_run(out, len(ctx.train), unmet)
    with datasets_progress(ctx.progress), run_executor, use_device(device), ahead or nullcontext():
        on_each = on_result if ahead is None else ahead.chain(on_result)
        results = run_analyses(analyses, ctx, out=out, on_result=on_each, resume=resume)
    timings["analyses_s"] = time.perf_counter() - t1
    timings.update({f"{n}_s": r.provenance.timings.get("total_s", 0.0) for n, r in results.items()})
    timings.update({f"artifact:{k}_s": v for k, v in ctx.timings.items()})
    # CPU seconds (and peak RSS with SPURIOUS_PEAK_RSS=1) of each step, beside the times.
    resources = {f"artifact:{k}": dict(v) for k, v in ctx.resources.items()}
    for name, res in results.items():
        used = {u: res.provenance.timings.get(u) for u in ("cpu_s", "peak_rss_gib")}
        resources[name] = {u: v for u, v in used.items() if v is not None}
    timings["total_s"] = time.perf_counter() - t0
    run = Run(results=results, context=ctx, config=config, out=None, timings=timings)
    run.resources = resources
    if out is not None:
        out = Path(out)
        inputs = config["inputs"]
        entries = {"train": dataset_entry(ctx.train, _source(inputs.get("data")))}
        if ctx.eval is not None:
            entries["eval"] = dataset_entry(ctx.eval, _source(inputs.get("eval")))
        write_manifest(
            out,
            command=command,
            config=config,
            seed=config["seed"],
            datasets=entries,
            results=results,
            timings=timings,
            resources=resources,
            warnings=ctx.warnings,
            resumed=[name for name, res in results.items() if res.resumed],
        )
        run.out = out
        if report:
            from spurious.report import render_report

            with Phases("report", ["rendering report.html"], enabled=ctx.progress) as line:
                line.start("rendering report.html")  # seconds of plots on a large run
                run.report = render_report(out, sections=ahead.sections() if ahead else None)
        release_out(out)
    return run


def _source(value: Any) -> str | None:
    return None if value is None else os.fspath(value)


def run_config(
    config: Mapping[str, Any] | str | os.PathLike[str],
    *,
    out: str | Path | None = None,
    progress: bool | None = None,
    force: bool = False,
) -> Run:
    """Re-run a config (a mapping, a JSON/YAML file, or a run directory's manifest)."""
    expected = {} if isinstance(config, Mapping) else manifest_fingerprints(config)
    if not isinstance(config, Mapping):
        config = read_config(config)
    return execute(config, out=out, progress=progress, command="spurious run --config",
                   force=force, expected_fingerprints=expected)  # fmt: skip


def run(
    data: str | os.PathLike[str] | Dataset | Any = None,
    task: str | None = None,
    *,
    eval: str | os.PathLike[str] | Dataset | Any = None,
    analyses: Sequence[str] | Mapping[str, Mapping[str, Any]] | None = None,
    predictions: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] = (),
    attributes: str | os.PathLike[str] | None = None,
    heuristics_train: str | os.PathLike[str] | Dataset | Any = None,
    annotations: str | os.PathLike[str] | None = None,
    field_map: Mapping[str, str] | None = None,
    format: str | None = None,
    split: str | None = None,
    eval_split: str | None = None,
    predictions_id_field: str | None = None,
    predictions_value_field: str | None = None,
    predictions_align: str = "id",
    predictions_kind: str = "auto",
    annotations_min_match: float | None = None,
    profile: str | None = None,
    seed: int = 0,
    out: str | os.PathLike[str] | None = None,
    progress: bool | None = None,
    force: bool = False,
) -> Run:
    """Run analyses on a dataset: the Python form of ``spurious audit`` / ``spurious run``.

    Parameters
    ----------
    data : path, Dataset, pandas.DataFrame or datasets.Dataset / DatasetDict
        The data: what :func:`~spurious.data.load_dataset` accepts (a file or folder in
        any supported format, a DataFrame, a Hugging Face dataset; a DatasetDict with
        ``split``), or a loaded :class:`Dataset`.
    task : {"nli", "pair", "text", "qa", "mcq"}
        Needed unless ``data`` is a Dataset (which knows its task).
    eval : same kinds as ``data``, optional
        A held-out evaluation split (a DatasetDict with ``eval_split``).
    analyses : list of names, or {name: params}, optional
        Default: every registered analysis that ``spurious audit`` would pick. Each name
        once.
    predictions, attributes, heuristics_train, annotations, field_map, format
        As on the command line; ``heuristics_train`` may be in memory too. Every input
        is used whether a split is a path or in memory; ``field_map`` applies to every
        split but a Dataset, ``format`` to the splits given as paths; a file that does
        not exist is an error naming it.
    split, eval_split : str, optional
        The split of a DatasetDict (an object, or a ``save_to_disk`` folder) given as
        ``data`` / ``eval`` (``--split``, ``--eval-split``).
    predictions_id_field, predictions_value_field, predictions_align, predictions_kind
        How prediction files are read (``--id-field``, ``--value-field``, ``--align``,
        ``--prediction-kind``); see :func:`spurious.data.predictions.load_predictions`
        (``id_field``, ``value_field``, ``align``, ``kind``); aligned to ``eval``,
        else ``data``.
    annotations_min_match : float, optional
        Smallest share of the ``annotations`` file's examples that must match a row
        (``--min-annotation-match``; default 0.5); see
        :func:`spurious.data.annotations.match_annotations`.
    profile : {"full", "quick"}, optional
        Parameter profile of the analyses ``spurious audit`` picks (see each analysis'
        ``profiles``; default ``"full"``). Only without ``analyses``, whose parameters
        are given: a profile there would have no effect, and is an error.
    seed : int
        ``random_state`` of every analysis that has one, in ``[0, 2**32 - 1]``.
    out : path, optional
        Write a run directory (results, manifest, report). Splits given in memory are
        stored in it as ``inputs/<role>-<fingerprint>.parquet`` and the manifest names
        them (``"<run>/inputs/..."``), so ``spurious run --config OUT`` and
        ``spurious amplify --from-run OUT`` re-load them. Without ``out`` nothing is
        written, and ``Run.config`` records in-memory splits by name only
        (``"<in-memory NAME>"``): such a config cannot be re-run.
    progress : bool, optional
        Progress bars (default: when a person watches).
    force : bool, default=False
        Replace a different run already in ``out``.

    Returns
    -------
    Run

    Raises
    ------
    ParameterError
        A split of another kind, a missing ``task``, a bad ``seed``, an analysis named
        twice, ``format`` without a split given as a path (all before anything is
        written).

    Examples
    --------
    >>> from spurious.data.synthetic import make_nli_artifacts
    >>> train, test = make_nli_artifacts(n=400, random_state=0).dataset.split(0.3)
    >>> r = run(train, eval=test, analyses={"partial_input": {"features": "bow",
    ...         "n_resamples": 50}}, progress=False)
    >>> r["partial_input"].metrics["delta_maj_hypothesis_only"] > 0.05
    True

    A pandas DataFrame (or a Hugging Face dataset) with its task:

    >>> frame = train.frame[["premise", "hypothesis", "label"]]
    >>> run(frame, "nli", analyses={"partial_input": {"features": "bow", "n_resamples": 50}},
    ...     progress=False)["partial_input"].status
    'ok'
    """
    seed = check_seed(seed)
    splits = {"data": data, "eval": eval, "heuristics_train": heuristics_train}
    kinds = {key: check_data_argument(value, key) for key, value in splits.items()}
    task = split_task(data, kinds["data"], task)
    check_analyses_argument(analyses)
    if isinstance(predictions, str | os.PathLike):
        predictions = [predictions]
    fmap = dict(field_map or {})
    in_memory = load_splits(splits, kinds, task, fmap, format, split, eval_split)
    # Splits given in memory are stored in the run folder and named there, so that the
    # manifest re-runs; without a folder they are recorded by name only.
    stored = {k: ds for k, ds in in_memory.items() if kinds[k] != "path"}
    inputs = split_inputs(splits, kinds, stored, out is not None, format, split, eval_split)
    inputs.update(
        task=task,
        format=format,
        field_map=fmap,
        predictions=[os.fspath(p) for p in predictions],
        attributes=None if attributes is None else os.fspath(attributes),
        annotations=None if annotations is None else os.fspath(annotations),
    )
    # Only non-default readings are recorded, so existing configs stay unchanged.
    readings: tuple[tuple[str, str | float | None, str | None], ...] = (
        ("predictions_id_field", predictions_id_field, None),
        ("predictions_value_field", predictions_value_field, None),
        ("predictions_align", predictions_align, "id"),
        ("predictions_kind", predictions_kind, "auto"),
        ("annotations_min_match", annotations_min_match, None),
    )
    for key, reading, default in readings:
        if reading != default:
            inputs[key] = reading
    profile = run_profile(profile, analyses)
    spec = audit_plan(profile=profile, seed=seed, task=task) if analyses is None else analyses
    if not isinstance(spec, Mapping):
        spec = {name: {} for name in spec}
    spec = {n: {**_seeded(n, seed, p)} for n, p in spec.items()}
    config = {"inputs": inputs, "analyses": spec, "seed": seed, "profile": profile}

    def store(_ctx: RunContext, _analyses: list[Analysis]) -> None:
        # After the run folder is prepared (locked, checked): nothing is written earlier.
        if out is not None:
            save_for_rerun(stored, Path(os.fspath(out)), fmap)

    result = execute(
        config,
        out=out,
        progress=progress,
        datasets=in_memory,
        force=force,
        before_run=store if (out is not None and stored) else None,
    )
    if result.out is not None and stored:  # re-runnable as it is: run_config(result.config)
        result.config = resolve_input_paths(result.config, None, run_dir=result.out)
    return result


def _seeded(name: str, seed: int, params: Mapping[str, Any]) -> dict[str, Any]:
    cls = load_analyses().get(name)
    out = dict(params)
    if "random_state" in cls().get_params(deep=False):
        out.setdefault("random_state", seed)
    return out
