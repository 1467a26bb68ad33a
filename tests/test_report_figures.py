"""Report plots (issue 23 item 8): no legend covers the data, no figure is empty, plots
show at one text scale, example tables are folded, the header names a lone split plainly.

The legend check is made on the matplotlib objects themselves (the legend's box against
the bars, lines, points and labels of its axes, after layout), not on screenshots, so it
is exact and needs no browser.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from spurious.analysis import Analysis, load_analyses
from spurious.report import build_section, plots, render_report
from spurious.report.blocks import Plot, figure_block
from spurious.report.legends import legend_clashes, place_legends
from spurious.report.sections import cartography, minority, partial_input
from spurious.report.tables import example_table
from spurious.results import Result
from spurious.runner import run as spurious_run
from spurious.testing.data import default_inputs, default_inputs_for, synthetic_task
from spurious.testing.support import copy_analysis, run_on

REGISTRY = load_analyses()


class FigureSpy:
    """Wraps ``plots.figure_to_data_uri``: each figure's legend clashes just before it is
    saved (what the plot drew) and just after (what the report shows)."""

    def __init__(self) -> None:
        self.figures: list[Figure] = []
        self.drawn: list[list[str]] = []
        self._real = plots.figure_to_data_uri

    def __call__(self, fig: Figure, fmt: str = "svg") -> str:
        self.drawn.append(legend_clashes(fig))
        self.figures.append(fig)
        return self._real(fig, fmt)

    def shown(self) -> list[list[str]]:
        return [legend_clashes(fig) for fig in self.figures]


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[FigureSpy]:
    spy = FigureSpy()
    # Sections call plots.figure_to_data_uri; plots' own histograms look it up in plots.
    monkeypatch.setattr(plots, "figure_to_data_uri", spy)
    yield spy


def _data_axes(fig: Figure) -> list:
    """Axes that hold data (not colour bars or legends-only axes)."""
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


def _draws_something(ax) -> bool:
    return bool(ax.patches or ax.lines or ax.collections or ax.images)


# ---------------------------------------------------------------------------------------
# Legends
# ---------------------------------------------------------------------------------------
def test_histogram_legend_leaves_the_tallest_bar(spy: FigureSpy) -> None:
    """SNLI dev's partial-input scores peak at 0.3: the upper-left legend sat on the peak."""
    rng = np.random.default_rng(0)
    scores = np.clip(rng.normal(0.3, 0.12, 5000), 0, 1)
    plots.score_histogram(scores, flagged=scores > 0.9, xlabel="partial-input score")
    assert any(c.startswith("bar") for c in spy.drawn[0])  # where the plot put it
    assert spy.shown() == [[]]  # where the report shows it
    legend = spy.figures[0].axes[0].get_legend()
    assert legend.get_texts()[0].get_text().startswith("not flagged")


def test_legend_without_a_free_corner_goes_outside() -> None:
    fig = Figure(figsize=(3, 2))
    ax = fig.add_subplot()
    ax.bar(range(10), np.ones(10), width=1.0, label="flat")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper right")
    assert legend_clashes(fig) != []
    place_legends(fig)
    assert legend_clashes(fig) == []
    anchor = ax.get_legend().get_bbox_to_anchor()
    assert anchor.x0 > ax.get_window_extent().x1  # right of the axes


def test_clear_legend_is_left_where_the_plot_put_it() -> None:
    fig = Figure(figsize=(3, 2))
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1], label="rising")
    legend = ax.legend(loc="lower right")
    assert legend_clashes(fig) == []
    before = legend.get_window_extent().bounds
    place_legends(fig)
    assert legend.get_window_extent().bounds == before


def test_legend_clash_sees_lines_points_and_labels() -> None:
    fig = Figure(figsize=(9, 3))
    axes = fig.subplots(1, 3)
    axes[0].axhline(0.9, label="line")
    axes[1].scatter([0.1], [0.92], label="point")
    axes[2].text(0.1, 0.92, "label")
    axes[2].plot([0, 1], [0, 0], label="low line")
    for ax in axes:
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.legend(loc="upper left")
    kinds = legend_clashes(fig)
    assert [k.split(" ")[0] for k in kinds] == ["line", "points", "text"]


