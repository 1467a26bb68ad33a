"""Report section of the AFLite analysis (adversarial filtering).

Shows the size of the filtered set per round, the predictability histogram, the stage
breakdown of evaluation-set mode (paper 004, Fig. 1), the size-matched baselines
(paper 000, Sec. 4.2) and a few removed and kept examples (dataset text, escaped).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from markupsafe import Markup
from matplotlib.figure import Figure

from spurious.report import plots
from spurious.report.components import (
    Cell,
    Plot,
    Stat,
    example_table,
    figure_block,
    finite,
    format_number,
    full_table_href,
    html_table,
    kv_table,
    metrics_table,
    render_fragment,
    scores_preview,
    stat_block,
)
from spurious.report.sections import Section, register_section, result_section
from spurious.results import Result

__all__ = ["aflite_section", "size_per_round_plot"]

_STAGE_LABELS = {
    "filtered_first_round": "filtered in the first round",
    "filtered_later_round": "filtered in later rounds",
    "af_selected": "AF-selected (kept)",
}


@plots.styled
def size_per_round_plot(
    sizes: Sequence[float],
    *,
    eval_sizes: Sequence[float] | None = None,
    target: float | None = None,
) -> str | None:
    """Line plot of |S| (and |R| in evaluation-set mode) after each round.

    Parameters
    ----------
    sizes : sequence of int
        ``[|D|, |S| after round 1, ...]``.
    eval_sizes : sequence of int, optional
        ``[|D_V|, |R| after round 1, ...]``.
    target : float, optional
        n, drawn as a dashed line.

    Returns
    -------
    str or None
        A ``data:`` URI, or ``None`` without data.

    Examples
    --------
    >>> size_per_round_plot([100, 80, 70], eval_sizes=[50, 20, 18]).startswith("data:")
    True
    """
    ys = plots.to_float_array(sizes)
    if not ys.size or not np.isfinite(ys).any():
        return None
    palette = plots.PALETTE
    fig = Figure(figsize=(4.6, 3.2))
    ax = fig.add_subplot()
    x = np.arange(ys.size)
    ax.plot(x, ys, marker="o", markersize=3, color=palette["full"], label="training set |S|")
    if eval_sizes:
        ev = plots.to_float_array(eval_sizes)
        ax.plot(np.arange(ev.size), ev, marker="s", markersize=3,
                color=palette["partial"], label="evaluation set |R|")  # fmt: skip
    if target is not None:
        ax.axhline(target, color=palette["baseline"], linestyle="--", linewidth=1.2,
                   label=f"target n = {target:,.0f}")  # fmt: skip
    ax.set_xlabel("round (0 = before filtering)")
    ax.set_ylabel("examples")
    ax.set_ylim(bottom=0)
    ax.yaxis.grid(True, color=palette["grid"], zorder=0)
    ax.legend(loc="best", fontsize=8, frameon=False)
    if ys.size <= 12:
        ax.set_xticks(x)
    return plots.figure_to_data_uri(fig)


def _figures(result: Result) -> Markup:
    d = result.details or {}
    uri = plots.safe_plot(
        size_per_round_plot,
        d.get("sizes") or [],
        eval_sizes=d.get("eval_sizes") if d.get("mode") == "eval" else None,
        target=finite(d.get("target_size")) if d.get("mode") != "eval" else None,
    )
    figures = [
        Plot(uri, "Examples remaining after each round.", "Examples remaining after each round.")
    ]
    tau = finite(d.get("tau"))
    figures.append(
        Plot(
            plots.score_column_histogram(
                result.scores,
                "aflite_score",
                flag_column="is_aflite_issue",
                xlabel="predictability p (last round scored)",
            ),
            "Histogram of per-example predictability.",
            "Predictability p: the fraction of held-out predictions equal to the gold "
            "label, in the last round each example was scored; flagged = removed"
            + (f" (threshold tau = {tau:g})." if tau is not None else "."),
        )
    )
    return figure_block(figures)


def _pct(part: Any, whole: Any) -> str:
    a, b = finite(part), finite(whole)
    return f"{a / b:.1%} of {b:,.0f}" if a is not None and b else ""


def _stats(result: Result) -> Markup:
    m, d = result.metrics or {}, result.details or {}
    stats: list[Stat] = []

    def add(label: str, key: str, kind: str = "int", note: str = "") -> None:
        if key in m:
            stats.append(Stat(label, m[key], note, kind))

    if d.get("mode") == "eval":
        add("Evaluation examples", "n_eval")
        add(
            "AF-selected (kept)",
            "n_eval_selected",
            note=_pct(m.get("n_eval_selected"), m.get("n_eval")),
        )
        add("Training examples", "n_initial")
        add("Training examples kept", "n_final", note=_pct(m.get("n_final"), m.get("n_initial")))
    else:
        add("Examples before", "n_initial")
        add("Examples kept", "n_final", note=_pct(m.get("n_final"), m.get("n_initial")))
        add("Removed", "removed_fraction", "percent")
    stop = d.get("stop_reason_text")
    add("Rounds", "n_rounds", note=f"stopped: {stop}" if stop else "")
    return stat_block(stats)


def _stage_table(result: Result) -> Markup:
    d = result.details or {}
    stages = d.get("stages")
    if d.get("mode") != "eval" or not isinstance(stages, Mapping):
        return Markup("")
    counts = {str(k): finite(v) for k, v in stages.items()}
    total = sum(v for v in counts.values() if v is not None) or 1.0
    # Stored JSON sorts keys: show the stages in the order an example passes them.
    order = [k for k in _STAGE_LABELS if k in counts]
    order += [k for k in counts if k not in _STAGE_LABELS]
    rows = [
        [_STAGE_LABELS.get(k, k), counts[k], format_number(counts[k] / total, "percent")]
        for k in order
        if counts[k] is not None
    ]
    return render_fragment(
        """<h4>Evaluation examples by stage</h4>
