"""Report section of the AFLite detector (``@register_section("aflite")``).

Shows the size of the filtered set per round, the predictability histogram, the stage
breakdown of evaluation-set mode (paper 004, Fig. 1), the size-matched baselines
(paper 000, Sec. 4.2) and a few removed and kept examples. Every fragment goes through
the autoescaping helpers of :mod:`spurious.report.sections`; dataset text is escaped.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from markupsafe import Markup
from matplotlib.figure import Figure

from spurious.report import plots
from spurious.report.sections import (
    Cell,
    Section,
    details_block,
    format_number,
    html_table,
    kv_table,
    metrics_table,
    provenance_block,
    register_section,
    render_fragment,
    scores_preview,
)
from spurious.results import DetectorResult

logger = logging.getLogger(__name__)

__all__ = ["aflite_section", "size_per_round_plot"]

_STAGE_LABELS = {
    "filtered_first_round": "filtered in the first round",
    "filtered_later_round": "filtered in later rounds",
    "af_selected": "AF-selected (kept)",
}


def _finite(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if np.isfinite(f) else None


@plots._styled
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
    ys = [_finite(s) for s in sizes]
    if not ys or all(v is None for v in ys):
        return None
    fig = Figure(figsize=(4.6, 3.2))
    ax = fig.add_subplot()
    x = np.arange(len(ys))
    ax.plot(x, [np.nan if v is None else v for v in ys], marker="o", markersize=3,
            color=plots.PALETTE["full"], label="training set |S|")  # fmt: skip
    if eval_sizes:
        ev = [np.nan if _finite(v) is None else float(v) for v in eval_sizes]
        ax.plot(np.arange(len(ev)), ev, marker="s", markersize=3,
                color=plots.PALETTE["partial"], label="evaluation set |R|")  # fmt: skip
    if target is not None:
        ax.axhline(target, color=plots.PALETTE["baseline"], linestyle="--", linewidth=1.2,
                   label=f"target n = {target:,.0f}")  # fmt: skip
    ax.set_xlabel("round (0 = before filtering)")
    ax.set_ylabel("examples")
    ax.set_ylim(bottom=0)
    ax.yaxis.grid(True, color=plots.PALETTE["grid"], zorder=0)
    ax.legend(loc="upper right", fontsize=8, frameon=False)
    if len(ys) <= 12:
        ax.set_xticks(x)
    return plots.figure_to_data_uri(fig)


def _figures(result: DetectorResult) -> Markup:
    d = result.details or {}
    figures: list[tuple[str, str, str]] = []
    try:
        uri = size_per_round_plot(
            d.get("sizes") or [],
            eval_sizes=d.get("eval_sizes") if d.get("mode") == "eval" else None,
            target=_finite(d.get("target_size")) if d.get("mode") != "eval" else None,
        )
    except Exception:  # a plot is decoration; the tables carry the numbers
        logger.exception("aflite: size plot failed")
        uri = None
    if uri:
        figures.append(
            (uri, "Examples remaining after each round.", "Examples remaining after each round.")
        )
    s = result.scores
    if s is not None and "aflite_score" in s.columns and len(s):
        flagged = s["is_aflite_issue"].to_numpy(dtype=bool) if "is_aflite_issue" in s else None
        try:
            uri = plots.score_histogram(
                s["aflite_score"].to_numpy(),
                flagged=flagged,
                xlabel="predictability p (last round scored)",
            )
        except Exception:
            logger.exception("aflite: histogram failed")
            uri = None
        if uri:
            tau = _finite(d.get("tau"))
            figures.append(
                (
                    uri,
                    "Histogram of per-example predictability.",
                    "Predictability p: the fraction of held-out predictions equal to the gold "
                    "label, in the last round each example was scored; flagged = removed"
                    + (f" (threshold tau = {tau:g})." if tau is not None else "."),
                )
            )
    if not figures:
        return Markup("")
    return render_fragment(
        """<div class="figures">{% for uri, alt, cap in figures %}
<figure><img src="{{ uri }}" alt="{{ alt }}"><figcaption>{{ cap }}</figcaption></figure>
{% endfor %}</div>""",
        figures=figures,
    )


def _stats(result: DetectorResult) -> Markup:
    m, d = result.metrics or {}, result.details or {}
    stats: list[tuple[str, str, str]] = []

    def add(label: str, key: str, kind: str = "int", note: str = "") -> None:
        if key in m:
            stats.append((label, format_number(m[key], kind), note))

    if d.get("mode") == "eval":
        n_eval = m.get("n_eval")
        add("Evaluation examples", "n_eval")
        add("AF-selected (kept)", "n_eval_selected", note=_pct(m.get("n_eval_selected"), n_eval))
        add("Training examples", "n_initial")
        add("Training examples kept", "n_final", note=_pct(m.get("n_final"), m.get("n_initial")))
    else:
        add("Examples before", "n_initial")
        add("Examples kept", "n_final", note=_pct(m.get("n_final"), m.get("n_initial")))
        add("Removed", "removed_fraction", "percent")
    stop = d.get("stop_reason_text")
    add("Rounds", "n_rounds", note=f"stopped: {stop}" if stop else "")
    if not stats:
        return Markup("")
    return render_fragment(
        """<dl class="stats">{% for label, value, note in stats %}
