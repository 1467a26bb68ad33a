"""``spurious audit`` (every applicable analysis, one report) and ``spurious run --config``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from spurious.cli import options, output


def parse_set(items: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """``("aflite.n_partitions=16", ...)`` -> ``{"aflite": {"n_partitions": 16}}``.

    Values are read as YAML scalars/lists (``16`` is an int, ``0.5`` a float, ``none``
    is None, ``[a, b]`` a list); anything else stays a string.
    """
    import yaml

    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        name, dot, param = key.partition(".")
        if not sep or not dot or not name or not param:
            raise click.BadParameter(
                f"expected ANALYSIS.PARAM=VALUE (e.g. aflite.n_partitions=16); got {item!r}",
                param_hint="--set",
            )
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        out.setdefault(name.strip(), {})[param.strip()] = value
    return out


def fail_on_option(f: Any) -> Any:
    """``--fail-on LEVEL``: the CI gate (exit 3 when a finding reaches LEVEL)."""
    return click.option(
        "--fail-on",
        "fail_on",
        type=click.Choice(["low", "moderate", "medium", "high"], case_sensitive=False),
        default=None,
        help="CI gate: exit with status 3 when any finding reaches this severity (medium = "
        "moderate); the findings are printed. Status 1 (an analysis failed) and 2 (bad "
        "input) take precedence. Severities rest on 95% intervals or null tests.",
    )(f)


@click.command()
@options.data_argument()
@click.argument("extra_predictions", nargs=-1, type=options.INPUT_FILE)
@options.task_option(mcq=True)
@options.input_options
@options.eval_option(
    "Held-out evaluation split: probes train on DATA and are scored here; predictions "
    "(--predictions) are for this split."
)
@options.predictions_option(
    "A model's predictions on the evaluation split (or on DATA without --eval): "
    "SQuAD {id: answer} JSON, or JSONL/CSV/TSV with id and prediction. Repeatable; "
    "files after the first (e.g. from a shell glob) are taken too. Enables prediction bias."
)
@options.strict_predictions_option
@options.prediction_file_options
@options.file_opt(
    "--annotations",
    "Per-example annotations of the judged split (JSONL: 'annotator_labels' lists or "
    "ChaosNLI 'label_counter'), matched by id, else by text.",
    kind="annotations",
)
@options.min_annotation_match_option
@options.attributes_option
@options.opt(
    "--quick",
    "The quick profile: bounded budgets for a first look (about a minute for 10k pairs on "
    "2 CPU cores); the default is the full profile.",
    is_flag=True,
)
@options.opt(
    "--features",
    "Representation shared by every analysis that uses one: minilm | tfidf | bow | a "
    "local Hugging Face model directory; multiple choice: minilm | lexical (the option "
    "cues alone, no encoder). Default: minilm, except lexical for --task mcq --quick (a "
    "cold MiniLM encoding of MMLU's 70k questions and options alone takes minutes on 2 "
    "cores).",
    default=None,
)
@options.opt("--only", "Run only these analyses (repeatable).", multiple=True, metavar="ANALYSIS")
@options.opt("--skip", "Leave out these analyses (repeatable).", multiple=True, metavar="ANALYSIS")
@options.set_option(
    "Set one parameter of one analysis, repeatable (e.g. --set aflite.n_partitions=32)."
)
@options.opt(
    "--executor",
    "Where the heavy steps run (the encoding, AFLite's partitions, out-of-fold fits, "
    "cartography's null trainings, minority's clusterings): here, or on a Ray cluster "
    "(pip install 'spurious[ray]'); same results either way.",
    type=click.Choice(["local", "ray"]),
    default="local",
)
@options.opt(
    "--ray-address",
    "Address of a running Ray cluster (HOST:6379, after 'ray start --head' there), with "
    "--executor ray; without it, Ray starts on this machine.",
)
@options.opt(
    "--device",
    "Where the model-based steps run (the encoder, AFLite's classifiers, the "
    "partial-input probes, the fast paths' MLPs of dynamics, cartography and minority): "
    "auto is a GPU when torch sees one, else the CPU; cpu, cuda or cuda:N pins them. "
    "Results agree across devices to float rounding, not bit for bit.",
    default="auto",
    metavar="DEVICE",
)
@options.seed_option()
@fail_on_option
@options.opt(
    "--canary",
    "After the audit, plant shortcuts of graded strength into copies of DATA and measure "
    "from which strength each analysis detects them, with the audit's analyses, "
    "parameters and seed (as 'spurious canary'; docs/methods/canary.md). Written to "
    "OUT/canary/ and shown in the report; the exit status and --fail-on read the audit's "
    "own results only. It re-runs the analyses once per planted copy (17 times for a "
    "two-field task with the default rates): pair it with --quick or --only.",
    is_flag=True,
)
@options.opt(
    "--canary-rate",
    "With --canary: share of the label's examples that carry a plant, in (0, 1], "
    "repeatable (default: 0.005 0.02 0.05 0.2).",
    dest="canary_rates",
    type=click.FloatRange(0, 1, min_open=True),
    multiple=True,
    metavar="RATE",
)
@options.opt(
    "--canary-background",
    "With --canary: plant into the same texts with permuted labels (shuffled, the "
    "default: no real shortcut is left, so the unplanted copy is clean and every "
    "detection is decided) or into the data as they are (own: where the audit already "
    "flags the data, a plant can only escalate the verdict).",
    type=click.Choice(["shuffled", "own"]),
    default=None,
)
@options.out_option("audit")
def audit(
    data: Path,
    extra_predictions: tuple[Path, ...],
    task: str,
    field_map: tuple[str, ...],
    fmt: str | None,
    eval_path: Path | None,
    predictions: tuple[Path, ...],
    annotations: Path | None,
    attributes: Path | None,
    quick: bool,
    features: str | None,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    overrides: tuple[str, ...],
    executor: str,
    ray_address: str | None,
    device: str,
    seed: int,
    fail_on: str | None,
    canary: bool,
    canary_rates: tuple[float, ...],
    canary_background: str | None,
    out: Path | None,
    force: bool,
) -> None:
    """Audit DATA for shortcuts: every analysis the inputs allow, one report.

    Picks every registered analysis whose requirements the inputs meet (partial-input
    leakage and AFLite need labels; prediction bias needs --predictions; ...), runs
    them on shared inputs (the representation is computed once), and writes one run
    directory whose report opens with one card per analysis: its headline figure and a
    verdict in words. Analyses whose requirements are not met are listed with the reason.

    \b
    Examples:
      spurious audit dev.jsonl --task nli --quick
      spurious audit train.jsonl --task nli --eval dev.jsonl --out runs/audit
      spurious audit dev-v1.1.json --task qa --predictions preds/*.json
      spurious audit mmlu/test/ --task mcq --quick   # a folder of MMLU subject CSVs
      spurious audit dev.jsonl --task nli --quick --fail-on moderate   # CI gate
      spurious audit train.jsonl --task nli --quick --canary   # what would it detect?
      spurious audit train.jsonl --task nli --executor ray --ray-address head:6379
    """
    from spurious.models.runtime.hardware import check_device
    from spurious.runner import audit_plan

    _check_canary_options(task, canary, canary_rates, canary_background)
    check_device(device, "--device")
    ex = _executor_spec(executor, ray_address)
    profile = "quick" if quick else "full"
    if features is None:
        features = "lexical" if task == "mcq" and quick else "minilm"
    shared: dict[str, Any] = {"features": features}
    if ex != "local":  # every analysis with an executor parameter, and the run's own
        shared["executor"] = ex
    plan = audit_plan(
        profile=profile,
        seed=seed,
        only=only,
        skip=skip,
        overrides=parse_set(overrides),
        shared=shared,
        task=task,
    )
    config = {
        "inputs": options.run_inputs(
            data,
            task,
            fmt=fmt,
            field_map=field_map,
            eval=eval_path,
            predictions=(*predictions, *extra_predictions),
            attributes=attributes,
            annotations=annotations,
        ),
        "analyses": plan,
        "seed": seed,
        "profile": profile,
        **({"executor": ex} if ex != "local" else {}),
        **({"device": device} if device != "auto" else {}),
    }

    def intro(ctx: Any, analyses: Any) -> None:
        what = f"{len(ctx.train):,} examples"
        if ctx.eval is not None:
            what += f" + {len(ctx.eval):,} evaluation examples"
        click.echo(f"audit ({profile}): {what}; analyses: {', '.join(a.name for a in analyses)}")

    run = output.execute(
        config,
        out,
        "audit",
        on_result=output.result_line,
        before_run=intro,
        force=force,
        report=not canary,  # rendered once the canary's files exist
    )
    if not canary:
        output.finish(run, fail_on=_level(fail_on))
        return
    from spurious.report import render_report

    output.summary_table(run.results, run.timings)
    try:
        background = canary_background or "shuffled"
        error = _run_canary(
            run, profile=profile, rates=canary_rates, background=background, seed=seed
        )
    finally:
        run.report = render_report(run.out)
    output.outputs(run)
    # The gate reads the audit's results (run.results) only; a failed canary is a failure
    # (exit 1, as a failed analysis), since OUT/canary/ is missing.
    output.exit_status(run, _level(fail_on), also_failed=[error] if error else [])


def _executor_spec(executor: str, ray_address: str | None) -> Any:
    """``--executor`` / ``--ray-address`` as the config's executor (as ``spurious aflite``
    writes it); a missing Ray fails here, before any work."""
    from spurious.execution import make_executor

    if ray_address is not None and executor != "ray":
        raise click.BadParameter(
            f"{ray_address!r} names a Ray cluster, which only --executor ray uses; got "
            f"--executor {executor}. Add --executor ray, or leave --ray-address out.",
            param_hint="--ray-address",
        )
    spec: Any = executor
    if ray_address:
        spec = {"kind": "ray", "options": {"address": ray_address}}
    make_executor(spec)  # MissingDependencyError naming the extra when Ray is not installed
    return spec


def _check_canary_options(
    task: str, canary: bool, rates: tuple[float, ...], background: str | None
) -> None:
    """Bad canary options stop the audit before anything runs (exit 2)."""
    from spurious.data.tasks import get_task

    if not canary:
        for flag, given in (("--canary-rate", rates), ("--canary-background", background)):
            if given:
                raise click.BadParameter("needs --canary.", param_hint=flag)
    elif not get_task(task).has_labels:
        raise click.BadParameter(
            f"the canary plants shortcuts that point to a label; task {task!r} has no labels.",
            param_hint="--canary",
        )


def _run_canary(
    run: Any, *, profile: str, rates: tuple[float, ...], background: str, seed: int
) -> str | None:
    """``spurious canary`` on the audit's training data with the audit's plan, into
    ``<run>/canary/``. Returns the canary's error, or None: a failure leaves the audit's
    results (already written) alone and makes the exit status 1."""
    from spurious.canary import DEFAULT_RATES, run_canary
    from spurious.utils.io import read_json

    data = run.context.train
    rates = rates or DEFAULT_RATES
    click.echo(
        f"\ncanary ({background} background): {len(data):,} examples; rates: "
        + ", ".join(f"{r:.1%}" for r in rates)
    )
    from spurious.execution import use_executor
    from spurious.models.runtime.hardware import use_device

    try:
        # On the audit's executor, joined once for every planted copy, and its device.
        with use_executor(run.config.get("executor")), use_device(run.config.get("device")):
            result = run_canary(
                data,
                analyses=run.config["analyses"],
                profile=profile,
                rates=rates,
                background=background,
                random_state=seed,
                progress=lambda line: click.echo(f"  {line}", err=True),
            )
    except Exception as e:  # the audit's results stand; the caller reports the error
        return f"canary: {e} (the audit's results are written)"
    # Which run it measured: the report warns when a canary/ folder is from another run.
    result.config["run"] = {
        "created": read_json(run.out / "manifest.json").get("created"),
        "fingerprint": data.fingerprint,
    }
    for name, why in result.skipped.items():
        click.echo(f"skipped {name}: {why}")
    click.echo(result.format_table())
    for line in result.sentences():
        click.echo(line)
    paths = result.save(run.out / "canary")
    click.echo(
        f"canary: took {result.timings.get('total_s', 0):.0f} s; wrote "
        + ", ".join(map(str, paths.values()))
    )
    return None


def _level(fail_on: str | None) -> str | None:
    from spurious.gate import normalise_level

    return None if fail_on is None else normalise_level(fail_on)


@click.command("run")
@options.opt(
    "--config",
    "A run config (JSON or YAML), a run's manifest.json, or a run directory.",
    dest="config_path",
    type=click.Path(path_type=Path, exists=True),
    required=True,
)
@fail_on_option
@options.out_option("run", data_options=False)
def run_command(config_path: Path, fail_on: str | None, out: Path | None, force: bool) -> None:
    """Run (or re-run) the analyses a config describes.

    A run directory's manifest.json holds its config, so this reproduces a run: same
    inputs, same parameters, same numbers.

    \b
    Example:
      spurious run --config runs/audit-20261123/manifest.json --out runs/again
    """
    from spurious.runner import manifest_fingerprints, read_config

    config = read_config(config_path)
    run = output.execute(
        config,
        out,
        "run",
        on_result=output.result_line,
        force=force,
        expected_fingerprints=manifest_fingerprints(config_path),
    )
    output.finish(run, fail_on=_level(fail_on))
