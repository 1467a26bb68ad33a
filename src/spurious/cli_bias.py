"""``spurious bias`` and ``spurious resample``: prediction bias of models, and RESAM.

Both are plain click commands; :mod:`spurious.cli` registers them on the main group.
Helpers from :mod:`spurious.cli` are imported inside the commands, so importing this
module first (for example in a test) cannot create an import cycle.
"""

from __future__ import annotations

import logging
import math
import os
import time
from pathlib import Path
from typing import Any

import click

from spurious.exceptions import ParameterError

logger = logging.getLogger("spurious")

_TASKS = click.Choice(["nli", "pair", "text", "qa"])


def _parse_thresholds(items: tuple[str, ...]) -> dict[str, float]:
    out: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            if not sep:
                raise ValueError
            out[name.strip()] = float(value)
        except ValueError:
            raise click.BadParameter(
                f"expected HEURISTIC=T (e.g. word_distance=7); got {item!r}",
                param_hint="--threshold",
            ) from None
    return out


def _read_attributes(path: Path):
    import pandas as pd

    from spurious.data.readers import READERS, infer_format

    fmt = infer_format(path)
    frame, _ = READERS[fmt](path) if fmt != "squad" else (None, None)
    if frame is None:
        raise ParameterError(f"--attributes {str(path)!r}: a SQuAD file holds no heuristic values.")
    for col in frame.columns:
        if col != "id":
            frame[col] = pd.to_numeric(frame[col], errors="coerce")
    return frame


def _print_table(res: Any) -> None:
    d = res.details
    m = res.metrics
    models = d.get("models", [])
    has_human = bool(d.get("natural"))
    shared = d.get("shared_threshold", True)
    names = [*models, *(["human"] if has_human else [])]
    width = max([12, *(len(n) for n in names)]) + 2
    click.echo(f"\nprediction bias ({d.get('metric')}): bias / worse-group mean")
    head = (
        f"{'heuristic':<24}"
        + ("T      n_low/n_high   " if shared else "")
        + "".join(f"{n:>{width}}" for n in names)
    )
    click.echo(head)
    for h in d.get("heuristics", []):
        line = f"{h:<24}"
        if shared:
            t = m.get(f"threshold_{h}", math.nan)
            sizes = f"{int(m.get(f'n_low_{h}', 0))}/{int(m.get(f'n_high_{h}', 0))}"
            line += f"{t:<7g}{sizes:<15}"
        for name in models:
            line += f"{_cell(m.get(f'bias_{name}_{h}'), m.get(f'worse_group_{name}_{h}')):>{width}}"
        if has_human:
            line += (
                f"{_cell(m.get(f'natural_bias_{h}'), m.get(f'natural_worse_group_{h}')):>{width}}"
            )
        click.echo(line)


def _cell(bias: float | None, worse: float | None) -> str:
    def f(v: float | None) -> str:
        return "-" if v is None or not math.isfinite(v) else f"{v:.3f}"

    return f"{f(bias)} / {f(worse)}"


