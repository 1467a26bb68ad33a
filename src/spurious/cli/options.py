"""Options shared by the commands, written once: data, task, eval, field map, format, seed, out."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

#: Tasks every command accepts (kept literal so ``--help`` needs no package import).
TASKS = ("nli", "pair", "text", "qa")
TASK_CHOICE = click.Choice(list(TASKS))
#: ... and the commands whose analyses score multiple-choice items (audit, aflite,
#: fairness, bias, canary, ids): ``mcq``.
TASKS_MC = (*TASKS, "mcq")
TASK_HELP_MC = (
    " mcq: multiple-choice items (a question, 2-10 options, the gold letter or index; ARC /"
    " CommonsenseQA JSONL, MMLU CSVs or a folder of them, Hugging Face layouts)."
)

F = TypeVar("F", bound=Callable[..., Any])


def default_out(command: str) -> Path:
    """``runs/<command>-<timestamp>``: where a run goes when ``--out`` is not given."""
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{command}-{stamp}"


def parse_field_map(items: tuple[str, ...]) -> dict[str, str]:
    """``("premise=sentence1", ...)`` -> ``{"premise": "sentence1"}``."""
    out = {}
    for item in items:
        if "=" not in item:
            raise click.BadParameter(
                f"expected CANONICAL=COLUMN (e.g. premise=sentence1); got {item!r}",
                param_hint="--field-map",
            )
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def data_argument(*, exists: bool = False) -> Callable[[F], F]:
    """The DATA argument."""
    return click.argument(
        "data", type=click.Path(path_type=Path, exists=exists, dir_okay=not exists)
    )


def task_option(help: str = "Task of the data.", *, mcq: bool = False) -> Callable[[F], F]:
    """``--task`` (required); ``mcq=True`` for the commands that handle multiple choice."""
    if mcq:
        return click.option(
            "--task", type=click.Choice(list(TASKS_MC)), required=True, help=help + TASK_HELP_MC
        )
    return click.option("--task", type=TASK_CHOICE, required=True, help=help)


def _remember(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    # Options that only shape the run's inputs are kept aside for run_inputs, so every
    # command gets them without a parameter of its own.
    ctx.meta[f"spurious.{param.name}"] = value
    return value


def eval_option(help: str) -> Callable[[F], F]:
    """``--eval`` with a command-specific meaning, and ``--drop-overlap``."""
    ev = click.option(
        "--eval", "eval_path", type=click.Path(path_type=Path), default=None, help=help
    )
    drop = click.option(
        "--drop-overlap",
        is_flag=True,
        expose_value=False,
        callback=_remember,
        help="Leave out evaluation rows that also occur in DATA (same id or same text); by "
        "default they are kept and counted in a warning, since they inflate held-out scores.",
    )
    return lambda f: ev(drop(f))


def field_map_option(f: F) -> F:
    """``--field-map CANONICAL=COLUMN`` (repeatable)."""
    return click.option(
        "--field-map",
        multiple=True,
        metavar="CANONICAL=COLUMN",
        help="Map a source column to a canonical field, repeatable "
        "(e.g. --field-map premise=sentence1; multiple choice: question, context, options, "
        "label, id, group, with several option columns as --field-map options=sol1,sol2).",
    )(f)


def format_option(f: F) -> F:
    """``--format`` for inputs whose suffix does not say."""
    return click.option(
        "--format",
        "fmt",
        default=None,
        help="Input format if the suffix does not say: jsonl, json, csv, tsv, parquet, squad.",
    )(f)


def seed_option(help: str = "Random seed.") -> Callable[[F], F]:
    """``--seed`` (default 0)."""
    return click.option("--seed", type=int, default=0, show_default=True, help=help)


def out_option(command: str, *, data_options: bool = True) -> Callable[[F], F]:
    """The options of a command that writes a run directory.

    ``--out DIR`` (default ``runs/<command>-<timestamp>``), ``--force``, and the input
    options every run on DATA shares: ``--max-dropped``, ``--split``, ``--allow-network``
    (left out with ``data_options=False``: the demo reads no data, so they would mean
    nothing there).
    """
    out = click.option(
        "--out",
        type=click.Path(path_type=Path),
        default=None,
        help=f"Run directory (default: runs/{command}-<timestamp>). A directory holding a "
        "different run is refused (see --force); the same run is re-run in place.",
    )
    force = click.option(
        "--force",
        is_flag=True,
        help="Replace a different run already in --out (its results, manifest and report) "
        "and an existing output file.",
    )
    dropped = click.option(
        "--max-dropped",
        type=float,
        default=None,
        expose_value=False,
        callback=_remember,
        help="Largest fraction of rows without a gold label that may be left out before the "
        "run stops with an error (default 0.1); the count is always reported.",
    )
    split = click.option(
        "--split",
        default=None,
        expose_value=False,
        callback=_remember,
        help="Split to read when DATA is a Hugging Face DatasetDict folder (save_to_disk) "
        "or, with --allow-network, a Hub dataset.",
    )
    network = click.option(
        "--allow-network",
        is_flag=True,
        expose_value=False,
        callback=_remember,
        help="Read DATA that is not a local path as a Hugging Face Hub dataset name "
        "(downloads it); off by default, everything else works offline.",
    )
    if not data_options:
        return lambda f: out(force(f))
    return lambda f: out(force(dropped(split(network(f)))))


def input_options(f: F) -> F:
    """``--field-map`` and ``--format``: how DATA is read."""
    return field_map_option(format_option(f))


#: An existing file given as input.
INPUT_FILE = click.Path(path_type=Path, exists=True, dir_okay=False)


def opt(flag: str, help: str, *, dest: str | None = None, **kw: Any) -> Callable[[F], F]:
    """One ``click.option`` per line; a non-None default is shown in ``--help``."""
    if kw.get("default") is not None and not kw.get("is_flag"):
        kw.setdefault("show_default", True)
    names = (flag,) if dest is None else (flag, dest)
    return click.option(*names, help=help, **kw)


def file_opt(
    flag: str,
    help: str,
    *,
    dest: str | None = None,
    multiple: bool = False,
) -> Callable[[F], F]:
    """An option naming an existing input file (repeatable with ``multiple``)."""
    return opt(flag, help, dest=dest, type=INPUT_FILE, multiple=multiple)


def predictions_option(help: str, *, must_exist: bool = True) -> Callable[[F], F]:
    """``--predictions``: a model's prediction file, repeatable (files after the first,
    e.g. from a shell glob, arrive as the command's extra arguments)."""
    kind = INPUT_FILE if must_exist else click.Path(path_type=Path)
    return opt("--predictions", help, type=kind, multiple=True)