def test_shading_under_the_grid_and_clipped_parts_do_not_count() -> None:
    fig = Figure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.axvspan(0, 1, color="#e5e7eb", zorder=0)  # background: the legend may sit on it
    ax.plot([0, 1], [0.1, 0.1], label="low")
    ax.bar([1.5], [1.0], width=1.0)  # drawn only up to x = 1 (clipped)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0))  # outside, over the clipped bar
    assert legend_clashes(fig) == []
    ax.legend(loc="upper left")
    assert legend_clashes(fig) == []


def test_accuracy_bars_move_the_legend_off_a_tall_partial_bar(spy: FigureSpy) -> None:
    """A hypothesis-only accuracy near the full one used to run under the upper-right
    legend."""
    partial_input.accuracy_plot(
        [
            partial_input.BarSpec("full", 0.93, 0.92, 0.94, "full"),
            partial_input.BarSpec("premise only", 0.90, 0.89, 0.91),
            partial_input.BarSpec("hypothesis only", 0.91, 0.90, 0.92),
        ],
        baseline=0.34,
    )
    assert spy.drawn[0] != [] and spy.shown() == [[]]


# ---------------------------------------------------------------------------------------
# Every analysis' section on synthetic data: legends clear, no empty figure
# ---------------------------------------------------------------------------------------
def _fast(name: str) -> Analysis:
    cls = REGISTRY[name]
    return cls(**cls.fast_params)


#: Analyses that run on the synthetic NLI data, together in one run (with two made-up
#: models' predictions); the others (multiple choice, QA) run one by one below.
NLI_ANALYSES = [n for n in REGISTRY.names() if synthetic_task(_fast(n)) == "nli"]
OTHER_ANALYSES = [n for n in REGISTRY.names() if n not in NLI_ANALYSES]


