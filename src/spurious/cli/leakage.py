"""``spurious demo`` and ``spurious leakage``: partial-input (single-sentence) label leakage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from spurious.cli import options, output
from spurious.utils.limits import MAX_SYNTHETIC_ROWS


def leakage_table(res: Any) -> None:
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


def _finish(run: Any) -> None:
    leakage_table(run.results["partial_input"])
    output.finish(run)


@click.command()
@options.out_option("demo", data_options=False)
@options.seed_option()
@options.opt(
    "--n",
    "Number of synthetic NLI examples (30 to 1,000,000: both splits need every label).",
    dest="n_examples",
    type=click.IntRange(min=30, max=MAX_SYNTHETIC_ROWS),
    default=3000,
)
@options.opt(
    "--artifact-rate",
    "Fraction of 'contradiction' hypotheses that carry the planted cue word.",
    type=float,
    default=0.6,
)
@options.opt(
    "--features",
    "Featurizer: minilm (offline all-MiniLM-L6-v2), bow, tfidf, or a local model directory.",
    default="minilm",
)
def demo(
    out: Path | None,
    force: bool,
    seed: int,
    n_examples: int,
    artifact_rate: float,
    features: str,
) -> None:
    """Plant an artifact in synthetic NLI data, measure the leakage, write a report.

    The demo needs no data files and no network: it generates template NLI pairs
    where a cue word ("nobody") is added to a fraction of the contradiction
    hypotheses, then shows that a hypothesis-only probe finds it.
    """
    config = {
        "inputs": {
            "synthetic": {
                "generator": "nli_artifacts",
                "n": n_examples,
                "artifact_rate": artifact_rate,
                "random_state": seed,
                "eval_fraction": 0.3,
            }
        },
        "analyses": {"partial_input": {"features": features, "random_state": seed}},
        "seed": seed,
    }

    def intro(ctx: Any, _analyses: Any) -> None:
        planted = ctx.train.frame.attrs.get("synthetic_n_planted")
        click.echo(
            f"demo: {len(ctx.train)} train / {len(ctx.eval)} test synthetic NLI pairs; cue word "
            f"planted in {planted} hypotheses"
        )

    run = output.execute(
        config,
        out,
        "demo",
        on_result=output.result_line,
        before_run=intro,
        force=force,
    )
    _finish(run)


@click.command()
@options.data_argument()
@options.task_option()
@options.eval_option(
    "Evaluation split. Without it, every example is scored by out-of-fold probes (--folds)."
)
@options.opt(
    "--features",
    "bow | tfidf | minilm (offline all-MiniLM-L6-v2) | a local HF model directory.",
    default="tfidf",
)
@options.opt(
    "--probe",
    "logistic (fast PyTorch probe) | sklearn-logistic | linear-svm | mlp.",
    default="logistic",
)
@options.opt(
    "--condition",
    "Partial view to test, repeatable (default: every single-field view, "
    "e.g. premise_only and hypothesis_only).",
    dest="conditions",
    multiple=True,
)
@options.input_options
@options.opt(
    "--folds", "Folds for out-of-fold scoring when --eval is not given.", type=int, default=5
)
@options.opt("--n-resamples", "Bootstrap resamples for the 95% intervals.", type=int, default=1000)
@options.seed_option()
@options.out_option("leakage")
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
    force: bool,
) -> None:
    """Measure partial-input (single-sentence) label leakage of DATA.

    Trains probes on the full input (PSC) and on each partial input (SSC, e.g.
    hypothesis-only) and reports A_PSC, A_SSC, the majority baseline, Delta_maj,
    %R_R, NBA and NBR (PECO paper Sec. 2-3.1) with bootstrap 95% intervals, plus
    per-example predictions and the most leaky examples.
    """
    config = {
        "inputs": options.run_inputs(data, task, fmt=fmt, field_map=field_map, eval=eval_path),
        "analyses": {
            "partial_input": {
                "features": features,
                "probe": probe,
                "conditions": list(conditions) or None,
                "n_folds": folds,
                "n_resamples": n_resamples,
                "random_state": seed,
            }
        },
        "seed": seed,
    }
    run = output.execute(
        config,
        out,
        "leakage",
        on_result=output.result_line,
        force=force,
    )
    _finish(run)
