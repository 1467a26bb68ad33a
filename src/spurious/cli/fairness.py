"""``spurious fairness``: are adversarially filtered evaluation sets fair? (paper 004).

A thin front for the run framework: the same as ``spurious audit --only fairness`` with
the analysis' parameters as options.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from spurious.cli import options, output


def _families(items: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, sep, fam = item.partition("=")
        if not sep or not name.strip() or not fam.strip():
            raise click.BadParameter(
                f"expected NAME=FAMILY (e.g. mlp-minilm=minilm); got {item!r}",
                param_hint="--family",
            )
        out[name.strip()] = fam.strip()
    return out


def _adversaries(items: tuple[str, ...]) -> list[str] | dict[str, str]:
    """``("bow", "ft=finetuned:runs/ft")`` -> a list of specs, or {name: spec} when named."""
    named: dict[str, str] = {}
    for item in items:
        name, sep, spec = item.partition("=")
        named[name.strip() if sep else item] = spec.strip() if sep else item
    return named if any("=" in i for i in items) else list(items)


@click.command()
@options.data_argument()
@click.argument("extra_predictions", nargs=-1, type=options.INPUT_FILE)
@options.task_option(mcq=True)
@options.input_options
@options.eval_option(
    "Evaluation split to filter adversarially (AFLite's classifiers train on DATA); the "
    "predictions are for this split. Required, except for --task qa (DATA is filtered in "
    "two cross-fitted article halves)."
)
@options.predictions_option(
    "An evaluated model's predicted labels on the evaluation split (JSONL/CSV/TSV with id "
    "and prediction, or JSON {id: label}). Repeatable; files after the first are taken too."
)
@options.strict_predictions_option
@options.prediction_file_options
@options.opt(
    "--adversary",
    "A representation Phi for AFLite, weakest first (repeatable): bow | tfidf | minilm | "
    "finetuned:<dir> | a model folder, or NAME=SPEC. Default: bow, tfidf, minilm; for "
    "--task qa: qa_position, qa_lexical, qa_heuristic (the only QA choices).",
    dest="adversaries",
    multiple=True,
)
@options.opt("--seeds", "AFLite seeds per adversary, comma-separated.", default="0,1,2")
@options.opt(
    "--family",
    "NAME=FAMILY for a model or an adversary (repeatable): same-family rank change.",
    dest="families",
    multiple=True,
)
@options.file_opt(
    "--annotations",
    "JSONL of annotations of the evaluation split: 'annotator_labels' lists or ChaosNLI "
    "'label_counter', matched by id, else by text (default: the split's own "
    "annotator_labels).",
    kind="annotations",
)
@options.min_annotation_match_option
@options.set_option(
    "Set one parameter, repeatable (e.g. --set fairness.n_bootstrap=200, "
    "--set fairness.aflite_params={n_partitions: 16}).",
    metavar="fairness.PARAM=VALUE",
)
@options.seed_option()
@options.out_option("fairness")
def fairness(
    data: Path,
    extra_predictions: tuple[Path, ...],
    task: str,
    field_map: tuple[str, ...],
    fmt: str | None,
    eval_path: Path | None,
    predictions: tuple[Path, ...],
    adversaries: tuple[str, ...],
    seeds: str,
    families: tuple[str, ...],
    annotations: Path | None,
    overrides: tuple[str, ...],
    seed: int,
    out: Path | None,
    force: bool,
) -> None:
    """Are adversarially filtered evaluation sets fair? (paper 004, Sec. 5).

    AFLite (evaluation-set mode, paper 004 Table 3 settings) filters the evaluation split
    once per adversary and seed; the report shows every model's accuracy on every
    AF-selected set, how the models' ranking changes, and annotator agreement per stage.

    \b
    Example:
      spurious fairness train.jsonl --task nli --eval dev.jsonl \\
          --predictions preds/*.jsonl --adversary bow --adversary minilm --seeds 0,1,2
      spurious fairness dev-v1.1.json --task qa --predictions squad_preds/*.json
    """
    from spurious.cli.audit import parse_set

    if eval_path is None and task != "qa":  # QA cross-fits article halves of DATA instead
        raise click.UsageError("spurious fairness needs --eval (the split to filter).")
    all_predictions = (*predictions, *extra_predictions)
    if not all_predictions:
        raise click.UsageError("spurious fairness needs --predictions (the evaluated models).")
    try:
        seed_list = [int(s) for s in seeds.split(",") if s.strip()]
    except ValueError:
        raise click.BadParameter(
            f"expected ints like 0,1,2; got {seeds!r}", param_hint="--seeds"
        ) from None
    params: dict[str, Any] = {"seeds": seed_list}
    if adversaries:
        params["adversaries"] = _adversaries(adversaries)
    if families:
        params["families"] = _families(families)
    sets = parse_set(overrides)
    unknown = sorted(set(sets) - {"fairness"})
    if unknown:
        raise click.BadParameter(
            f"only fairness.PARAM=VALUE is accepted; got {unknown}", param_hint="--set"
        )
    params.update(sets.get("fairness", {}))
    config = {
        "inputs": options.run_inputs(
            data,
            task,
            fmt=fmt,
            field_map=field_map,
            eval=eval_path,
            predictions=all_predictions,
            annotations=annotations,
        ),
        "analyses": {"fairness": params},
        "seed": seed,
    }
    run = output.execute(config, out, "fairness", on_result=output.result_line, force=force)
    output.finish(run)