@pytest.fixture(scope="module")
def full_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run directory of every NLI analysis (fast parameters) with its report."""
    inputs = default_inputs("nli")
    where = tmp_path_factory.mktemp("full")
    files = []
    for p in inputs.predictions:
        rows = [{"id": str(i), "prediction": str(v)} for i, v in zip(p.ids, p.values, strict=True)]
        path = where / f"{p.name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        files.append(path)
    analyses = {n: dict(REGISTRY[n].fast_params) for n in NLI_ANALYSES}
    run = spurious_run(
        inputs.train, eval=inputs.eval, analyses=analyses, predictions=files,
        out=where / "run", progress=False,
    )  # fmt: skip
    assert {n: r.status for n, r in run.results.items()} == dict.fromkeys(NLI_ANALYSES, "ok")
    return where / "run"


def _check_figures(name: str, html: str, spy: FigureSpy) -> None:
    assert html.count("<figure") == len(spy.figures), name
    for fig, clashes in zip(spy.figures, spy.shown(), strict=True):
        assert clashes == [], f"{name}: {clashes}"
        for ax in _data_axes(fig):
            assert _draws_something(ax), f"{name}: an empty axes in a figure"


@pytest.mark.parametrize("name", NLI_ANALYSES)
def test_section_figures_of_a_full_run_are_drawn_with_legends_clear(
    name: str, full_run: Path, spy: FigureSpy
) -> None:
    result = Result.load(full_run / name)
    html = str(build_section(result).html_body)
    _check_figures(name, html, spy)


@pytest.mark.parametrize("name", OTHER_ANALYSES)
def test_other_section_figures_are_drawn_with_legends_clear(name: str, spy: FigureSpy) -> None:
    analysis = _fast(name)
    result = run_on(copy_analysis(analysis), default_inputs_for(analysis)().context())
    _check_figures(name, str(build_section(result).html_body), spy)


# ---------------------------------------------------------------------------------------
# Text scale and sizes
# ---------------------------------------------------------------------------------------
def _svg_font_px(uri: str) -> float:
    """CSS px of 9-pt text when the image is shown at its width attribute: the SVG's
    width in pt and the attribute in px give the scale."""
    svg = base64.b64decode(uri.split(",", 1)[1])[:3000].decode()
    width_pt = float(re.search(r'width="([0-9.]+)pt"', svg)[1])
    width_px, _ = plots.image_css_size(uri)
    return 9 * width_px / width_pt


def test_plots_show_at_one_text_scale_whatever_their_size() -> None:
    small = plots.score_histogram([0.1, 0.5, 0.9])
    big = cartography.data_map_plot([0.9, 0.2, 0.5], [0.05, 0.04, 0.3], [1.0, 0.0, 0.5])
    assert _svg_font_px(small) == pytest.approx(_svg_font_px(big), rel=0.01)
    assert _svg_font_px(small) == pytest.approx(13.75, rel=0.01)  # 9 pt at 110 px/inch
    html = str(figure_block([Plot(small, "a"), Plot(big, "b")]))
    w_small, h_small = plots.image_css_size(small)
    assert f'width="{w_small}" height="{h_small}"' in html
    # The box never grows past the plot (no small plot in a full-width box) and may
    # shrink a fifth to share a row.
    assert f"max-width: min(100%, {w_small + 22}px)" in html
    assert f"flex: 1 1 {round(w_small * 0.8 + 22)}px" in html


def test_two_data_maps_share_a_row_at_full_scale() -> None:
    uri = cartography.data_map_plot([0.9, 0.2, 0.5], [0.05, 0.04, 0.3], [1.0, 0.0, 0.5])
    width, _ = plots.image_css_size(uri)
    # The report's column is 1,140 px at 1366 px (1240 max-width less paddings); two
    # boxes (22 px of padding and border each) and the 16 px gap.
    assert 2 * (width + 22) + 16 <= 1140


def test_minority_chart_is_shown_at_its_size_with_the_legend_below(spy: FigureSpy) -> None:
    rows = [
        {"cluster": i, "n_train": 100, "label_counts": {"a": 60 + i, "b": 40 - i}} for i in range(3)
    ]
    width, height = plots.image_css_size(minority.cluster_label_plot(rows, ["a", "b"]))
    # The figure's own size plus the 0.1 in that bbox_inches="tight" pads each side with.
    assert width <= (6.0 + 0.2) * 110 and height <= (0.3 * 3 + 1.2 + 0.2) * 110
    (fig,) = spy.figures
    (legend,) = fig.legends
    assert legend.get_window_extent().y1 <= fig.axes[0].get_window_extent().y0


# ---------------------------------------------------------------------------------------
# Folded example tables, header
# ---------------------------------------------------------------------------------------
def test_example_tables_are_folded_with_their_title_and_count() -> None:
    rows = [[i, f"text {i}"] for i in range(40)]
    html = str(example_table(["id", "text"], rows, text_columns=["text"], title="Leaky"))
    assert html.startswith('<details class="block examples-block"><summary>Leaky ')
    assert "(top 15 of 40)" in html and " open" not in html.split(">", 1)[0]
    few = str(example_table(["id"], [[1]], title="One"))
    assert "(1 row)" in few
    flat = str(example_table(["id"], [[1]], title="Inside", collapsed=False))
    assert flat.startswith("<h4>Inside</h4>") and "<details" not in flat


def test_partial_input_section_folds_its_examples() -> None:
    scores = pd.DataFrame({"id": ["a"], "partial_input_score": [0.9]})
    top = [{"id": "a", "hypothesis": "h", "label": "x", "partial_input_score": 0.9}]
    r = Result("partial_input", scores, {"accuracy_full": 0.8}, details={"top_examples": top})
    html = str(build_section(r).html_body)
    assert '<details class="block examples-block"><summary>Most leaky examples' in html


def test_header_names_a_lone_split_without_a_role(tmp_path: Path) -> None:
    from spurious.utils.io import atomic_write_json

    Result("token_pmi", pd.DataFrame({"id": [1]}), {"m": 1.0}).save(tmp_path / "token_pmi")
    atomic_write_json(
        tmp_path / "manifest.json",
        {"datasets": {"train": {"name": "snli/dev", "n": 9842}}, "analyses": ["token_pmi"]},
    )
    html = render_report(tmp_path).read_text(encoding="utf-8")
    line = re.search(r'<p class="tagline data-line">(.*?)</p>', html, re.S)[1]
    assert " ".join(line.split()) == "Data: <strong>snli/dev</strong> (9,842 examples)"


# ---------------------------------------------------------------------------------------
# Browser: every section of the full run, in headless Chromium
# ---------------------------------------------------------------------------------------
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")

# Per section: its box, its figures (image decoded? shown size against its own size,
# boxes) and its folded blocks, measured by the page itself.
_LAYOUT_JS = """
const r = (el) => { const b = el.getBoundingClientRect();
  return [b.left + scrollX, b.top + scrollY, b.right + scrollX, b.bottom + scrollY]; };
