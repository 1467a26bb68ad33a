"""Issue 23 item 7: one overall answer above the cards, next steps that apply, plain words."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import spurious
from spurious.data.synthetic import make_nli_artifacts
from spurious.report.answer import build_answer, next_steps, render_answer
from spurious.report.overview import Finding, Overview

MANIFEST = {
    "config": {"inputs": {"data": "data/train set.jsonl", "task": "nli", "eval": "dev.jsonl"}}
}


def _finding(name: str, severity: str, text: str = "x") -> Finding:
    return Finding(name, name, name.replace("_", " "), text, severity=severity)


def test_the_answer_names_the_strongest_finding_and_counts():
    o = Overview(findings=[_finding("atlas", "low", "a"), _finding("partial_input", "high", "b"),
                           _finding("aflite", "none")])  # fmt: skip
    a = build_answer(o, MANIFEST, Path("runs/x"))
    assert a.sentence.startswith(
        "Shortcuts found: 2 of 3 analyses flag one. Strongest: partial input (high): b"
    )
    assert a.severity == "high"


def test_next_steps_are_only_those_that_apply(tmp_path):
    steps = next_steps({"aflite", "partial_input"}, MANIFEST, tmp_path)
    commands = [s.command for s in steps if s.command]
    # Paths are shell-quoted; the eval split is carried into every command.
    assert commands == [
        "spurious aflite 'data/train set.jsonl' --task nli --eval dev.jsonl --write-filtered kept.jsonl",
        "spurious train 'data/train set.jsonl' --task nli --eval dev.jsonl --loss poe "
        "--bias partial:hypothesis_only --out model-debiased",
    ]
    assert not any("amplify" in c for c in commands)  # no analysis marked anti-biased rows
    (tmp_path / "cartography").mkdir()
    (tmp_path / "cartography" / "marks.parquet").write_bytes(b"")
    assert any(
        "amplify --from-run" in s.command for s in next_steps({"cartography"}, MANIFEST, tmp_path)
    )
    # Nothing flagged: the canary says what could have been seen; in-memory data: no command.
    assert [s.command for s in next_steps(set(), MANIFEST, tmp_path)] == [
        "spurious audit 'data/train set.jsonl' --task nli --eval dev.jsonl --quick --canary"
    ]
    memory = {"config": {"inputs": {"data": "<in-memory dataset>", "task": "nli"}}}
    assert next_steps({"aflite"}, memory, tmp_path) == []


def test_terms_used_on_the_page_get_plain_words_and_text_is_escaped():
    o = Overview(findings=[_finding("partial_input", "high", "<b>Delta_maj</b> +0.2")])
    a = build_answer(o, MANIFEST, Path("runs/x"))
    assert [t for t, _, _ in a.terms] == ["Delta_maj"]
    html = str(render_answer(a))
    assert "&lt;b&gt;Delta_maj" in html and "<b>Delta" not in html
    assert "docs/methods/partial_input.md" in html


def test_the_report_leads_with_the_answer(tmp_path):
    data = make_nli_artifacts(n=300, artifact_rate=0.8, random_state=0).dataset
    path = tmp_path / "train.jsonl"
    data.frame[["id", "premise", "hypothesis", "label"]].to_json(path, orient="records", lines=True)
    run = spurious.run(path, "nli", analyses={"atlas": {}}, out=tmp_path / "run", progress=False)
    html = (tmp_path / "run" / "report.html").read_text()
    assert html.index('class="answer') < html.index('id="findings"')
    assert "Shortcuts found: 1 of 1 analyses flag one" in html
    # Shuffled labels: no finding, and the next step is the canary.
    frame = data.frame.copy()
    frame["label"] = np.random.default_rng(0).permutation(frame["label"].to_numpy())
    frame[["id", "premise", "hypothesis", "label"]].to_json(path, orient="records", lines=True)
    spurious.run(path, "nli", analyses={"atlas": {}}, out=tmp_path / "null", progress=False)
    html = (tmp_path / "null" / "report.html").read_text()
    assert "No shortcut found by the 1 analyses that ran" in html and "--canary" in html
    assert run["atlas"].status == "ok"
