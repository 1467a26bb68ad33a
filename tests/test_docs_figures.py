"""Figures the README quotes equal the committed results they come from.

A benchmark re-run rewrites its JSON; the prose that quotes it is edited by hand and
drifted more than once (the canary table, the encoding rows). Each entry below names a
result file, the path of one value in it, how the README prints that value, and the test
checks that the printed text is in the README. Re-running a benchmark whose figures
change then fails here until the prose follows. The list grows as figures are re-run; the
README's other sections are checked in ``test_docs_figures_readme.py`` and
``test_docs_figures_readme_speed.py``, the method pages (``docs/methods/``) the same way
in ``test_docs_figures_methods.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests._figures import ROOT, normalised, result, value

README = ROOT / "README.md"
MODELS = (
    "logreg-bow",
    "logreg-tfidf",
    "mlp256-minilm-s0",
    "mlp256-minilm-s1",
    "mlp64-minilm-s0",
    "mlp256-minilm-hyp-s0",
)
ADVERSARIES = ("bow", "tfidf", "minilm", "minilm_ft")


def _fairness_rows() -> list[tuple[str, str]]:
    """The README's SNLI fairness table, a row per model: 'full | bow | tfidf | ...'."""
    matrix = {
        (r["model"], r["adversary"]): r["accuracy"] for r in result("fairness_snli.json")["matrix"]
    }
    rows = []
    for model in MODELS:
        cells = [matrix[(model, a)] for a in ("none", *ADVERSARIES)]
        rows.append((model, " | ".join(f"{c:.3f}" for c in cells) + " |"))
    kept = result("fairness_snli.json")["n_selected"]
    rows.append(("kept", "| " + " | ".join(f"{kept[a]:,.0f}" for a in ADVERSARIES) + " |"))
    return rows


def _fairness_tau() -> list[tuple[str, str]]:
    out = []
    for r in result("fairness_snli.json")["ranking"]:
        text = (
            f"{r['kendall_tau']:+.2f} [{r['kendall_tau_ci_low']:.2f}, "
            f"{r['kendall_tau_ci_high']:.2f}]"
        )
        if r["kendall_tau_ci_low"] < 0:  # the README signs both bounds of an interval across 0
            text = (
                f"{r['kendall_tau']:+.2f} [{r['kendall_tau_ci_low']:+.2f}, "
                f"{r['kendall_tau_ci_high']:+.2f}]"
            )
        out.append((r["adversary"], text))
    return out


#: (what, result file, path to the value, how the README prints it)
# fmt: off
FIGURES: list[tuple[str, str, tuple[Any, ...], str]] = [
    ("MMLU quick audit, cold", "mcq_audit.json",
     ("summary", "cold", "median_wall_s"), "takes {:.1f} s wall"),
    ("MMLU quick audit, cold CPU", "mcq_audit.json",
     ("summary", "cold", "median_cpu_s"), "{:.1f} CPU-s with a cold cache"),
    ("MMLU quick audit, warm", "mcq_audit.json",
     ("summary", "warm", "median_wall_s"), "and {:.1f} s warm"),
    ("AFLite default run", "aflite_default.json",
     ("after", "median_wall_s"), "{:.1f} s for the analysis with cached features"),
    ("AFLite default, per round", "aflite_default.json",
     ("after", "median_round_s"), "{:.2f} s per later round"),
    ("AFLite default, earlier solver", "aflite_default.json",
     ("before", "median_round_s"), "against {:.1f} s per round for the earlier solver"),
    ("AFLite default, ratio", "aflite_default.json",
     ("speedup", "per_round_median"), "({:.1f}x per round"),
    ("probe, dense", "probe.json",
     ("cases", "dense_10k_x_1536", "ours_median_s"), "| {:.2f} s vs"),
    ("probe, dense sklearn", "probe.json",
     ("cases", "dense_10k_x_1536", "sklearn_median_s"), "s vs {:.2f} s ("),
    ("probe, dense ratio", "probe.json",
     ("cases", "dense_10k_x_1536", "speedup_vs_sklearn"), "({:.1f}x; 16 iterations"),
    ("probe, sparse", "probe.json",
     ("cases", "snli_tfidf_sparse", "ours_median_s"), "| {:.2f} s vs"),
    ("encoding, SNLI stream", "encode.json",
     ("workloads", "snli", "variants", "ours auto (bf16)", "sentences_per_s"), "| {:.0f} sentences/s bf16,"),
    ("encoding, snli, ratio", "encode.json",
     ("workloads", "snli", "variants", "ours auto (bf16)", "ratio_vs_sentence_transformers"),
     "bf16, {:.1f}x sentence-transformers"),
    ("encoding, distinct", "encode.json",
     ("workloads", "unique", "variants", "ours auto (bf16)", "sentences_per_s"), "| {:.0f} sentences/s bf16,"),
    ("encoding, unique, ratio", "encode.json",
     ("workloads", "unique", "variants", "ours auto (bf16)", "ratio_vs_sentence_transformers"),
     "bf16, {:.1f}x sentence-transformers"),
    ("encoding fill, 2,000", "encode_fill.json",
     ("workloads", "distinct_2000", "by_budget", "1024", "fill"), "| 2,000 of SNLI dev | {:.2f} |"),
    ("encoding fill, 19k", "encode_fill.json",
     ("workloads", "test_dev_hypotheses", "by_budget", "1024", "fill"), "(19,261) | {:.2f} |"),
]
# fmt: on


