"""Report section of the partial-input analysis (Saxon et al., Sec. 2.1-2.2 and 3.1).

Shows A_PSC, A_SSC, Δ_maj, %R_R, NBA and NBR with bootstrap intervals (Eqs. 2-8), and
TRA (Eq. 10) when the models were fine-tuned, an accuracy-per-condition plot with a
majority baseline, a histogram of per-example partial-input scores (and of TRA),
per-label accuracy and the most leaky examples. Missing metrics or details are skipped,
so a partially filled result still renders.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from markupsafe import Markup
from matplotlib.figure import Figure

from spurious.report import plots
from spurious.report.components import (
    MISSING,
    Cell,
    Plot,
    Stat,
    as_flags,
    cell_value,
    example_table,
    figure_block,
    finite,
    full_table_href,
    html_table,
    kv_table,
    metric_cell,
    metrics_table,
    render_fragment,
    scores_preview,
    stat_block,
)
from spurious.report.sections import Section, register_section, result_section
from spurious.results import Result

__all__ = ["BarSpec", "accuracy_plot", "partial_input_section"]


# ---------------------------------------------------------------------------------------
# Plot
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BarSpec:
    """One bar of :func:`accuracy_plot`.

    Attributes
    ----------
    label : str
        Tick label (for example the condition name).
    value : float or None
        Bar height; ``None`` draws no bar but keeps the slot.
    low, high : float or None
        Confidence interval; drawn as an error bar when both are finite.
    kind : {"full", "partial"}
        Colour group.
    """

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    kind: str = "partial"


@plots.styled
def accuracy_plot(
    bars: Sequence[BarSpec],
    *,
    baseline: float | None = None,
    baseline_label: str = "majority baseline",
    ylabel: str = "accuracy",
    title: str | None = None,
) -> str | None:
    """Bar chart of accuracies with CI error bars and a dashed baseline line.

    Parameters
    ----------
    bars : sequence of BarSpec
        One bar per condition, drawn in order.
    baseline : float, optional
        Drawn as a dashed horizontal line (for example the majority-class accuracy).
    baseline_label, ylabel, title : str
        Legend entry, y axis label and optional title.

    Returns
    -------
    str or None
        A ``data:`` URI, or ``None`` when no bar has a finite value.

    Examples
    --------
    >>> uri = accuracy_plot([BarSpec("full", 0.8, 0.75, 0.85, "full"),
    ...                      BarSpec("hypothesis_only", 0.6, 0.55, 0.65)], baseline=0.34)
    >>> uri.startswith("data:image/svg+xml")
    True
    """
    values = [finite(b.value) for b in bars]
    if not bars or all(v is None for v in values):
        return None
    baseline = finite(baseline)
    width = max(4.2, 1.1 * len(bars) + 1.6)
    fig = Figure(figsize=(width, 3.2))
    ax = fig.add_subplot()
    x = np.arange(len(bars))
    heights = [v if v is not None else 0.0 for v in values]
    palette = plots.PALETTE
    colors = [palette["full"] if b.kind == "full" else palette["partial"] for b in bars]
    ax.bar(x, heights, width=0.62, color=colors, zorder=2)
    for i, (bar, value) in enumerate(zip(bars, values, strict=True)):
        low, high = finite(bar.low), finite(bar.high)
        if value is None:
            ax.text(i, 0.02, "n/a", ha="center", va="bottom", color=palette["baseline"])
            continue
        top = value
        if low is not None and high is not None:
            # A bootstrap interval need not contain the point estimate; clip so the
            # error bar never gets a negative length.
            yerr = [[max(value - low, 0.0)], [max(high - value, 0.0)]]
            ax.errorbar(
                i, value, yerr=yerr, fmt="none", ecolor="#111827", elinewidth=1.1,
                capsize=4, zorder=3,
            )  # fmt: skip
            top = max(top, high)
        ax.text(i, top + 0.02, f"{value:.3f}", ha="center", va="bottom", fontsize=8)
    if baseline is not None:
        ax.axhline(
            baseline, color=palette["baseline"], linestyle="--", linewidth=1.3, zorder=4,
            label=f"{plots.plain(baseline_label)} ({baseline:.3f})",
        )  # fmt: skip
    ax.set_xticks(x)
    ax.set_xticklabels([plots.plain(b.label) for b in bars], rotation=0 if len(bars) <= 4 else 20)
    finite_values = [v for v in values if v is not None]
    finite_values += [baseline] if baseline is not None else []
    highs = [h for h in (finite(b.high) for b in bars) if h is not None]
    upper = max([*finite_values, *highs, 0.0])
    ax.set_ylim(0.0, 1.05 if upper <= 1.0 else upper * 1.12)
    ax.set_ylabel(plots.plain(ylabel))
    ax.yaxis.grid(True, color=palette["grid"], zorder=0)
    ax.set_axisbelow(True)
    kinds = {b.kind for b in bars}
    handles = [
        plots.legend_patch(palette[k], f"{k} input") for k in ("full", "partial") if k in kinds
    ]
    line_handles, _ = ax.get_legend_handles_labels()
    ax.legend(handles=handles + line_handles, loc="upper right", fontsize=8, frameon=False)
    if title:
        ax.set_title(plots.plain(title), fontsize=10, loc="left")
    return plots.figure_to_data_uri(fig)


# ---------------------------------------------------------------------------------------
# Conditions
# ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Condition:
    key: str
    fields: tuple[str, ...] = ()
    is_partial: bool = True

    @property
    def label(self) -> str:
        return self.key.replace("_", " ")


_PREFIXES = ("accuracy_", "delta_maj_", "recovery_", "nba_", "nbr_", "tra_")
_NON_CONDITION = {"majority_accuracy", "n_train", "n_eval", "n_tra"}
_CI_SUFFIXES = ("_ci_low", "_ci_high")


def _conditions(result: Result) -> list[_Condition]:
    """Conditions from ``details["conditions"]``, else inferred from metric/score names."""
    out: list[_Condition] = []
    seen: set[str] = set()
    for c in (result.details or {}).get("conditions") or []:
        if not isinstance(c, Mapping) or not c.get("view"):
            continue
        key = str(c["view"])
        if key in seen:
            continue
        seen.add(key)
        raw_fields = c.get("fields") or []
        if isinstance(raw_fields, str):
            raw_fields = [raw_fields]
        fields = tuple(str(f) for f in raw_fields)
        out.append(_Condition(key, fields, bool(c.get("is_partial", key != "full"))))
    if out:
        return out
    # Inference: anything with a delta/recovery metric is partial; accuracy_full is full.
    names: list[str] = []
    for k in result.metrics or {}:
        if k in _NON_CONDITION or k.endswith(_CI_SUFFIXES):
            continue
        for prefix in _PREFIXES:
            if k.startswith(prefix):
                names.append(k[len(prefix) :])
                break
    if result.scores is not None:
        names += [c[len("pred_") :] for c in result.scores.columns if str(c).startswith("pred_")]
    for key in names:
        if key and key not in seen:
            seen.add(key)
            out.append(_Condition(key, (), key != "full"))
    return sorted(out, key=lambda c: (c.is_partial, c.key))


def _label_name(value: Any, label_names: Sequence[str]) -> Any:
    """Map an integer class id to its name when the names are known."""
    v = cell_value(value)
    if (
        isinstance(v, numbers.Integral)
        and not isinstance(v, bool)
        and 0 <= int(v) < len(label_names)
    ):
        return label_names[int(v)]
    if isinstance(v, float) and v.is_integer() and 0 <= int(v) < len(label_names):
        return label_names[int(v)]
    return v


# ---------------------------------------------------------------------------------------
# Blocks
# ---------------------------------------------------------------------------------------
_HEADERS = {
    "acc": (Markup("Accuracy <span class='sub'>A<sub>SSC</sub> / A<sub>PSC</sub></span>"),
            "Accuracy on the evaluation split (Eq. 2-3)"),
    "delta": (Markup("Δ<sub>maj</sub>"), "Accuracy minus majority-class accuracy (Eq. 4)"),
    "recovery": (Markup("%R<sub>R</sub>"), "Partial-input accuracy / full-input accuracy (Eq. 5)"),
    "nba": (Markup("NBA"), "Fraction of examples where partial and full models agree (Eq. 7)"),
    "nbr": (Markup("NBR"), "Of the agreeing examples, fraction both classify correctly (Eq. 8)"),
    "tra": (Markup("TRA"), "Token relevance agreement of the fine-tuned partial- and full-input "
            "models: mean cosine of their per-token gradient relevance (Eq. 9-10)"),
}  # fmt: skip

_LEGEND = """<p class="legend">
<strong>A<sub>SSC</sub></strong>: accuracy of a model that sees only the partial input;
<strong>A<sub>PSC</sub></strong>: accuracy with the full input.
<strong>Δ<sub>maj</sub></strong> = A<sub>SSC</sub> − majority-class accuracy (Eq. 4);
<strong>%R<sub>R</sub></strong> = A<sub>SSC</sub> / A<sub>PSC</sub> (Eq. 5);
<strong>NBA</strong>: share of examples where the partial- and full-input models agree (Eq. 7);
<strong>NBR</strong>: of those, the share both classify correctly (Eq. 8).
Brackets give the bootstrap 95% interval. High A<sub>SSC</sub>, Δ<sub>maj</sub> and %R<sub>R</sub>
mean the label leaks through the partial input.</p>"""

_TRA_LEGEND = """<p class="legend">
<strong>TRA</strong> (token relevance agreement, Eq. 9-10): for each example, the gradient
norm of each model's gold-label probability with respect to every input token's embedding,
normalised over the tokens; the partial input's vector is zero-padded to the full input's
positions, and the two are compared by cosine similarity (1 = the same tokens matter to
both models). High TRA means the full-input model relies on the same tokens as the
partial-input one, i.e. it uses the shortcut. With <code>tra_mode="authors"</code> the
gradient is the one of the summed logits with respect to the embedding layer's output, first
token dropped, as in the authors' public code.</p>"""


