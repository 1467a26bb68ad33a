"""Section registry, HTML components and the prediction-bias section's scales."""

from __future__ import annotations

import ast
import pkgutil
import re
import sys
from pathlib import Path

import pandas as pd
import pytest
from markupsafe import Markup

import spurious.report.sections as sections
from spurious.exceptions import ParameterError
from spurious.report import SECTION_REGISTRY, Section, get_section_renderer, register_section
from spurious.report.components import (
    Cell,
    Plot,
    Stat,
    callout,
    example_table,
    figure_block,
    render_fragment,
    stat_block,
)
from spurious.report.plots import color_scale, contrast_ratio
from spurious.report.sections import build_section, generic_section, prediction_bias
from spurious.results import Result
from spurious.utils.registry import Registry

REPORT_SRC = Path(sections.__file__).resolve().parents[1]


# ---------------------------------------------------------------------------------------
# Registry
# ---------------------------------------------------------------------------------------
def test_registry_is_the_project_registry_and_holds_every_module() -> None:
    assert isinstance(SECTION_REGISTRY, Registry)
    modules = [m.name for m in pkgutil.iter_modules(sections.__path__)]
    assert {"partial_input", "aflite", "prediction_bias"} <= set(modules)
    # Importing the package imported every module in it (adding a section = one file).
    assert all(f"spurious.report.sections.{m}" in sys.modules for m in modules)
    assert {"partial_input", "aflite", "prediction_bias"} <= set(SECTION_REGISTRY.names())


def test_duplicate_section_refused_and_replace_allowed() -> None:
    @register_section("dup_test")
    def first(result: Result) -> Section:
        return Section("first", Markup(""))

    try:
        with pytest.raises(ValueError, match="report section named 'dup_test' is already"):

            @register_section("dup_test")
            def second(result: Result) -> Section:
                return Section("second", Markup(""))

        register_section("dup_test")(first)  # the same function again is fine

        @register_section("dup_test", replace=True)
        def third(result: Result) -> Section:
            return Section("third", Markup(""))

        assert get_section_renderer("dup_test") is third
    finally:
        SECTION_REGISTRY.unregister("dup_test")


def test_unknown_name_lists_known_ones() -> None:
    assert get_section_renderer("no_such_analysis") is generic_section
    with pytest.raises(ParameterError, match=r"Unknown report section 'nope'; known: \[.*'aflite'"):
        get_section_renderer("nope", strict=True)
    with pytest.raises(ParameterError, match="partial_input"):
        SECTION_REGISTRY["nope"]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_no_module_imports_another_modules_private_names() -> None:
    offences = []
    for path in REPORT_SRC.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("spurious"):
                offences += [f"{path.name}: {a.name}" for a in node.names if _private(a.name)]
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in {"plots", "components", "sections", "overview", "html"}
                and _private(node.attr)
            ):
                offences.append(f"{path.name}: {node.value.id}.{node.attr}")
    assert offences == []


@pytest.mark.parametrize("name", sorted(SECTION_REGISTRY))
def test_every_section_has_the_shared_frame(name: str) -> None:
    """Registered renderers (called directly, no fallback) assemble via result_section."""
    r = Result(name, pd.DataFrame({"id": ["a"]}), {}, summary="SUMMARY <1>", params={"k": 3})
    html = str(SECTION_REGISTRY[name](r).html_body)
    assert html.index("SUMMARY &lt;1&gt;") < html.index("<summary>Parameters</summary>")
    assert html.rstrip().endswith("</details>") and "<summary>Provenance</summary>" in html


def test_skipped_section() -> None:
    r = Result("x", pd.DataFrame(), {}, status="skipped", error="needs <eval>")
    section = build_section(r)
    assert section.status == "skipped" and "needs &lt;eval&gt;" in section.html_body


# ---------------------------------------------------------------------------------------
# Components
# ---------------------------------------------------------------------------------------
def test_example_table_never_trusts_dataset_text() -> None:
    html = example_table(
        ["id", "text", "pred"],
        [["<id>", Markup("<b>bold?</b>"), Cell(render_fragment("<i>{{ p }}</i>", p="x"))]],
        text_columns=["id", "text"],
        title="Examples <1>",
    )
    assert "&lt;b&gt;bold?&lt;/b&gt;" in html and "<b>" not in html
    assert "&lt;id&gt;" in html and "Examples &lt;1&gt;" in html
    assert "<i>x</i>" in html  # our own markup in a non-text column is kept