def _expected(name: str, path: tuple[Any, ...], template: str) -> str:
    return template.format(value(name, path))


@pytest.mark.parametrize(("what", "name", "path", "template"), FIGURES, ids=[f[0] for f in FIGURES])
def test_the_readme_quotes_the_result(what, name, path, template):
    text = normalised(README)
    expected = _expected(name, path, template)
    assert expected in text, f"{what}: README should say {expected!r} (bench/results/{name})"


@pytest.mark.parametrize(("model", "cells"), _fairness_rows(), ids=[r[0] for r in _fairness_rows()])
def test_the_fairness_table_is_the_result(model, cells):
    assert cells in README.read_text(encoding="utf-8"), (
        f"the README's SNLI fairness row of {model} should end {cells!r} "
        "(bench/results/fairness_snli.json)"
    )


@pytest.mark.parametrize(("adversary", "tau"), _fairness_tau(), ids=[r[0] for r in _fairness_tau()])
def test_the_fairness_taus_are_the_result(adversary, tau):
    assert tau in README.read_text(encoding="utf-8"), (
        f"Kendall tau under {adversary}: README should say {tau!r}"
    )


def _amplified_rows() -> list[tuple[str, list[str]]]:
    """The README's bias-amplified table: anti-biased n, the full model's accuracy, the
    drop with its interval (points), and its spread over the marking seeds."""
    table = result("amplify_snli.json")["table1"]
    spread = result("amplify_snli_marking_spread.json")["definitions"]

    def interval(mean: float, lo: float, hi: float) -> str:
        return f"{100 * mean:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"

    rows = []
    for name, row in table.items():
        drop = row["drop_biased_minus_random"]
        over = spread[name]["drop_over_marking_seeds"]
        rows.append(
            (
                name,
                [
                    f"| {row['n_test_anti_biased']:,} | {100 * row['full']['mean']:.1f}%",
                    interval(drop["mean"], drop["ci_low"], drop["ci_high"]),
                    interval(over["mean"], over["ci_low"], over["ci_high"]),
                    f"{100 * over['max']:.1f} to {100 * over['min']:.1f}",
                ],
            )
        )
    return rows


@pytest.mark.parametrize(("definition", "texts"), _amplified_rows(), ids=lambda r: str(r)[:30])
def test_the_amplified_split_table_is_the_result(definition, texts):
    readme = README.read_text(encoding="utf-8")
    row = next(
        line
        for line in readme.splitlines()
        if line.startswith(
            f"| {definition.replace('_', '-').replace('-cartography', ' cartography')} |"
        )
    )
    missing = [t for t in texts if t not in row]
    assert not missing, f"the README's amplified-split row of {definition} lacks {missing}: {row}"


def _debiasing_rows() -> list[tuple[str, str]]:
    """The README's fast-path debiasing table: dev and hard accuracy (mean ± sd), overlap bias."""
    rows = []
    for r in result("debiasing.json")["snli"]["table"]:
        acc = f"{r['accuracy']:.3f} ± {r['accuracy_sd']:.3f}"
        hard = f"{r['hard_accuracy']:.3f} ± {r['hard_accuracy_sd']:.3f}"
        rows.append((r["method"], f"| {hard} | {r['bias_overlap_rate']:.3f} |", acc))
    return rows


@pytest.mark.parametrize(
    ("method", "hard", "acc"), _debiasing_rows(), ids=[r[0] for r in _debiasing_rows()]
)
def test_the_debiasing_table_is_the_result(method, hard, acc):
    readme = README.read_text(encoding="utf-8").splitlines()
    rows = [line for line in readme if acc in line and hard in line]
    assert rows, f"no README row has {method}'s {acc} and {hard} (bench/results/debiasing.json)"
