"""What a new user meets in the terminal and the report (issue 23 items 2 and 5, and the
prediction-bias section's bootstrap sentence)."""

from __future__ import annotations

import re

import pandas as pd
from click.testing import CliRunner

from spurious.cli import main
from spurious.cli.output import summary_table
from spurious.report.sections.prediction_bias import _quantile_words
from spurious.results import Result


def test_demo_help_lists_no_data_options():
    out = CliRunner().invoke(main, ["demo", "--help"]).output
    for option in ("--split", "--allow-network", "--max-dropped"):
        assert option not in out, option
    leakage = CliRunner().invoke(main, ["leakage", "--help"]).output
    assert "--split" in leakage and "--allow-network" in leakage  # still where they apply


def _result(text: str, severity: str = "moderate") -> Result:
    return Result(
        "partial_input",
        pd.DataFrame({"id": []}),
        {},
        headline={"text": text, "verdict": "moderate leakage", "severity": severity},
    )


def test_summary_table_wraps_and_never_cuts_a_number(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    text = (
        "hypothesis-only accuracy 0.49 vs 0.34 majority (Delta_maj +0.257 [+0.213, +0.301]); "
        "full input 0.52"
    )
    summary_table({"partial_input": _result(text)})
    out = capsys.readouterr().out
    body = " ".join(line.strip() for line in out.splitlines()[2:-2])
    for number in ("0.49", "0.34", "+0.257", "[+0.213,", "+0.301]);", "0.52"):
        assert number in body.split(), number  # whole, never cut
    assert all(len(line) <= 80 for line in out.splitlines())


def test_summary_table_explains_its_marks_once(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    summary_table({"a": _result("x", "high"), "b": _result("y", "low")})
    out = capsys.readouterr().out
    assert out.count("marks:") == 1
    assert re.search(r"!!! high, !! moderate, ! low, - none", out)


def test_bootstrap_quantiles_in_words():
    assert _quantile_words((0.025, 0.975)) == "2.5% and 97.5%"
    assert _quantile_words((0.05, 0.95)) == "5% and 95%"


def test_learning_curve_caption_names_the_dashed_line_only_when_drawn():
    from spurious.report.sections.cartography import _curve_caption

    train_only = {"full": {"train": [[1, 0.5], [2, 0.7]]}}
    both = {"full": {"train": [[1, 0.5]], "eval": [[1, 0.4]]}}
    assert "dashed" not in _curve_caption(train_only)
    assert "dashed: evaluation split" in _curve_caption(both)


def test_learning_curve_has_whole_epoch_ticks(monkeypatch):
    from matplotlib.figure import Figure

    from spurious.report.sections import cartography

    seen = []
    real = Figure.add_subplot

    def spy(self, *a, **k):
        ax = real(self, *a, **k)
        seen.append(ax)
        return ax

    monkeypatch.setattr(Figure, "add_subplot", spy)
    cartography.learning_curve_plot({"full": {"train": [[1, 0.5], [2, 0.6], [3, 0.7]]}})
    ticks = seen[-1].get_xticks()
    assert all(float(t).is_integer() for t in ticks), ticks


def test_report_header_calls_a_lone_split_data():
    from spurious.report.html import _dataset_rows

    alone = _dataset_rows({"train": {"name": "snli/dev", "n": 10, "fingerprint": "f"}})
    assert [r["role"] for r in alone] == ["data"]
    both = _dataset_rows({"train": {"name": "a"}, "eval": {"name": "b"}})
    assert [r["role"] for r in both] == ["train", "eval"]


def test_shared_inputs_get_their_own_line_not_the_first_analysis_time(capsys):
    """Issue 23 item 4: an encoding built for the first analysis that asks is the run's."""
    import spurious
    from spurious.cli.output import summary_table
    from spurious.data.synthetic import make_nli_artifacts

    ds = make_nli_artifacts(n=150, random_state=0).dataset
    run = spurious.run(
        ds,
        analyses={"partial_input": {"features": "bow", "n_folds": 3},
                  "pvi": {"features": "bow", "n_folds": 3}},
        progress=False,
    )  # fmt: skip
    first = run["partial_input"].provenance.timings
    assert first["shared_artifacts_s"] > 0  # it built the bag-of-words matrices
    assert run["pvi"].provenance.timings["shared_artifacts_s"] < first["shared_artifacts_s"]
    summary_table(run.results, {**run.timings, "artifact:features:featurizer=minilm_s": 12.5})
    out = capsys.readouterr().out
    assert "shared inputs (built once per run; not in the times above):" in out
    assert "features" in out and "12.5s" in out


def test_long_steps_show_progress(capsys):
    """Issue 23 item 3: PECO says which step it is on; training dynamics count examples."""
    import spurious
    from spurious.analysis import get_analysis
    from spurious.data.synthetic import make_nli_artifacts

    ds = make_nli_artifacts(n=240, random_state=0).dataset
    analyses = {
        n: {**get_analysis(n).fast_params, "features": "bow"} for n in ("peco", "cartography")
    }
    spurious.run(ds, analyses=analyses, progress=True)
    err = capsys.readouterr().err
    assert "peco: 0/" in err and "steps, now k-means, seed 1/" in err
    assert "now shuffled-label null" in err
    assert "training dynamics (full)" in err and "epoch 1/" in err and "ex/s" in err
    spurious.run(ds, analyses=analyses, progress=False)
    assert "peco: " not in capsys.readouterr().err
