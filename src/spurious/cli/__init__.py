"""The ``spurious`` command line. It owns the terminal: progress bars, tables, exit codes.

Every command is a module of this package; they share option decorators
(:mod:`~spurious.cli.options`) and terminal output (:mod:`~spurious.cli.output`), and all
run through the one lifecycle of :mod:`spurious.runner`. Every error the package raises on
purpose (:class:`SpuriousError`) is printed as one readable line and exits with status 2;
nothing is written for a run that fails on input. A run in which an analysis failed
exits 1 (the other results are written).
"""

from __future__ import annotations

import logging
import sys

import click

from spurious._version import __version__
from spurious.cli.aflite import aflite
from spurious.cli.amplify import amplify
from spurious.cli.audit import audit, run_command
from spurious.cli.bias import bias, resample
from spurious.cli.canary import canary
from spurious.cli.fairness import fairness
from spurious.cli.ids import ids
from spurious.cli.info import list_analyses, list_detectors, report, schema
from spurious.cli.leakage import demo, leakage
from spurious.cli.train import train
from spurious.exceptions import SpuriousError

logger = logging.getLogger("spurious")


class _Group(click.Group):
    """Turns package errors into one line on stderr and exit code 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except SpuriousError as e:
            click.secho(f"error: {e}", fg="red", err=True)
            sys.exit(2)
        except KeyboardInterrupt:
            click.secho("interrupted; partial outputs were not written", fg="yellow", err=True)
            sys.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="spurious")
@click.option("-v", "--verbose", count=True, help="More logging (-v info, -vv debug).")
def main(verbose: int) -> None:
    """Find, measure and remove shortcuts (annotation artifacts) in supervised datasets.

    \b
    Quick start:
      spurious demo                          # planted-artifact NLI data -> report
      spurious audit data.jsonl --task nli   # every applicable analysis, one report
      spurious leakage train.jsonl --eval dev.jsonl --task nli
      spurious report runs/<run>/            # re-render a run's HTML report
      spurious run --config runs/<run>/manifest.json   # re-run a run
    """
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


for _command in (
    audit,
    run_command,
    demo,
    leakage,
    aflite,
    bias,
    resample,
    fairness,
    amplify,
    train,
    report,
    list_analyses,
    list_detectors,
    schema,
    ids,
    canary,
):
    main.add_command(_command)

__all__ = ["main"]

if __name__ == "__main__":  # pragma: no cover
    main()