@click.command("bias")
@click.argument("data", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.argument("extra_predictions", nargs=-1, type=click.Path(path_type=Path))
@click.option("--task", type=_TASKS, required=True, help="Task of DATA (qa for SQuAD files).")
@click.option(
    "--predictions",
    "predictions",
    multiple=True,
    type=click.Path(path_type=Path),
    help="A model's prediction file: SQuAD's {id: answer} JSON, or JSONL/CSV/TSV with id and "
    "prediction (label names or ids). Repeatable; files after the first (e.g. from a shell "
    "glob) are taken too. The model name is the file stem.",
)
@click.option(
    "--heuristic",
    "heuristics",
    multiple=True,
    metavar="NAME",
    help="Heuristic to split by, repeatable (default: every heuristic of the task; "
    "see --no-spacy).",
)
@click.option(
    "--attributes",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    default=None,
    help="Precomputed heuristic values (Parquet/CSV/JSONL with 'id' and one column per "
    "heuristic) instead of computing them.",
)
@click.option(
    "--train",
    "train_path",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    default=None,
    help="Training split for heuristics that need one (e.g. max_word_label_pmi).",
)
@click.option(
    "--no-spacy",
    is_flag=True,
    help="Skip heuristics that need spaCy (entity_count, subject_position) when --heuristic "
    "is not given.",
)
@click.option(
    "--own-threshold",
    is_flag=True,
    help="Give every model its own best threshold (default: the reference model's threshold "
    "is shared, so models and the human reference are compared on the same groups).",
)
@click.option(
    "--reference",
    default=None,
    metavar="MODEL",
    help="Model (file stem) whose best thresholds are shared (default: the first file).",
)
@click.option(
    "--threshold",
    "fixed",
    multiple=True,
    metavar="HEURISTIC=T",
    help="Use a fixed threshold for a heuristic instead of searching, repeatable "
    "(e.g. --threshold word_distance=7, the paper's App. C value).",
)
@click.option(
    "--metric",
    type=click.Choice(["f1", "em", "accuracy"]),
    default=None,
    help="Per-example score: em (exact match; QA default, as in the paper), f1, or "
    "accuracy (classification default).",
)
@click.option(
    "--n-trials", type=int, default=100, show_default=True, help="Bootstrap resamples per group."
)
@click.option(
    "--sample-size",
    type=int,
    default=800,
    show_default=True,
    help="Examples per bootstrap resample; a threshold is valid when both groups have twice "
    "as many.",
)
@click.option(
    "--no-natural",
    is_flag=True,
    help="Do not compute the natural (human) bias from the annotators' answers.",
)
@click.option(
    "--field-map",
    multiple=True,
    metavar="CANONICAL=COLUMN",
    help="Map a source column to a canonical field, repeatable (e.g. --field-map premise=s1).",
)
@click.option(
    "--format",
    "fmt",
    default=None,
    help="Format of DATA if the suffix does not say: jsonl, json, csv, tsv, parquet, squad.",
)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Random seed of the bootstrap."
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Run directory (default: runs/bias-<timestamp>).",
)
def bias(
    data: Path,
    extra_predictions: tuple[Path, ...],
    task: str,
    predictions: tuple[Path, ...],
    heuristics: tuple[str, ...],
    attributes: Path | None,
    train_path: Path | None,
    no_spacy: bool,
    own_threshold: bool,
    reference: str | None,
    fixed: tuple[str, ...],
    metric: str | None,
    n_trials: int,
    sample_size: int,
    no_natural: bool,
    field_map: tuple[str, ...],
    fmt: str | None,
    seed: int,
    out: Path | None,
) -> None:
    """Measure the prediction bias of models on DATA along heuristic splits.

    For each heuristic (e.g. the distance between answer and question words), the
    examples are split at a threshold T into a low (<= T) and a high (> T) group, both
    are bootstrapped, and the prediction bias is the gap between the groups' 95%
    intervals (Mikula et al., "Think Twice", Algorithm 1). T is searched over the
    heuristic's range (App. C). The natural bias of the human annotators is shown
    beside the models. Scores and biases are fractions in [0, 1] (0.05 = 5 points).

    \b
    Example:
      spurious bias dev-v1.1.json --task qa \\
          --predictions predictions/*.json --out runs/squad-bias
    """
    from spurious.cli import _default_out, _finish_run, _parse_field_map
    from spurious.data import load_dataset
    from spurious.data.predictions import load_predictions
    from spurious.evaluate.prediction_bias import bias_table
    from spurious.report import sections_bias  # noqa: F401  (registers the report section)
    from spurious.run import dataset_entry

    t0 = time.perf_counter()
    files = [*predictions, *extra_predictions]
    if not files:
        raise click.UsageError("give at least one prediction file with --predictions")
    fmap = _parse_field_map(field_map)
    thresholds = _parse_thresholds(fixed)
    ds = load_dataset(data, task, field_map=fmap, format=fmt)
    preds = [load_predictions(p, ds) for p in files]
    click.echo(f"bias: {len(ds)} examples of {ds.name}; models: {', '.join(p.name for p in preds)}")
    timings: dict[str, float] = {"load_s": time.perf_counter() - t0}

    t1 = time.perf_counter()
    train = None
    if train_path is not None:
        train = load_dataset(train_path, task, field_map=fmap, label_names=ds.label_names or None)
    if attributes is not None:
        attr = _read_attributes(attributes)
    else:
        from spurious.heuristics import HEURISTICS, compute_heuristics, list_heuristics

        names = list(heuristics) or [
            n
            for n in list_heuristics(task)
            if not (no_spacy and HEURISTICS[n].requires_spacy)
            and (train is not None or not HEURISTICS[n].needs_train)
        ]
        if not names:
            raise click.UsageError(f"no heuristic available for task {task!r}")
        click.echo(f"heuristics: {', '.join(names)}")
        attr = compute_heuristics(ds, names, train=train, progress=True)
    timings["heuristics_s"] = time.perf_counter() - t1

    t2 = time.perf_counter()
    res = bias_table(
        ds,
        preds,
        attr,
        # Computed attributes hold exactly the chosen heuristics; a file may hold more.
        heuristics=(list(heuristics) or None) if attributes is not None else None,
        metric=metric,
        shared_threshold=not own_threshold,
        reference=reference,
        thresholds=thresholds,
        natural=not no_natural,
        n_trials=n_trials,
        sample_size=sample_size,
        random_state=seed,
    )
    timings["bias_s"] = time.perf_counter() - t2
    timings["total_s"] = time.perf_counter() - t0
    out = out or _default_out("bias")
    res.save(out / "prediction_bias")
    _print_table(res)
    _finish_run(
        out,
        results={"prediction_bias": res},
        config={
            "prediction_bias": res.params,
            "predictions": [os.fspath(p) for p in files],
            "attributes": None if attributes is None else os.fspath(attributes),
            "field_map": fmap,
        },
        seed=seed,
        datasets={"eval": dataset_entry(ds, os.fspath(data))},
        timings=timings,
    )


