"""The ``spurious`` command line. It owns the terminal: progress bars, tables, exit codes.

Every error the package raises on purpose (:class:`SpuriousError`) is printed as one
readable line and exits with status 2; nothing is written for a run that fails on input.
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import sys
import time
from pathlib import Path

import click

from spurious._version import __version__
from spurious.exceptions import SpuriousError

logger = logging.getLogger("spurious")

TASK_CHOICE = click.Choice(["nli", "pair", "text", "qa"])


def _default_out(command: str) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("runs") / f"{command}-{stamp}"


def _parse_field_map(items: tuple[str, ...]) -> dict[str, str]:
    out = {}
    for item in items:
        if "=" not in item:
            raise click.BadParameter(
                f"expected CANONICAL=COLUMN (e.g. premise=sentence1); got {item!r}",
                param_hint="--field-map",
            )
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


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
      spurious leakage train.jsonl --eval dev.jsonl --task nli
      spurious report runs/<run>/            # re-render a run's HTML report
    """
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


# -- shared plumbing ------------------------------------------------------------------


def _finish_run(
    out: Path,
    *,
    results: dict,
    config: dict,
    seed: int,
    datasets: dict,
    timings: dict,
) -> Path:
    from spurious.report import render_report
    from spurious.run import write_manifest

    write_manifest(
        out,
        command=["spurious", *sys.argv[1:]],
        config=config,
        seed=seed,
        datasets=datasets,
        detectors=list(results),
        timings=timings,
        statuses={k: r.status for k, r in results.items()},
    )
    report = render_report(out)
    for name, res in results.items():
        colour = "green" if res.status == "ok" else "red"
        click.secho(f"[{name}] {res.status}: ", fg=colour, nl=False, err=False)
        click.echo(res.summary)
    click.echo(f"report:  {report}")
    click.echo(f"results: {out}/<detector>/metrics.json, scores.parquet")
    return report


def _leakage_table(res) -> None:
    """Print the partial-input metrics as a small table."""
    if res.status != "ok":
        return
    m = res.metrics
    conds = [c["view"] for c in res.details.get("conditions", []) if c.get("is_partial")]

    def cell(name: str, pct: bool = False) -> str:
        f = 100.0 if pct else 1.0
        if name not in m:
            return "-"
        return f"{m[name] * f:.3f} [{m[name + '_ci_low'] * f:.3f}, {m[name + '_ci_high'] * f:.3f}]"

    click.echo(
        f"full input (A_PSC): {cell('accuracy_full')}   majority: {cell('majority_accuracy')}"
    )
    header = f"{'condition':<18} {'A_SSC':<24} {'Delta_maj':<24} {'%R_R':<26} {'NBA':<24} NBR"
    click.echo(header)
    for c in conds:
        click.echo(
            f"{c:<18} {cell('accuracy_' + c):<24} {cell('delta_maj_' + c):<24} "
            f"{cell('recovery_' + c, True):<26} {cell('nba_' + c):<24} {cell('nbr_' + c)}"
        )


# -- commands -------------------------------------------------------------------------


@main.command()
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Run directory to write (default: runs/demo-<timestamp>).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option(
    "--n",
    "n_examples",
    type=int,
    default=3000,
    show_default=True,
    help="Number of synthetic NLI examples.",
)
@click.option(
    "--artifact-rate",
    type=float,
    default=0.6,
    show_default=True,
    help="Fraction of 'contradiction' hypotheses that carry the planted cue word.",
)
@click.option(
    "--features",
    default="minilm",
    show_default=True,
    help="Featurizer: minilm (offline all-MiniLM-L6-v2), bow, tfidf, or a local model directory.",
)
def demo(out: Path | None, seed: int, n_examples: int, artifact_rate: float, features: str) -> None:
    """Plant an artifact in synthetic NLI data, measure the leakage, write a report.

    The demo needs no data files and no network: it generates template NLI pairs
    where a cue word ("nobody") is added to a fraction of the contradiction
    hypotheses, then shows that a hypothesis-only probe finds it.
    """
    from spurious.data.synthetic import make_nli_artifacts
    from spurious.detectors import PartialInput
    from spurious.run import dataset_entry, run_detectors

    out = out or _default_out("demo")
    t0 = time.perf_counter()
    synth = make_nli_artifacts(n=n_examples, artifact_rate=artifact_rate, random_state=seed)
    train, test = synth.dataset.split(0.3, random_state=seed)
    train.name, test.name = "synthetic-nli[train]", "synthetic-nli[test]"
    det = PartialInput(features=features, random_state=seed)
    click.echo(
        f"demo: {len(train)} train / {len(test)} test synthetic NLI pairs; cue word planted "
        f"in {int(synth.has_artifact.sum())} hypotheses"
    )
    results = run_detectors([det], train, test, out=out, progress=True)
    _leakage_table(results["partial_input"])
    _finish_run(
        out,
        results=results,
        config={"demo": dict(synth.params), "partial_input": det.params_for_json()},
        seed=seed,
        datasets={"train": dataset_entry(train), "eval": dataset_entry(test)},
        timings={"total_s": time.perf_counter() - t0},
    )


