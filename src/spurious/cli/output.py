"""What the CLI prints: one line per result as it arrives, a summary table, the outputs."""

from __future__ import annotations

import shutil
import sys
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any

import click

_COLOURS = {"ok": "green", "failed": "red", "skipped": "yellow"}
#: Lines of a finding in the summary table before it is shortened.
_MAX_FINDING_LINES = 3
_SEVERITY_MARK = {"high": "!!!", "moderate": "!!", "low": "!", "none": "-", "info": ""}


def execute(config: dict[str, Any], out: Any, command: str, **kwargs: Any) -> Any:
    """Run ``config`` through the one lifecycle, into ``out`` or ``runs/<command>-<time>``.

    A command whose analyses cannot use the inputs at all computes nothing: it stops
    before writing, with every reason (exit 2), instead of a run of skipped results.
    """
    from spurious.cli.options import default_out
    from spurious.runner import execute as run_config

    kwargs.setdefault("refuse_empty", True)
    return run_config(
        config, out=out or default_out(command), command=["spurious", *sys.argv[1:]], **kwargs
    )


def result_line(res: Any) -> None:
    """``[name] status: summary`` as soon as an analysis finishes."""
    click.secho(f"[{res.analysis}] {res.status}: ", fg=_COLOURS.get(res.status), nl=False)
    kept = " (kept from the interrupted run)" if getattr(res, "resumed", False) else ""
    click.echo((res.summary if res.status == "ok" else res.error or res.summary) + kept)


def summary_table(results: Mapping[str, Any], timings: Mapping[str, float] | None = None) -> None:
    """A compact table: analysis, status, time, headline and verdict (terminal width).

    An analysis' time is its own: shared inputs it happened to build first (an encoding,
    training dynamics) are listed after the table from the run's ``timings``
    (``artifact:<kind>:<config>_s``), once each.
    """
    if not results:
        return
    width = max(60, min(shutil.get_terminal_size((120, 20)).columns, 160))
    name_w = max(8, *(len(n) for n in results)) + 1
    click.echo("")
    click.secho(f"{'analysis':<{name_w}} {'status':<8} {'time':>7}  finding", bold=True)
    for name, res in results.items():
        secs = res.provenance.timings.get("total_s")
        shared = res.provenance.timings.get("shared_artifacts_s") or 0.0
        t = f"{max(secs - shared, 0.0):.1f}s" if isinstance(secs, int | float) else "-"
        head = res.headline or {}
        if res.status == "ok":
            finding = head.get("text") or res.summary
            verdict = head.get("verdict")
            mark = _SEVERITY_MARK.get(head.get("severity", ""), "")
            if verdict:
                finding = f"{mark} {verdict}: {finding}".strip()
        else:
            finding = res.error or res.summary
        # Wrapped at word boundaries, never cut inside a number; at most three lines.
        room = max(20, width - name_w - 19)
        lines = textwrap.wrap(finding, room, break_on_hyphens=False) or [""]
        if len(lines) > _MAX_FINDING_LINES:
            lines = [*lines[: _MAX_FINDING_LINES - 1], lines[_MAX_FINDING_LINES - 1] + " …"]
        click.echo(f"{name:<{name_w}} ", nl=False)
        click.secho(f"{res.status:<8}", fg=_COLOURS.get(res.status), nl=False)
        click.echo(f" {t:>7}  {lines[0]}")
        for line in lines[1:]:
            click.echo(f"{'':<{name_w + 19}}{line}")
    _shared_lines(timings or {}, name_w)
    marks = [f"{m} {sev}" for sev, m in _SEVERITY_MARK.items() if m]
    legend = (
        f"marks: {', '.join(marks)} (the verdict's severity: from an interval's lower bound "
        "or a test against a null; docs/run-directory.md)"
    )
    click.echo("\n".join(textwrap.wrap(legend, width)))


def _shared_lines(timings: Mapping[str, float], name_w: int) -> None:
    """One line per shared input that took over a second: built once, read by many."""
    shared = {k[len("artifact:") : -2]: v for k, v in timings.items() if k.startswith("artifact:")}
    slow = {k: v for k, v in shared.items() if v >= 1.0}
    if not slow:
        return
    click.secho("shared inputs (built once per run; not in the times above):", bold=True)
    for key, secs in sorted(slow.items(), key=lambda kv: -kv[1]):
        kind, _, config = key.partition(":")
        click.echo(f"  {kind:<{name_w + 6}} {secs:>7.1f}s  {config.replace(',', ', ')}")


def outputs(run: Any) -> None:
    """Where the report and the results are."""
    if run.report is not None:
        click.echo(f"report:  {run.report}")
    if run.out is not None:
        click.echo(f"results: {run.out}/<analysis>/metrics.json, scores.parquet")


def exit_status(run: Any, fail_on: str | None = None, also_failed: Sequence[str] = ()) -> None:
    """Exit 1 when an analysis failed (the results of the others are written); with
    ``fail_on``, exit 3 when a finding reaches that severity (the CI gate).

    ``also_failed``: errors of steps beside the analyses (the audit's canary), printed
    and counted as failures (exit 1), since the outputs they promised are missing.
    """
    from spurious.gate import run_findings
    from spurious.schema import GATE_EXIT_CODE

    failed = [n for n, r in run.results.items() if r.status == "failed"]
    for n in failed:
        click.secho(f"error: {n}: {run.results[n].error}", fg="red", err=True)
    for message in also_failed:
        click.secho(f"error: {message}", fg="red", err=True)
    failed += list(also_failed)
    gated = run_findings(run.results, fail_on) if fail_on else []
    for n, head in gated:
        click.secho(
            f"gate: {n}: {head.get('severity')} (--fail-on {fail_on}): "
            f"{head.get('verdict') or ''} {head.get('text') or ''}".rstrip(),
            fg="red",
            err=True,
        )
    if failed:
        sys.exit(1)
    if gated:
        sys.exit(GATE_EXIT_CODE)
    if fail_on:
        click.echo(f"gate: no finding at or above {fail_on}")


def finish(
    run: Any, main: str | None = None, table: Any = None, fail_on: str | None = None
) -> None:
    """After a run: the main result's line and table, the summary, the outputs, the exit code.

    ``main`` names the result whose line (if not printed already) and ``table`` (a
    callable taking the result) come first; commands that print every result as it
    arrives pass ``main=None``.
    """
    if main is not None:
        res = run.results[main]
        result_line(res)
        if res.status == "ok" and table is not None:
            table(res)
    summary_table(run.results, run.timings)
    outputs(run)
    exit_status(run, fail_on)
