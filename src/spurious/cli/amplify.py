"""``spurious amplify``: bias-amplified splits (paper 002) from a run's anti-biased marks."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from spurious.cli import options
from spurious.cli.audit import parse_set


def _fractions(value: str) -> tuple[float, ...]:
    if value.strip().lower() in ("", "none"):
        return ()
    try:
        return tuple(float(v) for v in value.split(","))
    except ValueError:
        raise click.BadParameter(
            f"expected comma-separated fractions such as 0.1,0.2,0.35; got {value!r}",
            param_hint="--reinsert",
        ) from None


@click.command()
@click.argument("data", required=False, type=click.Path(path_type=Path))
@options.opt(
    "--from-run",
    "A run directory written by 'spurious audit' / 'spurious run' with --eval whose "
    "analyses marked anti-biased examples (<analysis>/marks.parquet). Its data are "
    "re-loaded from its manifest (or pass DATA and --eval).",
    dest="from_run",
    type=click.Path(path_type=Path, exists=True, file_okay=False),
)
@click.option("--task", type=options.TASK_CHOICE, default=None, help="Task of DATA.")
@options.input_options
@options.eval_option("The evaluation (test) split whose anti-biased examples form the test.")
@options.opt(
    "--analysis",
    "Without --from-run: the analysis that marks examples, run first into OUT/run (repeatable).",
    dest="analyses",
    multiple=True,
    default=("cartography",),
)
@options.set_option(
    "Without --from-run: one parameter of an analysis (e.g. --set cartography.features=bow)."
)
@options.opt(
    "--definition",
    "Definition to amplify, repeatable (default: every marked one, e.g. cartography, "
    "partial_input_cartography, minority).",
    dest="definitions",
    multiple=True,
)
@options.opt(
    "--match-to",
    "q-matching (paper 002 Table 7): 'auto' gives every definition with a score (cartography) "
    "as many anti-biased training examples as the one without (minority), else as the first; "
    "a definition name picks the target; 'none' keeps the marks as they are.",
    default="auto",
)
@options.opt(
    "--q",
    "Instead of --match-to: mark this share of each split for every scored definition.",
    type=click.FloatRange(0, 1),
)
@options.opt(
    "--reinsert",
    "Shares of the anti-biased training examples put back into train.biased (Sec. 5), "
    "comma-separated; 'none' for none.",
    default="0.1,0.2,0.35,0.5,0.7",
)
@options.opt(
    "--eval-name",
    "Name of the evaluation split in the output split names (test, validation, "
    "validation_matched...).",
    default="test",
)
@options.opt("--no-files", "Do not write the splits as files.", is_flag=True)
@options.opt("--no-hf", "Do not write the Hugging Face DatasetDicts.", is_flag=True)
@options.opt(
    "--file-format",
    "Format of the split files (default: each input's own).",
    type=click.Choice(["jsonl", "json", "csv", "tsv", "parquet"]),
)
@options.seed_option("Seed of the random baseline and the reinsertion draw (and of --analysis).")
@options.opt(
    "--out",
    "Output folder (default runs/amplify-<time>); must be new or empty.",
    type=click.Path(path_type=Path, file_okay=False),
)
@options.opt("--force", "Replace earlier amplify outputs in --out.", is_flag=True)
def amplify(
    data: Path | None,
    from_run: Path | None,
    task: str | None,
    field_map: tuple[str, ...],
    fmt: str | None,
    eval_path: Path | None,
    analyses: tuple[str, ...],
    overrides: tuple[str, ...],
    definitions: tuple[str, ...],
    match_to: str,
    q: float | None,
    reinsert: str,
    eval_name: str,
    no_files: bool,
    no_hf: bool,
    file_format: str | None,
    seed: int,
    out: Path | None,
    force: bool,
) -> None:
    """Write bias-amplified splits: biased training, anti-biased test (paper 002).

    From the anti-biased marks of an analysis (cartography, partial-input cartography,
    minority examples, ...) on a training and an evaluation split, writes for every
    definition: train.biased (training minus anti-biased), train.anti_biased,
    train.random (a random training subset of the same size: the baseline),
    train.reinserted_<p> (train.biased + p% of the anti-biased, nested), and
    <eval-name>.biased / <eval-name>.anti_biased. Definitions are q-matched so their
    biased training splits are equally large (Sec. 4.1, Table 7).

    \b
    OUT/summary.json               sizes, label distributions, q, seed, versions
    OUT/report.html                the analyses' sections and the split table
    OUT/hf/<definition>/           datasets.load_from_disk(...) -> DatasetDict
    OUT/files/<definition>/<split>.<ext>   the inputs' own rows and format

    \b
    Examples:
      spurious audit train.jsonl --task nli --eval dev.jsonl --only cartography --out runs/map
      spurious amplify --from-run runs/map --out runs/amplified
      spurious amplify train.jsonl --task nli --eval dev.jsonl --set cartography.features=bow \\
          --out runs/amplified
    """
    from spurious.actions.amplify import amplify_run, check_options
    from spurious.exceptions import ParameterError

    if (data is None) == (from_run is None):
        raise click.UsageError("Give either DATA (with --task and --eval) or --from-run RUN.")
    if data is not None and (task is None or eval_path is None):
        raise click.UsageError("DATA needs --task and --eval (the test split to amplify).")
    out = out or options.default_out("amplify")
    kwargs: dict[str, Any] = {
        "definitions": list(definitions) or None,
        "match_to": None if match_to.lower() == "none" else match_to,
        "q": q,
        "reinsert": _fractions(reinsert),
        "eval_name": eval_name,
        "random_state": seed,
    }
    if kwargs["q"] is not None and match_to != "auto":
        raise ParameterError(
            f"Pass either --q or --match-to, not both; got --q {q} and --match-to {match_to}."
        )
    check_options(**{k: v for k, v in kwargs.items() if k != "random_state"})
    command = ["spurious", *sys.argv[1:]]
    inputs: list[Any] = [data, eval_path]
    if from_run is not None:
        inputs.append(from_run)
        train = ev = None
        if data is not None:  # explicit data instead of the manifest's
            from spurious.data import load_dataset

            fmap = options.parse_field_map(field_map)
            train = load_dataset(data, task, field_map=fmap, format=fmt)
            ev = load_dataset(eval_path, task, field_map=fmap, format=fmt)
        amp = amplify_run(from_run, train=train, eval=ev, **kwargs)
        _check_out(out, force, inputs, amp)
    else:
        from spurious.runner import execute

        spec = {name: {} for name in analyses}
        for name, params in parse_set(overrides).items():
            if name not in spec:
                raise click.BadParameter(
                    f"--set names analysis {name!r}, which is not among --analysis "
                    f"{list(analyses)}.",
                    param_hint="--set",
                )
            spec[name].update(params)
        analyses_spec = {n: {"random_state": seed, **p} for n, p in spec.items()}
        config = {
            "inputs": options.run_inputs(data, task, fmt=fmt, field_map=field_map, eval=eval_path),
            "analyses": analyses_spec,
            "seed": seed,
        }
        # The definitions the analyses will mark: --definition and --match-to must name
        # them, checked before the analyses run (and before OUT/run exists).
        marked = _marked_definitions(analyses_spec, task)
        check_options(**{k: v for k, v in kwargs.items() if k != "random_state"}, marked=marked)
        _check_out(out, force, inputs, None)
        click.echo(f"amplify: running {', '.join(analyses)} into {out / 'run'}")
        run = execute(
            config, out=out / "run", command=command, force=force, progress=None, refuse_empty=True
        )
        failed = {n: r.error for n, r in run.results.items() if r.status != "ok"}
        if failed:
            raise ParameterError(f"The analyses that mark examples did not finish: {failed}.")
        amp = amplify_run(out / "run", train=run.context.train, eval=run.context.eval, **kwargs)
    amp.source["command"] = " ".join(command)
    for ds in (amp.train, amp.eval):
        if ds.source is not None and ds.source.path:
            inputs.append(ds.source.path)
    amp.save(
        out,
        hf=not no_hf,
        files=not no_files,
        file_format=file_format,
        force=force,
        inputs=inputs,
        report_results=amp.results,
        keep=("run",) if from_run is None else (),
    )
    _print_summary(amp)
    click.echo(f"report:  {out / 'report.html'}")
    click.echo(f"summary: {out / 'summary.json'}")
    if not no_hf:
        click.echo(f"splits:  {out / 'hf'}/<definition> (datasets.load_from_disk)")
    if not no_files:
        click.echo(f"files:   {out / 'files'}/<definition>/<split>.<ext>")


def _marked_definitions(analyses: dict[str, dict[str, Any]], task: str | None) -> list[str]:
    """The definitions the analyses of ``analyses`` mark on data of ``task``."""
    from spurious.data.tasks import get_task
    from spurious.runner import build_analyses

    t = get_task(str(task))
    return [d for a in build_analyses(analyses) for d in a.mark_definitions(t)]


def _check_out(out: Path, force: bool, inputs: list[Any], amp: Any) -> None:
    """A non-empty --out without --force is refused before any work."""
    keep = {"run"} if amp is None else set()
    if out.is_dir() and not force and any(p.name not in keep for p in out.iterdir()):
        from spurious.exceptions import ParameterError

        raise ParameterError(
            f"--out {str(out)!r} is not empty; pass --force to replace earlier amplify outputs."
        )


def _print_summary(amp: Any) -> None:
    summary = amp.summary()
    labels = list(summary["labels"]["train"])
    for d, info in summary["definitions"].items():
        click.secho(
            f"{d}: q = {info['q']:.2%} of training anti-biased"
            + (f" (matched to {info['matched_to']})" if info.get("matched_to") else ""),
            bold=True,
        )
        click.echo(f"  {'split':<28} {'n':>8}  " + "  ".join(f"{lab[:12]:>12}" for lab in labels))
        for name, s in info["splits"].items():
            counts = "  ".join(f"{s['labels'].get(lab, 0):>12,}" for lab in labels)
            click.echo(f"  {name:<28} {s['n']:>8,}  {counts}")