<p class="muted">Classifiers were trained on the training set only; every round, all remaining
evaluation examples with p &ge; tau were filtered (paper 004, App. A, Fig. 1).</p>{{ t }}""",
        t=html_table(["stage", "examples", "share"], rows, css="compact"),
    )


def _rounds_table(result: Result) -> Markup:
    d = result.details or {}
    rounds = [r for r in d.get("rounds") or [] if isinstance(r, Mapping)]
    if not rounds:
        return render_fragment('<p class="muted">No filtering round was run.</p>')
    eval_mode = d.get("mode") == "eval"
    headers: list[Any] = [
        "round",
        ("|S| before", "training examples entering the round"),
        ("p ≥ tau", "examples of S whose predictability reached tau"),
        ("removed", "examples of S removed this round (at most k)"),
        ("|S| after", ""),
        ("mean p", "mean predictability of S this round"),
    ]
    if eval_mode:
        headers += [
            ("|R| before", "evaluation examples entering the round"),
            ("eval removed", "evaluation examples with p >= tau (no k limit)"),
            ("mean p (eval)", ""),
        ]
    rows = []
    for r in rounds:
        row = [r.get(k) for k in ("round", "n_before", "n_above_tau", "n_removed", "n_after")]
        row.append(finite(r.get("mean_p")))
        if eval_mode:
            row += [r.get("n_eval_before"), r.get("n_eval_removed"), finite(r.get("mean_p_eval"))]
        rows.append(row)
    return render_fragment("<h4>Rounds</h4>{{ t }}", t=html_table(headers, rows, css="compact"))


def _evidence(result: Result) -> Markup:
    """What the verdict rests on: each representation's round 1 predictability against
    shuffled labels (issue 19 item 1)."""
    ev = (result.details or {}).get("predictability")
    if not isinstance(ev, Mapping):
        return Markup("")
    tau = ev.get("tau")
    rows = []
    entries: list[tuple[str, Any, str]] = [("the representation AFLite filters with",
                                            ev.get("main"), "learnability")]  # fmt: skip
    for b in ev.get("baselines") or []:
        if isinstance(b, Mapping):
            role = "verdict" if b.get("key") == ev.get("chosen") else "baseline"
            entries.append((str(b.get("description", b.get("key"))), b, role))
    for name, row, role in entries:
        if not isinstance(row, Mapping):
            continue
        interval = f"[{format_number(row.get('ci_low'))}, {format_number(row.get('ci_high'))}]"
        rows.append(
            [
                name,
                role,
                finite(row.get("share")),
                finite(row.get("share_null")),
                finite(row.get("effect")),
                interval,
            ]
        )
    why = ev.get("no_baseline_reason")
    note = (
        "Predictability says that the label is learnable from an input; it is read as a "
        "shortcut only for an input that should not suffice for the task (a partial input, "
        "or a representation named as baseline_features), beyond shuffled labels."
    )
    if why:
        note += f" No baseline here: {why}."
    headers: list[Any] = [
        "input",
        ("role", "learnability: reported, not judged; verdict: the baseline the card rests on"),
        (f"p ≥ {tau}", "share of examples predictable in round 1"),
        ("shuffled labels", "the same share with shuffled labels, same partitions"),
        ("beyond null", "difference of the two shares"),
        ("95% interval", "bootstrap over examples"),
    ]
    return render_fragment(
        """<h4>Predictability against shuffled labels</h4>
