"""``spurious audit`` (every applicable analysis, one report) and ``spurious run --config``."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from spurious.cli import output
from spurious.cli.options import (
    INPUT_FILE,
    attributes_option,
    data_argument,
    default_out,
    eval_option,
    file_opt,
    input_options,
    opt,
    out_option,
    parse_field_map,
    seed_option,
    task_option,
)


def parse_set(items: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``("aflite.n_partitions=16", ...)`` -> ``{"aflite": {"n_partitions": 16}}``.

    Values are read as YAML scalars/lists (``16`` is an int, ``0.5`` a float, ``none``
    is None, ``[a, b]`` a list); anything else stays a string.
    """
    import yaml

    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        name, dot, param = key.partition(".")
        if not sep or not dot or not name or not param:
            raise click.BadParameter(
                f"expected ANALYSIS.PARAM=VALUE (e.g. aflite.n_partitions=16); got {item!r}",
                param_hint="--set",
            )
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        out.setdefault(name.strip(), {})[param.strip()] = value
    return out


@click.command()
@data_argument()
@click.argument("extra_predictions", nargs=-1, type=INPUT_FILE)
@task_option()
@eval_option(
    "Held-out evaluation split: probes train on DATA and are scored here; predictions "
    "(--predictions) are for this split."
)
@file_opt(
    "--predictions",
    "A model's predictions on the evaluation split (or on DATA without --eval): "
    "SQuAD {id: answer} JSON, or JSONL/CSV/TSV with id and prediction. Repeatable; "
    "files after the first (e.g. from a shell glob) are taken too. Enables prediction bias.",
    multiple=True,
)
@file_opt(
    "--annotations",
    "Per-example annotator labels (a file with 'id' and 'annotator_labels') for the judged split.",
)
@attributes_option
@opt(
    "--quick",
    "The quick profile: bounded budgets for a first look (about a minute for 10k pairs on "
    "2 CPU cores); the default is the full profile.",
    is_flag=True,
)
@opt(
    "--features",
    "Representation shared by every analysis that uses one: minilm | tfidf | bow | a "
    "local Hugging Face model directory.",
    default="minilm",
)
@opt("--only", "Run only these analyses (repeatable).", multiple=True, metavar="ANALYSIS")
@opt("--skip", "Leave out these analyses (repeatable).", multiple=True, metavar="ANALYSIS")
@opt(
    "--set",
    "Set one parameter of one analysis, repeatable (e.g. --set aflite.n_partitions=32).",
    dest="overrides",
    multiple=True,
    metavar="ANALYSIS.PARAM=VALUE",
)
@input_options
@seed_option()
@out_option("audit")
def audit(
    data: Path,
    extra_predictions: tuple[Path, ...],
    task: str,
    eval_path: Path | None,
    predictions: tuple[Path, ...],
    annotations: Path | None,
    attributes: Path | None,
    quick: bool,
    features: str,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    overrides: tuple[str, ...],
    field_map: tuple[str, ...],
    fmt: str | None,
    seed: int,
    out: Path | None,
) -> None:
    """Audit DATA for shortcuts: every analysis the inputs allow, one report.

    Picks every registered analysis whose requirements the inputs meet (partial-input
    leakage and AFLite need labels; prediction bias needs --predictions; ...), runs
    them on shared inputs (the representation is computed once), and writes one run
    directory whose report opens with one card per analysis: its headline figure and a
    verdict in words. Analyses whose requirements are not met are listed with the reason.

    \b
    Examples:
      spurious audit dev.jsonl --task nli --quick
      spurious audit train.jsonl --task nli --eval dev.jsonl --out runs/audit
      spurious audit dev-v1.1.json --task qa --predictions preds/*.json
    """
    from spurious.runner import audit_plan, execute

    profile = "quick" if quick else "full"
    plan = audit_plan(
        profile=profile,
        seed=seed,
        only=only,
        skip=skip,
        overrides=parse_set(overrides),
        shared={"features": features},
    )
    config = {
        "inputs": {
            "data": os.fspath(data),
            "task": task,
            "eval": None if eval_path is None else os.fspath(eval_path),
            "format": fmt,
            "field_map": parse_field_map(field_map),
            "predictions": [os.fspath(p) for p in (*predictions, *extra_predictions)],
            "attributes": None if attributes is None else os.fspath(attributes),
            "annotations": None if annotations is None else os.fspath(annotations),
        },
        "analyses": plan,
        "seed": seed,
        "profile": profile,
    }

    def intro(ctx: Any, analyses: Any) -> None:
        what = f"{len(ctx.train):,} examples"
        if ctx.eval is not None:
            what += f" + {len(ctx.eval):,} evaluation examples"
        click.echo(f"audit ({profile}): {what}; analyses: {', '.join(a.name for a in analyses)}")

    run = execute(
        config,
        out=out or default_out("audit"),
        command=["spurious", *sys.argv[1:]],
        on_result=output.result_line,
        before_run=intro,
    )
    output.summary_table(run.results)
    output.outputs(run)
    output.exit_status(run)


@click.command("run")
@opt(
    "--config",
    "A run config (JSON or YAML), a run's manifest.json, or a run directory.",
    dest="config_path",
    type=click.Path(path_type=Path, exists=True),
    required=True,
)
@out_option("run")
def run_command(config_path: Path, out: Path | None) -> None:
    """Run (or re-run) the analyses a config describes.

    A run directory's manifest.json holds its config, so this reproduces a run: same
    inputs, same parameters, same numbers.

    \b
    Example:
      spurious run --config runs/audit-20261123/manifest.json --out runs/again
    """
    from spurious.runner import execute, read_config

    config = read_config(config_path)
    run = execute(
        config,
        out=out or default_out("run"),
        command=["spurious", *sys.argv[1:]],
        on_result=output.result_line,
    )
    output.summary_table(run.results)
    output.outputs(run)
    output.exit_status(run)
