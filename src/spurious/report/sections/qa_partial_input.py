"""Report section of ``qa_partial_input``: question-only and passage-only QA baselines.

Shows, per view (full item, passage only, question only, positions only), how often the
probe picks the sentence holding the answer, against chance and against the position
prior, with bootstrap intervals; a bar chart of accuracy per view with the chance line;
and where the answers sit in their contexts (the position prior itself). Missing metrics
or details are skipped, so a partially filled result still renders.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from spurious.report import plots
from spurious.report.components import (
    Plot,
    Stat,
    figure_block,
    finite,
    kv_table,
    metric_cell,
    render_fragment,
    scores_preview,
    stat_block,
)
from spurious.report.sections import Section, register_section, result_section
from spurious.report.sections._choice_views import ChoiceWords, view_label, view_names, views_table
from spurious.report.sections.partial_input import BarSpec, accuracy_plot
from spurious.results import Result

__all__ = ["qa_partial_input_section"]

_VIEWS = ("full", "passage_only", "question_only", "position_only")
_ROLE = {
    "full": "question and passage",
    "passage_only": "the sentences, no question",
    "question_only": "the question x sentence positions",
    "position_only": "sentence positions only",
}

_LEGEND = """<p class="legend">
Extractive QA as <strong>answer-sentence selection</strong>: the probe picks the sentence of
the context that holds the answer (sentence level, not span F1). <strong>Chance</strong>:
the mean over questions of 1/(number of sentences), what a blind pick scores; it is the
baseline of the verdict. <strong>Δ<sub>chance</sub></strong> = accuracy − chance;
<strong>Δ<sub>position</sub></strong> = accuracy − the position-only probe's (paired): what
the view knows beyond where answers usually sit. <strong>%R<sub>R</sub></strong> =
(A<sub>view</sub> − chance) / (A<sub>full</sub> − chance); <strong>NBA</strong>: share of
questions where the view's and the full probe's picks agree; <strong>NBR</strong>: of
those, the share both get right. Brackets: bootstrap 95% interval over the questions. The
probe is a conditional logit (one weight vector scoring every sentence, a softmax over the
context's sentences) on lexical features; a question-only probe sees the question and the
sentences' positions, never their words (Kaushik &amp; Lipton 2018 pair the question with a
random passage instead).</p>"""


_WORDS = ChoiceWords(
    accuracy="share of questions whose answer sentence the probe picks",
    chance="mean of 1/(number of sentences)",
    nba="share of questions where this view's and the full probe's picks agree",
    nbr="of the agreeing questions, the share both get right",
    majority="majority position",
    majority_role="always pick the position most often gold in training",
)


def _views(result: Result) -> list[str]:
    return view_names(result, _VIEWS)


def _views_table(views: list[str], m: Mapping[str, Any]) -> Markup:
    table = views_table(views, m, roles=_ROLE, words=_WORDS)
    return table + render_fragment(_LEGEND)


def _stats(m: Mapping[str, Any], details: Mapping[str, Any]) -> Markup:
    judged = str(details.get("judged_view") or "passage_only")
    stats: list[Stat] = []
    if f"accuracy_{judged}" in m:
        stats.append(Stat(f"{view_label(judged)} accuracy", metric_cell(m, f"accuracy_{judged}")))
    if "chance" in m:
        stats.append(Stat("Chance (mean 1/#sentences)", finite(m.get("chance"))))
    if f"delta_chance_{judged}" in m:
        stats.append(Stat("Over chance", metric_cell(m, f"delta_chance_{judged}", "signed")))
    if "accuracy_position_only" in m:
        stats.append(Stat("Position alone", metric_cell(m, "accuracy_position_only")))
    p = finite(m.get("p_value"))
    if p is not None:
        n_perm = int(finite(m.get("n_permutations")) or 0)
        stats.append(Stat("Permutation p", p, f"{n_perm} shuffled-gold refits"))
    if "n_eval" in m:
        stats.append(Stat("Questions scored", m["n_eval"], kind="int"))
    return stat_block(stats)


def _figures(views: list[str], m: Mapping[str, Any], details: Mapping[str, Any]) -> Markup:
    bars = [
        BarSpec(
            label=view_label(v),
            value=finite(m.get(f"accuracy_{v}")),
            low=finite(m.get(f"accuracy_{v}_ci_low")),
            high=finite(m.get(f"accuracy_{v}_ci_high")),
            kind="full" if v == "full" else "partial",
        )
        for v in views
    ]
    pos = details.get("answer_positions")
    pos_bars = []
    if isinstance(pos, Mapping):
        pos_bars = [
            BarSpec(label=str(name), value=finite(share), kind="partial")
            for name, share in zip(pos.get("positions", []), pos.get("share", []), strict=False)
        ]
    return figure_block(
        [
            Plot(
                plots.safe_plot(
                    accuracy_plot, bars, baseline=finite(m.get("chance")), baseline_label="chance"
                ),
                "Answer-sentence accuracy per view with bootstrap 95% error bars; dashed: chance.",
                "How often the probe picks the answer's sentence, per view. Error bars: "
                "bootstrap 95% interval; dashed line: chance (mean of 1/number of sentences).",
            ),
            Plot(
                plots.safe_plot(
                    accuracy_plot,
                    pos_bars,
                    ylabel="share of questions",
                    baseline=None,
                )
                if pos_bars
                else None,
                "Share of answers in each sentence position of the context.",
                "Where the answers sit: the share of scored questions whose answer is in the "
                "context's 1st, 2nd ... sentence (the last bar: that one or later). A "
                "position-only probe learns this prior.",
            ),
        ]
    )


@register_section("qa_partial_input")
def qa_partial_input_section(result: Result) -> Section:
    """:data:`~spurious.report.sections.SectionRenderer` of ``qa_partial_input``.

    Examples
    --------
    >>> import pandas as pd
    >>> r = Result("qa_partial_input", pd.DataFrame({"id": [0]}),
    ...            {"accuracy_passage_only": 0.37, "chance": 0.255})
    >>> "0.370" in qa_partial_input_section(r).html_body
    True
    """
    m = result.metrics or {}
    details = result.details or {}
    views = _views(result)
    extra: dict[str, Markup] = {}
    for key, title in (("featurizer", "Features"), ("probe", "Probe")):
        if isinstance(details.get(key), Mapping) and details[key]:
            extra[title] = kv_table(details[key])
    extra["All per-question scores (first rows)"] = scores_preview(result.scores)
    return result_section(
        result,
        _stats(m, details),
        render_fragment(
            "<h4>Answer-sentence selection per view</h4>{{ t }}", t=_views_table(views, m)
        ),
        _figures(views, m, details),
        title="qa_partial_input — question-only and passage-only QA baselines",
        extra=extra,
    )
