"""``spurious bias`` and ``spurious resample``: prediction bias of models, and RESAM."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

from spurious.cli import options, output
from spurious.utils.metric_keys import metric_key


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


def print_bias_table(res: Any) -> None:
    d = res.details
    m = res.metrics
    models = d.get("models", [])
    has_human = bool(d.get("natural"))
    shared = d.get("shared_threshold", True)
    undefined = d.get("undefined") or {}
    names = [*models, *(["human"] if has_human else [])]
    width = max([20, *(len(n) for n in names)]) + 2
    metric = str(d.get("metric"))
    scale = " (0-1; HF evaluate prints x100)" if metric in ("em", "f1") else ""
    click.echo(
        f"\nprediction bias ({metric}{scale}): bias ± Monte-Carlo sd / worse-group mean {metric}"
    )
    head = (
        f"{'heuristic':<24}"
        + ("T      n_low/n_high   " if shared else "")
        + f"{'size':<6}"
        + "".join(f"{n:>{width}}" for n in names)
    )
    click.echo(head)
    for h in d.get("heuristics", []):
        line = f"{h:<24}"
        if shared:
            t = m.get(metric_key("threshold", h), math.nan)
            n_low, n_high = (int(m.get(metric_key(k, h), 0)) for k in ("n_low", "n_high"))
            sizes = f"{n_low}/{n_high}"
            line += (
                f"{'-' if h in undefined else f'{t:g}':<7}{'-' if h in undefined else sizes:<15}"
            )
        size = m.get(metric_key("sample_size", h))
        adapted = h in (d.get("sample_size_notes") or {})
        line += f"{'-' if size is None else f'{int(size)}' + ('*' if adapted else ''):<6}"
        for name in models:
            cell = (
                "undefined"
                if h in undefined
                else _cell(
                    m.get(metric_key("bias", name, h)),
                    m.get(metric_key(f"worse_group_{metric}", name, h)),
                    m.get(metric_key("bias_mc_sd", name, h)),
                )
            )
            line += f"{cell:>{width}}"
        if has_human:
            nat = _cell(
                m.get(metric_key("natural_bias", h)),
                m.get(metric_key(f"natural_worse_group_{metric}", h)),
            )
            line += f"{nat:>{width}}"
        click.echo(line)
    if d.get("sample_size_notes"):
        click.echo("* bootstrap groups smaller than --sample-size (too few examples on one side "
                   "of every threshold; see --fixed-sample-size)")  # fmt: skip
    null = d.get("null") or {}
    if null.get("n_permutations"):
        click.echo(
            f"largest bias {null['observed']:.3f}: p = {null['p_value']:.3g} against "
            f"{null['n_permutations']} permutations of the scores across examples "
            f"(95th percentile of the null {null['q95']:.3f})"
        )
    for warning in d.get("warnings") or []:
        click.secho(f"warning: {warning}", fg="yellow")


def _cell(bias: float | None, worse: float | None, sd: float | None = None) -> str:
    def f(v: float | None) -> str:
        return "-" if v is None or not math.isfinite(v) else f"{v:.3f}"

    spread = f"±{f(sd)}" if sd is not None and math.isfinite(sd) else ""
    return f"{f(bias)}{spread} / {f(worse)}"


@click.command("bias")
@options.data_argument()
@click.argument("extra_predictions", nargs=-1, type=click.Path(path_type=Path))
@options.task_option("Task of DATA (qa for SQuAD files).", mcq=True)
@options.predictions_option(
    "A model's prediction file: SQuAD's {id: answer} JSON, or JSONL/CSV/TSV with id and "
    "prediction (label names or ids). Repeatable; files after the first (e.g. from a shell "
    "glob) are taken too. The model name is the file stem.",
    must_exist=False,
)
@options.opt(
    "--heuristic",
    "Heuristic to split by, repeatable (default: every heuristic of the task; see --no-spacy).",
    dest="heuristics",
    multiple=True,
    metavar="NAME",
)
@options.attributes_option
@options.file_opt(
    "--train",
    "Training split for heuristics that need one (e.g. max_word_label_pmi).",
    dest="train_path",
)
@options.opt(
    "--no-spacy",
    "Skip heuristics that need spaCy (entity_count, subject_position) when --heuristic "
    "is not given.",
    is_flag=True,
)
@options.opt(
    "--own-threshold",
    "Give every model its own best threshold (default: the reference model's threshold "
    "is shared, so models and the human reference are compared on the same groups).",
    is_flag=True,
)
@options.opt(
    "--reference",
    "Model (file stem) whose best thresholds are shared (default: the first file).",
    metavar="MODEL",
)
@options.opt(
    "--threshold",
    "Use a fixed threshold for a heuristic instead of searching, repeatable "
    "(e.g. --threshold word_distance=7, the paper's App. C value).",
    dest="fixed",
    multiple=True,
    metavar="HEURISTIC=T",
)
@options.opt(
    "--metric",
    "Per-example score: em (exact match; QA default, as in the paper), f1, or "
    "accuracy (classification default).",
    type=click.Choice(["f1", "em", "accuracy"]),
)
@options.opt("--n-trials", "Bootstrap resamples per group.", type=int, default=100)
@options.opt(
    "--sample-size",
    "Examples per bootstrap resample; a threshold is valid when both groups have twice as many.",
    type=int,
    default=800,
)
@options.opt(
    "--fixed-sample-size",
    "Keep --sample-size for every heuristic: a heuristic whose most even threshold leaves "
    "fewer examples on a side stays undefined (by default it is bootstrapped with half "
    "that side, marked * in the table).",
    is_flag=True,
)
@options.opt(
    "--n-permutations",
    "Permutations of the test of the largest bias against scores shuffled across "
    "examples (0: no test; the verdict then rests on the bias' interval alone).",
    type=int,
    default=39,
)
@options.opt(
    "--aggregate",
    "answer_length: words of the first annotator's answer (first) or the mean over all "
    "annotators' answers (mean, as the paper's reference code).",
    type=click.Choice(["first", "mean"]),
    default="first",
)
@options.strict_predictions_option
@options.prediction_file_options
@options.opt(
    "--no-natural",
    "Do not compute the natural (human) bias from the annotators' answers.",
    is_flag=True,
)
@options.input_options
@options.seed_option("Random seed of the bootstrap.")
@options.out_option("bias")
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
    fixed_sample_size: bool,
    n_permutations: int,
    aggregate: str,
    no_natural: bool,
    field_map: tuple[str, ...],
    fmt: str | None,
    seed: int,
    out: Path | None,
    force: bool,
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
    files = [*predictions, *extra_predictions]
    if not files:
        raise click.UsageError("give at least one prediction file with --predictions")
    params = {
        "heuristics": list(heuristics) or None,
        # Only a non-default reading is recorded, so existing configs stay unchanged.
        "heuristic_params": {"answer_length": {"aggregate": aggregate}}
        if aggregate != "first"
        else None,
        "no_spacy": no_spacy,
        "metric": metric,
        "shared_threshold": not own_threshold,
        "reference": reference,
        "thresholds": _parse_thresholds(fixed) or None,
        "natural": not no_natural,
        "n_trials": n_trials,
        "sample_size": sample_size,
        "adapt_sample_size": not fixed_sample_size,
        "n_permutations": n_permutations,
        "random_state": seed,
    }
    files_in = {"predictions": files, "attributes": attributes, "heuristics_train": train_path}
    config = {
        "inputs": options.run_inputs(data, task, fmt=fmt, field_map=field_map, **files_in),
        "analyses": {"prediction_bias": params},
        "seed": seed,
    }

    def intro(ctx: Any, analyses: Any) -> None:
        ds = ctx.target
        names = ", ".join(p.name for p in ctx.predictions)
        click.echo(f"bias: {len(ds)} examples of {ds.name}; models: {names}")
        if ctx.attributes is None:
            click.echo(f"heuristics: {', '.join(analyses[0].heuristic_names(ctx))}")

    run = output.execute(
        config,
        out,
        "bias",
        before_run=intro,
        force=force,
    )
    output.finish(run, "prediction_bias", print_bias_table)


@click.command("resample")
@options.data_argument(exists=True)
@options.task_option("Task of DATA.")
@options.opt(
    "--heuristic", "Heuristic whose split is balanced (e.g. word_distance).", required=True
)
@options.opt(
    "--out",
    "Output file, written in DATA's format (SQuAD JSON keeps its nested structure). "
    "Must differ from DATA, which is never modified.",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
)
@options.opt(
    "--threshold",
    "T: low group = heuristic <= T, high group = heuristic > T. Default: from "
    "--from-run, else the paper's App. C value for the heuristic.",
    type=float,
)
@options.opt(
    "--from-run",
    "A 'spurious bias' run directory; its shared threshold for --heuristic is used.",
    type=click.Path(path_type=Path, exists=True, file_okay=False),
)
@options.opt(
    "--replace",
    "Draw every added copy independently with replacement (default: copy each "
    "minority example equally often, the remainder drawn without replacement).",
    is_flag=True,
)
@options.file_opt(
    "--train",
    "Training split for heuristics that need one (default: DATA itself).",
    dest="train_path",
)
@options.input_options
@options.seed_option()
@options.opt("--force", "Overwrite --out if it exists.", is_flag=True)
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
    from spurious.data import load_dataset
    from spurious.evaluate.prediction_bias import PAPER_QA_THRESHOLDS
    from spurious.heuristics import compute_heuristics, get_heuristic
    from spurious.utils.io import check_not_an_input

    get_heuristic(heuristic)  # an unknown name fails before any work
    check_not_an_input(out, [data, train_path], what="--out")  # even with --force
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
    fmap = options.parse_field_map(field_map)
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
        inputs=[train_path],
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
    # threshold_<h>: runs written before the "/" keys (docs/run-directory.md)
    value = metrics.get(metric_key("threshold", heuristic), metrics.get(f"threshold_{heuristic}"))
    if value is None:
        raise click.UsageError(
            f"{path} has no shared threshold for {heuristic!r} (run without --own-threshold, "
            "or pass --threshold)"
        )
    return float(value)
