"""Options shared by the commands, written once: data, task, eval, field map, format, seed, out."""

from __future__ import annotations

import datetime as _dt
import os
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
    return click.argument("data", type=InputPath(exists=exists, dir_okay=not exists))


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


def _fraction(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    # A float type lets "nan" and "-1" through, and "nan" compares False with every share:
    # the limit would silently never apply.
    if value is not None and not 0.0 <= value <= 1.0:  # also refuses NaN
        raise click.BadParameter(f"expected a fraction in [0, 1]; got {value!r}.")
    return _remember(ctx, param, value)


def _label_names(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """``"entailment,neutral,contradiction"`` -> a list of names in id order."""
    names = None
    if value is not None:
        names = [v.strip() for v in value.split(",")]
        if len(names) < 2 or not all(names):
            raise click.BadParameter(
                f"expected two or more comma-separated label names in id order (e.g. "
                f"entailment,neutral,contradiction); got {value!r}."
            )
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise click.BadParameter(f"label name(s) {repeated} repeated in {value!r}.")
    return _remember(ctx, param, names)


def eval_option(help: str) -> Callable[[F], F]:
    """``--eval`` with a command-specific meaning, ``--eval-split`` and ``--drop-overlap``."""
    ev = click.option(
        "--eval", "eval_path", type=InputPath(exists=False, dir_okay=True), default=None, help=help
    )
    eval_split = click.option(
        "--eval-split",
        default=None,
        expose_value=False,
        callback=_remember,
        metavar="SPLIT",
        help="Split to read when --eval is a Hugging Face DatasetDict folder (save_to_disk), "
        "e.g. --eval snli_dd --eval-split validation; naming the split's own folder "
        "(--eval snli_dd/validation) reads the same rows.",
    )
    drop = click.option(
        "--drop-overlap",
        is_flag=True,
        expose_value=False,
        callback=_remember,
        help="Leave out evaluation rows that also occur in DATA (same id or same text); by "
        "default they are kept and counted in a warning, since they inflate held-out scores.",
    )
    return lambda f: ev(eval_split(drop(f)))


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
    options every run on DATA shares: ``--max-dropped``, ``--split``, ``--allow-network``,
    ``--label-names`` (left out with ``data_options=False``: the demo reads no data, and
    ``run --config`` takes its inputs from the config, so they would mean nothing there).
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
        callback=_fraction,
        metavar="FRACTION",
        help="Largest fraction of rows without a gold label that may be left out before the "
        "run stops with an error (default 0.1); the count is always reported.",
    )
    split = click.option(
        "--split",
        default=None,
        expose_value=False,
        callback=_remember,
        help="Split to read when DATA is a Hugging Face DatasetDict folder (save_to_disk) "
        "or, with --allow-network, a Hub dataset (--eval-split for --eval).",
    )
    network = click.option(
        "--allow-network",
        is_flag=True,
        expose_value=False,
        callback=_remember,
        help="Read DATA that is not a local path as a Hugging Face Hub dataset name "
        "(downloads it); off by default, everything else works offline.",
    )
    label_names = click.option(
        "--label-names",
        default=None,
        expose_value=False,
        callback=_label_names,
        metavar="NAME,NAME,...",
        help="The labels of DATA in id order, comma-separated (e.g. "
        "entailment,neutral,contradiction): integer labels index into it, and every label "
        "must be one of them. Default: the names the data carries, else the task's "
        "defaults or the labels found.",
    )
    if not data_options:
        return lambda f: out(force(f))
    return lambda f: out(force(dropped(split(network(label_names(f))))))


def input_options(f: F) -> F:
    """``--field-map`` and ``--format``: how DATA is read."""
    return field_map_option(format_option(f))


class InputPath(click.Path):
    """A path given as input, refused before the command runs when it is a FIFO, a device
    or larger than the limit of its ``kind`` (:func:`spurious.utils.io.check_input_file`),
    with the option's name: opening a FIFO blocks forever, ``/dev/zero`` never ends."""

    def __init__(self, kind: str = "data", *, exists: bool = True, dir_okay: bool = False):
        super().__init__(path_type=Path, exists=exists, dir_okay=dir_okay)
        self.kind = kind

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        # Before click's own checks, so a folder given for a file gets the same one line.
        if isinstance(value, str | os.PathLike) and os.path.exists(value):
            from spurious.utils.io import check_input_file

            what = "input"
            if isinstance(param, click.Option):
                what = max(param.opts, key=len)
            elif param is not None:
                what = param.human_readable_name
            check_input_file(value, what=what, kind=self.kind, allow_dir=self.dir_okay)
        return super().convert(value, param, ctx)


#: An existing file given as input.
INPUT_FILE = InputPath()


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
    kind: str = "data",
) -> Callable[[F], F]:
    """An option naming an existing input file (repeatable with ``multiple``); ``kind``
    picks its size limit (a key of :data:`spurious.utils.io.INPUT_LIMITS`)."""
    return opt(flag, help, dest=dest, type=InputPath(kind), multiple=multiple)


def predictions_option(help: str, *, must_exist: bool = True) -> Callable[[F], F]:
    """``--predictions``: a model's prediction file, repeatable (files after the first,
    e.g. from a shell glob, arrive as the command's extra arguments)."""
    kind = InputPath("predictions") if must_exist else click.Path(path_type=Path)
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
        kind="attributes",
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
        for key in ("drop_overlap", "allow_network", "strict_predictions"):
            if ctx.meta.get(f"spurious.{key}"):  # unset flags stay out of the config
                out[key] = True
        # Unset values stay out of the config too; a given one is kept even when falsy
        # (--max-dropped 0 means "no row may lack a gold label", not the default).
        for key in ("max_dropped", "split", "eval_split", "label_names"):
            if ctx.meta.get(f"spurious.{key}") is not None:
                out[key] = ctx.meta[f"spurious.{key}"]
        if out.get("label_names") is not None and task in ("qa", "mcq"):
            raise click.BadParameter(
                f"--task {task} has no label names to set (QA scores answer texts; multiple "
                "choice, option positions); --label-names applies to nli, pair and text.",
                param_hint="--label-names",
            )
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