<div class="stat"><dt>{{ label }}</dt><dd><span class="stat-value">{{ value }}</span>
{%- if note %}<span class="stat-note">{{ note }}</span>{% endif %}</dd></div>
{% endfor %}</dl>""",
        stats=stats,
    )


def _pct(part: Any, whole: Any) -> str:
    a, b = _finite(part), _finite(whole)
    return f"{a / b:.1%} of {b:,.0f}" if a is not None and b else ""


def _stage_table(result: DetectorResult) -> Markup:
    d = result.details or {}
    stages = d.get("stages")
    if d.get("mode") != "eval" or not isinstance(stages, Mapping):
        return Markup("")
    total = sum(float(v) for v in stages.values() if _finite(v) is not None) or 1.0
    # Stored JSON sorts keys: show the stages in the order an example passes them.
    order = [k for k in _STAGE_LABELS if k in stages]
    order += [str(k) for k in stages if k not in _STAGE_LABELS]
    rows = [
        [
            _STAGE_LABELS.get(k, k),
            _finite(stages[k]),
            format_number(_finite(stages[k]) / total, "percent"),
        ]
        for k in order
        if _finite(stages[k]) is not None
    ]
    return render_fragment(
        """<h4>Evaluation examples by stage</h4>
<p class="muted">Classifiers were trained on the training set only; every round, all remaining
evaluation examples with p &ge; tau were filtered (paper 004, App. A, Fig. 1).</p>{{ t }}""",
        t=html_table(["stage", "examples", "share"], rows, css="compact"),
    )


def _rounds_table(result: DetectorResult) -> Markup:
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
        row.append(_finite(r.get("mean_p")))
        if eval_mode:
            row += [r.get("n_eval_before"), r.get("n_eval_removed"), _finite(r.get("mean_p_eval"))]
        rows.append(row)
    return render_fragment("<h4>Rounds</h4>{{ t }}", t=html_table(headers, rows, css="compact"))


def _baselines(result: DetectorResult) -> Markup:
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


def _examples(result: DetectorResult, key: str, title: str, note: str) -> Markup:
    raw = (result.details or {}).get(key)
    examples = [e for e in raw if isinstance(e, Mapping)] if isinstance(raw, list) else []
    if not examples:
        return Markup("")
    fixed = ("id", "label", "aflite_score", "removed_round")
    text_cols = [str(f) for f in (result.details or {}).get("text_fields") or []]
    for e in examples:
        text_cols += [k for k in e if k not in fixed and k not in text_cols]
    headers: list[Any] = ["id", *text_cols, "gold label", ("p", "predictability"), "round"]
    rows = []
    for e in examples:
        rnd = e.get("removed_round")
        rows.append(
            [
                e.get("id"),
                *(e.get(c) for c in text_cols),
                Cell(text=str(e.get("label", "")), css="label"),
                _finite(e.get("aflite_score")),
                "kept" if rnd is None or rnd == -1 else rnd,
            ]
        )
    return render_fragment(
        '<h4>{{ title }}</h4><p class="muted">{{ note }}</p>{{ t }}',
        title=title,
        note=note,
        t=html_table(headers, rows, css="examples", wide=True),
    )


@register_section("aflite")
def aflite_section(result: DetectorResult) -> Section:
    """Section for AFLite: sizes per round, predictability, stages, baselines, examples.

    Missing metrics or details are skipped, so a partially filled result still renders.

    Parameters
    ----------
    result : DetectorResult

    Returns
    -------
    Section

    Examples
    --------
    >>> import pandas as pd
    >>> r = DetectorResult("aflite", pd.DataFrame({"id": ["a"], "aflite_score": [0.9],
    ...                    "is_aflite_issue": [True]}), {"n_initial": 10.0, "n_final": 6.0},
    ...                    details={"sizes": [10, 6], "rounds": [], "stop_reason_text": "tau"})
    >>> "Examples kept" in aflite_section(r).html_body
    True
    """
    d = result.details or {}
    eval_mode = d.get("mode") == "eval"
    extra = [
        details_block("All metrics", metrics_table(result.metrics or {})),
        details_block("Per-example scores (first rows)", scores_preview(result.scores)),
        details_block("Parameters", kv_table(result.params or {})),
    ]
    for key, title in (("featurizer", "Featurizer"), ("model", "Model family")):
        if isinstance(d.get(key), Mapping) and d[key]:
            extra.append(details_block(title, kv_table(d[key])))
    extra.append(details_block("Provenance", provenance_block(result)))
    who = "evaluation examples" if eval_mode else "examples"
    body = render_fragment(
        """{% if s %}<p class="summary">{{ s }}</p>{% endif %}
{{ stats }}{{ figs }}{{ stages }}{{ rounds }}{{ baselines }}{{ removed }}{{ kept }}{{ more }}""",
        s=result.summary,
        stats=_stats(result),
        figs=_figures(result),
        stages=_stage_table(result),
        rounds=_rounds_table(result),
        baselines=_baselines(result),
        removed=_examples(
            result,
            "removed_examples",
            f"Removed {who}",
            "The earliest removed, most predictable first.",
        ),
        kept=_examples(
            result,
            "kept_examples",
            f"Kept {who}",
            "A random sample of what AFLite kept.",
        ),
        more=Markup("").join(extra),
    )
    title = "aflite — adversarial filtering" + (" (evaluation set)" if eval_mode else "")
    return Section(title=title, html_body=body, summary=result.summary)
