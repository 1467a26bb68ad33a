"""``spurious aflite``: adversarial filtering of a dataset (or of an evaluation split)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from spurious.cli import options, output

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
@options.data_argument()
@options.task_option(mcq=True)
@options.eval_option(
    "Evaluation split to filter (paper 004; mode 'eval'): classifiers train on DATA only and "
    "every round removes all evaluation examples with p >= tau. Scores are then per "
    "evaluation example."
)
@options.opt(
    "--features",
    "Representation Phi(X): minilm (offline all-MiniLM-L6-v2) | tfidf | bow | a local "
    "Hugging Face model directory.",
    default="minilm",
)
@options.file_opt(
    "--features-npy",
    "Use your own features: a .npy matrix with one row per example (overrides --features). "
    "With --eval, one matrix covering both splits plus --ids.",
    kind="features",
)
@options.file_opt(
    "--ids",
    "Text file with the id of each --features-npy row, one per line.",
    dest="ids_path",
    kind="ids",
)
@options.opt(
    "--view", "Part of the input the features see: full, hypothesis_only, ...", default="full"
)
@options.opt("--partitions", "m: classifiers (random partitions) per round.", type=int, default=64)
@options.opt(
    "--train-size", "t: examples per classifier; an int or a fraction.", type=SIZE, default="0.1"
)
@options.opt(
    "--slice-size", "k: most removed per round; an int or a fraction.", type=SIZE, default="0.02"
)
@options.opt(
    "--tau",
    "Only examples with predictability p >= tau are removed; filtering stops when fewer "
    "than k reach it.",
    type=float,
    default=0.75,
)
@options.opt(
    "--target-size", "n: stop when at most n examples remain (default: tau decides).", type=SIZE
)
@options.opt(
    "--selection",
    "greedy_slice (AFLite), greedy_one (one example per round), gumbel_slice (sample k "
    "with probability proportional to p).",
    type=SELECTION_CHOICE,
    default="greedy_slice",
)
@options.opt(
    "--group-by",
    "Keep rows sharing this key on one side of every partition: auto (the group column, "
    "or the NLI premise), none, or a column name.",
    default="auto",
)
@options.opt(
    "--model",
    "Model family: logistic (batched) | sklearn-logistic | linear-svm | rbf-svm | mlp.",
    default="logistic",
)
@options.opt(
    "--executor",
    "Where the partition fits run; ray needs pip install 'spurious[ray]'.",
    type=click.Choice(["local", "ray"]),
    default="local",
)
@options.opt("--ray-address", "Ray cluster address (with --executor ray).")
@options.opt("--chunk-size", "Partitions per executor task (no effect on results).", type=int)
@options.opt("--max-rounds", "Stop after this many rounds in total.", type=int)
@options.opt(
    "--checkpoint-dir",
    "Save the state after every round and resume from it when rerun with the same "
    "parameters and data.",
    type=click.Path(file_okay=False, path_type=Path),
)
@options.opt(
    "--restart", "Discard a checkpoint of a different run in --checkpoint-dir.", is_flag=True
)
@options.opt(
    "--baseline-view",
    "Partial input the verdict compares with (auto: every one-field view of a multi-field "
    "task; none: no partial input). Predictability alone is no shortcut.",
    default="auto",
)
@options.opt(
    "--baseline-features",
    "A representation that should not suffice for the task (e.g. bow when word order "
    "decides), compared with shuffled labels for the verdict.",
)
@options.input_options
@options.seed_option()
@options.out_option("aflite")
@options.opt(
    "--write-filtered",
    "Also write the kept examples (of the evaluation split with --eval) to this file, in "
    "the format its suffix names.",
    type=click.Path(path_type=Path),
)
@options.opt(
    "--filtered-format",
    "Format of --write-filtered if the suffix does not say; hf = Hugging Face dataset folder.",
    type=FILTERED_FORMATS,
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
    baseline_view: str,
    baseline_features: str | None,
    field_map: tuple[str, ...],
    fmt: str | None,
    seed: int,
    out: Path | None,
    force: bool,
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
    import os

    from spurious.actions import write_filtered as write_filtered_fn

    fmap = options.parse_field_map(field_map)
    if features_npy is not None and eval_path is not None and ids_path is None:
        raise click.UsageError(
            "--features-npy with --eval needs --ids: one matrix covers both splits and rows are "
            "matched to examples by id."
        )
    if ids_path is not None and features_npy is None:
        raise click.UsageError("--ids only applies to --features-npy.")
    if ray_address is not None and executor != "ray":
        raise click.BadParameter(
            f"{ray_address!r} names a Ray cluster, which only --executor ray uses; got "
            f"--executor {executor}. Add --executor ray, or leave --ray-address out.",
            param_hint="--ray-address",
        )
    if filtered_format is not None and write_filtered is None:
        raise click.BadParameter(
            "sets the format of --write-filtered, which is not given.",
            param_hint="--filtered-format",
        )
    if restart and checkpoint_dir is None:
        raise click.BadParameter(
            "discards a checkpoint in --checkpoint-dir, which is not given.", param_hint="--restart"
        )
    if write_filtered is not None:
        # Checked before the run: a bad location must not cost the computed results.
        from spurious.actions.filter import output_format
        from spurious.utils.io import check_output_file

        inputs = (data, eval_path, features_npy, ids_path)
        check_output_file(write_filtered, inputs, overwrite=force, what="--write-filtered")
        if output_format(write_filtered, filtered_format) == "hf":
            from spurious.actions.hf_output import check_hf_target

            check_hf_target(write_filtered, inputs, what="--write-filtered")
    feat: Any = features
    if features_npy is not None:
        feat = {
            "precomputed": {view: os.fspath(features_npy)},
            "ids": None if ids_path is None else os.fspath(ids_path),
        }
    ex: Any = "local"
    if executor == "ray":
        ex = {"kind": "ray", "options": {"address": ray_address}} if ray_address else "ray"
    params = {
        "mode": "train" if eval_path is None else "eval",
        "n_partitions": partitions,
        "train_size": train_size,
        "slice_size": slice_size,
        "tau": tau,
        "target_size": target_size,
        "selection": selection,
        "group_by": None if group_by.lower() == "none" else group_by,
        "model": model,
        "features": feat,
        "view": view,
        "max_rounds": max_rounds,
        "chunk_size": chunk_size,
        "executor": ex,
        "checkpoint_dir": os.fspath(checkpoint_dir) if checkpoint_dir else None,
        "checkpoint_mismatch": "restart" if restart else "error",
        "baseline_view": None if baseline_view.lower() == "none" else baseline_view,
        "baseline_features": baseline_features,
        "random_state": seed,
    }
    config = {
        "inputs": options.run_inputs(data, task, fmt=fmt, field_map=fmap, eval=eval_path),
        "analyses": {"aflite": params},
        "seed": seed,
        # The run joins Ray before its folder exists: a cluster that does not answer
        # writes nothing (AFLite then uses that connection).
        **({"executor": ex} if ex != "local" else {}),
    }

    planned: list[Any] = []

    def intro(ctx: Any, analyses: Any) -> None:
        planned.extend(analyses)  # the analysis object says, after the run, if it resumed
        click.echo(
            f"aflite: {len(ctx.train):,} training examples"
            + (f", {len(ctx.eval):,} evaluation examples" if ctx.eval is not None else "")
            + f"; m={partitions}, t={train_size}, k={slice_size}, tau={tau}"
        )

    run = output.execute(
        config,
        out,
        "aflite",
        before_run=intro,
        force=force,
    )
    res = run.results["aflite"]
    resumed = next((getattr(a, "resumed_from_", None) for a in planned), None)
    if resumed is not None:
        click.echo(f"aflite: resumed from round {resumed} of {checkpoint_dir}")
    output.finish(run, "aflite", print_rounds)
    if write_filtered is not None:
        scored = run.context.eval if eval_path is not None else run.context.train
        path = write_filtered_fn(
            scored,
            res,
            write_filtered,
            filtered_format,
            field_map=fmap,
            inputs=(data, eval_path, features_npy, ids_path),
        )
        click.echo(f"filtered: {path} ({int((~res.scores['is_aflite_issue']).sum()):,} rows)")


def print_rounds(res: Any) -> None:
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