return [...document.querySelectorAll('#sections > section')].map((s) => ({
  id: s.id, box: r(s),
  figures: [...s.querySelectorAll('figure')].map((f) => {
    const img = f.querySelector('img');
    return {box: r(f), img: r(img), complete: img.complete, natural: img.naturalWidth,
            attr: Number(img.getAttribute('width')), shown: img.getBoundingClientRect().width,
            column: f.parentElement.getBoundingClientRect().width};
  }),
  folded: [...s.querySelectorAll('details.examples-block')].map((d) => d.open),
}));
"""


def _overlap(a: list[float], b: list[float]) -> bool:
    return a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1


@pytest.mark.browser
@pytest.mark.skipif(
    not CHROMIUM.exists() or not CHROMEDRIVER.exists(),
    reason="needs /usr/bin/chromium and /usr/bin/chromedriver "
    "(apt-get install chromium chromium-driver; see .ci/apt-packages.txt)",
)
def test_every_section_in_headless_chromium(
    full_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    webdriver = pytest.importorskip("selenium.webdriver", reason="needs the selenium package")
    from selenium.webdriver.chrome.service import Service

    monkeypatch.setenv("SE_OFFLINE", "true")  # Selenium Manager never downloads anything
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--force-device-scale-factor=1",
        f"--user-data-dir={tmp_path / 'chrome-profile'}",
        "--window-size=1366,900",
    ):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        driver.get((full_run / "report.html").resolve().as_uri())
        assert driver.execute_script("return document.readyState") == "complete"
        sections = driver.execute_script(_LAYOUT_JS)
        assert {s["id"] for s in sections} == set(NLI_ANALYSES)
        for s in sections:
            name = s["id"]
            assert s["box"][3] - s["box"][1] > 100, f"{name}: an empty section"
            # Example tables start folded.
            assert not any(s["folded"]), f"{name}: an example table is open at load"
            for f in s["figures"]:
                assert f["complete"] and f["natural"] > 0, f"{name}: an image did not decode"
                # Shown at most at its own size, shrunk at most a fifth unless the
                # column itself is narrower (never a small plot stretched, or squeezed).
                assert f["shown"] <= f["attr"] + 1, f"{name}: a plot stretched past its size"
                assert f["shown"] >= min(0.79 * f["attr"], f["column"] - 24), name
                img, box = f["img"], f["box"]
                assert box[0] <= img[0] and img[2] <= box[2] + 0.5, f"{name}: image overflows"
            boxes = [f["box"] for f in s["figures"]]
            clashes = [
                (i, j) for i in range(len(boxes)) for j in range(i) if _overlap(boxes[i], boxes[j])
            ]
            assert clashes == [], f"{name}: figures overlap"

        # Each finding card's link leads to its section, and its folded tables open.
        for name in NLI_ANALYSES:
            links = driver.find_elements("css selector", f'.finding-more a[href="#{name}"]')
            if not links:
                continue  # an analysis without a card (no verdict) is reached from the sections
            links[0].click()
            top, at_end = driver.execute_script(
                "return [document.getElementById(arguments[0]).getBoundingClientRect().top, "
                "scrollY + innerHeight >= document.documentElement.scrollHeight - 2]",
                name,
            )
            # At the top of the window, or as near as the end of the page lets it come.
            assert abs(top) < 5 or (at_end and 0 < top < 900), f"{name}: link went elsewhere"
        for summary in driver.find_elements("css selector", "details.examples-block > summary"):
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", summary)
            summary.click()
            table = summary.find_element("xpath", "..").find_element("css selector", "table")
            assert table.is_displayed() and table.size["height"] > 20
        severe = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
        assert severe == [], severe
    finally:
        driver.quit()
