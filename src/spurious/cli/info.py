"""``spurious report`` and ``spurious analyses``: re-render a report, list the analyses."""

from __future__ import annotations

import sys
from pathlib import Path

import click


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
@click.option(
    "--force",
    is_flag=True,
    help="Render even when results cannot be read (they are shown as errors), replacing "
    "the existing report.",
)
def report(run_dir: Path, force: bool) -> None:
    """(Re)render RUN_DIR/report.html from the results saved in RUN_DIR.

    A directory that is not a run is refused (exit 2). When the manifest or a result
    cannot be read, the problems are listed and the existing report is kept (exit 1)
    unless --force.
    """
    from spurious.exceptions import ParameterError
    from spurious.report import render_report
    from spurious.runner import check_run_dir

    problems = check_run_dir(run_dir)
    if problems and "is not a run directory" in problems[0]:
        raise ParameterError(problems[0])
    for problem in problems:
        click.secho(f"problem: {problem}", fg="red", err=True)
    if problems and not force:
        click.secho(
            "error: the report was not rendered (the existing one is kept); fix the files "
            "above or pass --force to render them as errors.",
            fg="red",
            err=True,
        )
        sys.exit(1)
    click.echo(f"report: {render_report(run_dir)}")


@click.command("analyses")
def list_analyses() -> None:
    """List the registered analyses: what each measures, needs, and writes."""
    from importlib.metadata import entry_points

    from spurious.catalog import extra_missing, read_catalog

    # The shipped catalog lists the built-in analyses without importing them (~0.1 s
    # instead of ~2.5 s); with a plugin installed, the registry is the only full list.
    catalog = None if entry_points(group="spurious.analyses") else read_catalog()
    if catalog is None:
        _list_from_registry()
        return
    for entry in catalog["analyses"]:
        _print_analysis(entry["name"], entry["kind"], entry["description"],
                        entry["requires"], extra_missing(entry["extras"]))  # fmt: skip


def _print_analysis(
    name: str, kind: str, description: str, needs: list[str], missing: list[str]
) -> None:
    state = " - unavailable here" if missing else ""
    click.secho(f"{name} ({kind}){state}", bold=True)
    click.echo(f"  {description}")
    click.echo(f"  requires: {', '.join(needs) or '-'}")
    for why in missing:
        click.echo(f"  unavailable: {why}")


def _list_from_registry() -> None:
    from spurious.analysis import UNAVAILABLE, load_analyses

    for name, cls in load_analyses().items():
        _print_analysis(name, cls.kind, cls.description, cls.requires.needs(),
                        cls.requires.missing_extras())  # fmt: skip
    for module, why in UNAVAILABLE.items():
        click.secho(f"{module} - unavailable here", bold=True)
        click.echo(f"  {why}")


@click.command("detectors", hidden=True)
@click.pass_context
def list_detectors(ctx: click.Context) -> None:
    """Same as ``spurious analyses`` (the earlier name)."""
    ctx.invoke(list_analyses)


@click.command("schema")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Write every schema below this folder (headline, result, metrics/<analysis>); "
    "without it, print the schema of one analysis' metrics (or all of them) as JSON.",
)
@click.argument("analysis", required=False)
def schema(out: Path | None, analysis: str | None) -> None:
    """The JSON Schemas of what a run writes (result.json, metrics.json, headlines).

    A CI job can validate `<run>/<analysis>/metrics.json` and `result.json` against them
    instead of guessing key names; the same files ship in the package
    (spurious/schemas/v1/).

    \b
    Examples:
      spurious schema partial_input          # metrics.json of one analysis
      spurious schema --out schemas/         # every schema, as files
    """
    import json

    from spurious.analysis import get_analysis
    from spurious.schema import all_schemas, metrics_schema, write_schemas

    if out is not None:
        for path in write_schemas(out):
            click.echo(str(path))
        return
    doc = metrics_schema(get_analysis(analysis)) if analysis else all_schemas()
    click.echo(json.dumps(doc, indent=2, sort_keys=True))
