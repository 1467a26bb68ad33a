"""``spurious canary``: how strong a shortcut would this audit see in this data?"""

from __future__ import annotations

from pathlib import Path

import click

from spurious.cli import options

_PLANT_HELP = (
    "A shortcut to plant, KIND@FIELD (token, length or overlap; e.g. token@premise), "
    "repeatable. Default: token in the last field, token in the other field only, "
    "length and overlap in the last field (one-field tasks: token and length)."
)


def _plants(items: tuple[str, ...]) -> list[dict[str, str]] | None:
    if not items:
        return None
    out = []
    for item in items:
        kind, _, field = item.partition("@")
        if not kind:
            raise click.BadParameter(
                f"expected KIND or KIND@FIELD (e.g. token@hypothesis); got {item!r}",
                param_hint="--plant",
            )
        out.append({"kind": kind, **({"field": field} if field else {})})
    return out


@click.command()
@options.data_argument(exists=True)
@options.task_option(mcq=True)
@options.input_options
@options.opt(
    "--only",
    "Analyses to test (repeatable; default: every analysis of the quick audit).",
    multiple=True,
    metavar="ANALYSIS",
)
@options.opt(
    "--full", "Run the analyses with the full profile's parameters (default: quick).", is_flag=True
)
@options.opt(
    "--features",
    "Representation shared by every analysis that uses one (default: each analysis' own).",
    default=None,
)
@options.set_option("Set one parameter of one analysis, repeatable.")
@options.opt("--plant", _PLANT_HELP, dest="plants", multiple=True, metavar="KIND@FIELD")
@options.opt(
    "--rate",
    "Share of the label's examples that carry a plant, repeatable (default: 0.005 0.02 0.05 0.2).",
    dest="rates",
    type=float,
    multiple=True,
)
@options.opt(
    "--size",
    "Also test a stratified subsample of this many rows, repeatable (default: all rows).",
    dest="sizes",
    type=int,
    multiple=True,
)
@options.opt("--repeats", "Repeats per size (new planted rows each).", type=int, default=1)
@options.opt("--label", "The label the shortcuts point to (default: the first label).")
@options.opt("--token", "The planted word (default: zqxjv; must not occur in the data).")
@options.opt(
    "--background",
    "Plant into the data as they are (own) or into the same texts with permuted labels "
    "(shuffled: no real shortcut left, so every detection is decided).",
    type=click.Choice(["own", "shuffled"]),
    default="own",
)
@options.seed_option()
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Output folder (default: runs/canary-<timestamp>): canary.json, canary.parquet, "
    "canary.svg.",
)
@click.option("--force", is_flag=True, help="Write into a folder that already holds files.")
def canary(
    data: Path,
    task: str,
    field_map: tuple[str, ...],
    fmt: str | None,
    only: tuple[str, ...],
    full: bool,
    features: str | None,
    overrides: tuple[str, ...],
    plants: tuple[str, ...],
    rates: tuple[float, ...],
    sizes: tuple[int, ...],
    repeats: int,
    label: str | None,
    token: str | None,
    background: str,
    seed: int,
    out: Path | None,
    force: bool,
) -> None:
    """Plant shortcuts of graded strength into copies of DATA and report, per analysis,
    from which strength it detects them.

    Each copy gets one synthetic shortcut with known rows (a made-up token in a share
    of one label's examples, a length cue, a lexical-overlap cue, a token in only one
    field). A plant is detected when the analysis' verdict flags the planted copy
    (severity low or above) and not the unplanted one; example-level precision and
    recall of the planted rows come from its is_<name>_issue column.

    \b
    Examples:
      spurious canary dev.jsonl --task nli --only atlas --only pvi
      spurious canary train.tsv --task text --rate 0.01 --rate 0.1 --repeats 3
    """
    from spurious import load_dataset
    from spurious.canary import DEFAULT_RATES, run_canary
    from spurious.cli.audit import parse_set
    from spurious.exceptions import ParameterError
    from spurious.runner import audit_plan

    out = options.default_out("canary") if out is None else out
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not force:
        raise ParameterError(
            f"The '--out' folder {str(out)!r} already holds files; pass --force to write "
            "into it, or choose another folder."
        )
    dataset = load_dataset(data, task, format=fmt, field_map=options.parse_field_map(field_map))
    profile = "full" if full else "quick"
    plan = audit_plan(
        profile=profile,
        seed=seed,
        only=only,
        overrides=parse_set(overrides),
        shared={"features": features} if features else None,
        task=task,
    )
    click.echo(
        f"canary: {len(dataset):,} examples; analyses: {', '.join(plan)}; "
        f"rates: {', '.join(f'{r:.1%}' for r in rates or DEFAULT_RATES)}"
    )
    result = run_canary(
        dataset,
        analyses=plan,
        profile=profile,
        plants=_plants(plants),
        rates=rates or DEFAULT_RATES,
        sizes=sizes or None,
        n_repeats=repeats,
        label=label,
        token=token,
        background=background,
        random_state=seed,
        progress=lambda line: click.echo(f"  {line}", err=True),
    )
    for name, why in result.skipped.items():
        click.echo(f"skipped {name}: {why}")
    click.echo(result.format_table())
    for line in result.sentences():
        click.echo(line)
    paths = result.save(out)
    click.echo(
        f"took {result.timings.get('total_s', 0):.0f} s; wrote "
        + ", ".join(map(str, paths.values()))
    )
