"""The line above the cards: is there a shortcut, how strong, where; then what to do next.

:func:`build_answer` reads the overview's findings (each severity already rests on an
interval or a test against a null) and the run's manifest, and says in one sentence
whether the audit found shortcuts, which evidence is the strongest, and then lists the
next steps *that apply to this run* as exact commands (written from the manifest's
inputs): keep AFLite's rows, build bias-amplified splits from the run's anti-biased
marks, train against the partial-input bias, re-run with the canary when nothing was
found. A short glossary gives plain words for the technical terms the page's cards use
(Delta_maj, PECO, anti-biased, q ...), with the method note that defines each.

Examples
--------
>>> from spurious.report.overview import Finding, Overview
>>> o = Overview(findings=[Finding("atlas", "atlas", "token-label association",
...     "nobody -> contradiction", severity="high")])
>>> a = build_answer(o, {"config": {"inputs": {"data": "dev.jsonl", "task": "nli"}}}, "runs/x")
>>> print(a.sentence)
Shortcuts found: 1 of 1 analyses flag one. Strongest: token-label association (high): nobody -> contradiction.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markupsafe import Markup

from spurious.report.fragments import render_fragment
from spurious.report.overview import Finding, Overview

__all__ = ["Answer", "NextStep", "build_answer", "render_answer"]

_RANK = {"high": 3, "moderate": 2, "low": 1}

#: term -> (plain words, method note). Shown when a card on the page uses the term.
GLOSSARY: dict[str, tuple[str, str]] = {
    "Delta_maj": ("accuracy above always answering the most frequent label", "partial_input"),
    "%R_R": ("the share of the full model's accuracy a partial input recovers", "partial_input"),
    "NBA": ("how often the partial-input and full models give the same answer", "partial_input"),
    "PECO": ("how far apart the label-conditioned embeddings of one sentence are", "peco"),
    "anti-biased": (
        "examples the shortcut gets wrong: the test a model relying on it fails",
        "amplified_splits",
    ),
    "q=": ("the share of examples marked anti-biased", "amplified_splits"),
    "PVI": ("how many bits of the label one input gives a model, per example", "pvi"),
    "predictable": ("examples AFLite's weak models classify too easily", "aflite"),
    "prediction bias": ("the accuracy gap between the two sides of a heuristic", "prediction_bias"),
    "chance": ("what answering at random scores (1/k for an item with k options)", "partial_input"),
}


@dataclass(frozen=True)
class NextStep:
    """One thing to do next: why, and the exact command (or ``""`` for advice)."""

    why: str
    command: str = ""


@dataclass
class Answer:
    """The overall answer of a run, its next steps and the terms its cards use."""

    sentence: str
    severity: str
    steps: list[NextStep] = field(default_factory=list)
    terms: list[tuple[str, str, str]] = field(default_factory=list)


def _flagged(overview: Overview) -> list[Finding]:
    hits = [f for f in overview.findings if f.severity in _RANK]
    return sorted(hits, key=lambda f: -_RANK[f.severity])  # stable: run order within a level


def build_answer(overview: Overview, manifest: Mapping[str, Any], run_dir: str | Path) -> Answer:
    """The one-line answer and the next steps that apply to this run.

    Parameters
    ----------
    overview : Overview
        The findings of the page (:func:`~spurious.report.overview.build_overview`).
    manifest : mapping
        The run's manifest (its ``config.inputs`` give the commands' data and task).
    run_dir : str or Path
        The run directory (for ``--from-run``; marks are looked up in it).
    """
    flagged, n = _flagged(overview), len(overview.findings)
    if not n:
        return Answer("No analysis ran to completion, so there is no answer yet.", "info")
    if flagged:
        top = flagged[0]
        sentence = (
            f"Shortcuts found: {len(flagged)} of {n} analyses flag one. Strongest: "
            f"{top.label} ({top.severity}): {top.text.rstrip('.')}."
        )
        severity = top.severity
    else:
        inconclusive = sum(f.inconclusive for f in overview.findings)
        sentence = f"No shortcut found by the {n} analyses that ran"
        sentence += f" ({inconclusive} inconclusive at this size)." if inconclusive else "."
        severity = "none"
    if overview.failed:
        sentence += f" {len(overview.failed)} analysis(es) failed; see below."
    steps = next_steps({f.name for f in flagged}, manifest, Path(run_dir))
    texts = " ".join(f"{f.label} {f.text} {f.verdict} {f.evidence}" for f in overview.findings)
    terms = [(t, words, note) for t, (words, note) in GLOSSARY.items() if t in texts]
    return Answer(sentence, severity, steps, terms)


def next_steps(flagged: set[str], manifest: Mapping[str, Any], run_dir: Path) -> list[NextStep]:
    """The commands that apply to a run whose analyses ``flagged`` found a shortcut.

    Examples
    --------
    >>> m = {"config": {"inputs": {"data": "train.jsonl", "task": "nli"}}}
    >>> [s.command for s in next_steps({"aflite"}, m, Path("runs/x"))]
    ['spurious aflite train.jsonl --task nli --write-filtered kept.jsonl']
    """
    config: Mapping[str, Any] = manifest.get("config") or {}
    inputs: Mapping[str, Any] = config.get("inputs") or {} if isinstance(config, Mapping) else {}
    if not isinstance(inputs, Mapping):
        inputs = {}
    data, task, ev = inputs.get("data"), inputs.get("task"), inputs.get("eval")
    base = ""
    if isinstance(data, str) and isinstance(task, str) and not data.startswith("<"):
        base = f"{shlex.quote(data)} --task {shlex.quote(task)}"
        if isinstance(ev, str) and not ev.startswith("<"):
            base += f" --eval {shlex.quote(ev)}"
    steps: list[NextStep] = []
    if not flagged:
        if base:
            steps.append(NextStep(
                "See what strength of shortcut this audit could have found in this data "
                "(planted shortcuts of graded strength):",
                f"spurious audit {base} --quick --canary",
            ))  # fmt: skip
        return steps
    if "aflite" in flagged and base:
        steps.append(NextStep(
            "Keep only the rows AFLite could not predict (a filtered, harder version):",
            f"spurious aflite {base} --write-filtered kept.jsonl",
        ))  # fmt: skip
    marked = (
        sorted(p.parent.name for p in run_dir.glob("*/marks.parquet")) if run_dir.is_dir() else []
    )
    if marked and ev:
        steps.append(NextStep(
            f"Build biased / anti-biased splits from the examples {', '.join(marked)} marked "
            "(paper 002) and test models on the anti-biased one:",
            f"spurious amplify --from-run {shlex.quote(str(run_dir))} --out "
            f"{shlex.quote(str(run_dir) + '-amplified')}",
        ))  # fmt: skip
    if "partial_input" in flagged and base and task in ("nli", "pair"):
        view = "hypothesis_only" if task == "nli" else "text_b_only"
        steps.append(NextStep(
            f"Train a model that discounts what the {view.replace('_only', '')} alone says "
            "(product of experts against the partial-input bias):",
            f"spurious train {base} --loss poe --bias partial:{view} --out model-debiased",
        ))  # fmt: skip
    if flagged & {"partial_input", "atlas", "associations"}:
        steps.append(NextStep(
            "Collect (or edit) examples where the flagged words or field disagree with the "
            "label, so the cue stops predicting it (counterfactual edits)."
        ))  # fmt: skip
    if flagged & {"mc_leakage", "mc_cues"}:
        steps.append(NextStep(
            "Rewrite the options the cue points at (the gold is the longest / most "
            "distinct option) and balance the gold letters; re-run this audit to check."
        ))  # fmt: skip
    if "position_bias" in flagged:
        steps.append(NextStep(
            "Score models on every cyclic permutation of the options and report the mean: "
            "a letter preference then cannot add accuracy."
        ))  # fmt: skip
    if "prediction_bias" in flagged:
        steps.append(NextStep(
            "Report each model's accuracy on the worse side of the flagged heuristic as well "
            "as the overall accuracy (the prediction-bias table)."
        ))  # fmt: skip
    return steps


_ANSWER = """
<div class="answer sev-{{ a.severity }}">
<p class="answer-line"><strong>{{ a.sentence }}</strong></p>
{% if a.steps %}
<h3 class="answer-next">What to do next</h3>
<ul class="next-steps">
{% for s in a.steps %}<li>{{ s.why }}{% if s.command %}<br><code>{{ s.command }}</code>{% endif %}</li>
{% endfor %}</ul>
{% endif %}
{% if a.terms %}
<details class="glossary"><summary>Terms on this page</summary><dl>
{% for t, words, note in a.terms %}<dt>{{ t }}</dt><dd>{{ words }} <span class="muted">(method note: docs/methods/{{ note }}.md)</span></dd>
{% endfor %}</dl></details>
{% endif %}
</div>
"""


def render_answer(answer: Answer) -> Markup:
    """The answer as HTML (every value escaped).

    Examples
    --------
    >>> "<b>" in render_answer(Answer("<b>x</b>", "none"))
    False
    """
    return render_fragment(_ANSWER, a=answer)