def _metrics_table(conds: list[_Condition], m: Mapping[str, Any]) -> Markup:
    dash = Cell(text=MISSING, sort="", numeric=True, css="na")
    has_tra = any(f"tra_{c.key}" in m for c in conds)
    keys = ["acc", "delta", "recovery", "nba", "nbr", *(["tra"] if has_tra else [])]
    n_dash = len(keys) - 1
    rows: list[list[Any]] = []
    classes: list[str] = []

    def cond_cell(c: _Condition, note: str | Markup) -> Cell:
        return Cell(
            text=render_fragment(
                '<span class="cond">{{ n }}</span>'
                '{% if f %}<span class="fields">{{ f }}</span>{% endif %}'
                '<span class="role">{{ note }}</span>',
                n=c.label,
                f=" + ".join(c.fields),
                note=note,
            ),
            sort=c.key,
        )

    for c in conds:
        if c.is_partial:
            continue
        rows.append(
            [
                cond_cell(c, Markup("full input, A<sub>PSC</sub>")),
                metric_cell(m, f"accuracy_{c.key}"),
                *[dash] * n_dash,
            ]
        )
        classes.append("full")
    for c in conds:
        if not c.is_partial:
            continue
        k = c.key
        rows.append(
            [
                cond_cell(c, Markup("partial input, A<sub>SSC</sub>")),
                metric_cell(m, f"accuracy_{k}"),
                metric_cell(m, f"delta_maj_{k}", "signed"),
                metric_cell(m, f"recovery_{k}", "percent"),
                metric_cell(m, f"nba_{k}"),
                metric_cell(m, f"nbr_{k}"),
                *([metric_cell(m, f"tra_{k}")] if has_tra else []),
            ]
        )
        classes.append("partial")
    if "majority_accuracy" in m:
        rows.append(
            [
                Cell(
                    text=render_fragment(
                        '<span class="cond">majority baseline</span><span class="role">'
                        "always predict the most frequent training label</span>"
                    ),
                    sort="~majority",
                ),
                metric_cell(m, "majority_accuracy"),
                *[dash] * n_dash,
            ]
        )
        classes.append("baseline")
    if not rows:
        return render_fragment('<p class="muted">No accuracy metrics recorded.</p>')
    return html_table(
        [
            ("Condition", "input the model saw"),
            *(_HEADERS[k] for k in keys),
        ],
        rows,
        row_classes=classes,
        css="metrics pi-metrics",
    ) + render_fragment(_LEGEND + (_TRA_LEGEND if has_tra else ""))


