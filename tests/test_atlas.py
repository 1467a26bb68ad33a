"""The artifact atlas: known answers (z, PMI, corrections), planted cues, shuffled labels."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from spurious import load_dataset
from spurious.data import Dataset
from spurious.data.synthetic import make_nli_artifacts
from spurious.detectors.atlas import (
    Atlas,
    adjust_p,
    count_tokens,
    field_atlas,
    gardner_z,
    significance_curve,
    smoothed_pmi,
    token_label_counts,
    wilson_interval,
)
from spurious.exceptions import AnalysisError, ParameterError
from spurious.heuristics.nli import word_label_pmi
from spurious.report.sections import build_section

from .conftest import shared_data


def _shuffled(ds: Dataset, seed: int) -> Dataset:
    frame = ds.frame[list(ds.task.text_fields)].copy()
    frame["label"] = np.random.default_rng(seed).permutation(
        np.asarray(ds.label_names, dtype=object)[ds.labels]
    )
    return Dataset.from_frame(frame, ds.task.name, label_names=ds.label_names)


# -- known answers -------------------------------------------------------------------------
def test_counts_are_examples_holding_the_token_not_occurrences():
    X, vocab = count_tokens(["no no dog", "a dog", "no cat"])
    n, n_by_label = token_label_counts(X, np.array([1, 0, 1]), 2)
    got = dict(zip(vocab.tolist(), n.tolist(), strict=True))
    assert got == {"a": 1, "cat": 1, "dog": 2, "no": 2}  # "no" twice in row 0 counts once
    assert n_by_label[vocab.tolist().index("no")].tolist() == [0, 2]


def test_gardner_z_by_hand():
    # Token in 50 examples, 30 of label 0, p0 = (0.4, 0.6):
    # z0 = (0.6 - 0.4) / sqrt(0.4 * 0.6 / 50) = 0.2 / 0.069282 = 2.88675
    p_hat, z, p = gardner_z(np.array([50]), np.array([[30, 20]]), np.array([0.4, 0.6]))
    assert p_hat.tolist() == [[0.6, 0.4]]
    assert z[0, 0] == pytest.approx(0.2 / math.sqrt(0.24 / 50))
    assert z[0, 1] == pytest.approx(-0.2 / math.sqrt(0.24 / 50))
    assert p[0, 0] == pytest.approx(0.5 * math.erfc(z[0, 0] / math.sqrt(2)))
    with pytest.raises(ParameterError, match="p0"):
        gardner_z(np.array([5]), np.array([[1, 4]]), np.array([0.0, 1.0]))


def test_corrections_by_hand():
    p = np.array([0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205, 0.212, 0.216])
    bonf, bh = adjust_p(p)
    np.testing.assert_allclose(bonf, np.minimum(p * 10, 1))
    # BH: q_(i) = min_{j >= i} p_(j) m / j
    expected = np.minimum.accumulate((p * 10 / np.arange(1, 11))[::-1])[::-1]
    np.testing.assert_allclose(bh, expected)
    assert (bh <= 0.05).sum() == 2 and (bonf <= 0.05).sum() == 1


def test_smoothed_pmi_by_hand():
    c = np.array([[3.0, 1.0], [1.0, 5.0]])
    k = 1.0
    total = c.sum() + k * 4
    p_wy = (c[0, 0] + k) / total
    p_w = (c[0].sum() + 2 * k) / total
    p_y = (c[:, 0].sum() + 2 * k) / total
    assert smoothed_pmi(c, k)[0, 0] == pytest.approx(math.log(p_wy / (p_w * p_y)))
    # A label without any count has no statistics.
    assert np.isnan(smoothed_pmi(np.array([[1.0, 0.0], [2.0, 0.0]]), 1.0)[:, 1]).all()


def test_pmi_matches_the_heuristics_word_label_pmi():
    synth = make_nli_artifacts(n=150, random_state=1).dataset
    vocab, ref = word_label_pmi(synth, smoothing=100.0, min_count=1)
    fa = field_atlas(
        synth.texts("hypothesis"), synth.labels, synth.n_classes, field="hypothesis", min_count=1
    )
    ours = pd.DataFrame(fa.pmi, index=fa.vocabulary)
    # Same vocabulary (both count every word) and the same add-100 formula.
    assert sorted(vocab) == sorted(fa.vocabulary.tolist())
    np.testing.assert_allclose(ours.loc[vocab].to_numpy(), ref, rtol=1e-10)


def test_significance_curve_is_the_bonferroni_boundary():
    # At the curve, the one-sided p-value equals alpha / m.
    n = np.array([40.0, 400.0])
    curve = significance_curve(n, 1 / 3, 0.01, 300)
    counts = np.column_stack([curve * n, (1 - curve) * n])
    _, _, p = gardner_z(n, counts, np.array([1 / 3, 2 / 3]))
    np.testing.assert_allclose(p[:, 0], 0.01 / 300, rtol=1e-6)


def test_wilson_interval_holds_the_share():
    lo, hi = wilson_interval(30, 200)
    assert lo < 0.15 < hi and hi - lo < 0.11


def test_field_atlas_on_a_hand_built_table():
    # "no" only in label 1 (20 of 20); "a" only in label 0; "dog"/"cat" balanced.
    texts = ["no dog", "no cat", "a dog", "a cat"] * 10
    y = np.array([1, 1, 0, 0] * 10)
    fa = field_atlas(texts, y, 2, min_count=1)
    j = fa.vocabulary.tolist().index("no")
    assert fa.n[j] == 20 and fa.p_hat[j].tolist() == [0.0, 1.0]
    assert fa.z[j, 1] == pytest.approx(0.5 / math.sqrt(0.25 / 20))
    assert fa.flagged[j].tolist() == [False, True]
    assert not fa.flagged[fa.vocabulary.tolist().index("dog")].any()
    assert fa.n_tests == 8  # 4 tokens x 2 labels


# -- behaviour ------------------------------------------------------------------------------
def test_planted_cue_is_flagged_in_its_field_only():
    synth = make_nli_artifacts(n=1500, artifact_rate=0.5, random_state=0)
    result = Atlas().run(synth.dataset, progress=False)
    hyp = result.details["per_field"]["hypothesis"]
    flagged = {(r["token"], r["label"]) for r in hyp["flagged"]}
    assert ("nobody", "contradiction") in flagged
    assert hyp["top"]["contradiction"][0]["token"] in {"nobody", "doubts"}  # the carrier
    assert result.metrics["premise_n_flagged"] == 0
    # Example level: the planted rows are found, and the flag points at their label.
    issue = result.scores["is_atlas_issue"].to_numpy()
    assert issue[synth.has_artifact].mean() > 0.95
    assert (result.scores["atlas_token"][synth.has_artifact] != "").all()
    head = result.headline
    assert head["severity"] in ("moderate", "high") and head["evidence"]["p_value"] < 0.01


def test_full_token_table_is_saved_loaded_and_written_beside_the_report(tmp_path):
    from spurious.report import render
    from spurious.results import Result

    synth = make_nli_artifacts(n=600, artifact_rate=0.5, random_state=0)
    result = Atlas().run(synth.dataset, progress=False)
    tokens = result.tables["tokens"]
    # Every tested token x present label of both fields; flags agree with the metrics.
    for field in ("premise", "hypothesis"):
        rows = tokens[tokens["field"] == field]
        assert len(rows) == result.details["per_field"][field]["n_tests"]
        assert rows.groupby("token")["flagged"].any().sum() == result.metrics[f"{field}_n_flagged"]
    cue = tokens[(tokens["token"] == "nobody") & (tokens["label"] == "contradiction")]
    assert len(cue) == 1 and bool(cue["flagged"].iloc[0])
    # Round trip through the run directory's form.
    back = Result.load(result.save(tmp_path / "run" / "atlas"))
    pd.testing.assert_frame_equal(back.tables["tokens"], tokens)
    # A re-run without the table leaves no stale file behind.
    result.tables = {}
    result.save(tmp_path / "run" / "atlas")
    assert not (tmp_path / "run" / "atlas" / "tables").exists()
    # A standalone report writes the table where its section links to it.
    html = render([back], tmp_path / "rep" / "report.html").read_text()
    assert 'href="atlas/tables/tokens.parquet"' in html
    beside = pd.read_parquet(tmp_path / "rep" / "atlas" / "tables" / "tokens.parquet")
    assert len(beside) == len(tokens)


def test_bad_table_names_are_refused():
    from spurious.results import check_tables

    with pytest.raises(AnalysisError, match="table names must match"):
        check_tables({"Tokens.v2": pd.DataFrame()}, "atlas")
    with pytest.raises(AnalysisError, match=r"expected a pandas\.DataFrame"):
        check_tables({"tokens": [1, 2]}, "atlas")


@pytest.mark.parametrize("seed", range(4))
def test_shuffled_labels_flag_nothing(seed):
    ds = _shuffled(make_nli_artifacts(n=1500, artifact_rate=0.8, random_state=seed).dataset, seed)
    for correction in ("bonferroni", "bh"):
        result = Atlas(correction=correction).run(ds, progress=False)
        assert result.metrics["n_flagged_tokens"] == 0
        assert result.headline["severity"] == "none"
        assert not result.scores["is_atlas_issue"].any()


def test_uniform_p0_flags_the_majority_label_on_unbalanced_data():
    # 80% label 0; the token "the" is everywhere, so p_hat(0 | the) = 0.8: not an artifact
    # against the prior, but "significant" against the paper's uniform 1/2.
    rng = np.random.default_rng(0)
    y = (rng.random(2000) < 0.2).astype(int)
    texts = [f"the w{rng.integers(50)}" for _ in y]
    prior = field_atlas(texts, y, 2, p0="prior")
    uniform = field_atlas(texts, y, 2, p0="uniform")
    j = prior.vocabulary.tolist().index("the")
    assert not prior.flagged[j].any() and uniform.flagged[j, 0]


def test_stop_words_and_bigrams_are_options():
    ds = make_nli_artifacts(n=600, artifact_rate=0.8, random_state=2).dataset
    kept = Atlas(fields=["hypothesis"]).run(ds, progress=False)
    assert "nobody" in {r["token"] for r in kept.details["per_field"]["hypothesis"]["flagged"]}
    removed = Atlas(fields=["hypothesis"], stop_words="english").run(ds, progress=False)
    assert "nobody" not in {
        r["token"] for r in removed.details["per_field"]["hypothesis"]["flagged"]
    }
    bi = Atlas(fields=["hypothesis"], bigrams=True).run(ds, progress=False)
    assert "nobody doubts" in {r["token"] for r in bi.details["per_field"]["hypothesis"]["flagged"]}
    assert list(kept.scores.columns) == [
        "id",
        "hypothesis_n_flagged",
        "atlas_token",
        "atlas_score",
        "is_atlas_issue",
    ]


def test_bad_fields_name_the_parameter():
    ds = make_nli_artifacts(n=60, random_state=0).dataset
    with pytest.raises(ParameterError, match=r"'fields'.*premise.*Got \['question'\]"):
        Atlas(fields=["question"]).run(ds, progress=False)
    one = Atlas(fields="hypothesis").run(ds, progress=False)
    assert one.details["fields"] == ["hypothesis"]
    with pytest.raises(ParameterError, match="correction"):
        Atlas(correction="holm").run(ds, progress=False)


def test_section_shows_fields_plot_and_tokens():
    ds = make_nli_artifacts(n=600, artifact_rate=0.8, random_state=3).dataset
    html = str(build_section(Atlas().run(ds, progress=False)).html_body)
    assert "data:image/" in html and "nobody" in html and "Significant (BH)" in html


def test_empty_vocabulary_is_not_an_error():
    frame = pd.DataFrame({"text": ["!", "?", "!!", "??"] * 3, "label": ["a", "b", "a", "b"] * 3})
    ds = Dataset.from_frame(frame, "text")
    result = Atlas(min_count=1).run(ds, progress=False)
    assert result.metrics["n_flagged_tokens"] == 0 and result.headline["severity"] == "none"
    assert sp.issparse(count_tokens(["!"])[0])
    with pytest.raises(AnalysisError, match=r"at least 10 labelled examples.*got 4"):
        Atlas().run(Dataset.from_frame(frame.head(4), "text"), progress=False)


# -- real data --------------------------------------------------------------------------------
def test_snli_dev_finds_gururangans_words_in_the_hypothesis():
    ds = load_dataset(shared_data("snli", "dev.jsonl"), "nli")
    result = Atlas(correction="bh").run(ds, progress=False)
    m = result.metrics
    assert m["hypothesis_n_flagged"] > 20 * max(1, m["premise_n_flagged"])
    flagged = {
        (r["token"], r["label"]) for r in result.details["per_field"]["hypothesis"]["flagged"]
    }
    # Gururangan et al. 2018, Table 4 (SNLI).
    for pair in [
        ("nobody", "contradiction"),
        ("sleeping", "contradiction"),
        ("cat", "contradiction"),
        ("tall", "neutral"),
        ("outdoors", "entailment"),
    ]:
        assert pair in flagged
    shuffled = Atlas(correction="bh").run(_shuffled(ds, 0), progress=False)
    assert shuffled.metrics["n_flagged_tokens"] == 0