def set_option(help: str, metavar: str = "ANALYSIS.PARAM=VALUE") -> Callable[[F], F]:
    """``--set NAME.PARAM=VALUE``, repeatable, into ``overrides`` (see ``audit.parse_set``)."""
    return opt("--set", help, dest="overrides", multiple=True, metavar=metavar)


def attributes_option(f: F) -> F:
    """``--attributes``: precomputed heuristic values instead of computing them."""
    return file_opt(
        "--attributes",
        "Precomputed heuristic values (Parquet/CSV/JSONL with 'id' and one column per "
        "heuristic) instead of computing them.",
    )(f)


def run_inputs(
    data: Path,
    task: str,
    *,
    fmt: str | None = None,
    field_map: dict[str, str] | tuple[str, ...] = (),
    **paths: Any,
) -> dict[str, Any]:
    """The ``inputs`` of a run config from command-line values (paths become strings).

    ``paths`` are the optional inputs (``eval``, ``attributes``, ``heuristics_train``,
    ``annotations``: a path or None; ``predictions``: a sequence of paths).
    """
    fmap = field_map if isinstance(field_map, dict) else parse_field_map(field_map)
    out: dict[str, Any] = {"data": str(data), "task": task, "format": fmt, "field_map": fmap}
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        for key in ("drop_overlap", "max_dropped", "split", "allow_network", "strict_predictions"):
            value = ctx.meta.get(f"spurious.{key}")
            if value:  # unset flags stay out of the config
                out[key] = value
        if ctx.meta.get("spurious.annotations_min_match") is not None:
            out["annotations_min_match"] = ctx.meta["spurious.annotations_min_match"]
        for key, config_key in PREDICTION_INPUTS.items():
            value = ctx.meta.get(f"spurious.{key}")
            if value is not None:
                out[config_key] = value
    for key, value in paths.items():
        if key == "predictions":
            out[key] = [str(p) for p in value]
        else:
            out[key] = None if value is None else str(value)
    return out


#: How prediction files are read: CLI option name -> ``inputs`` key of the run config.
PREDICTION_INPUTS = {
    "id_field": "predictions_id_field",
    "value_field": "predictions_value_field",
    "align": "predictions_align",
    "prediction_kind": "predictions_kind",
}


def prediction_file_options(f: F) -> F:
    """``--id-field``, ``--value-field``, ``--align`` and ``--prediction-kind``.

    How every ``--predictions`` file is read; the values go to the run config's inputs
    (:data:`PREDICTION_INPUTS`), so the commands need no parameter of their own.
    """
    id_field = click.option(
        "--id-field",
        default=None,
        expose_value=False,
        callback=_remember,
        metavar="COLUMN",
        help="Id column of the prediction files (default: id). The ids must be the data's: "
        "its id column, or the content hashes `spurious ids DATA --task ...` lists.",
    )
    value_field = click.option(
        "--value-field",
        default=None,
        expose_value=False,
        callback=_remember,
        metavar="COLUMN",
        help="Prediction column of the prediction files (default: the first of prediction, "
        "pred, prediction_text, answer, predicted_label, pred_label, predicted; then "
        "correct / is_correct, probabilities / probs, or one probability column per label). "
        "The gold column (label, gold_label) is never read unless named here.",
    )
    align = click.option(
        "--align",
        type=click.Choice(["id", "rows"]),
        default=None,
        expose_value=False,
        callback=_remember,
        help="Align predictions to the data by id (default) or by row order (rows: a file "
        "without ids, one row per example in the data's order; the row count and any text "
        "column the file shares with the data are checked).",
    )
    kind = click.option(
        "--prediction-kind",
        type=click.Choice(["auto", "labels", "correctness", "probabilities"]),
        default=None,
        expose_value=False,
        callback=_remember,
        help="What the prediction files hold: predicted labels (answers for QA), correctness "
        "(0/1 per example) or probabilities (one per label). Default auto: from the column "
        "names and values.",
    )
    return id_field(value_field(align(kind(f))))


def min_annotation_match_option(f: F) -> F:
    """``--min-annotation-match``: how much of an annotation file must match the data."""
    return click.option(
        "--min-annotation-match",
        "annotations_min_match",
        type=click.FloatRange(0.0, 1.0),
        default=None,
        expose_value=False,
        callback=_remember,
        metavar="SHARE",
        help="Smallest share of the --annotations file's examples that must match a row "
        "(by id, else by text); below it the file is refused (default 0.5).",
    )(f)


def strict_predictions_option(f: F) -> F:
    """``--strict-predictions``: a prediction file lacking ids is an error."""
    return click.option(
        "--strict-predictions",
        is_flag=True,
        expose_value=False,
        callback=_remember,
        help="Refuse a prediction file that lacks some of the dataset's ids (by default they "
        "are scored as wrong, with a warning, as the official SQuAD evaluator does).",
    )(f)