@main.command()
@click.argument("data", type=click.Path(path_type=Path))
@click.option("--task", type=TASK_CHOICE, required=True, help="Task of the data.")
@click.option(
    "--eval",
    "eval_path",
    type=click.Path(path_type=Path),
    default=None,
    help="Evaluation split. Without it, every example is scored by out-of-fold probes (--folds).",
)
@click.option(
    "--features",
    default="tfidf",
    show_default=True,
    help="bow | tfidf | minilm (offline all-MiniLM-L6-v2) | a local HF model directory.",
)
@click.option(
    "--probe",
    default="logistic",
    show_default=True,
    help="logistic (fast PyTorch probe) | sklearn-logistic | linear-svm | mlp.",
)
@click.option(
    "--condition",
    "conditions",
    multiple=True,
    help="Partial view to test, repeatable (default: every single-field view, "
    "e.g. premise_only and hypothesis_only).",
)
@click.option(
    "--field-map",
    multiple=True,
    metavar="CANONICAL=COLUMN",
    help="Map a source column to a canonical field, repeatable "
    "(e.g. --field-map premise=sentence1).",
)
@click.option(
    "--format",
    "fmt",
    default=None,
    help="Input format if the suffix does not say: jsonl, json, csv, tsv, parquet, squad.",
)
@click.option(
    "--folds",
    type=int,
    default=5,
    show_default=True,
    help="Folds for out-of-fold scoring when --eval is not given.",
)
@click.option(
    "--n-resamples",
    type=int,
    default=1000,
    show_default=True,
    help="Bootstrap resamples for the 95% intervals.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Random seed.")
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Run directory (default: runs/leakage-<timestamp>).",
)
def leakage(
    data: Path,
    task: str,
    eval_path: Path | None,
    features: str,
    probe: str,
    conditions: tuple[str, ...],
    field_map: tuple[str, ...],
    fmt: str | None,
    folds: int,
    n_resamples: int,
    seed: int,
    out: Path | None,
) -> None:
    """Measure partial-input (single-sentence) label leakage of DATA.

    Trains probes on the full input (PSC) and on each partial input (SSC, e.g.
    hypothesis-only) and reports A_PSC, A_SSC, the majority baseline, Delta_maj,
    %R_R, NBA and NBR (PECO paper Sec. 2-3.1) with bootstrap 95% intervals, plus
    per-example predictions and the most leaky examples.
    """
    from spurious.data import load_dataset
    from spurious.detectors import PartialInput
    from spurious.run import dataset_entry, run_detectors

    t0 = time.perf_counter()
    fmap = _parse_field_map(field_map)
    train = load_dataset(data, task, field_map=fmap, format=fmt)
    ev = None
    if eval_path is not None:
        ev = load_dataset(
            eval_path, task, field_map=fmap, format=fmt, label_names=train.label_names
        )
    det = PartialInput(
        features=features,
        probe=probe,
        conditions=list(conditions) or None,
        n_folds=folds,
        n_resamples=n_resamples,
        random_state=seed,
    )
    # Validate everything cheap before creating the output directory.
    det.validate_params()
    out = out or _default_out("leakage")
    results = run_detectors([det], train, ev, out=out, progress=True)
    res = results["partial_input"]
    if res.status != "ok":
        click.secho(f"error: {res.error}", fg="red", err=True)
    _leakage_table(res)
    datasets = {"train": dataset_entry(train, os.fspath(data))}
    if ev is not None:
        datasets["eval"] = dataset_entry(ev, os.fspath(eval_path))
    _finish_run(
        out,
        results=results,
        config={"partial_input": det.params_for_json(), "field_map": fmap},
        seed=seed,
        datasets=datasets,
        timings={"total_s": time.perf_counter() - t0},
    )
    if res.status != "ok":
        sys.exit(1)


@main.command()
@click.argument("run_dir", type=click.Path(path_type=Path, exists=True, file_okay=False))
def report(run_dir: Path) -> None:
    """(Re)render RUN_DIR/report.html from the results saved in RUN_DIR."""
    from spurious.report import render_report

    click.echo(f"report: {render_report(run_dir)}")


@main.command("detectors")
def list_detectors() -> None:
    """List the registered detectors, their inputs and metrics."""
    from spurious.detectors import REGISTRY

    for name, cls in sorted(REGISTRY.items()):
        click.secho(name, bold=True)
        click.echo(f"  {cls.description}")
        click.echo(f"  requires: {', '.join(cls.requires) or '-'}")
        for metric, doc in cls.metric_docs.items():
            click.echo(f"    {metric}: {doc}")


# Commands defined in their own modules (they import the helpers above lazily).
from spurious.cli_aflite import aflite  # noqa: E402
from spurious.cli_bias import bias, resample  # noqa: E402

main.add_command(aflite)
main.add_command(bias)
main.add_command(resample)

if __name__ == "__main__":  # pragma: no cover
    main()