def _stats(conds: list[_Condition], m: Mapping[str, Any], scores: pd.DataFrame | None) -> Markup:
    """Headline numbers: full accuracy, majority, worst partial condition, flagged count."""
    stats: list[Stat] = []
    full = next((c for c in conds if not c.is_partial), None)
    if full is not None and f"accuracy_{full.key}" in m:
        stats.append(
            Stat(
                Markup("Full-input accuracy A<sub>PSC</sub>"),
                metric_cell(m, f"accuracy_{full.key}"),
            )
        )
    if "majority_accuracy" in m:
        stats.append(Stat("Majority baseline", metric_cell(m, "majority_accuracy")))
    partial = [c for c in conds if c.is_partial and finite(m.get(f"recovery_{c.key}")) is not None]
    if partial:
        worst = max(partial, key=lambda c: float(m[f"recovery_{c.key}"]))
        stats.append(
            Stat(
                Markup("Highest recovery %R<sub>R</sub>"),
                metric_cell(m, f"recovery_{worst.key}", "percent"),
                worst.label,
            )
        )
    if scores is not None and "is_partial_input_issue" in scores.columns and len(scores):
        flagged = int(as_flags(scores["is_partial_input_issue"]).sum())
        stats.append(
            Stat(
                "Flagged examples",
                flagged,
                f"{flagged / len(scores):.1%} of {len(scores):,}",
                "int",
            )
        )
    for key, label in (("n_train", "Training examples"), ("n_eval", "Evaluation examples")):
        if key in m:
            stats.append(Stat(label, m[key], kind="int"))
    return stat_block(stats)


