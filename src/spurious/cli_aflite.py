"""``spurious aflite``: adversarial filtering of a dataset (or of an evaluation split).

Registered on the main group in :mod:`spurious.cli` (``main.add_command(aflite)``). The
shared CLI helpers are imported inside the command, so :mod:`spurious.cli` may import
this module at any point without an import cycle.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from spurious.data.tasks import TASKS

TASK_CHOICE = click.Choice(list(TASKS))
SELECTION_CHOICE = click.Choice(["greedy_slice", "greedy_one", "gumbel_slice"])
FILTERED_FORMATS = click.Choice(["jsonl", "csv", "tsv", "parquet", "hf"])


class _SizeType(click.ParamType):
    """An int (absolute count) or a float in (0, 1) (fraction of the initial size)."""

    name = "size"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        if value is None or isinstance(value, int | float):
            return value
        text = str(value).strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            f = float(text)
        except ValueError:
            self.fail(f"expected an int (count) or a fraction in (0, 1); got {value!r}", param, ctx)
        if not 0.0 < f < 1.0:
            self.fail(
                f"a fraction must be in (0, 1); got {value!r} (use an int for a count)", param, ctx
            )
        return f


SIZE = _SizeType()


@click.command("aflite")
@click.argument("data", type=click.Path(path_type=Path))
@click.option("--task", type=TASK_CHOICE, required=True, help="Task of the data.")
@click.option(
    "--eval",
    "eval_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Evaluation split to filter (paper 004): classifiers train on DATA only and every "
    "round removes all evaluation examples with p >= tau. Scores are then per evaluation example.",
)
@click.option(
    "--features",
    default="minilm",
    show_default=True,
    help="Representation Phi(X): minilm (offline all-MiniLM-L6-v2) | tfidf | bow | a local "
    "Hugging Face model directory.",
)
@click.option(
    "--features-npy",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Use your own features: a .npy matrix with one row per example (overrides --features). "
    "With --eval, one matrix covering both splits plus --ids.",
)
@click.option(
    "--ids",
    "ids_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Text file with the example id of each --features-npy row, one per line.",
)
@click.option(
    "--view",
    default="full",
    show_default=True,
    help="Part of the input the features see: full, hypothesis_only, premise_only, ...",
)
@click.option(
    "--partitions",
    type=int,
    default=64,
    show_default=True,
    help="m: classifiers (random partitions) per round.",
)
@click.option(
    "--train-size",
    type=SIZE,
    default="0.1",
    show_default=True,
    help="t: training examples per classifier; an int, or a fraction of the initial size.",
)
@click.option(
    "--slice-size",
    type=SIZE,
    default="0.02",
    show_default=True,
    help="k: most examples removed per round; an int, or a fraction of the initial size.",
)
@click.option(
    "--tau",
    type=float,
    default=0.75,
    show_default=True,
    help="Only examples with predictability p >= tau are removed; filtering stops when fewer "
    "than k reach it.",
)
@click.option(
    "--target-size",
    type=SIZE,
    default=None,
    help="n: stop when at most n examples remain (default: tau decides).",
)
@click.option(
    "--selection",
    type=SELECTION_CHOICE,
    default="greedy_slice",
    show_default=True,
    help="greedy_slice (AFLite), greedy_one (one example per round), gumbel_slice (sample k "
    "with probability proportional to p).",
)
@click.option(
    "--group-by",
    default="auto",
    show_default=True,
    help="Keep rows sharing this key on one side of every partition: auto (the group column, "
    "or the NLI premise), none, or a column name.",
)
@click.option(
    "--model",
    default="logistic",
    show_default=True,
    help="Model family: logistic (batched) | sklearn-logistic | linear-svm | rbf-svm | mlp.",
)
@click.option(
    "--executor",
    type=click.Choice(["local", "ray"]),
    default="local",
    show_default=True,
    help="Where the partition fits run; ray needs pip install 'spurious[ray]'.",
)
@click.option("--ray-address", default=None, help="Ray cluster address (with --executor ray).")
@click.option(
    "--chunk-size",
    type=int,
    default=None,
    help="Partitions per executor task (default: m split over the workers); no effect on results.",
)
@click.option("--max-rounds", type=int, default=None, help="Stop after this many rounds in total.")
@click.option(
    "--checkpoint-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Save the state after every round and resume from it when rerun with the same "
    "parameters and data.",
)
@click.option(
    "--restart",
    is_flag=True,
    help="Discard a checkpoint in --checkpoint-dir that belongs to a different run.",
)
@click.option(
    "--field-map",
    multiple=True,
    metavar="CANONICAL=COLUMN",
    help="Map a source column to a canonical field, repeatable (e.g. --field-map premise=sentence1).",
)
@click.option(
    "--format",
    "fmt",
    default=None,
    help="Input format if the suffix does not say: jsonl, json, csv, tsv, parquet.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Run directory (default: runs/aflite-<timestamp>).",
)
@click.option(
    "--write-filtered",
    type=click.Path(path_type=Path),
    default=None,
    help="Also write the kept examples (of the evaluation split with --eval) to this file, in "
    "the format its suffix names.",
)
@click.option(
    "--filtered-format",
    type=FILTERED_FORMATS,
    default=None,
    help="Format of --write-filtered if the suffix does not say; hf = Hugging Face dataset folder.",
)
def aflite(
    data: Path,
    task: str,
    eval_path: Path | None,
    features: str,
    features_npy: Path | None,
    ids_path: Path | None,
    view: str,
    partitions: int,
    train_size: int | float,
    slice_size: int | float,
    tau: float,
    target_size: int | float | None,
    selection: str,
    group_by: str,
    model: str,
    executor: str,
    ray_address: str | None,
    chunk_size: int | None,
    max_rounds: int | None,
    checkpoint_dir: Path | None,
    restart: bool,
    field_map: tuple[str, ...],
    fmt: str | None,
    seed: int,
    out: Path | None,
    write_filtered: Path | None,
    filtered_format: str | None,
) -> None:
    """Filter out the examples of DATA that a weak model family predicts too easily (AFLite).

    Each round trains --partitions classifiers on random sets of --train-size examples,
    scores every held-out example by its predictability p (the fraction of predictions
    equal to its gold label) and removes up to --slice-size of the most predictable ones
    with p >= --tau (Le Bras et al. 2020, Algorithm 1). Writes per-example scores
    (removed_round, p per round), the round history and a report.
    """
    from spurious.actions import write_filtered as write_filtered_fn
    from spurious.cli import _default_out, _finish_run, _parse_field_map
    from spurious.data import load_dataset
    from spurious.detectors.aflite import AFLite
    from spurious.execution import make_executor
    from spurious.features import PrecomputedFeaturizer
    from spurious.run import dataset_entry, run_detectors

    t0 = time.perf_counter()
    fmap = _parse_field_map(field_map)
    if features_npy is not None and eval_path is not None and ids_path is None:
        raise click.UsageError(
            "--features-npy with --eval needs --ids: one matrix covers both splits and rows are "
            "matched to examples by id."
        )
    if ids_path is not None and features_npy is None:
        raise click.UsageError("--ids only applies to --features-npy.")
    train = load_dataset(data, task, field_map=fmap, format=fmt)
    ev = None
    if eval_path is not None:
        ev = load_dataset(
            eval_path, task, field_map=fmap, format=fmt, label_names=train.label_names
        )
    feat: Any = features
    if features_npy is not None:
        feat = PrecomputedFeaturizer({view: os.fspath(features_npy)}, ids=ids_path)
    ex = make_executor(executor, address=ray_address) if executor == "ray" else "local"
    det = AFLite(
        n_partitions=partitions,
        train_size=train_size,
        slice_size=slice_size,
        tau=tau,
        target_size=target_size,
        selection=selection,
        group_by=None if group_by.lower() == "none" else group_by,
        model=model,
        features=feat,
        view=view,
        max_rounds=max_rounds,
        chunk_size=chunk_size,
        executor=ex,
        checkpoint_dir=os.fspath(checkpoint_dir) if checkpoint_dir else None,
        checkpoint_mismatch="restart" if restart else "error",
        random_state=seed,
    )
    det.validate_params()  # before creating the output directory
    out = out or _default_out("aflite")
    click.echo(
        f"aflite: {len(train):,} training examples"
        + (f", {len(ev):,} evaluation examples" if ev is not None else "")
        + f"; m={partitions}, t={train_size}, k={slice_size}, tau={tau}"
    )
    try:
        results = run_detectors([det], train, ev, out=out, progress=True)
    finally:
        if not isinstance(ex, str):
            ex.close()
    res = results["aflite"]
    if res.status != "ok":
        click.secho(f"error: {res.error}", fg="red", err=True)
    else:
        _print_rounds(res)
    datasets = {"train": dataset_entry(train, os.fspath(data))}
    if ev is not None:
        datasets["eval"] = dataset_entry(ev, os.fspath(eval_path))
    _finish_run(
        out,
        results=results,
        config={"aflite": det.params_for_json(), "field_map": fmap},
        seed=seed,
        datasets=datasets,
        timings={"total_s": time.perf_counter() - t0},
    )
    if res.status != "ok":
        sys.exit(1)
    if write_filtered is not None:
        scored = ev if ev is not None else train
        path = write_filtered_fn(scored, res, write_filtered, filtered_format, field_map=fmap)
        click.echo(f"filtered: {path} ({int((~res.scores['is_aflite_issue']).sum()):,} rows)")


def _print_rounds(res) -> None:
    """Size per round (and evaluation stages) as a small table."""
    d = res.details
    eval_mode = d.get("mode") == "eval"
    head = f"{'round':>5} {'|S| before':>11} {'p>=tau':>8} {'removed':>8} {'mean p':>7}"
    if eval_mode:
        head += f" {'|R| before':>11} {'eval removed':>13}"
    click.echo(head)
    for r in d.get("rounds", []):
        mean_p = r.get("mean_p")
        line = (
            f"{r['round']:>5} {r['n_before']:>11,} {r['n_above_tau']:>8,} {r['n_removed']:>8,} "
            f"{(f'{mean_p:.3f}' if mean_p is not None else '-'):>7}"
        )
        if eval_mode:
            line += f" {r['n_eval_before']:>11,} {r['n_eval_removed']:>13,}"
        click.echo(line)
    if eval_mode:
        st = d.get("stages", {})
        click.echo(
            f"evaluation stages: {st.get('filtered_first_round', 0):,} filtered in round 1, "
            f"{st.get('filtered_later_round', 0):,} in later rounds, "
            f"{st.get('af_selected', 0):,} AF-selected"
        )