<p class="muted">{{ note }}</p>{{ t }}""",
        note=note,
        t=html_table(headers, rows, css="compact"),
    )


def _baselines(result: Result) -> Markup:
    b = (result.details or {}).get("baselines")
    if not isinstance(b, Mapping) or not b:
        return Markup("")
    rows = []
    for name, info in b.items():
        info = info if isinstance(info, Mapping) else {}
        rows.append([name.replace("_", " "), info.get("size"), info.get("of"), info.get("how")])
    return render_fragment(
        """<h4>Size-matched baselines</h4>
<p class="muted">Compare models trained or evaluated on the filtered set with these subsets of
the same size (paper 000, Sec. 4.2); the accuracy comparisons are run separately.</p>{{ t }}""",
        t=html_table(["baseline", "size", "of", "how"], rows, css="compact"),
    )


def _examples(result: Result, key: str, title: str, note: str) -> Markup:
    raw = (result.details or {}).get(key)
    examples = [e for e in raw if isinstance(e, Mapping)] if isinstance(raw, list) else []
    if not examples:
        return Markup("")
    fixed = ("id", "label", "aflite_score", "removed_round")
    text_cols = [str(f) for f in (result.details or {}).get("text_fields") or []]
    for e in examples:
        text_cols += [str(k) for k in e if k not in fixed and str(k) not in text_cols]
    headers: list[Any] = ["id", *text_cols, "gold label", ("p", "predictability"), "round"]
    rows = []
    for e in examples:
        rnd = e.get("removed_round")
        rows.append(
            [
                e.get("id"),
                *(e.get(c) for c in text_cols),
                Cell(text=str(e.get("label", "")), css="label"),
                finite(e.get("aflite_score")),
                "kept" if rnd is None or rnd == -1 else rnd,
            ]
        )
    return example_table(
        headers,
        rows,
        text_columns=["id", *text_cols],
        title=title,
        note=note,
        full_table=full_table_href(result),
    )


@register_section("aflite")
def aflite_section(result: Result) -> Section:
    """:data:`~spurious.report.sections.SectionRenderer` of AFLite.

    Sizes per round, predictability, stages, baselines and examples; missing metrics or
    details are skipped, so a partially filled result still renders.

    Examples
    --------
    >>> import pandas as pd
    >>> r = Result("aflite", pd.DataFrame({"id": ["a"], "aflite_score": [0.9],
    ...            "is_aflite_issue": [True]}), {"n_initial": 10.0, "n_final": 6.0},
    ...            details={"sizes": [10, 6], "rounds": [], "stop_reason_text": "tau"})
    >>> "Examples kept" in aflite_section(r).html_body
    True
    """
    d = result.details or {}
    eval_mode = d.get("mode") == "eval"
    extra = {
        "All metrics": metrics_table(result.metrics or {}),
        "Per-example scores (first rows)": scores_preview(result.scores),
    }
    for key, title in (("featurizer", "Featurizer"), ("model", "Model family")):
        if isinstance(d.get(key), Mapping) and d[key]:
            extra[title] = kv_table(d[key])
    who = "evaluation examples" if eval_mode else "examples"
    return result_section(
        result,
        _stats(result),
        _figures(result),
        _evidence(result),
        _stage_table(result),
        _rounds_table(result),
        _baselines(result),
        _examples(
            result,
            "removed_examples",
            f"Removed {who}",
            "The earliest removed, most predictable first.",
        ),
        _examples(result, "kept_examples", f"Kept {who}", "A random sample of what AFLite kept."),
        title="aflite — adversarial filtering" + (" (evaluation set)" if eval_mode else ""),
        extra=extra,
    )