def test_stat_block_and_figure_block() -> None:
    html = stat_block(
        [Stat("Kept <n>", 1200.0, note="of 1,500"), Stat("Rate", 0.5, kind="percent")]
    )
    assert "1,200" in html and "50.0%" in html and "Kept &lt;n&gt;" in html
    assert stat_block([]) == ""
    uri = "data:image/png;base64,AAAA"
    assert 'src="data:image/png;base64,AAAA"' in figure_block([Plot(uri, "alt <x>", "cap")])
    # Anything but an inline image is dropped: a figure never loads from elsewhere.
    assert figure_block([Plot("https://example.com/x.png", "remote")]) == ""
    assert figure_block([Plot('data:image/png;base64,AA" onerror="x', "odd")]) == ""


def test_callout_kinds() -> None:
    assert 'role="alert"' in callout("m", kind="error")
    with pytest.raises(ValueError, match="kind"):
        callout("m", kind="shout")


# ---------------------------------------------------------------------------------------
# Prediction bias: colour scale and shared y-axis
# ---------------------------------------------------------------------------------------
def bias_result(biases: dict[tuple[str, str], float]) -> Result:
    rows = [
        {"model": m, "heuristic": h, "bias": b, "worse_performance": 0.5, "threshold": 3.0,
         "n_low": 900, "n_high": 1100}
        for (m, h), b in biases.items()
    ]  # fmt: skip
    models = list(dict.fromkeys(m for m, _ in biases))
    heuristics = list(dict.fromkeys(h for _, h in biases))
    curves = {
        h: {
            "threshold": [1, 2, 3, 4],
            "valid": [True] * 4,
            "bias": {m: [0.0, b / 2, b, b / 3] for (m, hh), b in biases.items() if hh == h},
            "selected": dict.fromkeys(models, 3.0),
        }
        for h in heuristics
    }
    return Result(
        "prediction_bias",
        pd.DataFrame({"id": ["a"]}),
        {f"threshold_{h}": 3.0 for h in heuristics},
        details={"models": models, "heuristics": heuristics, "table": rows, "curves": curves},
    )


def _cell_styles(html: str) -> dict[str, tuple[str, str]]:
    """Printed bias -> (background, text colour) of the bias table's cells."""
    table = html[html.index("bias-table") : html.index("</table>", html.index("bias-table"))]
    cells = re.findall(
        r'style="background-color:(#[0-9a-f]{6});color:(#[0-9a-f]{6})"[^>]*>([\d.]+)<br>', table
    )
    return {value: (bg, fg) for bg, fg, value in cells}


def _luminance_order(colours: list[str]) -> list[float]:
    return [contrast_ratio(c, "#000000") for c in colours]  # higher = lighter


def test_bias_table_is_colour_scaled_with_numbers_kept() -> None:
    html = str(
        build_section(
            bias_result(
                {("m1", "h"): 0.0, ("m2", "h"): 0.006, ("m1", "g"): 0.12, ("m2", "g"): 0.25}
            )
        ).html_body
    )
    styles = _cell_styles(html)
    assert set(styles) == {"0.000", "0.006", "0.120", "0.250"}  # the numbers are printed
    lightness = _luminance_order([styles[v][0] for v in ("0.000", "0.006", "0.120", "0.250")])
    assert lightness == sorted(lightness, reverse=True)  # larger bias, darker cell
    assert lightness[0] > lightness[-1] * 3
    for bg, fg in styles.values():
        assert contrast_ratio(bg, fg) >= 4.5
    assert "scale-legend" in html and "0.250" in html[html.index("scale-legend") :]


def test_tiny_biases_stay_pale() -> None:
    """The scale never tops out below BIAS_SCALE_MIN: 0.006 must not look like 0.25."""
    html = str(build_section(bias_result({("m", "h"): 0.006, ("m", "g"): 0.002})).html_body)
    bg, _ = _cell_styles(html)["0.006"]
    strong, _ = color_scale(0.25, 0.25)
    assert contrast_ratio(bg, "#000000") > 2 * contrast_ratio(strong, "#000000")


def test_color_scale_edges() -> None:
    assert color_scale(None, 1.0) is None and color_scale(float("nan"), 1.0) is None
    assert color_scale(5.0, 1.0) == color_scale(1.0, 1.0)  # clipped
    assert color_scale(0.5, 0.0) == color_scale(0.0, 1.0)  # degenerate scale: lightest


def test_bias_panels_share_the_y_axis(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[float | None] = []
    real = prediction_bias.bias_curve_plot

    def spy(curve, *, heuristic, metric="score", ymax=None):  # type: ignore[no-untyped-def]
        calls.append(ymax)
        return real(curve, heuristic=heuristic, metric=metric, ymax=ymax)

    monkeypatch.setattr(prediction_bias, "bias_curve_plot", spy)
    html = str(build_section(bias_result({("m", "h"): 0.006, ("m", "g"): 0.25})).html_body)
    assert len(calls) == 2 and calls[0] == calls[1] and calls[0] >= 0.25
    assert "All panels share one y-axis" in html
    assert html.count("data:image/svg+xml") == 2
