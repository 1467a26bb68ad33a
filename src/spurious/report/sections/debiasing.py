"""Report section of the debiasing analysis (paper 001 Sec. 5, Fig. 5-7; 002 Sec. 6).

One table (accuracy, hard-subset accuracy, prediction bias per heuristic, training cost
per method), the bias model's calibration (accuracy, confidence, ECE, NLL before and after
temperature scaling, T, its epochs) and heatmaps of the change in prediction bias against plain training: per
method x measured heuristic, and, when computed, the cross-bias matrix of Fig. 6/7 per
method (targeted x measured heuristic).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from markupsafe import Markup
from matplotlib.figure import Figure

from spurious.report import plots
from spurious.report.components import (
    Plot,
    Stat,
    figure_block,
    finite,
    html_table,
    metric_cell,
    metrics_table,
    render_fragment,
    scores_preview,
    stat_block,
)
from spurious.report.sections import Section, register_section, result_section
from spurious.results import Result

__all__ = ["bias_change_heatmap", "bias_model_table", "debiasing_section"]


@plots.styled
def bias_change_heatmap(
    rows: Sequence[str],
    columns: Sequence[str],
    values: Sequence[Sequence[float | None]],
    *,
    title: str = "",
    row_label: str = "method",
) -> str | None:
    """A diverging heatmap of prediction-bias changes (blue = the bias shrank).

    Examples
    --------
    >>> bias_change_heatmap(["poe"], ["overlap"], [[-0.05]]).startswith("data:")
    True
    >>> bias_change_heatmap([], [], []) is None
    True
    """
    grid = np.array(
        [[np.nan if finite(v) is None else float(v) for v in row] for row in values], dtype=float
    )
    if grid.size == 0 or not np.isfinite(grid).any():
        return None
    span = max(float(np.nanmax(np.abs(grid))), 1e-3)
    fig = Figure(figsize=(1.2 + 1.1 * len(columns), 0.8 + 0.42 * len(rows)), layout="constrained")
    ax = fig.add_subplot()
    im = ax.imshow(grid, cmap="RdBu_r", vmin=-span, vmax=span, aspect="auto")
    for i in range(len(rows)):
        for j in range(len(columns)):
            if np.isfinite(grid[i, j]):
                ax.text(j, i, f"{grid[i, j]:+.3f}", ha="center", va="center", fontsize=7,
                        color="white" if abs(grid[i, j]) > 0.6 * span else "black")  # fmt: skip
    ax.set_xticks(range(len(columns)), [plots.plain(c) for c in columns], rotation=30, ha="right")
    ax.set_yticks(range(len(rows)), [plots.plain(r) for r in rows])
    ax.set_ylabel(row_label)
    if title:
        ax.set_title(plots.plain(title), fontsize=8)
    fig.colorbar(im, ax=ax, fraction=0.05, label="bias change vs plain")
    return plots.figure_to_data_uri(fig)


def bias_model_table(metrics: Mapping[str, Any]) -> Markup:
    """The bias model's calibration before and after temperature scaling.

    Rows: the evaluation split (scored by a model trained on every training row) and,
    where the bias model is cross-fitted, the training split's out-of-fold predictions
    (where ``T`` was fitted).

    Examples
    --------
    >>> m = {"bias_model_accuracy": 0.58, "bias_model_ece": 0.02, "bias_model_ece_before": 0.17,
    ...      "bias_model_temperature": 2.3}
    >>> html = str(bias_model_table(m))
    >>> "0.170" in html and "2.30" in html
    True
    >>> str(bias_model_table({}))
    ''
    """
    rows = []
    for label, prefix in (("evaluation split", "bias_model_"), ("training, out-of-fold",
                                                                "bias_model_oof_")):  # fmt: skip
        if finite(metrics.get(f"{prefix}accuracy")) is None:
            continue
        cells = [label, finite(metrics.get(f"{prefix}accuracy"))]
        for key in ("confidence", "ece", "nll"):
            before, after = metrics.get(f"{prefix}{key}_before"), metrics.get(f"{prefix}{key}")
            cells.append(
                None
                if finite(after) is None
                else (f"{before:.3f} → {after:.3f}" if finite(before) is not None
                      else f"{after:.3f}")
            )  # fmt: skip
        rows.append(cells)
    if not rows:
        return Markup("")
    t = finite(metrics.get("bias_model_temperature"))
    epochs = finite(metrics.get("bias_model_epochs"))
    return render_fragment(
        '{{ table }}<p class="legend">The bias model\'s probabilities are what the objectives '
        "read, so its calibration matters, not only its accuracy. Before → after "
        "temperature scaling{% if t %} (T = {{ t }}, fitted on the out-of-fold "
        "predictions; T &gt; 1: it was overconfident){% endif %}{% if e %}; trained for "
        "{{ e }} epochs (early stopping on the out-of-fold NLL){% endif %}. ECE: expected "
        "calibration error of the top label (15 bins); NLL: mean −log p(gold).</p>",
        table=html_table(["Bias model on", "Accuracy", "Confidence", "ECE", "NLL"], rows),
        t=None if t is None else f"{t:.2f}",
        e=None if epochs is None else int(epochs),
    )


def _table(details: Mapping[str, Any]) -> Markup:
    table = [r for r in details.get("table") or [] if isinstance(r, Mapping)]
    if not table:
        return Markup("")
    heuristics = [str(h) for h in details.get("heuristics") or []]
    headers = ["Method", "Accuracy", "Hard accuracy", *[f"Bias: {h}" for h in heuristics],
               "Train time (s)", "Cost vs plain", "Epochs to best"]  # fmt: skip
    rows = []
    for r in table:
        acc, sd = finite(r.get("accuracy")), finite(r.get("accuracy_sd"))
        hard, hsd = finite(r.get("hard_accuracy")), finite(r.get("hard_accuracy_sd"))
        rows.append(
            [
                r.get("method"),
                None if acc is None else f"{acc:.3f} ± {sd or 0:.3f}",
                None if hard is None else f"{hard:.3f} ± {hsd or 0:.3f}",
                *(finite(r.get(f"bias_{h}")) for h in heuristics),
                finite(r.get("train_s")),
                finite(r.get("cost_ratio")),
                finite(r.get("epochs_to_best")),
            ]
        )
    hard = details.get("hard_definition") or "evaluation examples the bias model gets wrong"
    return render_fragment(
        '{{ t }}<p class="legend">Mean ± sd over seeds. Hard: {{ hard }}. Bias: paper 001\'s '
        "prediction bias at the plain model's threshold (0 = no gap between the "
        "heuristic's groups).{% if h %} LearnedMixin+H's entropy weight H = {{ h }}.{% endif %}"
        "</p>",
        t=html_table(headers, rows),
        hard=str(hard),
        h=_entropy_penalty(details),
    )


def _entropy_penalty(details: Mapping[str, Any]) -> str | None:
    params = (details.get("loss_params") or {}).get("learned_mixin_h") or {}
    h = finite(params.get("entropy_penalty")) if isinstance(params, Mapping) else None
    return None if h is None else f"{h:.3g}"


def _figures(result: Result) -> Markup:
    d = result.details or {}
    m = result.metrics or {}
    methods = [str(x) for x in d.get("methods") or []]
    heuristics = [str(h) for h in d.get("heuristics") or []]
    figures = []
    others = [x for x in methods if x != "plain"]
    if others and heuristics:
        values = [[m.get(f"bias_change_{x}_{h}") for h in heuristics] for x in others]
        figures.append(
            Plot(
                plots.safe_plot(
                    bias_change_heatmap,
                    others,
                    heuristics,
                    values,
                    title="prediction bias change vs plain (bias model: "
                    f"{(d.get('bias_model') or {}).get('kind', '?')})",
                ),
                "Change of prediction bias per method and heuristic.",
                "Each method's prediction bias minus plain training's, per measured heuristic "
                "(blue: the bias shrank).",
            )
        )
    cross = d.get("cross_bias")
    if isinstance(cross, Mapping):
        for method, matrix in cross.items():
            if not isinstance(matrix, Mapping) or not matrix:
                continue
            targets = list(matrix)
            values = [[(matrix[t] or {}).get(h) for h in heuristics] for t in targets]
            figures.append(
                Plot(
                    plots.safe_plot(
                        bias_change_heatmap,
                        targets,
                        heuristics,
                        values,
                        title=f"{method}: targeted (rows) x measured bias",
                        row_label="targeted bias",
                    ),
                    f"Cross-bias matrix of {method}.",
                    f"Cross-bias matrix (paper 001 Fig. 6/7) of {method}: rows = the heuristic "
                    "whose biased segment trained the bias model, columns = the measured bias.",
                )
            )
    return figure_block(figures)


def _stats(m: Mapping[str, Any]) -> Markup:
    stats = [
        Stat("Plain accuracy", metric_cell(m, "accuracy_plain")),
        Stat("Plain on hard examples", metric_cell(m, "hard_accuracy_plain")),
    ]
    if "best_hard_gain" in m:
        stats.append(Stat("Best gain on hard", m["best_hard_gain"], kind="float"))
    if "bias_model_accuracy" in m:
        stats.append(Stat("Bias model accuracy", m["bias_model_accuracy"], kind="percent"))
    if "bias_model_ece" in m:
        stats.append(Stat("Bias model ECE", m["bias_model_ece"], kind="float"))
    return stat_block(stats)


@register_section("debiasing")
def debiasing_section(result: Result) -> Section:
    """:data:`~spurious.report.sections.SectionRenderer` of the debiasing analysis.

    Examples
    --------
    >>> import pandas as pd
    >>> r = Result("debiasing", pd.DataFrame({"id": ["a"]}), {"accuracy_plain": 0.7})
    >>> "0.700" in debiasing_section(r).html_body
    True
    """
    m = result.metrics or {}
    d = result.details or {}
    extra: dict[str, Markup] = {"All metrics": metrics_table(m)} if m else {}
    extra["All per-example scores (first rows)"] = scores_preview(result.scores)
    info = d.get("bias_model")
    bias_note = Markup("")
    if isinstance(info, Mapping):
        bias_note = render_fragment(
            '<p class="legend">Bias model: {{ k }}{% if v %} ({{ v }}){% endif %}; '
            "rescaling per method: {{ r }}.</p>",
            k=str(info.get("kind", "?")),
            v=", ".join(
                f"{a}={b:.3g}" if isinstance(b, float) else f"{a}={b}"
                for a, b in info.items()
                if a != "kind"
            ),
            r=", ".join(f"{a}: {b}" for a, b in (d.get("rescale") or {}).items() if b),
        )
    return result_section(
        result,
        _stats(m),
        _table(d),
        bias_model_table(m),
        bias_note,
        _figures(result),
        title="debiasing — objectives against prediction bias",
        extra=extra,
    )