@click.command("resample")
@click.argument("data", type=click.Path(path_type=Path, exists=True, dir_okay=False))
@click.option("--task", type=_TASKS, required=True, help="Task of DATA.")
@click.option(
    "--heuristic",
    required=True,
    metavar="NAME",
    help="Heuristic whose split is balanced (e.g. word_distance).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="Output file, written in DATA's format (SQuAD JSON keeps its nested structure). "
    "Must differ from DATA, which is never modified.",
)
@click.option(
    "--threshold",
    type=float,
    default=None,
    help="T: low group = heuristic <= T, high group = heuristic > T. Default: from "
    "--from-run, else the paper's App. C value for the heuristic.",
)
@click.option(
    "--from-run",
    type=click.Path(path_type=Path, exists=True, file_okay=False),
    default=None,
    help="A 'spurious bias' run directory; its shared threshold for --heuristic is used.",
)
@click.option(
    "--replace",
    is_flag=True,
    help="Draw every added copy independently with replacement (default: copy each "
    "minority example equally often, the remainder drawn without replacement).",
)
@click.option(
    "--train",
    "train_path",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    default=None,
    help="Training split for heuristics that need one (default: DATA itself).",
)
@click.option(
    "--field-map",
    multiple=True,
    metavar="CANONICAL=COLUMN",
    help="Map a source column to a canonical field, repeatable.",
)
@click.option(
    "--format",
    "fmt",
    default=None,
    help="Format of DATA if the suffix does not say: jsonl, json, csv, tsv, parquet, squad.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
def resample(
    data: Path,
    task: str,
    heuristic: str,
    out: Path,
    threshold: float | None,
    from_run: Path | None,
    replace: bool,
    train_path: Path | None,
    field_map: tuple[str, ...],
    fmt: str | None,
    seed: int,
    force: bool,
) -> None:
    """Write a RESAM copy of DATA: the rarer side of a heuristic split is oversampled.

    The examples are split at T into heuristic <= T and > T; the smaller group is
    oversampled until both groups are equally large (Mikula et al., "Think Twice",
    Sec. 4.3). Nothing is removed; copies get ids <id>-resam<k>.

    \b
    Example:
      spurious resample train-v1.1.json --task qa --heuristic word_distance \\
          --out train_resam.json --from-run runs/squad-bias
    """
    from spurious.actions.resample import resample_file
    from spurious.cli import _parse_field_map
    from spurious.data import load_dataset
    from spurious.evaluate.prediction_bias import PAPER_QA_THRESHOLDS
    from spurious.heuristics import compute_heuristics, get_heuristic

    get_heuristic(heuristic)  # an unknown name fails before any work
    if threshold is None and from_run is not None:
        threshold = _threshold_from_run(from_run, heuristic)
        click.echo(f"threshold {threshold:g} for {heuristic} from {from_run}")
    if threshold is None:
        threshold = PAPER_QA_THRESHOLDS.get(heuristic) if task == "qa" else None
        if threshold is None:
            raise click.UsageError(
                f"no default threshold for {heuristic!r}; pass --threshold or --from-run"
            )
        click.echo(f"threshold {threshold:g} for {heuristic}: the paper's App. C value")
    fmap = _parse_field_map(field_map)
    train = None
    if train_path is not None:
        train = load_dataset(train_path, task, field_map=fmap)

    def attribute_of(ds):
        # The file is a training set: statistics-based heuristics are fitted on it by default.
        fit = train if train is not None else ds
        return compute_heuristics(ds, [heuristic], train=fit)[heuristic].to_numpy()

    info = resample_file(
        data,
        out,
        task=task,
        threshold=threshold,
        attribute=attribute_of,
        field_map=fmap,
        format=fmt,
        replace=replace,
        random_state=seed,
        overwrite=force,
    )
    click.echo(
        f"{heuristic} <= {info.threshold:g}: {info.n_low}, > {info.threshold:g}: {info.n_high}; "
        f"added {info.n_added} copies of the {info.minority or '-'} group "
        f"({info.n_unsplit} rows without a value kept once)"
    )
    click.echo(f"wrote {info.n_output} rows to {out}")


def _threshold_from_run(run: Path, heuristic: str) -> float:
    from spurious.utils.io import read_json

    path = run / "prediction_bias" / "metrics.json"
    if not path.exists():
        raise click.UsageError(f"{run} has no prediction_bias/metrics.json")
    metrics = read_json(path)
    value = metrics.get(f"threshold_{heuristic}")
    if value is None:
        raise click.UsageError(
            f"{path} has no shared threshold for {heuristic!r} (run without --own-threshold, "
            "or pass --threshold)"
        )
    return float(value)
