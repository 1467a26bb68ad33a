"""The canary: planting shortcuts with known rows, and scoring analyses against them."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from spurious.canary import CanaryResult, _judge, _summarise, default_plants, run_canary
from spurious.cli import main
from spurious.data import Dataset
from spurious.data.plant import plant_shortcut
from spurious.data.synthetic import make_nli_artifacts
from spurious.exceptions import ParameterError


@pytest.fixture(scope="module")
def clean():
    """Template NLI without the cue: nothing in one sentence gives the label away."""
    return make_nli_artifacts(n=300, artifact_rate=0.0, random_state=0).dataset


# -- planting ---------------------------------------------------------------------------
def test_token_plant_changes_exactly_the_planted_rows(clean):
    out = plant_shortcut(clean, "token", rate=0.2, label="neutral", random_state=1)
    neutral = (clean.frame["label"] == "neutral").to_numpy()
    assert out.planted.sum() == round(0.2 * neutral.sum()) == out.spec["n_planted"]
    assert not (out.planted & ~neutral).any()
    changed = (out.dataset.frame["hypothesis"] != clean.frame["hypothesis"]).to_numpy()
    np.testing.assert_array_equal(changed, out.planted)
    assert (out.dataset.frame["premise"] == clean.frame["premise"]).all()
    assert list(out.dataset.ids) == list(clean.ids)
    assert (out.dataset.labels == clean.labels).all()
    planted_words = out.dataset.frame["hypothesis"][out.planted].str.split()
    original_words = clean.frame["hypothesis"][out.planted].str.split()
    assert (planted_words.str.len() == original_words.str.len() + 1).all()
    assert planted_words.map(lambda w: w.count("zqxjv") == 1).all()
    assert out.dataset.fingerprint != clean.fingerprint


def test_length_and_overlap_plants_change_what_they_say(clean):
    length = plant_shortcut(clean, "length", rate=0.5, label="entailment", random_state=2)
    n_before = clean.frame["hypothesis"].str.split().str.len().to_numpy()
    n_after = length.dataset.frame["hypothesis"].str.split().str.len().to_numpy()
    assert (n_after[length.planted] > n_before[length.planted]).all()
    assert (n_after[~length.planted] == n_before[~length.planted]).all()

    pairs = Dataset.from_frame(
        pd.DataFrame(
            {
                "premise": ["a dog runs on the grass"] * 40,
                "hypothesis": ["some animal is moving outside now"] * 40,
                "label": ["contradiction", "entailment"] * 20,
            }
        ),
        "nli",
    )
    overlap = plant_shortcut(pairs, "overlap", rate=1.0, label="contradiction", random_state=2)

    def share_in_premise(frame: pd.DataFrame) -> np.ndarray:
        return np.array(
            [
                np.mean([w in set(p.split()) for w in h.split()])
                for p, h in zip(frame["premise"], frame["hypothesis"], strict=True)
            ]
        )

    after = share_in_premise(overlap.dataset.frame)
    rows = overlap.planted
    assert rows.sum() == 20 and share_in_premise(pairs.frame).max() == 0.0
    assert 0.25 < after[rows].mean() < 0.75  # each word swapped with probability 1/2
    assert (after[~rows] == 0).all()
    n_words = pairs.frame["hypothesis"].str.split().str.len().to_numpy()
    words = overlap.dataset.frame["hypothesis"].str.split().str.len().to_numpy()
    assert (words == n_words).all()  # the length is kept: only the overlap moves


def test_plant_is_deterministic_and_one_row_at_least(clean):
    a = plant_shortcut(clean, "token", rate=0.3, random_state=5)
    b = plant_shortcut(clean, "token", rate=0.3, random_state=5)
    pd.testing.assert_frame_equal(a.dataset.frame, b.dataset.frame)
    assert plant_shortcut(clean, "token", rate=0.0001).planted.sum() == 1


def test_plant_errors_name_the_argument(clean):
    with pytest.raises(ParameterError, match="'kind'"):
        plant_shortcut(clean, "colour")
    with pytest.raises(ParameterError, match=r"'field'.*premise"):
        plant_shortcut(clean, field="sentence")
    with pytest.raises(ParameterError, match="'label'"):
        plant_shortcut(clean, label="maybe")
    with pytest.raises(ParameterError, match="'rate'"):
        plant_shortcut(clean, rate=0.0)
    with pytest.raises(ParameterError, match=r"'token'.*occurs in field 'premise' \(row 0"):
        plant_shortcut(clean, token="man")
    text = Dataset.from_frame(pd.DataFrame({"text": ["a b", "c d"], "label": ["x", "y"]}), "text")
    with pytest.raises(ParameterError, match="two text fields"):
        plant_shortcut(text, "overlap")
    assert [p["kind"] for p in default_plants(text)] == ["token", "length"]


# -- judging ----------------------------------------------------------------------------
def _row(analysis, plant, rate, severity, n_planted=0):
    return {
        "analysis": analysis, "n": 100, "repeat": 0, "plant": plant, "kind": plant,
        "field": None, "rate": rate, "n_planted": n_planted, "status": "ok",
        "severity": severity, "inconclusive": False, "value": None,
        "precision": np.nan, "recall": np.nan, "seconds": 0.0,
    }  # fmt: skip


def test_detection_needs_an_unflagged_unplanted_copy():
    frame = _judge(
        pd.DataFrame(
            [
                _row("clean", "none", 0.0, "none"),
                _row("clean", "token", 0.01, "none", 1),
                _row("clean", "token", 0.1, "low", 10),
                _row("clean", "token", 0.2, "high", 20),
                _row("leaky", "none", 0.0, "low"),
                _row("leaky", "token", 0.1, "low", 10),
                _row("leaky", "token", 0.2, "moderate", 20),
                _row("info", "none", 0.0, "info"),
                _row("info", "token", 0.2, "info", 20),
            ]
        )
    )
    clean = frame[(frame["analysis"] == "clean") & (frame["plant"] != "none")]
    assert clean["detected"].tolist() == [0.0, 1.0, 1.0]
    assert clean["escalated"].tolist() == [0.0, 1.0, 1.0]
    leaky = frame[(frame["analysis"] == "leaky") & (frame["plant"] != "none")]
    # Already flagged without the plant: detection is undecided, escalation is not.
    assert leaky["detected"].isna().all()
    assert leaky["escalated"].tolist() == [0.0, 1.0]
    info = frame[(frame["analysis"] == "info") & (frame["plant"] != "none")]
    assert info["detected"].isna().all() and info["escalated"].isna().all()
    assert clean["chance_precision"].tolist() == [0.01, 0.1, 0.2]

    result = CanaryResult(frame, _summarise(frame), {"rates": [0.01, 0.1, 0.2], "label": "x"})
    thresholds = result.thresholds().set_index("analysis")["min_rate_detected"]
    assert thresholds["clean"] == 0.1 and thresholds["leaky"] == 0.2
    assert np.isnan(thresholds["info"])
    assert any("clean detects token planted in >= 10.0%" in s for s in result.sentences())


# -- end to end -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def canary_result(clean):
    return run_canary(
        clean,
        analyses={"pvi": {"features": "bow", "n_resamples": 100}},
        plants=[{"kind": "token"}, {"kind": "token", "field": "premise"}],
        rates=[0.01, 0.9],
        label="neutral",
        random_state=0,
    )


@pytest.mark.slow
def test_canary_detects_a_strong_token_and_not_a_single_row(canary_result):
    s = canary_result.summary.set_index(["plant", "rate"])
    assert s.loc[("token@hypothesis", 0.9), "detection_rate"] == 1.0
    assert s.loc[("token@hypothesis", 0.01), "detection_rate"] == 0.0
    # Example level: PVI's flags find the planted rows well above chance precision (the
    # planted share of the rows, 0.3 here).
    strong = s.loc[("token@hypothesis", 0.9)]
    assert strong["precision"] > 1.8 * strong["chance_precision"]
    assert strong["recall"] > 0.5
    baseline = canary_result.rows[canary_result.rows["plant"] == "none"]
    assert baseline["severity"].tolist() == ["none"]  # no cue in the clean data
    assert canary_result.config["label"] == "neutral"


@pytest.mark.slow
def test_canary_saves_json_parquet_and_a_plot(canary_result, tmp_path):
    paths = canary_result.save(tmp_path)
    data = json.loads(paths["json"].read_text())
    assert {"config", "summary", "thresholds", "sentences", "timings"} <= set(data)
    rows = pd.read_parquet(paths["parquet"])
    assert len(rows) == len(canary_result.rows)
    assert paths["plot"].read_text().lstrip().startswith("<?xml")
    assert "token@hypothesis" in canary_result.format_table()


def test_canary_on_shuffled_labels_flags_nothing_unplanted(clean):
    frame = clean.frame.drop(columns=["label_id"]).copy()
    frame["label"] = np.random.default_rng(0).permutation(frame["label"].to_numpy())
    shuffled = Dataset.from_frame(frame, "nli", label_names=clean.label_names)
    res = run_canary(
        shuffled,
        analyses={"pvi": {"features": "bow", "n_resamples": 100}},
        plants=[{"kind": "token"}],
        rates=[0.01],
        label="neutral",
    )
    assert res.rows.loc[res.rows["plant"] == "none", "severity"].tolist() == ["none"]


def test_canary_errors_before_any_work(clean):
    with pytest.raises(ParameterError, match="'rates'"):
        run_canary(clean, analyses=["pvi"], rates=[0.0])
    with pytest.raises(ParameterError, match="'sizes'"):
        run_canary(clean, analyses=["pvi"], sizes=[10_000])
    with pytest.raises(ParameterError, match="'kind'"):
        run_canary(clean, analyses=["pvi"], plants=[{"kind": "colour"}])
    with pytest.raises(ParameterError, match="plant's 'rates'"):
        run_canary(clean, analyses=["pvi"], plants=[{"kind": "token", "rates": [2.0]}])
    with pytest.raises(ParameterError, match="no_such"):
        run_canary(clean, analyses=["no_such"])


def test_cli_canary_prints_the_table_and_writes_files(clean, tmp_path):
    path = tmp_path / "clean.jsonl"
    clean.frame[["id", "premise", "hypothesis", "label"]].to_json(
        path, orient="records", lines=True
    )
    out = tmp_path / "canary"
    args = [
        "canary", str(path), "--task", "nli", "--only", "pvi", "--set", "pvi.features=bow",
        "--set", "pvi.n_resamples=50", "--plant", "token@hypothesis", "--rate", "0.9",
        "--label", "neutral", "--size", "150", "--out", str(out),
    ]  # fmt: skip
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "n=150: pvi" in res.output and "token@hypothesis" in res.output  # the sentence
    assert "detection_rate" in res.output  # the table
    assert (out / "canary.json").exists() and (out / "canary.parquet").exists()
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 2 and "--force" in again.output


def test_shuffled_background_keeps_texts_ids_and_label_counts(clean):
    from spurious.canary import _shuffled

    out = _shuffled(clean, np.random.default_rng(0))
    assert list(out.ids) == list(clean.ids)
    assert (out.frame["hypothesis"] == clean.frame["hypothesis"]).all()
    assert np.bincount(out.labels).tolist() == np.bincount(clean.labels).tolist()
    assert (out.labels != clean.labels).mean() > 0.5
    assert (out.frame["label"].map(clean.label_names.index) == out.labels).all()
    with pytest.raises(ParameterError, match="'background'"):
        run_canary(clean, analyses=["pvi"], background="noise")
