"""``spurious report`` and ``spurious analyses``: re-render a report, list the analyses."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("run_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
def report(run_dir: Path) -> None:
    """(Re)render RUN_DIR/report.html from the results saved in RUN_DIR."""
    from spurious.report import render_report

    click.echo(f"report: {render_report(run_dir)}")


@click.command("analyses")
def list_analyses() -> None:
    """List the registered analyses: what each measures, needs, and writes."""
    from spurious.analysis import load_analyses

    for name, cls in load_analyses().items():
        click.secho(f"{name} ({cls.kind})", bold=True)
        click.echo(f"  {cls.description}")
        click.echo(f"  requires: {', '.join(cls.requires.needs()) or '-'}")
        for metric, doc in cls.metric_docs.items():
            click.echo(f"    {metric}: {doc}")


@click.command("detectors", hidden=True)
@click.pass_context
def list_detectors(ctx: click.Context) -> None:
    """Same as ``spurious analyses`` (the earlier name)."""
    ctx.invoke(list_analyses)
