"""The report stays readable at scale (issue 20 part 6): capped finding tables, the full
per-example tables as Parquet beside the report, a page whose size does not follow the
number of rows, and model-free findings first on the first screen."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd
from markupsafe import Markup

from spurious.report import render
from spurious.report.components import MAX_FINDINGS, example_table, full_table_href
from spurious.report.overview import ReportEntry, build_overview, is_model_free
from spurious.report.sections import build_section
from spurious.results import Result


def _leakage_result(n: int) -> Result:
    """A partial_input-shaped result with ``n`` rows and 40 stored top examples."""
    rng = np.random.default_rng(0)
    score = rng.random(n)
    scores = pd.DataFrame(
        {
            "id": [f"e{i}" for i in range(n)],
            "label": rng.choice(["a", "b"], n),
            "p_gold_full": rng.random(n),
            "p_gold_hypothesis_only": score,
            "partial_input_score": score,
            "is_partial_input_issue": score > 0.9,
        }
    )
    top = [
        {"id": f"e{i}", "label": "a", "hypothesis": f"text {i}", "partial_input_score": 0.9}
        for i in range(40)
    ]
    return Result(
        "partial_input",
        scores,
        {"accuracy_full": 0.8, "majority_accuracy": 0.5},
        details={"top_examples": top, "label_names": ["a", "b"]},
        summary="s",
    )


def test_example_table_shows_the_top_rows_and_says_where_the_rest_are():
    rows = [[i, f"t{i}"] for i in range(40)]
    html = example_table(["id", "text"], rows, text_columns=["text"], full_table="x/s.parquet")
    assert html.count("<tr") == MAX_FINDINGS + 1  # header + 15
    assert "Top 15 of 40 shown" in html and 'href="x/s.parquet"' in html
    few = example_table(["id"], [[1], [2]])
    assert few.count("<tr") == 3 and "Top" not in few
    assert example_table(["id"], rows, max_rows=None).count("<tr") == 41
    # Dataset text is still escaped in the capped table.
    bad = example_table(["t"], [[Markup("<b>x</b>")]] * 20, text_columns=["t"])
    assert "<b>x" not in bad


def test_render_writes_the_full_tables_beside_the_report_and_links_them(tmp_path: Path):
    r = _leakage_result(500)
    page = render([r], tmp_path / "audit.html").read_text()
    table = tmp_path / full_table_href(r)
    pd.testing.assert_frame_equal(pd.read_parquet(table), r.scores)
    assert page.count(f'href="{full_table_href(r)}"') >= 2  # the capped table and the footer
    # 40 stored top examples, 15 shown.
    assert "Top 15 of 40 shown" in page


def test_page_size_does_not_follow_the_number_of_rows(tmp_path: Path):
    sizes = {}
    for n in (2_000, 50_000):
        page = render([_leakage_result(n)], tmp_path / f"n{n}" / "report.html")
        sizes[n] = page.stat().st_size
    # 25x the rows: the page may grow only by what is not per row (histograms' bins,
    # digits of counts), never in proportion.
    assert sizes[50_000] < 1.25 * sizes[2_000], sizes


def test_model_free_findings_lead_the_first_screen():
    assert is_model_free("atlas") and is_model_free("associations")
    assert not is_model_free("aflite") and not is_model_free("partial_input")

    def entry(name: str) -> ReportEntry:
        r = Result(name, pd.DataFrame(), {}, headline={"severity": "info", "text": name})
        return ReportEntry(name, build_section(r), name, r)

    overview = build_overview([entry("aflite"), entry("partial_input"), entry("atlas")])
    assert [f.name for f in overview.findings] == ["atlas", "aflite", "partial_input"]


def test_section_footer_links_the_full_table_once_per_section(tmp_path: Path):
    r = _leakage_result(100)
    html = build_section(r).html_body
    assert len(re.findall(r'class="muted full-table"', html)) == 1
    assert "100 rows" in html
