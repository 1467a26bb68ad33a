"""Per-step CPU seconds and peak memory (issue 24 goal 1: time and memory of every step)."""

from __future__ import annotations

import numpy as np
import pytest

from spurious.data.synthetic import make_nli_artifacts
from spurious.runner import run
from spurious.utils.memory import PeakMeter, peak_rss_gib

linux_peak = pytest.mark.skipif(
    not PeakMeter(enabled=True).enabled, reason="needs Linux's resettable peak-RSS counter"
)


@linux_peak
def test_nested_steps_each_get_their_own_peak():
    meter = PeakMeter(enabled=True)
    with meter.span() as outer:
        with meter.span() as first:
            a = np.ones(64 * 2**20 // 8)  # 64 MiB, touched
            del a
        with meter.span() as second:
            b = np.ones(8 * 2**20 // 8)  # 8 MiB
            del b
    base = peak_rss_gib()
    assert first["peak_rss_gib"] - second["peak_rss_gib"] == pytest.approx(56 / 1024, abs=0.02)
    # The outer step saw the first step's peak although the counter was reset after it.
    assert outer["peak_rss_gib"] >= first["peak_rss_gib"]
    assert base is not None and base < first["peak_rss_gib"]


@linux_peak
def test_nested_steps_whose_records_become_equal_all_close():
    # An outer step and an inner one see the same peak when a step nested in both ends;
    # closing the inner one used to drop the outer's record (list.remove compares dicts
    # by value) and the outer then failed: partial_input failed inside an audit.
    meter = PeakMeter(enabled=True)
    with meter.span() as outer, meter.span() as inner:
        with meter.span():
            x = np.ones(2**21)
        y = np.ones(2**24)  # the inner step's own peak rises above the outer's record
        del x, y
    assert meter._open == []
    assert outer["peak_rss_gib"] >= inner["peak_rss_gib"] > 0


def test_disabled_meter_records_cpu_only():
    meter = PeakMeter(enabled=False)
    with meter.span() as used:
        sum(i * i for i in range(200_000))
    assert set(used) == {"cpu_s"} and used["cpu_s"] > 0


@linux_peak
def test_run_records_cpu_and_peak_of_each_analysis_and_artifact(monkeypatch):
    monkeypatch.setenv("SPURIOUS_PEAK_RSS", "1")
    ds = make_nli_artifacts(n=300, random_state=0).dataset
    result = run(ds, analyses={"partial_input": {"features": "bow", "n_folds": 3}}, seed=0)
    assert result["partial_input"].provenance.timings["peak_rss_gib"] > 0
    assert result.resources["partial_input"]["cpu_s"] > 0
    peaks = [v["peak_rss_gib"] for k, v in result.resources.items() if k.startswith("artifact:")]
    assert peaks and min(peaks) > 0  # the features the analysis asked for
    assert all(k.endswith("_s") for k in result.timings)  # times stay seconds only