def _figures(conds: list[_Condition], m: Mapping[str, Any], scores: pd.DataFrame | None) -> Markup:
    bars = [
        BarSpec(
            label=c.label,
            value=finite(m.get(f"accuracy_{c.key}")),
            low=finite(m.get(f"accuracy_{c.key}_ci_low")),
            high=finite(m.get(f"accuracy_{c.key}_ci_high")),
            kind="partial" if c.is_partial else "full",
        )
        for c in sorted(conds, key=lambda c: c.is_partial)
    ]
    figures = [
        Plot(
            plots.safe_plot(accuracy_plot, bars, baseline=finite(m.get("majority_accuracy"))),
            "Accuracy per input condition with bootstrap 95% error bars; "
            "dashed line: majority baseline.",
            "Accuracy per condition. Error bars: bootstrap 95% interval; "
            "dashed line: majority-class baseline.",
        ),
        Plot(
            plots.score_column_histogram(
                scores,
                "partial_input_score",
                flag_column="is_partial_input_issue",
                xlabel="partial-input score (max p(gold) over leaking partial conditions)",
            ),
            "Histogram of per-example partial-input scores.",
            "Per-example partial-input score: the highest probability of the gold label "
            "given by a leaking partial-input model (Delta_maj interval above 0).",
        ),
    ]
    for c in conds:
        column = f"tra_{c.key}"
        if c.is_partial and scores is not None and column in scores.columns:
            figures.append(
                Plot(
                    plots.score_column_histogram(
                        scores.dropna(subset=[column]),  # unsampled examples have no TRA
                        column,
                        flag_column="is_partial_input_issue",
                        xlabel=f"TRA, {c.label} vs full input (Eq. 10)",
                    ),
                    f"Histogram of per-example token relevance agreement, {c.label}.",
                    f"Per-example token relevance agreement (TRA) of the fine-tuned {c.label} "
                    "and full-input models: cosine similarity of their token relevance.",
                )
            )
    return figure_block(figures)


def _per_class(conds: list[_Condition], details: Mapping[str, Any]) -> Markup:
    pca = details.get("per_class_accuracy")
    if not isinstance(pca, Mapping) or not pca:
        return Markup("")
    order = [c.key for c in sorted(conds, key=lambda c: c.is_partial) if c.key in pca]
    order += [k for k in pca if k not in order]
    names: list[str] = [str(x) for x in details.get("label_names") or []]
    # Per-class keys may be label names or (JSON-stringified) class ids; show names.
    table: dict[str, dict[str, Any]] = {name: {} for name in names}
    for k in order:
        per_label = pca.get(k)
        for lab, acc in per_label.items() if isinstance(per_label, Mapping) else []:
            lab = str(lab)
            if lab.isdigit() and lab not in table and int(lab) < len(names):
                lab = names[int(lab)]
            table.setdefault(lab, {})[k] = acc
    rows = [[lab, *(finite(accs.get(k)) for k in order)] for lab, accs in table.items()]
    return render_fragment(
        "<h4>Accuracy per gold label</h4>{{ t }}",
        t=html_table(["label", *[k.replace("_", " ") for k in order]], rows, css="compact"),
    )


_KNOWN_KEYS = {"id", "label", "partial_input_score", "is_partial_input_issue"}
_KNOWN_PREFIXES = ("pred_", "p_gold_", "correct_")


