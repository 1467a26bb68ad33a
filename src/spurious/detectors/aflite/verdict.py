"""The AFLite verdict (issue 19 item 1): baselines, the shuffled-label null, the headline.

Predictability says that the label is learnable from the representation, which alone is
no shortcut. :func:`baseline_specs` names the inputs that should *not* suffice for the
task (partial-input views, ``baseline_features``); :func:`predictability_evidence`
compares round 1's predictability of the representation and of each baseline with
shuffled labels on round 1's own partitions; :func:`add_evidence` writes that into the
metrics and details, and :func:`aflite_headline` turns it into the report's card.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from spurious.analysis import AnalysisOutput
from spurious.context import RunContext
from spurious.detectors.aflite.algorithm import (
    STREAM_PARTITIONS,
    chunk_partitions,
    make_partition_model,
    round_rng,
    sample_partitions,
)
from spurious.detectors.aflite.baselines import predictability_beyond_null
from spurious.detectors.aflite.checkpoint import FilterState
from spurious.detectors.aflite.prepare import is_array_features
from spurious.exceptions import ParameterError
from spurious.execution import Executor
from spurious.features import PrecomputedFeaturizer
from spurious.results import Headline
from spurious.views import get_view, standard_views

if TYPE_CHECKING:  # the protocol the analysis passing itself satisfies
    from spurious.detectors.aflite.settings import AFLiteSettings


def baseline_specs(af: AFLiteSettings, task: Any) -> tuple[list[tuple[str, Any, Any]], str | None]:
    """``([(key, view, features or None for the main ones)], why none)``.

    ``key == "main"``: the main representation is itself a partial input.
    """
    main = get_view(task, af.view)
    own = af.baseline_features
    if af.baseline_view == "auto":
        if main.is_partial and own is None:
            return [("main", main, None)], None
        views = (
            [v for v in standard_views(task).values() if v.is_partial]
            if len(task.text_fields) > 1 and not main.is_partial
            else []
        )
        if not views and own is None:
            return [], (
                f"task {task.name!r} has one text field, so no partial input; pass "
                "baseline_features= a representation that should not suffice"
            )
    elif af.baseline_view is None:
        views = []
        if own is None:
            return [], "baseline_view=None and no baseline_features"
    else:
        views = [get_view(task, af.baseline_view)]
    views = views or [main]
    if own is None and is_array_features(af.features):
        if af.baseline_view == "auto":
            return [], (
                "the features are a matrix, which has no partial-input view; pass "
                "baseline_features="
            )
        raise ParameterError(
            f"The 'baseline_view' parameter {af.baseline_view!r} needs features of that "
            "view, but 'features' is a matrix; pass baseline_features= as well."
        )
    if own is None and isinstance(af.features, PrecomputedFeaturizer):
        return [], "precomputed features have no partial-input view"
    out = []
    for v in views:
        if v == main and own is None:
            raise ParameterError(
                f"The baseline (view {v.name!r}, the same features) is the representation "
                "AFLite filters with; name another view or baseline_features."
            )
        key = v.name if own is None else f"{v.name}_{spec_name(own)}"
        out.append((key, v, own))
    return out, None


def evidence_bar(af: AFLiteSettings, ctx: RunContext, specs: list[Any], real_fit: bool) -> Any:
    """The progress bar of the shuffled-label check: one step per round of partition fits
    (the representation's shuffles, then each baseline's real and shuffled labels)."""
    from spurious.utils.progress import step_bar

    others = sum(1 for key, *_ in specs if key != "main")
    fits = int(real_fit) + af.n_shuffles + others * (1 + af.n_shuffles)
    return step_bar("aflite: shuffled-label check", fits, enabled=ctx.progress, unit="fit")


def predictability_evidence(
    af: AFLiteSettings,
    ctx: RunContext,
    X_tr: Any,
    y: np.ndarray,
    codes: np.ndarray,
    t: int,
    state: FilterState,
    executor: Executor,
) -> dict[str, Any]:
    """Round 1's predictability against shuffled labels, for the representation and
    for each baseline, on round 1's own partitions (a paired comparison)."""
    task = ctx.train.task
    specs, why = baseline_specs(af, task)
    n = len(ctx.train)  # y holds the evaluation labels after the training ones
    train_idx, excluded = sample_partitions(
        pd.factorize(codes)[0],
        t,
        af.n_partitions,
        round_rng(state.entropy, 1, STREAM_PARTITIONS),
    )
    common: dict[str, Any] = dict(
        n_classes=ctx.train.n_classes,
        tau=af.tau,
        n_shuffles=af.n_shuffles,
        random_state=state.entropy % (2**32),
        executor=executor,
        chunk_size=chunk_partitions(af.n_partitions, af.chunk_size, executor.n_workers,
                                    make_partition_model(af.model, af.random_state)),
    )  # fmt: skip
    p1 = state.train.p_rounds[0] if state.train.p_rounds else None
    bar = evidence_bar(af, ctx, specs, p1 is None)
    common["progress"] = lambda done, total: bar.update(1)
    bar.set_postfix_str(f"{af.view} input")  # the filter's own representation first
    main = predictability_beyond_null(
        X_tr, y[:n], train_idx, excluded, model=af.model, p_real=p1, **common
    )
    out: dict[str, Any] = {"main": evidence_row(main), "baselines": []}
    for key, view, feats in specs:
        bar.set_postfix_str(f"{view.name} input")  # the baseline being fitted
        if key == "main":
            numbers = evidence_row(main)
        else:
            X_b = ctx.features(feats if feats is not None else af.features, view.name)
            numbers = evidence_row(
                predictability_beyond_null(X_b, y[:n], train_idx, excluded, model=af.model,
                                           **common)
            )  # fmt: skip
        # The numbers, then what they were measured on (names, not floats).
        words = {"key": key, "view": view.name, "description": baseline_words(view, feats)}
        out["baselines"].append({**numbers, **words})
    lows = [(b["ci_low"] if b["ci_low"] == b["ci_low"] else -np.inf) for b in out["baselines"]]
    out["chosen"] = out["baselines"][int(np.argmax(lows))]["key"] if lows else None
    out["no_baseline_reason"] = why
    bar.close()
    out.update(tau=af.tau, n_shuffles=af.n_shuffles)
    return out


def evidence_row(res: dict[str, Any]) -> dict[str, float]:
    """The numbers of one :func:`predictability_beyond_null` result the verdict keeps."""
    return {k: float(res[k]) for k in ("share", "share_null", "effect", "ci_low", "ci_high")}


def add_evidence(out: AnalysisOutput, evidence: dict[str, Any] | None) -> None:
    """Metrics and details of the verdict's evidence (see :func:`predictability_evidence`)."""
    if evidence is None:  # n_shuffles=0: no null, no baselines
        out.details["predictability"] = {"no_baseline_reason": "n_shuffles=0: no null was run"}
        return
    m = out.metrics
    main = evidence["main"]
    m["predictable_share"], m["predictable_share_null"] = main["share"], main["share_null"]
    m["predictable_beyond_null"] = main["effect"]
    m["predictable_beyond_null_ci_low"] = main["ci_low"]
    m["predictable_beyond_null_ci_high"] = main["ci_high"]
    for b in evidence["baselines"]:
        key = b["key"]
        m[f"baseline_share_{key}"], m[f"baseline_share_null_{key}"] = b["share"], b["share_null"]
        m[f"baseline_beyond_null_{key}"] = b["effect"]
        m[f"baseline_beyond_null_{key}_ci_low"] = b["ci_low"]
        m[f"baseline_beyond_null_{key}_ci_high"] = b["ci_high"]
        if key == evidence["chosen"]:
            m["shortcut_beyond_null"] = b["effect"]
            m["shortcut_beyond_null_ci_low"] = b["ci_low"]
            m["shortcut_beyond_null_ci_high"] = b["ci_high"]
    out.details["predictability"] = evidence


def aflite_headline(af: AFLiteSettings, result: Any) -> Headline:
    """Predictability, judged as a shortcut only against a baseline that should not
    suffice (a partial input or a weaker representation) and shuffled labels."""
    m, d = result.metrics, result.details
    if af.mode == "eval" and "n_eval" in m:
        share = 1.0 - m["eval_selected_fraction"]
        what = (
            f"{share:.1%} of the {int(m['n_eval']):,} evaluation examples filtered as "
            f"predictable; {int(m['n_eval_selected']):,} AF-selected"
        )
    else:
        rounds = d.get("rounds") or [{}]
        n0 = int(m.get("n_initial", 0))
        share = rounds[0].get("n_above_tau", 0) / n0 if n0 else float("nan")
        what = (
            f"{m.get('removed_fraction', float('nan')):.1%} removed in "
            f"{int(m.get('n_rounds', 0))} round(s) (stop: {d.get('stop_reason_text', '')})"
        )
    evidence = d.get("predictability") or {}
    # Multiple-choice items re-draw their gold among their own options instead.
    null = evidence.get("null", "shuffled labels")
    # The evidence is measured on the training split (what the classifiers learn from).
    unit = "training examples" if af.mode == "eval" else "examples"
    full = (
        f"{m['predictable_share']:.0%} of {unit} predictable (p >= {af.tau}) from the "
        f"{view_words(af.view)} ({null}: {m['predictable_share_null']:.0%})"
        if "predictable_share" in m
        else f"{share:.0%} of {unit} predictable; not compared with shuffled labels"
    )
    chosen = evidence.get("chosen")
    label = "adversarial filtering (AFLite)"
    if not chosen:
        why = evidence.get("no_baseline_reason") or "no baseline was run"
        text = (
            f"{full}: the label is learnable from this representation, which alone is "
            f"not a shortcut ({why}); {what}"
        )
        return af.verdict_scale.headline(
            label,
            m.get("predictable_share", share),
            text,
            measured="share of examples the model family predicts (predictability)",
            severity="info",
        )
    b = next(x for x in evidence["baselines"] if x["key"] == chosen)
    text = (
        f"{b['share']:.0%} of {unit} predictable from {b['description']} ({null}: "
        f"{b['share_null']:.0%}); {full}; {what}"
    )
    return af.verdict_scale.headline(
        label,
        b["effect"],
        text,
        interval=(b["ci_low"], b["ci_high"]),
        null=null,
        measured=f"share of examples predictable (p >= {af.tau}) from {b['description']}, "
        f"an input that should not suffice for the task, minus the share with {null} "
        "(95% bootstrap interval over examples)",
    )


def spec_name(spec: Any) -> str:
    """A featurizer spec as a key fragment (``"bow"``, ``"tfidffeaturizer"``, ...)."""
    name = spec if isinstance(spec, str) else type(spec).__name__
    return "".join(c if c.isalnum() else "_" for c in str(name).lower()).strip("_") or "custom"


def view_words(view: Any) -> str:
    """A view in words (``"hypothesis-only input"``)."""
    name = getattr(view, "name", view)
    if name == "full":
        return "full input"
    return str(name).replace("_only", "-only input").replace("_", " ")


def baseline_words(view: Any, feats: Any) -> str:
    """A baseline in words: its view, and its features when they are its own."""
    words = f"the {view_words(view)}"
    return words if feats is None else f"{words} as {spec_name(feats)} features"