def _top_examples(
    conds: list[_Condition],
    details: Mapping[str, Any],
    scores: pd.DataFrame | None,
    full_table: str | None = None,
) -> Markup:
    raw = details.get("top_examples")
    examples = [e for e in raw if isinstance(e, Mapping)] if isinstance(raw, list) else []
    label_names = [str(x) for x in details.get("label_names") or []]
    if not examples and scores is not None and "partial_input_score" in scores.columns:
        # Scores carry no text, but ids and predictions still point at the leakiest rows.
        top = scores.sort_values("partial_input_score", ascending=False, kind="stable").head(20)
        examples = [
            dict(zip(top.columns, map(cell_value, rec), strict=True))
            for rec in top.itertuples(index=False, name=None)
        ]
    if not examples:
        return Markup("")
    text_fields: list[str] = []
    for c in sorted(conds, key=lambda c: c.is_partial):
        text_fields += [f for f in c.fields if f not in text_fields]
    present = {k for e in examples for k in e}
    text_fields = [f for f in text_fields if f in present]
    # Keys we do not know are still shown: nothing the analysis recorded is dropped.
    extra = sorted(
        k
        for k in present
        if k not in _KNOWN_KEYS and not k.startswith(_KNOWN_PREFIXES) and k not in text_fields
    )
    cond_keys = [c.key for c in sorted(conds, key=lambda c: c.is_partial)]
    cond_keys += sorted(
        {k[len("pred_") :] for k in present if k.startswith("pred_")} - set(cond_keys)
    )
    cond_keys = [k for k in cond_keys if f"pred_{k}" in present or f"p_gold_{k}" in present]

    headers: list[Any] = [
        ("#", "rank by partial-input score"),
        "id",
        *text_fields,
        *extra,
        "gold label",
    ]
    headers += [
        (k.replace("_", " "), f"prediction of the {k} model (probability of the gold label)")
        for k in cond_keys
    ]
    headers.append(
        ("score", "partial-input score: max p(gold) over the leaking partial conditions")
    )
    rows = []
    for rank, e in enumerate(examples, start=1):
        gold = _label_name(e.get("label"), label_names)
        row: list[Any] = [rank, e.get("id")]
        row += [e.get(f) for f in text_fields]
        row += [e.get(k) for k in extra]
        row.append(
            Cell(text=str(gold) if gold is not None else MISSING, sort=str(gold), css="label")
        )
        for k in cond_keys:
            pred = _label_name(e.get(f"pred_{k}"), label_names)
            p = finite(e.get(f"p_gold_{k}"))
            hit = pred is not None and gold is not None and str(pred) == str(gold)
            text = render_fragment(
                "{{ pred }}{% if p is not none %} "
                '<span class="p">({{ "%.2f"|format(p) }})</span>{% endif %}',
                pred=MISSING if pred is None else str(pred),
                p=p,
            )
            row.append(
                Cell(
                    text=text,
                    sort="" if p is None else repr(p),
                    css="pred hit" if hit else "pred miss",
                )
            )
        row.append(finite(e.get("partial_input_score")))
        rows.append(row)
    return example_table(
        headers,
        rows,
        text_columns=["id", *text_fields, *extra],
        title="Most leaky examples",
        note=render_fragment(
            "Evaluation examples whose gold label is easiest to predict from partial input "
            'alone. Predictions that match the gold label are marked <span class="pred hit">'
            "green</span>; the number in parentheses is p(gold)."
        ),
        full_table=full_table,
    )


@register_section("partial_input")
def partial_input_section(result: Result) -> Section:
    """:data:`~spurious.report.sections.SectionRenderer` of the partial-input analysis.

    Examples
    --------
    >>> r = Result("partial_input", pd.DataFrame({"id": [0]}),
    ...            {"accuracy_full": 0.8, "accuracy_hypothesis_only": 0.6})
    >>> "0.600" in partial_input_section(r).html_body
    True
    """
    m = result.metrics or {}
    details = result.details or {}
    conds = _conditions(result)
    featurizer = details.get("featurizer")
    extra: dict[str, Markup] = {}
    models = details.get("fine_tuned_models")
    if isinstance(models, Mapping) and models:
        extra["Fine-tuned models"] = html_table(
            ["condition", "base model", "epochs", "training s", "folder"],
            [
                [str(k), v.get("model"), v.get("epochs_trained"), v.get("train_seconds"),
                 v.get("folder")]
                for k, v in models.items()
                if isinstance(v, Mapping)
            ],
            css="compact",
        )  # fmt: skip
        if isinstance(featurizer, Mapping) and featurizer:
            extra["Fine-tuning configuration"] = kv_table(featurizer)
    elif isinstance(featurizer, Mapping) and featurizer:
        extra["Featurizer"] = kv_table(featurizer)
    other_metrics = {
        k: v
        for k, v in m.items()
        if not k.startswith(_PREFIXES)
        and not k.startswith("majority_accuracy")
        and k not in ("n_train", "n_eval", "n_tra")
    }
    if other_metrics:
        extra["Other metrics"] = metrics_table(other_metrics)
    extra["All per-example scores (first rows)"] = scores_preview(result.scores)
    return result_section(
        result,
        _stats(conds, m, result.scores),
        render_fragment("<h4>Leakage metrics</h4>{{ t }}", t=_metrics_table(conds, m)),
        _figures(conds, m, result.scores),
        _per_class(conds, details),
        _top_examples(conds, details, result.scores, full_table_href(result)),
        title="partial_input — partial-input baselines",
        extra=extra,
    )
